//! Freyr: an archetype-chunk ECS with a work-stealing scheduler and a deterministic tick.
//!
//! This facade re-exports the three crates' public API and a [`prelude`]:
//!
//! | crate | what it holds |
//! |---|---|
//! | [`freyr_core`] | storage: [`Entity`], [`World`], archetypes of 512-entity chunks, [`CommandBuffer`] |
//! | [`freyr_sched`] | scheduling: [`ThreadPool`], [`TaskGroup`], `scope`, `parallel_for`; time: [`FixedStep`], [`DeadlineScheduler`], [`AsyncPump`], [`BudgetQueue`], [`TickGovernor`] |
//! | [`freyr_query`] | the two joined: [`Registry`], queries, `each` / `each_async`, phases, systems |
//! | `freyr_derive` | `#[derive(StableHash)]`, re-exported as [`StableHash`](macro@StableHash) (feature `derive`, on by default) |
//!
//! The guide (`docs/` in the repository, an mdBook) starts from a new crate that depends on
//! `freyr`; every example in it is compiled and run as a doctest of this crate.
//!
//! The README below is compiled and run as a doctest, so its example cannot go stale.
#![doc = include_str!("../README.md")]

pub use freyr_core;
pub use freyr_query;
pub use freyr_sched;

// Storage.
pub use freyr_core::{
    ApplyReport, Archetype, ArchetypeId, Bundle, CHUNK_CAPACITY, ChunkRef, CommandBuffer,
    Component, ComponentError, ComponentId, ComponentInfo, Entity, NoSuchEntity, World, WorldId,
};

// Scheduling.
pub use freyr_sched::{
    GroupPanic, IndexedJob, MAX_WORKERS, PoolMetrics, Scope, TaskGroup, ThreadPool,
    ThreadPoolBuilder, WorkerMetrics, current_worker_index, drop_payload, resolve_worker_count,
};

// Time and deferred work.
pub use freyr_sched::{
    AsyncPump, BudgetQueue, Clock, Completer, DEFAULT_MAX_CATCHUP_TICKS, DeadlineError,
    DeadlineScheduler, DeadlineStats, Delivered, Discard, FixedStep, FixedStepError, FrameReport,
    Gate, GateId, Gates, GovernorError, GovernorParams, Grid, GridError, GridPath, GridPathSearch,
    Incremental, JobPanic, JobStatus, JobTicket, Launch, Levers, MAX_FIXED_DT, ManualClock,
    MonotonicClock, Progress, PumpError, PumpStats, TickGovernor, TickWork, WorkBudget, ZeroBudget,
    advance_by, ai_sample_due, clamp_catchup_ticks, due_tick, octile_distance,
};

// Queries, the registry, systems and profiling.
pub use freyr_query::{
    BoxedClock, ColumnPtr, Commands, ComponentView, Context, HashComponents, LabelStats, Phase,
    PhaseStats, ProfileReport, Query, QueryData, QueryError, QueryFilter, QueryItem, QueryState,
    ROW_PATH_ENV, Read, Reduction, Registry, Res, Resources, RowPath, SharedPtr, StableHash,
    StableHasher, System, TimeStats, UnhashedComponents, ViewSet, With, Without,
};

pub use freyr_query::{
    ArchetypeDigest, ChunkAddress, DigestHasher, Divergence, DivergenceKind, PlainBytes,
    RowDigests, WorldDigest, diff,
};

// The tick profiler.
pub use freyr_query::{
    LabelTick, TickExtras, TickProfile, TickProfileConfig, TickRecord, TickReport, TraceEvent,
    TraceKind, WindowStats,
};

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

/// The names almost every Freyr program uses: `use freyr::prelude::*;`.
pub mod prelude {
    pub use freyr_core::{Bundle, CommandBuffer, Component, Entity, World};
    pub use freyr_query::{
        Commands, ComponentView, Context, Phase, Read, Registry, Res, System, With, Without,
    };
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
    #[doc = include_str!("../docs/src/storage.md")]
    mod storage {}
    #[doc = include_str!("../docs/src/queries.md")]
    mod queries {}
    #[doc = include_str!("../docs/src/parallel.md")]
    mod parallel {}
    #[doc = include_str!("../docs/src/scheduler.md")]
    mod scheduler {}
    #[doc = include_str!("../docs/src/time.md")]
    mod time {}
    #[doc = include_str!("../docs/src/golden-rules.md")]
    mod golden_rules {}
    #[doc = include_str!("../docs/src/server-tick.md")]
    mod server_tick {}
    #[doc = include_str!("../docs/src/benchmarks.md")]
    mod benchmarks {}
    #[doc = include_str!("../docs/src/migrating.md")]
    mod migrating {}
}
