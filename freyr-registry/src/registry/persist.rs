//! Persistence of a registry: [`Registry::register_persistent`] and
//! [`Registry::register_persistent_pod`] and the registry's table of persistent types. Saves
//! are in `save`, loads (a loaded world is built like a restored snapshot) in `load`,
//! [`Registry::export`] / [`Registry::import`] in `handoff`; the bytes they write and read are
//! laid out by freyr-persist's `persist::body`, beside the format's description.

mod file;
mod handoff;
mod load;
mod relation;
mod save;

use freyr_core::{AppliedCommand, BundleTypes, Component, Entity, World};
use serde::Serialize;
use serde::de::DeserializeOwned;

use freyr_persist::persist::format::Reader;
use freyr_persist::persist::ops::{Codec, SerdeCodec, decoded};
use freyr_persist::persist::{ColumnEncoding, ColumnOps, Decoded, LoadError, RemapAny, RemapFn};

use super::Registry;

/// One persistent component type: its [`ColumnOps`] and how its values enter a registry whose
/// hooks must see every insert.
#[derive(Clone)]
pub(crate) struct PersistOps {
    pub(crate) column: ColumnOps,
    /// Inserts decoded values, one per entity, into the world, recording each insert for the
    /// hooks (which run once the whole import is in).
    pub(crate) insert_hooked: fn(&mut World, Decoded, &[Entity], &mut Vec<AppliedCommand>),
}

impl core::ops::Deref for PersistOps {
    type Target = ColumnOps;

    fn deref(&self) -> &ColumnOps {
        &self.column
    }
}

fn insert_hooked<T: Component>(
    world: &mut World,
    values: Decoded,
    entities: &[Entity],
    changes: &mut Vec<AppliedCommand>,
) {
    for (value, &entity) in decoded::<T>(values).into_iter().zip(entities) {
        let (before, _, _) = world
            .entity_location(entity)
            .expect("an imported entity was just spawned");
        world
            .insert(entity, (value,))
            .expect("an imported entity was just spawned");
        changes.push(AppliedCommand::Insert {
            entity,
            before,
            types: BundleTypes::of::<(T,)>(),
        });
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

impl Registry {
    /// Registers component `T` for saves and exports under the stable `name` and `version`
    /// (the file names types by these, so programs that touch their types in another order,
    /// or another build, read the same file). Also registers `T` for snapshots by `Clone` if
    /// it was not registered for them yet.
    ///
    /// # Panics
    ///
    /// If `T` is persistent under another name, or `name` is taken by another type; if `T` is
    /// [`ChildOf`](crate::hierarchy::ChildOf) or [`Children`](crate::hierarchy::Children)
    /// (use [`register_hierarchy`](Registry::register_hierarchy)).
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
        super::hierarchy::refuse_kept_registration::<T>("saves");
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
        use freyr_persist::persist::ops::RawCodec;
        self.guard("Registry::register_persistent_pod");
        if !self.snapshot_types.components.is_registered::<T>() {
            self.snapshot_types.components.register_copy::<T>();
        }
        let ops = PersistOps::of::<T, RawCodec>(name, version, None);
        self.persist_types.add(ops, core::any::type_name::<T>());
    }

    /// As [`register_persistent`](Registry::register_persistent), with a hook that rewrites
    /// the `Entity` fields of an imported value through the import's [`EntityMap`](freyr_persist::persist::EntityMap). A
    /// reference to an entity outside the export has no new id ([`EntityMap::get`](freyr_persist::persist::EntityMap::get) is `None`):
    /// the hook decides (the guide's pattern: keep it as `None`).
    ///
    /// # Panics
    ///
    /// As [`register_persistent`](Registry::register_persistent).
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
        super::hierarchy::refuse_kept_registration::<T>("saves");
        self.persistent_with_remap(name, version, remap);
    }

    /// [`register_persistent_with_remap`](Registry::register_persistent_with_remap) without its
    /// refusal of the relation's types: for `register_hierarchy`.
    pub(crate) fn persistent_with_remap<T>(
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
