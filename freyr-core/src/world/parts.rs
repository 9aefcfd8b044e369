//! The world taken apart and put back together: the parts a snapshot copies, and a world
//! rebuilt from restored parts (`crate::snapshot`).

use core::num::NonZeroU32;

use hashbrown::HashMap;

use crate::archetype::{Archetype, Rows};
use crate::chunk::ChunkTable;
use crate::component::{Components, TypeIdMap};
use crate::entity::{Entities, Entity, Location};
use crate::spare::SpareSlabs;
use crate::world_id::WorldId;

use super::World;

impl World {
    /// The state a snapshot copies: allocator, component table, archetypes, chunk ids.
    pub(crate) fn snapshot_parts(&self) -> (&Entities, &Components, &[Archetype], &ChunkTable) {
        (
            &self.entities,
            &self.components,
            &self.archetypes,
            &self.chunks,
        )
    }

    /// Takes this world apart for a restore that copies into its memory, running no user
    /// code: every archetype whose values run no `Drop` (none live, or no drop glue) is emptied
    /// and gives its slabs to `spare`, in the order that a world of the same archetypes and
    /// slabs rebuilt next takes them back (last archetype and slab first: `spare` hands out the
    /// slab given last), its chunk ids freed. Returns the entity table (its buffers, for the
    /// restored world to reuse) and whether an archetype kept its values because they need
    /// dropping.
    ///
    /// What is left is a valid world of those kept rows alone, for the caller to drop or
    /// recycle: each kept row gets a new entity, numbered from 0 in archetype and row order
    /// (the old ids live on in the restored world, and a table as large as theirs would cost
    /// a restore as much as the copying it saves).
    pub(crate) fn take_apart_plain(&mut self, spare: &mut SpareSlabs) -> (Entities, bool) {
        let mut kept = 0usize;
        for archetype in self.archetypes.iter_mut().rev() {
            let rows = &mut archetype.rows;
            if rows.needs_drop && rows.len > 0 {
                kept += rows.len;
                continue;
            }
            for chunk in &rows.chunks.list {
                self.chunks.free(chunk.id);
            }
            // No value to drop: this only forgets the rows and moves the slabs.
            rows.recycle_into(spare);
        }
        let entities = core::mem::take(&mut self.entities);
        if kept == 0 {
            return (entities, false);
        }
        let mut slots = Vec::with_capacity(kept);
        for archetype in &self.archetypes {
            let rows = &archetype.rows;
            for (index, chunk) in rows.chunks.list.iter().enumerate() {
                for row in 0..rows.chunk_len(index) {
                    let entity = Entity::from_parts(slots.len() as u32, NonZeroU32::MIN);
                    // SAFETY: `chunk` is one of these rows' chunks and `row` is below its
                    // length, so below `CHUNK_CAPACITY`.
                    unsafe { Rows::write_entity(chunk.window, row, entity) };
                    let location = Location {
                        chunk: chunk.id,
                        row: row as u32,
                    };
                    slots.push(location.pack());
                }
            }
        }
        self.entities = Entities::from_parts(slots, Vec::new(), kept);
        (entities, true)
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
}
