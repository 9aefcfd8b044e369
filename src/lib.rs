//! Freyr: an archetype-chunk ECS with a work-stealing scheduler and a deterministic tick.
//!
//! # A map of the library
//!
//! The root holds the names almost every program uses; [`prelude`] brings them in with one
//! `use freyr::prelude::*;`. Everything else lives in a module named for what it is about:
//!
//! | path | what it holds |
//! |---|---|
//! | `freyr::` | [`Registry`], [`System`], [`AsyncSystem`], [`Phase`]; [`Events`], [`EventCursor`]; [`Entity`], [`World`], [`Component`], [`Bundle`], [`CommandBuffer`]; [`Commands`], [`EachContext`], [`View`], [`Res`], [`With`], [`Without`], [`Reduction`]; [`ThreadPool`]; [`StableHash`], [`mix`] (per-entity randomness); the errors [`QueryError`], [`NoSuchEntity`], [`ComponentError`] |
//! | [`storage`] | the world's layout: archetypes, 512-entity chunks, component ids, the command buffer's report |
//! | [`query`] | queries and their parts: [`Query`](query::Query), [`QueryData`](query::QueryData), filters, views, [`QueryState`](query::QueryState), access sets |
//! | [`system`] | function systems: [`Query`](system::Query) (and [`QueryEntityError`](system::QueryEntityError)), [`Res`](system::Res), [`ResMut`](system::ResMut), [`EventWriter`](system::EventWriter), [`EventReader`](system::EventReader), [`Local`](system::Local), [`Tick`](system::Tick); [`SystemConfig`](system::SystemConfig) (`before` / `after` / sets), [`ScheduleError`](system::ScheduleError) |
//! | [`sched`] | the work-stealing pool: [`TaskGroup`](sched::TaskGroup), [`Scope`](sched::Scope), indexed jobs, metrics, worker counts, panic payloads |
//! | [`time`] | the tools around a deterministic tick: [`FixedStep`](time::FixedStep), clocks, gates, the overrun governor; [`time::deadline`], [`time::pump`], [`time::budget`], [`time::path`] |
//! | [`profile`] | what a tick cost: the phase profiler and the tick profiler (records, reports, traces) |
//! | [`snapshot`] | rollback: registry snapshots and restore, the per-tick snapshot ring |
//! | `persist` | (feature `persist`) saves, loads and entity export/import between registries: their errors, the entity map, the column encodings |
//! | [`hierarchy`] | entities with structure: the parent relation ([`ChildOf`](hierarchy::ChildOf), [`Children`](hierarchy::Children)), [`Disabled`](hierarchy::Disabled) entities, the errors of hierarchy edits and clones |
//! | [`hooks`] | component hooks: when `on_add` / `on_insert` / `on_remove` run, the bound on their rounds |
//! | [`hash`] | deterministic world hashes: [`StableHash`], [`StableHasher`](hash::StableHasher), component sets |
//!
//! The crates underneath (`freyr-core` storage, `freyr-sync` the synchronisation primitives,
//! `freyr-sched` the pool, `freyr-time` the time tools, `freyr-profile` the profilers,
//! `freyr-query` queries and launches, `freyr-persist` saves, snapshots and the digest,
//! `freyr-registry` the registry and its systems, `freyr-derive` the derive) are an
//! implementation detail: use these paths.
//!
//! # Names
//!
//! Freyr keeps its own vocabulary where it is the design's: `each`, `each_async`,
//! `execute_tasks`, [`Registry`], the [`Phase`]s and `spawn_batch` (search the docs for the
//! bevy or hecs name, `for_each`, `par_iter`, `apply_deferred`, ...: those are aliases). Two
//! names were changed so that a glob import never collides with std: the read-only view of
//! other entities' components is [`View<T>`] (formerly `Read`, which would shadow or clash with
//! `std::io::Read` in any module that also reads files or sockets), and the callback context of
//! `each_with` / `each_async_with` is [`EachContext`] (not `Context`, which every `Future` impl
//! imports from `std::task`).
//!
//! # Features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `derive` | on | `#[derive(StableHash)]` ([`StableHash`](macro@StableHash)) |
//! | `json` | off | the tick profiler's JSON report and Chrome trace (`write_json`, `write_chrome_trace`; serde derives on the report types). Off by default so serde_json's impls (`impl PartialEq<Value> for u64`, ...) never reach a dependent's code |
//! | `serde` | off | serde derives on the world digest ([`WorldDigest`](hash::WorldDigest), [`RowDigests`](hash::RowDigests)), to send it to another server |
//! | `persist` | off | saves, loads and entity export/import (`Registry::save`, `Registry::load_into`, `Registry::export`, `Registry::import`; the `persist` module), values encoded with serde and postcard |
//! | `tracing` | off | [`tracing`](https://docs.rs/tracing) spans of ticks, phases, systems, query calls, launches and their task batches, and sync points, named as the profilers name the same work, for `tracing-subscriber`, `tracing-tracy` or `tracing-chrome` (see the guide's "A game-server tick") |
//!
//! The guide (`docs/` in the repository, an mdBook) starts from a new crate that depends on
//! `freyr`; every example in it is compiled and run as a doctest of this crate.
//!
//! The README below is compiled and run as a doctest, so its example cannot go stale.
#![doc = include_str!("../README.md")]

