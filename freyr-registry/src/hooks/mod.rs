//! Component hooks: `on_add`, `on_insert` and `on_remove` callbacks registered per component
//! type, run after the world operations that trigger them, with deferred access only.
//!
//! # When hooks run
//!
//! - For commands (recorded in callbacks and applied at a sync point) and entities queued with
//!   [`destroy_entity`](crate::Registry::destroy_entity): after every command of the sync point
//!   was applied and every queued entity destroyed, in the order the operations ran.
//! - For the direct calls [`Registry::spawn`](crate::Registry::spawn), `spawn_batch`,
//!   `insert`, `remove` and `despawn`: right after the operation returns, before the call
//!   returns (an operation that panics runs no hooks). A `spawn_batch` is one operation: the
//!   hooks of all its spawns run in one round, in batch order, before their commands apply.
//!   So are the despawn of a subtree, an `import`, and a `clone_entity`, `clone_tree` or
//!   `instantiate`: every entity goes or arrives whole first, then the hooks run in the order
//!   of the changes, and no hook's commands apply in the middle.
//! - Never for [`Registry::restore`](crate::Registry::restore) (a restore brings back a state,
//!   it performs no operations), nor for a load, nor for changes made through
//!   [`world_mut`](crate::Registry::world_mut), nor when the registry is dropped (no `on_remove`
//!   for the entities still alive; commands still waiting for a sync point are dropped).
//!
//! A hook always runs after its operation completed, never inside a row move, and gets the
//! entity and a [`Commands`] to record into; it never gets the registry or the world. The
//! commands the hooks of one round record are applied right after that round, in hook order,
//! and may trigger hooks of their own (the next round); after [`MAX_HOOK_ROUNDS`] rounds that
//! still trigger hooks, the rest is dropped and a panic is raised: every command of the rounds
//! that ran stays applied, the hooks the last round's commands triggered do not run, and the
//! next call or sync point gets rounds of its own.
//!
//! # Which hooks an operation triggers
//!
//! - spawn: `on_add` then `on_insert` for each component of the bundle, in bundle order;
//! - insert: `on_add` for each component the entity did not have, then `on_insert` for each
//!   component of the bundle (new or overwritten), in bundle order;
//! - remove: `on_remove` for each removed component; despawn: `on_remove` for each component the
//!   entity had (both in component-id order). The values are gone when the hook runs.
//!
//! Several hooks of one kind for one type run in registration order.
//!
//! # Panics
//!
//! A panicking hook loses its own recorded commands (like a panicking task); every other
//! operation and hook still runs, and the first panic (commands first, then hooks) is re-raised
//! by the sync point or the direct call afterwards.

use core::any::{Any, TypeId};

/// How [`Hooks::run`] applies the commands the hooks recorded: every change goes to the
/// observer; returns the first panic.
pub(crate) type ApplyCommands = fn(
    &mut World,
    &mut CommandBuffer,
    &mut dyn FnMut(&World, &AppliedCommand),
) -> Option<Box<dyn Any + Send>>;
use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};

use freyr_core::{AppliedCommand, BundleTypes, CommandBuffer, Entity, World};

use freyr_query::commands::Commands;
use freyr_sched::keep_first;

/// How many rounds of hook-triggered commands one sync point or direct call runs at most.
pub const MAX_HOOK_ROUNDS: usize = 64;

/// A hook: the entity and the commands to record into.
pub(crate) type Hook = Box<dyn FnMut(Entity, &mut Commands<'_>) + Send>;

/// Which moment a hook reacts to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HookKind {
    Add,
    Insert,
    Remove,
}

#[derive(Default)]
struct TypeHooks {
    add: Vec<Hook>,
    insert: Vec<Hook>,
    remove: Vec<Hook>,
}

impl TypeHooks {
    fn of(&mut self, kind: HookKind) -> &mut Vec<Hook> {
        match kind {
            HookKind::Add => &mut self.add,
            HookKind::Insert => &mut self.insert,
            HookKind::Remove => &mut self.remove,
        }
    }

    fn has(&self, kind: HookKind) -> bool {
        match kind {
            HookKind::Add => !self.add.is_empty(),
            HookKind::Insert => !self.insert.is_empty(),
            HookKind::Remove => !self.remove.is_empty(),
        }
    }
}

/// The registered hooks, by component type.
#[derive(Default)]
pub(crate) struct Hooks {
    by_type: HashMap<TypeId, TypeHooks>,
}

