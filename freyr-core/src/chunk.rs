//! Chunks and slabs: the logical 512-row chunks, the slab allocations that hold runs of them
//! column-major, and their global ids. The read-only view of them is in `chunk_ref.rs`.

use core::alloc::Layout;
use core::ptr::NonNull;

use crate::CHUNK_CAPACITY;
use crate::entity::{Entity, MAX_CHUNKS};
use crate::slab_memory::{alloc_slab, slab_align};
use crate::spare::SpareSlabs;

/// Most chunks one slab holds (`256 * 512` rows): long enough column runs that iteration runs
/// at plain-`Vec` speed (measured: slabs of 64 chunks ~1.05x, 256 chunks ~1.02x).
pub(crate) const MAX_SLAB_CHUNKS: usize = 256;

/// The least alignment of a slab allocation: a cache line. Every column, and every chunk's
/// window in it, starts a multiple of 512 bytes from the slab base (column offsets and window
/// starts are sums of `CHUNK_CAPACITY * size`), so with a line-aligned base each chunk's column
/// starts on a cache line and a row loop's aligned 32-byte vector accesses never straddle two
/// lines; at the allocator's 16-byte alignment every other one did.
pub(crate) const SLAB_ALIGN: usize = 64;

/// Most bytes one slab takes (unless a single chunk is bigger), so archetypes with huge
/// components do not allocate huge slabs.
pub(crate) const MAX_SLAB_BYTES: usize = 16 << 20;

/// Where one logical chunk's rows live: the 512-row window starting at row `first` of a slab.
///
/// A slab of `chunks` chunks is laid out like one chunk scaled by `chunks` (see
/// [`chunk_layout`](crate::column::chunk_layout)): column `i` starts at byte
/// `chunks * offset_i`, so row `r` of this chunk's column `i` is at
/// `slab + chunks * offset_i + (first + r) * size_i`, and entity ids at
/// `slab + (first + r) * 8`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    /// Base of the slab allocation.
    pub(crate) slab: NonNull<u8>,
    /// Number of chunks in the slab (the layout scale).
    pub(crate) chunks: u32,
    /// Slab row of this chunk's row 0 (its index in the slab times `CHUNK_CAPACITY`).
    pub(crate) first: u32,
}

impl Window {
    /// Byte offset from the slab base of this chunk's row 0 of a column at chunk-layout offset
    /// `offset` with values of `size` bytes.
    #[inline(always)]
    pub(crate) fn column_offset(self, offset: usize, size: usize) -> usize {
        self.chunks as usize * offset + self.first as usize * size
    }

    /// Pointer to row `row` of that column (computed with the slab's provenance, not
    /// dereferenced; in bounds whenever `row < CHUNK_CAPACITY`).
    #[inline(always)]
    pub(crate) fn slot(self, offset: usize, size: usize, row: usize) -> *mut u8 {
        self.slab
            .as_ptr()
            .wrapping_add(self.chunks as usize * offset + (self.first as usize + row) * size)
    }

    /// Pointer to this chunk's entity id at row 0 (the entity column starts at the slab base).
    #[inline(always)]
    pub(crate) fn entities(self) -> *mut Entity {
        self.slab
            .as_ptr()
            .cast::<Entity>()
            .wrapping_add(self.first as usize)
    }
}

/// One logical chunk of an archetype: its window in a slab and its global id.
#[derive(Copy, Clone)]
pub(crate) struct Chunk {
    pub(crate) window: Window,
    /// Global chunk id (index into the world's [`ChunkTable`]).
    pub(crate) id: u32,
}

/// One slab allocation: `chunks` consecutive chunks of an archetype, from chunk index `start`.
struct Slab {
    base: NonNull<u8>,
    chunks: usize,
    start: usize,
}

/// The chunks of one archetype and the slabs that hold them. Dropping the list frees the slabs
/// (it never touches the values in them: the archetype drops those first).
///
/// ```text
///  chunk index:  0 | 1   2 | 3   4   5   6 | 7 ...          (slab sizes 1, 2, 4, ... capped)
///  slab:        s0 |  s1   |      s2       | s3 ...
///
///  slab s2 (4 chunks = 2048 rows), column-major, aligned for the most-aligned column:
///  +------------------------+-----+-------------------------+-----+------------------+
///  | Entity x 2048          | pad | C0 x 2048               | pad | C1 x 2048  ...   |
///  +------------------------+-----+-------------------------+-----+------------------+
///  ^ 0                           ^ 4 * offset0                    ^ 4 * offset1
///  chunk 4 = rows 512..1024 of every column of s2
/// ```
pub(crate) struct ChunkList {
    /// Layout of a one-chunk slab; a slab of `k` chunks is this scaled by `k`.
    pub(crate) layout: Layout,
    /// Most chunks per slab for this archetype.
    max_slab: usize,
    slabs: Vec<Slab>,
    pub(crate) list: Vec<Chunk>,
    /// The entry [`entry`](ChunkList::entry) returned last, with its index (`usize::MAX`:
    /// none). Row moves look up the same tail chunk again and again; the copy saves the list
    /// load on their critical path. `pop_slab` clears it; `push_slab` only appends, so the
    /// entries before stay valid.
    cursor: (usize, Chunk),
}

