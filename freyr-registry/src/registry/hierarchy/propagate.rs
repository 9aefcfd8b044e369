//! The parent-to-child pass: a value computed down every tree (local to global transforms),
//! each thread on its own share of the trees, the same bits for any worker count.

use core::any::TypeId;
use core::ptr::NonNull;
use std::sync::Mutex;

use freyr_core::{ArchetypeId, Component, ComponentId, Disabled, Entity, World};
use freyr_query::launch::inflight::OpAccess;

use super::super::Registry;
use super::{ChildOf, Children};
use crate::shares::{Share, for_each_in_shares, sum_in_shares};

impl Registry {
    /// Computes `G` down every tree from `L` (the local-to-global transform pass): a root's
    /// `G` is `root(&L)`, a child's is `child(&parent's G, &L)`. Runs now (waiting for
    /// in-flight work first), each tree computed by one task on the pool (each thread starts on
    /// its own share of the roots, the same every pass), and then writes every computed
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
    /// # Panics
    ///
    /// If `G` is [`ChildOf`] or [`Children`], which the registry keeps (a pass would overwrite
    /// the relation), before anything runs; and as described above, if `root` or `child` or a
    /// replaced value's `Drop` panics.
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
        freyr_core::refuse_kept::<(G,)>("Registry::propagate");
        self.guard("Registry::propagate");
        let tick = self.tick();
        // Waits for everything in flight, without ending the layout: the pass writes values in
        // place and moves nothing, so the queries' cached runs stay valid after it.
        let world = self.sync.read(&OpAccess::Exclusive, &self.profiler);
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
        let mut lists: Lists<G> = self
            .propagate_lists
            .remove(&TypeId::of::<G>())
            .and_then(|b| b.downcast().ok())
            .map(|b| *b)
            .unwrap_or_default();
        let Lists { trees, shares } = &mut lists;
        trees.resize_with(roots.len(), || Mutex::new(Tree::default()));
        trees.truncate(roots.len());
        let pool = self.pool();
        let world = self.world();
        let table = columns(world, ids);
        // Each thread computes one contiguous share of the trees, the same share every pass,
        // and writes the trees it computed: a tree's rows and lists stay in one thread's cache
        // from pass to pass (and from the compute to the write). Handing trees out from one
        // cursor sent most of them to a different thread from one pass to the next: on a
        // virtual machine whose two cores behaved, for stretches at a time, as if they shared no
        // cache, every tree then came from the other core's cache, and a pass took 1.5 ms on two
        // workers against 0.83 ms on one. A thread done with its share helps with the others'
        // from their backs, one tree at a time, so the threads still finish within one tree of
        // each other.
        for_each_in_shares(pool, shares, roots.len(), |i| {
            let mut tree = trees[i].lock().unwrap_or_else(|p| p.into_inner());
            compute_tree(world, &table, roots[i], &mut tree, &root, &child);
        });
        // Every value is computed: write them, one task per tree, on the threads that computed
        // them (the same shares). No structural change happens until this returns (`&mut self`),
        // so the slots the compute located are still the values' rows. The count comes from the
        // tasks, not from a pass of this thread over the trees: each tree's lists are on a line
        // its own thread writes.
        let written = sum_in_shares(pool, shares, trees.len(), |i| {
            write_tree(
                world,
                &mut trees[i].lock().unwrap_or_else(|p| p.into_inner()).values,
                tick,
            )
        });
        self.propagate_lists
            .insert(TypeId::of::<G>(), Box::new(lists));
        written
    }
}

/// The lists a pass of one `G` keeps for the next: one [`Tree`] per root, and the threads'
/// shares of the roots.
struct Lists<G> {
    trees: Vec<Mutex<Tree<G>>>,
    shares: Vec<Share>,
}

