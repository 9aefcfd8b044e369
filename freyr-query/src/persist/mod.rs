//! Saves, loads and entity handoff: the component types registered for persistence (each by a
//! stable, user-given name and a version, never by `TypeId` or `type_name`), [`EntityMap`],
//! and the errors [`SaveError`] and [`LoadError`]. The registry's methods live in
//! `registry/persist.rs`.
//!
//! # Format
//!
//! A file is `magic (8) | format version (u32) | body length (u64) | body | checksum (u64)`, all
//! little-endian; the checksum covers every byte before it, so a flipped bit anywhere is
//! caught. The body lists the component types (name, version, size, align), the entity
//! allocator, then every archetype in creation order with its slabs, chunk ids, entities and
//! one blob per column: the column's values in row order, encoded with serde and
//! [postcard](https://docs.rs/postcard) (a compact binary format). Values are encoded field by
//! field, so padding bytes are never written.

pub(crate) mod format;

use core::alloc::Layout;
use core::any::{Any, TypeId};
use core::fmt;

use freyr_core::snapshot::{ArchetypeView, ColumnValues, component_info};
use freyr_core::{Component, ComponentInfo, Entity};
use hashbrown::HashMap;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::registry::Registry;
use crate::snapshot::SnapshotError;

/// Maps the entities of an export to their new ids in the importing registry, for the remap
/// hooks of [`Registry::register_persistent_with_remap`].
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
    pub(crate) fn new(pairs: Vec<(Entity, Entity)>) -> EntityMap {
        EntityMap {
            map: pairs.iter().copied().collect(),
            order: pairs,
        }
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

/// Decoded, not yet inserted values of one column (a `Vec<T>`), for an import.
pub(crate) type Decoded = Box<dyn Any>;

/// How one persistent component type is named, encoded and decoded.
#[derive(Clone)]
pub(crate) struct PersistOps {
    pub(crate) name: &'static str,
    pub(crate) version: u32,
    pub(crate) type_id: TypeId,
    pub(crate) layout: Layout,
    pub(crate) info: fn(usize) -> ComponentInfo,
    /// Appends the postcard encoding of a snapshot column.
    pub(crate) encode_column: fn(&ArchetypeView<'_>, usize) -> Vec<u8>,
    /// Decodes `len` values for a snapshot column.
    pub(crate) decode_column: fn(&[u8], usize) -> Option<ColumnValues>,
    /// Whether `entity` has this component in `registry`.
    pub(crate) has: fn(&Registry, Entity) -> bool,
    /// The postcard encoding of these entities' values (each has the component).
    pub(crate) encode_entities: fn(&Registry, &[Entity]) -> Vec<u8>,
    /// Decodes `len` values for an import.
    pub(crate) decode_values: fn(&[u8], usize) -> Option<Decoded>,
    /// Remaps (through the hook, if any) and inserts decoded values, one per entity.
    pub(crate) insert_values: fn(&mut Registry, Decoded, &[Entity], &EntityMap, Option<&RemapAny>),
    pub(crate) remap: Option<RemapAny>,
}

/// A type-erased [`RemapFn`].
pub(crate) type RemapAny = std::sync::Arc<dyn Any + Send + Sync>;

fn encode_column<T: Component + Serialize>(view: &ArchetypeView<'_>, column: usize) -> Vec<u8> {
    let values = view
        .column::<T>(column)
        .expect("a persistent column holds its registered type");
    postcard::to_allocvec(values).expect("postcard writes into a Vec without failing")
}

fn decode_vec<T: DeserializeOwned>(bytes: &[u8], len: usize) -> Option<Vec<T>> {
    let (values, rest): (Vec<T>, &[u8]) = postcard::take_from_bytes(bytes).ok()?;
    (rest.is_empty() && values.len() == len).then_some(values)
}

fn decode_column<T: Component + DeserializeOwned>(
    bytes: &[u8],
    len: usize,
) -> Option<ColumnValues> {
    if bytes.is_empty() && len == 0 {
        return Some(ColumnValues::new(Vec::<T>::new()));
    }
    decode_vec::<T>(bytes, len).map(ColumnValues::new)
}

fn has<T: Component>(registry: &Registry, entity: Entity) -> bool {
    registry.get::<T>(entity).is_ok()
}

fn encode_entities<T: Component + Serialize>(registry: &Registry, entities: &[Entity]) -> Vec<u8> {
    let values: Vec<&T> = entities
        .iter()
        .map(|&e| {
            registry
                .get::<T>(e)
                .expect("an exported entity has the component")
        })
        .collect();
    postcard::to_allocvec(&values).expect("postcard writes into a Vec without failing")
}

fn decode_values<T: Component + DeserializeOwned>(bytes: &[u8], len: usize) -> Option<Decoded> {
    decode_vec::<T>(bytes, len).map(|v| Box::new(v) as Decoded)
}

fn insert_values<T: Component>(
    registry: &mut Registry,
    values: Decoded,
    entities: &[Entity],
    map: &EntityMap,
    remap: Option<&RemapAny>,
) {
    let values = *values
        .downcast::<Vec<T>>()
        .expect("decoded by the same type's ops");
    let remap = remap.map(|r| {
        *r.downcast_ref::<RemapFn<T>>()
            .expect("a remap hook is stored with its type")
    });
    for (mut value, &entity) in values.into_iter().zip(entities) {
        if let Some(remap) = remap {
            remap(&mut value, map);
        }
        registry
            .insert(entity, (value,))
            .expect("an imported entity was just spawned");
    }
}

impl PersistOps {
    pub(crate) fn of<T: Component + Serialize + DeserializeOwned>(
        name: &'static str,
        version: u32,
        remap: Option<RemapAny>,
    ) -> PersistOps {
        PersistOps {
            name,
            version,
            type_id: TypeId::of::<T>(),
            layout: Layout::new::<T>(),
            info: component_info::<T>,
            encode_column: encode_column::<T>,
            decode_column: decode_column::<T>,
            has: has::<T>,
            encode_entities: encode_entities::<T>,
            decode_values: decode_values::<T>,
            insert_values: insert_values::<T>,
            remap,
        }
    }
}

/// The persistent component types of a registry, by type and by name.
#[derive(Default)]
pub(crate) struct PersistTypes {
    pub(crate) ops: Vec<PersistOps>,
}

impl PersistTypes {
    pub(crate) fn add(&mut self, ops: PersistOps, type_name: &'static str) {
        for kept in &self.ops {
            if kept.type_id == ops.type_id && kept.name != ops.name {
                panic!(
                    "freyr: `{type_name}` is already persistent as `{}`; a type has one stable \
                     name, so register it once",
                    kept.name
                );
            }
            if kept.name == ops.name && kept.type_id != ops.type_id {
                panic!(
                    "freyr: the persistent name `{}` is already taken by another type; give \
                     `{type_name}` a name of its own",
                    ops.name
                );
            }
        }
        self.ops.retain(|kept| kept.type_id != ops.type_id);
        self.ops.push(ops);
    }

    pub(crate) fn by_type(&self, type_id: TypeId) -> Option<&PersistOps> {
        self.ops.iter().find(|o| o.type_id == type_id)
    }

    pub(crate) fn by_name(&self, name: &str) -> Option<&PersistOps> {
        self.ops.iter().find(|o| o.name == name)
    }
}

/// Why a save was refused. Nothing was written (a save to a path leaves the old file).
#[derive(Debug)]
#[non_exhaustive]
pub enum SaveError {
    /// Not at a quiet point, or a live type is not registered for snapshots (see
    /// [`Registry::snapshot`]).
    Snapshot(SnapshotError),
    /// Component types of the world (by `type_name`) with no persistent name.
    NotPersistent {
        /// The types, in component-id order.
        types: Vec<&'static str>,
    },
    /// Writing, syncing or renaming the file failed.
    Io(std::io::Error),
}

impl fmt::Display for SaveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SaveError::Snapshot(e) => write!(f, "cannot save: {e}"),
            SaveError::NotPersistent { types } => {
                write!(
                    f,
                    "cannot save: the world has component types with no persistent name: "
                )?;
                for (i, name) in types.iter().enumerate() {
                    write!(f, "{}`{name}`", if i > 0 { ", " } else { "" })?;
                }
                write!(
                    f,
                    "; register each with `register_persistent::<T>(name, version)`"
                )
            }
            SaveError::Io(e) => write!(f, "cannot write the save: {e}; check the path and disk"),
        }
    }
}

