//! Time around the tick: the registry's tick number, its fixed-step driver and gates, and the
//! time telemetry of the profile.
//!
//! Wall time decides only *how many* ticks a frame runs ([`Registry::run_frame`]); what a tick
//! computes depends on its number and its inputs alone. Each tick starts with a fixed hook that
//! applies the deadline jobs due at that tick (`deadlines.rs`), before any system runs.

use std::time::Duration;

use freyr_sched::{Clock, DeadlineStats, FixedStep, FixedStepError, FrameReport, Gate, GateId};

use super::Registry;
use super::deadlines::Deadlines;

/// The clock a registry's fixed step reads: any [`Clock`] that can move between threads.
pub type BoxedClock = Box<dyn Clock + Send>;

/// The registry's time state.
#[derive(Default)]
pub(crate) struct TimeState {
    /// The tick running (inside `update`) or next to run.
    pub(crate) tick: u64,
    pub(crate) fixed: Option<FixedStep<BoxedClock>>,
    pub(crate) stats: TimeStats,
    pub(crate) deadlines: Deadlines,
}

/// Time telemetry of a registry, in [`ProfileReport::time`](crate::ProfileReport::time): ticks
/// and frames run, ticks dropped by the catch-up clamp, gate refusals, and the deadline jobs'
/// stall telemetry (late jobs, stall time, tasks the collecting thread helped with).
///
/// # Examples
///
/// ```
/// let mut registry = freyr::Registry::with_workers(1);
/// registry.update(0.016);
/// let time = registry.profile().time;
/// assert_eq!(time.ticks, 1);
/// assert_eq!(time.deadlines.late_jobs, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeStats {
    /// Ticks run ([`Registry::update`] calls, from [`Registry::run_frame`] or direct).
    pub ticks: u64,
    /// Frames run by [`Registry::run_frame`].
    pub frames: u64,
    /// Ticks the catch-up clamp dropped.
    pub dropped_ticks: u64,
    /// Gate refusals: frames that a gate ended by holding the next tick (at most one per
    /// frame). Despite the name, not a number of ticks: a frame that owed 5 ticks and was held
    /// at the first counts 1, and a tick held across 3 frames counts 3.
    pub held_ticks: u64,
    /// Deadline jobs: applied, panicked, late, stall time, tasks helped while late.
    pub deadlines: DeadlineStats,
}

impl Registry {
    /// The number of the tick running (inside [`update`](Registry::update)) or the next one to
    /// run: 0, 1, 2, … one per update, the same on every machine. Systems read it for per-tick
    /// seeds and stamps.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Phase, Registry};
    ///
    /// struct Seen(Vec<u64>);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.insert_resource(Seen(Vec::new()));
    /// registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
    ///     let tick = r.tick();
    ///     r.resource_mut::<Seen>().unwrap().0.push(tick);
    /// });
    /// registry.update(0.1);
    /// registry.update(0.1);
    /// assert_eq!(registry.resource::<Seen>().unwrap().0, [0, 1]);
    /// assert_eq!(registry.tick(), 2);
    /// ```
    pub fn tick(&self) -> u64 {
        self.time.tick
    }

    /// Installs a fixed-step driver of tick length `dt` reading `clock` (its time starts at the
    /// clock's current reading; the catch-up bound is 8 ticks per frame). Replaces a previous
    /// one, gates included.
    ///
    /// # Errors
    ///
    /// [`FixedStepError::ZeroDt`] if `dt` is under a nanosecond;
    /// [`FixedStepError::DtTooLong`] if it is longer than
    /// [`MAX_FIXED_DT`](freyr_sched::MAX_FIXED_DT) (one hour).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::Registry;
    /// use freyr::ManualClock;
    ///
    /// let clock = ManualClock::new();
    /// let mut registry = Registry::with_workers(2);
    /// registry.set_fixed_step(Duration::from_millis(10), clock.clone()).unwrap();
    /// clock.advance(Duration::from_millis(35));
    /// assert_eq!(registry.run_frame().ran, 3);
    /// assert_eq!(registry.tick(), 3);
    /// ```
    pub fn set_fixed_step(
        &mut self,
        dt: Duration,
        clock: impl Clock + Send + 'static,
    ) -> Result<(), FixedStepError> {
        let clock: BoxedClock = Box::new(clock);
        self.time.fixed = Some(FixedStep::with_clock(dt, clock)?);
        Ok(())
    }

    /// The fixed-step driver, if one is installed.
    ///
    /// # Examples
    ///
    /// ```
    /// let registry = freyr::Registry::with_workers(1);
    /// assert!(registry.fixed_step().is_none());
    /// ```
    pub fn fixed_step(&self) -> Option<&FixedStep<BoxedClock>> {
        self.time.fixed.as_ref()
    }

    /// The fixed-step driver, to configure it (e.g.
    /// [`set_max_catchup_ticks`](FixedStep::set_max_catchup_ticks)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.set_fixed_step(Duration::from_millis(5), freyr::ManualClock::new()).unwrap();
    /// registry.fixed_step_mut().unwrap().set_max_catchup_ticks(2).unwrap();
    /// assert_eq!(registry.fixed_step().unwrap().max_catchup_ticks(), 2);
    /// ```
    pub fn fixed_step_mut(&mut self) -> Option<&mut FixedStep<BoxedClock>> {
        self.time.fixed.as_mut()
    }

