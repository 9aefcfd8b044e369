//! Freyr saves, snapshots and the world digest: the records of a world that outlive a tick.
//!
//! - [`snapshot`]: a copy of a world and its registered resources for rollback ([`Snapshot`]);
//! - [`hash`](StableHash) and [`digest`]: the stable hash of component values, and the per-chunk
//!   [`WorldDigest`] that locates where two servers' worlds diverge;
//! - `persist` (feature `persist`): the save format, its description and its body layout.
//!
//! The registry's methods over them (`Registry::snapshot`, `Registry::save`,
//! `Registry::world_digest`, ...) live in `freyr-registry`; a program uses them through the
//! `freyr` facade (`freyr::snapshot`, `freyr::persist`, `freyr::hash`).
//!
//! # Layout
//!
//! Each file imports only from files above it in this list, so the imports have no cycle:
//!
//! 1. `digest/plain` ([`PlainBytes`]), `digest/diff`, `digest/hasher`, `snapshot`;
//! 2. `hash` (the stable hash and [`HashComponents`]), then `digest/column`;
//! 3. `hashable` (the registered hashable types), then `digest/build`, `digest/rows` and
//!    `digest/mod.rs`;
//! 4. `persist/` (feature `persist`): `error`, `ops` (how a column is encoded), `format` (the
//!    header and the body layout), then `mod.rs`.

pub mod digest;
#[doc(hidden)]
pub mod hash;
#[doc(hidden)]
pub mod hashable;
#[cfg(feature = "persist")]
pub mod persist;
pub mod snapshot;

pub use crate::digest::{
    ArchetypeDigest, ChunkAddress, DigestHasher, Divergence, DivergenceKind, PlainBytes,
    RowDigests, WorldDigest, diff,
};
pub use crate::hash::{HashComponents, StableHash, StableHasher, mix};
pub use crate::hashable::UnhashedComponents;
pub use crate::snapshot::{Snapshot, SnapshotError};
