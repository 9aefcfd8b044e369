//! Function systems on the registry: registration ([`Registry::add_fn_system`]) and the
//! executor that runs a phase's segments (see `crate::systems::graph` for the graph).
//!
//! # The soundness argument
//!
//! While a segment's systems run, the registry is borrowed mutably by `update` and does
//! nothing else, and before they start every in-flight launch was waited for
//! (`read_with_layout(Exclusive)`): so no task and no registry operation touches the world or
//! the resources meanwhile, and no `&mut World` exists, so every chunk stays in place (the
//! layout stamp is current for the whole segment). Each system reaches only what its
//! parameters declared (the parameters are sealed); two systems whose declared access
//! conflicts are joined by an edge, so they never run at the same time, and an edge is a
//! happens-before (the successor's start is published through the ready list's lock, after
//! the predecessor's count-down). A system runs on one thread at a time (a node is popped
//! from the ready list exactly once), so its state, its command buffer and its parameters'
//! borrows are its own. A panicking system is caught on its worker before its borrows end, so
//! no borrow outlives the segment; every runner returns before `scope` does.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

use freyr_core::World;
use freyr_profile::phase::Phase;
use freyr_profile::tick::trace::TraceKind;
use freyr_query::events::buffer::TaskOutput;
use freyr_query::launch::inflight::OpAccess;
use freyr_query::state::LayoutStamp;
use freyr_sched::Scope;
use hashbrown::HashMap;

use crate::systems::graph::{self, FnNode, PhaseSchedule, Segment};
use crate::systems::param::{Prepare, SystemContext};
use crate::systems::{IntoFnSystem, ScheduleError, SystemAccess, SystemConfig};

use super::{Registry, System};

mod exec;
mod inspect;
mod rewind;

use self::exec::{Exec, runner};
use crate::systems::runs::SegmentRuns;

type Payload = Box<dyn core::any::Any + Send>;

impl Registry {
    /// Adds a function system named `name` to `phase`: a function or closure whose
    /// parameters ([`Query`](crate::systems::Query), [`Res`](crate::systems::Res),
    /// [`ResMut`](crate::systems::ResMut), [`Commands`](crate::Commands),
    /// [`EventWriter`](crate::systems::EventWriter), [`EventReader`](crate::systems::EventReader),
    /// [`Local`](crate::systems::Local), [`Tick`](crate::systems::Tick)) declare what it reads and
    /// writes. See [`add_fn_system_with`](Registry::add_fn_system_with) for `before`/`after`.
    ///
    /// Within the phase, two systems whose access conflicts (one writes a component or
    /// resource type the other reads or writes) run in registration order; systems with
    /// disjoint access run at the same time on the registry's pool, or one after the other on
    /// the calling thread while the segment's recent runs were faster that way (so a system
    /// must not wait for another). An exclusive system
    /// ([`add_system`](Registry::add_system), `&mut Registry`) is a barrier: the function
    /// systems added before it finish before it starts, those added after start after it ends.
    /// Commands and events apply at the phase's sync point in registration order, so the world
    /// is the same for every worker count.
    ///
    /// With the tick profiler on ([`enable_tick_profile`](Registry::enable_tick_profile)), each
    /// run is booked as a label named after the system (wall time, calls; see
    /// [`profile`](Registry::profile)), and in a traced tick as a span on the worker that ran
    /// it, a run that panicked included. With it off, systems are not timed.
    ///
    /// # Errors
    ///
    /// Nothing is added, and the registry is unchanged, on a [`ScheduleError`]: the parameters
    /// conflict among themselves, the name is taken, the declared order has a cycle or points
    /// back across an exclusive system, or an update is running.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Commands, Phase, Registry};
    /// use freyr::system::{Query, Tick};
    ///
    /// struct Pos(f32);
    /// struct Vel(f32);
    /// struct Age(u32);
    ///
    /// fn integrate(mut q: Query<(&mut Pos, &Vel)>, t: Tick) {
    ///     q.each(|_, (p, v)| p.0 += v.0 * t.dt);
    /// }
    /// fn age(mut q: Query<&mut Age>, mut cmds: Commands) {
    ///     q.each(|e, a| {
    ///         a.0 += 1;
    ///         if a.0 == 2 {
    ///             cmds.despawn(e);
    ///         }
    ///     });
    /// }
    ///
    /// let mut registry = Registry::with_workers(2);
    /// let e = registry.spawn((Pos(0.0), Vel(2.0)));
    /// registry.spawn((Age(0),));
    /// registry.add_fn_system(Phase::Update, "integrate", integrate).unwrap();
    /// registry.add_fn_system(Phase::Update, "age", age).unwrap(); // disjoint: runs beside it
    /// registry.update(0.5);
    /// registry.update(0.5);
    /// assert_eq!(registry.get::<Pos>(e).unwrap().0, 2.0);
    /// assert_eq!(registry.len(), 1);
    /// ```
    pub fn add_fn_system<M, F: IntoFnSystem<M>>(
        &mut self,
        phase: Phase,
        name: impl Into<String>,
        system: F,
    ) -> Result<(), ScheduleError>
    where
        M: 'static,
    {
        self.add_fn_system_with(phase, SystemConfig::new(name), system)
    }

