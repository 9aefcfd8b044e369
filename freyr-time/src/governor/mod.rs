//! The overrun governor: an AIMD load factor driven by an EWMA of tick wall
//! time.
//!
//! When a fixed-step tick no longer fits its budget, a server must shed
//! optional work instead of spiralling or silently dilating time. The
//! governor watches an exponentially weighted moving average of the measured
//! tick wall time (it reacts within about `1 / ewma_alpha` ticks and recovers
//! as fast, unlike a long-window percentile). Every `eval_interval_ticks`
//! ticks it classifies the average against the budget: above `budget x high`
//! the load factor is multiplied by `decrease_factor` (multiplicative
//! decrease), below `budget x low` it grows by `increase_step` (additive
//! increase), and between the two watermarks it holds (hysteresis). The load
//! factor stays in `[floor, 1]`; 1 means no degradation.
//!
//! What the load factor sheds is the caller's policy, not the governor's: a
//! server maps it onto levers of its own (the `server_tick` example's
//! `levers.rs` derives a snapshot send interval, a byte budget, an AI-sample
//! stride and an interest scale from it, each a pure function of the load
//! factor). The governor reads no clock and never changes the tick rate, so
//! every worker count computes the same thing under the same sequence of
//! load factors.

mod params;

use std::time::Duration;

pub use self::params::{GovernorError, GovernorParams};

/// The AIMD overrun governor: step it once per tick with the previous
/// tick's measured wall time; the returned load factor, in `[floor, 1]`,
/// says how much of its optional work the next tick should do (1 = all).
///
/// Pure and deterministic: the same sequence of samples gives the same
/// sequence of load factors (it reads no clock; the caller measures).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use freyr::time::{GovernorParams, TickGovernor};
///
/// let params = GovernorParams { budget: Duration::from_millis(10), ..Default::default() };
/// let mut governor = TickGovernor::new(params).unwrap();
/// // Ticks of 12 ms against a 10 ms budget: over budget x 0.90.
/// for _ in 0..10 {
///     governor.step(Duration::from_millis(12));
/// }
/// assert!((governor.load_factor() - 0.7).abs() < 1e-12);
/// // Ticks of 3 ms: under budget x 0.60, so it recovers additively.
/// for _ in 0..40 {
///     governor.step(Duration::from_millis(3));
/// }
/// assert_eq!(governor.load_factor(), 1.0);
/// ```
#[derive(Clone, Debug)]
pub struct TickGovernor {
    params: GovernorParams,
    load_factor: f64,
    /// EWMA of tick wall time in milliseconds; `None` before the first sample.
    ewma_ms: Option<f64>,
    since_eval: u32,
    decreases: u64,
    increases: u64,
}

impl TickGovernor {
    /// A governor at load factor 1.
    ///
    /// # Errors
    ///
    /// [`GovernorError`] if `params` fails [`GovernorParams::validate`].
    ///
    /// # Examples
    ///
    /// ```
    /// let governor = freyr::time::TickGovernor::new(Default::default()).unwrap();
    /// assert_eq!(governor.load_factor(), 1.0);
    /// assert_eq!(governor.ewma_ms(), None);
    /// ```
    pub fn new(params: GovernorParams) -> Result<Self, GovernorError> {
        params.validate()?;
        Ok(TickGovernor {
            params,
            load_factor: 1.0,
            ewma_ms: None,
            since_eval: 0,
            decreases: 0,
            increases: 0,
        })
    }

    /// Feeds the wall time of the tick just finished and returns the load
    /// factor for the next one.
    ///
    /// The sample updates the EWMA (the first sample sets it). Every
    /// `eval_interval_ticks`-th step compares the EWMA with the budget:
    /// above `budget x high_watermark` the load factor is multiplied by
    /// `decrease_factor`, below `budget x low_watermark` it grows by
    /// `increase_step`, otherwise it holds; then it is clamped to
    /// `[floor, 1]`. A disabled governor tracks the EWMA but keeps the load
    /// factor at 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{GovernorParams, TickGovernor};
    /// let params = GovernorParams {
    ///     budget: Duration::from_millis(10),
    ///     eval_interval_ticks: 1,
    ///     ewma_alpha: 1.0,
    ///     ..Default::default()
    /// };
    /// let mut governor = TickGovernor::new(params).unwrap();
    /// assert_eq!(governor.step(Duration::from_millis(7)), 1.0); // in the band
    /// assert!((governor.step(Duration::from_millis(20)) - 0.7).abs() < 1e-12);
    /// assert!((governor.step(Duration::from_millis(1)) - 0.825).abs() < 1e-12);
    /// ```
    pub fn step(&mut self, last_tick_wall: Duration) -> f64 {
        let sample = millis(last_tick_wall);
        let ewma = match self.ewma_ms {
            None => sample,
            Some(ewma) => ewma + self.params.ewma_alpha * (sample - ewma),
        };
        self.ewma_ms = Some(ewma);
        if !self.params.enabled {
            self.load_factor = 1.0;
            self.since_eval = 0;
            return self.load_factor;
        }
        self.since_eval += 1;
        if self.since_eval >= self.params.eval_interval_ticks {
            self.since_eval = 0;
            let budget_ms = millis(self.params.budget);
            let floor = self.params.floor().min(1.0);
            let before = self.load_factor;
            if ewma > budget_ms * self.params.high_watermark {
                self.load_factor = (before * self.params.decrease_factor).max(floor);
            } else if ewma < budget_ms * self.params.low_watermark {
                self.load_factor = (before + self.params.increase_step).min(1.0);
            }
            // Only a decision that moved the load factor counts: one at the floor (or at 1)
            // that the clamp turned into a hold is a hold.
            if self.load_factor < before {
                self.decreases += 1;
            } else if self.load_factor > before {
                self.increases += 1;
            }
        }
        self.load_factor
    }

