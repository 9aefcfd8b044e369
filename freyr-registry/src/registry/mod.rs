//! [`Registry`]: the world, the pool, resources, systems, in-flight work and sync points.
//!
//! One file per role:
//!
//! - `freyr_query::world`: the wait-before-access API ([`SyncedWorld`]) and the soundness
//!   argument (below the launches, in `freyr-query`);
//! - `entities`: the world, spawning, despawning, component access;
//! - `resources`: typed singletons;
//! - `queries`: the query-state cache and the frames queries run in;
//! - `sync_point`: sync points, the order commands apply in, the panic contract;
//! - `systems`: systems and phases;
//! - `fn_systems`: function systems: registration and the executor of a phase's graph;
//! - `profile`: the profiler and the world hash;
//! - `hashing`: the registered hashable types and the hash over all of them;
//! - `digest`: the per-chunk world digest and the desync locator;
//! - `time`: the tick number, the fixed-step driver and gates, time telemetry;
//! - `deadlines`: deadline jobs applied at T + K by the tick-start hook;
//! - `deadline_restore`: deadline jobs in flight across a snapshot and its restore, and a load;
//! - `pump`: async-pump results drained in their owning system's update;
//! - `async_system`: async systems (collect, process, apply, discard) over a pump they own;
//! - `async_progress`: the handle a gate reads an async system's pump through;
//! - `tick`: the tick profiler's calls (open and close a tick's record, phases, trace spans).
//!
//! Everything here sits below [`Query`](crate::Query) and [`Reduction`](crate::Reduction),
//! which call in; nothing here names them.

mod async_progress;
mod async_system;
mod deadline_restore;
mod deadlines;
mod digest;
mod entities;
mod events;
mod fn_systems;
mod hashing;
pub(crate) mod hierarchy;
mod hooks;
#[cfg(feature = "persist")]
mod persist;
mod profile;
mod pump;
pub(crate) mod queries;
mod resources;
mod snapshot;
mod spare;
mod sync_point;
mod systems;
mod tick;
mod time;

use core::any::{Any, TypeId};
use core::cell::Cell;
use core::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use freyr_core::{Entity, World};
use freyr_sched::{ThreadPool, resolve_worker_count};
use freyr_time::{Clock, DeadlineError, DeadlineStats, FixedStep};
use hashbrown::HashMap;

use freyr_persist::hashable::Hashables;
use freyr_profile::phase::Phase;
use freyr_profile::profiler::{Profiler, TimeStats};
use freyr_query::launch::callback::inside_callback_of;

use freyr_query::cache::QueryCache;
use freyr_query::world::SyncedWorld;

pub use self::async_progress::AsyncProgress;
pub use self::async_system::{AsyncSystem, Launched, Process};
pub use self::hierarchy::{
    ChildOf, Children, CloneError, CloneMap, CloneRemapFn, HierarchyCommands, HierarchyError,
};

static NEXT_REGISTRY_ID: AtomicU64 = AtomicU64::new(1);

