//! The [`World`]: entities, the component registry, archetypes and the structural operations.

use core::any::TypeId;
use core::mem::ManuallyDrop;

use hashbrown::HashMap;

use crate::CHUNK_CAPACITY;
use crate::archetype::{Archetype, ArchetypeId, Rows};
use crate::bundle::{Bundle, MAX_BUNDLE, check_distinct};
use crate::chunk::{ChunkTable, Window};
use crate::column::{copy_value, for_each_finishing_on_panic};
use crate::component::{Component, ComponentId, ComponentInfo, Components, TypeIdMap};
use crate::edges::{Hop, InsertEdge, Move, RemoveEdge, difference, union};
use crate::entity::{Entities, Entity, Location};
use crate::error::{ComponentError, NoSuchEntity};
use crate::world_id::WorldId;

/// What a world caches per bundle type: its component ids and where `spawn` puts each element.
struct BundleInfo {
    /// Component ids in tuple order.
    ids: Box<[ComponentId]>,
    /// The archetype with exactly these components.
    archetype: ArchetypeId,
    /// Per tuple position: (column offset in the one-chunk layout, value size) in that
    /// archetype.
    slots: Box<[(usize, usize)]>,
}

/// A live row found from a handle.
#[derive(Copy, Clone)]
struct Found {
    archetype: usize,
    chunk: usize,
    /// The chunk's global id (what the entity's slot stores).
    chunk_id: u32,
    row: usize,
    window: Window,
}

/// The container of all entities and their components.
///
/// Entities with the same set of component types share an [`Archetype`], whose rows are stored
/// in chunks of [`CHUNK_CAPACITY`] entities in structure-of-arrays columns. Structural
/// operations (`spawn`, `insert`, `remove`, `despawn`) move rows between archetypes; every
/// operation on a stale handle returns an error and changes nothing.
///
/// Entity ids are a pure function of the sequence of operations (freed indices are reused in
/// LIFO order), so replaying the same operations gives the same ids.
///
/// # Capacity limits
///
/// A world's ids have fixed widths. An operation that would pass a limit panics before it
/// changes any entity, with a message that names the limit, the count and what to do (e.g.
/// `freyr: chunk limit reached: a world holds at most 4194304 chunks of 512 rows ...; despawn
/// entities, reserve less, or split the entities across several worlds`); the world stays
/// valid.
///
/// | Limit | At most, per world | Reached by |
/// |---|---|---|
/// | chunks | 2^22 chunks of [`CHUNK_CAPACITY`] rows at once: 2^31 rows over all archetypes, fewer as each archetype keeps its partly filled and reserved chunks | [`spawn`](World::spawn), [`spawn_batch`](World::spawn_batch), [`reserve`](World::reserve), [`insert`](World::insert), [`remove`](World::remove) |
/// | entity indices | 2^32 (every `u32`), live or retired (an index whose generation is exhausted is never reused) | [`spawn`](World::spawn), [`spawn_batch`](World::spawn_batch), [`reserve`](World::reserve) |
/// | archetypes | 2^32 − 1 distinct component sets | the first `spawn`, `spawn_batch`, `reserve`, `insert` or `remove` that makes a new set |
/// | archetype edges | 2^32 insert edges and 2^32 remove edges (one per archetype and bundle type inserted into or removed from it) | [`insert`](World::insert), [`remove`](World::remove) |
/// | component types | 2^32 | [`register`](World::register) and the first use of a type |
///
/// [`CommandBuffer::apply`](crate::CommandBuffer::apply) reaches them as the operations it
/// applies do. In practice the chunk limit is the only one a program reaches: 2^31 rows take
/// 16 GiB for the entity handles alone, and the others need billions of distinct types,
/// component sets or bundle types.
///
/// # Examples
/// ```
/// use freyr::World;
/// let mut world = World::new();
/// let e = world.spawn((1u32, "name"));
/// world.insert(e, (2.5f32,)).unwrap();
/// *world.get_mut::<u32>(e).unwrap() += 1;
/// assert_eq!(*world.get::<u32>(e).unwrap(), 2);
/// assert_eq!(world.remove::<(f32,)>(e).unwrap(), (2.5,));
/// world.despawn(e).unwrap();
/// assert!(world.is_empty());
/// ```
pub struct World {
    /// This world's identity; see [`World::id`].
    id: WorldId,
    entities: Entities,
    components: Components,
    archetypes: Vec<Archetype>,
    archetype_index: HashMap<Box<[ComponentId]>, ArchetypeId>,
    chunks: ChunkTable,
    bundles: TypeIdMap<BundleInfo>,
    insert_edges: Vec<InsertEdge>,
    remove_edges: Vec<RemoveEdge>,
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

impl core::fmt::Debug for World {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("World")
            .field("len", &self.len())
            .field("archetypes", &self.archetypes.len())
            .field("components", &self.components.len())
            .finish()
    }
}

/// Mutable references to two distinct elements.
#[inline(always)]
fn two_mut<T>(items: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    assert_ne!(a, b);
    if a < b {
        let (left, right) = items.split_at_mut(b);
        (&mut left[a], &mut right[0])
    } else {
        let (left, right) = items.split_at_mut(a);
        (&mut right[0], &mut left[b])
    }
}