    /// The current load factor, in `[floor, 1]` (what the last [`step`](Self::step) returned).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(freyr::time::TickGovernor::new(Default::default()).unwrap().load_factor(), 1.0);
    /// ```
    #[must_use]
    pub fn load_factor(&self) -> f64 {
        self.load_factor
    }

    /// The EWMA of tick wall time in milliseconds (`None` before any sample).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut governor = freyr::time::TickGovernor::new(Default::default()).unwrap();
    /// governor.step(Duration::from_millis(4));
    /// assert_eq!(governor.ewma_ms(), Some(4.0));
    /// ```
    #[must_use]
    pub fn ewma_ms(&self) -> Option<f64> {
        self.ewma_ms
    }

    /// How many decisions decreased, and how many increased, the load factor. A decision
    /// that the `[floor, 1]` clamp turned into no change (shedding at the floor, restoring
    /// at full load) is not counted: each count is the number of times the load factor
    /// actually moved that way.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{GovernorParams, TickGovernor};
    /// let params = GovernorParams {
    ///     budget: Duration::from_millis(10),
    ///     eval_interval_ticks: 1,
    ///     ewma_alpha: 1.0,
    ///     ..Default::default()
    /// };
    /// let mut governor = TickGovernor::new(params).unwrap();
    /// assert_eq!(governor.decisions(), (0, 0));
    /// governor.step(Duration::from_millis(1)); // under budget at 1: nothing to restore
    /// assert_eq!(governor.decisions(), (0, 0));
    /// for _ in 0..20 {
    ///     governor.step(Duration::from_millis(50)); // 1 -> 0.7 -> 0.49 -> 0.343 -> 0.25, then held
    /// }
    /// assert_eq!(governor.load_factor(), 0.25);
    /// assert_eq!(governor.decisions(), (4, 0));
    /// ```
    #[must_use]
    pub fn decisions(&self) -> (u64, u64) {
        (self.decreases, self.increases)
    }

    /// Changes the tick budget the EWMA is compared with (an operator raising or lowering it at
    /// run time). The load factor and the EWMA carry over: a raised budget lets the governor
    /// recover additively from where it stands.
    ///
    /// # Panics
    ///
    /// If `budget` is zero: pass the tick's wall-time budget, e.g. `Duration::from_secs(1) / 60`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{GovernorParams, TickGovernor};
    /// let params = GovernorParams { budget: Duration::from_millis(2), ..Default::default() };
    /// let mut governor = TickGovernor::new(params).unwrap();
    /// for _ in 0..30 {
    ///     governor.step(Duration::from_millis(5)); // over a 2 ms budget: sheds
    /// }
    /// assert!(governor.load_factor() < 0.5);
    /// governor.set_budget(Duration::from_millis(20));
    /// for _ in 0..80 {
    ///     governor.step(Duration::from_millis(5)); // well under 20 ms: recovers
    /// }
    /// assert_eq!(governor.load_factor(), 1.0);
    /// ```
    pub fn set_budget(&mut self, budget: Duration) {
        assert!(
            !budget.is_zero(),
            "freyr: the governor's budget must be longer than zero; pass the tick's wall-time \
             budget, e.g. Duration::from_secs(1) / 60"
        );
        self.params.budget = budget;
    }

    /// The parameters.
    ///
    /// # Examples
    ///
    /// ```
    /// let governor = freyr::time::TickGovernor::new(Default::default()).unwrap();
    /// assert_eq!(governor.params().min_load_factor, 0.25);
    /// ```
    #[must_use]
    pub fn params(&self) -> &GovernorParams {
        &self.params
    }
}

