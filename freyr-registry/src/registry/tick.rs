//! The tick profiler, driven through the registry: open and close a tick's record, name its
//! phases, add spans of work the registry did not launch. Every call is a single branch while the profiler
//! is off: no clock read, no allocation.

use std::time::Instant;

use freyr_profile::tick::trace::{TaskSpan, TraceKind};
use freyr_profile::tick::{TickExtras, TickProfile, TickProfileConfig};

use super::Registry;

impl Registry {
    /// Turns the tick profiler on (replacing any earlier recording).
    ///
    /// Called from a system, the new recording starts with the next tick: the update running
    /// is not recorded by it (nor by the recording it replaced, whose open tick is dropped).
    ///
    /// # Panics
    ///
    /// If `config.window` is 0 or `config.ewma_alpha` is outside `(0, 1]`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// assert!(registry.tick_profile().is_none());
    /// registry.enable_tick_profile(Default::default());
    /// assert_eq!(registry.tick_profile().unwrap().ticks_recorded(), 0);
    /// ```
    pub fn enable_tick_profile(&mut self, config: TickProfileConfig) {
        let dropped = self.profile().time.dropped_ticks;
        self.tick_profile = Some(Box::new(TickProfile::new(config, dropped)));
    }

    /// Turns the tick profiler off and returns what it recorded: the ticks it closed, not one
    /// still open (called from a system, the update running is not among them).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.enable_tick_profile(Default::default());
    /// registry.profile_tick_begin(0);
    /// registry.profile_tick_end(Default::default());
    /// assert_eq!(registry.disable_tick_profile().unwrap().ticks_recorded(), 1);
    /// assert!(registry.tick_profile().is_none());
    /// ```
    pub fn disable_tick_profile(&mut self) -> Option<TickProfile> {
        self.tick_profile.take().map(|b| *b)
    }

    /// The tick profiler's records, if it is on.
    pub fn tick_profile(&self) -> Option<&TickProfile> {
        self.tick_profile.as_deref()
    }

    /// Opens the tick profiler's record of tick `tick`: its wall time, counters and (when
    /// `tick` is in [`TickProfileConfig::trace_ticks`]) its trace run from here. A no-op when
    /// the profiler is off.
    ///
    /// Only a profiler bracket: it runs no tick. The registry's [`tick`](Self::tick) does not
    /// move, and no system, fixed step or deadline job runs; [`update`](Self::update) (or
    /// [`run_frame`](Self::run_frame)) is the tick. The names say so since `begin_tick` /
    /// `end_tick` read like a tick around `execute_tasks` that never advanced it:
    ///
    /// ```compile_fail
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.begin_tick(0); // gone: profile_tick_begin
    /// ```
    ///
    /// A loop whose tick is [`update`](Self::update) (or [`run_frame`](Self::run_frame)) need
    /// not call this: with the profiler on, an update outside an open tick is recorded as a
    /// tick of its own, numbered [`tick`](Self::tick), with phases `deadlines`, `PreUpdate`,
    /// `Update` and `PostUpdate`, and the dropped ticks and deadline stalls of the registry's
    /// own fixed step and deadline jobs. Call it to make a tick of more than one update, or of
    /// work outside systems; an update inside it then leaves the tick and its phases alone.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::{Phase, Registry};
    /// use freyr::profile::TickProfileConfig;
    /// use freyr::time::ManualClock;
    ///
    /// struct Pos(f32);
    ///
    /// let clock = ManualClock::new();
    /// let mut registry = Registry::with_workers(2);
    /// registry.spawn_batch((0..1000).map(|i| (Pos(i as f32),)));
    /// registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
    ///     r.query::<&mut Pos>().with_label("Move").each_async(|_, p| p.0 += 1.0);
    /// });
    /// registry.set_fixed_step(Duration::from_millis(10), clock.clone()).unwrap();
    /// registry.enable_tick_profile(TickProfileConfig::default());
    /// clock.advance(Duration::from_millis(100)); // 10 ticks due: 8 run, 2 dropped
    /// registry.run_frame();
    /// let profile = registry.tick_profile().unwrap();
    /// let ticks: Vec<u64> = profile.records().map(|r| r.tick).collect();
    /// assert_eq!(ticks, (0..8).collect::<Vec<_>>());
    /// let first = profile.records().next().unwrap();
    /// assert_eq!(first.dropped_ticks, 2); // counted as the frame began
    /// assert_eq!(first.label("Move").unwrap().tasks, 2);
    /// let phases: Vec<&str> = first.phases.iter().map(|(n, _)| *n).collect();
    /// assert_eq!(phases, ["deadlines", "PreUpdate", "Update", "PostUpdate"]);
    /// ```
    pub fn profile_tick_begin(&mut self, tick: u64) {
        if self.tick_profile.is_none() {
            return;
        }
        let base = self.profile();
        if let Some(profile) = &mut self.tick_profile {
            profile.begin(tick, base);
        }
    }

    /// Ends the current phase of the profiler's open tick record (if any) and starts phase
    /// `name`; the last phase ends with the record. A no-op when the profiler is off.
    ///
    /// # Panics
    ///
    /// If the profiler is on and no tick was begun.
    pub fn profile_tick_phase(&mut self, name: &'static str) {
        if let Some(profile) = &mut self.tick_profile {
            profile.phase(name);
        }
    }

