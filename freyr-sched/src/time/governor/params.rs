//! The governor's configuration, its defaults and its validation.

use core::fmt;
use std::time::Duration;

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
/// let params = freyr::GovernorParams::default();
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
    /// let params = freyr::GovernorParams { min_snapshot_hz: 30, ..Default::default() };
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
    /// let params = freyr::GovernorParams { min_snapshot_hz: 20, ..Default::default() };
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
    /// use freyr::GovernorParams;
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
/// use freyr::{GovernorParams, TickGovernor};
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
    /// let bad = freyr::GovernorParams { max_ai_stride: 0, ..Default::default() };
    /// assert_eq!(bad.validate().unwrap_err().field(), "max_ai_stride");
    /// ```
    #[must_use]
    pub fn field(&self) -> &'static str {
        self.field
    }
}

impl fmt::Display for GovernorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "governor parameter `{}` {}", self.field, self.rule)
    }
}

impl std::error::Error for GovernorError {}

#[cfg(test)]
mod tests {
    use super::*;

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
            let err = params.validate().unwrap_err();
            assert_eq!(err.field(), field);
            assert!(err.to_string().contains(field));
        }
    }
}
