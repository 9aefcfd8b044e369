//! Saves, loads and entity handoff: how a component type registered for persistence (by a
//! stable, user-given name and a version, never by `TypeId` or `type_name`) is encoded,
//! [`EntityMap`], and the errors [`SaveError`] and [`LoadError`]. This module knows columns,
//! values and the [`World`](freyr_core::World), not the registry: the registry's methods and
//! its table of persistent types live in `freyr-registry`'s `registry/persist.rs` and its
//! `save`, `load` and `handoff` modules. The body layout described below is coded in
//! [`body`], the header and checksum in `format`.
//!
//! # Format
//!
//! A file is `magic (8) | format version (u32) | body length (u64) | body | checksum (u64)`, all
//! little-endian; the checksum, a CRC-64/NVME (the [`crc-fast`](https://docs.rs/crc-fast)
//! crate), covers the header and the body (every byte before it), so a flipped bit or a changed
//! 8-byte word anywhere is caught. The body lists the component types (name, version, [encoding](ColumnEncoding),
//! size, align), the entity allocator, then every archetype in creation order with its slabs,
//! chunk ids, entities and one blob per column: the column's values in row order, either
//! encoded with serde and [postcard](https://docs.rs/postcard) (a compact binary format, field
//! by field) or, for plain-data types ([`bytemuck::Pod`]: no padding, any bit pattern valid),
//! as the values' little-endian bytes, the whole column at once. Padding bytes are never
//! written either way. A save's body ends with the change stamps, a section of their own after
//! the archetypes (`registry/persist/stamps.rs`): per archetype, the changed and then the added
//! tick of every allocated chunk and column, so a load answers every change filter as the
//! saved registry did.

pub mod body;
mod error;
pub mod format;
pub mod ops;
pub mod stamps;

use core::fmt;

use freyr_core::Entity;
use hashbrown::HashMap;

pub use bytemuck;
pub use error::{LoadError, SaveError};
pub use ops::{ColumnOps, Decoded, RemapAny};

/// Maps the entities of an export to their new ids in the importing registry, for the remap
/// hooks of
/// `Registry::register_persistent_with_remap`.
///
/// # Examples
///
/// ```
/// use freyr::Registry;
/// use freyr::persist::EntityMap;
///
/// let mut registry = Registry::with_workers(1);
/// registry.register_persistent::<u32>("hp", 1);
/// let e = registry.spawn((7u32,));
/// let bytes = registry.export(&[e]).unwrap();
/// let mut other = Registry::with_workers(1);
/// other.register_persistent::<u32>("hp", 1);
/// let map: EntityMap = other.import(&bytes).unwrap();
/// assert_eq!(*other.get::<u32>(map.get(e).unwrap()).unwrap(), 7);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntityMap {
    map: HashMap<Entity, Entity>,
    order: Vec<(Entity, Entity)>,
}

impl EntityMap {
    /// The map of `pairs` (old, new) in their order, or `None` if an old id repeats.
    pub fn unique(pairs: Vec<(Entity, Entity)>) -> Option<EntityMap> {
        let map: HashMap<Entity, Entity> = pairs.iter().copied().collect();
        (map.len() == pairs.len()).then_some(EntityMap { map, order: pairs })
    }

    /// The new id of `old`, or `None` if `old` was not part of the export (a reference that
    /// leaves the exported set).
    pub fn get(&self, old: Entity) -> Option<Entity> {
        self.map.get(&old).copied()
    }

    /// `(old, new)` for every imported entity, in export order.
    pub fn pairs(&self) -> &[(Entity, Entity)] {
        &self.order
    }

    /// Number of imported entities.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether nothing was imported.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

/// A remap hook: rewrites the `Entity` fields of one value through the import's map.
pub type RemapFn<T> = fn(&mut T, &EntityMap);

/// How the values of one persistent component type are written in a file, recorded per type
/// so a load with the other encoding registered is a typed error
/// ([`LoadError::EncodingMismatch`]).
///
/// # Examples
///
/// ```
/// use freyr::persist::ColumnEncoding;
///
/// assert_eq!(ColumnEncoding::Raw.to_string(), "raw little-endian bytes");
/// assert_ne!(ColumnEncoding::Raw, ColumnEncoding::Serde);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnEncoding {
    /// Value by value through serde and postcard
    /// (`register_persistent`).
    Serde,
    /// The column's bytes as they are in memory on a little-endian target, for
    /// [`bytemuck::Pod`] types
    /// (`register_persistent_pod`).
    Raw,
}

impl ColumnEncoding {
    /// The number the format stores.
    pub fn code(self) -> u32 {
        match self {
            ColumnEncoding::Serde => 0,
            ColumnEncoding::Raw => 1,
        }
    }

    /// The encoding stored as `code`, if any.
    pub fn from_code(code: u32) -> Option<ColumnEncoding> {
        match code {
            0 => Some(ColumnEncoding::Serde),
            1 => Some(ColumnEncoding::Raw),
            _ => None,
        }
    }
}

impl fmt::Display for ColumnEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ColumnEncoding::Serde => "serde (postcard)",
            ColumnEncoding::Raw => "raw little-endian bytes",
        })
    }
}
