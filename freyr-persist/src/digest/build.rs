//! Computing a [`WorldDigest`] and [`RowDigests`] from a world and the registered types.

use freyr_core::{Archetype, CHUNK_CAPACITY, ComponentId, World};

use super::{ArchetypeDigest, ChunkAddress, ColumnFns, DigestHasher, RowDigests, WorldDigest};
use crate::hashable::Hashables;

/// The archetype's component names, ids, and how each joins the digest (`None`: excluded).
///
/// The caller has checked that every type of a live entity is hashed or excluded; a type of an
/// empty archetype that is neither is treated as excluded (it has no values).
fn columns_of(
    world: &World,
    hashables: &Hashables,
    archetype: &Archetype,
) -> (Vec<String>, Vec<ComponentId>, Vec<Option<ColumnFns>>) {
    let ids = archetype.components().to_vec();
    let names = ids
        .iter()
        .map(|&id| world.component_info(id).name().to_owned())
        .collect();
    let fns = ids
        .iter()
        .map(|&id| {
            hashables
                .column_fns(world.component_info(id).type_id())
                .flatten()
        })
        .collect();
    (names, ids, fns)
}

/// The digest of every archetype of `world`, in creation order.
pub fn world_digest(world: &World, hashables: &Hashables) -> WorldDigest {
    let archetypes = world
        .archetypes()
        .iter()
        .map(|a| archetype_digest(world, hashables, a))
        .collect();
    WorldDigest::new(archetypes)
}

fn archetype_digest(
    world: &World,
    hashables: &Hashables,
    archetype: &Archetype,
) -> ArchetypeDigest {
    let (names, ids, fns) = columns_of(world, hashables, archetype);
    let mut entities = Vec::with_capacity(archetype.chunk_count());
    let mut columns = Vec::with_capacity(archetype.chunk_count() * ids.len());
    let mut bits = [0u8; 8 * CHUNK_CAPACITY];
    for chunk in archetype.chunks() {
        for (slot, e) in bits.chunks_exact_mut(8).zip(chunk.entities()) {
            slot.copy_from_slice(&e.to_bits().to_le_bytes());
        }
        let mut h = DigestHasher::new();
        h.write(&bits[..8 * chunk.len()]);
        entities.push(h.finish());
        for (&id, f) in ids.iter().zip(&fns) {
            columns.push(f.map_or(0, |f| {
                let mut h = DigestHasher::new();
                (f.column)(chunk, id, &mut h);
                h.finish()
            }));
        }
    }
    let hashed = fns.iter().map(Option::is_some).collect();
    ArchetypeDigest::new(names, hashed, archetype.len(), entities, columns)
}

/// The row digests of the chunk at `at`; no rows when there is no such chunk (and no
/// components when there is no such archetype).
pub fn row_digests(world: &World, hashables: &Hashables, at: ChunkAddress) -> RowDigests {
    let Some(archetype) = world.archetypes().get(at.archetype) else {
        return RowDigests::new(at, Vec::new(), Vec::new(), Vec::new(), Vec::new());
    };
    let (names, ids, fns) = columns_of(world, hashables, archetype);
    let hashed: Vec<bool> = fns.iter().map(Option::is_some).collect();
    if at.chunk >= archetype.chunk_count() {
        return RowDigests::new(at, names, hashed, Vec::new(), Vec::new());
    }
    let chunk = archetype.chunk(at.chunk);
    let entities: Vec<u64> = chunk.entities().iter().map(|e| e.to_bits()).collect();
    let mut values = Vec::with_capacity(chunk.len() * ids.len());
    for row in 0..chunk.len() {
        for (&id, f) in ids.iter().zip(&fns) {
            values.push(f.map_or(0, |f| {
                let mut h = DigestHasher::new();
                (f.row)(chunk, id, row, &mut h);
                h.finish()
            }));
        }
    }
    RowDigests::new(at, names, hashed, entities, values)
}
