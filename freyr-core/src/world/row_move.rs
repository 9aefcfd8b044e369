//! Moving one row between archetypes: the vacant row it lands in, the copy of the columns
//! both archetypes share, and the swap-remove of the row it leaves (finished even when a
//! component's `Drop` panics); and the column mappings an edge caches for such a move.

use crate::archetype::{Archetype, ArchetypeId, Rows};
use crate::chunk::{ChunkTable, Window};
use crate::column::{Column, copy_value};
use crate::component::ComponentId;
use crate::edges::{Field, InsertEdge, Move, RemoveEdge};
use crate::entity::{Entities, Entity, Location};

/// A live row found from a handle ([`World::find`](super::World)). Until the world changes
/// structurally, `archetype` indexes the world's archetypes and `chunk` that archetype's chunk
/// list (a live slot locates a live chunk, and a live chunk's table entry names its archetype
/// and index: world invariants), which the row moves rely on without checking.
#[derive(Copy, Clone)]
pub(super) struct Found {
    pub(super) archetype: usize,
    pub(super) chunk: usize,
    /// The chunk's global id (what the entity's slot stores).
    pub(super) chunk_id: u32,
    pub(super) row: usize,
    pub(super) window: Window,
}

/// Mutable references to two distinct elements, without checking (a row move's source and
/// target archetypes: both indices are known valid and distinct, and the checks cost a 10k
/// add/remove loop about 2% of its instructions).
///
/// # Safety
/// `a != b`, and both are below `items.len()`.
#[inline(always)]
pub(super) unsafe fn two_mut<T>(items: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    debug_assert!(a != b && a < items.len() && b < items.len());
    // SAFETY: `a` and `b` are distinct and in bounds (caller contract), which is all
    // `get_disjoint_unchecked_mut` asks.
    let [x, y] = unsafe { items.get_disjoint_unchecked_mut([a, b]) };
    (x, y)
}

/// Finishes removing a row whose values are being dropped, even if a `Drop` panics: moves the
/// archetype's last row into the hole and re-points the moved entity's slot.
pub(super) struct FinishRemove<'w> {
    pub(super) rows: &'w mut Rows,
    pub(super) chunks: &'w mut ChunkTable,
    pub(super) entities: &'w mut Entities,
    pub(super) chunk_id: u32,
    /// The chunk's index in its archetype.
    pub(super) chunk: usize,
    pub(super) window: Window,
    pub(super) row: usize,
}

impl Drop for FinishRemove<'_> {
    fn drop(&mut self) {
        vacate(
            self.rows,
            self.chunks,
            self.entities,
            (self.window, self.chunk, self.chunk_id),
            self.row,
        );
    }
}

/// Swap-removes row `row` of the chunk at `hole` (its index `chunk` in the archetype, global id
/// `chunk_id`) without dropping its values (they were dropped or moved out), and points the
/// entity moved into the hole at it. The three must describe a live row of `rows` (as a
/// [`Found`] does): the copies and the arrival stamp rely on it.
#[inline(always)]
pub(super) fn vacate(
    rows: &mut Rows,
    chunks: &mut ChunkTable,
    entities: &mut Entities,
    (hole, chunk, chunk_id): (Window, usize, u32),
    row: usize,
) {
    if let Some(moved) = rows.swap_remove_nodrop(hole, row, chunks) {
        // The last row filled the hole: a row arrived in the hole's chunk.
        // SAFETY: `chunk` is the index of the hole's chunk in `rows`' list (caller contract:
        // the row was found there), and the ticks are ensured for every chunk the list ever
        // held (`ensure` follows each growth and never shrinks).
        unsafe { rows.ticks.set_arrived(chunk, chunks.tick) };
        let location = Location {
            chunk: chunk_id,
            row: row as u32,
        };
        // SAFETY: `moved` was read from a live row, so it is a live entity of `entities`.
        unsafe { entities.set_location(moved, location) };
    }
}

/// The vacant row a moving entity lands in: row `row` of the target chunk at `window` (global
/// id `chunk_id`), which is the target archetype's row `len`.
pub(super) struct Landing {
    pub(super) window: Window,
    pub(super) row: usize,
    pub(super) chunk_id: u32,
}

