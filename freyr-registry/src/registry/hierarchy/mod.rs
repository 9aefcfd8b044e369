//! Entities with structure: the parent relation ([`ChildOf`], [`Children`]), its edits and
//! walks, the despawn of a subtree, its registration for snapshots, saves and the hash, and the
//! import rule for references that leave an exported set.
//!
//! The relation is two plain components, kept consistent by the registry's methods:
//! `ChildOf(parent)` on every child, and `Children` (the children in insertion order) on every
//! entity that ever had a child (it may be empty). Being components, they are copied by
//! snapshots, written by saves, hashed and digested like any other state; they do not fragment
//! archetypes by parent (one archetype holds the children of every parent).
//!
//! - `propagate`: the parallel, deterministic parent-to-child pass;
//! - `enable`: disabling and enabling entities;
//! - `clone`: cloning entities and subtrees, and prefabs.

mod clone;
mod despawn;
mod edit;
mod enable;
mod propagate;
mod walk;

use core::fmt;
use std::panic::{self, AssertUnwindSafe};

use freyr_core::{AppliedCommand, BundleTypes, Entity, NoSuchEntity, World};

use freyr_sched::keep_first;

use super::Registry;

pub(crate) use self::clone::Cloners;
pub use self::clone::{CloneError, CloneMap, CloneRemapFn};
pub(crate) use self::despawn::{
    apply_keeping_relation, doomed_by_commands, expand_destructions, note_attached,
};
use self::despawn::{relation_rows, unlink_in};
pub use self::edit::HierarchyCommands;
use self::edit::{attach_in, remove_parent_in, set_parent_in};
pub(crate) use self::walk::subtree;
use self::walk::{below, broken_above};

pub use freyr_core::{ChildOf, Children};

/// Why a hierarchy edit was refused. The world is unchanged when one is returned.
///
/// # Examples
///
/// ```
/// use freyr::hierarchy::HierarchyError;
///
/// let mut registry = freyr::Registry::with_workers(1);
/// let a = registry.spawn(());
/// let b = registry.spawn_child(a, ()).unwrap();
/// assert_eq!(
///     registry.set_parent(a, b),
///     Err(HierarchyError::Cycle { child: a, parent: b })
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HierarchyError {
    /// The entity is not alive in this registry: despawned, never spawned here (an entity of
    /// another registry, or a command's pending handle).
    NoSuchEntity(Entity),
    /// Making `parent` the parent of `child` would close a cycle: `parent` is `child` or one
    /// of its descendants.
    Cycle {
        /// The entity that was to get a parent.
        child: Entity,
        /// The refused parent.
        parent: Entity,
    },
}

impl fmt::Display for HierarchyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HierarchyError::NoSuchEntity(e) => write!(
                f,
                "freyr: hierarchy edit refused: entity {e:?} is not alive in this registry"
            ),
            HierarchyError::Cycle { child, parent } => write!(
                f,
                "freyr: hierarchy edit refused: making {parent:?} the parent of {child:?} would \
                 make a cycle ({parent:?} is {child:?} or one of its descendants)"
            ),
        }
    }
}

impl std::error::Error for HierarchyError {}

impl From<NoSuchEntity> for HierarchyError {
    fn from(e: NoSuchEntity) -> Self {
        HierarchyError::NoSuchEntity(e.0)
    }
}

/// The handle an imported `ChildOf` gets when its parent was not exported; never a live
/// entity (its generation has the pending bit of command handles), removed right after the
/// import.
#[cfg(feature = "persist")]
fn detached() -> Entity {
    Entity::from_bits(u64::MAX).expect("a non-zero generation")
}

/// Panics if `T` is [`ChildOf`] or [`Children`]: [`Registry::register_hierarchy`] registers
/// both, for snapshots, the hash, and saves and exports with the remap an import needs. One
/// registered on its own (the other missing from snapshots, or without the remap) would make
/// `register_hierarchy` skip them and leave the relation half kept.
pub(crate) fn refuse_kept_registration<T: 'static>(what: &str) {
    assert!(
        !freyr_core::is_kept::<T>(),
        "freyr: `{}` is registered for {what} by `Registry::register_hierarchy`, with the other \
         side of the relation: call it instead",
        core::any::type_name::<T>()
    );
}

