//! The hierarchy edits on a world, shared by the registry's direct methods
//! ([`Registry::set_parent`](crate::Registry::set_parent) and friends) and by the commands that
//! record them ([`HierarchyCommands`]), which apply at a sync point in command order.

use freyr_core::EntityOp;
use freyr_query::commands::Commands;

use super::*;

/// Makes `parent` the parent of `child` in `world`, pushing the structural changes it made
/// (for hooks). Returns whether anything changed (not if `parent` already was the parent).
///
/// # Errors
///
/// As [`Registry::set_parent`]; the world is unchanged then.
pub(super) fn set_parent_in(
    world: &mut World,
    child: Entity,
    parent: Entity,
    changes: &mut Vec<AppliedCommand>,
) -> Result<bool, HierarchyError> {
    for e in [child, parent] {
        if !world.contains(e) {
            return Err(HierarchyError::NoSuchEntity(e));
        }
    }
    let mut up = Some(parent);
    let mut left = world.len();
    while let Some(a) = up {
        if a == child {
            return Err(HierarchyError::Cycle { child, parent });
        }
        // More ancestors than entities: a cycle of parents (a broken relation).
        left = left
            .checked_sub(1)
            .unwrap_or_else(|| panic!("{}", super::broken_above(parent)));
        up = world.get::<ChildOf>(a).ok().map(ChildOf::parent);
    }
    let old = world.get::<ChildOf>(child).ok().map(ChildOf::parent);
    if old == Some(parent) {
        return Ok(false);
    }
    if let Some(old) = old {
        unlink_in(world, old, child);
    }
    let before = archetype_of(world, child);
    world.insert(child, (ChildOf::kept_by_registry(parent),))?;
    changes.push(AppliedCommand::Insert {
        entity: child,
        before,
        types: BundleTypes::of::<(ChildOf,)>(),
    });
    link_in(world, parent, &[child], changes);
    Ok(true)
}

/// Makes `child` a root in `world`; returns the parent it had.
///
/// # Errors
///
/// As [`Registry::remove_parent`]; the world is unchanged then.
pub(super) fn remove_parent_in(
    world: &mut World,
    child: Entity,
    changes: &mut Vec<AppliedCommand>,
) -> Result<Option<Entity>, HierarchyError> {
    if !world.contains(child) {
        return Err(HierarchyError::NoSuchEntity(child));
    }
    let Ok(old) = world.get::<ChildOf>(child).map(ChildOf::parent) else {
        return Ok(None);
    };
    unlink_in(world, old, child);
    let before = archetype_of(world, child);
    world
        .remove::<(ChildOf,)>(child)
        .expect("the child is alive and has a parent");
    changes.push(AppliedCommand::Remove {
        entity: child,
        before,
    });
    Ok(Some(old))
}

/// Gives the fresh roots `children` the parent `parent` (alive), in order.
pub(super) fn attach_in(
    world: &mut World,
    parent: Entity,
    children: &[Entity],
    changes: &mut Vec<AppliedCommand>,
) {
    for &child in children {
        let before = archetype_of(world, child);
        world
            .insert(child, (ChildOf::kept_by_registry(parent),))
            .expect("a child just spawned is alive");
        changes.push(AppliedCommand::Insert {
            entity: child,
            before,
            types: BundleTypes::of::<(ChildOf,)>(),
        });
    }
    link_in(world, parent, children, changes);
}

/// Appends `children` to `parent`'s children, adding `Children` if it has none.
fn link_in(
    world: &mut World,
    parent: Entity,
    children: &[Entity],
    changes: &mut Vec<AppliedCommand>,
) {
    if let Ok(list) = world.get_mut::<Children>(parent) {
        list.kept_list_mut().extend_from_slice(children);
        return;
    }
    let before = archetype_of(world, parent);
    world
        .insert(parent, (Children::kept_by_registry(children.to_vec()),))
        .expect("the parent is alive");
    changes.push(AppliedCommand::Insert {
        entity: parent,
        before,
        types: BundleTypes::of::<(Children,)>(),
    });
}

fn archetype_of(world: &World, e: Entity) -> freyr_core::ArchetypeId {
    world.entity_location(e).expect("the entity is alive").0
}

