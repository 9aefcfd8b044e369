//! Archetypes: one sorted component set, its signature, and its rows stored in chunks.

use crate::CHUNK_CAPACITY;
use crate::chunk::{ChunkList, ChunkTable, Window};
use crate::column::{Column, copy_value, for_each_finishing_on_panic};
use crate::component::{ComponentId, Components};
use crate::edges::EdgeIndex;
use crate::entity::Entity;
use crate::spare::SpareSlabs;
use crate::ticks::ChangeTicks;

/// Empty chunks an archetype keeps for reuse after rows leave it, even when none are live: the
/// floor of the removal hysteresis in [`Rows::trim`].
pub(crate) const SPARE_CHUNKS: usize = 32;

/// An archetype's index in [`World::archetypes`](crate::World::archetypes), in creation order.
///
/// # Examples
/// ```
/// let mut world = freyr::World::new();
/// let e = world.spawn((1u8,));
/// let (arch, _, _) = world.entity_location(e).unwrap();
/// assert_eq!(world.archetypes()[arch.index()].id(), arch);
/// ```
#[derive(Copy, Clone, Eq, PartialEq, Hash, Ord, PartialOrd, Debug)]
pub struct ArchetypeId(pub(crate) u32);

impl ArchetypeId {
    /// The empty archetype (no components), which every world has as archetype 0.
    pub(crate) const EMPTY: ArchetypeId = ArchetypeId(0);

    /// How many archetypes a world holds at most: `2^32 - 1`, the ids `0..u32::MAX` (`u32::MAX`
    /// marks a remove edge without a target).
    pub(crate) const LIMIT: usize = u32::MAX as usize;

    /// The id of a new archetype when `count` exist.
    ///
    /// # Panics
    /// When `count` is [`ArchetypeId::LIMIT`].
    pub(crate) fn fresh(count: usize) -> ArchetypeId {
        match u32::try_from(count) {
            Ok(id) if count < ArchetypeId::LIMIT => ArchetypeId(id),
            _ => panic!(
                "freyr: archetype limit reached: a world holds at most {} archetypes (distinct \
                 component sets) and {count} exist; use fewer distinct component combinations \
                 (e.g. one component holding an enum rather than one marker type per variant), or \
                 split the entities across several worlds",
                ArchetypeId::LIMIT
            ),
        }
    }

    /// The id as an index into [`World::archetypes`](crate::World::archetypes).
    ///
    /// # Examples
    /// ```
    /// let world = freyr::World::new();
    /// assert_eq!(world.archetypes()[0].id().index(), 0);
    /// ```
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The rows of one archetype: chunk storage (in slabs) plus the column layout.
///
/// ```text
///  global row g  <->  chunk g / 512, row g % 512
///
///  chunks: [ full 512 ][ full 512 ] ... [ 1..=512 rows ][ empty ... ]
///           \___________ chunk_count() = ceil(len / 512) _________/
///  slabs:  | s0 |   s1    |        s2         |      s3 (spare?)     |
/// ```
///
/// Dense-chunk invariant: rows `0..len` are initialised, every chunk but the last non-empty one
/// is full. Slabs grow geometrically (1, 2, 4, ... chunks, capped; `reserve` allocates exactly
/// what it needs), so the last slab may hold empty chunks; after a removal at most one slab
/// with no live row is kept (more may exist after `reserve`). Removal moves the archetype's
/// last row into the hole.
pub(crate) struct Rows {
    pub(crate) columns: Box<[Column]>,
    /// `(offset, size)` of every column that takes bytes, in column order: what a row move
    /// copies, packed so the swap-remove loop reads one small array instead of the columns.
    pub(crate) sized: Box<[(usize, usize)]>,
    /// Whether any column has a drop function (skips the drop loop otherwise).
    pub(crate) needs_drop: bool,
    pub(crate) chunks: ChunkList,
    pub(crate) len: usize,
    /// Per (chunk, column): the tick write access was last granted and a row last arrived.
    pub(crate) ticks: ChangeTicks,
}

impl Rows {
    /// Length of chunk `index` (0 for spare chunks).
    #[inline]
    pub(crate) fn chunk_len(&self, index: usize) -> usize {
        self.len
            .saturating_sub(index * CHUNK_CAPACITY)
            .min(CHUNK_CAPACITY)
    }

    /// Where chunk `index` lives.
    #[inline]
    pub(crate) fn window(&self, index: usize) -> Window {
        self.chunks.list[index].window
    }

