//! Time around the tick: the registry's tick number, its fixed-step driver and gates, and the
//! time telemetry of the profile.
//!
//! Wall time decides only *how many* ticks a frame runs ([`Registry::run_frame`]); what a tick
//! computes depends on its number and its inputs alone. Each tick starts with a fixed hook that
//! applies the deadline jobs due at that tick (`deadlines.rs`), before any system runs.

use std::time::Duration;

use freyr_time::{Clock, FixedStep, FixedStepError, FrameReport, Gate, GateId};

use super::{BoxedClock, Registry, TickTiming};

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
    /// [`MAX_FIXED_DT`](freyr_time::MAX_FIXED_DT) (one hour).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::Registry;
    /// use freyr::time::ManualClock;
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
        let fixed = FixedStep::with_clock(dt, clock)?;
        self.time.frame_read = fixed.last_reading();
        self.time.fixed = Some(fixed);
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
    /// registry.set_fixed_step(Duration::from_millis(5), freyr::time::ManualClock::new()).unwrap();
    /// registry.fixed_step_mut().unwrap().set_max_catchup_ticks(2).unwrap();
    /// assert_eq!(registry.fixed_step().unwrap().max_catchup_ticks(), 2);
    /// ```
    pub fn fixed_step_mut(&mut self) -> Option<&mut FixedStep<BoxedClock>> {
        self.time.fixed.as_mut()
    }

    /// Runs one frame of the fixed-step loop: reads the clock once (that reading also anchors
    /// [`time_until_next_tick`](Registry::time_until_next_tick)), then runs
    /// [`update`](Registry::update) with the fixed `dt` for every whole tick due (at most the
    /// catch-up bound; the rest are dropped and counted), asking the gates before each tick (a
    /// refusal holds the tick, ends the frame and counts one gate refusal in
    /// [`TimeStats::held_ticks`](crate::TimeStats::held_ticks)). Tick numbers continue [`tick`](Registry::tick).
    ///
    /// # Panics
    ///
    /// - If no fixed step is installed ([`set_fixed_step`](Registry::set_fixed_step)).
    /// - If called from a system during an update (frames do not nest), or from a callback;
    ///   refused before the frame changes anything.
    /// - Re-raises a panic of a tick (see [`update`](Registry::update)); the frame ends there.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::Registry;
    /// use freyr::time::ManualClock;
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
        // Refused before anything changes: a nested frame would claim the outer frame's ticks
        // (and their time) and then fail in `update`, losing them.
        assert!(
            !self.in_update,
            "freyr: Registry::run_frame called from a system while an update is running; \
             frames do not nest (the running frame runs every tick due)"
        );
        let tick = self.time.tick;
        let fixed = self.fixed_or_panic("run_frame");
        fixed.set_next_tick(tick);
        fixed.begin_frame();
        // For `time_until_next_tick`: the accumulator holds the time up to the frame's own
        // reading. Taken from the fixed step, not read again: a replayed clock must see exactly
        // one reading per frame, the one the recording logged.
        self.time.frame_read = fixed.last_reading();
        let fixed = self.fixed_or_panic("run_frame");
        let dt = fixed.dt().as_secs_f32();
        // Counted before any tick runs, so a tick that panics loses no telemetry.
        let dropped = fixed.last_frame().dropped;
        self.time.stats.frames += 1;
        // Saturating, as the fixed step's own count: two drivers may each drop ~u64::MAX.
        self.time.stats.dropped_ticks = self.time.stats.dropped_ticks.saturating_add(dropped);
        // Counted here, not read back from the driver: a system may install a new driver
        // mid-frame (the frame then ends), whose report knows nothing of this frame.
        let mut ran = 0;
        loop {
            let fixed = self.fixed_or_panic("run_frame");
            if fixed.advance().is_none() {
                break;
            }
            ran += 1;
            self.update(dt);
        }
        let held = self.fixed_or_panic("run_frame").last_frame().held;
        self.time.stats.held_ticks += u64::from(held);
        FrameReport {
            first_tick: tick,
            ran,
            dropped,
            held,
        }
    }

    /// How long until the fixed step owes its next tick: what a real-time loop sleeps between
    /// two [`run_frame`](Registry::run_frame) calls. Reads the clock; `Duration::ZERO` when a
    /// tick is already due (also while a gate holds one); `None` without a fixed step.
    ///
    /// Measured from a clock reading [`run_frame`](Registry::run_frame) takes as its frame
    /// begins (one reading more per frame than the fixed step's own), so the time the frame's
    /// ticks took is not slept again.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::Registry;
    /// use freyr::time::ManualClock;
    ///
    /// let clock = ManualClock::new();
    /// let mut registry = Registry::with_workers(1);
    /// assert_eq!(registry.time_until_next_tick(), None);
    /// registry.set_fixed_step(Duration::from_millis(10), clock.clone()).unwrap();
    /// assert_eq!(registry.time_until_next_tick(), Some(Duration::from_millis(10)));
    /// clock.advance(Duration::from_millis(25));
    /// assert_eq!(registry.time_until_next_tick(), Some(Duration::ZERO)); // two ticks owed
    /// assert_eq!(registry.run_frame().ran, 2);
    /// assert_eq!(registry.time_until_next_tick(), Some(Duration::from_millis(5)));
    /// clock.advance(Duration::from_millis(4));
    /// assert_eq!(registry.time_until_next_tick(), Some(Duration::from_millis(1)));
    /// ```
    ///
    /// The real-clock loop: `set_fixed_step(dt, MonotonicClock::new())`, then
    /// `run_frame()` and `std::thread::sleep(registry.time_until_next_tick().unwrap())`, in a
    /// loop (the guide's chapter "The server loop").
    pub fn time_until_next_tick(&mut self) -> Option<Duration> {
        let since = self.time.frame_read;
        let fixed = self.time.fixed.as_mut()?;
        let dt = fixed.dt();
        // The accumulator as the last frame left it, in nanoseconds (alpha = accumulator / dt).
        let owed = Duration::from_nanos((fixed.alpha() * dt.as_nanos() as f64).round() as u64);
        let elapsed = fixed.clock_mut().now().saturating_sub(since);
        Some(dt.saturating_sub(owed.saturating_add(elapsed)))
    }

    /// The last tick this registry ran ([`update`](Registry::update), from
    /// [`run_frame`](Registry::run_frame) or called by hand) and its wall time; `None` before
    /// the first. A governor system in PreUpdate steps from it: the previous tick's wall time,
    /// whichever way the loop is driven.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::{Phase, Registry};
    /// use freyr::time::{GovernorParams, TickGovernor};
    ///
    /// let mut registry = Registry::with_workers(1);
    /// let mut governor = TickGovernor::new(GovernorParams::default()).unwrap();
    /// registry.add_system(Phase::PreUpdate, move |r: &mut Registry, _: f32| {
    ///     if let Some(last) = r.last_tick() {
    ///         assert_eq!(last.tick + 1, r.tick());
    ///         let load_factor = governor.step(last.wall);
    ///         r.set_load_factor(load_factor);
    ///     }
    /// });
    /// for _ in 0..3 {
    ///     registry.update(1.0 / 60.0);
    /// }
    /// assert_eq!(registry.last_tick().unwrap().tick, 2);
    /// assert_eq!(registry.load_factor(), 1.0); // these empty ticks are far under budget
    /// ```
    pub fn last_tick(&self) -> Option<TickTiming> {
        self.time.last
    }

    /// Sets the overrun governor's load factor that the tick profiler books to the ticks
    /// [`update`](Registry::update) records ([`TickRecord::load_factor`](crate::TickRecord)),
    /// from the tick running now (when called inside it) until it is set again. 1 until first
    /// set. A tick begun by hand with [`profile_tick_begin`](Registry::profile_tick_begin) books the load
    /// factor of its [`TickExtras`](crate::TickExtras) instead.
    ///
    /// # Panics
    ///
    /// If `load_factor` is not in `[0, 1]` (NaN included).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Phase, Registry};
    /// use freyr::profile::TickProfileConfig;
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.enable_tick_profile(TickProfileConfig::default());
    /// registry.add_system(Phase::PreUpdate, |r: &mut Registry, _: f32| {
    ///     let shed = if r.tick() == 1 { 0.5 } else { 1.0 };
    ///     r.set_load_factor(shed);
    /// });
    /// for _ in 0..3 {
    ///     registry.update(0.1);
    /// }
    /// let lf: Vec<f64> = registry.tick_profile().unwrap().records().map(|t| t.load_factor).collect();
    /// assert_eq!(lf, [1.0, 0.5, 1.0]);
    /// ```
    pub fn set_load_factor(&mut self, load_factor: f64) {
        assert!(
            (0.0..=1.0).contains(&load_factor),
            "freyr: a load factor is in [0, 1] (1 = no work shed), got {load_factor}"
        );
        self.time.load_factor = Some(load_factor);
    }

    /// The load factor last set with [`set_load_factor`](Registry::set_load_factor) (1 before).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// assert_eq!(registry.load_factor(), 1.0);
    /// registry.set_load_factor(0.25);
    /// assert_eq!(registry.load_factor(), 0.25);
    /// ```
    pub fn load_factor(&self) -> f64 {
        self.time.load_factor.unwrap_or(1.0)
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
    /// use freyr::time::ManualClock;
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
    /// registry.set_fixed_step(Duration::from_millis(1), freyr::time::ManualClock::new()).unwrap();
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

    /// The hook a restore or a load calls once the world and resources are back: the tick
    /// number goes to the snapshot's (or save's) `tick` (the next tick to run), and the
    /// deadline jobs with it: those in flight in the snapshot (`jobs`; none for a load) replace
    /// the registry's (see [`restore_jobs`](Registry::restore_jobs), whose panic payload it
    /// returns). Time state that is not rewound (telemetry, the fixed-step accumulator and
    /// gates) is left as it is; this is the one place a restore tells the time tools which
    /// tick the registry went to.
    pub(crate) fn rewind_time(
        &mut self,
        tick: u64,
        jobs: Option<&[freyr_persist::snapshot::JobsImage]>,
    ) -> Option<super::Payload> {
        self.time.tick = tick;
        self.sync.set_change_tick(tick);
        self.restore_jobs(tick, jobs)
    }

    /// Closes the tick, which took `wall`: records its timing; the next one gets the next
    /// number.
    pub(crate) fn close_tick(&mut self, wall: std::time::Duration) {
        self.time.last = Some(TickTiming {
            tick: self.time.tick,
            wall,
        });
        self.time.tick += 1;
        self.sync.set_change_tick(self.time.tick);
        self.time.stats.ticks += 1;
    }
}
