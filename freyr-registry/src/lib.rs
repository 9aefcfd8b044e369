//! Freyr's [`Registry`]: the world, the pool, resources, systems and phases, sync points, the
//! time wiring (deadlines, the async pump, async systems, the fixed step), the query builder
//! ([`Query`]), hooks, and the registry's side of every service: events, snapshots and the
//! [`SnapshotRing`], saves, the digest, profiling. The machinery of those services lives in the
//! crates below (`freyr-query` queries and launches, `freyr-persist` saves, snapshots and the
//! digest, `freyr-profile` the profilers); this crate holds the `impl Registry` methods that
//! wire them in. A program uses it through the `freyr` facade.
//!
//! # Layout
//!
//! Each file imports only from files above it in this list, so the imports have no cycle:
//!
//! 1. `hooks/` (the component hooks a sync point runs) and `shares` (work split into one share
//!    per thread, claimed from both ends);
//! 2. `registry/mod.rs`: [`Registry`] and the types it is made of that name it back ([`System`],
//!    the time state and the deadline appliers);
//! 3. the files that add [`Registry`] methods (`registry/*`, one per service), `ring` (the
//!    snapshot ring) and `query/reduction`;
//! 4. `query/mod.rs` and `query/build`: [`Query`], built on the registry.

pub mod hooks;
mod query;
mod registry;
mod ring;
mod shares;
pub mod systems;

pub use crate::query::{Query, Reduction};
pub use crate::registry::{AsyncProgress, AsyncSystem, Launched, Process, TickTiming};
pub use crate::registry::{BoxedClock, Registry, System};
pub use crate::ring::SnapshotRing;

/// Entities with structure: the parent relation ([`ChildOf`](hierarchy::ChildOf),
/// [`Children`](hierarchy::Children)) that [`Registry::set_parent`] and friends keep
/// consistent, the [`Disabled`](hierarchy::Disabled) marker queries skip, and the errors of
/// hierarchy edits and clones. The methods are on [`Registry`].
pub mod hierarchy {
    pub use crate::registry::{
        ChildOf, Children, CloneError, CloneMap, CloneRemapFn, HierarchyCommands, HierarchyError,
    };
    pub use freyr_core::{Disabled, is_kept};
}

// The API of the crates below, named here too so this crate's tests and docs read as a
// program's code does.
pub use freyr_core::snapshot::{MissingSnapshotTypes, WorldSnapshot};
#[cfg(feature = "persist")]
pub use freyr_persist::persist;
pub use freyr_persist::{
    ArchetypeDigest, ChunkAddress, DigestHasher, Divergence, DivergenceKind, HashComponents,
    JobsRefusal, PlainBytes, RowDigests, Snapshot, SnapshotError, StableHash, StableHasher,
    UnhashedComponents, WorldDigest, diff, mix,
};
pub use freyr_profile::{
    CALLER_ROW, LabelMs, LabelStats, LabelSummary, LabelTick, LoadFactorSummary, Phase, PhaseMs,
    PhaseStats, PhaseSummary, ProfileReport, Summary, TICK_ROW, TickExtras, TickJson, TickProfile,
    TickProfileConfig, TickRecord, TickReport, TimeStats, TraceEvent, TraceKind, WindowStats,
};
#[doc(hidden)]
pub use freyr_query::{ColumnPtr, Resources, SharedPtr};
pub use freyr_query::{
    Commands, ComponentView, EachContext, Entity, EventCursor, Events, QueryData, QueryError,
    QueryFilter, QueryItem, QueryState, ROW_PATH_ENV, Res, RowPath, View, ViewSet, With, Without,
    access, events,
};
