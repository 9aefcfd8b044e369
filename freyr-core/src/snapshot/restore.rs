//! Turning a [`WorldSnapshot`] back into a [`World`]: the same component table, archetypes
//! (with the same slabs and chunk ids), rows, and allocator; fresh caches and a fresh id.

use core::ops::Range;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::CHUNK_CAPACITY;
use crate::archetype::{Archetype, ArchetypeId};
use crate::chunk::ChunkTable;
use crate::column::for_each_finishing_on_panic;
use crate::component::Components;
use crate::entity::Entity;
use crate::spare::SpareSlabs;
use crate::world::World;

use super::columns::ValueOps;
use super::{CLAIMED, DONE, ENTITY_COLUMN, FREE, ParallelFor, WorldSnapshot};

/// The archetypes being restored (`None` until built), and which units' values are in place:
/// dropping it (when a `Clone` panicked) drops exactly those values; the archetypes' rows are
/// not counted yet, so the archetypes themselves then free only their slabs.
struct Building<'s> {
    snapshot: &'s WorldSnapshot,
    archetypes: Vec<Option<Archetype>>,
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
            // A unit is DONE only once its archetype is built.
            let Some(archetype) = &archetypes[unit.archetype as usize] else {
                return;
            };
            let rows = &archetype.rows;
            let column = unit.column as usize;
            let Some(drop) = rows.columns[column].drop else {
                return;
            };
            let chunk = unit.chunk as usize;
            let count =
                snapshot.archetypes[unit.archetype as usize].run_len(chunk, unit.chunks as usize);
            // SAFETY: the unit is DONE, so the `count` rows of this column from the run's first
            // chunk (back to back: the run lies in one slab) hold values it cloned that nothing
            // else owns (the rows are not counted); its state is FREE now, so they are dropped
            // once.
            unsafe { drop(rows.slot(rows.window(chunk), column, 0), count) };
        });
    }
}

impl<'s> Building<'s> {
    /// Nothing built, every unit free.
    fn new(snapshot: &'s WorldSnapshot) -> Building<'s> {
        Building {
            snapshot,
            archetypes: snapshot.archetypes.iter().map(|_| None).collect(),
            states: (0..snapshot.units.len())
                .map(|_| AtomicU8::new(FREE))
                .collect(),
        }
    }

    /// Builds archetype `a` of the snapshot (its slabs, chunk ids and change ticks; no rows
    /// yet), with the slabs taken from `spare` where it holds one of the same layout.
    fn build(
        &mut self,
        a: usize,
        components: &Components,
        table: &mut ChunkTable,
        spare: &mut SpareSlabs,
    ) {
        let image = &self.snapshot.archetypes[a];
        let mut archetype = Archetype::with_chunks(
            ArchetypeId(a as u32),
            &image.components,
            components,
            &image.slabs,
            &image.chunk_ids,
            table,
            spare,
        );
        archetype.rows.ticks.import(&image.changed, &image.added);
        self.archetypes[a] = Some(archetype);
    }

    /// Runs the units `range` (whose archetypes are built) over `parallel`; returns whether
    /// every one of them is done (false: `parallel` skipped some).
    fn run(&self, range: Range<usize>, parallel: &dyn ParallelFor) -> bool {
        let (first, count) = (range.start, range.len());
        parallel.parallel_for(count, &|k| self.restore_unit(first + k));
        self.states[range]
            .iter()
            .all(|s| s.load(Ordering::Acquire) == DONE)
    }

    /// Every unit is done and every archetype built: counts the rows (the archetypes own
    /// their values from here on), disarms the guard and hands the archetypes over.
    fn finish(mut self) -> Vec<Archetype> {
        self.states.clear();
        let snapshot = self.snapshot;
        core::mem::take(&mut self.archetypes)
            .into_iter()
            .zip(&snapshot.archetypes)
            .map(|(archetype, image)| {
                let mut archetype = archetype.expect("every archetype is built");
                archetype.rows.len = image.len;
                archetype
            })
            .collect()
    }

    /// Runs unit `i`: copies one column of one run of chunks from the snapshot into the new
    /// slabs.
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
        let rows = &self.archetypes[unit.archetype as usize]
            .as_ref()
            .expect("an archetype is built before its units run")
            .rows;
        let window = rows.window(chunk);
        let count = image.run_len(chunk, unit.chunks as usize);
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
        // SAFETY: `src` is the run's range of a complete snapshot's buffer: `count`
        // initialised values of the column's type (`ops` was looked up by that type when the
        // snapshot was taken), aligned, and unmodified while `&WorldSnapshot` is held. `dst` is
        // row 0 of the run's first chunk of the new archetype, built from the snapshot's
        // component table (same type, layout) with the same slabs, so the run lies in one slab
        // there too and its rows of this column are back to back: valid for `count` rows,
        // uncounted and written by this unit alone (claimed once).
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
        let mut world = World::new();
        // A new world holds no value: nothing is replaced, nothing left to drop.
        let replaced = self.restore_over(&mut world, parallel, &mut SpareSlabs::new());
        debug_assert!(replaced.is_none());
        world
    }

