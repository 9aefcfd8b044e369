//! The chunk memory a registry keeps from the world its last restore or load replaced, for the
//! next one to copy into: [`Registry::spare_memory`] and [`Registry::release_spare_memory`].

use super::Registry;

impl Registry {
    /// Bytes of chunk memory this registry keeps for its next [`restore`](Registry::restore)
    /// or load (`load_into`, with the `persist` feature): what the world that the last restore
    /// or load replaced held (its slabs, not its values). The next restore or load copies into
    /// that memory instead of asking the allocator for new pages, whose first touch is a page
    /// fault each (more than the copying itself for a restore, and a quarter of a 1M-entity
    /// load, measured); what it does not reuse it frees. So a registry that restores or loads
    /// into a world it holds keeps up to that world's memory once more, until
    /// [`release_spare_memory`](Registry::release_spare_memory). A restore copies the
    /// archetypes of plain copies only (every type registered with
    /// [`register_snapshot_copy`](Registry::register_snapshot_copy)) into the replaced
    /// world's own memory, where its values need no `Drop`, and keeps only the memory of the
    /// rows that did: none at all when the replaced world holds no value with drop glue.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_snapshot_copy::<u32>();
    /// registry.register_snapshot_clone::<String>();
    /// registry.spawn_batch((0..1000u32).map(|i| (i, i.to_string())));
    /// let snapshot = registry.snapshot().unwrap();
    /// assert_eq!(registry.spare_memory(), 0);
    /// registry.restore(&snapshot).unwrap();
    /// let kept = registry.spare_memory();
    /// assert!(kept >= 1000 * (4 + 24), "the replaced world's chunks");
    /// registry.restore(&snapshot).unwrap(); // copies into them, and keeps the replaced ones
    /// assert_eq!(registry.spare_memory(), kept);
    ///
    /// // Plain copies only: restored in the world's own memory.
    /// let mut plain = freyr::Registry::with_workers(1);
    /// plain.register_snapshot_copy::<u32>();
    /// plain.spawn_batch((0..1000u32).map(|i| (i,)));
    /// let snapshot = plain.snapshot().unwrap();
    /// plain.restore(&snapshot).unwrap();
    /// assert_eq!(plain.spare_memory(), 0);
    /// ```
    pub fn spare_memory(&self) -> usize {
        self.spare_slabs.bytes()
    }

    /// Frees the chunk memory kept for the next restore or load (see
    /// [`spare_memory`](Registry::spare_memory)) and returns its size in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_snapshot_clone::<String>();
    /// registry.spawn_batch((0..1000u32).map(|i| (i.to_string(),)));
    /// let snapshot = registry.snapshot().unwrap();
    /// registry.restore(&snapshot).unwrap();
    /// let kept = registry.spare_memory();
    /// assert!(kept > 0);
    /// assert_eq!(registry.release_spare_memory(), kept);
    /// assert_eq!(registry.spare_memory(), 0);
    /// ```
    pub fn release_spare_memory(&mut self) -> usize {
        let bytes = self.spare_slabs.bytes();
        self.spare_slabs.clear();
        bytes
    }
}