// The everyday names.
pub use freyr_core::{
    Bundle, CommandBuffer, Component, ComponentError, Entity, NoSuchEntity, World,
};
pub use freyr_persist::{StableHash, mix};
pub use freyr_profile::Phase;
pub use freyr_query::{Commands, EachContext, QueryError, Res, View, With, Without};
/// Events sent from callbacks and systems, read with a cursor (see [`Registry::read_events`]).
pub use freyr_query::{EventCursor, Events};
pub use freyr_registry::{AsyncSystem, Reduction, Registry, System};
pub use freyr_sched::ThreadPool;

/// Storage: the world's layout (archetypes of 512-entity chunks, component ids and infos, world
/// ids), the deferred structural changes of a [`CommandBuffer`], and the chunk memory a replaced
/// world gives back for the next restore to reuse ([`SpareSlabs`](storage::SpareSlabs), see
/// [`WorldSnapshot::restore_over`](snapshot::WorldSnapshot::restore_over)).
///
/// A world taken apart into raw parts (allocator slots, chunk ids, type-erased columns) is not
/// part of this API: saves, loads and imports go through `Registry::save`,
/// `Registry::load_into` and `Registry::import` (feature `persist`), whose file format is the
/// contract.
pub mod storage {
    pub use freyr_core::{
        AppliedCommand, ApplyReport, Archetype, ArchetypeId, Bundle, BundleTypes, CHUNK_CAPACITY,
        ChunkRef, CommandBuffer, Component, ComponentError, ComponentId, ComponentInfo, Entity,
        EntityOp, NoSuchEntity, SpareSlabs, World, WorldId,
    };
}

/// Queries: [`Query`](query::Query) (what `Registry::query` returns), the
/// [`QueryData`](query::QueryData) and [`QueryFilter`](query::QueryFilter) traits with their items, views
/// of other entities ([`ComponentView`](query::ComponentView)) and resources, cached
/// [`QueryState`](query::QueryState)s, the row path, and the access sets that decide what may
/// run in parallel.
pub mod query {
    pub use freyr_query::access;
    pub use freyr_query::{
        Commands, ComponentView, EachContext, QueryData, QueryError, QueryFilter, QueryItem,
        QueryState, ROW_PATH_ENV, Res, RowPath, View, ViewSet, With, Without,
    };
    pub use freyr_registry::{Query, Reduction};
}

/// Function systems: functions and closures whose parameters declare what they read and write
/// ([`Query`](system::Query), [`Res`](system::Res), [`ResMut`](system::ResMut),
/// [`Commands`], [`EventWriter`](system::EventWriter),
/// [`EventReader`](system::EventReader), [`Local`](system::Local), [`Tick`](system::Tick)),
/// added with [`Registry::add_fn_system`] and run in parallel when their access is disjoint.
pub mod system {
    pub use freyr_registry::systems::{
        EventReader, EventWriter, GraphFormat, IntoFnSystem, Local, ParamItem, Query,
        QueryEntityError, QueryParamData, Res, ResMut, ScheduleError, SystemAccess, SystemConfig,
        SystemParam, Tick,
    };
}

/// The work-stealing thread pool: [`ThreadPool`] and its builder, task groups, scopes, the
/// allocation-free [`IndexedJob`](sched::IndexedJob) path, pool metrics, worker counts and
/// the panic-payload helpers.
pub mod sched {
    pub use freyr_sched::{
        GroupPanic, IndexedJob, MAX_WORKERS, PoolId, PoolMetrics, Scope, TaskGroup, ThreadPool,
        ThreadPoolBuilder, WorkerMetrics, current_worker_index, drop_payload, keep_first,
        panic_message, resolve_worker_count,
    };
}

