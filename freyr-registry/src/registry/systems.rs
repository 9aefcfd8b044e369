//! Systems and phases: [`System`], and [`Registry::update`] running PreUpdate, Update and
//! PostUpdate, each followed by a sync point.

use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use freyr_profile::phase::Phase;

use super::{Registry, System};

impl Registry {
    /// Registers `system` to run in `phase`, after the systems already registered there.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Phase, Registry};
    ///
    /// struct Log(Vec<&'static str>);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.insert_resource(Log(Vec::new()));
    /// registry.add_system(Phase::PostUpdate, |r: &mut Registry, _: f32| {
    ///     r.resource_mut::<Log>().unwrap().0.push("post")
    /// });
    /// registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
    ///     r.resource_mut::<Log>().unwrap().0.push("update a")
    /// });
    /// registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
    ///     r.resource_mut::<Log>().unwrap().0.push("update b")
    /// });
    /// registry.update(0.016);
    /// assert_eq!(registry.resource::<Log>().unwrap().0, ["update a", "update b", "post"]);
    /// ```
    #[doc(alias = "add_systems")]
    pub fn add_system<S: System>(&mut self, phase: Phase, system: S) {
        self.systems[phase.index()].push(Box::new(system));
    }

    /// Number of systems registered for `phase`, function systems included.
    pub fn system_count(&self, phase: Phase) -> usize {
        let running = if self.phase == Some(phase) {
            self.running_systems
        } else {
            0
        };
        self.systems[phase.index()].len() + running + self.fn_system_count(phase)
    }

    /// Shutdown of the systems: calls [`System::settle`] on every system, phase by phase in
    /// registration order, so every async system hands its launches still in flight to its
    /// discard path (each exactly once) and launches nothing more. Returns how many launches
    /// were discarded. With [`settle_jobs`](Registry::settle_jobs) for the deadline jobs, the
    /// orderly end of a server before the registry drops.
    ///
    /// # Panics
    ///
    /// - If called during an update or from a callback.
    /// - Re-raises the first panic of a system's `settle` once every system was settled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use freyr::{AsyncSystem, Phase, Registry};
    /// use freyr::time::pump::{Discard, Launched, Process};
    ///
    /// struct Never; // its work is handed to a thread that never answers
    /// impl AsyncSystem for Never {
    ///     type Request = ();
    ///     type Result = ();
    ///     type Error = String;
    ///     fn collect(&mut self, _: &mut Registry) -> Option<()> { Some(()) }
    ///     fn process(&mut self, _: Arc<()>) -> Process<(), String> {
    ///         Process::elsewhere(std::mem::forget)
    ///     }
    ///     fn apply(&mut self, _: &mut Registry, _: (), _: &Launched<()>) { unreachable!() }
    ///     fn discard(&mut self, _: &mut Registry, why: Discard<(), String>, l: &Launched<()>) {
    ///         assert_eq!((why, l.tick), (Discard::Cancelled, 0));
    ///     }
    /// }
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.add_async_system(Phase::Update, Never);
    /// registry.update(0.1);
    /// registry.update(0.1); // still in flight: nothing applied, nothing launched
    /// assert_eq!(registry.settle_systems(), 1);
    /// assert_eq!(registry.settle_systems(), 0);
    /// ```
    pub fn settle_systems(&mut self) -> usize {
        self.guard("Registry::settle_systems");
        assert!(
            !self.in_update,
            "freyr: Registry::settle_systems called during an update; settle after the last tick"
        );
        let mut discarded = 0;
        let mut first_panic = None;
        for phase in Phase::ALL {
            let mut systems = core::mem::take(&mut self.systems[phase.index()]);
            for system in systems.iter_mut() {
                match panic::catch_unwind(AssertUnwindSafe(|| system.settle(self))) {
                    Ok(n) => discarded += n,
                    Err(payload) => freyr_sched::keep_first(&mut first_panic, payload),
                }
            }
            let added = core::mem::replace(&mut self.systems[phase.index()], systems);
            self.systems[phase.index()].extend(added);
        }
        if let Some(payload) = first_panic {
            panic::resume_unwind(payload);
        }
        discarded
    }

    /// The phase currently running, if inside [`update`](Registry::update).
    pub fn current_phase(&self) -> Option<Phase> {
        self.phase
    }

