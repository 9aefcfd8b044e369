//! Turning a [`WorldSnapshot`] back into a [`World`]: the same component table, archetypes
//! (with the same slabs and chunk ids), rows, and allocator; fresh caches and a fresh id.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::CHUNK_CAPACITY;
use crate::archetype::{Archetype, ArchetypeId};
use crate::column::for_each_finishing_on_panic;
use crate::component::Components;
use crate::entity::Entity;
use crate::spare::SpareSlabs;
use crate::world::World;

use super::columns::ValueOps;
use super::{CLAIMED, DONE, ENTITY_COLUMN, FREE, ParallelFor, WorldSnapshot};

/// The archetypes being restored, and which units' values are in place: dropping it (when a
/// `Clone` panicked) drops exactly those values; the archetypes' rows are not counted yet, so
/// the archetypes themselves then free only their slabs.
struct Building<'s> {
    snapshot: &'s WorldSnapshot,
    archetypes: Vec<Archetype>,
    states: Vec<AtomicU8>,
}

impl Drop for Building<'_> {
    fn drop(&mut self) {
        let (snapshot, states, archetypes) = (self.snapshot, &self.states, &self.archetypes);
        for_each_finishing_on_panic(states.len(), |i| {
            let unit = snapshot.units[i];
            if states[i].swap(FREE, Ordering::Acquire) != DONE || unit.column == ENTITY_COLUMN {
                return;
            }
            let rows = &archetypes[unit.archetype as usize].rows;
            let column = unit.column as usize;
            let Some(drop) = rows.columns[column].drop else {
                return;
            };
            let chunk = unit.chunk as usize;
            let count = snapshot.archetypes[unit.archetype as usize].chunk_len(chunk);
            // SAFETY: the unit is DONE, so the chunk's first `count` rows of this column hold
            // values it cloned that nothing else owns (the rows are not counted); its state is
            // FREE now, so they are dropped once.
            unsafe { drop(rows.slot(rows.window(chunk), column, 0), count) };
        });
    }
}

impl Building<'_> {
    /// Runs unit `i`: copies one column of one chunk from the snapshot into the new slabs.
    fn restore_unit(&self, i: usize) {
        if self.states[i]
            .compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        let unit = self.snapshot.units[i];
        let chunk = unit.chunk as usize;
        let image = &self.snapshot.archetypes[unit.archetype as usize];
        let rows = &self.archetypes[unit.archetype as usize].rows;
        let window = rows.window(chunk);
        let count = image.chunk_len(chunk);
        let (src, dst, ops) = if unit.column == ENTITY_COLUMN {
            let src = image.entities.ptr().cast::<Entity>();
            let src = src.wrapping_add(chunk * CHUNK_CAPACITY).cast::<u8>();
            (
                src,
                window.entities().cast::<u8>(),
                ValueOps::copy::<Entity>(),
            )
        } else {
            let column = &image.columns[unit.column as usize];
            let ops = column
                .ops
                .expect("a non-empty archetype's columns have their ops");
            let src = column
                .buf
                .ptr()
                .wrapping_add(chunk * CHUNK_CAPACITY * ops.layout.size());
            (src, rows.slot(window, unit.column as usize, 0), ops)
        };
        // SAFETY: `src` is this chunk's range of a complete snapshot's buffer: `count`
        // initialised values of the column's type (`ops` was looked up by that type when the
        // snapshot was taken), aligned, and unmodified while `&WorldSnapshot` is held. `dst` is
        // row 0 of the same chunk of the new archetype, built from the snapshot's component
        // table (same type, layout) with the same slabs: valid for `count` rows, uncounted and
        // written by this unit alone (claimed once).
        unsafe { ops.copy_values(src, dst, count) };
        self.states[i].store(DONE, Ordering::Release);
    }
}

impl WorldSnapshot {
    /// The world this snapshot was taken of, rebuilt with the copying spread over `parallel`:
    /// the same component ids, archetypes in the same order (empty ones too), the same rows in
    /// the same order, and the same allocator, so the same operations then give the same
    /// entity ids. It is a new world: a fresh [`WorldId`](crate::WorldId), caches rebuilt.
    /// The snapshot is unchanged and can be restored again.
    ///
    /// # Panics
    /// If the snapshot is incomplete ([`is_complete`](WorldSnapshot::is_complete));
    /// re-raises a panic of a component's `Clone` (the values cloned before it are dropped
    /// exactly once, and nothing else changes); if `parallel` skipped work.
    ///
    /// # Examples
    /// ```
    /// use freyr::World;
    /// use freyr::snapshot::{Sequential, SnapshotTypes};
    /// let mut types = SnapshotTypes::new();
    /// types.register_clone::<String>();
    /// let mut world = World::new();
    /// let e = world.spawn((String::from("kept"),));
    /// let snapshot = world.snapshot(&types).unwrap();
    /// for _ in 0..2 {
    ///     let restored = snapshot.restore(&Sequential);
    ///     assert_eq!(restored.get::<String>(e).unwrap(), "kept");
    /// }
    /// ```
    pub fn restore(&self, parallel: &dyn ParallelFor) -> World {
        assert!(
            self.complete,
            "freyr: restoring an incomplete snapshot (never filled, or its taking panicked)"
        );
        let components = Components::from_infos(&self.components);
        let mut table = self.allocator.chunk_table();
        let mut archetypes = Vec::with_capacity(self.archetypes.len());
        for (a, image) in self.archetypes.iter().enumerate() {
            let mut archetype = Archetype::with_chunks(
                ArchetypeId(a as u32),
                &image.components,
                &components,
                &image.slabs,
                &image.chunk_ids,
                &mut table,
                &mut SpareSlabs::new(),
            );
            archetype.rows.ticks.import(&image.changed, &image.added);
            archetypes.push(archetype);
        }
        let mut building = Building {
            snapshot: self,
            archetypes,
            states: (0..self.units.len()).map(|_| AtomicU8::new(FREE)).collect(),
        };
        {
            let shared = &building;
            parallel.parallel_for(self.units.len(), &|i| shared.restore_unit(i));
        }
        let skipped = building
            .states
            .iter()
            .any(|s| s.load(Ordering::Acquire) != DONE);
        assert!(
            !skipped,
            "freyr: a ParallelFor skipped work units of a restore; it must call every index"
        );
        // Every unit is DONE: count the rows (the archetypes own their values from here on)
        // and disarm the guard.
        building.states.clear();
        let mut archetypes = core::mem::take(&mut building.archetypes);
        drop(building);
        for (archetype, image) in archetypes.iter_mut().zip(&self.archetypes) {
            archetype.rows.len = image.len;
        }
        World::from_snapshot_parts(self.allocator.entities(), components, archetypes, table)
    }
}