/// Owns a [`World`], a [`ThreadPool`], [`Resources`](crate::Resources) and systems, and runs
/// queries on them with sync points that keep parallel work race-free and deterministic.
///
/// - **Queries**: [`query`](Registry::query) and friends return a [`Query`](crate::Query); its
///   `each*` methods run on the calling thread, its `each_async*` methods launch one task per
///   chunk.
/// - **Sync points**: [`execute_tasks`](Registry::execute_tasks) and the end of each phase of
///   [`update`](Registry::update) wait for all launched work, apply recorded commands in
///   (launch, chunk, row, record) order, then destroy entities queued by
///   [`destroy_entity`](Registry::destroy_entity). Any operation that conflicts with in-flight
///   work waits for that work first (an implicit sync point); disjoint work is not waited for.
/// - **Systems**: [`add_system`](Registry::add_system) for a [`Phase`]; `update(dt)` runs
///   PreUpdate, Update, PostUpdate, each followed by a sync point.
///
/// The registry is `Send` but not `Sync`: it is driven from one thread at a time, and callbacks
/// (which must be `Sync` to run on workers) cannot capture it. Dropping it waits for all tasks.
///
/// # Panics in user code
///
/// Callbacks, a reduction's `identity` and `combine`, components' `Drop` and panic payloads'
/// `Drop` are user code that may panic. At a sync point (explicit, the end of a phase, or the
/// retiring part of [`Reduction::join`](crate::Reduction::join)):
///
/// - every command of every task that did not panic is applied, in (launch, chunk, row, record)
///   order, and every queued destruction runs, even when another task's `combine`, a
///   component's `Drop` (while a command applies) or a payload's `Drop` panics; a panicking
///   task's own commands are discarded whole;
/// - every value is dropped exactly once (or moved into the world);
/// - the first panic is re-raised after the sync point finished its work: the retired launches'
///   callback and reduction panics in launch order, then the panics of commands in the order
///   they applied, then those of destructions; later panics are dropped, a panic in their
///   payload's `Drop` caught and dropped too;
/// - the pool and the registry stay usable; `join` returns its result or panics clearly.
///
/// Where std's own rule applies — a panic raised while another unwinds, such as a component's
/// `Drop` panicking while a panicking callback's commands are discarded — the process aborts.
///
/// # Examples
///
/// ```
/// use freyr::Registry;
///
/// struct Pos(f32);
/// struct Vel(f32);
///
/// let mut registry = Registry::with_workers(4);
/// let e = registry.spawn((Pos(0.0), Vel(1.0)));
/// registry
///     .query::<(&mut Pos, &Vel)>()
///     .each_async(|_, (p, v)| p.0 += v.0);
/// // `get::<Pos>` conflicts with the in-flight write of `Pos`, so it waits for it.
/// assert_eq!(registry.get::<Pos>(e).unwrap().0, 1.0);
/// registry.execute_tasks();
/// assert_eq!(registry.profile().implicit_syncs, 1);
/// ```
#[doc(alias = "App")]
#[doc(alias = "Schedule")]
pub struct Registry {
    // In-flight work is retired in `Drop::drop`, before any field drops.
    /// The world, the resources, the pool and the in-flight launches, reachable only through
    /// the wait-before-access API (`world.rs`).
    sync: SyncedWorld,
    /// Command buffers and events awaiting the next sync point, tagged with their launch
    /// number.
    pending: Vec<(u64, Vec<freyr_query::events::buffer::TaskOutput>)>,
    queries: QueryCache,
    systems: [Vec<Box<dyn System>>; 3],
    /// The function systems of each phase, and their graph.
    fn_systems: [crate::systems::graph::PhaseSchedule; 3],
    destroy_queue: Vec<Entity>,
    /// The component hooks (`on_add`, `on_insert`, `on_remove`).
    hooks: crate::hooks::Hooks,
    /// The component types clones and prefabs copy.
    cloners: hierarchy::Cloners,
    profiler: Profiler,
    /// The component types `world_hash_all` hashes, and those it deliberately leaves out.
    hashables: Hashables,
    /// The component and resource types a snapshot copies, and those it leaves out.
    snapshot_types: freyr_persist::snapshot::SnapshotRegistry,
    /// The component types saves and exports write, by persistent name.
    #[cfg(feature = "persist")]
    persist_types: persist::PersistTypes,
    /// The chunk memory of the world the last load or restore replaced, for the next one to
    /// copy into.
    spare_slabs: freyr_core::SpareSlabs,
    /// The per-tree lists the last `propagate` of each value type used, emptied, kept for the
    /// next pass (so a pass each frame allocates nothing once warm).
    propagate_lists: hashbrown::HashMap<core::any::TypeId, Box<dyn core::any::Any + Send>>,
    /// The tick profiler, when enabled (boxed: a disabled one costs one pointer).
    tick_profile: Option<Box<freyr_profile::tick::TickProfile>>,
    /// This registry's number (for golden rule 3 and `Reduction::join`), never reused.
    id: u64,
    /// The next launch number: commands apply in launch-number order.
    next_seq: u64,
    phase: Option<Phase>,
    in_update: bool,
    /// Systems of the running phase (taken out of `systems` while they run).
    running_systems: usize,
    /// The tick number, the fixed-step driver, deadline jobs and time telemetry. After `sync`,
    /// so the pool (which drains every queued job) drops before the jobs' memory.
    time: TimeState,
    /// Explicitly `!Sync`: the registry is driven from one thread at a time, and a callback that
    /// must be `Sync` can therefore never capture `&Registry`.
    _not_sync: PhantomData<Cell<()>>,
}

