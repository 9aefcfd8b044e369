//! [`World::from_parts`]: a world built straight from checked parts, every column copied once
//! from its source into the new chunks.

use crate::CHUNK_CAPACITY;
use crate::archetype::{Archetype, ArchetypeId, Rows};
use crate::chunk::ChunkTable;
use crate::component::Components;
use crate::entity::Entities;
use crate::world::World;

use super::stream::{STREAM_MIN_BYTES, Streaming};
use super::{ArchetypeParts, ENTITY_BYTES, InvalidParts, WorldParts, check};
use crate::spare::SpareSlabs;

impl World {
    /// The world `parts` describe: the same component ids, archetypes in the same order (empty
    /// ones too) with the same slabs and chunk ids, the same rows in the same order, and the
    /// same allocator, so the same operations then give the same entity ids. Its change ticks
    /// are all 0 ([`restore_stamps`](World::restore_stamps) puts saved ones back); it gets a
    /// fresh [`WorldId`](crate::WorldId). Owned values are moved in,
    /// borrowed bytes copied.
    ///
    /// Everything is checked before anything is built: no input, however made, breaks the
    /// world's invariants.
    ///
    /// # Errors
    /// [`InvalidParts`] naming the first invariant that fails (component table, archetype
    /// sets, column types and lengths, slabs, chunk ids, entity handles, or allocator slots
    /// against rows). The values are then dropped with `parts`.
    ///
    /// # Examples
    /// ```
    /// use freyr::{Entity, World};
    /// use freyr_core::parts::{
    ///     AllocatorParts, ArchetypeParts, ColumnValues, WorldParts, component_info,
    /// };
    ///
    /// let mut world = World::new();
    /// let e = world.spawn((7u32,));
    /// let archetype = world.archetypes().iter().find(|a| a.len() == 1).unwrap();
    /// let (components, slabs) = (archetype.components().to_vec(), archetype.slab_sizes().collect());
    /// let chunk_ids = archetype.chunk_ids().collect();
    /// let view = world.allocator_view();
    /// let allocator = AllocatorParts {
    ///     slots: view.slots.to_vec(),
    ///     free: view.free.to_vec(),
    ///     len: view.len,
    ///     chunk_ids: view.chunk_ids,
    ///     free_chunks: view.free_chunks.to_vec(),
    /// };
    /// let bits = e.to_bits().to_le_bytes();
    /// let empty = ArchetypeParts {
    ///     components: Vec::new(),
    ///     slabs: Vec::new(),
    ///     chunk_ids: Vec::new(),
    ///     entities: &[],
    ///     columns: Vec::new(),
    /// };
    /// let full = ArchetypeParts {
    ///     components,
    ///     slabs,
    ///     chunk_ids,
    ///     entities: &bits,
    ///     columns: vec![ColumnValues::new(vec![7u32])],
    /// };
    /// let parts = WorldParts {
    ///     components: vec![component_info::<u32>(0)],
    ///     allocator,
    ///     archetypes: vec![empty, full],
    /// };
    /// let built = World::from_parts(parts).unwrap();
    /// assert_eq!(built.get::<u32>(e), Ok(&7));
    /// ```
    #[doc(hidden)]
    pub fn from_parts(parts: WorldParts<'_>) -> Result<World, InvalidParts> {
        World::from_parts_reading(parts, &mut |_| {}, &mut SpareSlabs::new())
    }

