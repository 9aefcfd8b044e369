//! [`Registry`]: the world, the pool, resources, systems, in-flight work and sync points.
//!
//! One file per role:
//!
//! - [`world`]: the wait-before-access API ([`SyncedWorld`]) and the soundness argument;
//! - `entities`: the world, spawning, despawning, component access;
//! - `resources`: typed singletons;
//! - `queries`: the query-state cache and the frames queries run in;
//! - `sync_point`: sync points, the order commands apply in, the panic contract;
//! - `systems`: systems and phases;
//! - `profile`: the profiler and the world hash;
//! - `hashing`: the registered hashable types and the hash over all of them;
//! - `digest`: the per-chunk world digest and the desync locator;
//! - `time`: the tick number, the fixed-step driver and gates, time telemetry;
//! - `deadlines`: deadline jobs applied at T + K by the tick-start hook;
//! - `pump`: async-pump results drained in their owning system's update;
//! - `tick`: the tick profiler's calls (begin and end a tick, phases, trace spans).
//!
//! Everything here sits below [`Query`](crate::Query) and [`Reduction`](crate::Reduction),
//! which call in; nothing here names them.

mod deadlines;
mod digest;
mod entities;
mod hashing;
mod profile;
mod pump;
pub(crate) mod queries;
mod resources;
mod sync_point;
mod systems;
mod tick;
mod time;
pub(crate) mod world;

use core::cell::Cell;
use core::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

use freyr_core::{CommandBuffer, Entity, World};
use freyr_sched::{ThreadPool, resolve_worker_count};

use crate::hashable::Hashables;
use crate::launch::callback::inside_callback_of;
use crate::phase::Phase;
use crate::profiler::Profiler;

use self::queries::QueryCache;
use self::time::TimeState;
use self::world::SyncedWorld;

pub use self::systems::System;
pub use self::time::{BoxedClock, TimeStats};
pub(crate) use self::world::LayoutStamp;

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
pub struct Registry {
    // In-flight work is retired in `Drop::drop`, before any field drops.
    /// The world, the resources, the pool and the in-flight launches, reachable only through
    /// the wait-before-access API (`world.rs`).
    sync: SyncedWorld,
    /// Command buffers awaiting the next sync point, tagged with their launch number.
    pending: Vec<(u64, Vec<CommandBuffer>)>,
    queries: QueryCache,
    systems: [Vec<Box<dyn System>>; 3],
    destroy_queue: Vec<Entity>,
    profiler: Profiler,
    /// The component types `world_hash_all` hashes, and those it deliberately leaves out.
    hashables: Hashables,
    /// The tick profiler, when enabled (boxed: a disabled one costs one pointer).
    tick_profile: Option<Box<crate::tick::TickProfile>>,
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
        let profiler = Profiler::new(pool.metrics());
        Registry {
            sync: SyncedWorld::new(world, pool),
            pending: Vec::new(),
            queries: QueryCache::default(),
            systems: Default::default(),
            destroy_queue: Vec::new(),
            profiler,
            hashables: Hashables::default(),
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