/// Finishes removing a row whose values are being dropped, even if a `Drop` panics: moves the
/// archetype's last row into the hole and re-points the moved entity's slot.
struct FinishRemove<'w> {
    rows: &'w mut Rows,
    chunks: &'w mut ChunkTable,
    entities: &'w mut Entities,
    chunk_id: u32,
    window: Window,
    row: usize,
}

impl Drop for FinishRemove<'_> {
    fn drop(&mut self) {
        vacate(
            self.rows,
            self.chunks,
            self.entities,
            self.window,
            self.chunk_id,
            self.row,
        );
    }
}

/// Swap-removes row `row` of the chunk at `hole` (global id `chunk_id`) without dropping its
/// values (they were dropped or moved out), and points the entity moved into the hole at it.
#[inline(always)]
fn vacate(
    rows: &mut Rows,
    chunks: &mut ChunkTable,
    entities: &mut Entities,
    hole: Window,
    chunk_id: u32,
    row: usize,
) {
    if let Some(moved) = rows.swap_remove_nodrop(hole, row, chunks) {
        let location = Location {
            chunk: chunk_id,
            row: row as u32,
        };
        entities.set_location(moved, location);
    }
}

/// The vacant row a moving entity lands in: row `row` of the target chunk at `window` (global
/// id `chunk_id`), which is the target archetype's row `len`.
struct Landing {
    window: Window,
    row: usize,
    chunk_id: u32,
}

/// Starts moving a row: claims the target archetype's vacant row (`dst`, id `target`), writes
/// `entity` there and moves the `moves` columns of row `src_row` of the source chunk at `source`
/// into it. The row is not counted yet: the caller fills the bundle's columns, then calls
/// [`complete_move`]. Only claiming the row can panic (before anything is written); nothing the
/// caller does between the two may panic.
///
/// # Safety
/// `moves` is the edge from the source row's archetype to `dst`'s, and (`source`, `src_row`) is
/// a live row of the source; the values moved out are given up by that row, which
/// [`complete_move`] removes without dropping them.
#[inline(always)]
unsafe fn begin_move(
    dst: &mut Rows,
    target: ArchetypeId,
    chunks: &mut ChunkTable,
    entity: Entity,
    (source, src_row): (Window, usize),
    moves: &[Move],
) -> Landing {
    let (chunk, row) = dst.prepare_push(target, chunks);
    let (window, chunk_id) = dst.window_and_id(chunk);
    // SAFETY: (chunk, row) is the vacant row `dst.len`.
    unsafe { Rows::write_entity(window, row, entity) };
    for m in moves {
        // SAFETY: the source slot holds a live value that moves (the caller removes the source
        // row without dropping); the target slot of the same column type is vacant; offsets and
        // sizes come from the two archetypes' layouts.
        unsafe {
            copy_value(
                source.slot(m.src, m.size, src_row),
                window.slot(m.dst, m.size, row),
                m.size,
            )
        };
    }
    Landing {
        window,
        row,
        chunk_id,
    }
}

/// Finishes a row move begun with [`begin_move`] (and its columns all filled): counts the
/// landed row, points `entity` at it, and removes the vacated source row `found`.
#[inline(always)]
fn complete_move(
    (src, dst): (&mut Rows, &mut Rows),
    chunks: &mut ChunkTable,
    entities: &mut Entities,
    entity: Entity,
    landing: &Landing,
    found: &Found,
) {
    dst.len += 1;
    let location = Location {
        chunk: landing.chunk_id,
        row: landing.row as u32,
    };
    entities.set_location(entity, location);
    vacate(
        src,
        chunks,
        entities,
        found.window,
        found.chunk_id,
        found.row,
    );
}

impl World {
    /// An empty world.
    ///
    /// # Panics
    /// If 2^64 − 1 worlds were already created in this process (the [`WorldId`] counter is
    /// exhausted; never in practice).
    ///
    /// # Examples
    /// ```
    /// let world = freyr::World::new();
    /// assert!(world.is_empty());
    /// assert_eq!(world.archetypes().len(), 1); // the empty archetype
    /// ```
    pub fn new() -> World {
        let mut world = World {
            id: WorldId::fresh(),
            entities: Entities::default(),
            components: Components::default(),
            archetypes: Vec::new(),
            archetype_index: HashMap::new(),
            chunks: ChunkTable::default(),
            bundles: TypeIdMap::default(),
            insert_edges: Vec::new(),
            remove_edges: Vec::new(),
        };
        let empty = world.archetype_for(&[]);
        debug_assert_eq!(empty, ArchetypeId::EMPTY);
        world
    }

    /// This world's identity, distinct from every other world of the process (see
    /// [`WorldId`]). Caches built from a world check it before use.
    ///
    /// # Examples
    /// ```
    /// let a = freyr::World::new();
    /// let b = freyr::World::new();
    /// assert_ne!(a.id(), b.id());
    /// ```
    #[inline]
    pub fn id(&self) -> WorldId {
        self.id
    }

    /// Registers `T` (if new) and returns its id. Components are also registered on first use;
    /// calling this first fixes the id order.
    ///
    /// # Panics
    /// If the world already has 2^32 component types (a [capacity limit](World#capacity-limits)).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let id = world.register::<u64>();
    /// assert_eq!(world.register::<u64>(), id);
    /// assert_eq!(world.component_id::<u64>(), Some(id));
    /// ```
    pub fn register<T: Component>(&mut self) -> ComponentId {
        self.components.register::<T>()
    }

