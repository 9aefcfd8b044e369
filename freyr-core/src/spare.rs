//! Slab memory a dropped world gave back, kept for the next world built from parts.

use core::alloc::Layout;
use core::fmt;
use core::ptr::NonNull;

use hashbrown::HashMap;

/// Chunk memory (slab allocations, without their values) that a world gave up through
/// [`World::recycle_into`](crate::World::recycle_into), for the next world a snapshot restores
/// ([`WorldSnapshot::restore_over`](crate::snapshot::WorldSnapshot::restore_over)) or a load
/// builds to copy into instead of asking the allocator for new pages. A slab is reused only for a slab of the same size and
/// alignment; what is not reused stays here until [`clear`](SpareSlabs::clear) or drop frees
/// it.
///
/// A load of a large world into a registry that already holds one otherwise gets its pages
/// fresh from the kernel (the system allocator returns large blocks as soon as they are
/// freed), and that took a quarter of a 1M-entity load.
///
/// # Examples
/// ```
/// use freyr::World;
/// use freyr::storage::SpareSlabs;
///
/// let mut world = World::new();
/// world.spawn_batch((0..1000u32).map(|i| (i,)));
/// let mut spare = SpareSlabs::new();
/// world.recycle_into(&mut spare);
/// assert!(spare.bytes() >= 1000 * 4);
/// spare.clear();
/// assert_eq!(spare.bytes(), 0);
/// ```
#[derive(Default)]
pub struct SpareSlabs {
    slabs: HashMap<Layout, Vec<NonNull<u8>>>,
    bytes: usize,
}

// SAFETY: the pointers are allocations this value owns exclusively and holds no values in
// (plain memory), so moving or sharing it across threads is as safe as for a `Vec<u8>`.
unsafe impl Send for SpareSlabs {}
// SAFETY: as above; `&self` methods only read the sizes.
unsafe impl Sync for SpareSlabs {}

impl SpareSlabs {
    /// No spare memory.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(freyr::storage::SpareSlabs::new().bytes(), 0);
    /// ```
    pub fn new() -> SpareSlabs {
        SpareSlabs::default()
    }

    /// Bytes of memory held.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn((1u64,));
    /// let mut spare = freyr::storage::SpareSlabs::new();
    /// world.recycle_into(&mut spare);
    /// assert!(spare.bytes() > 0);
    /// ```
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Frees every slab held.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn((1u64,));
    /// let mut spare = freyr::storage::SpareSlabs::new();
    /// world.recycle_into(&mut spare);
    /// spare.clear();
    /// assert_eq!(spare.bytes(), 0);
    /// ```
    pub fn clear(&mut self) {
        for (layout, slabs) in self.slabs.drain() {
            for slab in slabs {
                // SAFETY: every held slab was allocated by the global allocator with `layout`
                // (see `give`) and is owned here alone; draining removes it, so it is freed
                // once.
                unsafe { std::alloc::dealloc(slab.as_ptr(), layout) };
            }
        }
        self.bytes = 0;
    }

    /// Takes a held slab of exactly `layout`, if there is one (the one given last): uninitialised
    /// memory (its bytes may be a previous world's) valid for `layout`, which the caller then
    /// owns.
    pub(crate) fn take(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        let slab = self.slabs.get_mut(&layout)?.pop()?;
        self.bytes -= layout.size();
        Some(slab)
    }

    /// Keeps `slab` for reuse.
    ///
    /// # Safety
    /// `slab` was allocated by the global allocator with `layout`, is not used by anything
    /// else, and holds no value that needs dropping (its bytes are never read as values again).
    pub(crate) unsafe fn give(&mut self, layout: Layout, slab: NonNull<u8>) {
        self.slabs.entry(layout).or_default().push(slab);
        self.bytes += layout.size();
    }
}

impl Drop for SpareSlabs {
    fn drop(&mut self) {
        self.clear();
    }
}

impl fmt::Debug for SpareSlabs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpareSlabs")
            .field("slabs", &self.slabs.values().map(Vec::len).sum::<usize>())
            .field("bytes", &self.bytes)
            .finish()
    }
}