    /// [`add_fn_system`](Registry::add_fn_system) with a [`SystemConfig`]: the name, `before`
    /// and `after` (naming systems or sets of the phase), and the sets the system is in.
    ///
    /// # Errors
    ///
    /// As [`add_fn_system`](Registry::add_fn_system).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Phase, Registry};
    /// use freyr::system::{ScheduleError, SystemConfig};
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry
    ///     .add_fn_system_with(Phase::Update, SystemConfig::new("a").after("b"), || {})
    ///     .unwrap();
    /// let err = registry
    ///     .add_fn_system_with(Phase::Update, SystemConfig::new("b").after("a"), || {})
    ///     .unwrap_err();
    /// assert!(matches!(err, ScheduleError::Cycle { .. }));
    /// assert_eq!(registry.system_count(Phase::Update), 1);
    /// ```
    pub fn add_fn_system_with<M, F: IntoFnSystem<M>>(
        &mut self,
        phase: Phase,
        config: SystemConfig,
        system: F,
    ) -> Result<(), ScheduleError>
    where
        M: 'static,
    {
        self.guard("Registry::add_fn_system");
        if self.in_update {
            return Err(ScheduleError::DuringUpdate);
        }
        let schedule = &mut self.fn_systems[phase.index()];
        if schedule.nodes.iter().any(|n| n.config.name == config.name) {
            return Err(ScheduleError::DuplicateName { name: config.name });
        }
        let mut access = SystemAccess::default();
        let system = crate::systems::function::FnSystem::new(system, &mut access);
        graph::check_access(&config.name, &access)?;
        schedule.nodes.push(FnNode {
            label: graph::intern(&config.name),
            timing: None,
            config,
            access,
            system: Box::new(system),
            segment: self.systems[phase.index()].len(),
            output: TaskOutput::default(),
            last_run: None,
        });
        if let Err(e) = graph::check_declared(&schedule.nodes, &schedule.set_orders) {
            schedule.nodes.pop();
            return Err(e);
        }
        schedule.segments = None;
        Ok(())
    }

