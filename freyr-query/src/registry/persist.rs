//! Persistence of a registry: [`Registry::register_persistent`] and
//! [`Registry::register_persistent_pod`], the registry's table of persistent types, saves and
//! loads (a loaded world is built like a restored snapshot); [`Registry::export`] /
//! [`Registry::import`] are in `handoff`.

mod handoff;

use std::io::Write;
use std::path::Path;

use freyr_core::parts::{AllocatorParts, ArchetypeParts, ENTITY_BYTES, SpareSlabs, WorldParts};
use freyr_core::{Archetype, Component, Entity, World};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::launch::inflight::OpAccess;
use crate::persist::format::{Framed, Reader, Verifier, Writer, frame};
use crate::persist::ops::{Codec, ColumnEncoder, SerdeCodec, decoded};
use crate::persist::{ColumnEncoding, ColumnOps, Decoded, LoadError, RemapAny, RemapFn, SaveError};
use crate::snapshot::SnapshotError;

use super::Registry;

/// One persistent component type: its [`ColumnOps`] and how its values enter a registry whose
/// hooks must see every insert.
#[derive(Clone)]
pub(crate) struct PersistOps {
    pub(crate) column: ColumnOps,
    /// Inserts decoded values, one per entity, through [`Registry::insert`] (its hooks run).
    pub(crate) insert_hooked: fn(&mut Registry, Decoded, &[Entity]),
}

impl core::ops::Deref for PersistOps {
    type Target = ColumnOps;

    fn deref(&self) -> &ColumnOps {
        &self.column
    }
}

fn insert_hooked<T: Component>(registry: &mut Registry, values: Decoded, entities: &[Entity]) {
    for (value, &entity) in decoded::<T>(values).into_iter().zip(entities) {
        registry
            .insert(entity, (value,))
            .expect("an imported entity was just spawned");
    }
}

impl PersistOps {
    fn of<T: Component, C: Codec<T>>(
        name: &'static str,
        version: u32,
        remap: Option<RemapAny>,
    ) -> PersistOps {
        PersistOps {
            column: ColumnOps::of::<T, C>(name, version, remap),
            insert_hooked: insert_hooked::<T>,
        }
    }
}

/// The persistent component types of a registry, by type and by name.
#[derive(Default)]
pub(crate) struct PersistTypes {
    pub(crate) ops: Vec<PersistOps>,
}

