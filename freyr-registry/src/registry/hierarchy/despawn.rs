//! The relation when entities are despawned: what a sync point reads before the despawns
//! apply (each doomed entity's parent and children) and how it finishes the relation after.

use super::*;

/// Each entity a despawn is about to remove, with its parent and children read before it goes,
/// so the sync point can finish the relation after the despawn ran.
pub(crate) struct DoomedParent {
    entity: Entity,
    parent: Option<Entity>,
    children: Vec<Entity>,
}

/// The parents and children of the entities the pending commands despawn, read before they
/// apply (empty when `world` does not know the relation).
pub(crate) fn doomed_by_commands(
    world: &World,
    pending: &[(u64, Vec<freyr_query::events::buffer::TaskOutput>)],
) -> Vec<DoomedParent> {
    if world.component_id::<ChildOf>().is_none() {
        return Vec::new();
    }
    let mut doomed = Vec::new();
    for (_, buffers) in pending {
        for buffer in buffers {
            for e in buffer.commands.despawned_entities() {
                let parent = world.get::<ChildOf>(e).ok().map(|c| c.0);
                let children = world.get::<Children>(e).map(|c| c.0.clone());
                if parent.is_some() || children.is_ok() {
                    doomed.push(DoomedParent {
                        entity: e,
                        parent,
                        children: children.unwrap_or_default(),
                    });
                }
            }
        }
    }
    doomed
}

/// Finishes the relation after the commands of a sync point ran, then expands the queued
/// destructions to their subtrees: the commands' despawned entities leave their parents and
/// their children's subtrees are destroyed, then each queued entity leaves its parent and is
/// followed by its descendants. Returns the list the sync point destroys, in order.
pub(crate) fn expand_destructions(
    world: &mut World,
    doomed: Vec<DoomedParent>,
    queue: Vec<Entity>,
) -> Vec<Entity> {
    let mut out = Vec::new();
    // Each entity is listed once, at its first place: a queued entity that is also the
    // descendant of a despawned parent (or of another queued entity) is destroyed once.
    let mut listed: hashbrown::HashSet<Entity> = hashbrown::HashSet::new();
    let list_tree = |world: &World,
                     roots: Vec<Entity>,
                     out: &mut Vec<Entity>,
                     listed: &mut hashbrown::HashSet<Entity>| {
        for e in below(world, roots) {
            // A descendant a command already despawned is left out here; its own captured
            // children are listed when its entry comes.
            if world.contains(e) && listed.insert(e) {
                out.push(e);
            }
        }
    };
    let mut finished: hashbrown::HashSet<Entity> = hashbrown::HashSet::new();
    for d in doomed {
        if world.contains(d.entity) || !finished.insert(d.entity) {
            // The command was stale or did not run, or the entity was despawned twice.
            continue;
        }
        if let Some(p) = d.parent {
            unlink_in(world, p, d.entity);
        }
        let children = d
            .children
            .into_iter()
            .filter(|&c| world.contains(c))
            .collect();
        list_tree(world, children, &mut out, &mut listed);
    }
    for e in queue {
        if !world.contains(e) {
            out.push(e); // counted as stale by the sync point
            continue;
        }
        if listed.contains(&e) {
            continue;
        }
        if let Ok(&ChildOf(p)) = world.get::<ChildOf>(e) {
            unlink_in(world, p, e);
        }
        list_tree(world, vec![e], &mut out, &mut listed);
    }
    out
}

pub(super) fn unlink_in(world: &mut World, parent: Entity, child: Entity) {
    if let Ok(list) = world.get_mut::<Children>(parent)
        && let Some(i) = list.0.iter().position(|&c| c == child)
    {
        list.0.remove(i);
    }
}

/// Every live entity with a `T` and its value, in archetype and row order.
pub(super) fn relation_rows<T: freyr_core::Component>(world: &World) -> Vec<(Entity, &T)> {
    let Some(id) = world.component_id::<T>() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for a in world.archetypes() {
        if !a.has(id) {
            continue;
        }
        for chunk in a.chunks() {
            for &e in chunk.entities() {
                if let Ok(v) = world.get::<T>(e) {
                    out.push((e, v));
                }
            }
        }
    }
    out
}