    /// As [`from_parts`](World::from_parts), calling `read` with every borrowed byte range
    /// right after it is copied (while it is in cache): archetype by archetype, its entity
    /// bytes chunk by chunk, then each column given as bytes
    /// ([`ColumnValues::from_bytes`](super::ColumnValues::from_bytes)) chunk by chunk, so the
    /// ranges of one archetype come in the order its parts list them. A load computes its
    /// checksum this way, in the same pass as the copy.
    ///
    /// Each slab is taken from `spare` if it holds one of the same size and alignment (memory
    /// a replaced world gave back through [`recycle_into`](World::recycle_into)), else
    /// allocated; what is left in `spare` stays there.
    ///
    /// # Errors
    /// As `from_parts`.
    ///
    /// # Examples
    /// ```
    /// use freyr::World;
    /// use freyr_core::SpareSlabs;
    /// use freyr_core::parts::{AllocatorParts, ArchetypeParts, WorldParts};
    ///
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// let view = world.allocator_view();
    /// let bits = e.to_bits().to_le_bytes();
    /// let parts = WorldParts {
    ///     components: Vec::new(),
    ///     allocator: AllocatorParts {
    ///         slots: view.slots.to_vec(),
    ///         free: Vec::new(),
    ///         len: 1,
    ///         chunk_ids: 1,
    ///         free_chunks: Vec::new(),
    ///     },
    ///     archetypes: vec![ArchetypeParts {
    ///         components: Vec::new(),
    ///         slabs: vec![1],
    ///         chunk_ids: vec![0],
    ///         entities: &bits,
    ///         columns: Vec::new(),
    ///     }],
    /// };
    /// // The world's slab (one chunk of the empty archetype) is reused by the built one.
    /// let mut spare = SpareSlabs::new();
    /// world.recycle_into(&mut spare);
    /// let held = spare.bytes();
    /// assert!(held > 0);
    /// let mut seen = 0;
    /// let built =
    ///     World::from_parts_reading(parts, &mut |bytes| seen += bytes.len(), &mut spare).unwrap();
    /// assert!(built.contains(e));
    /// assert_eq!(seen, 8);
    /// assert_eq!(spare.bytes(), 0);
    /// ```
    #[doc(hidden)]
    pub fn from_parts_reading(
        parts: WorldParts<'_>,
        read: &mut dyn FnMut(&[u8]),
        spare: &mut SpareSlabs,
    ) -> Result<World, InvalidParts> {
        check::check_parts(&parts)?;
        let WorldParts {
            components: infos,
            allocator,
            archetypes: parts,
        } = parts;
        let components = Components::from_infos(&infos);
        let mut table = ChunkTable::with_free_ids(allocator.chunk_ids, &allocator.free_chunks);
        let mut archetypes = Vec::with_capacity(parts.len());
        // Declared after `archetypes`, so on an early return it drops (and fences its stores)
        // before the chunks are freed.
        let copies = Streaming::new(borrowed_bytes(&parts) >= STREAM_MIN_BYTES);
        for (index, part) in parts.iter().enumerate() {
            let archetype = Archetype::with_chunks(
                ArchetypeId(index as u32),
                &part.components,
                &components,
                &part.slabs,
                &part.chunk_ids,
                &mut table,
                spare,
            );
            // Pushed first: on a bad row it is dropped with the others, freeing only its slabs
            // (no row is counted yet).
            archetypes.push(archetype);
            fill(
                &archetypes[index].rows,
                part,
                &allocator.slots,
                &copies,
                read,
            )?;
        }
        // Every copy is ordered before the world is returned (and read, or sent to a thread).
        drop(copies);
        // Every value is in place: the archetypes own them from here (nothing above runs user
        // code; had it failed or panicked, the rows were uncounted and the sources kept their
        // values).
        for (archetype, part) in archetypes.iter_mut().zip(parts) {
            archetype.rows.len = part.len();
            for values in part.columns {
                values.moved_out();
            }
        }
        let entities = Entities::from_parts(allocator.slots, allocator.free, allocator.len);
        Ok(World::from_snapshot_parts(
            entities, components, archetypes, table,
        ))
    }

    /// Drops this world and keeps its chunk memory in `spare`, for a world built next with
    /// [`from_parts_reading`](World::from_parts_reading) to reuse. Every value is dropped as
    /// when the world is dropped; if a `Drop` panics, the archetype's other values are still
    /// dropped, the panic continues, and the memory not yet given to `spare` is freed.
    ///
    /// # Examples
    /// ```
    /// use freyr::World;
    /// use freyr::storage::SpareSlabs;
    ///
    /// let mut world = World::new();
    /// world.spawn_batch((0..600u32).map(|i| (i, String::from("dropped"))));
    /// let mut spare = SpareSlabs::new();
    /// world.recycle_into(&mut spare);
    /// assert!(spare.bytes() >= 600 * (4 + size_of::<String>()));
    /// ```
    pub fn recycle_into(mut self, spare: &mut SpareSlabs) {
        for archetype in &mut self.archetypes {
            archetype.rows.recycle_into(spare);
        }
    }
}