/// Starts moving a row: claims the target archetype's vacant row (`dst`, id `target`), writes
/// `entity` there and moves the `moves` columns of row `src_row` of the source chunk at `source`
/// into it. The row is not counted yet: the caller fills the bundle's columns, then calls
/// [`complete_move`]. Only claiming the row can panic (before anything is written); nothing the
/// caller does between the two may panic.
///
/// # Safety
/// `moves` is the edge from the source row's archetype to `dst`'s, and (`source`, `src_row`) is
/// a live row of the source; the values moved out are given up by that row, which
/// [`complete_move`] removes without dropping them.
#[inline(always)]
pub(super) unsafe fn begin_move(
    dst: &mut Rows,
    target: ArchetypeId,
    chunks: &mut ChunkTable,
    entity: Entity,
    (source, src_row): (Window, usize),
    moves: &[Move],
) -> Landing {
    let (chunk, row) = dst.prepare_push(target, chunks);
    let (window, chunk_id) = dst.window_and_id(chunk);
    // SAFETY: (chunk, row) is the vacant row `dst.len`.
    unsafe { Rows::write_entity(window, row, entity) };
    let copy = |m: &Move| {
        // SAFETY: the source slot holds a live value that moves (the caller removes the source
        // row without dropping); the target slot of the same column type is vacant; offsets and
        // sizes come from the two archetypes' layouts.
        unsafe {
            copy_value(
                source.slot(m.src, m.size, src_row),
                window.slot(m.dst, m.size, row),
                m.size,
            )
        };
    };
    // One moving column (a one-component entity gaining or losing one) without the loop.
    if let [m] = moves {
        copy(m);
    } else {
        moves.iter().for_each(copy);
    }
    Landing {
        window,
        row,
        chunk_id,
    }
}

/// Finishes a row move begun with [`begin_move`] (and its columns all filled): counts the
/// landed row, points `entity` at it, and removes the vacated source row `found`, which must be
/// where the world found `entity` (the slot update and the removal rely on it).
#[inline(always)]
pub(super) fn complete_move(
    (src, dst): (&mut Rows, &mut Rows),
    chunks: &mut ChunkTable,
    entities: &mut Entities,
    entity: Entity,
    landing: &Landing,
    found: &Found,
) {
    dst.len += 1;
    let location = Location {
        chunk: landing.chunk_id,
        row: landing.row as u32,
    };
    // SAFETY: `entity` is the live entity whose row `found` is (caller contract).
    unsafe { entities.set_location(entity, location) };
    vacate(
        src,
        chunks,
        entities,
        (found.window, found.chunk, found.chunk_id),
        found.row,
    );
}

/// The column of `id` in `archetype`, which must have it.
fn column(archetype: &Archetype, id: ComponentId) -> &Column {
    let index = archetype
        .column_index(id)
        .expect("edge archetype has the component");
    &archetype.rows.columns[index]
}

/// The moves of components `ids` (present in both archetypes) from `src` rows to `dst` rows,
/// leaving out zero-sized ones.
fn moves(src: &Archetype, dst: &Archetype, ids: &[ComponentId]) -> Box<[Move]> {
    ids.iter()
        .map(|&c| (column(src, c), column(dst, c)))
        .filter(|(s, _)| s.size != 0)
        .map(|(s, d)| Move {
            src: s.offset,
            dst: d.offset,
            size: s.size,
        })
        .collect()
}

fn field(column: &Column, overwrite: bool) -> Field {
    Field {
        offset: column.offset,
        size: column.size,
        overwrite,
        drop: column.drop,
    }
}

impl InsertEdge {
    pub(crate) fn new(
        source: &Archetype,
        target: &Archetype,
        bundle: &[ComponentId],
    ) -> InsertEdge {
        let fields: Box<[Field]> = bundle
            .iter()
            .map(|&c| field(column(target, c), source.has(c)))
            .collect();
        InsertEdge {
            overwrites: fields.iter().any(|f| f.overwrite),
            drops_old: fields.iter().any(|f| f.overwrite && f.drop.is_some()),
            fields,
            moves: moves(source, target, source.components()),
        }
    }
}

impl RemoveEdge {
    pub(crate) fn new(
        source: &Archetype,
        target: &Archetype,
        bundle: &[ComponentId],
    ) -> RemoveEdge {
        RemoveEdge {
            missing: None,
            fields: bundle
                .iter()
                .map(|&c| field(column(source, c), false))
                .collect(),
            moves: moves(source, target, target.components()),
        }
    }

    pub(crate) fn missing(name: &'static str) -> RemoveEdge {
        RemoveEdge {
            missing: Some(name),
            fields: Box::new([]),
            moves: Box::new([]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_mut_returns_the_requested_pair() {
        let mut items = [1, 2, 3];
        // SAFETY: 2 and 0 are distinct indices below 3.
        let (a, b) = unsafe { two_mut(&mut items, 2, 0) };
        core::mem::swap(a, b);
        assert_eq!(items, [3, 2, 1]);
    }
}