    /// The window and the global id of chunk `index`, read together (through the list's
    /// cursor: row moves ask for the same tail chunk again and again).
    #[inline]
    pub(crate) fn window_and_id(&mut self, index: usize) -> (Window, u32) {
        let chunk = self.chunks.entry(index);
        (chunk.window, chunk.id)
    }

    /// Pointer to `column`'s value at `row` of the chunk at `window` (computed, not
    /// dereferenced).
    #[inline]
    pub(crate) fn slot(&self, window: Window, column: usize, row: usize) -> *mut u8 {
        let column = &self.columns[column];
        window.slot(column.offset, column.size, row)
    }

    /// Makes sure a chunk exists for row `len` and returns `(chunk index, row)` of that vacant
    /// row. Nothing is committed: the caller initialises the entity and every column at that row,
    /// then increments `len`, with nothing that can panic in between.
    #[inline]
    pub(crate) fn prepare_push(
        &mut self,
        archetype: ArchetypeId,
        table: &mut ChunkTable,
    ) -> (usize, usize) {
        let (chunk, row) = (self.len / CHUNK_CAPACITY, self.len % CHUNK_CAPACITY);
        if chunk == self.chunks.list.len() {
            self.grow(archetype, table);
        }
        // A row arrives (conservatively stamped before it is committed): once per push or per
        // chunk of a batch, never per column value.
        // SAFETY: `len <= list.len() * CHUNK_CAPACITY` (rows live in listed chunks), so `chunk`
        // is at most the list's length, and `grow` above appended a chunk when it was equal:
        // `chunk` is an index of the list, and every growth of the list is followed by
        // `ticks.ensure(list.len())` (`grow`, `reserve`, `with_chunks`).
        unsafe { self.ticks.set_arrived(chunk, table.tick) };
        (chunk, row)
    }

    /// Appends a slab: geometric growth (as many chunks as exist, plus one: 1, 2, 4, ...),
    /// capped per slab.
    #[cold]
    fn grow(&mut self, archetype: ArchetypeId, table: &mut ChunkTable) {
        let chunks = (self.chunks.list.len() + 1).min(self.chunks.max_slab());
        self.chunks.push_slab(chunks, archetype.0, table);
        self.ticks.ensure(self.chunks.list.len());
    }

    /// Allocates chunks so that `additional` more rows fit without allocating: exactly the
    /// chunks needed, in as few slabs as the per-slab cap allows.
    pub(crate) fn reserve(
        &mut self,
        archetype: ArchetypeId,
        table: &mut ChunkTable,
        additional: usize,
    ) {
        let needed = self.len.saturating_add(additional).div_ceil(CHUNK_CAPACITY);
        let more = needed.saturating_sub(self.chunks.list.len());
        table.reserve(more);
        while self.chunks.list.len() < needed {
            let chunks = (needed - self.chunks.list.len()).min(self.chunks.max_slab());
            self.chunks.push_slab(chunks, archetype.0, table);
        }
        self.ticks.ensure(self.chunks.list.len());
    }

    /// Writes `entity` into the entity column at `row` of the chunk at `window`.
    ///
    /// # Safety
    /// `window` is a chunk of these rows and `row < CHUNK_CAPACITY`.
    #[inline]
    pub(crate) unsafe fn write_entity(window: Window, row: usize, entity: Entity) {
        // SAFETY: the entity column starts at the slab base, is aligned for `Entity` and has
        // CHUNK_CAPACITY slots from the window's first row (caller contract).
        unsafe { window.entities().add(row).write(entity) }
    }

    /// Reads the entity at `row` of the chunk at `window`.
    ///
    /// # Safety
    /// `window` is a chunk of these rows and `row` is an initialised row of it.
    #[inline]
    pub(crate) unsafe fn read_entity(window: Window, row: usize) -> Entity {
        // SAFETY: as in `write_entity`, and the row is initialised (caller contract).
        unsafe { window.entities().add(row).read() }
    }

