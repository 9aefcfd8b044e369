//! Chunks: the fixed-capacity blocks of rows, their global ids, and the read-only [`ChunkRef`].

use core::alloc::Layout;
use core::any::TypeId;
use core::ptr::NonNull;

use crate::archetype::Archetype;
use crate::component::{Component, ComponentId};
use crate::entity::{Entity, MAX_CHUNKS};

/// One chunk allocation (layout: see [`chunk_layout`](crate::column::chunk_layout)).
pub(crate) struct Chunk {
    /// Base of the allocation; owned by the [`ChunkList`] that holds this chunk.
    pub(crate) base: NonNull<u8>,
    /// Global chunk id (index into the world's [`ChunkTable`]).
    pub(crate) id: u32,
}

/// The chunks of one archetype, all allocated with `layout`. Dropping the list frees them
/// (it never touches the values in them: the archetype drops those first).
pub(crate) struct ChunkList {
    pub(crate) layout: Layout,
    pub(crate) list: Vec<Chunk>,
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
            list: Vec::new(),
        }
    }

    /// Allocates an uninitialised chunk with global id `id`, appends it and returns its base.
    pub(crate) fn push_new(&mut self, id: u32) -> NonNull<u8> {
        self.list.reserve(1);
        // SAFETY: `layout` has a non-zero size (it always holds the entity column).
        let ptr = unsafe { std::alloc::alloc(self.layout) };
        let Some(base) = NonNull::new(ptr) else {
            std::alloc::handle_alloc_error(self.layout)
        };
        self.list.push(Chunk { base, id });
        base
    }

    /// Frees the last chunk (its values must already be dropped or moved out) and returns its id.
    pub(crate) fn pop_free(&mut self) -> Option<u32> {
        let chunk = self.list.pop()?;
        // SAFETY: `chunk.base` was allocated in `push_new` with `self.layout` and is removed from
        // the list, so it is freed exactly once.
        unsafe { std::alloc::dealloc(chunk.base.as_ptr(), self.layout) };
        Some(chunk.id)
    }
}

impl Drop for ChunkList {
    fn drop(&mut self) {
        while self.pop_free().is_some() {}
    }
}

/// Where a global chunk id points: archetype, chunk index inside it, and the chunk's base (a
/// copy of the owning [`ChunkList`]'s pointer, so a lookup by entity needs no further hops).
#[derive(Copy, Clone, Debug)]
pub(crate) struct ChunkEntry {
    pub(crate) archetype: u32,
    pub(crate) index: u32,
    pub(crate) base: NonNull<u8>,
}

// SAFETY: the entry only copies a chunk pointer owned by a `ChunkList` (which is Send + Sync);
// it is never dereferenced except under the same rules as the list's own pointer.
unsafe impl Send for ChunkEntry {}
// SAFETY: as above.
unsafe impl Sync for ChunkEntry {}

/// The world's global chunk ids (what an entity slot stores), reused LIFO.
#[derive(Default)]
pub(crate) struct ChunkTable {
    entries: Vec<ChunkEntry>,
    free: Vec<u32>,
}

impl ChunkTable {
    /// Assigns an id to a new chunk at `index` of `archetype`.
    ///
    /// # Panics
    /// When more than 2^22 chunks (2^31 rows) would exist at once.
    pub(crate) fn alloc(&mut self, archetype: u32, index: u32) -> u32 {
        let base = NonNull::dangling();
        let entry = ChunkEntry {
            archetype,
            index,
            base,
        };
        if let Some(id) = self.free.pop() {
            self.entries[id as usize] = entry;
            id
        } else {
            assert!(
                self.entries.len() < MAX_CHUNKS,
                "freyr: more than {MAX_CHUNKS} chunks"
            );
            self.entries.push(entry);
            (self.entries.len() - 1) as u32
        }
    }

    /// Records the base of chunk `id` once it is allocated.
    pub(crate) fn set_base(&mut self, id: u32, base: NonNull<u8>) {
        self.entries[id as usize].base = base;
    }

    /// Makes room for `additional` more ids.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.entries
            .reserve(additional.saturating_sub(self.free.len()));
    }

    /// Returns an id for reuse.
    pub(crate) fn free(&mut self, id: u32) {
        self.free.push(id);
    }

    #[inline]
    pub(crate) fn get(&self, id: u32) -> ChunkEntry {
        self.entries[id as usize]
    }
}

/// A read-only view of one non-empty chunk of an archetype: its length, entity ids and columns.
///
/// Rows `0..len()` of every column are initialised; `entities()[r]` owns row `r`.
///
/// # Examples
/// ```
/// use freyr_core::World;
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
    base: NonNull<u8>,
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
    /// `base` is a chunk of `archetype` whose first `len` rows are initialised, and it stays
    /// allocated and unmodified for `'a`.
    pub(crate) unsafe fn new(archetype: &'a Archetype, base: NonNull<u8>, len: usize) -> Self {
        ChunkRef {
            archetype,
            base,
            len,
        }
    }

    /// Number of rows (entities) in the chunk, `1..=CHUNK_CAPACITY`.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr_core::World::new();
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
    /// let mut world = freyr_core::World::new();
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
    /// let mut world = freyr_core::World::new();
    /// let a = world.spawn((1u8,));
    /// let b = world.spawn((2u8,));
    /// let arch = world.archetype(world.entity_location(a).unwrap().0);
    /// assert_eq!(arch.chunk(0).entities(), &[a, b]);
    /// ```
    #[inline]
    pub fn entities(&self) -> &'a [Entity] {
        // SAFETY: the entity column sits at offset 0 of the chunk (aligned for `Entity`), and its
        // first `len` rows are initialised and unmodified for `'a` (`ChunkRef::new` contract).
        unsafe { core::slice::from_raw_parts(self.base.as_ptr().cast::<Entity>(), self.len) }
    }

    /// The column of component `id` as a slice of `T`, or `None` if the archetype lacks `id`.
    ///
    /// # Panics
    /// If `id`'s component type is not `T`.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr_core::World::new();
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
        // rows `0..len` are initialised, and the chunk is unmodified for `'a`.
        Some(unsafe { core::slice::from_raw_parts(ptr, self.len) })
    }

    /// Raw base pointer of column `column_index` (the position in
    /// [`Archetype::components`]): aligned for its type; for a zero-sized type it is the
    /// (aligned) chunk base, valid for zero-sized accesses only.
    ///
    /// Obtaining it is safe. The pointer carries the provenance of the chunk's own allocation
    /// (it is not derived from a shared reference), so a caller that has exclusive access to
    /// that column of that chunk by other means may write through it while the world is not
    /// structurally modified.
    ///
    /// # Panics
    /// If `column_index >= components().len()`.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr_core::World::new();
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
        let offset = self.archetype.rows.columns[column_index].offset;
        // SAFETY: `offset` lies within the chunk allocation (or is 0 for tags), so the result is
        // in bounds of the same allocation and non-null.
        unsafe { self.base.add(offset) }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_ids_are_reused_lifo() {
        let mut table = ChunkTable::default();
        let a = table.alloc(0, 0);
        let b = table.alloc(1, 0);
        table.free(a);
        table.free(b);
        assert_eq!(table.alloc(2, 5), b);
        assert_eq!(table.get(b).archetype, 2);
        assert_eq!(table.get(b).index, 5);
    }
}