// SAFETY: a chunk list owns its allocations exclusively (no aliasing pointers escape except
// through borrows of the archetype), and the values stored in them are `Component`s, which are
// `Send + Sync`; so moving or sharing the list across threads is as safe as for a `Vec<T>`.
unsafe impl Send for ChunkList {}
// SAFETY: as above; shared access only reads through `&self` methods.
unsafe impl Sync for ChunkList {}

impl ChunkList {
    pub(crate) fn new(layout: Layout) -> ChunkList {
        ChunkList {
            layout,
            max_slab: (MAX_SLAB_BYTES / layout.size()).clamp(1, MAX_SLAB_CHUNKS),
            slabs: Vec::new(),
            list: Vec::new(),
            cursor: (usize::MAX, NO_CHUNK),
        }
    }

    /// Entry `index` of the list (through the one-entry cursor).
    ///
    /// # Panics
    /// If `index >= list.len()`.
    #[inline]
    pub(crate) fn entry(&mut self, index: usize) -> Chunk {
        if self.cursor.0 == index {
            return self.cursor.1;
        }
        let chunk = self.list[index];
        self.cursor = (index, chunk);
        chunk
    }

    /// Most chunks one slab of this list may hold.
    #[inline]
    pub(crate) fn max_slab(&self) -> usize {
        self.max_slab
    }

    /// Number of slabs.
    #[cfg(any(test, feature = "test-support"))]
    pub(crate) fn slab_count(&self) -> usize {
        self.slabs.len()
    }

    /// Number of trailing slabs none of whose chunks is below `used` (the non-empty chunks).
    #[cfg(any(test, feature = "test-support"))]
    pub(crate) fn empty_slabs(&self, used: usize) -> usize {
        self.slabs
            .iter()
            .rev()
            .take_while(|s| s.start >= used)
            .count()
    }

    /// Checks that the slabs tile the chunk list and every chunk's window matches its slab.
    #[cfg(any(test, feature = "test-support"))]
    pub(crate) fn check(&self) {
        let mut next = 0;
        for slab in &self.slabs {
            assert_eq!(slab.start, next, "slabs tile the chunks");
            for c in 0..slab.chunks {
                let window = self.list[slab.start + c].window;
                assert_eq!(window.slab, slab.base);
                assert_eq!(window.chunks as usize, slab.chunks);
                assert_eq!(window.first as usize, c * CHUNK_CAPACITY);
            }
            next += slab.chunks;
        }
        assert_eq!(next, self.list.len());
    }

    /// Index of the first chunk of the last slab, if any.
    pub(crate) fn last_slab_start(&self) -> Option<usize> {
        self.slabs.last().map(|s| s.start)
    }

    /// The allocation of a slab of `chunks` chunks: the one-chunk layout scaled, aligned to at
    /// least a cache line ([`SLAB_ALIGN`]), and to a huge page when it is one or more
    /// ([`slab_align`]).
    fn slab_layout(&self, chunks: usize) -> Layout {
        let size = self
            .layout
            .size()
            .checked_mul(chunks)
            .expect("freyr: slab size overflows usize");
        let align = slab_align(size, self.layout.align().max(SLAB_ALIGN));
        Layout::from_size_align(size, align).expect("freyr: slab layout too large")
    }