    /// Runs one frame of the fixed-step loop: reads the clock once, then runs
    /// [`update`](Registry::update) with the fixed `dt` for every whole tick due (at most the
    /// catch-up bound; the rest are dropped and counted), asking the gates before each tick (a
    /// refusal holds the tick, ends the frame and counts one gate refusal in
    /// [`TimeStats::held_ticks`]). Tick numbers continue [`tick`](Registry::tick).
    ///
    /// # Panics
    ///
    /// - If no fixed step is installed ([`set_fixed_step`](Registry::set_fixed_step)).
    /// - Re-raises a panic of a tick (see [`update`](Registry::update)); the frame ends there.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::Registry;
    /// use freyr::ManualClock;
    ///
    /// let clock = ManualClock::new();
    /// let mut registry = Registry::with_workers(2);
    /// registry.set_fixed_step(Duration::from_millis(10), clock.clone()).unwrap();
    /// clock.advance(Duration::from_secs(1)); // a long stall: 100 ticks due
    /// let frame = registry.run_frame();
    /// assert_eq!((frame.ran, frame.dropped), (8, 92));
    /// assert_eq!(registry.dropped_ticks(), 92);
    /// assert_eq!(registry.profile().time.dropped_ticks, 92);
    /// ```
    pub fn run_frame(&mut self) -> FrameReport {
        self.guard("Registry::run_frame");
        let tick = self.time.tick;
        let fixed = self.fixed_or_panic("run_frame");
        fixed.set_next_tick(tick);
        fixed.begin_frame();
        let dt = fixed.dt().as_secs_f32();
        // Counted before any tick runs, so a tick that panics loses no telemetry.
        let dropped = fixed.last_frame().dropped;
        self.time.stats.frames += 1;
        self.time.stats.dropped_ticks += dropped;
        loop {
            let fixed = self.fixed_or_panic("run_frame");
            if fixed.advance().is_none() {
                break;
            }
            self.update(dt);
        }
        let frame = self.fixed_or_panic("run_frame").last_frame();
        self.time.stats.held_ticks += u64::from(frame.held);
        frame
    }

    /// Registers a gate asked before every tick of [`run_frame`](Registry::run_frame) (see
    /// [`Gate`]): `may_advance(next_tick)` returning `false` holds that tick.
    ///
    /// # Panics
    ///
    /// If no fixed step is installed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::Registry;
    /// use freyr::ManualClock;
    ///
    /// let clock = ManualClock::new();
    /// let mut registry = Registry::with_workers(1);
    /// registry.set_fixed_step(Duration::from_millis(1), clock.clone()).unwrap();
    /// registry.add_gate(|next: u64| next < 2); // work for tick 2 never arrives
    /// clock.advance(Duration::from_millis(5));
    /// let frame = registry.run_frame();
    /// assert_eq!((frame.ran, frame.held), (2, true));
    /// assert_eq!(registry.held_ticks(), 1);
    /// ```
    pub fn add_gate(&mut self, gate: impl Gate + 'static) -> GateId {
        self.fixed_or_panic("add_gate").add_gate(gate)
    }

    /// Unregisters a gate; returns whether it was registered.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.set_fixed_step(Duration::from_millis(1), freyr::ManualClock::new()).unwrap();
    /// let gate = registry.add_gate(|_: u64| true);
    /// assert!(registry.remove_gate(gate));
    /// ```
    pub fn remove_gate(&mut self, gate: GateId) -> bool {
        self.time
            .fixed
            .as_mut()
            .is_some_and(|fixed| fixed.remove_gate(gate))
    }

    /// Ticks dropped by the catch-up clamp since the fixed step was installed (0 without one).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(freyr::Registry::with_workers(1).dropped_ticks(), 0);
    /// ```
    pub fn dropped_ticks(&self) -> u64 {
        self.time.fixed.as_ref().map_or(0, FixedStep::dropped_ticks)
    }

    /// Gate refusals since the fixed step was installed (0 without one): the times a gate held
    /// the next tick, at most one per frame (see [`FixedStep::held_ticks`]).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(freyr::Registry::with_workers(1).held_ticks(), 0);
    /// ```
    pub fn held_ticks(&self) -> u64 {
        self.time.fixed.as_ref().map_or(0, FixedStep::held_ticks)
    }

    fn fixed_or_panic(&mut self, what: &str) -> &mut FixedStep<BoxedClock> {
        match self.time.fixed.as_mut() {
            Some(fixed) => fixed,
            None => panic!(
                "freyr: Registry::{what} needs a fixed-step driver; install one with \
                 Registry::set_fixed_step(dt, clock) first"
            ),
        }
    }

    /// The hook at the start of every tick, before any system: applies the deadline jobs due
    /// now.
    pub(crate) fn open_tick(&mut self) {
        self.collect_deadlines();
    }

    /// The hook a restore calls once the world and resources are back: the tick number goes
    /// back to the snapshot's `tick` (the next tick to run). Time state that is not rewound
    /// (telemetry, the fixed-step accumulator and gates, deadline jobs) is left as it is; this
    /// is the one place a restore tells the time tools which tick the registry returned to.
    pub(crate) fn rewind_time(&mut self, tick: u64) {
        self.time.tick = tick;
    }

    /// Closes the tick: the next one gets the next number.
    pub(crate) fn close_tick(&mut self) {
        self.time.tick += 1;
        self.time.stats.ticks += 1;
    }
}