impl Registry {
    /// Registers [`ChildOf`] and [`Children`] for snapshots (by `Clone`), for the world hash
    /// and digest, and (with the `persist` feature) for saves and exports under the names
    /// `freyr.child_of` and `freyr.children`, version 1. Every hierarchy edit calls it unless
    /// refused (a refusal leaves even the hash unchanged), so a program calls it itself only
    /// before loading or importing into a registry that has not used the hierarchy yet.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_hierarchy();
    /// registry.register_hierarchy();
    /// assert_eq!(registry.hashable_count(), 2);
    /// ```
    pub fn register_hierarchy(&mut self) {
        self.guard("Registry::register_hierarchy");
        if self.snapshot_types.components.is_registered::<ChildOf>() {
            return;
        }
        #[cfg(feature = "persist")]
        {
            fn remap_child_of(c: &mut ChildOf, map: &freyr_persist::persist::EntityMap) {
                *c = ChildOf::kept_by_registry(map.get(c.parent()).unwrap_or_else(detached));
            }
            fn remap_children(c: &mut Children, map: &freyr_persist::persist::EntityMap) {
                *c.kept_list_mut() = c.iter().filter_map(|&e| map.get(e)).collect();
            }
            self.persistent_with_remap::<ChildOf>("freyr.child_of", 1, remap_child_of);
            self.persistent_with_remap::<Children>("freyr.children", 1, remap_children);
        }
        if !self.snapshot_types.components.is_registered::<ChildOf>() {
            self.snapshot_types.components.register_copy::<ChildOf>();
        }
        if !self.snapshot_types.components.is_registered::<Children>() {
            self.snapshot_types.components.register_clone::<Children>();
        }
        self.hashables.register::<ChildOf>();
        self.hashables.register::<Children>();
        let world = self.world_mut();
        world.register::<ChildOf>();
        world.register::<Children>();
    }

    /// Registers the relation if the world has it but the registry does not yet: after
    /// commands (a system's, a hook's) edited it, which cannot reach the registry.
    pub(crate) fn register_relation_if_used(&mut self) {
        if self.hierarchy_in_use() && !self.snapshot_types.components.is_registered::<ChildOf>() {
            self.register_hierarchy();
        }
    }

    /// Whether this registry's world knows the relation (a world that never had it pays for
    /// nothing at a despawn or a sync point).
    pub(crate) fn hierarchy_in_use(&self) -> bool {
        self.sync.component_id::<ChildOf>().is_some()
    }

    /// Makes `parent` the parent of `child` now (waiting for in-flight work first): `child`
    /// leaves its old parent's [`Children`] and goes to the end of `parent`'s. Setting the
    /// parent it already has changes nothing (its place among its siblings is kept). Costs
    /// the depth of `parent` (the cycle check) plus the old parent's child count.
    ///
    /// # Errors
    ///
    /// [`HierarchyError::NoSuchEntity`] if either is not alive here;
    /// [`HierarchyError::Cycle`] if `parent` is `child` or one of its descendants. The world
    /// is unchanged on error.
    ///
    /// # Panics
    ///
    /// If the parents above `parent` make a cycle (a relation broken through `world_mut` or
    /// plain commands), before anything changes.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let (a, b, c) = (registry.spawn(()), registry.spawn(()), registry.spawn(()));
    /// registry.set_parent(c, a).unwrap();
    /// registry.set_parent(c, b).unwrap();
    /// assert_eq!(registry.parent(c), Some(b));
    /// assert!(registry.children(a).is_empty());
    /// assert_eq!(registry.children(b), [c]);
    /// ```
    pub fn set_parent(&mut self, child: Entity, parent: Entity) -> Result<(), HierarchyError> {
        self.guard("Registry::set_parent");
        let mut changes = Vec::new();
        // Refused before the registration: a refusal leaves even the world hash unchanged.
        set_parent_in(self.world_mut(), child, parent, &mut changes)?;
        self.register_hierarchy();
        self.after_direct_all(&changes);
        Ok(())
    }