    /// Allocates an uninitialised slab of `chunks` chunks (`1..=max_slab`) and appends them,
    /// each with a fresh global id from `table` for `archetype`.
    ///
    /// # Panics
    /// When more than 2^22 chunks would exist at once (before anything changes).
    pub(crate) fn push_slab(&mut self, chunks: usize, archetype: u32, table: &mut ChunkTable) {
        debug_assert!((1..=self.max_slab).contains(&chunks));
        table.reserve(chunks);
        self.list.reserve(chunks);
        self.slabs.reserve(1);
        let layout = self.slab_layout(chunks);
        // SAFETY: `layout` has a non-zero size (it always holds the entity column, `chunks > 0`).
        let base = unsafe { alloc_slab(layout) };
        let start = self.list.len();
        self.slabs.push(Slab {
            base,
            chunks,
            start,
        });
        for c in 0..chunks {
            let window = Window {
                slab: base,
                chunks: chunks as u32,
                first: (c * CHUNK_CAPACITY) as u32,
            };
            let id = table.alloc(archetype, (start + c) as u32, window);
            self.list.push(Chunk { window, id });
        }
    }

    /// The chunk count of every slab, in order (for snapshots).
    pub(crate) fn slab_sizes(&self) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.slabs.iter().map(|s| s.chunks)
    }

    /// Allocates an uninitialised slab of `ids.len()` chunks and appends them with exactly those
    /// global ids, which `table` must hold as unused entries (see
    /// [`ChunkTable::with_free_ids`]). For restoring a snapshot.
    ///
    /// The slab is one of `spare`'s of the same layout if it holds one (its bytes are then a
    /// previous world's, as uninitialised to this list as fresh memory), else a new allocation.
    pub(crate) fn push_slab_with_ids(
        &mut self,
        ids: &[u32],
        archetype: u32,
        table: &mut ChunkTable,
        spare: &mut SpareSlabs,
    ) {
        let chunks = ids.len();
        debug_assert!(chunks >= 1);
        self.list.reserve(chunks);
        self.slabs.reserve(1);
        let layout = self.slab_layout(chunks);
        let base = spare.take(layout).unwrap_or_else(|| {
            // SAFETY: `layout` has a non-zero size (it always holds the entity column,
            // `chunks > 0`).
            unsafe { alloc_slab(layout) }
        });
        let start = self.list.len();
        self.slabs.push(Slab {
            base,
            chunks,
            start,
        });
        for (c, &id) in ids.iter().enumerate() {
            let window = Window {
                slab: base,
                chunks: chunks as u32,
                first: (c * CHUNK_CAPACITY) as u32,
            };
            table.entries[id as usize] = ChunkEntry {
                archetype,
                index: (start + c) as u32,
                window,
            };
            self.list.push(Chunk { window, id });
        }
    }

    /// Frees the last slab (the values in its chunks must already be dropped or moved out) and
    /// returns its chunks' ids to `table`. Returns whether there was a slab.
    pub(crate) fn pop_slab(&mut self, table: &mut ChunkTable) -> bool {
        let Some(slab) = self.slabs.pop() else {
            return false;
        };
        self.cursor.0 = usize::MAX;
        while self.list.len() > slab.start {
            if let Some(chunk) = self.list.pop() {
                table.free(chunk.id);
            }
        }
        let layout = self.slab_layout(slab.chunks);
        // SAFETY: `slab.base` was allocated in `push_slab` with this layout and is removed from
        // the list, so it is freed exactly once.
        unsafe { std::alloc::dealloc(slab.base.as_ptr(), layout) };
        true
    }

    /// Moves every slab into `spare` and empties the list. The values in the slabs must already
    /// be dropped or moved out (as before the list's own drop, which frees them instead); the
    /// chunk ids are not returned (the world they belong to is being taken apart).
    pub(crate) fn recycle_into(&mut self, spare: &mut SpareSlabs) {
        self.cursor.0 = usize::MAX;
        self.list.clear();
        // Last slab first: `spare` hands the last given back first, so a world of the same
        // slabs rebuilt from it gets each slab where it was.
        for slab in core::mem::take(&mut self.slabs).into_iter().rev() {
            let layout = self.slab_layout(slab.chunks);
            // SAFETY: `slab.base` was allocated with this layout (by the global allocator, or
            // taken from a spare set that got it so), is taken out of the list here, so nothing
            // else uses it, and its values are gone (the caller's precondition).
            unsafe { spare.give(layout, slab.base) };
        }
    }
}

/// The cursor's value while it holds no entry (never read: its index is `usize::MAX`).
const NO_CHUNK: Chunk = Chunk {
    window: Window {
        slab: NonNull::dangling(),
        chunks: 0,
        first: 0,
    },
    id: u32::MAX,
};

impl Drop for ChunkList {
    fn drop(&mut self) {
        for slab in core::mem::take(&mut self.slabs) {
            let layout = self.slab_layout(slab.chunks);
            // SAFETY: as in `pop_slab`; each slab is taken out of the list once.
            unsafe { std::alloc::dealloc(slab.base.as_ptr(), layout) };
        }
    }
}

