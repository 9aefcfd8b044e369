//! Spawning: one entity, a batch, and reserving rows ahead.

use core::any::TypeId;

use crate::CHUNK_CAPACITY;
use crate::archetype::{Archetype, Rows};
use crate::bundle::{Bundle, MAX_BUNDLE};
use crate::chunk::ChunkTable;
use crate::entity::{Entities, Entity, Location};

use super::{BundleInfo, World};

impl World {
    /// Spawns an entity with the components of `bundle` and returns its handle.
    ///
    /// # Panics
    /// If `bundle` names a component type twice (before anything changes). If the world would
    /// pass a [capacity limit](World#capacity-limits): 2^22 chunks, 2^32 entity indices, and,
    /// for the first spawn of a new component set, 2^32 − 1 archetypes or 2^32 component types
    /// (the entity is not spawned and the bundle is dropped).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8, 2u16));
    /// assert_eq!(*world.get::<u16>(e).unwrap(), 2);
    /// ```
    #[inline]
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        let World {
            bundles,
            archetypes,
            entities,
            chunks,
            ..
        } = self;
        if let Some(info) = bundles.get(&TypeId::of::<B>()) {
            return spawn_in(info, archetypes, entities, chunks, bundle);
        }
        self.spawn_cold(bundle)
    }

    #[cold]
    #[inline(never)]
    fn spawn_cold<B: Bundle>(&mut self, bundle: B) -> Entity {
        self.init_bundle::<B>();
        let info = &self.bundles[&TypeId::of::<B>()];
        spawn_in(
            info,
            &mut self.archetypes,
            &mut self.entities,
            &mut self.chunks,
            bundle,
        )
    }

    /// Spawns one entity per item, filling the archetype's chunks directly, and returns the
    /// handles in order. The ids are the same as `spawn` called once per item would give.
    ///
    /// When the iterator's size is known (`ExactSizeIterator`, or equal `size_hint` bounds) all
    /// memory is reserved up front, exactly. If the iterator panics, the items spawned so far
    /// stay spawned and the world is valid.
    ///
    /// # Panics
    /// If the bundle type names a component type twice (before anything changes), or if the
    /// iterator panics. If the world would pass a [capacity limit](World#capacity-limits), as
    /// [`spawn`](World::spawn): when the size is known, a batch that cannot fit in 2^22 chunks
    /// (2^31 rows) panics before anything is spawned, and a lower size bound beyond 2^32 entity
    /// indices does too; otherwise the items spawned so far stay spawned.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let ids = world.spawn_batch((0..1000u32).map(|i| (i, i as f32)));
    /// assert_eq!(ids.len(), 1000);
    /// assert_eq!(*world.get::<u32>(ids[999]).unwrap(), 999);
    /// ```
    pub fn spawn_batch<B: Bundle, I: IntoIterator<Item = B>>(&mut self, iter: I) -> Vec<Entity> {
        let mut iter = iter.into_iter();
        if !self.bundles.contains_key(&TypeId::of::<B>()) {
            self.init_bundle::<B>();
        }
        let (lower, upper) = iter.size_hint();
        let exact = upper == Some(lower);
        let World {
            bundles,
            archetypes,
            entities,
            chunks,
            ..
        } = self;
        let info = &bundles[&TypeId::of::<B>()];
        let archetype = info.archetype;
        let rows = &mut archetypes[archetype.index()].rows;
        // Chunks first: their limit (2^31 rows) is below the index space's, and is checked
        // before anything is allocated.
        if exact {
            rows.reserve(archetype, chunks, lower);
        }
        entities.reserve(lower);
        let mut spawned = Vec::with_capacity(lower);
        let mut columns = [core::ptr::null_mut::<u8>(); MAX_BUNDLE];
        // The next item is fetched before a chunk is made for it, so no empty chunk is left
        // behind when the items end on a chunk boundary.
        let Some(mut item) = iter.next() else {
            return spawned;
        };
        loop {
            // One chunk segment: the vacant rows `row..CHUNK_CAPACITY` of the last chunk.
            let (chunk, mut row) = rows.prepare_push(archetype, chunks);
            let window = rows.window(chunk);
            let chunk_id = rows.chunks.list[chunk].id;
            // Row 0 of each element's column in this chunk.
            for (column, &(offset, size)) in columns.iter_mut().zip(info.slots.iter()) {
                *column = window.slot(offset, size, 0);
            }
            loop {
                let location = Location {
                    chunk: chunk_id,
                    row: row as u32,
                };
                let entity = entities.alloc(location);
                // SAFETY: `row` is the vacant row `rows.len` of chunk `chunk` (prepare_push
                // made it exist, `row < CHUNK_CAPACITY`), and `columns[i]` is row 0 of element
                // i's column in that chunk, aligned for its type (column offsets are multiples
                // of the alignment), so `row` values further on is that row's vacant slot.
                unsafe {
                    Rows::write_entity(window, row, entity);
                    item.write_row(&columns[..B::LEN], row);
                }
                rows.len += 1;
                spawned.push(entity);
                row += 1;
                // User code: if it panics, every row so far is committed.
                match iter.next() {
                    Some(next) => item = next,
                    None => return spawned,
                }
                if row == CHUNK_CAPACITY {
                    break;
                }
            }
        }
    }

    /// Makes room for `additional` more entities with bundle `B` (entity slots and chunks), so
    /// that spawning them does not allocate.
    ///
    /// # Panics
    /// If `B` names a component type twice. If the rows would need more than 2^22 chunks, or
    /// the entities more than 2^32 indices, counting those in use, or a new component set
    /// passes the archetype or component-type limit (see [capacity
    /// limits](World#capacity-limits)). The chunk limit is checked before any chunk is
    /// allocated, the index limit before any entity slot is.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.reserve::<(u32,)>(1000);
    /// world.spawn_batch((0..1000u32).map(|i| (i,)));
    /// assert_eq!(world.len(), 1000);
    /// ```
    pub fn reserve<B: Bundle>(&mut self, additional: usize) {
        if !self.bundles.contains_key(&TypeId::of::<B>()) {
            self.init_bundle::<B>();
        }
        let archetype = self.bundles[&TypeId::of::<B>()].archetype;
        // Chunks first, as in `spawn_batch`.
        self.archetypes[archetype.index()]
            .rows
            .reserve(archetype, &mut self.chunks, additional);
        self.entities.reserve(additional);
    }
}

/// The spawn hot path: one vacant row, one allocated id, one typed write per element.
#[inline(always)]
fn spawn_in<B: Bundle>(
    info: &BundleInfo,
    archetypes: &mut [Archetype],
    entities: &mut Entities,
    chunks: &mut ChunkTable,
    bundle: B,
) -> Entity {
    let slots = &info.slots[..B::LEN];
    let rows = &mut archetypes[info.archetype.index()].rows;
    let (chunk, row) = rows.prepare_push(info.archetype, chunks);
    let window = rows.window(chunk);
    let entity = entities.alloc(Location {
        chunk: rows.chunks.list[chunk].id,
        row: row as u32,
    });
    // SAFETY: (chunk, row) is the vacant row `rows.len` (prepare_push made its chunk exist);
    // slot i is element i's column slot at that row, aligned and vacant. Nothing can panic
    // between here and committing the row.
    unsafe {
        Rows::write_entity(window, row, entity);
        bundle.write_with(|i| {
            let (offset, size) = slots[i];
            window.slot(offset, size, row)
        });
    }
    rows.len += 1;
    entity
}