impl std::error::Error for SaveError {}

/// Why a load or an import was refused. The registry is unchanged.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// Reading the file failed.
    Io(std::io::Error),
    /// The bytes do not start with the magic of this kind of file (a save, or an export).
    NotAFreyrFile,
    /// Shorter or longer than its header says: a torn or truncated file.
    Truncated {
        /// Length the header announces (or the minimum).
        expected: usize,
        /// Length found.
        found: usize,
    },
    /// The checksum does not match: some byte changed.
    ChecksumMismatch {
        /// Checksum stored in the file.
        stored: u64,
        /// Checksum of the bytes read.
        computed: u64,
    },
    /// Written by another format version.
    UnsupportedFormat {
        /// The file's format version.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// A component name the loading registry has not registered.
    UnknownType {
        /// The persistent name.
        name: String,
    },
    /// The type is registered with another version.
    VersionMismatch {
        /// The persistent name.
        name: String,
        /// Version in the file.
        saved: u32,
        /// Version registered here.
        registered: u32,
    },
    /// The type's size or alignment differs from the saved one.
    LayoutMismatch {
        /// The persistent name.
        name: String,
        /// `(size, align)` in the file.
        saved: (u64, u64),
        /// `(size, align)` here.
        registered: (u64, u64),
    },
    /// The checked bytes do not form a world (a file made by other means, or a bug).
    Corrupt {
        /// What is inconsistent.
        what: &'static str,
    },
    /// The registry is not at a quiet point (see [`Registry::restore`]).
    Snapshot(SnapshotError),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "cannot read the save: {e}; check the path"),
            LoadError::NotAFreyrFile => {
                write!(
                    f,
                    "not a freyr save or export (wrong magic); check which file is loaded"
                )
            }
            LoadError::Truncated { expected, found } => write!(
                f,
                "the file is truncated or torn: {found} bytes, {expected} expected; load an \
                 older save"
            ),
            LoadError::ChecksumMismatch { stored, computed } => write!(
                f,
                "the file's checksum {stored:#018x} does not match its bytes ({computed:#018x}): \
                 it was damaged; load an older save"
            ),
            LoadError::UnsupportedFormat { found, supported } => write!(
                f,
                "the file has format version {found}, this build reads {supported}; load it with \
                 a matching freyr"
            ),
            LoadError::UnknownType { name } => write!(
                f,
                "the file has component type `{name}`, not registered here; register it with \
                 `register_persistent::<T>(\"{name}\", version)`"
            ),
            LoadError::VersionMismatch {
                name,
                saved,
                registered,
            } => write!(
                f,
                "component type `{name}` was saved at version {saved}, registered here at \
                 version {registered}; convert the save or register the matching version"
            ),
            LoadError::LayoutMismatch {
                name,
                saved,
                registered,
            } => write!(
                f,
                "component type `{name}` was saved with (size, align) {saved:?}, it is \
                 {registered:?} here; bump its version when its fields change"
            ),
            LoadError::Corrupt { what } => {
                write!(f, "the file is inconsistent ({what}); load an older save")
            }
            LoadError::Snapshot(e) => write!(f, "cannot load now: {e}"),
        }
    }
}

impl std::error::Error for LoadError {}