    /// Removes row `row` of the chunk at `hole` WITHOUT dropping its values (they were dropped
    /// or moved out already): moves the archetype's last row into the hole, shrinks `len`, frees
    /// surplus chunks. Returns the entity that moved into the hole, if any. Never runs user code.
    #[inline(always)]
    pub(crate) fn swap_remove_nodrop(
        &mut self,
        hole: Window,
        row: usize,
        table: &mut ChunkTable,
    ) -> Option<Entity> {
        let last = self.len - 1;
        let (last_chunk, last_row) = (last / CHUNK_CAPACITY, last % CHUNK_CAPACITY);
        let src = self.chunks.entry(last_chunk).window;
        // The two rows are the same row iff their entity slots are the same address.
        let same = src.entities().wrapping_add(last_row) == hole.entities().wrapping_add(row);
        let moved = if !same {
            let dst = hole;
            let copy = |&(offset, size): &(usize, usize)| {
                // SAFETY: both rows are initialised rows of this archetype (`last < len`, and
                // (chunk, row) is the vacated row) and distinct, so the ranges do not overlap;
                // the last row's value is moved, and `len` shrinks below so it is not read or
                // dropped again.
                unsafe {
                    copy_value(
                        src.slot(offset, size, last_row),
                        dst.slot(offset, size, row),
                        size,
                    )
                };
            };
            // Rows of one or two columns without the loop.
            match &*self.sized {
                [column] => copy(column),
                [first, second] => {
                    copy(first);
                    copy(second);
                }
                columns => columns.iter().for_each(copy),
            }
            // SAFETY: `last_row` is initialised; (chunk, row) is a row of an existing chunk.
            let moved = unsafe { Rows::read_entity(src, last_row) };
            // SAFETY: see above.
            unsafe { Rows::write_entity(dst, row, moved) };
            Some(moved)
        } else {
            None
        };
        self.len = last;
        if self.len.is_multiple_of(CHUNK_CAPACITY) {
            let live = self.len / CHUNK_CAPACITY;
            self.trim(table, live.max(SPARE_CHUNKS));
        }
        moved
    }

    /// Frees trailing slabs that hold no chunk below `chunk_count + spare`. Removal passes
    /// `max(chunk_count, SPARE_CHUNKS)`: empty capacity is kept for reuse up to as much again
    /// as is live (at least [`SPARE_CHUNKS`]), so an archetype that fills and empties every
    /// tick (add-then-remove of a component, a count wobbling around a chunk boundary) does not
    /// allocate and free each time, and one that shrank for good gives its memory back.
    /// `spare == 0` frees every slab without a live row.
    pub(crate) fn trim(&mut self, table: &mut ChunkTable, spare: usize) {
        let keep = self.len.div_ceil(CHUNK_CAPACITY) + spare;
        while self
            .chunks
            .last_slab_start()
            .is_some_and(|start| start >= keep)
        {
            self.chunks.pop_slab(table);
        }
    }

    /// Drops the values of global rows `start..end` (which the caller no longer counts as live),
    /// column by column, chunk by chunk. If a `Drop` panics the rest are still dropped.
    pub(crate) fn drop_values(&self, start: usize, end: usize) {
        let columns = self.columns.len();
        if start >= end || !self.needs_drop {
            return;
        }
        let first_chunk = start / CHUNK_CAPACITY;
        let chunks = (end - 1) / CHUNK_CAPACITY + 1 - first_chunk;
        for_each_finishing_on_panic(chunks * columns, |work| {
            let chunk = first_chunk + work / columns;
            let column = work % columns;
            let Some(drop) = self.columns[column].drop else {
                return;
            };
            let from = start.max(chunk * CHUNK_CAPACITY);
            let to = end.min((chunk + 1) * CHUNK_CAPACITY);
            let ptr = self.slot(self.window(chunk), column, from % CHUNK_CAPACITY);
            // SAFETY: rows `from..to` of this chunk hold live values of the column's type that
            // the caller has given up; each (chunk, column) work item runs exactly once.
            unsafe { drop(ptr, to - from) };
        });
    }

    /// Drops every value of row (`chunk`, `row`), which the caller has given up (it then removes
    /// the row with [`swap_remove_nodrop`](Rows::swap_remove_nodrop)). If a `Drop` panics the
    /// other columns are still dropped.
    #[inline]
    pub(crate) fn drop_row(&self, chunk: usize, row: usize) {
        if !self.needs_drop {
            return;
        }
        let window = self.window(chunk);
        for_each_finishing_on_panic(self.columns.len(), |column| {
            if let Some(drop) = self.columns[column].drop {
                // SAFETY: the row is initialised and given up by the caller; each column's
                // value is dropped exactly once by this loop.
                unsafe { drop(self.slot(window, column, row), 1) };
            }
        });
    }

