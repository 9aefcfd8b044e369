//! Freyr: an archetype-chunk ECS with a work-stealing scheduler and a deterministic tick.
//!
//! This facade re-exports the three crates' public API and a [`prelude`]:
//!
//! | crate | what it holds |
//! |---|---|
//! | [`freyr_core`] | storage: [`Entity`], [`World`], archetypes of 512-entity chunks, [`CommandBuffer`] |
//! | [`freyr_sched`] | scheduling: [`ThreadPool`], [`TaskGroup`], `scope`, `parallel_for`; time: [`FixedStep`], [`DeadlineScheduler`], [`AsyncPump`], [`BudgetQueue`], [`TickGovernor`] |
//! | [`freyr_query`] | the two joined: [`Registry`], queries, `each` / `each_async`, phases, systems |
//!
//! The README below is compiled and run as a doctest, so its example cannot go stale.
#![doc = include_str!("../README.md")]

pub use freyr_core;
pub use freyr_query;
pub use freyr_sched;

// Storage.
pub use freyr_core::{
    ApplyReport, Archetype, ArchetypeId, Bundle, CHUNK_CAPACITY, ChunkRef, CommandBuffer,
    Component, ComponentError, ComponentId, ComponentInfo, Entity, NoSuchEntity, World,
};

// Scheduling.
pub use freyr_sched::{
    GroupPanic, IndexedJob, MAX_WORKERS, PoolMetrics, Scope, TaskGroup, ThreadPool,
    ThreadPoolBuilder, WorkerMetrics, resolve_worker_count,
};

// Time and deferred work.
pub use freyr_sched::{
    AsyncPump, BudgetQueue, Clock, Completer, DEFAULT_MAX_CATCHUP_TICKS, DeadlineError,
    DeadlineScheduler, DeadlineStats, Delivered, Discard, FixedStep, FixedStepError, FrameReport,
    Gate, GateId, Gates, GovernorError, GovernorParams, Grid, GridPath, GridPathSearch,
    Incremental, JobPanic, JobStatus, JobTicket, Launch, Levers, ManualClock, MonotonicClock,
    Progress, PumpError, PumpStats, TickGovernor, TickWork, WorkBudget, ZeroBudget, advance_by,
    ai_sample_due, clamp_catchup_ticks, due_tick, octile_distance,
};

// Queries, the registry, systems and profiling.
pub use freyr_query::{
    Commands, ComponentView, Context, HashComponents, LabelStats, Phase, PhaseStats, ProfileReport,
    Query, QueryData, QueryError, QueryFilter, QueryState, ROW_PATH_ENV, Read, Reduction, Registry,
    Res, Resources, RowPath, StableHash, StableHasher, System, ViewSet, With, Without,
};

/// The names almost every Freyr program uses: `use freyr::prelude::*;`.
pub mod prelude {
    pub use freyr_core::{Bundle, CommandBuffer, Component, Entity, World};
    pub use freyr_query::{
        Commands, ComponentView, Context, Phase, Read, Registry, Res, System, With, Without,
    };
    pub use freyr_sched::ThreadPool;
}