    /// Puts the world this snapshot was taken of in `world`'s place (the world
    /// [`restore`](WorldSnapshot::restore) gives: a new world, with a fresh identity), copied
    /// into chunk memory that is already mapped rather than into fresh pages, whose first touch
    /// is a page fault each and cost a restore more than the copying itself. In two steps:
    ///
    /// 1. the snapshot's archetypes that hold a value restored with `Clone` (a type registered
    ///    with [`register_clone`](super::SnapshotTypes::register_clone)) are built first,
    ///    beside `world`, in slabs taken from `spare` (those a replaced world gave back with
    ///    [`World::recycle_into`]) where the layouts match, so a panicking `Clone` leaves
    ///    `world` as it was;
    /// 2. then nothing can panic on the way: every archetype of `world` whose values run no
    ///    `Drop` (none live, or no drop glue) gives its slabs up, and the snapshot's other
    ///    archetypes (plain copies) are copied into them, still in cache, as is the entity
    ///    table into `world`'s own.
    ///
    /// Returns `None` when every archetype of `world` was taken apart that way (nothing is
    /// left to drop); otherwise the replaced world, holding the values that run a `Drop` (each
    /// once: the restored world shares none), which the caller then drops, or gives back to
    /// `spare` for the next restore. New slabs are allocated only for what neither provides;
    /// `spare` keeps what was not reused.
    ///
    /// # Panics
    /// If the snapshot is incomplete (nothing changes); re-raises a panic of a component's
    /// `Clone` (`world` is unchanged, the values cloned before it are dropped exactly once, and
    /// the slabs taken from `spare` are freed); if `parallel` skipped work (`world` is then
    /// left unchanged, or empty with every value it held dropped once).
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
    ///     // A `Clone` runs: the `String` archetype is built first, the `u64` one is copied
    ///     // in place; the replaced `String` is left to drop, its memory kept for the next
    ///     // restore.
    ///     let replaced = cloned.restore_over(&mut world, &Sequential, &mut spare).unwrap();
    ///     assert_eq!(replaced.len(), 1);
    ///     replaced.recycle_into(&mut spare);
    /// }
    /// assert_eq!(world.get::<String>(e).unwrap(), "kept");
    /// assert_eq!(world.len(), 1001);
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
        const SKIPPED: &str =
            "freyr: a ParallelFor skipped work units of a restore; it must call every index";
        let components = Components::from_infos(&self.components);
        let mut table = self.allocator.chunk_table();
        let mut building = Building::new(self);
        // Step 1, beside `world`: the archetypes whose restore runs a `Clone`.
        for (a, image) in self.archetypes.iter().enumerate() {
            if image.clones() {
                building.build(a, &components, &mut table, spare);
            }
        }
        // A skip here unwinds through `building`, which drops what it cloned.
        assert!(building.run(0..self.cloned_units, parallel), "{SKIPPED}");
        // Step 2: no user code runs from here on. `world`'s memory that holds no value to
        // drop goes to `spare`, for the plain archetypes to take straight back.
        let (mut entities, kept) = world.take_apart_plain(spare);
        self.allocator.restore_into(&mut entities);
        for (a, image) in self.archetypes.iter().enumerate() {
            if !image.clones() {
                building.build(a, &components, &mut table, spare);
            }
        }
        if !building.run(self.cloned_units..self.units.len(), parallel) {
            // `world` is half taken apart: empty it (dropping what it still holds, and what
            // step 1 cloned, each once, outside any unwinding) and refuse.
            let old = core::mem::take(world);
            let cloned = std::panic::catch_unwind(AssertUnwindSafe(|| drop(building)));
            drop(old);
            if let Err(payload) = cloned {
                std::panic::resume_unwind(payload);
            }
            panic!("{SKIPPED}");
        }
        let restored = World::from_snapshot_parts(entities, components, building.finish(), table);
        let replaced = core::mem::replace(world, restored);
        kept.then_some(replaced)
    }
}