    /// Orders two sets of `phase`'s function systems (bevy's `configure_sets(a.before(b))`):
    /// every system in `first` runs before every system in `second`, whenever either set gains
    /// members. Each name is a set or a system's own name, as in
    /// [`SystemConfig::before`](crate::systems::SystemConfig::before); a name that matches
    /// nothing when the phase's graph is resolved is [`ScheduleError::UnknownName`].
    ///
    /// # Errors
    ///
    /// [`ScheduleError::Cycle`] if the order contradicts the declared order, and
    /// [`ScheduleError::AcrossExclusive`] if it puts a system before one of an earlier segment
    /// (both leave the phase as it was); [`ScheduleError::DuringUpdate`] from a running system.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Phase, Registry};
    /// use freyr::system::{ResMut, SystemConfig};
    ///
    /// struct Log(Vec<&'static str>);
    ///
    /// let mut registry = Registry::with_workers(2);
    /// registry.insert_resource(Log(Vec::new()));
    /// registry.order_sets(Phase::Update, "physics", "render").unwrap();
    /// let render = SystemConfig::new("draw").in_set("render");
    /// registry
    ///     .add_fn_system_with(Phase::Update, render, |mut l: ResMut<Log>| l.0.push("draw"))
    ///     .unwrap();
    /// let physics = SystemConfig::new("move").in_set("physics");
    /// registry
    ///     .add_fn_system_with(Phase::Update, physics, |mut l: ResMut<Log>| l.0.push("move"))
    ///     .unwrap();
    /// registry.update(0.0);
    /// assert_eq!(registry.resource::<Log>().unwrap().0, ["move", "draw"]);
    /// assert!(registry.order_sets(Phase::Update, "render", "physics").is_err());
    /// ```
    pub fn order_sets(
        &mut self,
        phase: Phase,
        first: impl Into<String>,
        second: impl Into<String>,
    ) -> Result<(), ScheduleError> {
        self.guard("Registry::order_sets");
        if self.in_update {
            return Err(ScheduleError::DuringUpdate);
        }
        let schedule = &mut self.fn_systems[phase.index()];
        schedule.set_orders.push((first.into(), second.into()));
        if let Err(e) = graph::check_declared(&schedule.nodes, &schedule.set_orders) {
            schedule.set_orders.pop();
            return Err(e);
        }
        schedule.segments = None;
        Ok(())
    }

    /// The shuffled-start test mode: with `Some(seed)`, the function systems of every phase
    /// that are free to start (all their predecessors done) start in a random order drawn from
    /// `seed`, the tick and the segment, on one worker as on many; `None` (the default) turns
    /// it off. The graph is unchanged, so a schedule whose systems keep all their shared
    /// state in the registry gives the same world for every seed: state shared outside the ECS
    /// (a captured `Arc<Mutex<_>>`, a global) shows up as a difference between seeds in a
    /// test that compares world hashes.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use freyr::{Phase, Registry};
    ///
    /// // Two systems with no declared access share a Vec behind the registry's back.
    /// let run = |seed: u64| {
    ///     let hidden = Arc::new(Mutex::new(Vec::new()));
    ///     let mut registry = Registry::with_workers(1);
    ///     registry.shuffle_system_starts(Some(seed));
    ///     for name in ["a", "b", "c", "d"] {
    ///         let hidden = hidden.clone();
    ///         registry
    ///             .add_fn_system(Phase::Update, name, move || hidden.lock().unwrap().push(name))
    ///             .unwrap();
    ///     }
    ///     registry.update(0.0);
    ///     let order = hidden.lock().unwrap().clone();
    ///     order
    /// };
    /// let orders: std::collections::HashSet<_> = (0..16).map(run).collect();
    /// assert!(orders.len() > 1); // the hidden order dependence shows up
    /// ```
    pub fn shuffle_system_starts(&mut self, seed: Option<u64>) {
        for schedule in &mut self.fn_systems {
            schedule.shuffle = seed;
        }
    }

    /// Number of function systems in `phase` (also counted by
    /// [`system_count`](Registry::system_count)).
    pub(super) fn fn_system_count(&self, phase: Phase) -> usize {
        self.fn_systems[phase.index()].nodes.len()
    }