/// Where a global chunk id points: archetype, chunk index inside it, and the chunk's window (a
/// copy of the owning [`ChunkList`]'s, so a lookup by entity needs no further hops).
#[derive(Copy, Clone, Debug)]
pub(crate) struct ChunkEntry {
    pub(crate) archetype: u32,
    pub(crate) index: u32,
    pub(crate) window: Window,
}

// SAFETY: the entry only copies a slab pointer owned by a `ChunkList` (which is Send + Sync);
// it is never dereferenced except under the same rules as the list's own pointer.
unsafe impl Send for ChunkEntry {}
// SAFETY: as above.
unsafe impl Sync for ChunkEntry {}

/// The world's global chunk ids (what an entity slot stores), reused LIFO.
#[derive(Default)]
pub(crate) struct ChunkTable {
    entries: Vec<ChunkEntry>,
    free: Vec<u32>,
    /// The world's current change tick ([`World::set_change_tick`](crate::World::set_change_tick)):
    /// what row arrivals stamp. Kept here because every path that moves a row holds the table.
    pub(crate) tick: u64,
}

impl ChunkTable {
    /// Assigns an id to the chunk at `index` of `archetype`, stored at `window`. Call
    /// [`reserve`](ChunkTable::reserve) first: this never panics after it.
    pub(crate) fn alloc(&mut self, archetype: u32, index: u32, window: Window) -> u32 {
        let entry = ChunkEntry {
            archetype,
            index,
            window,
        };
        if let Some(id) = self.free.pop() {
            self.entries[id as usize] = entry;
            id
        } else {
            self.entries.push(entry);
            (self.entries.len() - 1) as u32
        }
    }

    /// Makes room for `additional` more ids.
    ///
    /// # Panics
    /// When more than [`MAX_CHUNKS`] chunks (2^31 rows) would exist at once, before anything is
    /// allocated.
    pub(crate) fn reserve(&mut self, additional: usize) {
        let fresh = additional.saturating_sub(self.free.len());
        if self.entries.len().saturating_add(fresh) > MAX_CHUNKS {
            chunk_table_full(self.entries.len() - self.free.len(), additional);
        }
        self.entries.reserve(fresh);
    }

    /// Returns an id for reuse.
    pub(crate) fn free(&mut self, id: u32) {
        self.free.push(id);
    }

    /// The number of ids ever handed out and the free ids (reused last first), for snapshots.
    pub(crate) fn parts(&self) -> (usize, &[u32]) {
        (self.entries.len(), &self.free)
    }

    /// A table of `count` ids whose free list is `free`; every other id is an unused entry that
    /// [`ChunkList::push_slab_with_ids`] fills in. For restoring a snapshot.
    pub(crate) fn with_free_ids(count: usize, free: &[u32]) -> ChunkTable {
        let unused = ChunkEntry {
            archetype: u32::MAX,
            index: u32::MAX,
            window: NO_CHUNK.window,
        };
        ChunkTable {
            entries: vec![unused; count],
            free: free.to_vec(),
            tick: 0,
        }
    }

    /// The entry of chunk `id`. Unchecked: every lookup of an entity's row goes through it.
    ///
    /// # Safety
    /// `id` was handed out by this table (a live chunk's id, as a live entity slot or an
    /// archetype's chunk list holds); entries are never removed.
    #[inline]
    pub(crate) unsafe fn get(&self, id: u32) -> ChunkEntry {
        debug_assert!((id as usize) < self.entries.len());
        // SAFETY: a handed-out id indexes an entry (caller contract).
        *unsafe { self.entries.get_unchecked(id as usize) }
    }
}