    /// Makes `child` a root now: it leaves its parent's [`Children`] and loses its
    /// [`ChildOf`]. Returns the parent it had (`None`: it was a root, nothing changed).
    ///
    /// # Errors
    ///
    /// [`HierarchyError::NoSuchEntity`] if `child` is not alive here (the world unchanged).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let p = registry.spawn(());
    /// let c = registry.spawn_child(p, ()).unwrap();
    /// assert_eq!(registry.remove_parent(c), Ok(Some(p)));
    /// assert_eq!(registry.remove_parent(c), Ok(None));
    /// assert_eq!(registry.parent(c), None);
    /// ```
    pub fn remove_parent(&mut self, child: Entity) -> Result<Option<Entity>, HierarchyError> {
        self.guard("Registry::remove_parent");
        let mut changes = Vec::new();
        let old = remove_parent_in(self.world_mut(), child, &mut changes)?;
        self.register_hierarchy();
        self.after_direct_all(&changes);
        Ok(old)
    }

    /// Spawns an entity with `bundle` as the last child of `parent` now.
    ///
    /// # Errors
    ///
    /// [`HierarchyError::NoSuchEntity`] if `parent` is not alive here; nothing is spawned.
    ///
    /// # Panics
    ///
    /// If the bundle holds a [`ChildOf`] or [`Children`] (the registry sets both), before
    /// anything changes.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let ship = registry.spawn(("ship",));
    /// let crew = registry.spawn_child(ship, ("pilot",)).unwrap();
    /// assert_eq!(registry.parent(crew), Some(ship));
    /// ```
    pub fn spawn_child<B: freyr_core::Bundle>(
        &mut self,
        parent: Entity,
        bundle: B,
    ) -> Result<Entity, HierarchyError> {
        self.guard("Registry::spawn_child");
        freyr_core::refuse_kept::<B>("Registry::spawn_child");
        if !self.contains(parent) {
            return Err(HierarchyError::NoSuchEntity(parent));
        }
        self.register_hierarchy();
        let world = self.world_mut();
        let child = world.spawn(bundle);
        let mut changes = vec![AppliedCommand::Spawn {
            entity: child,
            types: BundleTypes::of::<B>(),
        }];
        attach_in(world, parent, &[child], &mut changes);
        self.after_direct_all(&changes);
        Ok(child)
    }

    /// Spawns one child of `parent` per bundle, appended to its children in order, with one
    /// batch spawn; returns them in order.
    ///
    /// # Errors
    ///
    /// [`HierarchyError::NoSuchEntity`] if `parent` is not alive here; nothing is spawned.
    ///
    /// # Panics
    ///
    /// If the bundle holds a [`ChildOf`] or [`Children`] (the registry sets both), before
    /// anything changes.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let carrier = registry.spawn(("carrier",));
    /// let jets = registry.spawn_children(carrier, (0..3u32).map(|i| (i,))).unwrap();
    /// assert_eq!(registry.children(carrier), jets);
    /// ```
    pub fn spawn_children<B: freyr_core::Bundle, I: IntoIterator<Item = B>>(
        &mut self,
        parent: Entity,
        bundles: I,
    ) -> Result<Vec<Entity>, HierarchyError> {
        self.guard("Registry::spawn_children");
        freyr_core::refuse_kept::<B>("Registry::spawn_children");
        if !self.contains(parent) {
            return Err(HierarchyError::NoSuchEntity(parent));
        }
        self.register_hierarchy();
        let world = self.world_mut();
        let children = world.spawn_batch(bundles);
        let mut changes: Vec<AppliedCommand> = children
            .iter()
            .map(|&entity| AppliedCommand::Spawn {
                entity,
                types: BundleTypes::of::<B>(),
            })
            .collect();
        attach_in(world, parent, &children, &mut changes);
        self.after_direct_all(&changes);
        Ok(children)
    }

    /// The parent of `entity`; `None` for a root or an entity that is not alive.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let p = registry.spawn(());
    /// let c = registry.spawn_child(p, ()).unwrap();
    /// assert_eq!((registry.parent(c), registry.parent(p)), (Some(p), None));
    /// ```
    pub fn parent(&self, entity: Entity) -> Option<Entity> {
        self.world()
            .get::<ChildOf>(entity)
            .ok()
            .map(ChildOf::parent)
    }

