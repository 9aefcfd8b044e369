//! Persistence of a registry: [`Registry::register_persistent`], saves and loads (a loaded
//! world is built like a restored snapshot), and [`Registry::export`] / [`Registry::import`].

use std::io::Write;
use std::path::Path;

use freyr_core::snapshot::{AllocatorParts, ArchetypeParts, SnapshotParts, WorldSnapshot};
use freyr_core::{Component, Entity};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::persist::format::{Reader, Writer, open};
use crate::persist::{EntityMap, LoadError, PersistOps, RemapFn, SaveError};
use crate::snapshot::Snapshot;

use super::Registry;

/// The magic of a whole-registry save.
const SAVE_MAGIC: &[u8; 8] = b"FREYRSAV";
/// The magic of an entity export.
const EXPORT_MAGIC: &[u8; 8] = b"FREYREXP";

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
        self.add_persistent::<T>(PersistOps::of::<T>(name, version, None));
    }

    /// As [`register_persistent`](Registry::register_persistent), with a hook that rewrites
    /// the `Entity` fields of an imported value through the import's [`EntityMap`]. A
    /// reference to an entity outside the export has no new id ([`EntityMap::get`] is `None`):
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
        self.add_persistent::<T>(PersistOps::of::<T>(name, version, Some(remap)));
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
        let snapshot = self.snapshot().map_err(SaveError::Snapshot)?;
        let world = snapshot.world();
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
        let mut w = Writer::new(SAVE_MAGIC);
        w.u64(snapshot.tick());
        w.u32(ops.len() as u32);
        for o in &ops {
            write_type(&mut w, o);
        }
        let a = world.allocator_parts();
        w.u32s(&a.slots);
        w.u32s(&a.free);
        w.u64(a.len as u64);
        w.u64(a.chunk_ids as u64);
        w.u32s(&a.free_chunks);
        w.u64(world.archetype_count() as u64);
        for index in 0..world.archetype_count() {
            let view = world.archetype_view(index);
            let ids: Vec<u32> = view.components().iter().map(|c| c.index() as u32).collect();
            w.u32s(&ids);
            w.u32s(view.slabs());
            w.u32s(view.chunk_ids());
            write_entities(&mut w, view.entities());
            for (column, id) in view.components().iter().enumerate() {
                if view.is_empty() {
                    w.bytes(&[]);
                } else {
                    w.bytes(&(ops[id.index()].encode_column)(&view, column));
                }
            }
        }
        Ok(w.finish())
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
        let body = open(bytes, SAVE_MAGIC)?;
        let mut r = Reader { rest: body };
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
        let parts = SnapshotParts {
            components,
            allocator,
            archetypes,
        };
        let world = WorldSnapshot::from_parts(parts, &self.snapshot_types.components)
            .map_err(|e| LoadError::Corrupt { what: e.0 })?;
        let snapshot = Snapshot {
            world,
            tick,
            resources: Vec::new(),
            complete: true,
        };
        self.restore(&snapshot).map_err(LoadError::Snapshot)
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
            let (version, size, align) =
                (r.u32("a version")?, r.u64("a size")?, r.u64("an align")?);
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
            if ops.iter().any(|k| k.type_id == o.type_id) {
                return Err(LoadError::Corrupt {
                    what: "a type is listed twice",
                });
            }
            ops.push(o.clone());
        }
        Ok(ops)
    }

    /// The entities `entities` with every persistent component they have, as bytes for
    /// [`import`](Registry::import) into another registry (another server). Components with
    /// no persistent name are left out. Reads only.
    ///
    /// # Errors
    ///
    /// [`SaveError::Snapshot`] inside `update` or while work waits for a sync point.
    ///
    /// # Panics
    ///
    /// If an entity is not alive or listed twice.
    pub fn export(&self, entities: &[Entity]) -> Result<Vec<u8>, SaveError> {
        self.guard("Registry::export");
        self.check_quiet().map_err(SaveError::Snapshot)?;
        let mut seen = hashbrown::HashSet::with_capacity(entities.len());
        for &e in entities {
            assert!(
                self.contains(e),
                "freyr: export of {e:?}, which is not alive; export live entities"
            );
            assert!(
                seen.insert(e),
                "freyr: {e:?} is listed twice in an export; list each once"
            );
        }
        // Group the entities by the set of persistent types they have, in first-seen order.
        let ops = &self.persist_types.ops;
        let mut groups: Vec<(Vec<usize>, Vec<Entity>)> = Vec::new();
        for &e in entities {
            let set: Vec<usize> = (0..ops.len()).filter(|&i| (ops[i].has)(self, e)).collect();
            match groups.iter_mut().find(|(s, _)| *s == set) {
                Some((_, members)) => members.push(e),
                None => groups.push((set, vec![e])),
            }
        }
        let mut w = Writer::new(EXPORT_MAGIC);
        w.u32(ops.len() as u32);
        for o in ops {
            write_type(&mut w, o);
        }
        w.u64(groups.len() as u64);
        for (set, members) in &groups {
            let set: Vec<u32> = set.iter().map(|&i| i as u32).collect();
            w.u32s(&set);
            write_entities(&mut w, members);
            for &i in &set {
                w.bytes(&(ops[i as usize].encode_entities)(self, members));
            }
        }
        Ok(w.finish())
    }

    /// Spawns the entities of an [`export`](Registry::export) with new ids, in export order,
    /// and returns the old→new [`EntityMap`]. `Entity` fields inside components are rewritten
    /// by the remap hooks given to
    /// [`register_persistent_with_remap`](Registry::register_persistent_with_remap). Every
    /// byte is checked and decoded before anything is spawned.
    ///
    /// # Errors
    ///
    /// A [`LoadError`] naming what is wrong; the registry is then unchanged.
    pub fn import(&mut self, bytes: &[u8]) -> Result<EntityMap, LoadError> {
        self.guard("Registry::import");
        self.check_quiet().map_err(LoadError::Snapshot)?;
        let body = open(bytes, EXPORT_MAGIC)?;
        let mut r = Reader { rest: body };
        let ops = self.read_types(&mut r)?;
        let groups = r.count(1, "the group count")?;
        let mut decoded = Vec::new();
        for _ in 0..groups {
            let set = r.u32s("a group's types")?;
            let olds = read_entities(&mut r)?;
            let mut columns = Vec::with_capacity(set.len());
            for &i in &set {
                let o = ops.get(i as usize).ok_or(LoadError::Corrupt {
                    what: "a group names an unknown type",
                })?;
                let blob = r.bytes("a column")?;
                let values = (o.decode_values)(blob, olds.len()).ok_or(LoadError::Corrupt {
                    what: "a column does not decode",
                })?;
                columns.push((o.clone(), values));
            }
            decoded.push((olds, columns));
        }
        r.end()?;
        let mut pairs = Vec::new();
        let mut news = Vec::with_capacity(decoded.len());
        for (olds, _) in &decoded {
            let group: Vec<Entity> = olds.iter().map(|_| self.spawn(())).collect();
            pairs.extend(olds.iter().copied().zip(group.iter().copied()));
            news.push(group);
        }
        let map = EntityMap::new(pairs);
        for ((_, columns), group) in decoded.into_iter().zip(&news) {
            for (o, values) in columns {
                (o.insert_values)(self, values, group, &map, o.remap.as_ref());
            }
        }
        Ok(map)
    }
}

