//! Wall-clock sources for the fixed-step loop: the real monotonic clock and
//! a manual one that tests drive without sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A monotonic wall-clock source: the time elapsed since some fixed origin.
///
/// [`FixedStep`](crate::FixedStep) reads it once per frame. Readings must
/// never go backwards; a reading that does is treated as no time passing.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use freyr::time::Clock;
///
/// /// A clock that advances 5 ms per reading.
/// struct Stepping(Duration);
/// impl Clock for Stepping {
///     fn now(&mut self) -> Duration {
///         self.0 += Duration::from_millis(5);
///         self.0
///     }
/// }
/// let mut clock = Stepping(Duration::ZERO);
/// assert_eq!(clock.now(), Duration::from_millis(5));
/// assert_eq!(clock.now(), Duration::from_millis(10));
/// ```
pub trait Clock {
    /// The time elapsed since this clock's origin.
    fn now(&mut self) -> Duration;
}

impl<C: Clock + ?Sized> Clock for Box<C> {
    fn now(&mut self) -> Duration {
        (**self).now()
    }
}

/// The machine's monotonic clock ([`Instant`]), measured from the moment the
/// clock was created.
///
/// # Examples
///
/// ```
/// use freyr::time::{Clock, MonotonicClock};
/// let mut clock = MonotonicClock::new();
/// let a = clock.now();
/// let b = clock.now();
/// assert!(b >= a);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    /// A clock whose origin is now.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::time::{Clock, MonotonicClock};
    /// assert!(MonotonicClock::new().now() < std::time::Duration::from_secs(60));
    /// ```
    #[must_use]
    pub fn new() -> Self {
        MonotonicClock {
            origin: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&mut self) -> Duration {
        self.origin.elapsed()
    }
}

/// A clock that moves only when told to: tests and replays drive the
/// fixed-step loop with it, without sleeping.
///
/// Clones share the same time, so a test keeps one clone and hands the other
/// to the loop. Time is kept in whole nanoseconds.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use freyr::time::{Clock, ManualClock};
/// let clock = ManualClock::new();
/// let mut seen_by_loop = clock.clone();
/// assert_eq!(seen_by_loop.now(), Duration::ZERO);
/// clock.advance(Duration::from_millis(16));
/// assert_eq!(seen_by_loop.now(), Duration::from_millis(16));
/// clock.set(Duration::from_secs(1));
/// assert_eq!(seen_by_loop.now(), Duration::from_secs(1));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A manual clock at time zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::time::{Clock, ManualClock};
    /// assert_eq!(ManualClock::new().now(), std::time::Duration::ZERO);
    /// ```
    #[must_use]
    pub fn new() -> Self {
        ManualClock::default()
    }

    /// Moves the time forward by `by` (saturating at `u64::MAX` nanoseconds).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{Clock, ManualClock};
    /// let mut clock = ManualClock::new();
    /// clock.advance(Duration::from_micros(3));
    /// clock.advance(Duration::from_micros(4));
    /// assert_eq!(clock.now(), Duration::from_micros(7));
    /// ```
    pub fn advance(&self, by: Duration) {
        let by = nanos_of(by);
        let mut current = self.nanos.load(Ordering::Relaxed);
        loop {
            let next = current.saturating_add(by);
            match self.nanos.compare_exchange_weak(
                current,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(seen) => current = seen,
            }
        }
    }

    /// Sets the time to `to` (which may be earlier: the loop then sees no
    /// time passing until the clock has caught up again).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{Clock, ManualClock};
    /// let mut clock = ManualClock::new();
    /// clock.set(Duration::from_millis(250));
    /// assert_eq!(clock.now(), Duration::from_millis(250));
    /// ```
    pub fn set(&self, to: Duration) {
        self.nanos.store(nanos_of(to), Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now(&mut self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }
}

/// `d` in whole nanoseconds, saturating at `u64::MAX` (about 584 years).
pub(crate) fn nanos_of(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
