//! The walks of the relation: down a subtree, breadth first, and the messages of a walk that
//! meets a broken relation (a cycle made through `world_mut` or plain commands) and stops
//! there instead of growing without end.

use freyr_core::{Entity, World};

use super::Children;

/// `root` then its descendants, breadth first, each parent's children in order. No recursion:
/// a tree of any depth is walked with one growing list.
pub(crate) fn subtree(world: &World, root: Entity) -> Vec<Entity> {
    below(world, vec![root])
}

/// `roots` then their descendants, breadth first (the subtree walk of several siblings).
///
/// # Panics
///
/// If the walk expands more lists than the world holds entities: the children lists make a
/// cycle, or list a child twice (a relation broken through `world_mut` or plain commands), and
/// the walk would otherwise grow until memory runs out. (An entity is expanded once in a
/// sound relation; a dead entry, which a sync point's expansion may still meet, has no list.)
pub(super) fn below(world: &World, roots: Vec<Entity>) -> Vec<Entity> {
    let mut left = world.len();
    let mut out = roots;
    let mut next = 0;
    while next < out.len() {
        if let Ok(children) = world.get::<Children>(out[next]) {
            left = left
                .checked_sub(1)
                .unwrap_or_else(|| panic!("{}", broken_below(out[0])));
            out.extend_from_slice(children.as_slice());
        }
        next += 1;
    }
    out
}

/// The message of a walk that met a broken relation below `root`.
#[cold]
fn broken_below(root: Entity) -> String {
    format!(
        "freyr: hierarchy broken: the children lists below {root:?} make a cycle or list a \
         child twice (the relation was edited through `world_mut` or plain commands; \
         `Registry::check_hierarchy` names where)"
    )
}

/// The message of a walk up that met a cycle of parents above `entity`.
#[cold]
pub(super) fn broken_above(entity: Entity) -> String {
    format!(
        "freyr: hierarchy broken: the parents above {entity:?} make a cycle (the relation was \
         edited through `world_mut` or plain commands; `Registry::check_hierarchy` names where)"
    )
}
