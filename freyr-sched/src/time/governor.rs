//! The overrun governor: an AIMD load factor driven by an EWMA of tick wall
//! time, and the four levers derived from it.
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
//! Four levers are derived from it, each a pure function of the load factor:
//! the snapshot send interval, the per-client byte budget, the AI-sample
//! stride and the interest-radius scale. At load factor 1 every lever is a
//! no-op. The governor never changes the physics rate and never skips
//! integration; the AI stride skips *sampling* only, through
//! [`ai_sample_due`], a pure function of (entity, tick, stride), so every
//! worker count computes the same thing under the same lever sequence.

use core::fmt;
use std::time::Duration;

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
/// use freyr_sched::ai_sample_due;
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

/// The governor's configuration, with the server defaults.
///
/// | field | default | meaning |
/// |---|---|---|
/// | `enabled` | `true` | `false` holds the load factor at 1 |
/// | `budget` | 1/60 s | the tick's wall-time budget |
/// | `high_watermark` | 0.90 | EWMA above `budget x high` sheds work |
/// | `low_watermark` | 0.60 | EWMA below `budget x low` restores work |
/// | `decrease_factor` | 0.7 | multiplicative decrease |
/// | `increase_step` | 0.125 | additive increase |
/// | `eval_interval_ticks` | 10 | ticks between decisions (hysteresis) |
/// | `ewma_alpha` | 0.1 | weight of the newest sample |
/// | `tick_hz` | 60 | the fixed tick rate |
/// | `min_snapshot_hz` | 15 | send-rate floor; `min_snapshot_hz / tick_hz` is the load-factor floor |
/// | `max_ai_stride` | 4 | the largest AI-sample stride |
/// | `base_budget_bytes` | 1200 | per-client snapshot byte budget at load factor 1 |
/// | `budget_floor_bytes` | 400 | the byte budget never goes below this |
/// | `min_interest_fraction` | 0.5 | the interest radius never shrinks below this fraction (1.0 = lever off) |
///
/// # Examples
///
/// ```
/// let params = freyr_sched::GovernorParams::default();
/// assert_eq!(params.floor(), 0.25); // 15 Hz of 60
/// assert_eq!(params.max_snapshot_interval(), 4);
/// assert!(params.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GovernorParams {
    /// `false` holds the load factor at 1 (every lever a no-op).
    pub enabled: bool,
    /// The tick's wall-time budget.
    pub budget: Duration,
    /// Above `budget * high_watermark` the load factor decreases.
    pub high_watermark: f64,
    /// Below `budget * low_watermark` the load factor increases.
    pub low_watermark: f64,
    /// The multiplicative decrease, in `(0, 1)`.
    pub decrease_factor: f64,
    /// The additive increase, in `(0, 1]`.
    pub increase_step: f64,
    /// Ticks between two decisions.
    pub eval_interval_ticks: u32,
    /// The EWMA's weight of the newest sample, in `(0, 1]`.
    pub ewma_alpha: f64,
    /// The fixed tick rate.
    pub tick_hz: u32,
    /// The lowest snapshot send rate; sets the load-factor floor and caps
    /// the send interval at `tick_hz / min_snapshot_hz` ticks.
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

impl Default for GovernorParams {
    fn default() -> Self {
        GovernorParams {
            enabled: true,
            budget: Duration::from_secs(1) / 60,
            high_watermark: 0.90,
            low_watermark: 0.60,
            decrease_factor: 0.7,
            increase_step: 0.125,
            eval_interval_ticks: 10,
            ewma_alpha: 0.1,
            tick_hz: 60,
            min_snapshot_hz: 15,
            max_ai_stride: 4,
            base_budget_bytes: 1200,
            budget_floor_bytes: 400,
            min_interest_fraction: 0.5,
        }
    }
}

impl GovernorParams {
    /// The lowest load factor: `min_snapshot_hz / tick_hz`.
    ///
    /// # Examples
    ///
    /// ```
    /// let params = freyr_sched::GovernorParams { min_snapshot_hz: 30, ..Default::default() };
    /// assert_eq!(params.floor(), 0.5);
    /// ```
    #[must_use]
    pub fn floor(&self) -> f64 {
        f64::from(self.min_snapshot_hz) / f64::from(self.tick_hz.max(1))
    }

    /// The longest snapshot send interval: `tick_hz / min_snapshot_hz` ticks
    /// (at least 1).
    ///
    /// # Examples
    ///
    /// ```
    /// let params = freyr_sched::GovernorParams { min_snapshot_hz: 20, ..Default::default() };
    /// assert_eq!(params.max_snapshot_interval(), 3);
    /// ```
    #[must_use]
    pub fn max_snapshot_interval(&self) -> u32 {
        (self.tick_hz / self.min_snapshot_hz.max(1)).max(1)
    }

