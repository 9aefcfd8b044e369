//! The fixed-step loop: a fixed `dt`, an accumulator of wall time, the
//! catch-up clamp, gates, and the monotonic tick counter.
//!
//! A frame reads the clock once, adds the elapsed time to the accumulator,
//! and runs as many whole ticks as it holds, at most `max_catchup_ticks`
//! (the spiral-of-death backstop): the ticks beyond that are *dropped*, their
//! time discarded and counted, which shows up as bounded time dilation rather
//! than an ever-growing backlog. Before each tick the gates are asked whether
//! it may run; a refusal holds the tick (its time stays in the accumulator)
//! and is counted.

use core::fmt;
use std::time::Duration;

use crate::clamp::{DEFAULT_MAX_CATCHUP_TICKS, clamp_catchup_ticks};
use crate::clock::{Clock, MonotonicClock, nanos_of};
use crate::gate::{Gate, GateId, Gates};

/// The longest tick a [`FixedStep`] accepts: one hour.
///
/// A fixed step is one simulation tick; a longer one is a unit mistake
/// (seconds for milliseconds, `Duration::MAX` for "never"), and accepting
/// it would run a 584-year tick. An hour also keeps the loop's nanosecond
/// arithmetic (accumulator, catch-up) more than five orders of magnitude
/// below `u64` saturation.
///
/// # Examples
///
/// ```
/// use freyr::time::{FixedStep, FixedStepError, MAX_FIXED_DT};
/// assert!(FixedStep::new(MAX_FIXED_DT).is_ok());
/// let too_long = MAX_FIXED_DT + std::time::Duration::from_nanos(1);
/// assert_eq!(FixedStep::new(too_long).unwrap_err(), FixedStepError::DtTooLong { dt: too_long });
/// ```
pub const MAX_FIXED_DT: Duration = Duration::from_secs(3600);

/// Why a [`FixedStep`] could not be configured.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use freyr::time::{FixedStep, FixedStepError};
/// assert_eq!(FixedStep::new(Duration::ZERO).unwrap_err(), FixedStepError::ZeroDt);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixedStepError {
    /// `dt` was zero (or under a nanosecond): the loop could never finish a frame.
    ZeroDt,
    /// `dt` was longer than [`MAX_FIXED_DT`] (one hour).
    DtTooLong {
        /// The tick length asked for.
        dt: Duration,
    },
    /// `max_catchup_ticks` was zero: no tick could ever run.
    ZeroMaxCatchup,
}

impl fmt::Display for FixedStepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FixedStepError::ZeroDt => f.write_str(
                "a fixed step needs dt of at least 1 ns (got 0); pass the tick length, \
                 e.g. Duration::from_secs(1) / 60",
            ),
            FixedStepError::DtTooLong { dt } => write!(
                f,
                "a fixed step of {dt:?} is longer than MAX_FIXED_DT ({MAX_FIXED_DT:?}); \
                 pass the tick length, e.g. Duration::from_secs(1) / 60"
            ),
            FixedStepError::ZeroMaxCatchup => f.write_str(
                "max_catchup_ticks must be at least 1 (got 0, which would never run a \
                 tick); the usual value is DEFAULT_MAX_CATCHUP_TICKS (8)",
            ),
        }
    }
}

impl std::error::Error for FixedStepError {}

/// What one [`FixedStep::run_frame`] did.
///
/// # Examples
///
/// ```
/// let report = freyr::time::FrameReport::default();
/// assert_eq!((report.ran, report.dropped, report.held), (0, 0, false));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameReport {
    /// The number of the first tick run this frame (the next tick if none ran).
    pub first_tick: u64,
    /// Ticks run this frame.
    pub ran: u64,
    /// Ticks the catch-up clamp dropped this frame.
    pub dropped: u64,
    /// Whether a gate held the next tick this frame.
    pub held: bool,
}