    /// Runs `phase`'s systems: each segment of function systems, then the exclusive system
    /// that ends it. Called by `run_phases` inside its catch; a panic propagates after the
    /// segment it happened in finished.
    pub(super) fn run_phase_systems(
        &mut self,
        phase: Phase,
        systems: &mut [Box<dyn System>],
        dt: f32,
    ) {
        if self.fn_systems[phase.index()].nodes.is_empty() {
            for system in systems.iter_mut() {
                #[cfg(feature = "tracing")]
                let _system = freyr_profile::spans::system(system.name()).entered();
                system.update(self, dt);
            }
            return;
        }
        // The schedule is taken out while its segments run (they need it and the registry at
        // once), and put back while each exclusive system runs, so that the exclusive system
        // sees its phase's function systems (`system_count`, `system_access`) and
        // `shuffle_system_starts` reaches them. `held` says where it is when a panic ends the
        // phase.
        let mut schedule = core::mem::take(&mut self.fn_systems[phase.index()]);
        let mut held = true;
        let ran = panic::catch_unwind(AssertUnwindSafe(|| {
            if schedule.segments.is_none() || schedule.exclusive != systems.len() {
                match graph::resolve(&schedule.nodes, &schedule.set_orders, systems.len()) {
                    Ok(segments) => schedule.segments = Some(segments),
                    Err(e) => panic!("freyr: {e}"),
                }
                schedule.exclusive = systems.len();
                schedule.runs.clear();
            }
            let segments = schedule.segments.as_ref().map_or(0, Vec::len);
            schedule.runs.resize_with(segments, SegmentRuns::default);
            for k in 0..=systems.len() {
                self.run_segment(&mut schedule, k, dt);
                if let Some(system) = systems.get_mut(k) {
                    #[cfg(feature = "tracing")]
                    let _system = freyr_profile::spans::system(system.name()).entered();
                    self.fn_systems[phase.index()] = core::mem::take(&mut schedule);
                    held = false;
                    system.update(self, dt);
                    // `add_fn_system`, `order_sets` and `check_schedule` refuse during the
                    // phase, so the schedule is as it was left (but for the shuffle seed).
                    schedule = core::mem::take(&mut self.fn_systems[phase.index()]);
                    held = true;
                }
            }
        }));
        if held {
            self.fn_systems[phase.index()] = schedule;
        }
        if let Err(payload) = ran {
            panic::resume_unwind(payload);
        }
    }

