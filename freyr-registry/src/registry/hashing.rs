//! Hashing the whole world without listing its types: the registry's hashed and excluded
//! component types, and [`Registry::world_hash_all`].

use freyr_core::Component;

use freyr_persist::hash::{StableHash, hash_world_with};
use freyr_persist::hashable::UnhashedComponents;
use freyr_query::access::Access;
use freyr_query::launch::inflight::OpAccess;

use super::Registry;

impl Registry {
    /// Registers `T` as hashed by [`world_hash_all`](Registry::world_hash_all), after the types
    /// registered before it. Registering a type again changes nothing. Touches no entity and
    /// never waits.
    ///
    /// Register every hashed type once, at start-up, in the same order in every run: the hash
    /// feeds the types in registration order, exactly as `world_hash::<(A, B, …)>()` feeds them
    /// in tuple order.
    ///
    /// # Panics
    ///
    /// If `T` was excluded with [`exclude_from_hash`](Registry::exclude_from_hash).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Registry, StableHash};
    /// use freyr::hash::StableHasher;
    ///
    /// struct Pos(f32);
    /// impl StableHash for Pos {
    ///     fn stable_hash(&self, h: &mut StableHasher) {
    ///         self.0.stable_hash(h);
    ///     }
    /// }
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.register_hashable::<Pos>();
    /// registry.spawn((Pos(1.0),));
    /// assert_eq!(registry.world_hash_all(), Ok(registry.world_hash::<(Pos,)>()));
    /// ```
    pub fn register_hashable<T: Component + StableHash>(&mut self) {
        self.guard("Registry::register_hashable");
        self.hashables.register::<T>();
    }

    /// Marks `T` as deliberately not hashed by [`world_hash_all`](Registry::world_hash_all) (a
    /// cache, a handle to something outside the simulation), so that it is not reported as
    /// forgotten. Excluding a type again changes nothing.
    ///
    /// # Panics
    ///
    /// If `T` was registered with [`register_hashable`](Registry::register_hashable).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct RenderHandle(u64);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.spawn((RenderHandle(0xdead),));
    /// assert!(registry.world_hash_all().is_err());
    /// registry.exclude_from_hash::<RenderHandle>();
    /// assert!(registry.world_hash_all().is_ok());
    /// ```
    pub fn exclude_from_hash<T: Component>(&mut self) {
        self.guard("Registry::exclude_from_hash");
        self.hashables.exclude::<T>();
    }

    /// Number of types registered with [`register_hashable`](Registry::register_hashable).
    pub fn hashable_count(&self) -> usize {
        self.hashables.len()
    }

    /// A hash of the whole world over every registered hashable type: every live entity in id
    /// order with the presence and value of each type, in registration order. Equal to
    /// `world_hash::<(A, B, …)>()` with the types in that order, so it has the same guarantees:
    /// independent of storage layout, worker count and run. The registered types are part of
    /// it: `disable` and the hierarchy's edits register theirs (`Disabled`, `ChildOf`,
    /// `Children`) on first use, so a registry that used them hashes unlike one that never
    /// did, even once no entity holds them; call [`register_disabled`](Registry::register_disabled)
    /// and [`register_hierarchy`](Registry::register_hierarchy) on both before comparing.
    /// Resources, the tick and the event stores are not part of it (it hashes the world):
    /// compare those yourself where a run's result lives in them.
    ///
    /// Waits for in-flight work that writes a hashed type; commands it recorded apply at the
    /// next sync point, not before the hash.
    ///
    /// # Errors
    ///
    /// [`UnhashedComponents`] when a live entity has a component type that was neither
    /// registered nor excluded, naming every such type: a value the hash cannot see could differ
    /// between two runs unnoticed.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Registry, StableHash};
    /// use freyr::hash::StableHasher;
    ///
    /// struct Health(u32);
    /// impl StableHash for Health {
    ///     fn stable_hash(&self, h: &mut StableHasher) {
    ///         self.0.stable_hash(h);
    ///     }
    /// }
    /// struct Poisoned; // a tag
    /// impl StableHash for Poisoned {
    ///     fn stable_hash(&self, _: &mut StableHasher) {}
    /// }
    ///
    /// let run = |workers: usize| {
    ///     let mut registry = Registry::with_workers(workers);
    ///     registry.register_hashable::<Health>();
    ///     registry.register_hashable::<Poisoned>();
    ///     registry.spawn_batch((0..2000).map(|i| (Health(i),)));
    ///     registry.spawn_batch((0..10).map(|i| (Health(i), Poisoned)));
    ///     registry
    ///         .query::<(&mut Health, Option<&Poisoned>)>()
    ///         .each_async(|_, (h, poisoned)| {
    ///             if poisoned.is_some() {
    ///                 h.0 = h.0.saturating_sub(1);
    ///             }
    ///         });
    ///     registry.world_hash_all().unwrap()
    /// };
    /// assert_eq!(run(1), run(4));
    /// ```
    pub fn world_hash_all(&self) -> Result<u64, UnhashedComponents> {
        self.guard("Registry::world_hash_all");
        // Which types live entities have, and the hashed types' ids: layout only, no waiting.
        let layout = self.sync.read(&OpAccess::Layout, &self.profiler);
        let type_names = self.hashables.unaccounted(layout);
        if !type_names.is_empty() {
            return Err(UnhashedComponents { type_names });
        }
        let mut access = Access::new();
        self.hashables.access(layout, &mut access);
        let world = self
            .sync
            .read(&OpAccess::Components(&access), &self.profiler);
        Ok(hash_world_with(world, |world, entity, h| {
            self.hashables.hash_entity(world, entity, h);
        }))
    }
}