/// A fixed-step driver: turns wall time into a whole number of fixed ticks
/// per frame, numbered `0, 1, 2, …` with no gaps.
///
/// Each frame ([`begin_frame`](Self::begin_frame), then
/// [`advance`](Self::advance) until it returns `None`; or
/// [`run_frame`](Self::run_frame) for both) reads the injected [`Clock`]
/// once, adds the elapsed time to the accumulator, and lets
/// `floor(accumulator / dt)` ticks run, clamped to
/// [`max_catchup_ticks`](Self::max_catchup_ticks) by
/// [`clamp_catchup_ticks`]. Dropped ticks' time is discarded and counted in
/// [`dropped_ticks`](Self::dropped_ticks). Before each tick the [`Gates`] are
/// asked; a refusal ends the frame, leaves the tick's time in the
/// accumulator and counts one in [`held_ticks`](Self::held_ticks) (which
/// counts refusals, at most one per frame, not the ticks left waiting).
///
/// The wall clock decides only *how many* ticks run in a frame, never what a
/// tick computes: a tick's number and `dt` are the same on every machine.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use freyr::time::{FixedStep, ManualClock};
///
/// let clock = ManualClock::new();
/// let mut fixed = FixedStep::with_clock(Duration::from_millis(10), clock.clone()).unwrap();
/// let mut ran = Vec::new();
///
/// clock.advance(Duration::from_millis(25)); // 2.5 ticks of wall time
/// let report = fixed.run_frame(|tick| ran.push(tick));
/// assert_eq!((report.first_tick, report.ran), (0, 2));
/// assert_eq!(fixed.alpha(), 0.5); // half a tick is left over
///
/// clock.advance(Duration::from_millis(5));
/// fixed.run_frame(|tick| ran.push(tick));
/// assert_eq!(ran, [0, 1, 2]);
///
/// // A long stall: 20 ticks due, 8 run, 12 dropped.
/// clock.advance(Duration::from_millis(200));
/// let report = fixed.run_frame(|tick| ran.push(tick));
/// assert_eq!((report.ran, report.dropped), (8, 12));
/// assert_eq!(fixed.dropped_ticks(), 12);
/// assert_eq!(fixed.next_tick(), 11);
/// ```
pub struct FixedStep<C = MonotonicClock> {
    dt: u64,
    clock: C,
    /// The last clock reading, in nanoseconds.
    last_read: u64,
    /// Wall time not yet turned into ticks, in nanoseconds.
    accumulator: u64,
    max_catchup: u64,
    /// Ticks the current frame may still run.
    due: u64,
    next_tick: u64,
    dropped: u64,
    held: u64,
    last_frame: FrameReport,
    gates: Gates,
}

impl FixedStep<MonotonicClock> {
    /// A loop of tick length `dt` on the machine's monotonic clock, whose
    /// time starts now.
    ///
    /// # Errors
    ///
    /// [`FixedStepError::ZeroDt`] if `dt` is under a nanosecond;
    /// [`FixedStepError::DtTooLong`] if it is longer than [`MAX_FIXED_DT`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let fixed = freyr::time::FixedStep::new(Duration::from_secs(1) / 60).unwrap();
    /// assert_eq!(fixed.dt(), Duration::from_nanos(16_666_666));
    /// assert_eq!(fixed.next_tick(), 0);
    /// ```
    pub fn new(dt: Duration) -> Result<Self, FixedStepError> {
        FixedStep::with_clock(dt, MonotonicClock::new())
    }
}

impl<C: Clock> FixedStep<C> {
    /// A loop of tick length `dt` on `clock`; its time starts at the clock's
    /// current reading. The catch-up bound is [`DEFAULT_MAX_CATCHUP_TICKS`].
    ///
    /// # Errors
    ///
    /// [`FixedStepError::ZeroDt`] if `dt` is under a nanosecond;
    /// [`FixedStepError::DtTooLong`] if it is longer than [`MAX_FIXED_DT`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{FixedStep, FixedStepError, ManualClock};
    /// let fixed = FixedStep::with_clock(Duration::from_millis(20), ManualClock::new()).unwrap();
    /// assert_eq!(fixed.max_catchup_ticks(), 8);
    /// let err = FixedStep::with_clock(Duration::MAX, ManualClock::new()).unwrap_err();
    /// assert_eq!(err, FixedStepError::DtTooLong { dt: Duration::MAX });
    /// ```
    pub fn with_clock(dt: Duration, mut clock: C) -> Result<Self, FixedStepError> {
        if dt > MAX_FIXED_DT {
            return Err(FixedStepError::DtTooLong { dt });
        }
        let dt = nanos_of(dt);
        if dt == 0 {
            return Err(FixedStepError::ZeroDt);
        }
        let last_read = nanos_of(clock.now());
        Ok(FixedStep {
            dt,
            clock,
            last_read,
            accumulator: 0,
            max_catchup: DEFAULT_MAX_CATCHUP_TICKS,
            due: 0,
            next_tick: 0,
            dropped: 0,
            held: 0,
            last_frame: FrameReport::default(),
            gates: Gates::new(),
        })
    }