    fn run_segment(&mut self, schedule: &mut PhaseSchedule, k: usize, dt: f32) {
        let PhaseSchedule {
            nodes,
            segments,
            runs,
            shuffle,
            ..
        } = schedule;
        let shuffle = *shuffle;
        let segment = &segments.as_ref().expect("resolved before the segments run")[k];
        if segment.nodes.is_empty() {
            return;
        }
        // Every launch waited for: nothing else touches the world while the segment runs.
        let (world, stamp) = self
            .sync
            .read_with_layout(&OpAccess::Exclusive, &self.profiler);
        let world = NonNull::from(world);
        let tick = self.tick();
        // Only the systems whose parameters prepare are touched here: the others' nodes stay
        // in the cache of the worker that ran them last.
        let mut resources = HashMap::new();
        for &i in &segment.prepares {
            let node = &mut nodes[i];
            let mut prepare = Prepare {
                sync: &mut self.sync,
                profiler: &self.profiler,
                resources: &mut resources,
                system: &node.config.name,
            };
            node.system.prepare(&mut prepare);
        }
        assert!(
            segment.nodes.iter().all(|&i| i < nodes.len()),
            "a segment names nodes of its phase"
        );
        let runs = &mut runs[k];
        runs.reset(&segment.preds);
        let rng = shuffle.map(|seed| {
            let mut state =
                seed ^ tick.rotate_left(32) ^ (k as u64).wrapping_mul(0xA24B_AED4_963E_E407);
            graph::split_mix(&mut state)
        });
        let pool = self.workers() > 1 && segment.nodes.len() > 1 && runs.chooser.pool();
        let shuffled = pool && rng.is_some();
        if let (true, Some(mut rng)) = (pool, rng) {
            let roots = &mut runs.shuffled;
            roots.clear();
            roots.extend_from_slice(&segment.roots);
            for i in (1..roots.len()).rev() {
                let j = (graph::split_mix(&mut rng) % (i as u64 + 1)) as usize;
                roots.swap(i, j);
            }
        }
        let workers = if pool { self.workers() } else { 1 };
        if pool {
            // A segment's nodes are counted in `u32` (`Segment::preds`), and so are its roots.
            let n = segment.roots.len() as u32;
            runs.share_roots(n, n.min(workers as u32));
        }
        // One base pointer for every node: a reference to each element in turn would reborrow
        // the whole vector and retire the pointers taken before. The vector does not move or
        // change length until the segment ends (`nodes` stays borrowed by this function), and
        // every index of the segment is in bounds (asserted above).
        let base = NonNull::new(nodes.as_mut_ptr()).expect("a vector's pointer is not null");
        let timed = self.tick_profile.is_some();
        // SAFETY: `base` is the node list's start, every index of the segment is in bounds
        // (asserted above), and the list is borrowed by this function until `exec` is gone.
        let exec = unsafe {
            Exec::new(
                segment,
                (
                    runs,
                    if shuffled {
                        &runs.shuffled
                    } else {
                        &segment.roots
                    },
                ),
                base,
                world,
                (stamp, tick, dt),
                workers,
                timed,
            )
        };
        let start = std::time::Instant::now();
        if !pool {
            let shuffled;
            let order = match rng {
                Some(rng) => {
                    shuffled = segment.shuffled_topo(rng);
                    &shuffled
                }
                None => &segment.topo,
            };
            for &v in order {
                exec.run_node(v);
                exec.finish(v);
            }
        } else {
            // Each runner claims the roots of its own share from the front in batches, one
            // atomic operation each, in order (lowest index first) or shuffled, then helps
            // with the others' from their back; nodes readied later go through the locked list.
            if let Some(rng) = rng {
                exec.ready.lock().unwrap_or_else(|p| p.into_inner()).rng = Some(rng);
            }
            let exec = &exec;
            self.sync.pool().scope(|s| {
                let runners = exec.shares.len();
                exec.active.fetch_add(runners, Ordering::Relaxed);
                for home in 1..runners {
                    s.spawn(move |s| runner(exec, s, Some(home)));
                }
                runner(exec, s, Some(0));
            });
        }
        let elapsed = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let mut panics = exec.panics.into_inner().unwrap_or_else(|p| p.into_inner());
        runs.chooser.record(pool, elapsed);
        // A panicking system's commands and events are discarded whole; a value's `Drop`
        // panicking here is dropped too (the system's panic goes first).
        panics.sort_by_key(|(v, _)| *v);
        let report = runs.report.get_mut().unwrap_or_else(|p| p.into_inner());
        let mut first_panic: Option<Payload> = None;
        for (v, payload) in panics {
            let node = &mut nodes[segment.nodes[v as usize]];
            let output = core::mem::take(&mut node.output);
            if let Err(p) = panic::catch_unwind(AssertUnwindSafe(|| drop(output))) {
                freyr_sched::drop_payload(p);
            }
            // A run that panicked is booked and traced like the others: its time was spent.
            if node.timing.is_some() {
                report.push(v);
            }
            if first_panic.is_none() {
                first_panic = Some(payload);
            } else {
                freyr_sched::drop_payload(payload);
            }
        }
        // Outputs in registration order: the order commands apply in. Only the nodes that
        // reported are touched.
        report.sort_unstable();
        for &v in report.iter() {
            let node = &mut nodes[segment.nodes[v as usize]];
            if let Some(t) = node.timing.take() {
                self.profiler.record_label(node.label, 1, t.end - t.start);
                self.trace_span(TraceKind::Task, node.label, t.worker, t.start, t.end);
            }
            if !node.output.is_empty() {
                let seq = self.next_seq;
                self.next_seq += 1;
                self.pending
                    .push((seq, vec![core::mem::take(&mut node.output)]));
            }
        }
        if let Some(payload) = first_panic {
            panic::resume_unwind(payload);
        }
    }
}
