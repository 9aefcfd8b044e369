//! Every invariant [`World::from_parts`](crate::World::from_parts) and the built world rely on.

use crate::CHUNK_CAPACITY;
use crate::component::ComponentId;
use crate::entity::{Entity, FREE, MAX_CHUNKS, ROW_BITS};

use super::{ArchetypeParts, ENTITY_BYTES, InvalidParts, WorldParts};

fn ensure(ok: bool, what: &'static str) -> Result<(), InvalidParts> {
    if ok { Ok(()) } else { Err(InvalidParts(what)) }
}

/// The entity of row `row` of `bits` (checked to hold that many): for big-endian targets,
/// where the bytes are not the handle's own.
#[cfg(not(target_endian = "little"))]
pub(super) fn entity_at(bits: &[u8], row: usize) -> Option<Entity> {
    let word = bits[row * ENTITY_BYTES..][..ENTITY_BYTES]
        .try_into()
        .expect("eight bytes");
    Entity::from_bits(u64::from_le_bytes(word))
}

/// Checks `parts` whole, except each row's entity, which
/// [`check_chunk_rows`] checks chunk by chunk as the world is built (one pass over the rows,
/// in cache for their copy): nothing is built before this passes.
pub(super) fn check_parts(parts: &WorldParts<'_>) -> Result<(), InvalidParts> {
    let n = parts.components.len();
    for (i, info) in parts.components.iter().enumerate() {
        ensure(info.id().index() == i, "a component id is out of order")?;
        let repeated = parts.components[..i]
            .iter()
            .any(|other| other.type_id() == info.type_id());
        ensure(!repeated, "a component type appears twice")?;
    }
    let a = &parts.allocator;
    ensure(a.chunk_ids <= MAX_CHUNKS, "too many chunk ids")?;
    ensure(
        parts.archetypes.len() <= u32::MAX as usize,
        "too many archetypes",
    )?;
    let mut chunk_used = vec![false; a.chunk_ids];
    let mut claim = |id: u32| -> Result<(), InvalidParts> {
        let used = chunk_used
            .get_mut(id as usize)
            .ok_or(InvalidParts("a chunk id is out of range"))?;
        ensure(!*used, "a chunk id is used twice")?;
        *used = true;
        Ok(())
    };
    for &id in &a.free_chunks {
        claim(id)?;
    }
    let mut sets: Vec<&[ComponentId]> = Vec::with_capacity(parts.archetypes.len());
    let mut live = 0usize;
    for archetype in &parts.archetypes {
        let ids = archetype.components.as_slice();
        ensure(
            ids.windows(2).all(|w| w[0] < w[1]),
            "an archetype's ids are not ascending",
        )?;
        ensure(
            ids.iter().all(|id| id.index() < n),
            "an archetype names an unknown component",
        )?;
        ensure(
            !sets.contains(&ids),
            "two archetypes have the same components",
        )?;
        sets.push(ids);
        check_columns(parts, archetype)?;
        for &id in &archetype.chunk_ids {
            claim(id)?;
        }
        live += archetype.len();
    }
    ensure(
        chunk_used.iter().all(|&u| u),
        "a chunk id is neither used nor free",
    )?;
    let located = a.slots.iter().filter(|&&s| s & FREE == 0).count();
    ensure(
        live == a.len && located == a.len,
        "the live count disagrees with the rows",
    )?;
    // Only a free list needs the marks (a save of a world never churned has none).
    let mut on_stack = vec![false; if a.free.is_empty() { 0 } else { a.slots.len() }];
    for &index in &a.free {
        let slot = *a
            .slots
            .get(index as usize)
            .ok_or(InvalidParts("a free index is out of range"))?;
        ensure(
            slot & FREE != 0 && slot & !FREE != 0,
            "a free index's slot is not free",
        )?;
        ensure(
            !core::mem::replace(&mut on_stack[index as usize], true),
            "a free index repeats",
        )?;
    }
    Ok(())
}

/// The slabs, and every column's type and length, against the rows.
fn check_columns(
    parts: &WorldParts<'_>,
    archetype: &ArchetypeParts<'_>,
) -> Result<(), InvalidParts> {
    ensure(
        archetype.entities.len().is_multiple_of(ENTITY_BYTES),
        "the entity bytes are not whole entities",
    )?;
    ensure(archetype.slabs.iter().all(|&k| k > 0), "an empty slab")?;
    let chunks: u64 = archetype.slabs.iter().map(|&k| u64::from(k)).sum();
    ensure(
        chunks == archetype.chunk_ids.len() as u64,
        "slabs and chunk ids disagree",
    )?;
    let len = archetype.len();
    ensure(
        len <= archetype.chunk_ids.len() * CHUNK_CAPACITY,
        "more rows than chunks hold",
    )?;
    ensure(
        archetype.columns.len() == archetype.components.len(),
        "a column is missing",
    )?;
    for (column, id) in archetype.columns.iter().zip(&archetype.components) {
        let info = &parts.components[id.index()];
        ensure(
            column.type_id == info.type_id(),
            "a column's type differs from its component",
        )?;
        ensure(
            column.len == len,
            "a column's length differs from the rows'",
        )?;
    }
    Ok(())
}

/// Every row of one chunk's entity bytes `bits` is a handle a world hands out (generation
/// `1..=Entity::MAX_GENERATION`: a generation with bit 31 set is a command buffer's pending
/// handle, which must never name a live entity) whose slot locates exactly that row of chunk
/// `chunk`. Tight passes: each row's verdict is folded in, and the failure is
/// named after the pass.
///
/// When the rows hold consecutive indices (a world spawned in order and not churned since, the
/// usual save), their slots are one run of `slots`, compared with the rows' locations without
/// a lookup per row: both passes then vectorise. Otherwise each row looks its slot up.
pub(super) fn check_chunk_rows(slots: &[u32], bits: &[u8], chunk: u32) -> Result<(), InvalidParts> {
    let base = chunk << ROW_BITS;
    let words = bits
        .chunks_exact(ENTITY_BYTES)
        .map(|w| u64::from_le_bytes(w.try_into().expect("eight bytes")));
    let first = words.clone().next().map_or(0, |w| w & u64::from(u32::MAX));
    let (mut handles, mut consecutive) = (true, true);
    for (row, w) in words.clone().enumerate() {
        // Generation 0 wraps to the top, so one compare checks both ends.
        handles &= (w >> 32).wrapping_sub(1) < u64::from(Entity::MAX_GENERATION);
        consecutive &= w & u64::from(u32::MAX) == first + row as u64;
    }
    ensure(handles, "an entity id is invalid")?;
    let run = usize::try_from(first)
        .ok()
        .and_then(|first| slots.get(first..)?.get(..bits.len() / ENTITY_BYTES));
    let located = match run {
        // Row `row` holds index `first + row`, whose slot is `run[row]`.
        Some(run) if consecutive => run
            .iter()
            .enumerate()
            .fold(true, |ok, (row, &slot)| ok & (slot == base | row as u32)),
        _ => words.enumerate().fold(true, |ok, (row, w)| {
            ok & (slots.get(w as u32 as usize) == Some(&(base | row as u32)))
        }),
    };
    ensure(located, "an entity's slot does not locate its row")
}
