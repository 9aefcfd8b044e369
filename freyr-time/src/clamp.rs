//! The catch-up clamp: the spiral-of-death backstop of the fixed-step loop, as a pure function.
//!
//! A frame that owes more ticks than `max` runs `max` of them and *drops* the rest: their time
//! is discarded and counted. Running every owed tick would make the next frame later still.

/// The default bound on ticks run per frame: 8.
pub const DEFAULT_MAX_CATCHUP_TICKS: u64 = 8;

/// Bounds a frame's catch-up: of `raw` ticks due, runs at most `max` and adds
/// the rest to `*dropped` (saturating). Returns the number of ticks to run.
///
/// A pure function, so the backstop's arithmetic is testable without a loop.
///
/// # Examples
///
/// ```
/// use freyr::time::{DEFAULT_MAX_CATCHUP_TICKS, clamp_catchup_ticks};
/// let mut dropped = 0;
/// assert_eq!(clamp_catchup_ticks(3, DEFAULT_MAX_CATCHUP_TICKS, &mut dropped), 3);
/// assert_eq!(dropped, 0);
/// assert_eq!(clamp_catchup_ticks(20, DEFAULT_MAX_CATCHUP_TICKS, &mut dropped), 8);
/// assert_eq!(dropped, 12);
/// assert_eq!(clamp_catchup_ticks(9, 8, &mut dropped), 8);
/// assert_eq!(dropped, 13); // accumulates across frames
/// ```
#[must_use]
pub fn clamp_catchup_ticks(raw: u64, max: u64, dropped: &mut u64) -> u64 {
    if raw > max {
        *dropped = dropped.saturating_add(raw - max);
        max
    } else {
        raw
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamp_passes_through_at_or_below_the_bound() {
        let mut dropped = 5;
        for raw in 0..=8 {
            assert_eq!(clamp_catchup_ticks(raw, 8, &mut dropped), raw);
        }
        assert_eq!(dropped, 5, "nothing dropped at or below the bound");
    }

    #[test]
    fn clamp_counts_every_tick_above_the_bound() {
        let mut dropped = 0;
        assert_eq!(clamp_catchup_ticks(9, 8, &mut dropped), 8);
        assert_eq!(dropped, 1);
        assert_eq!(clamp_catchup_ticks(1000, 1, &mut dropped), 1);
        assert_eq!(dropped, 1000);
    }

    #[test]
    fn clamp_saturates_the_dropped_count() {
        let mut dropped = u64::MAX - 1;
        assert_eq!(clamp_catchup_ticks(u64::MAX, 8, &mut dropped), 8);
        assert_eq!(dropped, u64::MAX);
    }

    #[test]
    fn the_default_bound_is_eight() {
        assert_eq!(DEFAULT_MAX_CATCHUP_TICKS, 8);
    }
}