/// Bytes given as borrowed bytes in `parts` (entities, and columns read from bytes): what a
/// build copies from its caller's buffer.
fn borrowed_bytes(parts: &[ArchetypeParts<'_>]) -> usize {
    parts
        .iter()
        .map(|part| {
            let columns: usize = part
                .columns
                .iter()
                .filter_map(|values| values.borrowed.map(<[u8]>::len))
                .sum();
            part.entities.len() + columns
        })
        .sum()
}

/// Checks each chunk's entities (see [`check::check_chunk_rows`]) and copies one archetype's
/// entities and then each column into its new chunks, chunk by chunk (the rows are not counted
/// yet), passing each borrowed range to `read` after its copy. Borrowed bytes are copied
/// through `copies`, owned values (which may hold uninitialised padding) with a plain copy.
fn fill(
    rows: &Rows,
    part: &ArchetypeParts<'_>,
    slots: &[u32],
    copies: &Streaming,
    read: &mut dyn FnMut(&[u8]),
) -> Result<(), InvalidParts> {
    let len = part.len();
    let chunks = len.div_ceil(CHUNK_CAPACITY);
    let span = |chunk: usize| {
        let first = chunk * CHUNK_CAPACITY;
        (first, (len - first).min(CHUNK_CAPACITY))
    };
    for chunk in 0..chunks {
        let window = rows.window(chunk);
        let (first, count) = span(chunk);
        let bits = &part.entities[first * ENTITY_BYTES..(first + count) * ENTITY_BYTES];
        check::check_chunk_rows(slots, bits, part.chunk_ids[chunk])?;
        #[cfg(target_endian = "little")]
        // SAFETY: the entity column of a chunk holds CHUNK_CAPACITY entities, aligned, and is
        // written by nothing else; `count <= CHUNK_CAPACITY`. Every 8 bytes of `bits` were
        // checked just above to be a handle (non-zero generation half), and on a
        // little-endian target those bytes are the `repr(C)` `Entity` (index, then
        // generation) itself. The chunk is not accessed until `copies` drops.
        unsafe {
            copies.copy(bits, window.entities().cast::<u8>())
        };
        #[cfg(not(target_endian = "little"))]
        for row in 0..count {
            let entity = check::entity_at(bits, row).expect("checked: every row is a handle");
            // SAFETY: `window` is a chunk of these rows and `row < CHUNK_CAPACITY`.
            unsafe { Rows::write_entity(window, row, entity) };
        }
        read(bits);
    }
    for (column, values) in part.columns.iter().enumerate() {
        if values.size == 0 {
            continue;
        }
        for chunk in 0..chunks {
            let (first, count) = span(chunk);
            let bytes = count * values.size;
            let dst = rows.slot(rows.window(chunk), column, 0);
            // The destination is row 0 of this chunk's column, valid for CHUNK_CAPACITY values
            // and uncounted (nothing reads it until the world is built).
            if let Some(borrowed) = values.borrowed {
                let piece = &borrowed[first * values.size..][..bytes];
                // SAFETY: `piece` is this chunk's `count` values as bytes the caller vouched
                // for as the column's type (checked: its type id is the component's and
                // `size` that type's size), and the chunk is not accessed until `copies`
                // drops.
                unsafe { copies.copy(piece, dst) };
                read(piece);
            } else {
                // SAFETY: `values` holds `len` values of the column's type (checked as above),
                // readable bitwise from its start; this chunk's `count` of them start at value
                // `first`. The copy is a move: the owned values are given up once every copy
                // is done.
                unsafe { core::ptr::copy_nonoverlapping(values.bytes_from(first), dst, bytes) };
            }
        }
    }
    Ok(())
}