/// The recorded `set_parent`: a cycle panics at the sync point with the refusal's message
/// (this edit changes nothing; the other commands still apply, as for any panicking command).
fn set_parent_op(
    world: &mut World,
    child: Entity,
    parent: Entity,
    changes: &mut Vec<AppliedCommand>,
) -> bool {
    match set_parent_in(world, child, parent, changes) {
        Ok(_) => true,
        Err(HierarchyError::NoSuchEntity(_)) => false,
        Err(refused) => panic!("{refused} (a set_parent recorded as a command; it was skipped)"),
    }
}

fn remove_parent_op(
    world: &mut World,
    child: Entity,
    _: Entity,
    changes: &mut Vec<AppliedCommand>,
) -> bool {
    remove_parent_in(world, child, changes).is_ok()
}

static SET_PARENT: EntityOp = EntityOp {
    name: "set_parent",
    run: set_parent_op,
};

static REMOVE_PARENT: EntityOp = EntityOp {
    name: "remove_parent",
    run: remove_parent_op,
};

/// Whether an applied change is one of `set_parent`'s attachments: the child that got a
/// [`ChildOf`].
pub(crate) fn attached(applied: &AppliedCommand) -> Option<Entity> {
    match applied {
        AppliedCommand::Insert { entity, types, .. }
            if types
                .iter()
                .any(|t| t == core::any::TypeId::of::<ChildOf>()) =>
        {
            Some(*entity)
        }
        _ => None,
    }
}

/// Hierarchy edits recorded as commands, for the code that cannot edit the registry now:
/// function systems (their `Commands` parameter), `*_with` callbacks, hooks. They apply at the
/// next sync point, in command order with the spawns, despawns, inserts and removes around
/// them, so the result is the same for every worker count.
///
/// At apply time an edit naming an entity that is not alive then is skipped and counted as
/// stale, as any command's; a `set_parent` that would make a cycle is skipped and its refusal
/// ([`HierarchyError::Cycle`]'s message) is raised as a panic at the sync point after the other
/// commands applied, as a panicking command's is. A parent despawned in the same sync point
/// takes with it the children it has once the sync point's commands have applied (those
/// attached to it in that sync point included; those moved to another parent go with that one).
///
/// # Examples
///
/// ```
/// use freyr::hierarchy::HierarchyCommands;
/// use freyr::{Commands, Phase, Registry};
///
/// struct Ship;
/// struct Turret;
///
/// let mut registry = Registry::with_workers(2);
/// let ship = registry.spawn((Ship,));
/// registry
///     .add_fn_system(Phase::Update, "arm", move |mut cmds: Commands| {
///         cmds.spawn_child(ship, (Turret,));
///     })
///     .unwrap();
/// registry.update(0.1);
/// assert_eq!(registry.children(ship).len(), 1);
/// registry.despawn(ship).unwrap();
/// assert_eq!(registry.query::<&Turret>().count(), 0);
/// ```
pub trait HierarchyCommands {
    /// Records making `parent` the parent of `child` (see
    /// [`Registry::set_parent`](crate::Registry::set_parent)). Either may be a pending handle
    /// of this buffer's spawns.
    fn set_parent(&mut self, child: Entity, parent: Entity);

    /// Records making `child` a root (see
    /// [`Registry::remove_parent`](crate::Registry::remove_parent)).
    fn remove_parent(&mut self, child: Entity);

    /// Records spawning `bundle` as the last child of `parent`; returns the pending handle of
    /// the spawn. If `parent` is not alive when the commands apply, the child is spawned as a
    /// root (the attachment is counted as stale).
    fn spawn_child<B: freyr_core::Bundle>(&mut self, parent: Entity, bundle: B) -> Entity;
}

impl HierarchyCommands for Commands<'_> {
    fn set_parent(&mut self, child: Entity, parent: Entity) {
        self.op(&SET_PARENT, child, parent);
    }

    fn remove_parent(&mut self, child: Entity) {
        self.op(&REMOVE_PARENT, child, child);
    }

    fn spawn_child<B: freyr_core::Bundle>(&mut self, parent: Entity, bundle: B) -> Entity {
        let child = self.spawn(bundle);
        self.op(&SET_PARENT, child, parent);
        child
    }
}