/// A unit of per-tick logic. Registered with [`Registry::add_system`] for one [`Phase`]; within a
/// phase, systems run in registration order on the thread that calls [`Registry::update`].
///
/// A system gets the registry mutably and may launch `each_async` work, run `each`, call
/// [`Registry::execute_tasks`] for an explicit sync point, and record structural changes. It may
/// not call [`Registry::update`] (that panics: updates do not nest).
///
/// Closures `FnMut(&mut Registry, f32) + Send + 'static` are systems too.
///
/// # Examples
///
/// ```
/// use freyr::{Phase, Registry, System};
///
/// struct Pos(f32);
/// struct Vel(f32);
///
/// struct Integrate;
/// impl System for Integrate {
///     fn update(&mut self, registry: &mut Registry, dt: f32) {
///         registry
///             .query::<(&mut Pos, &Vel)>()
///             .with_label("Integrate")
///             .each_async(move |_, (p, v)| p.0 += v.0 * dt);
///     }
/// }
///
/// let mut registry = Registry::with_workers(2);
/// let e = registry.spawn((Pos(0.0), Vel(2.0)));
/// registry.add_system(Phase::Update, Integrate);
/// registry.add_system(Phase::PostUpdate, move |r: &mut Registry, _dt: f32| {
///     let x = r.get::<Pos>(e).unwrap().0;
///     assert!(x > 0.0); // the Update phase's sync point already ran
/// });
/// registry.update(0.5);
/// registry.update(0.5);
/// assert_eq!(registry.get::<Pos>(e).unwrap().0, 2.0);
/// ```
pub trait System: Send + 'static {
    /// Runs the system once.
    fn update(&mut self, registry: &mut Registry, dt: f32);

    /// A name for diagnostics.
    fn name(&self) -> &str {
        core::any::type_name::<Self>()
    }

    /// Shutdown, from [`Registry::settle_systems`]: hand the work this system still has in
    /// flight (an async pump's launches) to its discard path, and refuse new work. Returns how
    /// many launches it discarded. The default has nothing in flight and returns 0; an
    /// [`AsyncSystem`](crate::AsyncSystem) settles its pump.
    fn settle(&mut self, registry: &mut Registry) -> usize {
        let _ = registry;
        0
    }
}

impl<F> System for F
where
    F: FnMut(&mut Registry, f32) + Send + 'static,
{
    fn update(&mut self, registry: &mut Registry, dt: f32) {
        self(registry, dt);
    }
}

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
    /// The last tick that ran, and its wall time.
    pub(crate) last: Option<TickTiming>,
    /// The load factor booked to the ticks `update` records (`None`: 1).
    pub(crate) load_factor: Option<f64>,
    /// The fixed step's clock at the end of the last frame (or at its installation).
    pub(crate) frame_read: Duration,
}

/// The last tick a registry ran ([`Registry::last_tick`]): its number and its wall time, from
/// the start of [`update`](Registry::update) (the deadline hook included) to the end of its
/// last sync point. Measured for every update, with the tick profiler on or off: it is what an
/// overrun governor steps from.
///
/// # Examples
///
/// ```
/// let mut registry = freyr::Registry::with_workers(1);
/// assert!(registry.last_tick().is_none());
/// registry.update(0.016);
/// let last = registry.last_tick().unwrap();
/// assert_eq!(last.tick, 0);
/// assert!(last.wall < std::time::Duration::from_secs(1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TickTiming {
    /// The tick's number ([`Registry::tick`] while it ran).
    pub tick: u64,
    /// Its wall time.
    pub wall: Duration,
}

/// The registry's deadline schedulers, one per result type, and their apply callbacks (kept
/// apart so an apply callback may request new jobs).
pub(crate) struct Deadlines {
    schedulers: Vec<Box<dyn ErasedScheduler>>,
    /// `appliers[i]` applies `schedulers[i]`'s deliveries; taken out while they run.
    appliers: Vec<Box<dyn ErasedApply>>,
    index: HashMap<TypeId, usize>,
    /// Whether [`Registry::settle_jobs`] ran: schedulers registered later are born settled.
    settled: bool,
    /// The highest tick passed to [`Registry::confirm_tick`]: no restore or load goes before it.
    confirmed: Option<u64>,
    /// How many times the registry was restored (see [`Registry::rewinds`]).
    rewinds: u64,
}
impl Default for Deadlines {
    fn default() -> Self {
        Deadlines {
            schedulers: Vec::new(),
            appliers: Vec::new(),
            index: HashMap::new(),
            settled: false,
            confirmed: None,
            rewinds: 0,
        }
    }
}

