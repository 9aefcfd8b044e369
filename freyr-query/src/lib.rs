//! Freyr queries and launches: `each` / `each_async` over archetype chunks, the launch hand-off,
//! the wait-before-access world and deterministic commands. The `Registry` that owns them is in
//! `freyr-registry`; a program uses both through the `freyr` facade.
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
//! # Workspace internals
//!
//! The modules marked `#[doc(hidden)]` are public only so that `freyr-persist` and `freyr-registry` can build on them:
//! they are internal to the Freyr workspace, not a stable API, and the `freyr` facade exports
//! none of them. What they hold that only this crate uses is `pub(crate)` (the workspace lints
//! `unreachable_pub` and `unnameable_types` keep it so).
//!
//! # Layout
//!
//! Each file imports only from files above it in this list, so the imports have no cycle:
//!
//! 1. leaves: `access/kind` ([`AccessKind`](access::AccessKind)), `access/sets`, `resources`
//!    (the resource map), `row_path` (the AVX2 + FMA row loops), `tuples` (the tuple arities),
//!    `launch/callback`, `launch/handoff`, `launch/reduce`, and `events/` (the
//!    event stores and the per-task output buffer);
//! 2. `error`, `filter`, then `access/mod.rs` (the access sets a query declares);
//! 3. `fetch` (what a query reads), `view` (other entities' components), `changed` (change
//!    ticks), then `commands`, `state` (the cached matches, with the layout stamp its pointers are
//!    read under) and `iter/rows` (the one row walk);
//! 4. `iter/each` (the serial walks), `launch/spans`, `cache` (the registry's query states), then
//!    `launch/job`, `launch/inflight` and `launch/mod.rs` (the parallel launches);
//! 5. `world`: the wait-before-access world every registry operation goes through.

pub mod access;
#[doc(hidden)]
pub mod cache;
#[doc(hidden)]
pub mod changed;
#[doc(hidden)]
pub mod commands;
#[doc(hidden)]
pub mod error;
pub mod events;
#[doc(hidden)]
pub mod fetch;
#[doc(hidden)]
pub mod filter;
#[doc(hidden)]
pub mod iter;
#[doc(hidden)]
pub mod launch;
#[doc(hidden)]
pub mod resources;
#[doc(hidden)]
pub mod row_path;
#[doc(hidden)]
pub mod state;
#[doc(hidden)]
pub mod tuples;
#[doc(hidden)]
pub mod view;
#[doc(hidden)]
pub mod world;

/// The launch hand-off (task slots and the end-stamp countdown), for the loom models in
/// `loom-tests/`. Exists only under `--cfg freyr_loom`; not part of the API.
#[cfg(freyr_loom)]
#[doc(hidden)]
pub mod loom_handoff {
    pub use crate::launch::handoff::{Countdown, TaskSlots};
}

pub use crate::commands::{Commands, EachContext};
pub use crate::error::QueryError;
pub use crate::events::{EventCursor, Events};
pub use crate::fetch::{QueryData, QueryItem};
// The three internals below appear in the signatures of the `QueryData` and `ViewSet` impls (their
// associated `Ptrs` / `Fetch` types and `ViewSet::fetch`), so they stay nameable here, but they are
// not part of the API: hidden from the docs, and not exported by the `freyr` facade.
#[doc(hidden)]
pub use crate::fetch::ColumnPtr;
pub use crate::filter::{QueryFilter, With, Without};
#[doc(hidden)]
pub use crate::resources::Resources;
pub use crate::row_path::{ROW_PATH_ENV, RowPath};
pub use crate::state::QueryState;
#[doc(hidden)]
pub use crate::view::SharedPtr;
pub use crate::view::{ComponentView, Res, View, ViewSet};

pub use freyr_core::Entity;