/// `d` in milliseconds, from its exact nanosecond count (so whole
/// microseconds convert exactly).
fn millis(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUDGET_MS: u64 = 10;

    /// Decides every tick on the newest sample alone, so each step is one decision.
    fn immediate() -> TickGovernor {
        TickGovernor::new(GovernorParams {
            budget: Duration::from_millis(BUDGET_MS),
            eval_interval_ticks: 1,
            ewma_alpha: 1.0,
            ..Default::default()
        })
        .unwrap()
    }

    fn us(micros: u64) -> Duration {
        Duration::from_micros(micros)
    }

    #[test]
    fn above_the_high_watermark_decreases_multiplicatively() {
        let mut g = immediate();
        g.step(us(9_001)); // just above 10 ms x 0.90
        assert!((g.load_factor() - 0.7).abs() < 1e-12);
        g.step(us(9_001));
        assert!((g.load_factor() - 0.49).abs() < 1e-12);
        assert_eq!(g.decisions(), (2, 0));
    }

    #[test]
    fn at_the_watermarks_the_band_holds() {
        let mut g = immediate();
        g.step(us(20_000));
        let lf = g.load_factor();
        for sample in [9_000, 8_999, 6_000, 6_001, 7_500] {
            g.step(us(sample)); // at and inside each watermark, and between
            assert_eq!(g.load_factor(), lf, "{sample} us must hold");
        }
        assert_eq!(g.decisions(), (1, 0));
    }

    #[test]
    fn below_the_low_watermark_increases_additively() {
        let mut g = immediate();
        g.step(us(20_000));
        g.step(us(20_000)); // 0.49
        g.step(us(5_999));
        assert!((g.load_factor() - 0.615).abs() < 1e-12);
        g.step(us(0));
        assert!((g.load_factor() - 0.74).abs() < 1e-12);
    }

    #[test]
    fn the_load_factor_never_leaves_floor_to_one() {
        let mut g = immediate();
        for _ in 0..50 {
            g.step(us(1_000_000));
        }
        assert_eq!(g.load_factor(), 0.25);
        for _ in 0..50 {
            g.step(us(0));
        }
        assert_eq!(g.load_factor(), 1.0);
    }

    #[test]
    fn decisions_count_only_moves_of_the_load_factor() {
        let mut g = immediate();
        // 50 over-budget decisions: 1 -> 0.7 -> 0.49 -> 0.343 -> 0.25, then 46 held at the floor.
        for _ in 0..50 {
            g.step(us(1_000_000));
        }
        assert_eq!(g.decisions(), (4, 0));
        // 50 under-budget decisions: 0.25 + 6 x 0.125 = 1, then 44 held at 1.
        for _ in 0..50 {
            g.step(us(0));
        }
        assert_eq!(g.decisions(), (4, 6));
    }

    #[test]
    fn recovery_from_the_floor_takes_six_increases() {
        let mut g = immediate();
        for _ in 0..10 {
            g.step(us(50_000));
        }
        let mut steps = 0;
        while g.load_factor() < 1.0 {
            g.step(us(1_000));
            steps += 1;
        }
        // 0.25 + 6 x 0.125 = 1.0
        assert_eq!(steps, 6);
    }

    #[test]
    fn decisions_happen_only_every_eval_interval() {
        let mut g = TickGovernor::new(GovernorParams {
            budget: Duration::from_millis(BUDGET_MS),
            eval_interval_ticks: 5,
            ewma_alpha: 1.0,
            ..Default::default()
        })
        .unwrap();
        for _ in 0..4 {
            g.step(us(30_000));
            assert_eq!(g.load_factor(), 1.0);
        }
        g.step(us(30_000));
        assert!((g.load_factor() - 0.7).abs() < 1e-12);
    }

    #[test]
    fn the_ewma_smooths_a_single_spike() {
        let mut g = TickGovernor::new(GovernorParams {
            budget: Duration::from_millis(BUDGET_MS),
            eval_interval_ticks: 1,
            ..Default::default()
        })
        .unwrap();
        g.step(us(5_000));
        g.step(us(40_000)); // one 40 ms spike: EWMA 5 + 0.1 x 35 = 8.5 ms, under 9 ms
        assert!((g.ewma_ms().unwrap() - 8.5).abs() < 1e-9);
        assert_eq!(g.load_factor(), 1.0);
    }

    #[test]
    fn a_disabled_governor_holds_one() {
        let mut g = TickGovernor::new(GovernorParams {
            enabled: false,
            eval_interval_ticks: 1,
            ..Default::default()
        })
        .unwrap();
        for _ in 0..20 {
            assert_eq!(g.step(Duration::from_secs(1)), 1.0);
        }
        assert_eq!(g.decisions(), (0, 0));
    }
}