    /// Sets the most ticks one frame may run (the rest are dropped).
    ///
    /// # Errors
    ///
    /// [`FixedStepError::ZeroMaxCatchup`] if `max` is 0; the bound is unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{FixedStep, FixedStepError, ManualClock};
    /// let clock = ManualClock::new();
    /// let mut fixed = FixedStep::with_clock(Duration::from_millis(1), clock.clone()).unwrap();
    /// fixed.set_max_catchup_ticks(2).unwrap();
    /// assert_eq!(fixed.set_max_catchup_ticks(0), Err(FixedStepError::ZeroMaxCatchup));
    /// clock.advance(Duration::from_millis(5));
    /// assert_eq!(fixed.run_frame(|_| {}).ran, 2);
    /// assert_eq!(fixed.dropped_ticks(), 3);
    /// ```
    pub fn set_max_catchup_ticks(&mut self, max: u64) -> Result<(), FixedStepError> {
        if max == 0 {
            return Err(FixedStepError::ZeroMaxCatchup);
        }
        self.max_catchup = max;
        Ok(())
    }

    /// Reads the clock and starts a frame: returns how many ticks this frame
    /// may run (after the clamp). Ticks still due from an earlier frame that
    /// was not run to the end are folded into this one.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{FixedStep, ManualClock};
    /// let clock = ManualClock::new();
    /// let mut fixed = FixedStep::with_clock(Duration::from_millis(10), clock.clone()).unwrap();
    /// clock.advance(Duration::from_millis(30));
    /// assert_eq!(fixed.begin_frame(), 3);
    /// assert_eq!(fixed.advance(), Some(0));
    /// assert_eq!(fixed.advance(), Some(1));
    /// assert_eq!(fixed.advance(), Some(2));
    /// assert_eq!(fixed.advance(), None);
    /// ```
    pub fn begin_frame(&mut self) -> u64 {
        let now = nanos_of(self.clock.now());
        let elapsed = now.saturating_sub(self.last_read);
        self.last_read = self.last_read.max(now);
        self.accumulator = self.accumulator.saturating_add(elapsed);
        let raw = self.accumulator / self.dt;
        let mut dropped = 0;
        self.due = clamp_catchup_ticks(raw, self.max_catchup, &mut dropped);
        self.accumulator -= dropped * self.dt;
        self.dropped = self.dropped.saturating_add(dropped);
        self.last_frame = FrameReport {
            first_tick: self.next_tick,
            ran: 0,
            dropped,
            held: false,
        };
        self.due
    }

    /// Claims the next tick of the current frame: asks the gates whether
    /// tick [`next_tick`](Self::next_tick) may run; if so, consumes one `dt`
    /// of the accumulator and returns its number. Returns `None` when the
    /// frame has no tick left, or when a gate held the tick (counted in
    /// [`held_ticks`](Self::held_ticks); the frame then ends, the tick's time
    /// stays in the accumulator).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{FixedStep, ManualClock};
    /// let clock = ManualClock::new();
    /// let mut fixed = FixedStep::with_clock(Duration::from_millis(10), clock.clone()).unwrap();
    /// fixed.add_gate(|next: u64| next < 1); // only tick 0 may run
    /// clock.advance(Duration::from_millis(20));
    /// fixed.begin_frame();
    /// assert_eq!(fixed.advance(), Some(0));
    /// assert_eq!(fixed.advance(), None); // tick 1 held
    /// assert_eq!(fixed.held_ticks(), 1);
    /// ```
    pub fn advance(&mut self) -> Option<u64> {
        if self.due == 0 {
            return None;
        }
        let tick = self.next_tick;
        if !self.gates.may_advance(tick) {
            self.held = self.held.saturating_add(1);
            self.last_frame.held = true;
            self.due = 0;
            return None;
        }
        self.due -= 1;
        self.accumulator -= self.dt;
        self.next_tick += 1;
        self.last_frame.ran += 1;
        Some(tick)
    }