    /// The id of `T` if it has been registered (explicitly or by use).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// assert_eq!(world.component_id::<u8>(), None);
    /// world.spawn((1u8,));
    /// assert!(world.component_id::<u8>().is_some());
    /// ```
    pub fn component_id<T: Component>(&self) -> Option<ComponentId> {
        self.components.id_of(TypeId::of::<T>())
    }

    /// What the world knows about component `id`.
    ///
    /// # Panics
    /// If `id` was not registered in this world.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let id = world.register::<u32>();
    /// assert_eq!(world.component_info(id).name(), "u32");
    /// ```
    pub fn component_info(&self, id: ComponentId) -> &ComponentInfo {
        self.components.info(id)
    }

    /// Number of live entities.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn(());
    /// assert_eq!(world.len(), 1);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether there are no live entities.
    ///
    /// # Examples
    /// ```
    /// assert!(freyr::World::new().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All archetypes; index `i` has `ArchetypeId` `i`. New archetypes are only ever appended.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn((1u8,));
    /// assert_eq!(world.archetypes().len(), 2);
    /// assert_eq!(world.archetypes()[1].len(), 1);
    /// ```
    #[inline]
    pub fn archetypes(&self) -> &[Archetype] {
        &self.archetypes
    }

    /// The archetype with id `id`.
    ///
    /// # Panics
    /// If `id` is not an archetype of this world.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// let (id, _, _) = world.entity_location(e).unwrap();
    /// assert_eq!(world.archetype(id).len(), 1);
    /// ```
    #[inline]
    pub fn archetype(&self, id: ArchetypeId) -> &Archetype {
        &self.archetypes[id.index()]
    }

    /// Whether `entity` is alive in this world.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn(());
    /// assert!(world.contains(e));
    /// world.despawn(e).unwrap();
    /// assert!(!world.contains(e));
    /// ```
    #[inline]
    pub fn contains(&self, entity: Entity) -> bool {
        self.find(entity).is_some()
    }

    /// Where `entity`'s row is: (archetype, chunk index, row in chunk); `None` if stale.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let a = world.spawn((1u8,));
    /// let b = world.spawn((2u8,));
    /// let (arch, chunk, row) = world.entity_location(b).unwrap();
    /// assert_eq!((chunk, row), (0, 1));
    /// assert_eq!(world.archetype(arch).chunk(chunk).entities()[row], b);
    /// world.despawn(a).unwrap();
    /// assert_eq!(world.entity_location(b), Some((arch, 0, 0))); // moved into the hole
    /// assert_eq!(world.entity_location(a), None);
    /// ```
    pub fn entity_location(&self, entity: Entity) -> Option<(ArchetypeId, usize, usize)> {
        self.find(entity)
            .map(|f| (ArchetypeId(f.archetype as u32), f.chunk, f.row))
    }

    /// Locates a live entity's row, checking the generation against the chunk's entity column.
    #[inline]
    fn find(&self, entity: Entity) -> Option<Found> {
        let location = self.entities.location(entity)?;
        let entry = self.chunks.get(location.chunk);
        let archetype = entry.archetype as usize;
        let chunk = entry.index as usize;
        let row = location.row as usize;
        let window = entry.window;
        // SAFETY: a live slot locates an initialised row of an existing chunk (world invariant:
        // every live entity's slot is updated whenever its row moves).
        let stored = unsafe { Rows::read_entity(window, row) };
        (stored == entity).then_some(Found {
            archetype,
            chunk,
            chunk_id: location.chunk,
            row,
            window,
        })
    }

    /// Finds or creates the archetype with the sorted component set `ids`.
    fn archetype_for(&mut self, ids: &[ComponentId]) -> ArchetypeId {
        if let Some(&id) = self.archetype_index.get(ids) {
            return id;
        }
        let id = ArchetypeId::fresh(self.archetypes.len());
        let ids: Box<[ComponentId]> = ids.into();
        self.archetypes
            .push(Archetype::new(id, ids.clone(), &self.components));
        self.archetype_index.insert(ids, id);
        id
    }

    /// Registers bundle type `B`: checks for repeated types (panicking before any change), then
    /// registers its components and its spawn archetype.
    #[cold]
    fn init_bundle<B: Bundle>(&mut self) {
        check_distinct::<B>();
        let mut ids = Vec::with_capacity(B::LEN);
        B::register(&mut self.components, &mut ids);
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        let archetype = self.archetype_for(&sorted);
        let arch = &self.archetypes[archetype.index()];
        let slots = ids
            .iter()
            .map(|&id| {
                let column =
                    &arch.rows.columns[arch.column_index(id).expect("bundle archetype has it")];
                (column.offset, column.size)
            })
            .collect();
        let info = BundleInfo {
            ids: ids.into(),
            archetype,
            slots,
        };
        self.bundles.insert(TypeId::of::<B>(), info);
    }

    /// The component ids of bundle `B` in tuple order, registering it if new.
    fn bundle_ids<B: Bundle>(&mut self) -> Box<[ComponentId]> {
        if !self.bundles.contains_key(&TypeId::of::<B>()) {
            self.init_bundle::<B>();
        }
        self.bundles[&TypeId::of::<B>()].ids.clone()
    }