impl<G> Default for Lists<G> {
    fn default() -> Self {
        Lists {
            trees: Vec::new(),
            shares: Vec::new(),
        }
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
/// each chunk written changed at `tick`; leaves `tree` empty (its capacity kept). Returns how
/// many values it wrote.
fn write_tree<G: Component>(world: &World, tree: &mut Vec<(Entity, Slot, G)>, tick: u64) -> usize {
    let written = tree.len();
    // The chunk being written and its `G` column's base: consecutive values mostly share it.
    let mut current: Option<((ArchetypeId, u32), NonNull<G>)> = None;
    for (_, slot, g) in tree.drain(..) {
        let key = (slot.archetype, slot.chunk);
        let base = match current {
            Some((k, base)) if k == key => base,
            _ => {
                let archetype = world.archetype(slot.archetype);
                let (chunk, col) = (slot.chunk as usize, slot.column as usize);
                archetype.mark_changed(chunk, col, tick);
                let base = archetype.chunk(chunk).column_ptr(col).cast::<G>();
                current = Some((key, base));
                base
            }
        };
        // SAFETY: `slot` was located by `compute_tree` in this same world, which no structural
        // change has touched since (the registry is borrowed mutably for the whole pass), so
        // `slot.row` is an initialised row of that chunk and `base` is `G`'s column there
        // (found by `G`'s id). The pointer carries the slab's provenance (`column_ptr`). No
        // other thread writes or reads that row: each entity is in one tree only (a child is
        // visited only from the parent its `ChildOf` names, and a root has none), each tree is
        // written by one task, and no reference to the column is alive during the pass. The
        // assignment drops the replaced value; if that `Drop` panics the new value is still
        // written.
        unsafe { *base.as_ptr().add(slot.row as usize) = g };
    }
    written
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

/// Where the pass reads in one archetype: the column positions of `L`, `G`, `ChildOf` and
/// `Children`. An archetype the pass skips (disabled, or without `L` or `G`) has none.
#[derive(Clone, Copy)]
struct Columns {
    local: u32,
    global: u32,
    child_of: Option<u32>,
    children: Option<u32>,
}

/// The [`Columns`] of every archetype of `world`, by archetype index: looked up once per pass
/// rather than once per entity and component.
fn columns(world: &World, ids: Ids) -> Vec<Option<Columns>> {
    // Column positions are far below 2^32 (an archetype has fewer components).
    let small = |v: usize| u32::try_from(v).expect("fits in u32");
    world
        .archetypes()
        .iter()
        .map(|a| {
            if ids.disabled.is_some_and(|id| a.has(id)) {
                return None;
            }
            Some(Columns {
                local: small(a.column_index(ids.local)?),
                global: small(a.column_index(ids.global)?),
                child_of: ids.child_of.and_then(|id| a.column_index(id)).map(small),
                children: ids.children.and_then(|id| a.column_index(id)).map(small),
            })
        })
        .collect()
}

/// The columns the walk reads in one chunk, located once for the run of entities that lie in
/// it (a chain's links mostly do): their bases, and the archetype's [`Columns`].
#[derive(Clone, Copy)]
struct Bases {
    cols: Columns,
    local: NonNull<u8>,
    child_of: Option<NonNull<u8>>,
    children: Option<NonNull<u8>>,
}

impl Bases {
    /// The bases of chunk `chunk` of `archetype`, or `None` if the pass skips the archetype.
    fn of(
        world: &World,
        table: &[Option<Columns>],
        archetype: ArchetypeId,
        chunk: usize,
    ) -> Option<Bases> {
        let cols = table[archetype.index()]?;
        let chunk = world.archetype(archetype).chunk(chunk);
        let at = |col: u32| chunk.column_ptr(col as usize);
        Some(Bases {
            cols,
            local: at(cols.local),
            child_of: cols.child_of.map(at),
            children: cols.children.map(at),
        })
    }
}

/// The `T` at row `row` of the column whose base is `base`.
///
/// # Safety
/// `base` is the base of a column of `T`s of a chunk of the world the pass borrows, `row` is
/// below that chunk's length, and nothing writes the value while the returned reference lives
/// (the pass only reads the world until every tree is computed).
#[inline]
unsafe fn value<'w, T: Component>(base: NonNull<u8>, row: usize) -> &'w T {
    // SAFETY: the caller's contract: the column holds `T`s, aligned from its base, and `row`
    // is initialised; the pointer carries the slab's provenance (`column_ptr`).
    unsafe { &*base.cast::<T>().as_ptr().add(row) }
}

/// One tree's lists: the computed values with where each goes, and the walk's stack of
/// children still to visit (each with its parent's position in `values`). Kept, emptied,
/// between passes.
///
/// Aligned to 128 bytes (two cache lines: x86-64 cores fetch lines in pairs), so two threads
/// computing neighbouring trees never write one line: every push writes the `Vec`'s length
/// here, and with the lists of several trees on one line the two threads of the bench's
/// 100-tree forest passed that line back and forth on every entity (the compute step took
/// 425 µs at two workers instead of 350 µs, against 690 µs at one).
#[repr(align(128))]
struct Tree<G> {
    values: Vec<(Entity, Slot, G)>,
    stack: Vec<(Entity, u32)>,
}

impl<G> Default for Tree<G> {
    fn default() -> Self {
        Tree {
            values: Vec::new(),
            stack: Vec::new(),
        }
    }
}

/// Pushes the children of the entity at row `row` of the chunk of `bases` (whose value is
/// `values[index]`) on `stack`, last child first, so they are visited in order.
#[inline]
fn push_children(bases: Bases, row: usize, index: usize, stack: &mut Vec<(Entity, u32)>) {
    let Some(base) = bases.children else {
        return;
    };
    // SAFETY: `base` is the chunk's `Children` column (found by its id) and `row` a located
    // row; the pass only reads the world until every tree is computed.
    let children = unsafe { value::<Children>(base, row) };
    // A tree holds fewer than 2^32 entities (a world does).
    let index = u32::try_from(index).expect("fits in u32");
    stack.extend(children.as_slice().iter().rev().map(|&c| (c, index)));
}

/// One tree's values and where each goes, depth first from `root` with the children in order:
/// no recursion, any depth. Each entity is located once and its components read from that row
/// through its chunk's [`Bases`]. A child is visited only from the parent its `ChildOf` names
/// (so no entity is in two trees, even in a relation broken through `world_mut`).
fn compute_tree<L: Component, G: Component>(
    world: &World,
    table: &[Option<Columns>],
    root: Entity,
    tree: &mut Tree<G>,
    at_root: &impl Fn(&L) -> G,
    at_child: &impl Fn(&G, &L) -> G,
) {
    let Tree { values, stack } = tree;
    // Left from a pass that panicked part-way: dropped here, never written.
    values.clear();
    stack.clear();
    let (archetype, chunk, row) = world.entity_location(root).expect("a root is alive");
    let root_bases =
        Bases::of(world, table, archetype, chunk).expect("a root has L and G and is enabled");
    // SAFETY: `local` is the root's chunk's `L` column, at its located row; read only.
    let local = unsafe { value::<L>(root_bases.local, row) };
    values.push((
        root,
        slot((archetype, chunk, row), root_bases.cols),
        at_root(local),
    ));
    push_children(root_bases, row, 0, stack);
    // The chunk of the last entity visited, and its bases.
    let mut last = ((archetype, chunk), Some(root_bases));
    while let Some((c, parent)) = stack.pop() {
        let parent = parent as usize;
        let located = world.entity_location(c).expect("a listed child is alive");
        let (archetype, chunk, row) = located;
        if last.0 != (archetype, chunk) {
            last = (
                (archetype, chunk),
                Bases::of(world, table, archetype, chunk),
            );
        }
        let Some(bases) = last.1 else {
            continue; // disabled, or without `L` or `G`: its subtree is skipped
        };
        // SAFETY: `child_of` is the chunk's `ChildOf` column, at the child's row; read only.
        let parent_of_c = bases
            .child_of
            .map(|base| unsafe { value::<ChildOf>(base, row) }.parent());
        if parent_of_c != Some(values[parent].0) {
            continue;
        }
        // SAFETY: `local` is the chunk's `L` column, at the child's row; read only.
        let local = unsafe { value::<L>(bases.local, row) };
        let g = at_child(&values[parent].2, local);
        values.push((c, slot(located, bases.cols), g));
        push_children(bases, row, values.len() - 1, stack);
    }
}

/// The slot of the located row's `G`, whose archetype's columns are `cols`.
#[inline]
fn slot(at: (ArchetypeId, usize, usize), cols: Columns) -> Slot {
    let (archetype, chunk, row) = at;
    // Chunk and row numbers are far below 2^32 (a world holds fewer than 2^32 entities).
    let small = |v: usize| u32::try_from(v).expect("fits in u32");
    Slot {
        archetype,
        chunk: small(chunk),
        row: small(row),
        column: cols.global,
    }
}