    /// The children of `entity` in order; empty for a leaf or an entity that is not alive.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let p = registry.spawn(());
    /// let a = registry.spawn_child(p, ()).unwrap();
    /// let b = registry.spawn_child(p, ()).unwrap();
    /// assert_eq!(registry.children(p), [a, b]);
    /// assert!(registry.children(a).is_empty());
    /// ```
    pub fn children(&self, entity: Entity) -> &[Entity] {
        self.world()
            .get::<Children>(entity)
            .map_or(&[], |c| c.as_slice())
    }

    /// The ancestors of `entity`, its parent first, the root last; empty for a root or an
    /// entity that is not alive. Iterative: any depth.
    ///
    /// # Panics
    ///
    /// While iterating, once it has yielded as many ancestors as the world holds entities: the
    /// parents make a cycle (a relation broken through `world_mut` or plain commands).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let a = registry.spawn(());
    /// let b = registry.spawn_child(a, ()).unwrap();
    /// let c = registry.spawn_child(b, ()).unwrap();
    /// assert_eq!(registry.ancestors(c).collect::<Vec<_>>(), [b, a]);
    /// ```
    pub fn ancestors(&self, entity: Entity) -> impl Iterator<Item = Entity> + '_ {
        let world = self.world();
        let mut at = world.get::<ChildOf>(entity).ok().map(ChildOf::parent);
        let mut left = world.len();
        core::iter::from_fn(move || {
            let here = at?;
            // More ancestors than entities: a cycle of parents (a broken relation).
            left = left
                .checked_sub(1)
                .unwrap_or_else(|| panic!("{}", broken_above(entity)));
            at = world.get::<ChildOf>(here).ok().map(ChildOf::parent);
            Some(here)
        })
    }

    /// The descendants of `entity` (itself left out), breadth first: its children in order,
    /// then their children (each parent's in order, parents in the order they were listed),
    /// and so on. The order a despawn removes a subtree in, after its root. Iterative: any
    /// depth.
    ///
    /// # Panics
    ///
    /// If the walk expands more children lists than the world holds entities: the lists make a
    /// cycle (a relation broken through `world_mut` or plain commands).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let root = registry.spawn(());
    /// let a = registry.spawn_child(root, ()).unwrap();
    /// let b = registry.spawn_child(root, ()).unwrap();
    /// let a1 = registry.spawn_child(a, ()).unwrap();
    /// assert_eq!(registry.descendants(root), [a, b, a1]);
    /// ```
    pub fn descendants(&self, entity: Entity) -> Vec<Entity> {
        let world = self.world();
        if !world.contains(entity) {
            return Vec::new();
        }
        let mut all = subtree(world, entity);
        all.remove(0);
        all
    }

    /// Checks the relation's invariants over the whole world (for tests and debugging; it
    /// scans every entity with a relation component): every `ChildOf(p)` names a live `p`
    /// whose `Children` lists the child exactly once, every child listed has a `ChildOf`
    /// naming its parent, and following parents from any entity ends at a root.
    ///
    /// # Panics
    ///
    /// With a message naming the first broken invariant.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let p = registry.spawn(());
    /// registry.spawn_child(p, ()).unwrap();
    /// registry.check_hierarchy();
    /// ```
    pub fn check_hierarchy(&self) {
        let world = self.world();
        let mut children_of: Vec<(Entity, Entity)> = Vec::new();
        let mut parents = 0usize;
        let mut rooted: hashbrown::HashSet<Entity> = hashbrown::HashSet::new();
        for (e, c) in relation_rows::<ChildOf>(world) {
            let p = c.parent();
            let listed = world.get::<Children>(p).unwrap_or_else(|_| {
                panic!(
                    "freyr: hierarchy broken: {e:?} names {p:?} as parent, which has no Children"
                )
            });
            let count = listed.iter().filter(|&&x| x == e).count();
            assert_eq!(
                count, 1,
                "freyr: hierarchy broken: {p:?} lists its child {e:?} {count} times"
            );
            children_of.push((e, p));
            // Up to a root or to an entity already known to reach one, then all of the path
            // is known: each entity is walked once, so a deep chain costs its length, not its
            // length squared.
            let mut path = Vec::new();
            let mut up = Some(p);
            while let Some(a) = up.filter(|a| !rooted.contains(a)) {
                path.push(a);
                assert!(
                    path.len() <= world.len(),
                    "freyr: hierarchy broken: a cycle above {e:?}"
                );
                up = world.get::<ChildOf>(a).ok().map(ChildOf::parent);
            }
            rooted.extend(path);
        }
        for (p, list) in relation_rows::<Children>(world) {
            parents += list.len();
            for &c in list.iter() {
                let back = world.get::<ChildOf>(c).map(ChildOf::parent);
                assert_eq!(
                    back,
                    Ok(p),
                    "freyr: hierarchy broken: {p:?} lists {c:?}, whose parent is not {p:?}"
                );
            }
        }
        assert_eq!(
            parents,
            children_of.len(),
            "freyr: hierarchy broken: the children lists and the ChildOf components disagree"
        );
    }

    /// After an import: an imported entity whose parent was not exported (its `ChildOf` names
    /// the detached handle) becomes a root. Each removal is recorded in `changes` for the
    /// import's hooks when there are hooks.
    #[cfg(feature = "persist")]
    pub(super) fn finish_imported_hierarchy(
        &mut self,
        imported: &[Entity],
        changes: &mut Vec<AppliedCommand>,
    ) {
        if !self.hierarchy_in_use() {
            return;
        }
        let orphans: Vec<Entity> = {
            let world = self.world();
            imported
                .iter()
                .copied()
                .filter(|&e| {
                    world
                        .get::<ChildOf>(e)
                        .is_ok_and(|c| c.parent() == detached())
                })
                .collect()
        };
        let hooked = !self.hooks.is_empty();
        let world = self.world_mut();
        for e in orphans {
            let (before, _, _) = world
                .entity_location(e)
                .expect("an imported orphan is alive");
            world
                .remove::<(ChildOf,)>(e)
                .expect("an imported orphan has ChildOf");
            if hooked {
                changes.push(AppliedCommand::Remove { entity: e, before });
            }
        }
    }

    /// Takes `child` out of `parent`'s children, keeping the others' order.
    fn unlink(&mut self, parent: Entity, child: Entity) {
        unlink_in(self.world_mut(), parent, child);
    }

    /// [`Registry::despawn`] with the relation: `entity` leaves its parent, then it and its
    /// descendants are despawned in [`descendants`](Registry::descendants) order, then their
    /// hooks run in one round, in that order (one operation, as a `spawn_batch` is). A panic
    /// in a `Drop` or a hook stops none of it; the first is re-raised.
    pub(super) fn despawn_tree(&mut self, entity: Entity) -> Result<(), NoSuchEntity> {
        let world = self.world();
        if !world.contains(entity) {
            return Err(NoSuchEntity(entity));
        }
        let order = subtree(world, entity);
        if let Ok(parent) = world.get::<ChildOf>(entity).map(ChildOf::parent) {
            self.unlink(parent, entity);
        }
        // One operation: every entity goes first, then the hooks of all of them run in one
        // round, in this order, so no hook's commands (a child spawned under a parent about to
        // go, a descendant moved away) apply between the despawns.
        let mut first_panic = None;
        let mut changes = Vec::new();
        let hooked = !self.hooks.is_empty();
        let world = self.world_mut();
        for e in order {
            let before = world.entity_location(e).filter(|_| hooked).map(|l| l.0);
            if let Err(p) = panic::catch_unwind(AssertUnwindSafe(|| world.despawn(e))) {
                keep_first(&mut first_panic, p);
            }
            if let Some(before) = before {
                changes.push(AppliedCommand::Despawn { entity: e, before });
            }
        }
        if let Err(p) = panic::catch_unwind(AssertUnwindSafe(|| self.after_direct_all(&changes))) {
            keep_first(&mut first_panic, p);
        }
        if let Some(p) = first_panic {
            panic::resume_unwind(p);
        }
        Ok(())
    }
}