    /// Closes the record opened by [`profile_tick_begin`](Self::profile_tick_begin) and keeps
    /// it with `extras`. A no-op when the profiler is off; like the opening, it runs no tick.
    ///
    /// Launches are booked when they are retired, so end a tick after its last sync point.
    ///
    /// # Panics
    ///
    /// If the profiler is on and no tick was begun.
    pub fn profile_tick_end(&mut self, extras: TickExtras) {
        if self.tick_profile.is_none() {
            return;
        }
        let now = self.profile();
        if let Some(profile) = &mut self.tick_profile {
            profile.end(now, extras);
        }
    }

    /// Whether the current tick is traced: work run outside queries (a `parallel_for` pass)
    /// can then time itself and report with [`trace_span`](Self::trace_span).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    /// use freyr::profile::TickProfileConfig;
    /// let mut registry = Registry::with_workers(1);
    /// assert!(!registry.is_tracing());
    /// registry.enable_tick_profile(TickProfileConfig { trace_ticks: 3..4, ..Default::default() });
    /// registry.profile_tick_begin(3);
    /// assert!(registry.is_tracing());
    /// registry.profile_tick_end(Default::default());
    /// assert!(!registry.is_tracing());
    /// ```
    pub fn is_tracing(&self) -> bool {
        self.traced_tick().is_some()
    }

    /// Adds a span of work to the current tick's trace: `kind` is usually
    /// [`TraceKind::Task`] (work a pass ran on pool worker `worker`, or on a non-worker
    /// thread for `None`; see [`freyr_sched::current_worker_index`]) or [`TraceKind::Stall`]. A
    /// no-op unless the tick is traced.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Instant;
    /// use freyr::Registry;
    /// use freyr::profile::{TickProfileConfig, TraceKind};
    ///
    /// let mut registry = Registry::with_workers(2);
    /// registry.enable_tick_profile(TickProfileConfig { trace_ticks: 0..1, ..Default::default() });
    /// registry.profile_tick_begin(0);
    /// let stamps = std::sync::Mutex::new(Vec::new());
    /// registry.pool().parallel_for(4, 1, |_| {
    ///     let start = Instant::now();
    ///     let worker = freyr::sched::current_worker_index();
    ///     stamps.lock().unwrap().push((start, Instant::now(), worker));
    /// });
    /// for (start, end, worker) in stamps.into_inner().unwrap() {
    ///     registry.trace_span(TraceKind::Task, "peers", worker, start, end);
    /// }
    /// registry.profile_tick_end(Default::default());
    /// let events = registry.tick_profile().unwrap().trace_events();
    /// assert_eq!(events.iter().filter(|e| e.name == "peers").count(), 4);
    /// ```
    pub fn trace_span(
        &mut self,
        kind: TraceKind,
        name: &'static str,
        worker: Option<usize>,
        start: Instant,
        end: Instant,
    ) {
        if let Some(tick) = self.traced_tick()
            && let Some(profile) = &mut self.tick_profile
        {
            profile
                .trace
                .user_span(tick, kind, name, worker, start, end);
        }
    }

    /// Opens a tick for [`update`](Registry::update) when the profiler is on and the caller
    /// has not opened one; returns whether it did (the update then names its phases and closes
    /// the tick).
    pub(super) fn begin_update_tick(&mut self) -> bool {
        let own = self
            .tick_profile
            .as_deref()
            .is_some_and(|p| p.open_tick().is_none());
        if own {
            self.profile_tick_begin(self.tick());
        }
        own
    }

    /// Starts phase `name` of the tick [`update`](Registry::update) opened, if that tick is
    /// still open: a system may have turned the profiler off, or replaced its recording
    /// ([`enable_tick_profile`](Registry::enable_tick_profile)), since.
    pub(super) fn update_tick_phase(&mut self, name: &'static str) {
        if let Some(profile) = &mut self.tick_profile
            && profile.open_tick().is_some()
        {
            profile.phase(name);
        }
    }

    /// Closes the tick [`update`](Registry::update) opened, if it is still open (see
    /// [`update_tick_phase`](Registry::update_tick_phase)).
    pub(super) fn end_update_tick(&mut self, extras: TickExtras) {
        if self
            .tick_profile
            .as_deref()
            .is_some_and(|p| p.open_tick().is_some())
        {
            self.profile_tick_end(extras);
        }
    }

    /// The number of the open tick, when it is traced.
    pub(super) fn traced_tick(&self) -> Option<u64> {
        let profile = self.tick_profile.as_deref()?;
        profile.tracing()?;
        profile.open_tick()
    }

    pub(super) fn trace_sync(&mut self, tick: u64, start: Instant) {
        if let Some(profile) = &mut self.tick_profile {
            profile.trace.sync_span(tick, start, Instant::now());
        }
    }

    pub(super) fn trace_launch(
        &mut self,
        label: Option<&'static str>,
        seq: u64,
        spans: &[TaskSpan],
    ) {
        // A launch retired after its tick ended is booked to the tick now open, if any.
        let Some(profile) = &mut self.tick_profile else {
            return;
        };
        let Some(tick) = profile.open_tick() else {
            return;
        };
        profile
            .trace
            .launch(tick, label.unwrap_or("unlabelled"), seq, spans);
    }
}