/// The tools around a deterministic tick: the fixed step ([`FixedStep`](time::FixedStep),
/// catch-up clamp), clocks, gates, the overrun governor's load factor, and in submodules the
/// deadline jobs, the async pump, work budgets and the budgeted A*.
pub mod time {
    pub use freyr_profile::TimeStats;
    pub use freyr_registry::{BoxedClock, TickTiming};
    pub use freyr_time::{
        Clock, DEFAULT_MAX_CATCHUP_TICKS, FixedStep, FixedStepError, FrameReport, Gate, GateId,
        Gates, GovernorError, GovernorParams, JobPanic, MAX_FIXED_DT, ManualClock, MonotonicClock,
        TickGovernor, clamp_catchup_ticks,
    };

    /// Deadline jobs: requested at tick T on the pool, applied at exactly T + K.
    pub mod deadline {
        pub use freyr_time::{
            DeadlineError, DeadlineScheduler, DeadlineStats, Delivered, JobStatus, JobTicket,
            JobsInFlight, due_tick,
        };
    }

    /// The async pump: latency-tolerant work launched on the tick, run on the pool or any
    /// thread, drained by its owner in launch order; and the parts of an
    /// [`AsyncSystem`](crate::AsyncSystem), the system that owns one.
    pub mod pump {
        pub use freyr_registry::{AsyncProgress, Launched, Process};
        pub use freyr_time::{AsyncPump, Completer, Discard, Launch, PumpError, PumpStats};
    }

    /// Work budgets: [`Incremental`](budget::Incremental) jobs advanced by a fixed number of
    /// work units per tick, alone or in a [`BudgetQueue`](budget::BudgetQueue).
    pub mod budget {
        pub use freyr_time::{
            BudgetQueue, Incremental, Progress, TickWork, WorkBudget, ZeroBudget, advance_by,
        };
    }

    /// A resumable, budgeted A* on an 8-connected grid: an
    /// [`Incremental`](budget::Incremental) job whose work unit is one node expansion.
    pub mod path {
        pub use freyr_time::{Grid, GridError, GridPath, GridPathSearch, octile_distance};
    }
}

/// Profiling: the phase profiler's [`ProfileReport`](profile::ProfileReport) and the tick
/// profiler ([`TickProfile`](profile::TickProfile): per-tick records, window statistics,
/// reports, traces).
pub mod profile {
    pub use freyr_profile::{
        CALLER_ROW, LabelMs, LabelStats, LabelSummary, LabelTick, LoadFactorSummary, PhaseMs,
        PhaseStats, PhaseSummary, ProfileReport, Summary, TICK_ROW, TickExtras, TickJson,
        TickProfile, TickProfileConfig, TickRecord, TickReport, TraceEvent, TraceKind, WindowStats,
    };
}

/// Deterministic hashing: [`StableHash`] (the trait, and its derive), the
/// [`StableHasher`](hash::StableHasher), the component sets a world hash covers, and the desync
/// locator: the per-chunk [`WorldDigest`](hash::WorldDigest) and [`diff`](hash::diff).
pub mod hash {
    #[cfg(feature = "derive")]
    pub use freyr_derive::StableHash;
    pub use freyr_persist::{
        ArchetypeDigest, ChunkAddress, DigestHasher, Divergence, DivergenceKind, HashComponents,
        PlainBytes, RowDigests, StableHash, StableHasher, UnhashedComponents, WorldDigest, diff,
    };
}

/// Entities with structure: the parent relation, disabled entities, clones and prefabs (the
/// methods are on [`Registry`]; see the guide's hierarchy chapter).
pub mod hierarchy {
    pub use freyr_registry::hierarchy::{
        ChildOf, Children, CloneError, CloneMap, CloneRemapFn, Disabled, HierarchyCommands,
        HierarchyError, is_kept,
    };
}

/// Component hooks (`on_add`, `on_insert`, `on_remove`, registered on the [`Registry`]): when
/// they run, and [`MAX_HOOK_ROUNDS`](hooks::MAX_HOOK_ROUNDS), the bound on rounds of commands
/// that hooks record and that trigger hooks again.
pub mod hooks {
    pub use freyr_registry::hooks::MAX_HOOK_ROUNDS;
}

/// Snapshots and rollback: [`Registry::snapshot`] / [`Registry::restore`], the per-tick
/// [`SnapshotRing`](snapshot::SnapshotRing), and the storage-level [`World::snapshot`].
pub mod snapshot {
    pub use freyr_core::snapshot::{
        MissingSnapshotTypes, ParallelFor, Sequential, SnapshotTypes, WorldSnapshot,
    };
    pub use freyr_persist::{JobsRefusal, Snapshot, SnapshotError};
    pub use freyr_registry::SnapshotRing;
}