    /// Checks that the parameters make a working governor.
    ///
    /// # Errors
    ///
    /// [`GovernorError`] naming the first field out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_sched::GovernorParams;
    /// let bad = GovernorParams { low_watermark: 0.95, ..Default::default() };
    /// let err = bad.validate().unwrap_err();
    /// assert!(err.to_string().contains("low_watermark"));
    /// ```
    pub fn validate(&self) -> Result<(), GovernorError> {
        let fail = |field: &'static str, rule: &'static str| Err(GovernorError { field, rule });
        let unit_open = |x: f64| x > 0.0 && x < 1.0;
        let unit_half_open = |x: f64| x > 0.0 && x <= 1.0;
        if self.budget.is_zero() {
            return fail("budget", "must be longer than zero");
        }
        if !(self.high_watermark > 0.0 && self.high_watermark.is_finite()) {
            return fail("high_watermark", "must be a positive number");
        }
        if !(self.low_watermark >= 0.0 && self.low_watermark < self.high_watermark) {
            return fail(
                "low_watermark",
                "must be at least 0 and below high_watermark",
            );
        }
        if !unit_open(self.decrease_factor) {
            return fail("decrease_factor", "must lie strictly between 0 and 1");
        }
        if !unit_half_open(self.increase_step) {
            return fail("increase_step", "must lie in (0, 1]");
        }
        if self.eval_interval_ticks == 0 {
            return fail("eval_interval_ticks", "must be at least 1");
        }
        if !unit_half_open(self.ewma_alpha) {
            return fail("ewma_alpha", "must lie in (0, 1]");
        }
        if self.tick_hz == 0 {
            return fail("tick_hz", "must be at least 1");
        }
        if self.min_snapshot_hz == 0 || self.min_snapshot_hz > self.tick_hz {
            return fail("min_snapshot_hz", "must lie in 1..=tick_hz");
        }
        if self.max_ai_stride == 0 {
            return fail("max_ai_stride", "must be at least 1");
        }
        if self.budget_floor_bytes > self.base_budget_bytes {
            return fail("budget_floor_bytes", "must not exceed base_budget_bytes");
        }
        if !unit_half_open(self.min_interest_fraction) {
            return fail("min_interest_fraction", "must lie in (0, 1]");
        }
        Ok(())
    }
}

/// A [`GovernorParams`] field out of range.
///
/// # Examples
///
/// ```
/// use freyr_sched::{GovernorParams, TickGovernor};
/// let err = TickGovernor::new(GovernorParams { eval_interval_ticks: 0, ..Default::default() })
///     .unwrap_err();
/// assert_eq!(err.field(), "eval_interval_ticks");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GovernorError {
    field: &'static str,
    rule: &'static str,
}

impl GovernorError {
    /// The name of the offending field.
    ///
    /// # Examples
    ///
    /// ```
    /// let bad = freyr_sched::GovernorParams { max_ai_stride: 0, ..Default::default() };
    /// assert_eq!(bad.validate().unwrap_err().field(), "max_ai_stride");
    /// ```
    #[must_use]
    pub fn field(&self) -> &'static str {
        self.field
    }
}

impl fmt::Display for GovernorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "freyr: governor parameter `{}` {}",
            self.field, self.rule
        )
    }
}

impl std::error::Error for GovernorError {}

/// The lever values for one tick, derived from a load factor by
/// [`Levers::for_load_factor`]. Frozen for the whole tick.
///
/// # Examples
///
/// ```
/// use freyr_sched::{GovernorParams, Levers};
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
    /// use freyr_sched::{GovernorParams, Levers};
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
    /// use freyr_sched::{GovernorParams, Levers};
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