impl PersistTypes {
    fn add(&mut self, ops: PersistOps, type_name: &'static str) {
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

    fn by_type(&self, type_id: core::any::TypeId) -> Option<&PersistOps> {
        self.ops.iter().find(|o| o.type_id == type_id)
    }

    fn by_name(&self, name: &str) -> Option<&PersistOps> {
        self.ops.iter().find(|o| o.name == name)
    }
}

/// The magic of a whole-registry save.
const SAVE_MAGIC: &[u8; 8] = b"FREYRSAV";

impl Registry {
    /// Registers component `T` for saves and exports under the stable `name` and `version`
    /// (the file names types by these, so programs that touch their types in another order,
    /// or another build, read the same file). Also registers `T` for snapshots by `Clone` if
    /// it was not registered for them yet.
    ///
    /// # Panics
    ///
    /// If `T` is persistent under another name, or `name` is taken by another type.
    ///
    /// # Examples
    ///
    /// ```
    /// #[derive(Clone, serde::Serialize, serde::Deserialize)]
    /// struct Hp(u32);
    ///
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_persistent::<Hp>("game.hp", 1);
    /// registry.spawn((Hp(3),));
    /// assert!(registry.save_to_vec().is_ok());
    /// ```
    pub fn register_persistent<T>(&mut self, name: &'static str, version: u32)
    where
        T: Component + Clone + Serialize + DeserializeOwned,
    {
        self.add_persistent::<T>(PersistOps::of::<T, SerdeCodec>(name, version, None));
    }

    /// Registers the plain-data component `T` for saves and exports under the stable `name`
    /// and `version`, its columns written as their bytes, a whole column at a time (copy
    /// speed; [`register_persistent`](Registry::register_persistent) encodes value by value
    /// through serde). [`bytemuck::Pod`] proves what that needs: no padding bytes (none are
    /// ever written) and every bit pattern a valid value (any bytes of the right length
    /// decode). Also registers `T` for snapshots as a plain copy if it was not registered for
    /// them yet.
    ///
    /// The file is little-endian on every target, and a column's bytes are the file's bytes
    /// only on a little-endian target (x86-64, AArch64, RISC-V, WebAssembly), so this method
    /// exists only there; a big-endian build registers such a type with `register_persistent`
    /// instead. The file records which encoding each type uses: loading it with the other one
    /// registered is [`LoadError::EncodingMismatch`].
    ///
    /// # Panics
    ///
    /// If `T` is persistent under another name, or `name` is taken by another type.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::persist::bytemuck::{Pod, Zeroable};
    ///
    /// #[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
    /// #[bytemuck(crate = "freyr::persist::bytemuck")]
    /// #[repr(C)]
    /// struct Position([f32; 3]);
    ///
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_persistent_pod::<Position>("game.position", 1);
    /// let e = registry.spawn((Position([1.0, 2.0, 3.0]),));
    /// let bytes = registry.save_to_vec().unwrap();
    /// let mut loaded = freyr::Registry::with_workers(1);
    /// loaded.register_persistent_pod::<Position>("game.position", 1);
    /// loaded.load_into(&bytes).unwrap();
    /// assert_eq!(loaded.get::<Position>(e), Ok(&Position([1.0, 2.0, 3.0])));
    /// ```
    #[cfg(target_endian = "little")]
    pub fn register_persistent_pod<T>(&mut self, name: &'static str, version: u32)
    where
        T: Component + bytemuck::Pod,
    {
        use crate::persist::ops::RawCodec;
        self.guard("Registry::register_persistent_pod");
        if !self.snapshot_types.components.is_registered::<T>() {
            self.snapshot_types.components.register_copy::<T>();
        }
        let ops = PersistOps::of::<T, RawCodec>(name, version, None);
        self.persist_types.add(ops, core::any::type_name::<T>());
    }

    /// As [`register_persistent`](Registry::register_persistent), with a hook that rewrites
    /// the `Entity` fields of an imported value through the import's [`EntityMap`](crate::persist::EntityMap). A
    /// reference to an entity outside the export has no new id ([`EntityMap::get`](crate::persist::EntityMap::get) is `None`):
    /// the hook decides (the guide's pattern: keep it as `None`).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Entity, Registry};
    /// use freyr::persist::EntityMap;
    ///
    /// #[derive(Clone, serde::Serialize, serde::Deserialize)]
    /// struct Target(Option<Entity>);
    ///
    /// let remap = |t: &mut Target, map: &EntityMap| t.0 = t.0.and_then(|e| map.get(e));
    /// let mut a = Registry::with_workers(1);
    /// a.register_persistent_with_remap::<Target>("target", 1, remap);
    /// let x = a.spawn((Target(None),));
    /// let y = a.spawn((Target(Some(x)),));
    /// let bytes = a.export(&[x, y]).unwrap();
    /// let mut b = Registry::with_workers(1);
    /// b.spawn((Target(None),)); // b's ids differ
    /// b.register_persistent_with_remap::<Target>("target", 1, remap);
    /// let map = b.import(&bytes).unwrap();
    /// let (x2, y2) = (map.get(x).unwrap(), map.get(y).unwrap());
    /// assert_eq!(b.get::<Target>(y2).unwrap().0, Some(x2));
    /// ```
    pub fn register_persistent_with_remap<T>(
        &mut self,
        name: &'static str,
        version: u32,
        remap: RemapFn<T>,
    ) where
        T: Component + Clone + Serialize + DeserializeOwned,
    {
        let remap = std::sync::Arc::new(remap);
        let ops = PersistOps::of::<T, SerdeCodec>(name, version, Some(remap));
        self.add_persistent::<T>(ops);
    }

    fn add_persistent<T: Component + Clone>(&mut self, ops: PersistOps) {
        self.guard("Registry::register_persistent");
        if !self.snapshot_types.components.is_registered::<T>() {
            self.snapshot_types.components.register_clone::<T>();
        }
        self.persist_types.add(ops, core::any::type_name::<T>());
    }

    /// The registry saved to bytes: the world (component table, archetypes in creation order,
    /// rows in order, entity allocator) and the [`tick`](Registry::tick). Resources, systems
    /// and clocks are not saved. Reads only.
    ///
    /// # Errors
    ///
    /// [`SaveError::Snapshot`] as for [`snapshot`](Registry::snapshot) (not at a quiet point,
    /// or inside `update`); [`SaveError::NotPersistent`] naming every component type of the
    /// world with no persistent name.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_persistent::<u64>("score", 1);
    /// let e = registry.spawn((5u64,));
    /// let bytes = registry.save_to_vec().unwrap();
    /// let mut loaded = freyr::Registry::with_workers(2);
    /// loaded.register_persistent::<u64>("score", 1);
    /// loaded.load_into(&bytes).unwrap();
    /// assert_eq!(*loaded.get::<u64>(e).unwrap(), 5);
    /// ```
    pub fn save_to_vec(&self) -> Result<Vec<u8>, SaveError> {
        let mut out = Vec::new();
        self.save_into(&mut out)?;
        Ok(out)
    }

    /// As [`save_to_vec`](Registry::save_to_vec), writing into `out` (cleared first), whose
    /// allocation is reused: a server that saves every few minutes keeps one buffer, and the
    /// save runs at copy speed instead of waiting on fresh pages. The save reads the live world
    /// (no copy of it is taken first).
    ///
    /// # Errors
    ///
    /// As `save_to_vec`; `out` is then unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_persistent::<u64>("score", 1);
    /// registry.spawn((5u64,));
    /// let mut buffer = Vec::new();
    /// registry.save_into(&mut buffer).unwrap();
    /// assert_eq!(buffer, registry.save_to_vec().unwrap());
    /// ```
    pub fn save_into(&self, out: &mut Vec<u8>) -> Result<(), SaveError> {
        self.guard("Registry::save");
        self.check_quiet().map_err(SaveError::Snapshot)?;
        let world = self.sync.read(&OpAccess::Exclusive, &self.profiler);
        let mut ops = Vec::with_capacity(world.component_infos().len());
        let mut missing = Vec::new();
        for info in world.component_infos() {
            match self.persist_types.by_type(info.type_id()) {
                Some(o) => ops.push(o),
                None => missing.push(info.name()),
            }
        }
        if !missing.is_empty() {
            return Err(SaveError::NotPersistent { types: missing });
        }
        let tick = self.time.tick;
        // As a snapshot at this tick would: deadline results from it on are kept, so loading
        // this save back into this registry delivers them again.
        self.note_snapshot_tick(tick);
        let a = world.allocator_view();
        let mut w = Writer::reuse(SAVE_MAGIC, core::mem::take(out), save_size(world, &ops));
        w.u64(tick);
        w.u32(ops.len() as u32);
        for o in &ops {
            write_type(&mut w, o);
        }
        w.u32s(a.slots);
        w.u32s(a.free);
        w.u64(a.len as u64);
        w.u64(a.chunk_ids as u64);
        w.u32s(a.free_chunks);
        w.u64(world.archetypes().len() as u64);
        for archetype in world.archetypes() {
            write_archetype(&mut w, archetype, &ops);
        }
        *out = w.finish();
        Ok(())
    }

    /// Saves to `path`, crash-safe: writes a temporary file beside it, syncs it to disk,
    /// renames it over `path` and syncs the directory, so a crash at any moment leaves either
    /// the old save or the new one, never a torn file.
    ///
    /// # Errors
    ///
    /// As [`save_to_vec`](Registry::save_to_vec); [`SaveError::Io`] if writing fails (the old
    /// file is then untouched).
    ///
    /// # Examples
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("freyr-doc-save-{}.bin", std::process::id()));
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_persistent::<u8>("byte", 1);
    /// registry.spawn((1u8,));
    /// registry.save(&path).unwrap();
    /// let mut loaded = freyr::Registry::with_workers(1);
    /// loaded.register_persistent::<u8>("byte", 1);
    /// loaded.load_file(&path).unwrap();
    /// assert_eq!(loaded.len(), 1);
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), SaveError> {
        let bytes = self.save_to_vec()?;
        write_atomically(path.as_ref(), &bytes).map_err(SaveError::Io)
    }

