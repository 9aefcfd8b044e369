//! The relation when entities are despawned: what a sync point reads before the despawns
//! apply (each doomed entity's parent and children) and how it finishes the relation after.

use core::any::Any;

use freyr_core::CommandBuffer;

use super::*;

/// Applies `buffer` to `world` keeping the relation, as a sync point does (the hooks' commands
/// are applied this way): the despawned entities' subtrees are destroyed after the buffer, in
/// the order [`expand_destructions`] gives, and every change is passed to `observe`. Returns
/// the first panic (of the commands, then of the destructions).
pub(crate) fn apply_keeping_relation(
    world: &mut World,
    buffer: &mut CommandBuffer,
    observe: &mut dyn FnMut(&World, &AppliedCommand),
) -> Option<Box<dyn Any + Send>> {
    let doomed = doomed_by_commands(world, [&*buffer]);
    let mut attached: Vec<(Entity, Entity)> = Vec::new();
    let (_, mut first_panic) = buffer.try_apply_observed(world, &mut |w, a| {
        note_attached(&mut attached, w, a);
        observe(w, a);
    });
    if doomed.is_empty() && attached.is_empty() {
        return first_panic;
    }
    for entity in expand_destructions(world, doomed, attached, Vec::new()) {
        let Some((before, ..)) = world.entity_location(entity) else {
            continue;
        };
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| world.despawn(entity)));
        observe(world, &AppliedCommand::Despawn { entity, before });
        if let Err(p) = outcome {
            keep_first(&mut first_panic, p);
        }
    }
    first_panic
}

/// Notes, in `attached`, the child an applied change gave a parent, with that parent.
pub(crate) fn note_attached(
    attached: &mut Vec<(Entity, Entity)>,
    world: &World,
    applied: &AppliedCommand,
) {
    if let Some(child) = super::edit::attached(applied)
        && let Ok(parent) = world.get::<ChildOf>(child)
    {
        attached.push((child, parent.parent()));
    }
}

/// Each entity a despawn is about to remove, with its parent and children read before it goes,
/// so the sync point can finish the relation after the despawn ran.
pub(crate) struct DoomedParent {
    entity: Entity,
    parent: Option<Entity>,
    children: Vec<Entity>,
}

/// The parents and children of the entities the pending commands despawn, read before they
/// apply (empty when `world` does not know the relation).
pub(crate) fn doomed_by_commands<'a>(
    world: &World,
    buffers: impl IntoIterator<Item = &'a CommandBuffer>,
) -> Vec<DoomedParent> {
    if world.component_id::<ChildOf>().is_none() {
        return Vec::new();
    }
    let mut doomed = Vec::new();
    {
        for buffer in buffers {
            for e in buffer.despawned_entities() {
                let parent = world.get::<ChildOf>(e).ok().map(ChildOf::parent);
                let children = world.get::<Children>(e).map(|c| c.to_vec());
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
/// destructions to their subtrees. The rule: each entity the commands despawned leaves every
/// parent that lists it, and the children it has once all the commands ran (those it had when
/// the sync point began and those `attached` to it by recorded edits, less those that moved to
/// another parent) are destroyed with their subtrees; then each queued entity leaves its parent
/// and is followed by its descendants. Returns the list the sync point destroys, in order.
///
/// `doomed` is read before the commands ran; `attached` lists, in command order, each child a
/// recorded edit attached and the parent it got.
pub(crate) fn expand_destructions(
    world: &mut World,
    doomed: Vec<DoomedParent>,
    attached: Vec<(Entity, Entity)>,
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
    let doomed = with_attachments(world, doomed, &attached);
    let mut finished: hashbrown::HashSet<Entity> = hashbrown::HashSet::new();
    for d in doomed {
        if world.contains(d.entity) || !finished.insert(d.entity) {
            // The command was stale or did not run, or the entity was despawned twice.
            continue;
        }
        for p in d.parents {
            unlink_in(world, p, d.entity);
        }
        // Its children now: those whose parent is still this entity.
        let children = d
            .children
            .into_iter()
            .filter(|&c| {
                world
                    .get::<ChildOf>(c)
                    .is_ok_and(|c| c.parent() == d.entity)
            })
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
        if let Ok(p) = world.get::<ChildOf>(e).map(ChildOf::parent) {
            unlink_in(world, p, e);
        }
        list_tree(world, vec![e], &mut out, &mut listed);
    }
    out
}

/// Each entity that is gone after the commands and may still be named by the relation, with
/// every parent that may list it and every child that may name it: the entries read before the
/// commands, then those the recorded edits add (an attached child now gone, the parent it got;
/// a parent now gone, the child attached to it), in order, one entry per entity.
fn with_attachments(
    world: &World,
    doomed: Vec<DoomedParent>,
    attached: &[(Entity, Entity)],
) -> Vec<Doomed> {
    let mut out: Vec<Doomed> = doomed
        .into_iter()
        .map(|d| Doomed {
            entity: d.entity,
            parents: d.parent.into_iter().collect(),
            children: d.children,
        })
        .collect();
    if attached.is_empty() {
        return out;
    }
    let mut index: hashbrown::HashMap<Entity, usize> = hashbrown::HashMap::new();
    for (i, d) in out.iter().enumerate() {
        index.entry(d.entity).or_insert(i);
    }
    let mut entry = |e: Entity, out: &mut Vec<Doomed>| -> usize {
        *index.entry(e).or_insert_with(|| {
            out.push(Doomed {
                entity: e,
                parents: Vec::new(),
                children: Vec::new(),
            });
            out.len() - 1
        })
    };
    for &(child, parent) in attached {
        if !world.contains(child) {
            let i = entry(child, &mut out);
            out[i].parents.push(parent);
        }
        if !world.contains(parent) {
            let i = entry(parent, &mut out);
            out[i].children.push(child);
        }
    }
    out
}

/// One entry of [`with_attachments`].
struct Doomed {
    entity: Entity,
    parents: Vec<Entity>,
    children: Vec<Entity>,
}

pub(super) fn unlink_in(world: &mut World, parent: Entity, child: Entity) {
    if let Ok(list) = world.get_mut::<Children>(parent)
        && let Some(i) = list.iter().position(|&c| c == child)
    {
        list.kept_list_mut().remove(i);
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