    /// Builds and caches the edge for inserting `B` into archetype `source`.
    #[cold]
    #[inline(never)]
    fn init_insert_edge<B: Bundle>(&mut self, source: usize) -> Hop {
        let ids = self.bundle_ids::<B>();
        let set = union(self.archetypes[source].components(), &ids);
        let target = self.archetype_for(&set);
        let edge = InsertEdge::new(
            &self.archetypes[source],
            &self.archetypes[target.index()],
            &ids,
        );
        let hop = Hop::new(self.insert_edges.len(), target.0);
        self.insert_edges.push(edge);
        self.archetypes[source]
            .insert_edges
            .insert(TypeId::of::<B>(), hop);
        hop
    }

    /// Builds and caches the edge for removing `B` from archetype `source`.
    #[cold]
    #[inline(never)]
    fn init_remove_edge<B: Bundle>(&mut self, source: usize) -> Hop {
        let ids = self.bundle_ids::<B>();
        let src = &self.archetypes[source];
        let (edge, target) = match ids.iter().position(|&c| !src.has(c)) {
            Some(missing) => (
                RemoveEdge::missing(self.components.info(ids[missing]).name()),
                Hop::MISSING,
            ),
            None => {
                let set = difference(src.components(), &ids);
                let target = self.archetype_for(&set);
                let edge = RemoveEdge::new(
                    &self.archetypes[source],
                    &self.archetypes[target.index()],
                    &ids,
                );
                (edge, target.0)
            }
        };
        let hop = Hop::new(self.remove_edges.len(), target);
        self.remove_edges.push(edge);
        self.archetypes[source]
            .remove_edges
            .insert(TypeId::of::<B>(), hop);
        hop
    }

