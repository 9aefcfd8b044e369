//! The read-only [`ChunkRef`] view of an archetype's rows, and the [`Archetype`] methods
//! that hand it out ([`Archetype::chunk`], [`Archetype::chunks`], [`Archetype::runs`],
//! [`Archetype::run_at`]). It sits above `archetype.rs`: the view borrows an archetype, while
//! the archetype's storage (`chunk.rs`) knows nothing of views.

use core::any::TypeId;
use core::ptr::NonNull;

use crate::CHUNK_CAPACITY;
use crate::archetype::Archetype;
use crate::chunk::Window;
use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::ticks::ChangedEntry;

/// A read-only view of rows of an archetype that are contiguous in every column: one non-empty
/// chunk ([`Archetype::chunk`](crate::Archetype::chunk), [`Archetype::chunks`](crate::Archetype::chunks)),
/// or a run of consecutive chunks that share a slab ([`Archetype::runs`](crate::Archetype::runs)):
/// its length, entity ids and columns.
///
/// Rows `0..len()` of every column are initialised; `entities()[r]` owns row `r`.
///
/// # What stays fixed while a `ChunkRef<'a>` exists
///
/// It borrows the world shared, so through safe code nothing changes for `'a`. The rule it
/// relies on, and the one code with `unsafe` must keep, is narrower:
///
/// - for `'a` the world is not structurally modified: the slab stays allocated, the rows stay
///   initialised and in place, and the entity ids ([`entities`](ChunkRef::entities)) do not
///   change;
/// - component *values* may be written during `'a`, but only through
///   [`column_ptr`](ChunkRef::column_ptr) by code that holds exclusive access to that column of
///   those rows by other means (the parallel query engine's access sets), and only while no
///   [`column`](ChunkRef::column) slice of that column is alive — a `&[T]` from `column` asserts
///   its values are unmodified while it lives.
///
/// # Examples
/// ```
/// use freyr::World;
/// let mut world = World::new();
/// let e = world.spawn((1u32, 2.0f32));
/// let (arch, chunk, row) = world.entity_location(e).unwrap();
/// let chunk = world.archetype(arch).chunk(chunk);
/// let id = world.component_id::<f32>().unwrap();
/// assert_eq!(chunk.len(), 1);
/// assert_eq!(chunk.entities()[row], e);
/// assert_eq!(chunk.column::<f32>(id).unwrap()[row], 2.0);
/// ```
#[derive(Copy, Clone)]
pub struct ChunkRef<'a> {
    archetype: &'a Archetype,
    window: Window,
    len: usize,
}

// SAFETY: a `ChunkRef` is a shared view (like `&'a [T]` for each column) of `Component` values,
// which are `Sync`; it never hands out mutable access (`column_ptr` writes need exclusivity
// established by the caller), so sending or sharing it across threads is as safe as `&[T]`.
unsafe impl Send for ChunkRef<'_> {}
// SAFETY: as above.
unsafe impl Sync for ChunkRef<'_> {}

impl<'a> ChunkRef<'a> {
    /// # Safety
    /// `window` is a chunk of `archetype`, and the `len` rows from its first row are initialised
    /// and lie in its slab (past `CHUNK_CAPACITY` they continue into the slab's next chunks);
    /// for `'a` the slab stays allocated, the world is not structurally modified (the rows stay
    /// in place and their entity ids unchanged), and column values change only as the type's
    /// documentation allows (through `column_ptr`, with exclusive access to that column).
    pub(crate) unsafe fn new(archetype: &'a Archetype, window: Window, len: usize) -> Self {
        ChunkRef {
            archetype,
            window,
            len,
        }
    }