    /// Replaces this registry's world and tick with the save in `bytes`: the same world hash,
    /// the same entity ids and next spawned ids, the same iteration order as the saved
    /// registry, whatever order this program touched its types in (types are matched by
    /// persistent name). Everything is checked before anything changes; the loaded world is
    /// a new world, as after [`restore`](Registry::restore).
    ///
    /// # Errors
    ///
    /// A [`LoadError`] naming what is wrong; the registry is then unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::persist::LoadError;
    /// let mut registry = freyr::Registry::with_workers(1);
    /// assert!(matches!(registry.load_into(b"nonsense"), Err(LoadError::NotAFreyrFile)));
    /// ```
    pub fn load_into(&mut self, bytes: &[u8]) -> Result<(), LoadError> {
        self.guard("Registry::load_into");
        let framed = frame(bytes, SAVE_MAGIC)?;
        // The checksum is fed as the new world is built (each piece hashed right after its
        // copy) and compared before anything is replaced; when it differs, that is the error
        // whatever else the damaged bytes caused.
        let mut verifier = framed.verifier();
        // The new world copies into the chunk memory the last load's replaced world left;
        // whatever it does not reuse is freed now, so at most one world's memory is kept.
        let mut spare = core::mem::take(&mut self.spare_slabs);
        let built = self.build_loaded(&framed, &mut verifier, &mut spare);
        drop(spare);
        verifier.finish(&framed)?;
        let (world, tick) = built?;
        self.install_loaded(world, tick)
            .map_err(LoadError::Snapshot)
    }

