//! This server's policy for a load factor: the four levers it derives from the governor's
//! load factor (a snapshot send interval, a per-client byte budget, an AI-sample stride, an
//! interest-radius scale), and the pure AI-sample skip.
//!
//! The library's [`TickGovernor`](freyr::time::TickGovernor) knows only the load factor, in
//! `[floor, 1]` (1 = no degradation); what to shed is a game's decision. This file shows one way
//! to map a load factor onto levers: each lever a pure function of the load factor, every one a
//! no-op at 1, so the same sequence of load factors gives the same levers on any machine and any
//! worker count. The physics rate never changes and integration is never skipped; the AI stride
//! skips *sampling* only, through [`ai_sample_due`], a pure function of (entity, tick, stride).
//!
//! The governor's floor ([`GovernorParams::min_load_factor`](freyr::time::GovernorParams)) is
//! [`LeverParams::floor`]: the lowest send rate over the tick rate, 15 Hz of 60 = 0.25.

/// The lever policy: how far each lever may go.
///
/// | field | default | meaning |
/// |---|---|---|
/// | `tick_hz` | 60 | the fixed tick rate |
/// | `min_snapshot_hz` | 15 | send-rate floor; `min_snapshot_hz / tick_hz` is the load-factor floor |
/// | `max_ai_stride` | 4 | the largest AI-sample stride |
/// | `base_budget_bytes` | 1200 | per-client snapshot byte budget at load factor 1 |
/// | `budget_floor_bytes` | 400 | the byte budget never goes below this |
/// | `min_interest_fraction` | 0.5 | the interest radius never shrinks below this fraction (1.0 = lever off) |
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LeverParams {
    /// The fixed tick rate.
    pub tick_hz: u32,
    /// The lowest snapshot send rate; sets the load-factor floor and caps the send interval at
    /// `tick_hz / min_snapshot_hz` ticks.
    pub min_snapshot_hz: u32,
    /// The largest AI-sample stride.
    pub max_ai_stride: u32,
    /// Per-client snapshot byte budget at load factor 1.
    pub base_budget_bytes: u32,
    /// The smallest per-client byte budget.
    pub budget_floor_bytes: u32,
    /// The smallest interest-radius scale, in `(0, 1]`.
    pub min_interest_fraction: f64,
}

impl Default for LeverParams {
    fn default() -> Self {
        LeverParams {
            tick_hz: 60,
            min_snapshot_hz: 15,
            max_ai_stride: 4,
            base_budget_bytes: 1200,
            budget_floor_bytes: 400,
            min_interest_fraction: 0.5,
        }
    }
}

impl LeverParams {
    /// The lowest load factor: `min_snapshot_hz / tick_hz` (the governor's `min_load_factor`).
    #[must_use]
    pub(crate) fn floor(&self) -> f64 {
        f64::from(self.min_snapshot_hz) / f64::from(self.tick_hz.max(1))
    }

    /// The longest snapshot send interval: `tick_hz / min_snapshot_hz` ticks (at least 1).
    #[must_use]
    pub(crate) fn max_snapshot_interval(&self) -> u32 {
        (self.tick_hz / self.min_snapshot_hz.max(1)).max(1)
    }

    /// The governor's parameters for this policy: `base` with its floor set to
    /// [`floor`](Self::floor).
    #[must_use]
    pub(crate) fn governor(
        &self,
        base: freyr::time::GovernorParams,
    ) -> freyr::time::GovernorParams {
        freyr::time::GovernorParams {
            min_load_factor: self.floor(),
            ..base
        }
    }
}

/// Whether an entity samples its AI this tick under AI-sample stride
/// `stride`: `(tick + entity_index) % stride == 0`. An entity that does not
/// sample reuses its last input. A stride of 0 or 1 samples every tick.
///
/// Pure: the answer depends only on its arguments, never on which worker
/// asks or in which order, so skipping is serial-equivalent. Neighbouring
/// entities are staggered, so each tick samples about `1 / stride` of them.
#[must_use]
pub(crate) fn ai_sample_due(entity_index: u64, tick: u64, stride: u32) -> bool {
    stride <= 1
        || tick
            .wrapping_add(entity_index)
            .is_multiple_of(u64::from(stride))
}

/// The lever values for one tick, derived from a load factor by
/// [`Levers::for_load_factor`]. Frozen for the whole tick.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Levers {
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
    #[must_use]
    #[allow(dead_code)] // the benches, which compile this file too, start from it
    pub(crate) fn unloaded(params: &LeverParams) -> Levers {
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
    #[must_use]
    pub(crate) fn for_load_factor(params: &LeverParams, load_factor: f64) -> Levers {
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
        let p = LeverParams::default();
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
    fn half_load_and_the_floor() {
        let params = LeverParams::default();
        assert_eq!(params.floor(), 0.25); // 15 Hz of 60
        assert_eq!(params.max_snapshot_interval(), 4);
        let full = Levers::for_load_factor(&params, 1.0);
        assert_eq!(full, Levers::unloaded(&params));
        assert_eq!((full.snapshot_interval_ticks, full.ai_stride), (1, 1));
        assert_eq!(full.byte_budget, 1200);
        let half = Levers::for_load_factor(&params, 0.5);
        assert_eq!(half.snapshot_interval_ticks, 2);
        assert_eq!(half.byte_budget, 600);
        assert_eq!(half.ai_stride, 2);
        assert_eq!(half.interest_scale, 0.5);
        let floor = Levers::for_load_factor(&params, 0.0); // clamped to 0.25
        assert_eq!(floor.load_factor, 0.25);
        assert_eq!(
            (
                floor.snapshot_interval_ticks,
                floor.byte_budget,
                floor.ai_stride
            ),
            (4, 400, 4)
        );
        assert_eq!(floor.interest_scale, 0.5);
        // The governor's floor is the policy's floor.
        let governor = params.governor(freyr::time::GovernorParams::default());
        assert_eq!(governor.min_load_factor, params.floor());
        assert!(governor.validate().is_ok());
    }

    #[test]
    fn a_quarter_of_the_entities_sample_each_tick_at_stride_four() {
        assert!(ai_sample_due(7, 100, 1)); // stride 1: always
        let sampled = (0..400).filter(|&e| ai_sample_due(e, 9, 4)).count();
        assert_eq!(sampled, 100);
        assert_eq!((0..4).filter(|&t| ai_sample_due(5, t, 4)).count(), 1);
    }

    #[test]
    fn the_ai_stride_is_capped_separately_from_the_send_interval() {
        let p = LeverParams {
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