    /// Spawns an entity with the components of `bundle` and returns its handle.
    ///
    /// # Panics
    /// If `bundle` names a component type twice (before anything changes). If the world would
    /// pass a [capacity limit](World#capacity-limits): 2^22 chunks, 2^32 entity indices, and,
    /// for the first spawn of a new component set, 2^32 − 1 archetypes or 2^32 component types
    /// (the entity is not spawned and the bundle is dropped).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8, 2u16));
    /// assert_eq!(*world.get::<u16>(e).unwrap(), 2);
    /// ```
    #[inline]
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        let World {
            bundles,
            archetypes,
            entities,
            chunks,
            ..
        } = self;
        if let Some(info) = bundles.get(&TypeId::of::<B>()) {
            return spawn_in(info, archetypes, entities, chunks, bundle);
        }
        self.spawn_cold(bundle)
    }

    #[cold]
    #[inline(never)]
    fn spawn_cold<B: Bundle>(&mut self, bundle: B) -> Entity {
        self.init_bundle::<B>();
        let info = &self.bundles[&TypeId::of::<B>()];
        spawn_in(
            info,
            &mut self.archetypes,
            &mut self.entities,
            &mut self.chunks,
            bundle,
        )
    }

    /// Spawns one entity per item, filling the archetype's chunks directly, and returns the
    /// handles in order. The ids are the same as `spawn` called once per item would give.
    ///
    /// When the iterator's size is known (`ExactSizeIterator`, or equal `size_hint` bounds) all
    /// memory is reserved up front, exactly. If the iterator panics, the items spawned so far
    /// stay spawned and the world is valid.
    ///
    /// # Panics
    /// If the bundle type names a component type twice (before anything changes), or if the
    /// iterator panics. If the world would pass a [capacity limit](World#capacity-limits), as
    /// [`spawn`](World::spawn): when the size is known, a batch that cannot fit in 2^22 chunks
    /// (2^31 rows) panics before anything is spawned, and a lower size bound beyond 2^32 entity
    /// indices does too; otherwise the items spawned so far stay spawned.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let ids = world.spawn_batch((0..1000u32).map(|i| (i, i as f32)));
    /// assert_eq!(ids.len(), 1000);
    /// assert_eq!(*world.get::<u32>(ids[999]).unwrap(), 999);
    /// ```
    pub fn spawn_batch<B: Bundle, I: IntoIterator<Item = B>>(&mut self, iter: I) -> Vec<Entity> {
        let mut iter = iter.into_iter();
        if !self.bundles.contains_key(&TypeId::of::<B>()) {
            self.init_bundle::<B>();
        }
        let (lower, upper) = iter.size_hint();
        let exact = upper == Some(lower);
        let World {
            bundles,
            archetypes,
            entities,
            chunks,
            ..
        } = self;
        let info = &bundles[&TypeId::of::<B>()];
        let archetype = info.archetype;
        let rows = &mut archetypes[archetype.index()].rows;
        // Chunks first: their limit (2^31 rows) is below the index space's, and is checked
        // before anything is allocated.
        if exact {
            rows.reserve(archetype, chunks, lower);
        }
        entities.reserve(lower);
        let mut spawned = Vec::with_capacity(lower);
        let mut columns = [core::ptr::null_mut::<u8>(); MAX_BUNDLE];
        // The next item is fetched before a chunk is made for it, so no empty chunk is left
        // behind when the items end on a chunk boundary.
        let Some(mut item) = iter.next() else {
            return spawned;
        };
        loop {
            // One chunk segment: the vacant rows `row..CHUNK_CAPACITY` of the last chunk.
            let (chunk, mut row) = rows.prepare_push(archetype, chunks);
            let window = rows.window(chunk);
            let chunk_id = rows.chunks.list[chunk].id;
            // Row 0 of each element's column in this chunk.
            for (column, &(offset, size)) in columns.iter_mut().zip(info.slots.iter()) {
                *column = window.slot(offset, size, 0);
            }
            loop {
                let location = Location {
                    chunk: chunk_id,
                    row: row as u32,
                };
                let entity = entities.alloc(location);
                // SAFETY: `row` is the vacant row `rows.len` of chunk `chunk` (prepare_push
                // made it exist, `row < CHUNK_CAPACITY`), and `columns[i]` is row 0 of element
                // i's column in that chunk, aligned for its type (column offsets are multiples
                // of the alignment), so `row` values further on is that row's vacant slot.
                unsafe {
                    Rows::write_entity(window, row, entity);
                    item.write_row(&columns[..B::LEN], row);
                }
                rows.len += 1;
                spawned.push(entity);
                row += 1;
                // User code: if it panics, every row so far is committed.
                match iter.next() {
                    Some(next) => item = next,
                    None => return spawned,
                }
                if row == CHUNK_CAPACITY {
                    break;
                }
            }
        }
    }

    /// Makes room for `additional` more entities with bundle `B` (entity slots and chunks), so
    /// that spawning them does not allocate.
    ///
    /// # Panics
    /// If `B` names a component type twice. If the rows would need more than 2^22 chunks, or
    /// the entities more than 2^32 indices, counting those in use, or a new component set
    /// passes the archetype or component-type limit (see [capacity
    /// limits](World#capacity-limits)). The chunk limit is checked before any chunk is
    /// allocated, the index limit before any entity slot is.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.reserve::<(u32,)>(1000);
    /// world.spawn_batch((0..1000u32).map(|i| (i,)));
    /// assert_eq!(world.len(), 1000);
    /// ```
    pub fn reserve<B: Bundle>(&mut self, additional: usize) {
        if !self.bundles.contains_key(&TypeId::of::<B>()) {
            self.init_bundle::<B>();
        }
        let archetype = self.bundles[&TypeId::of::<B>()].archetype;
        // Chunks first, as in `spawn_batch`.
        self.archetypes[archetype.index()]
            .rows
            .reserve(archetype, &mut self.chunks, additional);
        self.entities.reserve(additional);
    }

    /// Despawns `entity`, dropping its components.
    ///
    /// If a component's `Drop` panics, the entity is still gone, its other components are
    /// dropped, and the panic continues after the world is consistent again.
    ///
    /// # Errors
    /// [`NoSuchEntity`] if the handle is stale or was never spawned.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((String::from("x"),));
    /// assert!(world.despawn(e).is_ok());
    /// assert!(world.despawn(e).is_err());
    /// ```
    pub fn despawn(&mut self, entity: Entity) -> Result<(), NoSuchEntity> {
        let found = self.find(entity).ok_or(NoSuchEntity(entity))?;
        self.entities.free(entity);
        if !self.archetypes[found.archetype].rows.needs_drop {
            // No column has drop glue, so no user code runs: the row is removed at once, with
            // no guard to finish it on unwind.
            vacate(
                &mut self.archetypes[found.archetype].rows,
                &mut self.chunks,
                &mut self.entities,
                found.window,
                found.chunk_id,
                found.row,
            );
            return Ok(());
        }
        let finish = FinishRemove {
            rows: &mut self.archetypes[found.archetype].rows,
            chunks: &mut self.chunks,
            entities: &mut self.entities,
            chunk_id: found.chunk_id,
            window: found.window,
            row: found.row,
        };
        // The entity is already freed; dropping `finish` (also while unwinding) removes the row.
        finish.rows.drop_row(found.chunk, found.row);
        drop(finish);
        Ok(())
    }

    /// Adds the components of `bundle` to `entity`, moving it to the matching archetype.
    /// A component the entity already has is overwritten and its old value dropped.
    ///
    /// # Errors
    /// [`NoSuchEntity`] if the handle is stale or was never spawned (the bundle is dropped).
    ///
    /// # Panics
    /// If `bundle` names a component type twice (before anything changes). If an overwritten
    /// value's `Drop` panics, the insert is complete and the other old values are dropped first.
    /// If the move would pass a [capacity limit](World#capacity-limits) (2^22 chunks, 2^32 − 1
    /// archetypes, 2^32 insert edges, 2^32 component types), before the entity changes (the
    /// bundle is dropped).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// world.insert(e, (2u8, 3u16)).unwrap();
    /// assert_eq!(*world.get::<u8>(e).unwrap(), 2);
    /// assert_eq!(*world.get::<u16>(e).unwrap(), 3);
    /// ```
    // Inlined into the caller: the common path is a short straight line (measured: 5% of a
    // 10k add/remove workload is the call itself); the rare paths stay out of line.
    #[inline(always)]
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) -> Result<(), NoSuchEntity> {
        let found = self.find(entity).ok_or(NoSuchEntity(entity))?;
        let hop = match self.archetypes[found.archetype]
            .insert_edges
            .get(TypeId::of::<B>())
        {
            Some(hop) => hop,
            None => self.init_insert_edge::<B>(found.archetype),
        };
        let edge = &self.insert_edges[hop.edge as usize];
        let target = hop.target as usize;
        if !edge.overwrites && target != found.archetype {
            // Every component is new, so the row moves (the empty bundle stays): the common
            // case, with the bundle written by type instead of byte-copied field by field.
            let fields = &edge.fields[..B::LEN];
            let (src, dst) = two_mut(&mut self.archetypes, found.archetype, target);
            // SAFETY: `edge` leads from the found row's archetype to `dst`'s, and
            // `complete_move` below removes the source row without dropping.
            let landing = unsafe {
                begin_move(
                    &mut dst.rows,
                    ArchetypeId(hop.target),
                    &mut self.chunks,
                    entity,
                    (found.window, found.row),
                    &edge.moves,
                )
            };
            // SAFETY: slot i is the landing row of bundle element i's column (edge field i, in
            // tuple order) in the landing chunk: aligned for its type, and vacant
            // (`begin_move` filled only the moved columns, which the bundle does not name
            // since none is overwritten).
            unsafe {
                bundle.write_with(|i| {
                    let f = fields[i];
                    landing.window.slot(f.offset, f.size, landing.row)
                })
            };
            complete_move(
                (&mut src.rows, &mut dst.rows),
                &mut self.chunks,
                &mut self.entities,
                entity,
                &landing,
                &found,
            );
            return Ok(());
        }
        self.insert_overwriting(entity, bundle, found, hop);
        Ok(())
    }

    /// The rest of [`insert`](World::insert): some bundle component is already present (or the
    /// bundle is empty), so old values are swapped out and dropped. Out of line, so the common
    /// path above keeps its registers.
    #[inline(never)]
    fn insert_overwriting<B: Bundle>(&mut self, entity: Entity, bundle: B, found: Found, hop: Hop) {
        let edge = &self.insert_edges[hop.edge as usize];
        let target = hop.target as usize;
        let mut fields = [core::ptr::null_mut::<u8>(); MAX_BUNDLE];
        let mut bundle = ManuallyDrop::new(bundle);
        // SAFETY: `bundle` is a live tuple and `fields` has MAX_BUNDLE >= B::LEN entries.
        unsafe { B::field_ptrs(&mut *bundle, &mut fields) };
        let source = found.window;
        if target == found.archetype {
            // Every component is present: swap the new values in place.
            for (&field, f) in fields.iter().zip(edge.fields.iter()) {
                let slot = source.slot(f.offset, f.size, found.row);
                // SAFETY: the slot holds the entity's live value of this element's type and
                // the field is a live value in the bundle: distinct, `size` bytes each. After
                // the swap the row owns the new value and the bundle field the old one.
                unsafe { core::ptr::swap_nonoverlapping(field, slot, f.size) };
            }
        } else {
            let (src, dst) = two_mut(&mut self.archetypes, found.archetype, target);
            // SAFETY: `edge` leads from the found row's archetype to `dst`'s, and
            // `complete_move` below removes the source row without dropping.
            let landing = unsafe {
                begin_move(
                    &mut dst.rows,
                    ArchetypeId(hop.target),
                    &mut self.chunks,
                    entity,
                    (source, found.row),
                    &edge.moves,
                )
            };
            // Nothing below can panic until the old values are dropped.
            for (&field, f) in fields.iter().zip(edge.fields.iter()) {
                let slot = landing.window.slot(f.offset, f.size, landing.row);
                if f.overwrite {
                    // SAFETY: the slot now holds the moved old value; swapping leaves the new
                    // value in the row and the old one in the bundle field (dropped below).
                    unsafe { core::ptr::swap_nonoverlapping(field, slot, f.size) };
                } else {
                    // SAFETY: vacant slot of this element's type; the value moves into it (the
                    // bundle is ManuallyDrop, and this field is not dropped below).
                    unsafe { copy_value(field, slot, f.size) };
                }
            }
            complete_move(
                (&mut src.rows, &mut dst.rows),
                &mut self.chunks,
                &mut self.entities,
                entity,
                &landing,
                &found,
            );
        }
        // The world is consistent; drop the overwritten old values now held by the bundle.
        if !edge.drops_old {
            return;
        }
        for_each_finishing_on_panic(edge.fields.len(), |i| {
            let f = &edge.fields[i];
            if let (true, Some(drop)) = (f.overwrite, f.drop) {
                // SAFETY: field i holds the old value swapped out of the row; it is dropped
                // exactly once here and the bundle itself is never dropped.
                unsafe { drop(fields[i], 1) };
            }
        });
    }

    /// Removes the components of bundle `B` from `entity` and returns them, moving the entity
    /// to the matching archetype.
    ///
    /// # Errors
    /// [`ComponentError::NoSuchEntity`] for a stale handle; [`ComponentError::MissingComponent`]
    /// naming the first component of `B` the entity lacks (nothing is removed then).
    ///
    /// # Panics
    /// If `B` names a component type twice (before anything changes). If the move would pass a
    /// [capacity limit](World#capacity-limits) (2^22 chunks, 2^32 − 1 archetypes, 2^32 remove
    /// edges, 2^32 component types), before the entity changes.
    ///
    /// # Examples
    /// ```
    /// use freyr::{ComponentError, World};
    /// let mut world = World::new();
    /// let e = world.spawn((1u8, 2u16));
    /// assert_eq!(world.remove::<(u16,)>(e), Ok((2,)));
    /// assert_eq!(
    ///     world.remove::<(u16,)>(e),
    ///     Err(ComponentError::MissingComponent { entity: e, component: "u16" })
    /// );
    /// assert!(world.contains(e));
    /// ```
    // Inlined into the caller, as `insert`.
    #[inline(always)]
    pub fn remove<B: Bundle>(&mut self, entity: Entity) -> Result<B, ComponentError> {
        let found = self
            .find(entity)
            .ok_or(ComponentError::NoSuchEntity(entity))?;
        let hop = match self.archetypes[found.archetype]
            .remove_edges
            .get(TypeId::of::<B>())
        {
            Some(hop) => hop,
            None => self.init_remove_edge::<B>(found.archetype),
        };
        let edge = &self.remove_edges[hop.edge as usize];
        if hop.target == Hop::MISSING {
            let Some(name) = edge.missing else {
                unreachable!(
                    "freyr: a remove hop without a target has an edge naming the missing component"
                );
            };
            return Err(ComponentError::MissingComponent {
                entity,
                component: name,
            });
        }
        let target = hop.target as usize;
        if target == found.archetype {
            // Only the empty bundle removes nothing and stays.
            // SAFETY: B::LEN == 0 here (a non-empty bundle always leaves the archetype), so no
            // slot is asked for.
            return Ok(unsafe { B::read_with(|_| unreachable!("the empty bundle has no slots")) });
        }
        let fields = &edge.fields[..B::LEN];
        let (src, dst) = two_mut(&mut self.archetypes, found.archetype, target);
        let source = found.window;
        // SAFETY: `edge` leads from the found row's archetype to `dst`'s, and `complete_move`
        // below removes the source row without dropping.
        let landing = unsafe {
            begin_move(
                &mut dst.rows,
                ArchetypeId(hop.target),
                &mut self.chunks,
                entity,
                (source, found.row),
                &edge.moves,
            )
        };
        // Nothing below can panic.
        // SAFETY: slot i is the entity's live value of tuple element i (edge field i, in tuple
        // order); they are moved out here and the row is removed below without dropping them.
        let value = unsafe {
            B::read_with(|i| {
                let f = fields[i];
                source.slot(f.offset, f.size, found.row)
            })
        };
        complete_move(
            (&mut src.rows, &mut dst.rows),
            &mut self.chunks,
            &mut self.entities,
            entity,
            &landing,
            &found,
        );
        Ok(value)
    }

    /// Pointer to `entity`'s `T`, or the reason there is none.
    #[inline]
    fn component_ptr<T: Component>(&self, entity: Entity) -> Result<*mut T, ComponentError> {
        let found = self
            .find(entity)
            .ok_or(ComponentError::NoSuchEntity(entity))?;
        let missing = ComponentError::MissingComponent {
            entity,
            component: core::any::type_name::<T>(),
        };
        let id = self.components.id_of(TypeId::of::<T>()).ok_or(missing)?;
        let archetype = &self.archetypes[found.archetype];
        let column = archetype.column_index(id).ok_or(missing)?;
        Ok(archetype
            .rows
            .slot(found.window, column, found.row)
            .cast::<T>())
    }

    /// A shared reference to `entity`'s component `T`.
    ///
    /// # Errors
    /// [`ComponentError::NoSuchEntity`] for a stale handle, [`ComponentError::MissingComponent`]
    /// if the entity has no `T`.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// assert_eq!(world.get::<u8>(e), Ok(&1));
    /// assert!(world.get::<u16>(e).is_err());
    /// ```
    pub fn get<T: Component>(&self, entity: Entity) -> Result<&T, ComponentError> {
        let ptr = self.component_ptr::<T>(entity)?;
        // SAFETY: the pointer is the entity's live, aligned `T` (column type checked through
        // its component id); `&self` keeps the world unmodified for the reference's lifetime.
        Ok(unsafe { &*ptr })
    }

    /// A mutable reference to `entity`'s component `T`.
    ///
    /// # Errors
    /// As [`get`](World::get).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// *world.get_mut::<u8>(e).unwrap() = 9;
    /// assert_eq!(world.get::<u8>(e), Ok(&9));
    /// ```
    pub fn get_mut<T: Component>(&mut self, entity: Entity) -> Result<&mut T, ComponentError> {
        let ptr = self.component_ptr::<T>(entity)?;
        // SAFETY: as in `get`; `&mut self` makes the reference exclusive, and the pointer has the
        // chunk allocation's provenance (it was never derived from a shared reference).
        Ok(unsafe { &mut *ptr })
    }

    /// Despawns every entity, dropping all components. Archetypes and registrations stay;
    /// chunks are freed; every old handle becomes stale.
    ///
    /// If a component's `Drop` panics, the archetype being cleared is still emptied (its other
    /// values dropped) and the panic continues; archetypes not yet reached keep their entities.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// world.clear();
    /// assert!(world.is_empty());
    /// assert!(!world.contains(e));
    /// ```
    pub fn clear(&mut self) {
        for archetype in &mut self.archetypes {
            let rows = &mut archetype.rows;
            let len = rows.len;
            for chunk in 0..rows.len.div_ceil(CHUNK_CAPACITY) {
                let window = rows.window(chunk);
                for row in 0..rows.chunk_len(chunk) {
                    // SAFETY: `row` is an initialised row of chunk `chunk`.
                    self.entities
                        .free(unsafe { Rows::read_entity(window, row) });
                }
            }
            rows.len = 0;
            rows.drop_values(0, len);
            rows.trim(&mut self.chunks, 0);
        }
    }

    /// The state a snapshot copies: allocator, component table, archetypes, chunk ids.
    pub(crate) fn snapshot_parts(&self) -> (&Entities, &Components, &[Archetype], &ChunkTable) {
        (
            &self.entities,
            &self.components,
            &self.archetypes,
            &self.chunks,
        )
    }

    /// A world made of restored parts, with a fresh [`WorldId`] and every cache (archetype
    /// index, bundles, edges) rebuilt or empty. `archetypes` are in id order.
    pub(crate) fn from_snapshot_parts(
        entities: Entities,
        components: Components,
        archetypes: Vec<Archetype>,
        chunks: ChunkTable,
    ) -> World {
        let mut archetype_index = HashMap::with_capacity(archetypes.len());
        for (index, archetype) in archetypes.iter().enumerate() {
            debug_assert_eq!(archetype.id().index(), index);
            archetype_index.insert(Box::from(archetype.components()), archetype.id());
        }
        World {
            id: WorldId::fresh(),
            entities,
            components,
            archetypes,
            archetype_index,
            chunks,
            bundles: TypeIdMap::default(),
            insert_edges: Vec::new(),
            remove_edges: Vec::new(),
        }
    }

    /// Test support: checks every structural invariant, panicking on the first violation.
    ///
    /// Checked: per archetype, all chunks but the last non-empty one are full, the slabs tile
    /// the chunks, chunk-table entries point back at their chunks, every stored entity's slot
    /// locates its row; the
    /// world length is the sum of archetype lengths.
    #[doc(hidden)]
    pub fn check_invariants(&self) {
        let mut total = 0;
        for (a, archetype) in self.archetypes.iter().enumerate() {
            let rows = &archetype.rows;
            total += rows.len;
            assert!(rows.chunks.list.len() >= archetype.chunk_count());
            let column_ids = rows.columns.iter().map(|c| c.id);
            assert!(column_ids.eq(archetype.components().iter().copied()));
            rows.chunks.check();
            for (index, chunk) in rows.chunks.list.iter().enumerate() {
                let entry = self.chunks.get(chunk.id);
                assert_eq!((entry.archetype as usize, entry.index as usize), (a, index));
                assert_eq!(entry.window, chunk.window);
            }
            for (index, chunk) in archetype.chunks().enumerate() {
                if index + 1 < archetype.chunk_count() {
                    assert_eq!(chunk.len(), CHUNK_CAPACITY, "non-last chunk not full");
                }
                for (row, &entity) in chunk.entities().iter().enumerate() {
                    assert_eq!(
                        self.entity_location(entity),
                        Some((archetype.id(), index, row)),
                        "slot of {entity:?} does not locate its row"
                    );
                }
            }
        }
        assert_eq!(total, self.len());
    }
}