fn write_type(w: &mut Writer, o: &PersistOps) {
    w.bytes(o.name.as_bytes());
    w.u32(o.version);
    w.u64(o.layout.size() as u64);
    w.u64(o.layout.align() as u64);
}

fn write_entities(w: &mut Writer, entities: &[Entity]) {
    w.u64(entities.len() as u64);
    w.out.reserve(entities.len() * 8);
    for e in entities {
        w.u64(e.to_bits());
    }
}

fn read_entities(r: &mut Reader<'_>) -> Result<Vec<Entity>, LoadError> {
    let n = r.count(8, "the entities")?;
    (0..n)
        .map(|_| {
            let bits = r.u64("an entity")?;
            Entity::from_bits(bits).ok_or(LoadError::Corrupt {
                what: "an entity id is invalid",
            })
        })
        .collect()
}

fn read_archetype(r: &mut Reader<'_>, ops: &[PersistOps]) -> Result<ArchetypeParts, LoadError> {
    let ids = r.u32s("an archetype's components")?;
    let slabs = r.u32s("an archetype's slabs")?;
    let chunk_ids = r.u32s("an archetype's chunks")?;
    let entities = read_entities(r)?;
    let mut components = Vec::with_capacity(ids.len());
    let mut columns = Vec::with_capacity(ids.len());
    for &id in &ids {
        let o = ops.get(id as usize).ok_or(LoadError::Corrupt {
            what: "an archetype names an unknown type",
        })?;
        let blob = r.bytes("a column")?;
        let values = (o.decode_column)(blob, entities.len()).ok_or(LoadError::Corrupt {
            what: "a column does not decode",
        })?;
        components.push(freyr_core::snapshot::component_info::<()>(id as usize).id());
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