    /// Bytes of chunk memory this registry keeps for its next load: what the world that the
    /// last [`load_into`](Registry::load_into) replaced held (its slabs, not its values). The
    /// next load copies into that memory instead of asking the allocator for new pages, whose
    /// first touch is a page fault each (a quarter of a 1M-entity load, measured); what it
    /// does not reuse it frees. So a registry that loads into a world it holds keeps up to
    /// that world's memory once more, until
    /// [`release_spare_memory`](Registry::release_spare_memory).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_persistent::<u32>("hp", 1);
    /// registry.spawn_batch((0..1000u32).map(|i| (i,)));
    /// let save = registry.save_to_vec().unwrap();
    /// assert_eq!(registry.spare_memory(), 0);
    /// registry.load_into(&save).unwrap();
    /// let kept = registry.spare_memory();
    /// assert!(kept >= 1000 * 4, "the replaced world's chunks");
    /// registry.load_into(&save).unwrap(); // copies into them, and keeps the replaced ones
    /// assert_eq!(registry.spare_memory(), kept);
    /// ```
    pub fn spare_memory(&self) -> usize {
        self.spare_slabs.bytes()
    }

    /// Frees the chunk memory kept for the next load (see
    /// [`spare_memory`](Registry::spare_memory)) and returns its size in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_persistent::<u32>("hp", 1);
    /// registry.spawn_batch((0..1000u32).map(|i| (i,)));
    /// let save = registry.save_to_vec().unwrap();
    /// registry.load_into(&save).unwrap();
    /// let kept = registry.spare_memory();
    /// assert!(kept > 0);
    /// assert_eq!(registry.release_spare_memory(), kept);
    /// assert_eq!(registry.spare_memory(), 0);
    /// ```
    pub fn release_spare_memory(&mut self) -> usize {
        let bytes = self.spare_slabs.bytes();
        self.spare_slabs.clear();
        bytes
    }

