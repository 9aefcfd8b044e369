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
/// | `min_load_factor` | 0.25 | the load factor never goes below this |
///
/// What a load factor means is the caller's policy: a server maps it onto its own levers (send
/// rates, byte budgets, sampling strides), as the `server_tick` example's `levers.rs` does.
///
/// # Examples
///
/// ```
/// let params = freyr::time::GovernorParams::default();
/// assert_eq!(params.floor(), 0.25);
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
    /// The lowest load factor, in `(0, 1]`.
    pub min_load_factor: f64,
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
            min_load_factor: 0.25,
        }
    }
}

impl GovernorParams {
    /// The lowest load factor: [`min_load_factor`](Self::min_load_factor).
    ///
    /// # Examples
    ///
    /// ```
    /// let params = freyr::time::GovernorParams { min_load_factor: 0.5, ..Default::default() };
    /// assert_eq!(params.floor(), 0.5);
    /// ```
    #[must_use]
    pub fn floor(&self) -> f64 {
        self.min_load_factor
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
    /// use freyr::time::GovernorParams;
    /// let bad = GovernorParams { low_watermark: 0.95, ..Default::default() };
    /// let err = bad.validate().unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "governor parameter `low_watermark` is 0.95; it must be at least 0 and below high_watermark"
    /// );
    /// ```
    pub fn validate(&self) -> Result<(), GovernorError> {
        let fail = |field: &'static str, value: f64, rule: &'static str| {
            Err(GovernorError { field, value, rule })
        };
        let unit_open = |x: f64| x > 0.0 && x < 1.0;
        let unit_half_open = |x: f64| x > 0.0 && x <= 1.0;
        if self.budget.is_zero() {
            return fail(
                "budget",
                self.budget.as_secs_f64(),
                "must be longer than zero",
            );
        }
        if !(self.high_watermark > 0.0 && self.high_watermark.is_finite()) {
            return fail(
                "high_watermark",
                self.high_watermark,
                "must be a positive number",
            );
        }
        if !(self.low_watermark >= 0.0 && self.low_watermark < self.high_watermark) {
            return fail(
                "low_watermark",
                self.low_watermark,
                "must be at least 0 and below high_watermark",
            );
        }
        if !unit_open(self.decrease_factor) {
            return fail(
                "decrease_factor",
                self.decrease_factor,
                "must lie strictly between 0 and 1",
            );
        }
        if !unit_half_open(self.increase_step) {
            return fail("increase_step", self.increase_step, "must lie in (0, 1]");
        }
        if self.eval_interval_ticks == 0 {
            return fail(
                "eval_interval_ticks",
                f64::from(self.eval_interval_ticks),
                "must be at least 1",
            );
        }
        if !unit_half_open(self.ewma_alpha) {
            return fail("ewma_alpha", self.ewma_alpha, "must lie in (0, 1]");
        }
        if !unit_half_open(self.min_load_factor) {
            return fail(
                "min_load_factor",
                self.min_load_factor,
                "must lie in (0, 1]",
            );
        }
        Ok(())
    }
}

/// A [`GovernorParams`] field out of range.
///
/// # Examples
///
/// ```
/// use freyr::time::{GovernorParams, TickGovernor};
/// let err = TickGovernor::new(GovernorParams { eval_interval_ticks: 0, ..Default::default() })
///     .unwrap_err();
/// assert_eq!(err.field(), "eval_interval_ticks");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GovernorError {
    field: &'static str,
    /// The rejected value (a duration in seconds).
    value: f64,
    rule: &'static str,
}

impl GovernorError {
    /// The name of the offending field.
    ///
    /// # Examples
    ///
    /// ```
    /// let bad = freyr::time::GovernorParams { min_load_factor: 0.0, ..Default::default() };
    /// assert_eq!(bad.validate().unwrap_err().field(), "min_load_factor");
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
            "governor parameter `{}` is {}; it {}",
            self.field, self.value, self.rule
        )
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
                    min_load_factor: 0.0,
                    ..Default::default()
                },
                "min_load_factor",
            ),
            (
                GovernorParams {
                    min_load_factor: 1.5,
                    ..Default::default()
                },
                "min_load_factor",
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