#[cold]
#[inline(never)]
fn chunk_table_full(exist: usize, more: usize) -> ! {
    panic!(
        "freyr: chunk limit reached: a world holds at most {MAX_CHUNKS} chunks of \
         {CHUNK_CAPACITY} rows ({} rows over all archetypes), {exist} exist and {more} more \
         were asked for; despawn entities, reserve less, or split the entities across several \
         worlds",
        MAX_CHUNKS * CHUNK_CAPACITY
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        not(miri),
        should_panic(
            expected = "freyr: chunk limit reached: a world holds at most 4194304 chunks \
                        of 512 rows (2147483648 rows over all archetypes), 1 exist and \
                        4194304 more were asked for; despawn entities"
        )
    )]
    #[cfg_attr(
        miri,
        should_panic(
            expected = "freyr: chunk limit reached: a world holds at most 33554432 chunks \
                        of 64 rows (2147483648 rows over all archetypes), 1 exist and \
                        33554432 more were asked for; despawn entities"
        )
    )]
    fn reserving_past_the_chunk_limit_panics_with_what_to_do() {
        let mut table = ChunkTable::default();
        let window = Window {
            slab: NonNull::dangling(),
            chunks: 1,
            first: 0,
        };
        table.reserve(1);
        table.alloc(0, 0, window);
        table.reserve(MAX_CHUNKS);
    }

    #[test]
    fn chunk_ids_are_reused_lifo() {
        let mut table = ChunkTable::default();
        let window = Window {
            slab: NonNull::dangling(),
            chunks: 1,
            first: 0,
        };
        table.reserve(2);
        let a = table.alloc(0, 0, window);
        let b = table.alloc(1, 0, window);
        table.free(a);
        table.free(b);
        assert_eq!(table.alloc(2, 5, window), b);
        // SAFETY: `b` was handed out by this table.
        let entry = unsafe { table.get(b) };
        assert_eq!((entry.archetype, entry.index), (2, 5));
    }

    #[test]
    fn slab_sizes_are_capped_by_chunks_and_bytes() {
        let small = ChunkList::new(Layout::from_size_align(16 << 10, 8).unwrap());
        assert_eq!(small.max_slab(), MAX_SLAB_CHUNKS);
        let big = ChunkList::new(Layout::from_size_align(1 << 20, 8).unwrap());
        assert_eq!(big.max_slab(), MAX_SLAB_BYTES >> 20);
        let huge = ChunkList::new(Layout::from_size_align(64 << 20, 8).unwrap());
        assert_eq!(huge.max_slab(), 1);
    }

    #[test]
    fn every_slab_and_every_chunk_column_start_is_cache_line_aligned() {
        let mut table = ChunkTable::default();
        // A one-chunk layout of align 4 (entities, then a `[f32; 3]` column at 4096).
        let mut list = ChunkList::new(Layout::from_size_align(4096 + 12 * 512, 4).unwrap());
        for chunks in [1, 2, 3, 5, 8] {
            list.push_slab(chunks, 0, &mut table);
        }
        for chunk in &list.list {
            let column = chunk.window.slot(4096, 12, 0) as usize;
            assert_eq!(chunk.window.slab.as_ptr() as usize % SLAB_ALIGN, 0);
            assert_eq!(
                column % SLAB_ALIGN,
                0,
                "chunk {chunk:?}",
                chunk = chunk.window
            );
        }
        while list.pop_slab(&mut table) {}
    }

    #[test]
    fn slabs_of_a_huge_page_or_more_start_on_a_huge_page() {
        use crate::slab_memory::HUGE_PAGE;
        let mut table = ChunkTable::default();
        // 16 KiB chunks: a 128-chunk slab is exactly one huge page, a 64-chunk one half.
        let mut list = ChunkList::new(Layout::from_size_align(16 << 10, 8).unwrap());
        list.push_slab(128, 0, &mut table);
        list.push_slab(256, 0, &mut table);
        assert_eq!(list.list[0].window.slab.as_ptr() as usize % HUGE_PAGE, 0);
        assert_eq!(list.list[128].window.slab.as_ptr() as usize % HUGE_PAGE, 0);
        assert_eq!(list.slab_layout(64).align(), SLAB_ALIGN);
        assert_eq!(list.slab_layout(128).align(), HUGE_PAGE);
        while list.pop_slab(&mut table) {}
    }

    #[test]
    fn slabs_hand_out_windows_and_return_ids() {
        let mut table = ChunkTable::default();
        let mut list = ChunkList::new(Layout::from_size_align(4096, 8).unwrap());
        list.push_slab(1, 0, &mut table);
        list.push_slab(3, 0, &mut table);
        assert_eq!(list.list.len(), 4);
        assert_eq!(list.slab_count(), 2);
        assert_eq!(list.last_slab_start(), Some(1));
        let w = list.list[3].window;
        assert_eq!((w.chunks, w.first), (3, 2 * CHUNK_CAPACITY as u32));
        // SAFETY: the list's ids were handed out by this table.
        let entry = unsafe { table.get(list.list[3].id) };
        assert_eq!((entry.window, entry.index), (w, 3));
        assert!(list.pop_slab(&mut table));
        assert_eq!(list.list.len(), 1);
        assert_eq!(table.free.len(), 3);
    }
}