    /// Runs one frame: [`begin_frame`](Self::begin_frame), then `step(tick)`
    /// for every tick [`advance`](Self::advance) hands out, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{FixedStep, ManualClock};
    /// let clock = ManualClock::new();
    /// let mut fixed = FixedStep::with_clock(Duration::from_millis(16), clock.clone()).unwrap();
    /// clock.advance(Duration::from_millis(33));
    /// let mut sum = 0;
    /// let report = fixed.run_frame(|tick| sum += tick + 1);
    /// assert_eq!((report.ran, sum), (2, 3));
    /// ```
    pub fn run_frame(&mut self, mut step: impl FnMut(u64)) -> FrameReport {
        self.begin_frame();
        while let Some(tick) = self.advance() {
            step(tick);
        }
        self.last_frame
    }

    /// Renumbers the loop: the next tick will be `tick`. For a driver
    /// that also runs ticks outside the loop (they keep one counter), or
    /// that resumes a saved or replayed run. The accumulator is unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{FixedStep, ManualClock};
    /// let clock = ManualClock::new();
    /// let mut fixed = FixedStep::with_clock(Duration::from_millis(1), clock.clone()).unwrap();
    /// fixed.set_next_tick(100);
    /// clock.advance(Duration::from_millis(2));
    /// let mut ticks = Vec::new();
    /// fixed.run_frame(|t| ticks.push(t));
    /// assert_eq!(ticks, [100, 101]);
    /// ```
    pub fn set_next_tick(&mut self, tick: u64) {
        self.next_tick = tick;
    }

    /// Registers a gate asked before every tick (see [`Gates`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{FixedStep, ManualClock};
    /// let clock = ManualClock::new();
    /// let mut fixed = FixedStep::with_clock(Duration::from_millis(1), clock.clone()).unwrap();
    /// let gate = fixed.add_gate(|_: u64| false);
    /// clock.advance(Duration::from_millis(3));
    /// assert!(fixed.run_frame(|_| {}).held);
    /// assert!(fixed.remove_gate(gate));
    /// assert_eq!(fixed.run_frame(|_| {}).ran, 3); // the held time was kept
    /// ```
    pub fn add_gate(&mut self, gate: impl Gate + 'static) -> GateId {
        self.gates.add(gate)
    }

    /// Unregisters a gate; returns whether it was registered.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut fixed = freyr::time::FixedStep::new(Duration::from_millis(1)).unwrap();
    /// let gate = fixed.add_gate(|_: u64| true);
    /// assert!(fixed.remove_gate(gate));
    /// ```
    pub fn remove_gate(&mut self, id: GateId) -> bool {
        self.gates.remove(id)
    }

    /// The latest clock reading the fixed step has taken (at construction or by
    /// [`begin_frame`](Self::begin_frame); it never goes backwards), without reading the clock
    /// again: a loop that replays a recorded clock sees exactly the readings it logged.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{FixedStep, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let mut fixed = FixedStep::with_clock(Duration::from_millis(10), clock.clone()).unwrap();
    /// clock.advance(Duration::from_millis(25));
    /// assert_eq!(fixed.last_reading(), Duration::ZERO); // not read since construction
    /// fixed.begin_frame();
    /// assert_eq!(fixed.last_reading(), Duration::from_millis(25));
    /// ```
    #[must_use]
    pub fn last_reading(&self) -> Duration {
        Duration::from_nanos(self.last_read)
    }

    /// The tick length.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let fixed = freyr::time::FixedStep::new(Duration::from_millis(5)).unwrap();
    /// assert_eq!(fixed.dt(), Duration::from_millis(5));
    /// ```
    #[must_use]
    pub fn dt(&self) -> Duration {
        Duration::from_nanos(self.dt)
    }