    /// Number of rows (entities): `1..=CHUNK_CAPACITY` for a chunk, more for a run.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn_batch((0..3u8).map(|i| (i,)));
    /// let arch = world.archetypes().iter().find(|a| a.len() == 3).unwrap();
    /// assert_eq!(arch.chunk(0).len(), 3);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the chunk has no rows (never true for chunks handed out by an archetype).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn((1u8,));
    /// assert!(world.archetypes().iter().flat_map(|a| a.chunks()).all(|c| !c.is_empty()));
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entity ids, row by row.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let a = world.spawn((1u8,));
    /// let b = world.spawn((2u8,));
    /// let arch = world.archetype(world.entity_location(a).unwrap().0);
    /// assert_eq!(arch.chunk(0).entities(), &[a, b]);
    /// ```
    #[inline]
    pub fn entities(&self) -> &'a [Entity] {
        // SAFETY: the entity column starts at the slab base (aligned for `Entity`); this chunk's
        // window of it starts at slab row `first`, and its first `len` rows are initialised and
        // their entity ids unmodified for `'a` (`ChunkRef::new` contract: no structural change).
        unsafe { core::slice::from_raw_parts(self.window.entities(), self.len) }
    }

    /// The column of component `id` as a slice of `T`, or `None` if the archetype lacks `id`.
    ///
    /// # Panics
    /// If `id`'s component type is not `T`.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn((7u16,));
    /// let other = world.register::<u8>();
    /// let id = world.component_id::<u16>().unwrap();
    /// let arch = world.archetypes().iter().find(|a| a.has(id)).unwrap();
    /// assert_eq!(arch.chunk(0).column::<u16>(id), Some(&[7u16][..]));
    /// assert_eq!(arch.chunk(0).column::<u8>(other), None);
    /// ```
    pub fn column<T: Component>(&self, id: ComponentId) -> Option<&'a [T]> {
        let index = self.archetype.column_index(id)?;
        let column = &self.archetype.rows.columns[index];
        assert!(
            column.type_id == TypeId::of::<T>(),
            "freyr: component {:?} is `{}`, not `{}`",
            id,
            column.name,
            core::any::type_name::<T>()
        );
        let ptr = self.column_ptr(index).as_ptr().cast::<T>();
        // SAFETY: the column holds `T`s (checked above) starting at an offset aligned for `T`,
        // rows `0..len` are initialised and stay in place for `'a`; values are written only
        // through `column_ptr` by code with exclusive access to the column, which (type
        // contract) never overlaps a slice from `column` of that column.
        Some(unsafe { core::slice::from_raw_parts(ptr, self.len) })
    }

    /// Raw base pointer of column `column_index` (the position in
    /// [`Archetype::components`]): aligned for its type; for a zero-sized type it is the
    /// (aligned) slab base, valid for zero-sized accesses only. The chunk's `len()` values
    /// follow it contiguously (the chunk is a 512-row window of a column-major slab).
    ///
    /// Obtaining it is safe. The pointer carries the provenance of the slab allocation holding
    /// the chunk (it is not derived from a shared reference), so a caller that has exclusive access to
    /// that column of that chunk by other means may write through it while the world is not
    /// structurally modified and no [`column`](ChunkRef::column) slice of that column is alive
    /// (see the type's documentation).
    ///
    /// # Panics
    /// If `column_index >= components().len()`.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn((5u64,));
    /// let id = world.component_id::<u64>().unwrap();
    /// let arch = world.archetypes().iter().find(|a| a.has(id)).unwrap();
    /// let ptr = arch.chunk(0).column_ptr(arch.column_index(id).unwrap());
    /// assert_eq!(ptr.as_ptr() as usize % 8, 0);
    /// // SAFETY: row 0 is initialised and nothing else accesses it.
    /// assert_eq!(unsafe { *ptr.cast::<u64>().as_ptr() }, 5);
    /// ```
    #[inline]
    pub fn column_ptr(&self, column_index: usize) -> NonNull<u8> {
        let column = &self.archetype.rows.columns[column_index];
        let offset = self.window.column_offset(column.offset, column.size);
        // SAFETY: the column's run for this chunk lies within the slab allocation (offset and
        // size are 0 for tags), so the result is in bounds of the same allocation and non-null.
        unsafe { self.window.slab.add(offset) }
    }
}

impl core::fmt::Debug for ChunkRef<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ChunkRef")
            .field("archetype", &self.archetype.id())
            .field("len", &self.len)
            .finish()
    }
}

