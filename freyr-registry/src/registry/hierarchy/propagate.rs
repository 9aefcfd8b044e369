//! The parent-to-child pass: a value computed down every tree (local to global transforms),
//! one task per root, the same bits for any worker count.

use core::any::TypeId;
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
    /// count. The writes happen after every task finished, again one task per tree: if `root`
    /// or `child` panics, no `G` is written (the world is unchanged) and the first panic is
    /// re-raised. Each chunk written is stamped changed, as `get_mut` would. If dropping a
    /// replaced `G` panics, that entity still gets its new value, the rest of its tree keeps
    /// its old values (the new ones are dropped), every other tree is written, and the panic
    /// is re-raised. The per-tree lists a pass fills are kept, emptied, for the next pass of
    /// the same `G` (a pass each frame allocates nothing once warm).
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
                child_of: world.component_id::<ChildOf>(),
                disabled: world.component_id::<Disabled>(),
            },
            _ => return 0,
        };
        // The lists of the last pass of this `G`, emptied but with their capacity: a pass each
        // frame allocates nothing once warm (allocating and growing them, and the pages the
        // allocator returns and takes back between passes, cost as much as the pass).
        let mut slots: Vec<Mutex<Vec<(Entity, Slot, G)>>> = self
            .propagate_lists
            .remove(&TypeId::of::<G>())
            .and_then(|b| b.downcast().ok())
            .map(|b| *b)
            .unwrap_or_default();
        slots.resize_with(roots.len(), || Mutex::new(Vec::new()));
        slots.truncate(roots.len());
        let world = self.world();
        let grain = (roots.len() / (self.workers() * 8)).max(1);
        self.pool().parallel_for(roots.len(), grain, |i| {
            let mut tree = slots[i].lock().unwrap_or_else(|p| p.into_inner());
            compute_tree(world, ids, roots[i], &mut tree, &root, &child);
        });
        // Every value is computed: write them, one task per tree as they were computed. No
        // structural change happens until this returns (`&mut self`), so the slots the compute
        // located are still the values' rows.
        let written: usize = slots
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).len())
            .sum();
        let tick = world.change_tick();
        self.pool().parallel_for(slots.len(), grain, |i| {
            write_tree(
                world,
                &mut slots[i].lock().unwrap_or_else(|p| p.into_inner()),
                tick,
            );
        });
        self.propagate_lists
            .insert(TypeId::of::<G>(), Box::new(slots));
        written
    }
}

/// Where a computed value goes: its entity's archetype, chunk and row, and the column of `G`
/// in that archetype. Kept small (16 bytes): a pass holds one per entity.
#[derive(Clone, Copy)]
struct Slot {
    archetype: ArchetypeId,
    chunk: u32,
    row: u32,
    column: u32,
}

/// Writes one tree's values into their rows (dropping the values they replace) and stamps
/// each chunk written changed at `tick`; leaves `tree` empty (its capacity kept).
fn write_tree<G: Component>(world: &World, tree: &mut Vec<(Entity, Slot, G)>, tick: u64) {
    let mut stamped: Option<(ArchetypeId, usize)> = None;
    for (_, slot, g) in tree.drain(..) {
        let archetype = world.archetype(slot.archetype);
        let (chunk, row, col) = (slot.chunk as usize, slot.row as usize, slot.column as usize);
        if stamped != Some((slot.archetype, chunk)) {
            archetype.mark_changed(chunk, col, tick);
            stamped = Some((slot.archetype, chunk));
        }
        let column = archetype.chunk(chunk).column_ptr(col).cast::<G>();
        // SAFETY: `slot` was located by `compute_tree` in this same world, which no structural
        // change has touched since (the registry is borrowed mutably for the whole pass), so
        // `row` is an initialised row of that chunk and `column` is `G`'s column (found by
        // `G`'s id). The pointer carries the slab's provenance (`column_ptr`). No other thread
        // writes or reads that row: each entity is in one tree only (a child is visited only
        // from the parent its `ChildOf` names, and a root has none), each tree is written by
        // one task, and no reference to the column is alive during the pass. The assignment
        // drops the replaced value; if that `Drop` panics the new value is still written.
        unsafe { *column.as_ptr().add(row) = g };
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
    child_of: Option<ComponentId>,
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

/// One tree's values and where each goes, breadth first from `root`; no recursion, any depth.
/// Each entity is located once, and its components read from that row. A child is visited
/// only from the parent its `ChildOf` names (so no entity is in two trees, even in a relation
/// broken through `world_mut`).
fn compute_tree<L: Component, G: Component>(
    world: &World,
    ids: Ids,
    root: Entity,
    out: &mut Vec<(Entity, Slot, G)>,
    at_root: &impl Fn(&L) -> G,
    at_child: &impl Fn(&G, &L) -> G,
) {
    let located = world.entity_location(root).expect("a root is alive");
    let local = read::<L>(world, located, ids.local).expect("a root has L");
    // Left from a pass that panicked part-way: dropped here, never written.
    out.clear();
    out.push((root, slot(world, located, ids.global), at_root(local)));
    let mut next = 0;
    while next < out.len() {
        let (parent, at, _) = out[next];
        let parent_at = (at.archetype, at.chunk as usize, at.row as usize);
        let children = ids
            .children
            .and_then(|id| read::<Children>(world, parent_at, id));
        for &c in children.map_or(&[][..], Children::as_slice) {
            let located = world.entity_location(c).expect("a listed child is alive");
            let archetype = world.archetype(located.0);
            if ids.disabled.is_some_and(|id| archetype.has(id)) || !archetype.has(ids.global) {
                continue;
            }
            let parent_of_c = ids
                .child_of
                .and_then(|id| read::<ChildOf>(world, located, id));
            if parent_of_c.map(ChildOf::parent) != Some(parent) {
                continue;
            }
            let Some(local) = read::<L>(world, located, ids.local) else {
                continue;
            };
            let g = at_child(&out[next].2, local);
            out.push((c, slot(world, located, ids.global), g));
        }
        next += 1;
    }
}

/// The slot of the located row's `G` (its archetype has `G`).
fn slot(world: &World, at: (ArchetypeId, usize, usize), global: ComponentId) -> Slot {
    let (archetype, chunk, row) = at;
    let column = world
        .archetype(archetype)
        .column_index(global)
        .expect("a visited entity has G");
    // Chunk and row numbers and column counts are far below 2^32 (a world holds fewer than
    // 2^32 entities, an archetype fewer components).
    let small = |v: usize| u32::try_from(v).expect("fits in u32");
    Slot {
        archetype,
        chunk: small(chunk),
        row: small(row),
        column: small(column),
    }
}