/// The hooks an apply triggered, in order, waiting to run.
pub(crate) type HookLog = Vec<(HookKind, TypeId, Entity)>;

impl Hooks {
    pub(crate) fn register(&mut self, kind: HookKind, type_id: TypeId, hook: Hook) {
        self.by_type.entry(type_id).or_default().of(kind).push(hook);
    }

    /// Whether any hook is registered (no logging at all otherwise).
    pub(crate) fn is_empty(&self) -> bool {
        self.by_type.is_empty()
    }

    fn wants(&self, kind: HookKind, type_id: TypeId) -> bool {
        self.by_type.get(&type_id).is_some_and(|h| h.has(kind))
    }

    /// Logs the hooks one applied command triggers (see the module docs for which).
    pub(crate) fn observe(&self, log: &mut HookLog, world: &World, applied: &AppliedCommand) {
        match *applied {
            AppliedCommand::Spawn { entity, types } => {
                self.log_bundle(log, entity, types, |_| true);
            }
            AppliedCommand::Insert {
                entity,
                before,
                types,
            } => {
                let before = world.archetype(before);
                self.log_bundle(log, entity, types, |t| {
                    !before
                        .components()
                        .iter()
                        .any(|&id| world.component_info(id).type_id() == t)
                });
            }
            AppliedCommand::Remove { entity, before }
            | AppliedCommand::Despawn { entity, before } => {
                let after = world.entity_location(entity).map(|l| world.archetype(l.0));
                for &id in world.archetype(before).components() {
                    if after.is_some_and(|a| a.has(id)) {
                        continue;
                    }
                    let t = world.component_info(id).type_id();
                    if self.wants(HookKind::Remove, t) {
                        log.push((HookKind::Remove, t, entity));
                    }
                }
            }
        }
    }

    /// `on_add` for the bundle's types that `added` says are new, then `on_insert` for all.
    fn log_bundle(
        &self,
        log: &mut HookLog,
        entity: Entity,
        types: BundleTypes,
        added: impl Fn(TypeId) -> bool,
    ) {
        for t in types.iter() {
            if self.wants(HookKind::Add, t) && added(t) {
                log.push((HookKind::Add, t, entity));
            }
        }
        for t in types.iter() {
            if self.wants(HookKind::Insert, t) {
                log.push((HookKind::Insert, t, entity));
            }
        }
    }

    /// Runs the logged hooks in order, then applies their commands (logging what those trigger)
    /// and repeats, for at most [`MAX_HOOK_ROUNDS`] rounds. Returns the first panic.
    ///
    /// `apply` applies each round's commands (the registry's keeps the parent relation:
    /// a despawned parent's subtree goes with it) and passes every change to its observer.
    pub(crate) fn run(
        &mut self,
        log: &mut HookLog,
        world: &mut World,
        apply: ApplyCommands,
    ) -> Option<Box<dyn Any + Send>> {
        let mut first_panic = None;
        let (mut out, mut scratch) = (CommandBuffer::new(), CommandBuffer::new());
        let mut rounds = 0;
        while !log.is_empty() {
            if rounds == MAX_HOOK_ROUNDS {
                log.clear();
                let message = format!(
                    "freyr: hooks still triggered hooks after {MAX_HOOK_ROUNDS} rounds; the \
                     remaining hooks were not run (a hook that re-adds what triggered it loops)"
                );
                keep_first(&mut first_panic, Box::new(message));
                break;
            }
            rounds += 1;
            for (kind, t, entity) in log.drain(..) {
                let Some(hooks) = self.by_type.get_mut(&t) else {
                    continue;
                };
                for hook in hooks.of(kind).iter_mut() {
                    let ran = panic::catch_unwind(AssertUnwindSafe(|| {
                        hook(entity, &mut Commands::new(&mut scratch))
                    }));
                    match ran {
                        Ok(()) => out.append(&mut scratch),
                        Err(p) => {
                            // The hook's own commands go, as a panicking task's do.
                            if let Err(drop_panic) =
                                panic::catch_unwind(AssertUnwindSafe(|| scratch.clear()))
                            {
                                freyr_sched::drop_payload(drop_panic);
                            }
                            keep_first(&mut first_panic, p);
                        }
                    }
                }
            }
            let this = &*self;
            let panic = apply(world, &mut out, &mut |w, applied| {
                this.observe(log, w, applied)
            });
            if let Some(p) = panic {
                keep_first(&mut first_panic, p);
            }
        }
        first_panic
    }
}