impl Archetype {
    /// The read-only view of chunk `index`.
    ///
    /// # Panics
    /// If `index >= chunk_count()`.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// let arch = world.archetype(world.entity_location(e).unwrap().0);
    /// assert_eq!(arch.chunk(0).entities(), &[e]);
    /// ```
    #[inline]
    pub fn chunk(&self, index: usize) -> ChunkRef<'_> {
        assert!(
            index < self.chunk_count(),
            "freyr: chunk {index} out of range ({} chunks)",
            self.chunk_count()
        );
        // SAFETY: `index` is a non-empty chunk of this archetype whose first `chunk_len(index)`
        // rows are initialised (dense-chunk invariant); `&self` keeps it allocated and unmodified.
        unsafe { ChunkRef::new(self, self.rows.window(index), self.rows.chunk_len(index)) }
    }

    /// The non-empty chunks, in order.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn_batch((0..1000u32).map(|i| (i,)));
    /// let id = world.component_id::<u32>().unwrap();
    /// let arch = world.archetypes().iter().find(|a| a.has(id)).unwrap();
    /// let lens: Vec<usize> = arch.chunks().map(|c| c.len()).collect();
    /// assert_eq!(lens, [512, 488]);
    /// ```
    pub fn chunks(&self) -> impl ExactSizeIterator<Item = ChunkRef<'_>> {
        (0..self.chunk_count()).map(move |index| self.chunk(index))
    }

    /// The non-empty chunks grouped into maximal runs of consecutive chunks that share a slab,
    /// in order, each viewed as one long [`ChunkRef`]: its rows are contiguous in every column
    /// (a slab stores each column's chunks back to back). For loops that do not care where one
    /// chunk ends, such as a per-row pass: one setup per run instead of one per chunk. Slabs hold
    /// up to 256 chunks, so a million-row archetype is about ten runs.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn_batch((0..3000u32).map(|i| (i,)));
    /// let id = world.component_id::<u32>().unwrap();
    /// let arch = world.archetypes().iter().find(|a| a.has(id)).unwrap();
    /// let runs: Vec<usize> = arch.runs().map(|r| r.len()).collect();
    /// assert_eq!(runs.iter().sum::<usize>(), 3000);
    /// assert!(runs.len() < arch.chunk_count()); // 6 chunks, in fewer slabs
    /// let values: Vec<u32> = arch.runs().flat_map(|r| r.column::<u32>(id).unwrap().to_vec()).collect();
    /// assert_eq!(values, (0..3000).collect::<Vec<u32>>());
    /// ```
    pub fn runs(&self) -> impl Iterator<Item = ChunkRef<'_>> {
        let count = self.chunk_count();
        let mut next = 0;
        core::iter::from_fn(move || {
            (next < count).then(|| {
                let run = self.run_at(next);
                next += run.len().div_ceil(CHUNK_CAPACITY);
                run
            })
        })
    }

    /// The run of consecutive chunks from chunk `index` to the last non-empty chunk of its slab,
    /// viewed as one [`ChunkRef`] whose rows are contiguous in every column, as in
    /// [`runs`](Self::runs) (which is `run_at(0)`, then `run_at` of the chunk after each run).
    /// Row `r` of the view is row `r % CHUNK_CAPACITY` of chunk `index + r / CHUNK_CAPACITY`;
    /// the run covers `len().div_ceil(CHUNK_CAPACITY)` chunks. O(1): for code that works on a
    /// range of chunk indices, one setup per slab instead of one per chunk.
    ///
    /// # Panics
    /// If `index >= chunk_count()`.
    ///
    /// # Examples
    /// ```
    /// use freyr::storage::CHUNK_CAPACITY;
    /// let mut world = freyr::World::new();
    /// world.spawn_batch((0..3000u32).map(|i| (i,)));
    /// let id = world.component_id::<u32>().unwrap();
    /// let arch = world.archetypes().iter().find(|a| a.has(id)).unwrap();
    /// let run = arch.run_at(1);
    /// let chunks = run.len().div_ceil(CHUNK_CAPACITY);
    /// assert!(chunks >= 1 && 1 + chunks <= arch.chunk_count());
    /// // It starts at chunk 1's first row and continues through the following chunks.
    /// let values = run.column::<u32>(id).unwrap();
    /// assert_eq!(values[0], 512);
    /// assert_eq!(values, &(512..512 + run.len() as u32).collect::<Vec<_>>()[..]);
    /// ```
    #[inline]
    pub fn run_at(&self, index: usize) -> ChunkRef<'_> {
        let count = self.chunk_count();
        assert!(
            index < count,
            "freyr: chunk {index} out of range ({count} chunks)"
        );
        let window = self.rows.window(index);
        // Chunks of the slab from this one on: a slab holds consecutive chunk indices, chunk
        // `index` sitting at slab row `first`.
        let in_slab = window.chunks as usize - window.first as usize / CHUNK_CAPACITY;
        let len = (self.rows.len - index * CHUNK_CAPACITY).min(in_slab * CHUNK_CAPACITY);
        // SAFETY: the `len` rows from chunk `index`'s row 0 are the rows of chunks
        // `index..index + len.div_ceil(CHUNK_CAPACITY)`, which are non-empty (`len` is at most
        // the rows left in the archetype) and all in `index`'s slab (at most the chunks left in
        // it): initialised (every chunk but the archetype's last is full) and contiguous per
        // column within the slab. `&self` keeps the slab allocated and the rows unmodified.
        unsafe { ChunkRef::new(self, window, len) }
    }
}

