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
        self.restore_reusing(parallel, &mut SpareSlabs::new())
    }

    /// Puts the world this snapshot was taken of in `world`'s place (the world
    /// [`restore`](WorldSnapshot::restore) gives: a new world, with a fresh identity), copied
    /// into chunk memory that is already mapped rather than into fresh pages, whose first touch
    /// is a page fault each and cost a restore more than the copying itself:
    ///
    /// - when restoring runs no `Clone` (every column registered with
    ///   [`register_copy`](super::SnapshotTypes::register_copy)) and dropping `world`'s values
    ///   runs no `Drop` (no live value has drop glue), nothing can panic on the way, so `world`
    ///   is taken apart first and the restored world is copied into its slabs, still in cache;
    ///   returns `None`;
    /// - otherwise the restored world is built first, in slabs taken from `spare` (those a
    ///   replaced world gave back with [`World::recycle_into`]) where the sizes match, so a
    ///   panicking `Clone` leaves `world` as it was; returns the replaced world, whose values
    ///   the caller then drops, or gives back to `spare` for the next restore.
    ///
    /// New slabs are allocated only for what neither provides; `spare` keeps what was not
    /// reused.
    ///
    /// # Panics
    /// If the snapshot is incomplete (nothing changes); re-raises a panic of a component's
    /// `Clone` (`world` is unchanged, the values cloned before it are dropped exactly once, and
    /// the slabs taken from `spare` are freed); if `parallel` skipped work (`world` is then
    /// left empty or unchanged).
    ///
    /// # Examples
    /// ```
    /// use freyr::World;
    /// use freyr::snapshot::{Sequential, SnapshotTypes};
    /// use freyr::storage::SpareSlabs;
    /// let mut types = SnapshotTypes::new();
    /// types.register_copy::<u64>();
    /// types.register_clone::<String>();
    /// let mut world = World::new();
    /// world.spawn_batch((0..1000u64).map(|i| (i,)));
    /// let plain = world.snapshot(&types).unwrap();
    /// let mut spare = SpareSlabs::new();
    /// // Plain copies only: restored in `world`'s own memory, nothing left to drop.
    /// assert!(plain.restore_over(&mut world, &Sequential, &mut spare).is_none());
    /// assert_eq!(world.len(), 1000);
    ///
    /// let e = world.spawn((String::from("kept"),));
    /// let cloned = world.snapshot(&types).unwrap();
    /// for _ in 0..3 {
    ///     // A `Clone` runs: built first, then the replaced world's memory is kept for the
    ///     // next restore.
    ///     let replaced = cloned.restore_over(&mut world, &Sequential, &mut spare).unwrap();
    ///     replaced.recycle_into(&mut spare);
    /// }
    /// assert_eq!(world.get::<String>(e).unwrap(), "kept");
    /// assert!(spare.bytes() > 0);
    /// ```
    pub fn restore_over(
        &self,
        world: &mut World,
        parallel: &dyn ParallelFor,
        spare: &mut SpareSlabs,
    ) -> Option<World> {
        assert!(
            self.complete,
            "freyr: restoring an incomplete snapshot (never filled, or its taking panicked)"
        );
        if self.copies_only() && !world.values_need_drop() {
            // No `Drop` runs in taking `world` apart and no `Clone` in the copying, so nothing
            // between here and the assignment can leave `world` half replaced.
            core::mem::take(world).recycle_in_place(spare);
            *world = self.restore_reusing(parallel, spare);
            return None;
        }
        let restored = self.restore_reusing(parallel, spare);
        Some(core::mem::replace(world, restored))
    }

    /// Whether restoring runs no `Clone`: every column with values is a plain copy.
    fn copies_only(&self) -> bool {
        self.archetypes.iter().all(|image| {
            image
                .columns
                .iter()
                .all(|column| column.ops.is_none_or(|ops| ops.clone.is_none()))
        })
    }

    /// As [`restore`](WorldSnapshot::restore), with the slabs taken from `spare` where it
    /// holds one of the same layout.
    fn restore_reusing(&self, parallel: &dyn ParallelFor, spare: &mut SpareSlabs) -> World {
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
                spare,
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