/// A scheduler of some result type, and the deliveries of its last collect.
trait ErasedScheduler: Send {
    fn collect(&mut self, pool: &ThreadPool, now: u64) -> Result<DeadlineStats, DeadlineError>;
    fn settle(&mut self, pool: &ThreadPool) -> Result<usize, DeadlineError>;
    /// The jobs in flight at the start of tick `now`, into `image` (reused when it holds this
    /// result type, replaced otherwise).
    fn capture_into(&self, now: u64, image: &mut freyr_persist::snapshot::JobsImage);
    /// Whether `restore` would accept `image` (of this result type).
    fn check_restore(
        &self,
        image: &freyr_persist::snapshot::JobsImage,
    ) -> Result<(), DeadlineError>;
    /// Puts the scheduler at the start of tick `tick` with the jobs of `image` (of this result
    /// type) in flight, or none; returns how many pending jobs were discarded.
    fn restore(
        &mut self,
        pool: &ThreadPool,
        tick: u64,
        image: Option<&freyr_persist::snapshot::JobsImage>,
    ) -> Result<usize, DeadlineError>;
    #[cfg(feature = "persist")]
    fn pending(&self) -> usize;
    #[cfg(feature = "persist")]
    fn result_type(&self) -> &'static str;
    fn result_type_id(&self) -> TypeId;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn as_any(&self) -> &dyn Any;
}
/// A panic payload caught from an apply callback.
type Payload = Box<dyn Any + Send>;
trait ErasedApply: Send {
    /// Hands the deliveries buffered in scheduler `index` to the callback, in request order.
    /// A panicking call does not stop the others; the first panic is returned.
    fn apply(&mut self, registry: &mut Registry, index: usize) -> Option<Payload>;
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    /// An empty registry with one worker per available CPU (`resolve_worker_count(0, detected)`).
    ///
    /// # Examples
    ///
    /// ```
    /// let registry = freyr::Registry::new();
    /// assert!(registry.workers() >= 1);
    /// assert!(registry.is_empty());
    /// ```
    pub fn new() -> Self {
        Registry::with_workers(0)
    }

    /// An empty registry whose pool has `workers` total parallelism, the calling thread included
    /// (0 = auto, 1 = everything inline; clamped to [`freyr_sched::MAX_WORKERS`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let registry = freyr::Registry::with_workers(3);
    /// assert_eq!(registry.workers(), 3);
    /// ```
    pub fn with_workers(workers: usize) -> Self {
        Registry::from_world(World::new(), workers)
    }

    /// A registry around an existing `world`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((5u32,));
    /// let registry = freyr::Registry::from_world(world, 1);
    /// assert_eq!(registry.get::<u32>(e), Ok(&5));
    /// ```
    pub fn from_world(world: World, workers: usize) -> Self {
        let detected = std::thread::available_parallelism().map_or(1, |n| n.get());
        let pool = ThreadPool::new(resolve_worker_count(workers, detected));
        Registry::from_parts(world, pool)
    }

    /// A registry around an existing `world` and `pool` (e.g. one built with
    /// [`ThreadPool::builder`] for pinning or thread names).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = freyr::ThreadPool::builder().workers(2).build();
    /// let registry = freyr::Registry::from_parts(freyr::World::new(), pool);
    /// assert_eq!(registry.workers(), 2);
    /// ```
    pub fn from_parts(world: World, pool: ThreadPool) -> Self {
        Registry::from_world_on_pool(world, Arc::new(pool))
    }

    /// An empty registry on a pool shared with other registries: a server hosting many matches
    /// runs one registry per match on one pool, instead of one pool (and one thread per core)
    /// per match.
    ///
    /// Sharing changes no result: each launch waits for its own task groups only, so the world
    /// hash, the order commands apply in and the panic rules are those of a registry with a pool
    /// of its own of the same size; a callback's panic reaches only its own registry. The
    /// registries may tick at the same time from different threads: a thread that waits helps
    /// run whatever is queued, its own registry's tasks or another's.
    ///
    /// What is shared is the pool's counters: [`profile`](Registry::profile)'s per-worker
    /// metrics (tasks run, steals, parks, busy time) and the tick profiler's task, steal and park
    /// counts count every registry's work on the pool since this one was created, while its
    /// labels, phases, sync points and implicit syncs stay this registry's own. Dropping the
    /// registry waits for its own work only; the pool's threads stop when the last owner of the
    /// `Arc` drops it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use freyr::{Registry, ThreadPool};
    ///
    /// struct Hp(u32);
    ///
    /// let pool = Arc::new(ThreadPool::new(4));
    /// let mut matches: Vec<Registry> = (0..3).map(|_| Registry::with_pool(pool.clone())).collect();
    /// for (i, r) in matches.iter_mut().enumerate() {
    ///     r.spawn_batch((0..1000).map(|_| (Hp(i as u32),)));
    /// }
    /// std::thread::scope(|s| {
    ///     for r in &mut matches {
    ///         s.spawn(move || {
    ///             r.query::<&mut Hp>().each_async(|_, hp| hp.0 += 10);
    ///             r.execute_tasks();
    ///         });
    ///     }
    /// });
    /// let mut total = 0;
    /// matches[2].query::<&Hp>().each(|_, hp| total += hp.0);
    /// assert_eq!(total, 12_000);
    /// assert!(Arc::ptr_eq(matches[0].shared_pool(), &pool));
    /// assert_eq!(matches[1].workers(), 4);
    /// ```
    pub fn with_pool(pool: Arc<ThreadPool>) -> Self {
        Registry::from_world_on_pool(World::new(), pool)
    }