    /// Drops every value (finishing the others if a `Drop` panics, then continuing the panic)
    /// and moves the emptied slabs into `spare`. On a panic the slabs are freed instead, by the
    /// list's own drop; no value is dropped twice (the length is taken first).
    pub(crate) fn recycle_into(&mut self, spare: &mut SpareSlabs) {
        let len = core::mem::take(&mut self.len);
        self.drop_values(0, len);
        self.chunks.recycle_into(spare);
    }
}

impl Drop for Rows {
    fn drop(&mut self) {
        let len = core::mem::take(&mut self.len);
        self.drop_values(0, len);
        // `self.chunks` frees the memory when it is dropped next, even if a `Drop` panicked.
    }
}

/// An archetype: the entities that have exactly one set of component types.
///
/// Its rows live in chunks of [`CHUNK_CAPACITY`] rows; every chunk but the last is full. The
/// chunks are windows of column-major slabs, so a column's values for consecutive chunks of a
/// slab are contiguous in memory.
///
/// # Examples
/// ```
/// use freyr::World;
/// use freyr::storage::CHUNK_CAPACITY;
/// let mut world = World::new();
/// world.spawn_batch((0..CHUNK_CAPACITY + 1).map(|i| (i as u32, 0.5f32)));
/// let (a, b) = (world.component_id::<u32>().unwrap(), world.component_id::<f32>().unwrap());
/// let arch = world.archetypes().iter().find(|x| x.has(a)).unwrap();
/// assert_eq!(arch.components(), &[a, b]);
/// assert_eq!(arch.len(), CHUNK_CAPACITY + 1);
/// assert_eq!(arch.chunk_count(), 2);
/// assert_eq!(arch.chunk(0).len(), CHUNK_CAPACITY);
/// assert_eq!(arch.chunk(1).len(), 1);
/// ```
pub struct Archetype {
    id: ArchetypeId,
    components: Box<[ComponentId]>,
    /// Signature words: bit `i % usize::BITS` of word `i / usize::BITS` set iff `ComponentId(i)`
    /// is present; as many words as the largest component index needs.
    signature: Box<[usize]>,
    pub(crate) rows: Rows,
    /// Bundle type -> index into the world's insert edges (target archetype + mappings).
    pub(crate) insert_edges: EdgeIndex,
    /// Bundle type -> index into the world's remove edges.
    pub(crate) remove_edges: EdgeIndex,
}

impl Archetype {
    /// Builds an empty archetype for the sorted component set `components`.
    pub(crate) fn new(
        id: ArchetypeId,
        components: Box<[ComponentId]>,
        registry: &Components,
    ) -> Archetype {
        debug_assert!(components.windows(2).all(|w| w[0] < w[1]));
        let (columns, layout) =
            crate::column::chunk_layout(components.iter().map(|&c| registry.info(c)));
        let bits = components.last().map_or(0, |c| c.index() + 1);
        // Plain words rather than a bit-vector crate: bitvec 1.x's pointer handling is rejected
        // by Miri's Stacked Borrows model (ferrilab/bitvec#193), and this code is Miri-tested.
        let mut words = vec![0usize; bits.div_ceil(usize::BITS as usize)];
        for c in components.iter() {
            words[c.index() / usize::BITS as usize] |= 1 << (c.index() % usize::BITS as usize);
        }
        Archetype {
            id,
            components,
            signature: words.into_boxed_slice(),
            rows: Rows {
                ticks: ChangeTicks::new(columns.len()),
                needs_drop: columns.iter().any(|c| c.drop.is_some()),
                sized: columns
                    .iter()
                    .filter(|c| c.size != 0)
                    .map(|c| (c.offset, c.size))
                    .collect(),
                columns,
                chunks: ChunkList::new(layout),
                len: 0,
            },
            insert_edges: EdgeIndex::new(),
            remove_edges: EdgeIndex::new(),
        }
    }

    /// An empty archetype for the sorted set `components` whose chunks are allocated as
    /// `slabs` (chunks per slab, in order) with exactly the global `chunk_ids` (which `table`
    /// holds as unused entries), change ticks 0: the archetype a restore or a load fills. Its
    /// slabs come from `spare` where it holds one of the same layout. The caller checked that
    /// `slabs` sum to `chunk_ids.len()` and that every slab is non-empty.
    pub(crate) fn with_chunks(
        id: ArchetypeId,
        components: &[ComponentId],
        registry: &Components,
        slabs: &[u32],
        chunk_ids: &[u32],
        table: &mut ChunkTable,
        spare: &mut SpareSlabs,
    ) -> Archetype {
        let mut archetype = Archetype::new(id, components.into(), registry);
        let mut start = 0;
        for &chunks in slabs {
            let ids = &chunk_ids[start..start + chunks as usize];
            archetype
                .rows
                .chunks
                .push_slab_with_ids(ids, id.0, table, spare);
            start += chunks as usize;
        }
        let rows = &mut archetype.rows;
        rows.ticks.ensure(rows.chunks.list.len());
        archetype
    }