    /// The number of the next tick to run, which is also the number of
    /// ticks run so far (ticks are numbered from 0).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{FixedStep, ManualClock};
    /// let clock = ManualClock::new();
    /// let mut fixed = FixedStep::with_clock(Duration::from_millis(1), clock.clone()).unwrap();
    /// clock.advance(Duration::from_millis(4));
    /// fixed.run_frame(|_| {});
    /// assert_eq!(fixed.next_tick(), 4);
    /// ```
    #[must_use]
    pub fn next_tick(&self) -> u64 {
        self.next_tick
    }

    /// The most ticks one frame may run.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let fixed = freyr::time::FixedStep::new(Duration::from_millis(1)).unwrap();
    /// assert_eq!(fixed.max_catchup_ticks(), freyr::time::DEFAULT_MAX_CATCHUP_TICKS);
    /// ```
    #[must_use]
    pub fn max_catchup_ticks(&self) -> u64 {
        self.max_catchup
    }

    /// Ticks dropped by the catch-up clamp since the loop was created.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{FixedStep, ManualClock};
    /// let clock = ManualClock::new();
    /// let mut fixed = FixedStep::with_clock(Duration::from_millis(1), clock.clone()).unwrap();
    /// clock.advance(Duration::from_millis(10));
    /// fixed.run_frame(|_| {});
    /// assert_eq!(fixed.dropped_ticks(), 2);
    /// ```
    #[must_use]
    pub fn dropped_ticks(&self) -> u64 {
        self.dropped
    }

    /// Refusals since the loop was created: the number of times a gate held
    /// the next tick. A refusal ends its frame, so this counts frames that a
    /// gate cut short (at most one per frame), not ticks: a frame that owed
    /// 5 ticks and was held at the first counts 1, and a tick held across 3
    /// frames counts 3.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{FixedStep, ManualClock};
    /// let clock = ManualClock::new();
    /// let mut fixed = FixedStep::with_clock(Duration::from_millis(1), clock.clone()).unwrap();
    /// fixed.add_gate(|_: u64| false);
    /// for _ in 0..3 {
    ///     clock.advance(Duration::from_millis(1));
    ///     fixed.run_frame(|_| {});
    /// }
    /// assert_eq!(fixed.held_ticks(), 3);
    /// ```
    #[must_use]
    pub fn held_ticks(&self) -> u64 {
        self.held
    }

    /// What the last frame did so far.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{FixedStep, ManualClock};
    /// let clock = ManualClock::new();
    /// let mut fixed = FixedStep::with_clock(Duration::from_millis(1), clock.clone()).unwrap();
    /// clock.advance(Duration::from_millis(2));
    /// fixed.begin_frame();
    /// fixed.advance();
    /// assert_eq!(fixed.last_frame().ran, 1);
    /// ```
    #[must_use]
    pub fn last_frame(&self) -> FrameReport {
        self.last_frame
    }

    /// The fraction of a tick left in the accumulator, in `[0, 1)` once a
    /// frame ran to its end: how far presentation may interpolate between
    /// the last two ticks. (It can exceed 1 while a frame is being run, or
    /// after a gate held a tick.)
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{FixedStep, ManualClock};
    /// let clock = ManualClock::new();
    /// let mut fixed = FixedStep::with_clock(Duration::from_millis(4), clock.clone()).unwrap();
    /// clock.advance(Duration::from_millis(5));
    /// fixed.run_frame(|_| {});
    /// assert_eq!(fixed.alpha(), 0.25);
    /// ```
    #[must_use]
    pub fn alpha(&self) -> f64 {
        self.accumulator as f64 / self.dt as f64
    }

    /// The clock, e.g. to read the time the loop last saw.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::{Clock, FixedStep, ManualClock};
    /// let mut fixed = FixedStep::with_clock(Duration::from_millis(1), ManualClock::new()).unwrap();
    /// assert_eq!(fixed.clock_mut().now(), Duration::ZERO);
    /// ```
    pub fn clock_mut(&mut self) -> &mut C {
        &mut self.clock
    }
}

impl<C> fmt::Debug for FixedStep<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixedStep")
            .field("dt_nanos", &self.dt)
            .field("next_tick", &self.next_tick)
            .field("accumulator_nanos", &self.accumulator)
            .field("max_catchup", &self.max_catchup)
            .field("dropped", &self.dropped)
            .field("held", &self.held)
            .field("gates", &self.gates)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