    /// Runs one tick, numbered [`tick`](Registry::tick): first the deadline jobs due at this tick
    /// are applied (see [`add_deadline_jobs`](Registry::add_deadline_jobs)); then for each phase
    /// (PreUpdate, Update, PostUpdate), its systems in registration order, then a sync point
    /// (wait for all tasks, apply commands, destroy queued entities). The tick number then
    /// advances, also when the tick panicked.
    ///
    /// # Panics
    ///
    /// - If called from a system during an update (updates do not nest), or from a callback.
    /// - Re-raises a system's panic, or the first callback panic of a phase, after that phase's
    ///   sync point ran; later phases of the tick do not run. The registry stays usable.
    /// - Re-raises, the same way, a panic of the phase's sync point (see
    ///   [`execute_tasks`](Registry::execute_tasks)): a component's `Drop`, or a command that
    ///   would pass one of the world's [capacity limits](freyr_core::World#capacity-limits).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Phase, Registry};
    ///
    /// struct Age(u32);
    ///
    /// let mut registry = Registry::with_workers(2);
    /// let e = registry.spawn((Age(0),));
    /// registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
    ///     r.query::<&mut Age>().each_async(|_, a| a.0 += 1);
    /// });
    /// for _ in 0..3 {
    ///     registry.update(1.0);
    /// }
    /// assert_eq!(registry.get::<Age>(e).unwrap().0, 3);
    /// ```
    #[doc(alias = "run_schedule")]
    #[doc(alias = "run")]
    pub fn update(&mut self, dt: f32) {
        self.guard("Registry::update");
        assert!(
            !self.in_update,
            "freyr: Registry::update called from a system while an update is running; \
             updates do not nest (use execute_tasks for a sync point inside a system)"
        );
        self.in_update = true;
        let start = Instant::now();
        #[cfg(feature = "tracing")]
        let _tick = freyr_profile::spans::tick(self.tick()).entered();
        // With the tick profiler on and no tick opened by the caller, the update is the tick.
        let own_tick = self.begin_update_tick();
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            if own_tick {
                self.update_tick_phase("deadlines");
            }
            {
                #[cfg(feature = "tracing")]
                let _deadlines = freyr_profile::spans::deadlines().entered();
                self.open_tick();
            }
            self.run_phases(dt, own_tick, start)
        }));
        self.in_update = false;
        self.phase = None;
        // The last phase's end is the update's (what follows it here takes nanoseconds); after a
        // panic, the clock is read again.
        let end = match &result {
            Ok(end) => *end,
            Err(_) => Instant::now(),
        };
        self.close_tick(end - start);
        if own_tick {
            self.end_update_tick(freyr_profile::tick::TickExtras {
                load_factor: self.load_factor(),
                ..freyr_profile::tick::TickExtras::default()
            });
        }
        if let Err(panic) = result {
            panic::resume_unwind(panic);
        }
    }

    /// Runs the phases from `start` (the update's start); returns when the last one ended.
    fn run_phases(&mut self, dt: f32, own_tick: bool, mut start: Instant) -> Instant {
        // At most one clock read per boundary: a phase starts when the one before it ends. A sync
        // point with nothing in flight and nothing to apply counts as no sync time, and is not
        // timed: a clock read costs more than such a sync point (20 ns or more on a virtual
        // machine).
        for phase in Phase::ALL {
            if own_tick {
                self.update_tick_phase(phase.name());
            }
            #[cfg(feature = "tracing")]
            let _phase = freyr_profile::spans::phase(phase).entered();
            self.phase = Some(phase);
            let mut systems = core::mem::take(&mut self.systems[phase.index()]);
            let idle = systems.is_empty() && self.fn_system_count(phase) == 0;
            self.running_systems = systems.len();
            let ran = panic::catch_unwind(AssertUnwindSafe(|| {
                self.run_phase_systems(phase, &mut systems, dt);
            }));
            self.running_systems = 0;
            // Systems added while the phase ran go after the existing ones.
            let added = core::mem::replace(&mut self.systems[phase.index()], systems);
            self.systems[phase.index()].extend(added);
            let quiet = self.sync_is_quiet();
            let sync_start = (!quiet).then(Instant::now);
            let task_panic = self.sync_point();
            // A phase that ran nothing and synced nothing took no time worth a clock read: its
            // few nanoseconds count in the next phase.
            let end = if idle && quiet { start } else { Instant::now() };
            let sync = sync_start.map_or(Duration::ZERO, |s| end - s);
            self.profiler.record_phase(phase, end - start, sync);
            start = end;
            match (ran, task_panic) {
                (Err(system_panic), task_panic) => {
                    // Dropped now, not while unwinding: a payload whose `Drop` panics would
                    // abort.
                    if let Some(task_panic) = task_panic {
                        freyr_sched::drop_payload(task_panic);
                    }
                    panic::resume_unwind(system_panic)
                }
                (Ok(()), Some(task_panic)) => panic::resume_unwind(task_panic),
                (Ok(()), None) => {}
            }
        }
        start
    }
}
