//! The world taken apart and put back together: the parts a snapshot copies, and a world
//! rebuilt from restored parts (`crate::snapshot`).

use hashbrown::HashMap;

use crate::archetype::Archetype;
use crate::chunk::ChunkTable;
use crate::component::{Components, TypeIdMap};
use crate::entity::Entities;
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

    /// Whether dropping this world's values runs any code: a live value of a type with drop
    /// glue.
    pub(crate) fn values_need_drop(&self) -> bool {
        self.archetypes
            .iter()
            .any(|archetype| archetype.rows.needs_drop && archetype.rows.len > 0)
    }

    /// Gives this world's slabs to `spare` in the order that a world of the same archetypes
    /// and slabs rebuilt from it takes them back (last archetype and slab first: `spare` hands
    /// out the slab given last): the in-place restore. Its values must run no `Drop`
    /// ([`values_need_drop`](World::values_need_drop) is false), so nothing runs but the
    /// bookkeeping.
    pub(crate) fn recycle_in_place(mut self, spare: &mut SpareSlabs) {
        debug_assert!(!self.values_need_drop());
        for archetype in self.archetypes.iter_mut().rev() {
            archetype.rows.recycle_into(spare);
        }
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