/// The AIMD overrun governor: step it once per tick with the previous
/// tick's measured wall time; use the returned [`Levers`] for the tick.
///
/// Pure and deterministic: the same sequence of samples gives the same
/// sequence of levers (it reads no clock; the caller measures).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use freyr_sched::{GovernorParams, TickGovernor};
///
/// let params = GovernorParams { budget: Duration::from_millis(10), ..Default::default() };
/// let mut governor = TickGovernor::new(params).unwrap();
/// // Ticks of 12 ms against a 10 ms budget: over budget x 0.90.
/// for _ in 0..10 {
///     governor.step(Duration::from_millis(12));
/// }
/// assert!((governor.load_factor() - 0.7).abs() < 1e-12);
/// assert_eq!(governor.levers().ai_stride, 2);
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
    levers: Levers,
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
    /// let governor = freyr_sched::TickGovernor::new(Default::default()).unwrap();
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
            levers: Levers::unloaded(&params),
        })
    }

    /// Feeds the wall time of the tick just finished and returns the levers
    /// for the next one.
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
    /// use freyr_sched::{GovernorParams, TickGovernor};
    /// let params = GovernorParams {
    ///     budget: Duration::from_millis(10),
    ///     eval_interval_ticks: 1,
    ///     ewma_alpha: 1.0,
    ///     ..Default::default()
    /// };
    /// let mut governor = TickGovernor::new(params).unwrap();
    /// assert_eq!(governor.step(Duration::from_millis(7)).load_factor, 1.0); // in the band
    /// assert!((governor.step(Duration::from_millis(20)).load_factor - 0.7).abs() < 1e-12);
    /// assert!((governor.step(Duration::from_millis(1)).load_factor - 0.825).abs() < 1e-12);
    /// ```
    pub fn step(&mut self, last_tick_wall: Duration) -> Levers {
        let sample = millis(last_tick_wall);
        let ewma = match self.ewma_ms {
            None => sample,
            Some(ewma) => ewma + self.params.ewma_alpha * (sample - ewma),
        };
        self.ewma_ms = Some(ewma);
        if !self.params.enabled {
            self.load_factor = 1.0;
            self.since_eval = 0;
            self.levers = Levers::unloaded(&self.params);
            return self.levers;
        }
        self.since_eval += 1;
        if self.since_eval >= self.params.eval_interval_ticks {
            self.since_eval = 0;
            let budget_ms = millis(self.params.budget);
            let floor = self.params.floor().min(1.0);
            if ewma > budget_ms * self.params.high_watermark {
                self.load_factor = (self.load_factor * self.params.decrease_factor).max(floor);
                self.decreases += 1;
            } else if ewma < budget_ms * self.params.low_watermark {
                self.load_factor = (self.load_factor + self.params.increase_step).min(1.0);
                self.increases += 1;
            }
        }
        self.levers = Levers::for_load_factor(&self.params, self.load_factor);
        self.levers
    }

    /// The current load factor, in `[floor, 1]`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(freyr_sched::TickGovernor::new(Default::default()).unwrap().load_factor(), 1.0);
    /// ```
    #[must_use]
    pub fn load_factor(&self) -> f64 {
        self.load_factor
    }

    /// The levers for the current load factor (what the last
    /// [`step`](Self::step) returned).
    ///
    /// # Examples
    ///
    /// ```
    /// let governor = freyr_sched::TickGovernor::new(Default::default()).unwrap();
    /// assert_eq!(governor.levers().snapshot_interval_ticks, 1);
    /// ```
    #[must_use]
    pub fn levers(&self) -> Levers {
        self.levers
    }

    /// The EWMA of tick wall time in milliseconds (`None` before any sample).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut governor = freyr_sched::TickGovernor::new(Default::default()).unwrap();
    /// governor.step(Duration::from_millis(4));
    /// assert_eq!(governor.ewma_ms(), Some(4.0));
    /// ```
    #[must_use]
    pub fn ewma_ms(&self) -> Option<f64> {
        self.ewma_ms
    }

    /// How many decisions decreased, and how many increased, the load factor.
    ///
    /// # Examples
    ///
    /// ```
    /// let governor = freyr_sched::TickGovernor::new(Default::default()).unwrap();
    /// assert_eq!(governor.decisions(), (0, 0));
    /// ```
    #[must_use]
    pub fn decisions(&self) -> (u64, u64) {
        (self.decreases, self.increases)
    }

    /// The parameters.
    ///
    /// # Examples
    ///
    /// ```
    /// let governor = freyr_sched::TickGovernor::new(Default::default()).unwrap();
    /// assert_eq!(governor.params().tick_hz, 60);
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
            assert_eq!(g.step(Duration::from_secs(1)), Levers::unloaded(g.params()));
        }
        assert_eq!(g.decisions(), (0, 0));
    }

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

    #[test]
    fn invalid_parameters_are_named() {
        let cases = [
            (
                GovernorParams {
                    budget: Duration::ZERO,
                    ..Default::default()
                },
                "budget",
            ),
            (
                GovernorParams {
                    decrease_factor: 1.0,
                    ..Default::default()
                },
                "decrease_factor",
            ),
            (
                GovernorParams {
                    increase_step: 0.0,
                    ..Default::default()
                },
                "increase_step",
            ),
            (
                GovernorParams {
                    ewma_alpha: 0.0,
                    ..Default::default()
                },
                "ewma_alpha",
            ),
            (
                GovernorParams {
                    min_snapshot_hz: 61,
                    ..Default::default()
                },
                "min_snapshot_hz",
            ),
            (
                GovernorParams {
                    budget_floor_bytes: 2000,
                    ..Default::default()
                },
                "budget_floor_bytes",
            ),
            (
                GovernorParams {
                    min_interest_fraction: 0.0,
                    ..Default::default()
                },
                "min_interest_fraction",
            ),
            (
                GovernorParams {
                    high_watermark: f64::NAN,
                    ..Default::default()
                },
                "high_watermark",
            ),
        ];
        for (params, field) in cases {
            let err = TickGovernor::new(params).unwrap_err();
            assert_eq!(err.field(), field);
            assert!(err.to_string().contains(field));
        }
    }
}