/// Change ticks (see [`World::set_change_tick`](crate::World::set_change_tick)): per chunk and
/// column, the tick write access was last granted and the tick a row last arrived. "Changed"
/// means that write access to the chunk's column was granted (a query with `&mut T`, a
/// `get_mut`, a row move), not that the bytes differ. Code that writes through
/// [`ChunkRef::column_ptr`] bypasses the stamping and must call
/// [`mark_changed`](Archetype::mark_changed) itself.
impl Archetype {
    /// The tick write access to column `column` of chunk `chunk` was last granted (0: never).
    ///
    /// # Panics
    /// If `chunk` is not an allocated chunk or `column` not a column of this archetype.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.set_change_tick(5);
    /// let e = world.spawn((1u32,));
    /// let (arch, chunk, _) = world.entity_location(e).unwrap();
    /// assert_eq!(world.archetype(arch).changed_tick(chunk, 0), 5);
    /// ```
    #[inline]
    pub fn changed_tick(&self, chunk: usize, column: usize) -> u64 {
        assert!(
            column < self.components().len(),
            "freyr: no column {column}"
        );
        self.rows.ticks.changed(chunk, column)
    }

    /// The tick a row last arrived in chunk `chunk` (a spawn, an insert or removal moving a row
    /// in, or the last row filling a hole), recorded per column (0: never).
    ///
    /// # Panics
    /// As [`changed_tick`](Archetype::changed_tick).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.set_change_tick(2);
    /// let e = world.spawn((1u32,));
    /// let (arch, chunk, _) = world.entity_location(e).unwrap();
    /// assert_eq!(world.archetype(arch).added_tick(chunk, 0), 2);
    /// ```
    #[inline]
    pub fn added_tick(&self, chunk: usize, column: usize) -> u64 {
        assert!(
            column < self.components().len(),
            "freyr: no column {column}"
        );
        self.rows.ticks.added(chunk, column)
    }

    /// Stamps column `column` of chunk `chunk` changed at `tick` (one relaxed store), for code
    /// that writes through [`ChunkRef::column_ptr`]: call it with the world's
    /// [`change_tick`](crate::World::change_tick) for every chunk and column written, or
    /// `Changed` filters will not see the write.
    ///
    /// # Panics
    /// As [`changed_tick`](Archetype::changed_tick).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u32,));
    /// let (arch, chunk, _) = world.entity_location(e).unwrap();
    /// world.archetype(arch).mark_changed(chunk, 0, 9);
    /// assert_eq!(world.archetype(arch).changed_tick(chunk, 0), 9);
    /// ```
    #[inline]
    pub fn mark_changed(&self, chunk: usize, column: usize, tick: u64) {
        assert!(
            column < self.components().len(),
            "freyr: no column {column}"
        );
        self.rows.ticks.set_changed(chunk, column, tick);
    }

    /// Stamps column `column` of every chunk that holds rows ([`chunk_count`](Archetype::chunk_count)
    /// of them) changed at `tick`: [`mark_changed`](Archetype::mark_changed) for a writer that
    /// visited the whole archetype, in one loop of relaxed stores (an unfiltered query stamps
    /// this way before its rows run).
    ///
    /// # Panics
    /// As [`changed_tick`](Archetype::changed_tick).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn_batch((0..1500u32).map(|i| (i, 0u8)));
    /// let e = world.spawn((7u32, 1u8));
    /// let (arch, _, _) = world.entity_location(e).unwrap();
    /// let archetype = world.archetype(arch);
    /// archetype.mark_all_changed(1, 4);
    /// for chunk in 0..archetype.chunk_count() {
    ///     assert_eq!(archetype.changed_tick(chunk, 1), 4);
    ///     assert_ne!(archetype.changed_tick(chunk, 0), 4);
    /// }
    /// ```
    #[inline]
    pub fn mark_all_changed(&self, column: usize, tick: u64) {
        self.rows
            .ticks
            .set_changed_first(self.chunk_count(), column, tick);
    }

    /// Column `column`'s changed-tick entries of the chunks holding rows now, in chunk order, as
    /// handles that stamp them ([`ChangedEntry::stamp`], what
    /// [`mark_changed`](Archetype::mark_changed) does) without looking the archetype or its
    /// tick storage up again: for a caller that stamps the same columns many times while the
    /// world's layout stays put.
    ///
    /// # Panics
    /// If `column` is not a column of this archetype.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u32, 2u8));
    /// let (arch, chunk, _) = world.entity_location(e).unwrap();
    /// let entries: Vec<_> = world.archetype(arch).changed_entries(0).collect();
    /// // SAFETY: the world is not modified between taking the entries and stamping.
    /// unsafe { entries[0].stamp(6) };
    /// assert_eq!(world.archetype(arch).changed_tick(chunk, 0), 6);
    /// ```
    pub fn changed_entries(
        &self,
        column: usize,
    ) -> impl ExactSizeIterator<Item = ChangedEntry> + '_ {
        self.rows.ticks.entries(self.chunk_count(), column)
    }
}
