//! Freyr queries: `each` / `each_async` over archetype chunks, the [`Registry`], phases, sync
//! points and deterministic commands.
//!
//! Goals, in order:
//!
//! 1. **No data races from safe code.** A query names what it reads and writes; conflicting
//!    access inside a query is rejected before it runs; work that conflicts with in-flight
//!    parallel work waits for it (an implicit sync point); callbacks cannot reach the registry.
//! 2. **The same world for every worker count.** Commands recorded by parallel tasks apply in
//!    (launch, chunk, row, record) order; reductions combine in chunk order.
//! 3. **Speed.** `each` is a pointer walk over chunk columns; `each_async` is one queue entry per
//!    chunk, with no heap allocation per task. Built for a target without AVX2 (a dependent's
//!    default), every row loop also exists as an AVX2 + FMA copy that runs where the CPU has
//!    it, with the same results ([`RowPath`]).
//!
//! # Examples
//!
//! ```
//! use freyr::{Phase, Registry};
//!
//! #[derive(Clone, Copy)]
//! struct Pos(f32);
//! #[derive(Clone, Copy)]
//! struct Vel(f32);
//! struct Lifetime(u32);
//!
//! let mut registry = Registry::with_workers(4);
//! registry.spawn_batch((0..2000).map(|i| (Pos(0.0), Vel(i as f32), Lifetime(i % 3))));
//!
//! registry.add_system(Phase::Update, |r: &mut Registry, dt: f32| {
//!     // Parallel: one task per 512-entity chunk.
//!     r.query::<(&mut Pos, &Vel)>()
//!         .with_label("Integrate")
//!         .each_async(move |_, (p, v)| p.0 += v.0 * dt);
//!     // Overlaps the integration: it touches only `Lifetime`.
//!     r.query::<&mut Lifetime>().each_with(|e, life, ctx| {
//!         if life.0 == 0 {
//!             ctx.commands().despawn(e); // applied at the phase's sync point
//!         } else {
//!             life.0 -= 1;
//!         }
//!     });
//! });
//!
//! registry.update(0.5);
//! assert_eq!(registry.len(), 2000 - 667);
//! let report = registry.profile();
//! assert_eq!(report.label("Integrate").unwrap().tasks, 4);
//! assert_eq!(report.implicit_syncs, 0); // the two queries were disjoint
//! ```
//!
//! The chapters "Queries", "Parallel iteration" and "Golden rules" of the guide (`docs/`)
//! describe the model in full.
//!
//! # Layout
//!
//! Each file imports only from files above it in this list, so the imports have no cycle:
//!
//! 1. leaves: `access/kind` ([`AccessKind`](access::AccessKind)), `access/sets`, `phase`,
//!    `resources`, `row_path`, `tuples` (the tuple arities), `first_panic`, `launch/callback`,
//!    `launch/handoff`, `launch/reduce`, `tick/record` and `tick/trace`;
//! 2. `error`, `filter`, `profiler` (with [`TimeStats`]), `tick/report`, then `access/mod.rs`
//!    and `tick/mod.rs`;
//! 3. `fetch`, `view`, `hash`, then `commands`, `hashable`, `state` (with the layout stamp its
//!    cached pointers are read under) and `iter/rows` (the one row walk);
//! 4. `iter/each`, `launch/spans`, `registry/cache`, then `launch/job`, `launch/inflight` and
//!    `launch/mod.rs`;
//! 5. `registry/world` (the wait-before-access world), then `registry/mod.rs`: [`Registry`] and
//!    the types it is made of that name it back ([`System`], the time state and the deadline
//!    appliers);
//! 6. the files that add [`Registry`] methods (`registry/*` and `query/reduction`), then
//!    `query/mod.rs` and `query/build`.

pub mod access;
mod changed;
mod commands;
pub mod digest;
mod error;
pub mod events;
mod fetch;
mod filter;
mod first_panic;
mod hash;
mod hashable;
pub mod hooks;
mod iter;
mod launch;
#[cfg(feature = "persist")]
pub mod persist;
mod phase;
mod profiler;
mod query;
mod registry;
mod resources;
mod row_path;
mod snapshot;
mod state;
mod tick;
mod tuples;
mod view;

/// The launch hand-off (task slots and the end-stamp countdown), for the loom models in
/// `loom-tests/`. Exists only under `--cfg freyr_loom`; not part of the API.
#[cfg(freyr_loom)]
#[doc(hidden)]
pub mod loom_handoff {
    pub use crate::launch::handoff::{Countdown, TaskSlots};
}

pub use crate::commands::{Commands, EachContext};
pub use crate::digest::{
    ArchetypeDigest, ChunkAddress, DigestHasher, Divergence, DivergenceKind, PlainBytes,
    RowDigests, WorldDigest, diff,
};
pub use crate::error::QueryError;
pub use crate::events::{EventCursor, Events};
pub use crate::fetch::{QueryData, QueryItem};
// The three internals below appear in the signatures of the `QueryData` and `ViewSet` impls (their
// associated `Ptrs` / `Fetch` types and `ViewSet::fetch`), so they stay nameable here, but they are
// not part of the API: hidden from the docs, and not exported by the `freyr` facade.
#[doc(hidden)]
pub use crate::fetch::ColumnPtr;
pub use crate::filter::{QueryFilter, With, Without};
pub use crate::hash::{HashComponents, StableHash, StableHasher, mix};
pub use crate::hashable::UnhashedComponents;
pub use crate::phase::Phase;
pub use crate::profiler::{LabelStats, PhaseStats, ProfileReport, TimeStats};
pub use crate::query::{Query, Reduction};
pub use crate::registry::{AsyncProgress, AsyncSystem, Launched, Process, TickTiming};
pub use crate::registry::{BoxedClock, Registry, System};
#[doc(hidden)]
pub use crate::resources::Resources;
pub use crate::row_path::{ROW_PATH_ENV, RowPath};
pub use crate::snapshot::{JobsRefusal, Snapshot, SnapshotError, SnapshotRing};
pub use crate::state::QueryState;
pub use crate::tick::{
    CALLER_ROW, LabelMs, LabelSummary, LabelTick, LoadFactorSummary, PhaseMs, PhaseSummary,
    Summary, TICK_ROW, TickExtras, TickJson, TickProfile, TickProfileConfig, TickRecord,
    TickReport, TraceEvent, TraceKind, WindowStats,
};
#[doc(hidden)]
pub use crate::view::SharedPtr;
pub use crate::view::{ComponentView, Res, View, ViewSet};

pub use freyr_core::Entity;
pub use freyr_core::snapshot::{MissingSnapshotTypes, WorldSnapshot};
