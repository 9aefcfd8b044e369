//! The world through the registry: shared and exclusive access, spawning, despawning,
//! inserting, removing and reading components, deferred destruction.

use freyr_core::{
    AppliedCommand, Bundle, BundleTypes, Component, ComponentError, Entity, NoSuchEntity, World,
};

use freyr_query::launch::inflight::OpAccess;

use super::Registry;

impl Registry {
    /// The world, shared. Waits for in-flight work that writes any component.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.spawn((1u8,));
    /// assert_eq!(registry.world().len(), 1);
    /// ```
    pub fn world(&self) -> &World {
        self.guard("Registry::world");
        self.sync.read(&OpAccess::WorldRead, &self.profiler)
    }

    /// The world, exclusively. Waits for all in-flight work (it may change anything). Recorded
    /// commands stay pending until the next sync point.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let e = registry.world_mut().spawn((1u8,));
    /// assert!(registry.contains(e));
    /// ```
    pub fn world_mut(&mut self) -> &mut World {
        self.guard("Registry::world_mut");
        self.sync.write(&self.profiler)
    }

    /// Spawns an entity now (waiting for all in-flight work first).
    ///
    /// # Panics
    ///
    /// As [`World::spawn`]: if the bundle names a component type twice, or the world would
    /// pass one of its [capacity limits](World#capacity-limits) (2^22 chunks of rows, 2^32
    /// entity indices, 2^32 − 1 archetypes, 2^32 component types).
    /// Before anything changes, if the bundle holds a
    /// [`ChildOf`](crate::hierarchy::ChildOf) or a [`Children`](crate::hierarchy::Children):
    /// the registry keeps both sides of the relation (`spawn_child`, `set_parent`).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let e = registry.spawn((1u8, 2.0f32));
    /// assert_eq!(registry.get::<f32>(e), Ok(&2.0));
    /// ```
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        freyr_core::refuse_kept::<B>("Registry::spawn");
        let entity = self.world_mut().spawn(bundle);
        self.after_direct(AppliedCommand::Spawn {
            entity,
            types: BundleTypes::of::<B>(),
        });
        entity
    }

    /// Spawns one entity per bundle now, filling chunks directly; returns them in order.
    ///
    /// # Panics
    ///
    /// As [`World::spawn_batch`]: if the bundle names a component type twice, the iterator
    /// panics, or the batch would pass one of the world's [capacity
    /// limits](World#capacity-limits).
    /// Before anything changes, if the bundle holds a
    /// [`ChildOf`](crate::hierarchy::ChildOf) or a [`Children`](crate::hierarchy::Children):
    /// the registry keeps both sides of the relation (`spawn_child`, `set_parent`).
    /// After the batch, if a [hook](crate::hooks) panics: the batch is one operation, so the
    /// hooks of all its spawns run (in batch order, before any of their commands apply) and the
    /// first panic is re-raised after them; every entity stays spawned.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let es = registry.spawn_batch((0..3u32).map(|i| (i,)));
    /// assert_eq!(es.len(), 3);
    /// assert_eq!(registry.get::<u32>(es[2]), Ok(&2));
    /// ```
    pub fn spawn_batch<B: Bundle, I: IntoIterator<Item = B>>(&mut self, iter: I) -> Vec<Entity> {
        freyr_core::refuse_kept::<B>("Registry::spawn_batch");
        let entities = self.world_mut().spawn_batch(iter);
        self.after_direct_spawns(&entities, BundleTypes::of::<B>());
        entities
    }

    /// Despawns `entity` now (waiting for all in-flight work first). See also
    /// [`destroy_entity`](Registry::destroy_entity), which defers to the next sync point.
    ///
    /// An entity in the [hierarchy](crate::hierarchy) leaves its parent's children, and its
    /// descendants are despawned with it, after it, in
    /// [`descendants`](Registry::descendants) order (breadth first, each parent's children in
    /// order), each with its hooks; a panicking `Drop` or hook stops none of it, and the
    /// first panic is re-raised afterwards.
    ///
    /// # Errors
    ///
    /// [`NoSuchEntity`] (naming `entity`) if the handle is stale.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let e = registry.spawn((1u8,));
    /// assert!(registry.despawn(e).is_ok());
    /// assert!(registry.despawn(e).is_err());
    /// ```
    pub fn despawn(&mut self, entity: Entity) -> Result<(), NoSuchEntity> {
        if self.hierarchy_in_use() {
            return self.despawn_tree(entity);
        }
        self.despawn_one(entity)
    }

    /// Despawns `entity` alone, with its hooks.
    pub(super) fn despawn_one(&mut self, entity: Entity) -> Result<(), NoSuchEntity> {
        let before = self.hook_before(entity);
        self.world_mut().despawn(entity)?;
        if let Some(before) = before {
            self.after_direct(AppliedCommand::Despawn { entity, before });
        }
        Ok(())
    }

    /// Inserts `bundle` into `entity` now (waiting for all in-flight work first).
    ///
    /// # Errors
    ///
    /// [`NoSuchEntity`] (naming `entity`) if the handle is stale.
    ///
    /// # Panics
    ///
    /// As [`World::insert`]: if the bundle names a component type twice, an overwritten value's
    /// `Drop` panics, or the move would pass one of the world's [capacity
    /// limits](World#capacity-limits).
    /// Before anything changes, if the bundle holds a
    /// [`ChildOf`](crate::hierarchy::ChildOf) or a [`Children`](crate::hierarchy::Children):
    /// the registry keeps both sides of the relation (`spawn_child`, `set_parent`).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let e = registry.spawn((1u8,));
    /// registry.insert(e, (2u16,)).unwrap();
    /// assert_eq!(registry.get::<u16>(e), Ok(&2));
    /// ```
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) -> Result<(), NoSuchEntity> {
        freyr_core::refuse_kept::<B>("Registry::insert");
        let before = self.hook_before(entity);
        self.world_mut().insert(entity, bundle)?;
        if let Some(before) = before {
            self.after_direct(AppliedCommand::Insert {
                entity,
                before,
                types: BundleTypes::of::<B>(),
            });
        }
        Ok(())
    }

    /// Removes the components of `B` from `entity` now (waiting for all in-flight work first).
    ///
    /// # Errors
    ///
    /// [`ComponentError`] (naming `entity`) if the handle is stale or the entity lacks a
    /// component of `B`.
    ///
    /// # Panics
    ///
    /// As [`World::remove`]: if `B` names a component type twice, or the move would pass one of
    /// the world's [capacity limits](World#capacity-limits).
    /// Before anything changes, if `B` names [`ChildOf`](crate::hierarchy::ChildOf) or
    /// [`Children`](crate::hierarchy::Children) (use [`remove_parent`](Registry::remove_parent)).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let e = registry.spawn((1u8, 2u16));
    /// assert_eq!(registry.remove::<(u16,)>(e), Ok((2,)));
    /// assert!(registry.get::<u16>(e).is_err());
    /// ```
    pub fn remove<B: Bundle>(&mut self, entity: Entity) -> Result<B, ComponentError> {
        freyr_core::refuse_kept::<B>("Registry::remove");
        self.remove_any(entity)
    }

    /// [`remove`](Registry::remove) without its refusal of the relation's types: for the
    /// hierarchy code, which keeps both sides itself.
    pub(crate) fn remove_any<B: Bundle>(&mut self, entity: Entity) -> Result<B, ComponentError> {
        let before = self.hook_before(entity);
        let removed = self.world_mut().remove::<B>(entity)?;
        if let Some(before) = before {
            self.after_direct(AppliedCommand::Remove { entity, before });
        }
        Ok(removed)
    }

    /// `entity`'s `T`. Waits only for in-flight work that writes `T` in `entity`'s archetype.
    ///
    /// # Errors
    ///
    /// [`ComponentError::NoSuchEntity`] for a stale handle,
    /// [`ComponentError::MissingComponent`] if the entity has no `T`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let e = registry.spawn((3i64,));
    /// assert_eq!(registry.get::<i64>(e), Ok(&3));
    /// assert!(registry.get::<u8>(e).is_err());
    /// ```
    pub fn get<T: Component>(&self, entity: Entity) -> Result<&T, ComponentError> {
        self.guard("Registry::get");
        let op = match (
            self.sync.component_id::<T>(),
            self.sync.entity_location(entity),
        ) {
            (Some(id), Some((archetype, _, _))) => OpAccess::ReadOne(id, archetype),
            // Nothing to read: the world answers with an error and touches no value.
            _ => OpAccess::Layout,
        };
        self.sync.read(&op, &self.profiler).get::<T>(entity)
    }

    /// `entity`'s `T`, mutably. Waits only for in-flight work that reads or writes `T` in
    /// `entity`'s archetype.
    ///
    /// # Errors
    ///
    /// As [`get`](Registry::get).
    ///
    /// # Panics
    ///
    /// If `T` is [`ChildOf`](crate::hierarchy::ChildOf) or
    /// [`Children`](crate::hierarchy::Children): the registry keeps both sides of the relation,
    /// and an overwritten copy (or a taken list) would break it. Read them with
    /// [`get`](Registry::get); change them with [`set_parent`](Registry::set_parent),
    /// [`spawn_child`](Registry::spawn_child) and [`remove_parent`](Registry::remove_parent).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let e = registry.spawn((3i64,));
    /// *registry.get_mut::<i64>(e).unwrap() += 1;
    /// assert_eq!(registry.get::<i64>(e), Ok(&4));
    /// ```
    pub fn get_mut<T: Component>(&mut self, entity: Entity) -> Result<&mut T, ComponentError> {
        freyr_core::refuse_kept::<(T,)>("Registry::get_mut");
        self.guard("Registry::get_mut");
        self.sync.component_mut::<T>(entity, &self.profiler)
    }

    /// Whether `entity` is alive. Never waits.
    pub fn contains(&self, entity: Entity) -> bool {
        self.sync.contains(entity)
    }

    /// Number of live entities. Never waits.
    pub fn len(&self) -> usize {
        self.sync.len()
    }

    /// Whether no entity is alive. Never waits.
    pub fn is_empty(&self) -> bool {
        self.sync.len() == 0
    }

    /// Queues `entity` for destruction at the next sync point (after that sync point's commands).
    /// A handle that is stale by then is skipped and counted as a stale command. An entity in
    /// the [hierarchy](crate::hierarchy) takes its descendants with it, as
    /// [`despawn`](Registry::despawn) does. To despawn now
    /// instead (waiting for in-flight work first), use [`despawn`](Registry::despawn); to record
    /// a despawn from inside a callback, [`Commands::despawn`](crate::Commands::despawn).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let e = registry.spawn((1u8,));
    /// registry.destroy_entity(e);
    /// assert!(registry.contains(e));
    /// registry.execute_tasks();
    /// assert!(!registry.contains(e));
    /// ```
    pub fn destroy_entity(&mut self, entity: Entity) {
        self.guard("Registry::destroy_entity");
        self.destroy_queue.push(entity);
    }
}