    /// A registry around an existing `world`, on a shared pool (see
    /// [`with_pool`](Registry::with_pool)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// let pool = Arc::new(freyr::ThreadPool::new(2));
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// let registry = freyr::Registry::from_world_on_pool(world, pool);
    /// assert_eq!(registry.get::<u8>(e), Ok(&1));
    /// ```
    pub fn from_world_on_pool(world: World, pool: Arc<ThreadPool>) -> Self {
        let profiler = Profiler::new(pool.metrics());
        Registry {
            // SAFETY: the registry is the owner `SyncedWorld::new` asks for: every `read*` call
            // here uses the world only for the access it names, and every launch declares its
            // kernel's access (the soundness argument in freyr-query's `world.rs`).
            sync: unsafe { SyncedWorld::new(world, pool) },
            pending: Vec::new(),
            queries: QueryCache::default(),
            systems: Default::default(),
            fn_systems: Default::default(),
            destroy_queue: Vec::new(),
            hooks: crate::hooks::Hooks::default(),
            cloners: Default::default(),
            profiler,
            hashables: Hashables::default(),
            snapshot_types: Default::default(),
            #[cfg(feature = "persist")]
            persist_types: Default::default(),
            spare_slabs: Default::default(),
            propagate_lists: hashbrown::HashMap::new(),
            tick_profile: None,
            id: NEXT_REGISTRY_ID.fetch_add(1, Ordering::Relaxed),
            next_seq: 0,
            phase: None,
            in_update: false,
            running_systems: 0,
            time: TimeState::default(),
            _not_sync: PhantomData,
        }
    }

    /// Total parallelism of the pool, the calling thread included.
    pub fn workers(&self) -> usize {
        self.sync.pool().workers()
    }

    /// The pool, for work that is not a query (`parallel_for`, `scope`); both block until done.
    pub fn pool(&self) -> &ThreadPool {
        self.sync.pool()
    }

    /// The pool's shared handle: pass a clone to [`with_pool`](Registry::with_pool) to put
    /// another registry on the same threads. A registry built with its own pool hands out that
    /// pool the same way.
    ///
    /// # Examples
    ///
    /// ```
    /// let first = freyr::Registry::with_workers(2);
    /// let second = freyr::Registry::with_pool(first.shared_pool().clone());
    /// assert!(std::sync::Arc::ptr_eq(first.shared_pool(), second.shared_pool()));
    /// ```
    pub fn shared_pool(&self) -> &Arc<ThreadPool> {
        self.sync.shared_pool()
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Golden rule 3: a callback of this registry must not drive it.
    #[inline]
    pub(crate) fn guard(&self, what: &str) {
        if inside_callback_of(self.id) {
            guard_failed(what);
        }
    }

    /// Number of launches not yet retired by a sync point.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct A(u8);
    ///
    /// let mut registry = Registry::with_workers(2);
    /// registry.spawn((A(0),));
    /// registry.query::<&mut A>().each_async(|_, a| a.0 += 1);
    /// assert_eq!(registry.in_flight(), 1);
    /// registry.execute_tasks();
    /// assert_eq!(registry.in_flight(), 0);
    /// ```
    pub fn in_flight(&self) -> usize {
        self.sync.in_flight()
    }
}

#[cold]
#[inline(never)]
fn guard_failed(what: &str) -> ! {
    panic!(
        "freyr: {what} called from inside a query callback of the same registry \
         (golden rule 3: callbacks must not drive the registry; record commands instead)"
    )
}

impl Drop for Registry {
    fn drop(&mut self) {
        if inside_callback_of(self.id) {
            // The last owner dropped the registry from inside one of its own tasks: waiting would
            // wait for ourselves, and freeing would free memory under the running tasks.
            eprintln!(
                "freyr: a Registry was dropped from inside one of its own callbacks; aborting"
            );
            std::process::abort();
        }
        // Wait for every task before any field (the world, the job memory) is freed. Panics are
        // dropped: re-raising in Drop could abort during unwinding.
        for retired in self.sync.retire_all() {
            if let Some(payload) = retired.panic {
                freyr_sched::drop_payload(payload);
            }
        }
    }
}
