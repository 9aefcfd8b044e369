//! Freyr storage: entities, components, archetypes of 512-entity chunks, and command buffers.
//!
//! Goals, in order: a safe API that no user code (including a panicking `Drop` or iterator) can
//! drive into undefined behaviour; dense, cache-friendly chunks that queries walk without
//! lookups; cheap structural changes; deterministic entity ids.
//!
//! - An [`Entity`] is a 32-bit index plus a generation; stale handles are errors, never panics.
//! - Entities with the same component set share an [`Archetype`]; its rows live in chunks of
//!   [`CHUNK_CAPACITY`] entities, one column per component (structure of arrays), and every
//!   chunk but the last is full.
//! - [`World::insert`] / [`World::remove`] move a row between archetypes through cached graph
//!   edges; [`CommandBuffer`] records structural changes to apply later, in order.
//!
//! # Examples
//! ```
//! use freyr::{CommandBuffer, World};
//!
//! #[derive(Debug, PartialEq)]
//! struct Position([f32; 3]);
//! struct Velocity([f32; 3]);
//!
//! let mut world = World::new();
//! let ids = world.spawn_batch((0..1000).map(|i| (Position([i as f32; 3]), Velocity([1.0; 3]))));
//!
//! // Walk the chunks like a query does.
//! let (pos, vel) = (world.component_id::<Position>().unwrap(), world.component_id::<Velocity>().unwrap());
//! let mut total = 0;
//! for archetype in world.archetypes().iter().filter(|a| a.has(pos) && a.has(vel)) {
//!     for chunk in archetype.chunks() {
//!         total += chunk.column::<Position>(pos).unwrap().len();
//!     }
//! }
//! assert_eq!(total, 1000);
//!
//! let mut commands = CommandBuffer::new();
//! commands.despawn(ids[0]);
//! commands.apply(&mut world);
//! assert_eq!(world.len(), 999);
//! assert_eq!(world.get::<Position>(ids[1]), Ok(&Position([1.0; 3])));
//! ```
//!
//! # Layout
//!
//! Each file imports only from files above it in this list, so the imports have no cycle:
//!
//! 1. `lib.rs` (the crate-wide [`CHUNK_CAPACITY`]), `component`, `arena`, `world_id`, `spare`
//!    (slab memory kept for reuse): ids, type registry and raw memory;
//! 2. `entity`, `bundle`, `edges` (the cached edge data), `column`, `chunk` (chunks, slabs and
//!    their ids), `ticks` (change ticks), `error`, `command/pending` (pending handles);
//! 3. `archetype`: the rows of one component set;
//! 4. `chunk_ref` (the read-only [`ChunkRef`] view, and the [`Archetype`] methods that hand it
//!    out), `world/row_move` (moving a row along an edge, and building an edge's mappings);
//! 5. `world/mod.rs`, then `world/spawn` and `world/change`, which add [`World`] methods;
//! 6. `recorded`, `command/mod.rs`, then `command/apply`, which adds [`CommandBuffer`] methods;
//! 7. `snapshot` (in-memory copies for rollback) and `parts` (a world read as a save records
//!    it and built again from decoded parts, internal to the workspace), which add [`World`]
//!    methods; `persist` (serde for [`Entity`], feature `serde`).

mod archetype;
mod arena;
mod bundle;
mod chunk;
mod chunk_ref;
mod column;
mod command;
mod component;
mod edges;
mod entity;
mod error;
#[doc(hidden)]
pub mod parts;
#[cfg(feature = "serde")]
mod persist;
mod recorded;
mod relation;
mod slab_memory;
pub mod snapshot;
mod spare;
mod ticks;
mod world;
mod world_id;

/// Rows per chunk: every archetype stores its entities in chunks of this many rows (512; 64
/// when the crate is built by Miri, so tests of worlds of several chunks stay small enough for
/// it to interpret — every path is the same, only the constant differs).
pub const CHUNK_CAPACITY: usize = if cfg!(miri) { 64 } else { 512 };

pub use crate::archetype::{Archetype, ArchetypeId};
pub use crate::bundle::{Bundle, BundleTypes};
pub use crate::chunk_ref::ChunkRef;
pub use crate::command::CommandBuffer;
pub use crate::command::apply::{AppliedCommand, ApplyReport};
pub use crate::command::op::EntityOp;
pub use crate::component::{Component, ComponentId, ComponentInfo, Disabled};
pub use crate::entity::Entity;
pub use crate::error::{ComponentError, NoSuchEntity};
pub use crate::relation::{ChildOf, Children, is_kept};
#[doc(hidden)]
pub use crate::relation::{is_kept_type, refuse_kept};
pub use crate::spare::SpareSlabs;
pub use crate::ticks::ChangedEntry;
pub use crate::world::World;
pub use crate::world_id::WorldId;