    /// The world and tick of a framed save (its checksum not yet compared), every byte the
    /// world's parts copy passed to `verifier` as it is copied.
    fn build_loaded(
        &self,
        framed: &Framed<'_>,
        verifier: &mut Verifier<'_>,
        spare: &mut SpareSlabs,
    ) -> Result<(World, u64), LoadError> {
        framed.check_version()?;
        let mut r = Reader { rest: framed.body };
        let tick = r.u64("the tick")?;
        let ops = self.read_types(&mut r)?;
        let allocator = AllocatorParts {
            slots: r.u32s("the entity slots")?,
            free: r.u32s("the free entities")?,
            len: r.u64("the live count")? as usize,
            chunk_ids: r.u64("the chunk id count")? as usize,
            free_chunks: r.u32s("the free chunks")?,
        };
        let count = r.count(1, "the archetype count")?;
        let mut archetypes = Vec::new();
        for _ in 0..count {
            archetypes.push(read_archetype(&mut r, &ops)?);
        }
        r.end()?;
        let components = ops.iter().enumerate().map(|(i, o)| (o.info)(i)).collect();
        let parts = WorldParts {
            components,
            allocator,
            archetypes,
        };
        let world = World::from_parts_reading(parts, &mut |piece| verifier.read(piece), spare)
            .map_err(|e| LoadError::Corrupt { what: e.0 })?;
        Ok((world, tick))
    }

    /// Puts a loaded world and its tick in place, as [`restore`](Registry::restore) does: at a
    /// quiet point only; the replaced world's values are dropped last.
    fn install_loaded(&mut self, world: World, tick: u64) -> Result<(), SnapshotError> {
        self.check_quiet()?;
        self.check_rewind_jobs(tick);
        let (current, _) = self.sync.write_all(&self.profiler);
        let old_world = core::mem::replace(current, world);
        self.rewind_time(tick);
        // User `Drop`s run last, with the registry already loaded; the old world's chunk
        // memory is kept for the next load.
        old_world.recycle_into(&mut self.spare_slabs);
        Ok(())
    }

    /// As [`load_into`](Registry::load_into), reading the file at `path`.
    ///
    /// # Errors
    ///
    /// [`LoadError::Io`] if reading fails; otherwise as `load_into`.
    pub fn load_file(&mut self, path: impl AsRef<Path>) -> Result<(), LoadError> {
        let bytes = std::fs::read(path).map_err(LoadError::Io)?;
        self.load_into(&bytes)
    }

