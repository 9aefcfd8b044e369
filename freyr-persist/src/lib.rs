//! Freyr saves, snapshots and the world digest: the records of a world that outlive a tick.
//!
//! - [`snapshot`]: a copy of a world and its registered resources for rollback ([`Snapshot`]);
//! - [`hash`](StableHash) and [`digest`]: the stable hash of component values, and the per-chunk
//!   [`WorldDigest`] that locates where two servers' worlds diverge;
//! - `persist` (feature `persist`): the save format, its description and its body layout
//!   (`persist/body.rs`).
//!
//! The registry's methods over them (`Registry::snapshot`, `Registry::save`,
//! `Registry::world_digest`, ...) live in `freyr-registry`; a program uses them through the
//! `freyr` facade (`freyr::snapshot`, `freyr::persist`, `freyr::hash`).
//!
//! # Workspace internals
//!
//! The modules marked `#[doc(hidden)]` are public only so that `freyr-registry` can build on them:
//! they are internal to the Freyr workspace, not a stable API, and the `freyr` facade exports
//! none of them. What they hold that only this crate uses is `pub(crate)` (the workspace lints
//! `unreachable_pub` and `unnameable_types` keep it so).
//!
//! # Layout
//!
//! Each file imports only from files above it in this list, so the imports have no cycle:
//!
//! 1. `snapshot` (a world and its resources, copied), and `hash/`: the stable hash
//!    ([`StableHash`], [`HashComponents`]), the plain-bytes hash ([`PlainBytes`]), the chunk
//!    hasher ([`DigestHasher`]) and the per-column hash functions;
//! 2. `hashable` (the component types a registry hashes without being told each time);
//! 3. `digest/`: the per-chunk [`WorldDigest`], its row digests and [`diff`];
//! 4. `persist/` (feature `persist`): `error`, `ops` (how a column is encoded), `format` (the
//!    header, the checksum and the readers and writers), `body` (the body layout: world to
//!    bytes, bytes to world parts), then `mod.rs` (the format's description).

pub mod digest;
#[doc(hidden)]
pub mod hash;
#[doc(hidden)]
pub mod hashable;
#[cfg(feature = "persist")]
pub mod persist;
pub mod snapshot;

pub use crate::digest::{
    ArchetypeDigest, ChunkAddress, Divergence, DivergenceKind, RowDigests, WorldDigest, diff,
};
pub use crate::hash::{DigestHasher, HashComponents, PlainBytes, StableHash, StableHasher, mix};
pub use crate::hashable::UnhashedComponents;
pub use crate::snapshot::{JobsRefusal, Snapshot, SnapshotError};
