//! The allocator part of a snapshot: the entity slots and free stack, and the chunk ids.
//!
//! Both are copied verbatim. Restoring the same chunk ids for the same chunks keeps every live
//! entity's slot (global chunk id + row) valid as copied, and the free lists in the same order
//! make the restored world hand out the same entity ids and chunk ids as the original would.

use crate::chunk::ChunkTable;
use crate::entity::Entities;

/// A copy of a world's entity allocator and chunk-id table, reusing its buffers.
#[derive(Default)]
pub(crate) struct AllocatorImage {
    slots: Vec<u32>,
    free: Vec<u32>,
    len: usize,
    chunk_ids: usize,
    free_chunks: Vec<u32>,
}

impl AllocatorImage {
    /// Copies `entities` and `chunks` (no allocation once the buffers are large enough).
    pub(crate) fn capture(&mut self, entities: &Entities, chunks: &ChunkTable) {
        let (slots, free, len) = entities.parts();
        self.slots.clear();
        self.slots.extend_from_slice(slots);
        self.free.clear();
        self.free.extend_from_slice(free);
        self.len = len;
        let (count, free_chunks) = chunks.parts();
        self.chunk_ids = count;
        self.free_chunks.clear();
        self.free_chunks.extend_from_slice(free_chunks);
    }

    /// Overwrites `entities` with the allocator as captured, in its own buffers (a restore
    /// copies into the replaced world's table rather than a fresh one).
    pub(crate) fn restore_into(&self, entities: &mut Entities) {
        entities.set_parts(&self.slots, &self.free, self.len);
    }

    /// A chunk table with the captured id count and free list; the live ids are filled in as
    /// the archetypes' slabs are rebuilt.
    pub(crate) fn chunk_table(&self) -> ChunkTable {
        ChunkTable::with_free_ids(self.chunk_ids, &self.free_chunks)
    }

    /// Number of live entities captured.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}