    /// This archetype's id.
    ///
    /// # Examples
    /// ```
    /// let world = freyr::World::new();
    /// assert_eq!(world.archetypes()[0].id().index(), 0);
    /// ```
    #[inline]
    pub fn id(&self) -> ArchetypeId {
        self.id
    }

    /// The component ids, sorted ascending; position `i` is column `i`.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let b = world.register::<u16>();
    /// let a = world.register::<u8>();
    /// let e = world.spawn((1u8, 2u16));
    /// let arch = world.archetype(world.entity_location(e).unwrap().0);
    /// assert_eq!(arch.components(), &[b, a]);
    /// ```
    #[inline]
    pub fn components(&self) -> &[ComponentId] {
        &self.components
    }

    /// The signature as words: bit `i % usize::BITS` of word `i / usize::BITS` is set iff
    /// `ComponentId(i)` is present. Bits past the end (components registered later, or with
    /// larger ids) are absent. Plain words rather than a bit-set type, so the public API does
    /// not tie users to one crate's version; [`has`](Archetype::has) tests one id.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8, 2u16));
    /// let arch = world.archetype(world.entity_location(e).unwrap().0);
    /// let id = world.component_id::<u16>().unwrap();
    /// let bits = usize::BITS as usize;
    /// let word = arch.signature()[id.index() / bits];
    /// assert_ne!(word & (1 << (id.index() % bits)), 0);
    /// assert!(arch.has(id));
    /// ```
    #[inline]
    pub fn signature(&self) -> &[usize] {
        &self.signature
    }

    /// Whether the archetype has component `id`.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// let other = world.register::<u16>();
    /// let arch = world.archetype(world.entity_location(e).unwrap().0);
    /// assert!(arch.has(world.component_id::<u8>().unwrap()));
    /// assert!(!arch.has(other));
    /// ```
    #[inline]
    pub fn has(&self, id: ComponentId) -> bool {
        let (word, bit) = (
            id.index() / usize::BITS as usize,
            id.index() % usize::BITS as usize,
        );
        self.signature
            .get(word)
            .is_some_and(|w| w & (1 << bit) != 0)
    }

    /// The position of `id` in [`components`](Archetype::components), i.e. its column index.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8, 2u16));
    /// let arch = world.archetype(world.entity_location(e).unwrap().0);
    /// assert_eq!(arch.column_index(world.component_id::<u16>().unwrap()), Some(1));
    /// ```
    #[inline]
    pub fn column_index(&self, id: ComponentId) -> Option<usize> {
        if !self.has(id) {
            return None;
        }
        self.components.binary_search(&id).ok()
    }

    /// Number of entities.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// assert_eq!(world.archetype(world.entity_location(e).unwrap().0).len(), 1);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.rows.len
    }

    /// Whether the archetype has no entities.
    ///
    /// # Examples
    /// ```
    /// let world = freyr::World::new();
    /// assert!(world.archetypes()[0].is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.rows.len == 0
    }

    /// Number of non-empty chunks; all but the last are full.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn_batch((0..600u32).map(|i| (i,)));
    /// let id = world.component_id::<u32>().unwrap();
    /// let arch = world.archetypes().iter().find(|a| a.has(id)).unwrap();
    /// assert_eq!(arch.chunk_count(), 2);
    /// ```
    #[inline]
    pub fn chunk_count(&self) -> usize {
        self.rows.len.div_ceil(CHUNK_CAPACITY)
    }

    /// Number of allocated chunks, including empty ones.
    ///
    /// Test support (feature `test-support`), not part of the API.
    #[cfg(any(test, feature = "test-support"))]
    #[doc(hidden)]
    pub fn allocated_chunks(&self) -> usize {
        self.rows.chunks.list.len()
    }

    /// Number of slab allocations holding the chunks.
    ///
    /// Test support (feature `test-support`), not part of the API.
    #[cfg(any(test, feature = "test-support"))]
    #[doc(hidden)]
    pub fn allocated_slabs(&self) -> usize {
        self.rows.chunks.slab_count()
    }

    /// Number of trailing slabs with no live row.
    ///
    /// Test support (feature `test-support`), not part of the API.
    #[cfg(any(test, feature = "test-support"))]
    #[doc(hidden)]
    pub fn empty_slabs(&self) -> usize {
        self.rows.chunks.empty_slabs(self.chunk_count())
    }
}

impl core::fmt::Debug for Archetype {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Archetype")
            .field("id", &self.id)
            .field("components", &self.components)
            .field("len", &self.rows.len)
            .finish()
    }
}
