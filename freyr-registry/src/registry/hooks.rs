//! Registering component hooks and running them after direct world operations. When and in
//! which order hooks run is in [`hooks`](crate::hooks).

use core::any::TypeId;
use std::panic;

use freyr_core::{AppliedCommand, ArchetypeId, BundleTypes, Component, Entity};

use crate::hooks::{HookKind, HookLog};
use freyr_query::commands::Commands;

use super::Registry;

impl Registry {
    /// Registers `hook` to run when an entity gains a `T` it did not have (spawn, or an insert
    /// that adds `T`). It gets the entity and a [`Commands`] whose commands apply right after
    /// this round of hooks; see [`hooks`](crate::hooks) for when hooks run.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct Player;
    /// struct Inventory(Vec<u32>);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.on_add::<Player>(|entity, commands| {
    ///     commands.insert(entity, (Inventory(Vec::new()),));
    /// });
    /// let e = registry.spawn((Player,));
    /// assert!(registry.get::<Inventory>(e).is_ok());
    /// ```
    pub fn on_add<T: Component>(
        &mut self,
        hook: impl FnMut(Entity, &mut Commands<'_>) + Send + 'static,
    ) {
        self.register_hook::<T>(HookKind::Add, Box::new(hook));
    }

    /// Registers `hook` to run whenever a `T` is written by a spawn or an insert (added or
    /// overwritten).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use freyr::Registry;
    ///
    /// struct Health(u32);
    ///
    /// let writes = Arc::new(Mutex::new(0));
    /// let seen = writes.clone();
    /// let mut registry = Registry::with_workers(1);
    /// registry.on_insert::<Health>(move |_, _| *seen.lock().unwrap() += 1);
    /// let e = registry.spawn((Health(3),));
    /// registry.insert(e, (Health(2),)).unwrap();
    /// assert_eq!(*writes.lock().unwrap(), 2);
    /// ```
    pub fn on_insert<T: Component>(
        &mut self,
        hook: impl FnMut(Entity, &mut Commands<'_>) + Send + 'static,
    ) {
        self.register_hook::<T>(HookKind::Insert, Box::new(hook));
    }

    /// Registers `hook` to run after an entity lost its `T` (a remove of `T`, or a despawn). The
    /// value is gone by then; the entity too, after a despawn.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct Ship;
    /// struct Wreck;
    ///
    /// let mut registry = Registry::with_workers(2);
    /// registry.on_remove::<Ship>(|_, commands| {
    ///     commands.spawn((Wreck,));
    /// });
    /// let ship = registry.spawn((Ship,));
    /// registry.query::<&Ship>().each_async_with(|e, _, ctx| ctx.commands().despawn(e));
    /// registry.execute_tasks();
    /// assert!(!registry.contains(ship));
    /// assert_eq!(registry.query::<&Wreck>().count(), 1);
    /// ```
    pub fn on_remove<T: Component>(
        &mut self,
        hook: impl FnMut(Entity, &mut Commands<'_>) + Send + 'static,
    ) {
        self.register_hook::<T>(HookKind::Remove, Box::new(hook));
    }

    fn register_hook<T: Component>(&mut self, kind: HookKind, hook: crate::hooks::Hook) {
        self.guard("Registry::on_add/on_insert/on_remove");
        self.hooks.register(kind, TypeId::of::<T>(), hook);
    }

    /// The archetype `entity` is in before a direct operation, when hooks may need it.
    pub(super) fn hook_before(&self, entity: Entity) -> Option<ArchetypeId> {
        if self.hooks.is_empty() {
            return None;
        }
        self.sync.entity_location(entity).map(|l| l.0)
    }

    /// Runs the hooks a direct operation triggered (and their commands' hooks); re-raises the
    /// first panic after all ran.
    pub(super) fn after_direct(&mut self, applied: AppliedCommand) {
        self.after_direct_all(core::slice::from_ref(&applied));
    }

    /// [`after_direct`](Registry::after_direct) for a batch of spawns of one bundle type: one
    /// operation, so every spawn is observed before any hook runs (a hook's commands never run
    /// between the batch's spawns' hooks, and a panicking hook stops none of the others).
    pub(super) fn after_direct_spawns(&mut self, entities: &[Entity], types: BundleTypes) {
        if self.hooks.is_empty() {
            return;
        }
        let changes: Vec<AppliedCommand> = entities
            .iter()
            .map(|&entity| AppliedCommand::Spawn { entity, types })
            .collect();
        self.after_direct_all(&changes);
    }

    /// [`after_direct`](Registry::after_direct) for an operation that made several changes:
    /// each is observed in order, then the hooks run once.
    pub(super) fn after_direct_all(&mut self, changes: &[AppliedCommand]) {
        if self.hooks.is_empty() {
            return;
        }
        let world = self.sync.write(&self.profiler);
        let mut log = HookLog::new();
        for applied in changes {
            self.hooks.observe(&mut log, world, applied);
        }
        let panic = self
            .hooks
            .run(&mut log, world, super::hierarchy::apply_keeping_relation);
        self.register_relation_if_used();
        if let Some(p) = panic {
            panic::resume_unwind(p);
        }
    }
}