/// The spawn hot path: one vacant row, one allocated id, one typed write per element.
#[inline(always)]
fn spawn_in<B: Bundle>(
    info: &BundleInfo,
    archetypes: &mut [Archetype],
    entities: &mut Entities,
    chunks: &mut ChunkTable,
    bundle: B,
) -> Entity {
    let slots = &info.slots[..B::LEN];
    let rows = &mut archetypes[info.archetype.index()].rows;
    let (chunk, row) = rows.prepare_push(info.archetype, chunks);
    let window = rows.window(chunk);
    let entity = entities.alloc(Location {
        chunk: rows.chunks.list[chunk].id,
        row: row as u32,
    });
    // SAFETY: (chunk, row) is the vacant row `rows.len` (prepare_push made its chunk exist);
    // slot i is element i's column slot at that row, aligned and vacant. Nothing can panic
    // between here and committing the row.
    unsafe {
        Rows::write_entity(window, row, entity);
        bundle.write_with(|i| {
            let (offset, size) = slots[i];
            window.slot(offset, size, row)
        });
    }
    rows.len += 1;
    entity
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn the_last_archetype_id_stays_below_the_missing_target() {
        assert_eq!(ArchetypeId::fresh(0), ArchetypeId::EMPTY);
        let last = ArchetypeId::fresh(ArchetypeId::LIMIT - 1);
        assert!(last.0 < Hop::MISSING);
    }

    // 2^32 - 1 archetypes (distinct component sets) are out of reach of a test, so the
    // archetype count is passed to the check that creating an archetype runs.
    #[test]
    #[should_panic(
        expected = "freyr: archetype limit reached: a world holds at most 4294967295 \
                               archetypes (distinct component sets) and 4294967295 exist; use \
                               fewer distinct component combinations"
    )]
    fn an_archetype_past_the_limit_panics_with_what_to_do() {
        ArchetypeId::fresh(ArchetypeId::LIMIT);
    }

    #[test]
    fn storage_types_are_send_and_sync() {
        assert_send_sync::<World>();
        assert_send_sync::<Archetype>();
        assert_send_sync::<crate::ChunkRef<'static>>();
        assert_send_sync::<crate::CommandBuffer>();
    }

    #[test]
    fn two_mut_returns_the_requested_pair() {
        let mut items = [1, 2, 3];
        let (a, b) = two_mut(&mut items, 2, 0);
        core::mem::swap(a, b);
        assert_eq!(items, [3, 2, 1]);
    }
}