    /// The persistent ops of every type listed in a file, in its order.
    fn read_types(&self, r: &mut Reader<'_>) -> Result<Vec<PersistOps>, LoadError> {
        let count = r.u32("the type count")? as usize;
        let mut ops: Vec<PersistOps> = Vec::new();
        for _ in 0..count {
            let name =
                core::str::from_utf8(r.bytes("a type name")?).map_err(|_| LoadError::Corrupt {
                    what: "a type name is not UTF-8",
                })?;
            let (version, encoding) = (r.u32("a version")?, r.u32("an encoding")?);
            let (size, align) = (r.u64("a size")?, r.u64("an align")?);
            let Some(o) = self.persist_types.by_name(name) else {
                return Err(LoadError::UnknownType { name: name.into() });
            };
            if o.version != version {
                return Err(LoadError::VersionMismatch {
                    name: name.into(),
                    saved: version,
                    registered: o.version,
                });
            }
            let here = (o.layout.size() as u64, o.layout.align() as u64);
            if here != (size, align) {
                return Err(LoadError::LayoutMismatch {
                    name: name.into(),
                    saved: (size, align),
                    registered: here,
                });
            }
            let saved = ColumnEncoding::from_code(encoding).ok_or(LoadError::Corrupt {
                what: "a type's encoding is unknown",
            })?;
            if saved != o.encoding {
                return Err(LoadError::EncodingMismatch {
                    name: name.into(),
                    saved,
                    registered: o.encoding,
                });
            }
            if ops.iter().any(|k| k.type_id == o.type_id) {
                return Err(LoadError::Corrupt {
                    what: "a type is listed twice",
                });
            }
            ops.push(o.clone());
        }
        Ok(ops)
    }
}

/// A guess of a save's size, so its buffer is allocated once: every row's entity and values
/// at their in-memory size, and the allocator.
fn save_size(world: &World, ops: &[&PersistOps]) -> usize {
    let values: usize = world
        .archetypes()
        .iter()
        .map(|archetype| {
            let row: usize = archetype
                .components()
                .iter()
                .map(|id| ops[id.index()].layout.size())
                .sum();
            archetype.len() * (row + ENTITY_BYTES) + 64
        })
        .sum();
    values + world.allocator_view().slots.len() * 4 + 1024
}

/// One archetype: its component ids, slabs, chunk ids, entities and one blob per column.
fn write_archetype(w: &mut Writer, archetype: &Archetype, ops: &[&PersistOps]) {
    let ids: Vec<u32> = archetype
        .components()
        .iter()
        .map(|c| c.index() as u32)
        .collect();
    w.u32s(&ids);
    w.u32s(&archetype.slab_sizes().collect::<Vec<_>>());
    w.u32s(&archetype.chunk_ids().collect::<Vec<_>>());
    // Pieces of known length go chunk by chunk, each fed to the checksum while in cache.
    w.u64(archetype.len() as u64);
    for chunk in archetype.chunks() {
        freyr_core::parts::append_entity_bits(chunk.entities(), &mut w.out);
        w.absorb();
    }
    for &id in archetype.components() {
        let o = ops[id.index()];
        match o.encoder {
            ColumnEncoder::Chunks(encode) => {
                w.u64((archetype.len() * o.layout.size()) as u64);
                for chunk in archetype.chunks() {
                    encode(&chunk, id, &mut w.out);
                    w.absorb();
                }
            }
            ColumnEncoder::Whole(encode) => w.blob(|out| {
                if !archetype.is_empty() {
                    encode(archetype, id, out);
                }
            }),
        }
    }
}

fn write_type(w: &mut Writer, o: &ColumnOps) {
    w.bytes(o.name.as_bytes());
    w.u32(o.version);
    w.u32(o.encoding.code());
    w.u64(o.layout.size() as u64);
    w.u64(o.layout.align() as u64);
}

fn write_entities(w: &mut Writer, entities: &[Entity]) {
    w.u64(entities.len() as u64);
    freyr_core::parts::append_entity_bits(entities, &mut w.out);
}

fn read_entities(r: &mut Reader<'_>) -> Result<Vec<Entity>, LoadError> {
    let n = r.count(8, "the entities")?;
    r.words::<8>(n, "the entities")?
        .map(|bits| {
            Entity::from_bits(u64::from_le_bytes(bits)).ok_or(LoadError::Corrupt {
                what: "an entity id is invalid",
            })
        })
        .collect()
}

fn read_archetype<'a>(
    r: &mut Reader<'a>,
    ops: &[PersistOps],
) -> Result<ArchetypeParts<'a>, LoadError> {
    let ids = r.u32s("an archetype's components")?;
    let slabs = r.u32s("an archetype's slabs")?;
    let chunk_ids = r.u32s("an archetype's chunks")?;
    let len = r.count(ENTITY_BYTES, "the entities")?;
    let entities = r.take(len * ENTITY_BYTES, "the entities")?;
    let mut components = Vec::with_capacity(ids.len());
    let mut columns = Vec::with_capacity(ids.len());
    for &id in &ids {
        let o = ops.get(id as usize).ok_or(LoadError::Corrupt {
            what: "an archetype names an unknown type",
        })?;
        let blob = r.bytes("a column")?;
        let values = (o.decode_column)(blob, len).ok_or(LoadError::Corrupt {
            what: "a column does not decode",
        })?;
        components.push(freyr_core::parts::component_info::<()>(id as usize).id());
        columns.push(values);
    }
    Ok(ArchetypeParts {
        components,
        slabs,
        chunk_ids,
        entities,
        columns,
    })
}

/// Writes `bytes` to a temporary file beside `path`, syncs it, renames it over `path` and
/// syncs the directory.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the save path names no file",
        )
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)?;
        #[cfg(unix)]
        std::fs::File::open(&dir)?.sync_all()?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
