//! The body layout of a save (world -> bytes, bytes -> [`WorldParts`]) and the pieces a save and
//! an export both write (type entries, entity lists), beside the format's description in
//! [`persist`](super). The registry chooses the types and hands over its world; the bytes are
//! written and read here.

use core::ops::Deref;

use freyr_core::parts::{AllocatorParts, ArchetypeParts, ENTITY_BYTES, WorldParts};
use freyr_core::{Archetype, Entity, World};

use super::format::{Reader, Writer};
use super::ops::ColumnEncoder;
use super::stamps::{ArchetypeStamps, read_stamps, write_stamps};
use super::{ColumnOps, LoadError};

/// The magic of a whole-registry save.
pub const SAVE_MAGIC: &[u8; 8] = b"FREYRSAV";

/// A whole save of `world` at `tick`, `ops` naming the persistent type of each component id in
/// id order: the tick, the type list, the entity allocator, then every archetype (the layout in
/// [`persist`](super)). Reuses `out`'s allocation.
pub fn write_save(out: Vec<u8>, world: &World, tick: u64, ops: &[&ColumnOps]) -> Vec<u8> {
    let a = world.allocator_view();
    let mut w = Writer::reuse(SAVE_MAGIC, out, save_size(world, ops));
    w.u64(tick);
    w.u32(ops.len() as u32);
    for o in ops {
        write_type(&mut w, o);
    }
    w.u32s(a.slots);
    w.u32s(a.free);
    w.u64(a.len as u64);
    w.u64(a.chunk_ids as u64);
    w.u32s(a.free_chunks);
    w.u64(world.archetypes().len() as u64);
    for archetype in world.archetypes() {
        write_archetype(&mut w, archetype, ops);
    }
    write_stamps(&mut w, world);
    w.finish()
}

/// The world's parts of a save body after its tick and type list (`ops`, in the file's order):
/// the allocator and every archetype, then the change stamps of every archetype (to put into
/// the built world with [`restore_stamps`](super::stamps::restore_stamps)), up to the body's
/// end.
///
/// # Errors
///
/// [`LoadError::Corrupt`] (or the reader's errors) where the bytes do not follow the layout.
pub fn read_world_parts<'a, O: Deref<Target = ColumnOps>>(
    r: &mut Reader<'a>,
    ops: &[O],
) -> Result<(WorldParts<'a>, Vec<ArchetypeStamps>), LoadError> {
    let allocator = AllocatorParts {
        slots: r.u32s("the entity slots")?,
        free: r.u32s("the free entities")?,
        len: r.u64("the live count")? as usize,
        chunk_ids: r.u64("the chunk id count")? as usize,
        free_chunks: r.u32s("the free chunks")?,
    };
    let count = r.count(1, "the archetype count")?;
    let mut archetypes = Vec::new();
    for _ in 0..count {
        archetypes.push(read_archetype(r, ops)?);
    }
    let stamps = read_stamps(r, count)?;
    r.end()?;
    let components = ops.iter().enumerate().map(|(i, o)| (o.info)(i)).collect();
    let parts = WorldParts {
        components,
        allocator,
        archetypes,
    };
    Ok((parts, stamps))
}

/// A guess of a save's size, so its buffer is allocated once: every row's entity and values
/// at their in-memory size, the allocator, and the stamps (two ticks per chunk and column).
fn save_size(world: &World, ops: &[&ColumnOps]) -> usize {
    let values: usize = world
        .archetypes()
        .iter()
        .map(|archetype| {
            let row: usize = archetype
                .components()
                .iter()
                .map(|id| ops[id.index()].layout.size())
                .sum();
            let stamps = archetype.chunk_ids().len() * archetype.components().len() * 16;
            archetype.len() * (row + ENTITY_BYTES) + stamps + 64
        })
        .sum();
    values + world.allocator_view().slots.len() * 4 + 1024
}

/// One archetype: its component ids, slabs, chunk ids, entities and one blob per column.
fn write_archetype(w: &mut Writer, archetype: &Archetype, ops: &[&ColumnOps]) {
    let ids: Vec<u32> = archetype
        .components()
        .iter()
        .map(|c| c.index() as u32)
        .collect();
    w.u32s(&ids);
    w.u32s(&archetype.slab_sizes().collect::<Vec<_>>());
    w.u32s(&archetype.chunk_ids().collect::<Vec<_>>());
    // Pieces of known length go chunk by chunk, each fed to the checksum while in cache.
    w.u64(archetype.len() as u64);
    for chunk in archetype.chunks() {
        freyr_core::parts::append_entity_bits(chunk.entities(), &mut w.out);
        w.absorb();
    }
    for &id in archetype.components() {
        let o = ops[id.index()];
        match o.encoder {
            ColumnEncoder::Chunks(encode) => {
                w.u64((archetype.len() * o.layout.size()) as u64);
                for chunk in archetype.chunks() {
                    encode(&chunk, id, &mut w.out);
                    w.absorb();
                }
            }
            ColumnEncoder::Whole(encode) => w.blob(|out| {
                if !archetype.is_empty() {
                    encode(archetype, id, out);
                }
            }),
        }
    }
}

fn read_archetype<'a, O: Deref<Target = ColumnOps>>(
    r: &mut Reader<'a>,
    ops: &[O],
) -> Result<ArchetypeParts<'a>, LoadError> {
    let ids = r.u32s("an archetype's components")?;
    let slabs = r.u32s("an archetype's slabs")?;
    let chunk_ids = r.u32s("an archetype's chunks")?;
    let len = r.count(ENTITY_BYTES, "the entities")?;
    let entities = r.take(len * ENTITY_BYTES, "the entities")?;
    let mut components = Vec::with_capacity(ids.len());
    let mut columns = Vec::with_capacity(ids.len());
    for &id in &ids {
        let o = ops.get(id as usize).ok_or(LoadError::Corrupt {
            what: "an archetype names an unknown type",
        })?;
        let blob = r.bytes("a column")?;
        let values = (o.decode_column)(blob, len).ok_or(LoadError::Corrupt {
            what: "a column does not decode",
        })?;
        components.push(freyr_core::parts::component_info::<()>(id as usize).id());
        columns.push(values);
    }
    Ok(ArchetypeParts {
        components,
        slabs,
        chunk_ids,
        entities,
        columns,
    })
}

/// One type's entry in a save's or an export's type list: name, version, encoding, size and
/// align.
pub fn write_type(w: &mut Writer, o: &ColumnOps) {
    w.bytes(o.name.as_bytes());
    w.u32(o.version);
    w.u32(o.encoding.code());
    w.u64(o.layout.size() as u64);
    w.u64(o.layout.align() as u64);
}

/// A list of entities: its length, then each entity's bits.
pub fn write_entities(w: &mut Writer, entities: &[Entity]) {
    w.u64(entities.len() as u64);
    freyr_core::parts::append_entity_bits(entities, &mut w.out);
}

/// A list of entities as [`write_entities`] wrote it.
///
/// # Errors
///
/// [`LoadError::Corrupt`] if the list is cut short or names an invalid entity.
pub fn read_entities(r: &mut Reader<'_>) -> Result<Vec<Entity>, LoadError> {
    let n = r.count(8, "the entities")?;
    r.words::<8>(n, "the entities")?
        .map(|bits| {
            Entity::from_bits(u64::from_le_bytes(bits)).ok_or(LoadError::Corrupt {
                what: "an entity id is invalid",
            })
        })
        .collect()
}
