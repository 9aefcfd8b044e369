//! The component types a registry hashes without being told each time: [`Hashables`] (which
//! types, in which order, which are deliberately left out) and [`UnhashedComponents`], the error
//! that names a type in the world that is neither.
//!
//! `Registry::world_hash::<C>` hashes the types a caller lists;
//! a type the list forgets can differ between two runs without changing the hash. The registry
//! keeps a list instead (`Registry::register_hashable`,
//! `Registry::exclude_from_hash`), and
//! `Registry::world_hash_all` refuses to hash a world in which
//! any live entity has a component type that is on neither list.

use core::any::{TypeId, type_name};
use core::fmt;

use freyr_core::{Component, ComponentId, Entity, World};

use crate::hash::ColumnFns;
use crate::hash::{StableHash, StableHasher};
use freyr_query::access::Access;

/// One type `world_hash_all` hashes: the monomorphised functions that resolve its id and hash
/// one entity's value.
struct Hashed {
    type_id: TypeId,
    /// Resolves the type's id in a world; reads no component value.
    id_in: fn(&World) -> Option<ComponentId>,
    /// Feeds `Option<&T>` of one entity, exactly as `world_hash::<(.., T, ..)>` does.
    hash: fn(&World, Entity, &mut StableHasher),
    /// Hashes a chunk's column of `T`, or one row of it, for the world digest.
    column: ColumnFns,
}

fn hash_one<T: Component + StableHash>(world: &World, entity: Entity, h: &mut StableHasher) {
    world.get::<T>(entity).ok().stable_hash(h);
}

/// The registry's hashed types, in registration order, and its excluded types.
#[derive(Default)]
pub struct Hashables {
    hashed: Vec<Hashed>,
    excluded: Vec<TypeId>,
}

impl Hashables {
    /// Adds `T` to the hashed types, after those already there; a second call is a no-op.
    ///
    /// # Panics
    /// If `T` was excluded.
    pub fn register<T: Component + StableHash>(&mut self) {
        let type_id = TypeId::of::<T>();
        if self.excluded.contains(&type_id) {
            panic!(
                "freyr: register_hashable::<{}>() after exclude_from_hash::<{0}>(): a type is \
                 either hashed or excluded; remove one of the two calls",
                type_name::<T>()
            );
        }
        if self.hashed.iter().all(|h| h.type_id != type_id) {
            self.hashed.push(Hashed {
                type_id,
                id_in: World::component_id::<T>,
                hash: hash_one::<T>,
                column: ColumnFns::of::<T>(),
            });
        }
    }

    /// Marks `T` as deliberately not hashed; a second call is a no-op.
    ///
    /// # Panics
    /// If `T` is registered as hashed.
    pub fn exclude<T: Component>(&mut self) {
        let type_id = TypeId::of::<T>();
        if self.hashed.iter().any(|h| h.type_id == type_id) {
            panic!(
                "freyr: exclude_from_hash::<{}>() after register_hashable::<{0}>(): a type is \
                 either hashed or excluded; remove one of the two calls",
                type_name::<T>()
            );
        }
        if !self.excluded.contains(&type_id) {
            self.excluded.push(type_id);
        }
    }

    /// How a component type joins the world digest: `Some(Some(_))` hashed, `Some(None)`
    /// excluded, `None` neither.
    pub(crate) fn column_fns(&self, type_id: TypeId) -> Option<Option<ColumnFns>> {
        if let Some(h) = self.hashed.iter().find(|h| h.type_id == type_id) {
            Some(Some(h.column))
        } else if self.excluded.contains(&type_id) {
            Some(None)
        } else {
            None
        }
    }

    /// Number of hashed types.
    pub fn len(&self) -> usize {
        self.hashed.len()
    }

    /// Whether no type is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The component types of live entities in `world` that are neither hashed nor excluded, in
    /// component-id order. Reads only the layout (archetypes and component infos).
    pub fn unaccounted(&self, world: &World) -> Vec<&'static str> {
        let mut missing: Vec<ComponentId> = Vec::new();
        for archetype in world.archetypes().iter().filter(|a| !a.is_empty()) {
            for &id in archetype.components() {
                let type_id = world.component_info(id).type_id();
                let known = self.excluded.contains(&type_id)
                    || self.hashed.iter().any(|h| h.type_id == type_id);
                if !known && !missing.contains(&id) {
                    missing.push(id);
                }
            }
        }
        missing.sort_unstable();
        missing
            .into_iter()
            .map(|id| world.component_info(id).name())
            .collect()
    }

    /// Adds a read of every hashed type the world knows to `access`. Resolves ids only.
    pub fn access(&self, world: &World, access: &mut Access) {
        for h in &self.hashed {
            if let Some(id) = (h.id_in)(world) {
                access.add_read(id);
            }
        }
    }

    /// Feeds every hashed type of `entity`, in registration order.
    pub fn hash_entity(&self, world: &World, entity: Entity, h: &mut StableHasher) {
        for hashed in &self.hashed {
            (hashed.hash)(world, entity, h);
        }
    }
}

/// `Registry::world_hash_all` found live entities with
/// component types that are neither registered as hashable nor excluded from the hash: a value
/// of such a type could differ between two runs without the hash showing it.
///
/// # Examples
///
/// ```
/// use freyr::Registry;
///
/// struct Secret(u32);
///
/// let mut registry = Registry::with_workers(1);
/// registry.spawn((Secret(7),));
/// let err = registry.world_hash_all().unwrap_err();
/// assert_eq!(err.type_names.len(), 1);
/// assert!(err.to_string().contains("Secret"));
/// assert!(err.to_string().contains("register_hashable"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnhashedComponents {
    /// `core::any::type_name` of each such type, in component-id order.
    pub type_names: Vec<&'static str>,
}

impl fmt::Display for UnhashedComponents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the world hash would not see ")?;
        for (i, name) in self.type_names.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "`{name}`")?;
        }
        write!(
            f,
            "; register each with `registry.register_hashable::<T>()` (it needs `StableHash`: \
             `#[derive(StableHash)]`), or leave it out on purpose with \
             `registry.exclude_from_hash::<T>()`"
        )
    }
}

impl std::error::Error for UnhashedComponents {}
