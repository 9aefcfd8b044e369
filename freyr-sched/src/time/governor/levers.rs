//! The four levers derived from the governor's load factor, and the pure AI-sample skip.

use super::params::GovernorParams;

/// Whether an entity samples its AI this tick under AI-sample stride
/// `stride`: `(tick + entity_index) % stride == 0`. An entity that does not
/// sample reuses its last input. A stride of 0 or 1 samples every tick.
///
/// Pure: the answer depends only on its arguments, never on which worker
/// asks or in which order, so skipping is serial-equivalent. Neighbouring
/// entities are staggered, so each tick samples about `1 / stride` of them.
///
/// # Examples
///
/// ```
/// use freyr::ai_sample_due;
/// assert!(ai_sample_due(7, 100, 1)); // stride 1: always
/// let sampled = (0..400).filter(|&e| ai_sample_due(e, 9, 4)).count();
/// assert_eq!(sampled, 100); // a quarter of the entities each tick
/// // Every entity samples exactly once per `stride` ticks.
/// assert_eq!((0..4).filter(|&t| ai_sample_due(5, t, 4)).count(), 1);
/// ```
#[must_use]
pub fn ai_sample_due(entity_index: u64, tick: u64, stride: u32) -> bool {
    stride <= 1
        || tick
            .wrapping_add(entity_index)
            .is_multiple_of(u64::from(stride))
}

/// The lever values for one tick, derived from a load factor by
/// [`Levers::for_load_factor`]. Frozen for the whole tick.
///
/// # Examples
///
/// ```
/// use freyr::{GovernorParams, Levers};
/// let params = GovernorParams::default();
/// let full = Levers::for_load_factor(&params, 1.0);
/// assert_eq!(full, Levers::unloaded(&params));
/// assert_eq!((full.snapshot_interval_ticks, full.ai_stride), (1, 1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Levers {
    /// The load factor they were derived from, in `[floor, 1]`.
    pub load_factor: f64,
    /// Send a snapshot to each peer every this many ticks (1 = every tick).
    pub snapshot_interval_ticks: u32,
    /// The per-client snapshot byte budget.
    pub byte_budget: u32,
    /// Sample AI every this many ticks per entity (see [`ai_sample_due`]).
    pub ai_stride: u32,
    /// Multiply interest radii by this, in `[min_interest_fraction, 1]`.
    pub interest_scale: f64,
}

impl Levers {
    /// The levers at load factor 1: every one a no-op.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{GovernorParams, Levers};
    /// let levers = Levers::unloaded(&GovernorParams::default());
    /// assert_eq!(levers.byte_budget, 1200);
    /// assert_eq!(levers.interest_scale, 1.0);
    /// ```
    #[must_use]
    pub fn unloaded(params: &GovernorParams) -> Levers {
        Levers::for_load_factor(params, 1.0)
    }

    /// Derives the four levers from `load_factor` (clamped to
    /// `[params.floor(), 1]`):
    ///
    /// - send interval `= min(ceil(1 / lf), tick_hz / min_snapshot_hz)` ticks;
    /// - byte budget `= max(budget_floor_bytes, floor(base_budget_bytes x lf))`;
    /// - AI stride `= min(ceil(1 / lf), max_ai_stride)`;
    /// - interest scale `= max(min_interest_fraction, lf)`.
    ///
    /// A pure function: the same load factor gives the same levers everywhere.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{GovernorParams, Levers};
    /// let params = GovernorParams::default();
    /// let half = Levers::for_load_factor(&params, 0.5);
    /// assert_eq!(half.snapshot_interval_ticks, 2);
    /// assert_eq!(half.byte_budget, 600);
    /// assert_eq!(half.ai_stride, 2);
    /// assert_eq!(half.interest_scale, 0.5);
    /// let floor = Levers::for_load_factor(&params, 0.0); // clamped to 0.25
    /// assert_eq!(floor.load_factor, 0.25);
    /// assert_eq!((floor.snapshot_interval_ticks, floor.byte_budget, floor.ai_stride), (4, 400, 4));
    /// assert_eq!(floor.interest_scale, 0.5);
    /// ```
    #[must_use]
    pub fn for_load_factor(params: &GovernorParams, load_factor: f64) -> Levers {
        let lf = if load_factor.is_nan() {
            1.0
        } else {
            load_factor.clamp(params.floor().min(1.0), 1.0)
        };
        // ceil(1 / lf), shielded from rounding just above an integer
        // (1 / 0.5 must be 2, not 3).
        let inverse = ((1.0 / lf) - 1e-9).ceil().max(1.0);
        let as_u32 = |x: f64| {
            if x >= f64::from(u32::MAX) {
                u32::MAX
            } else {
                x as u32
            }
        };
        let scaled_budget = as_u32((f64::from(params.base_budget_bytes) * lf).floor());
        Levers {
            load_factor: lf,
            snapshot_interval_ticks: as_u32(inverse).min(params.max_snapshot_interval()),
            byte_budget: scaled_budget.max(params.budget_floor_bytes),
            ai_stride: as_u32(inverse).min(params.max_ai_stride.max(1)),
            interest_scale: lf.max(params.min_interest_fraction).min(1.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levers_follow_the_load_factor() {
        let p = GovernorParams::default();
        let at = |lf: f64| Levers::for_load_factor(&p, lf);
        let one = at(1.0);
        assert_eq!(
            (one.snapshot_interval_ticks, one.byte_budget, one.ai_stride),
            (1, 1200, 1)
        );
        assert_eq!(one.interest_scale, 1.0);
        let seven = at(0.7);
        assert_eq!(
            (
                seven.snapshot_interval_ticks,
                seven.byte_budget,
                seven.ai_stride
            ),
            (2, 840, 2)
        );
        assert_eq!(seven.interest_scale, 0.7);
        let low = at(0.3);
        assert_eq!(
            (low.snapshot_interval_ticks, low.byte_budget, low.ai_stride),
            (4, 400, 4)
        );
        assert_eq!(low.interest_scale, 0.5);
        assert_eq!(at(f64::NAN), one);
        assert_eq!(at(7.0), one);
    }

    #[test]
    fn the_ai_stride_is_capped_separately_from_the_send_interval() {
        let p = GovernorParams {
            max_ai_stride: 2,
            min_snapshot_hz: 10,
            ..Default::default()
        };
        let levers = Levers::for_load_factor(&p, 0.2);
        assert_eq!(levers.ai_stride, 2);
        assert_eq!(levers.snapshot_interval_ticks, 5);
        assert!((p.floor() - 1.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn ai_sampling_is_a_pure_staggered_rotation() {
        for stride in 1..=4u32 {
            for entity in 0..16u64 {
                let due: Vec<u64> = (0..12)
                    .filter(|&t| ai_sample_due(entity, t, stride))
                    .collect();
                assert_eq!(
                    due.len(),
                    12 / stride as usize,
                    "entity {entity} stride {stride}"
                );
                assert!(due.windows(2).all(|w| w[1] - w[0] == u64::from(stride)));
            }
        }
        assert!((0..10).all(|t| ai_sample_due(3, t, 0)));
        assert!(ai_sample_due(u64::MAX, 1, 4)); // wraps, never overflows
    }
}