/// Saves, loads and entity export/import between registries (feature `persist`): the errors
/// of [`Registry::save`] and [`Registry::load_into`], and the [`EntityMap`](persist::EntityMap)
/// of [`Registry::import`]. See the guide's "Saves and handoff".
#[cfg(feature = "persist")]
pub mod persist {
    pub use freyr_persist::persist::{
        ColumnEncoding, EntityMap, LoadError, RemapFn, SaveError, bytemuck,
    };
}

/// `#[derive(StableHash)]`: hashes the fields in declaration order, after the variant index for
/// an enum, so a component joins [`Registry::world_hash`] without a hand-written impl.
///
/// The derive macro and the trait share the name `StableHash` (as serde's `Serialize` does), so
/// `use freyr::StableHash;` brings both. See [`freyr_derive`](macro@freyr_derive::StableHash)
/// for the attributes and exactly what each shape hashes.
///
/// # Examples
///
/// ```
/// use freyr::{Registry, StableHash};
///
/// #[derive(StableHash)]
/// struct Position([f32; 2]);
/// #[derive(StableHash)]
/// enum Team {
///     Red,
///     Blue,
/// }
///
/// let hash = |team: Team| {
///     let mut registry = Registry::with_workers(1);
///     registry.spawn((Position([1.0, 2.0]), team));
///     registry.world_hash::<(Position, Team)>()
/// };
/// assert_eq!(hash(Team::Red), hash(Team::Red));
/// assert_ne!(hash(Team::Red), hash(Team::Blue));
/// ```
#[cfg(feature = "derive")]
pub use freyr_derive::StableHash;

/// The names almost every Freyr program uses: `use freyr::prelude::*;`. None of them collides
/// with std's prelude or a name std programs commonly glob-import (see the crate docs' *Names*).
///
/// # Examples
///
/// ```
/// use freyr::prelude::*;
///
/// struct Pos(f32);
/// let mut registry = Registry::with_workers(1);
/// let e: Entity = registry.spawn((Pos(1.0),));
/// registry.query::<&mut Pos>().each(|_, p| p.0 += 1.0);
/// assert_eq!(registry.get::<Pos>(e).unwrap().0, 2.0);
/// ```
pub mod prelude {
    pub use freyr_core::{Bundle, CommandBuffer, Component, Entity, World};
    pub use freyr_profile::Phase;
    pub use freyr_query::{Commands, ComponentView, EachContext, Res, View, With, Without};
    pub use freyr_registry::{Registry, System};
    pub use freyr_sched::ThreadPool;
}

/// The guide's chapters (`docs/src/`), compiled and run as doctests of this crate, so every code
/// block in the book builds and runs with the `freyr::` paths a dependent uses:
/// `cargo test -p freyr --doc`.
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../docs/src/introduction.md")]
    mod introduction {}
    #[doc = include_str!("../docs/src/getting-started.md")]
    mod getting_started {}
    #[doc = include_str!("../docs/src/server-loop.md")]
    mod server_loop {}
    #[doc = include_str!("../docs/src/storage.md")]
    mod storage {}
    #[doc = include_str!("../docs/src/queries.md")]
    mod queries {}
    #[doc = include_str!("../docs/src/parallel.md")]
    mod parallel {}
    #[doc = include_str!("../docs/src/systems.md")]
    mod systems {}
    #[doc = include_str!("../docs/src/scheduler.md")]
    mod scheduler {}
    #[doc = include_str!("../docs/src/time.md")]
    mod time {}
    #[doc = include_str!("../docs/src/snapshots.md")]
    mod snapshots {}
    #[cfg(feature = "persist")]
    #[doc = include_str!("../docs/src/saves.md")]
    mod saves {}
    #[doc = include_str!("../docs/src/change.md")]
    mod change {}
    #[doc = include_str!("../docs/src/events-hooks.md")]
    mod events_hooks {}
    #[doc = include_str!("../docs/src/hierarchy.md")]
    mod hierarchy {}
    #[doc = include_str!("../docs/src/golden-rules.md")]
    mod golden_rules {}
    #[doc = include_str!("../docs/src/server-tick.md")]
    mod server_tick {}
    #[doc = include_str!("../docs/src/beyond-one-machine.md")]
    mod beyond_one_machine {}
    #[doc = include_str!("../docs/src/benchmarks.md")]
    mod benchmarks {}
    #[doc = include_str!("../docs/src/migrating.md")]
    mod migrating {}
}
