//! The parent-to-child pass: a value computed down every tree (local to global transforms),
//! one task per root, the same bits for any worker count.

use std::sync::Mutex;

use freyr_core::{ArchetypeId, Component, ComponentId, Disabled, Entity, World};

use super::super::Registry;
use super::{ChildOf, Children};

impl Registry {
    /// Computes `G` down every tree from `L` (the local-to-global transform pass): a root's
    /// `G` is `root(&L)`, a child's is `child(&parent's G, &L)`. Runs now (waiting for
    /// in-flight work first), one task per root on the pool, and then writes every computed
    /// `G`. Returns how many entities it wrote.
    ///
    /// Which entities: the roots are the entities with `L` and `G` and no parent; from each,
    /// the pass goes down to the children that have `L` and `G`, in child order. A child
    /// without `L` or `G` stops the pass for its subtree, and disabled entities (and their
    /// subtrees) are skipped, as queries skip them.
    ///
    /// **Determinism**: each tree is computed by one task in a fixed order, and every value
    /// depends only on its ancestors' values, so the result is the same bits for any worker
    /// count. The writes happen after every task finished: if `root` or `child` panics, no `G`
    /// is written (the world is unchanged) and the first panic is re-raised.
    ///
    /// # Examples
    ///
    /// ```
    /// #[derive(Clone, Copy)]
    /// struct Local(f32);
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Global(f32);
    ///
    /// let mut registry = freyr::Registry::with_workers(2);
    /// let ship = registry.spawn((Local(10.0), Global(0.0)));
    /// let turret = registry.spawn_child(ship, (Local(1.0), Global(0.0))).unwrap();
    /// let barrel = registry.spawn_child(turret, (Local(0.5), Global(0.0))).unwrap();
    /// let written = registry.propagate::<Local, Global>(|l| Global(l.0), |p, l| Global(p.0 + l.0));
    /// assert_eq!(written, 3);
    /// assert_eq!(registry.get::<Global>(barrel), Ok(&Global(11.5)));
    /// ```
    pub fn propagate<L: Component, G: Component>(
        &mut self,
        root: impl Fn(&L) -> G + Sync,
        child: impl Fn(&G, &L) -> G + Sync,
    ) -> usize {
        self.guard("Registry::propagate");
        self.world_mut(); // waits for everything in flight
        let world = self.world();
        let roots = roots::<L, G>(world);
        let ids = match (world.component_id::<L>(), world.component_id::<G>()) {
            (Some(local), Some(global)) if !roots.is_empty() => Ids {
                local,
                global,
                children: world.component_id::<Children>(),
                disabled: world.component_id::<Disabled>(),
            },
            _ => return 0,
        };
        let slots: Vec<Mutex<Vec<(Entity, G)>>> =
            roots.iter().map(|_| Mutex::new(Vec::new())).collect();
        let grain = (roots.len() / (self.workers() * 8)).max(1);
        self.pool().parallel_for(roots.len(), grain, |i| {
            let tree = compute_tree(world, ids, roots[i], &root, &child);
            *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = tree;
        });
        let world = self.world_mut();
        let mut written = 0;
        for slot in slots {
            for (e, g) in slot.into_inner().unwrap_or_else(|p| p.into_inner()) {
                *world.get_mut::<G>(e).expect("a visited entity has G") = g;
                written += 1;
            }
        }
        written
    }
}

/// The roots of the pass, in archetype, chunk and row order.
fn roots<L: Component, G: Component>(world: &World) -> Vec<Entity> {
    let (Some(l), Some(g)) = (world.component_id::<L>(), world.component_id::<G>()) else {
        return Vec::new();
    };
    let child_of = world.component_id::<ChildOf>();
    let disabled = world.component_id::<Disabled>();
    let mut out = Vec::new();
    for a in world.archetypes() {
        if !a.has(l)
            || !a.has(g)
            || child_of.is_some_and(|id| a.has(id))
            || disabled.is_some_and(|id| a.has(id))
        {
            continue;
        }
        for chunk in a.chunks() {
            out.extend_from_slice(chunk.entities());
        }
    }
    out
}

/// The component ids the pass reads, resolved once per call (a lookup by type per read would
/// hash the `TypeId` every time).
#[derive(Clone, Copy)]
struct Ids {
    local: ComponentId,
    global: ComponentId,
    children: Option<ComponentId>,
    disabled: Option<ComponentId>,
}

/// `entity`'s `T` through its located row, if its archetype has the column `id`.
#[inline]
fn read<T: Component>(
    world: &World,
    at: (ArchetypeId, usize, usize),
    id: ComponentId,
) -> Option<&T> {
    let (archetype, chunk, row) = at;
    let column = world.archetype(archetype).chunk(chunk).column::<T>(id)?;
    Some(&column[row])
}

/// One tree's values, breadth first from `root`; no recursion, any depth. Each entity is
/// located once, and its components read from that row.
fn compute_tree<L: Component, G: Component>(
    world: &World,
    ids: Ids,
    root: Entity,
    at_root: &impl Fn(&L) -> G,
    at_child: &impl Fn(&G, &L) -> G,
) -> Vec<(Entity, G)> {
    let located = world.entity_location(root).expect("a root is alive");
    let local = read::<L>(world, located, ids.local).expect("a root has L");
    let mut out = vec![(root, at_root(local))];
    // Where each entity of `out` is, for reading its children.
    let mut at = vec![located];
    let mut next = 0;
    while next < out.len() {
        let children = ids
            .children
            .and_then(|id| read::<Children>(world, at[next], id));
        for &c in children.map_or(&[][..], Children::as_slice) {
            let located = world.entity_location(c).expect("a listed child is alive");
            let archetype = world.archetype(located.0);
            if ids.disabled.is_some_and(|id| archetype.has(id)) || !archetype.has(ids.global) {
                continue;
            }
            let Some(local) = read::<L>(world, located, ids.local) else {
                continue;
            };
            let g = at_child(&out[next].1, local);
            out.push((c, g));
            at.push(located);
        }
        next += 1;
    }
    out
}
