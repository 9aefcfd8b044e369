//! Restoring over a world ([`WorldSnapshot::restore_over`]): a plain-copy world is rebuilt in
//! its own slabs, any other beside it in the slabs a replaced world gave back; the result is the
//! world `restore` gives, every value is dropped exactly once, and a panicking `Clone` leaves
//! the world as it was. Small sizes under Miri.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr_core::SpareSlabs;
use freyr_core::snapshot::{Sequential, SnapshotTypes};
use freyr_core::{ArchetypeId, CHUNK_CAPACITY, Entity, World};

/// Rows: at least two chunks, so more than one slab (slabs double from one chunk).
const N: u64 = if cfg!(miri) {
    CHUNK_CAPACITY as u64 + 18
} else {
    5000
};
/// A row in the second chunk (so the second slab) that no test moves.
const IN_SECOND_SLAB: usize = CHUNK_CAPACITY + 8;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(u64, u32);

static CLONES: AtomicUsize = AtomicUsize::new(0);
static DROPS: AtomicUsize = AtomicUsize::new(0);
static PANIC_AT: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The tests that count `Tally`s run one at a time.
static TALLIES: Mutex<()> = Mutex::new(());

/// Counts its clones and drops (a heap value inside, so a slab reused with a stale copy of one
/// would show under Miri); the clone numbered `PANIC_AT` panics.
#[derive(Debug)]
struct Tally(Box<u64>);
impl Clone for Tally {
    fn clone(&self) -> Self {
        let n = CLONES.fetch_add(1, Ordering::SeqCst);
        if n == PANIC_AT.load(Ordering::SeqCst) {
            panic!("clone {n} fails");
        }
        Tally(self.0.clone())
    }
}
impl Drop for Tally {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

fn types() -> SnapshotTypes {
    let mut types = SnapshotTypes::new();
    types.register_copy::<Pos>();
    types.register_clone::<Tally>();
    types
}

/// One row of [`describe`]: archetype, entity, row, `Pos`, the `Tally`'s value.
type Row = (ArchetypeId, Entity, usize, Option<Pos>, Option<u64>);

/// Every entity, its archetype, row and values, in iteration order: compared as data, so the
/// description is formatted only when an assertion fails. Values are read from the chunks'
/// columns (a lookup by entity for each row dominated the tests' time under Miri); every 61st
/// row is also read by entity, so the entity index is checked against the rows too.
fn describe(world: &World) -> Vec<Row> {
    let (pos, tally) = (world.component_id::<Pos>(), world.component_id::<Tally>());
    let mut out = Vec::new();
    for archetype in world.archetypes() {
        for chunk in archetype.chunks() {
            let p = pos.and_then(|id| chunk.column::<Pos>(id));
            let t = tally.and_then(|id| chunk.column::<Tally>(id));
            for (row, &e) in chunk.entities().iter().enumerate() {
                let values = (p.map(|c| c[row]), t.map(|c| *c[row].0));
                if out.len() % 61 == 0 {
                    let by_entity = (
                        world.get::<Pos>(e).ok().copied(),
                        world.get::<Tally>(e).ok().map(|t| *t.0),
                    );
                    assert_eq!(by_entity, values, "{e} read by entity and by row");
                }
                out.push((archetype.id(), e, row, values.0, values.1));
            }
        }
    }
    out
}

/// Live `Tally` values in `world`.
fn tallies(world: &World) -> usize {
    let Some(id) = world.component_id::<Tally>() else {
        return 0;
    };
    let with = world
        .archetypes()
        .iter()
        .filter(|a| a.components().contains(&id));
    with.map(|a| a.len()).sum()
}

fn pos_at(world: &World, e: Entity) -> *const Pos {
    world.get::<Pos>(e).unwrap()
}

/// What happens after the snapshot point: values change, entities come and go.
fn advance(world: &mut World, ids: &[Entity]) -> Vec<Entity> {
    for &e in ids.iter().step_by(3) {
        world.get_mut::<Pos>(e).unwrap().1 += 1;
    }
    world.despawn(ids[1]).unwrap();
    // Past the snapshot's slabs: a new one.
    world.spawn_batch((0..N + CHUNK_CAPACITY as u64 + 88).map(|i| (Pos(i, 7),)))
}

#[test]
fn a_plain_copy_world_is_restored_in_its_own_slabs() {
    let mut world = World::new();
    let ids = world.spawn_batch((0..N).map(|i| (Pos(i, 0),)));
    let snapshot = world.snapshot(&types()).unwrap();
    let (at_s, addresses) = (
        describe(&world),
        [pos_at(&world, ids[0]), pos_at(&world, ids[IN_SECOND_SLAB])],
    );
    let spawned = advance(&mut world, &ids);
    let after = describe(&world);
    let old_id = world.id();
    let mut spare = SpareSlabs::new();

    let replaced = snapshot.restore_over(&mut world, &Sequential, &mut spare);
    assert!(replaced.is_none(), "nothing left to drop");
    world.check_invariants();
    assert_ne!(world.id(), old_id, "a restored world has a fresh identity");
    assert_eq!(describe(&world), at_s);
    assert_eq!(
        [pos_at(&world, ids[0]), pos_at(&world, ids[IN_SECOND_SLAB])],
        addresses,
        "the values are back in the slabs they were in"
    );
    assert!(
        spare.bytes() > 0,
        "the slab grown after the snapshot is left over"
    );
    assert_eq!(advance(&mut world, &ids), spawned, "the same ids again");
    assert_eq!(describe(&world), after);
    world.check_invariants();
}

#[test]
fn values_with_drop_glue_are_restored_beside_and_dropped_once() {
    let _one = TALLIES.lock().unwrap_or_else(|e| e.into_inner());
    let (clones, drops) = (CLONES.load(Ordering::SeqCst), DROPS.load(Ordering::SeqCst));
    let mut world = World::new();
    let ids = world.spawn_batch((0..N).map(|i| (Pos(i, 0), Tally(Box::new(i)))));
    let snapshot = world.snapshot(&types()).unwrap();
    let at_s = describe(&world);
    let first = pos_at(&world, ids[0]);
    advance(&mut world, &ids);
    let mut spare = SpareSlabs::new();
    let mut seen = Vec::new();
    for round in 0..4 {
        let replaced = snapshot
            .restore_over(&mut world, &Sequential, &mut spare)
            .expect("a Clone runs, so the world is built beside the replaced one");
        world.check_invariants();
        assert_eq!(describe(&world), at_s);
        seen.push(pos_at(&world, ids[0]));
        let (live, before) = (tallies(&replaced), DROPS.load(Ordering::SeqCst));
        replaced.recycle_into(&mut spare);
        assert_eq!(DROPS.load(Ordering::SeqCst) - before, live, "round {round}");
        assert!(spare.bytes() > 0);
    }
    // The first restore got fresh slabs (the original world was still alive); from then on
    // each copies into the world replaced one restore earlier.
    assert_eq!(seen[1], first);
    assert_eq!((seen[2], seen[3]), (seen[0], seen[1]));
    drop((world, snapshot));
    let made = N as usize + (CLONES.load(Ordering::SeqCst) - clones);
    assert_eq!(
        DROPS.load(Ordering::SeqCst) - drops,
        made,
        "each value once"
    );
}

#[test]
fn a_plain_snapshot_over_values_with_drop_glue_drops_them_after() {
    let _one = TALLIES.lock().unwrap_or_else(|e| e.into_inner());
    let drops = DROPS.load(Ordering::SeqCst);
    let mut world = World::new();
    let ids = world.spawn_batch((0..N).map(|i| (Pos(i, 0),)));
    let snapshot = world.snapshot(&types()).unwrap();
    let at_s = describe(&world);
    world.spawn_batch((0..N).map(|i| (Tally(Box::new(i)),)));
    let mut spare = SpareSlabs::new();
    let replaced = snapshot
        .restore_over(&mut world, &Sequential, &mut spare)
        .expect("dropping the replaced values runs a Drop, so it is left to the caller");
    assert_eq!(DROPS.load(Ordering::SeqCst), drops, "none dropped yet");
    assert_eq!(describe(&world), at_s);
    assert_eq!(world.get::<Pos>(ids[5]), Ok(&Pos(5, 0)));
    drop(replaced);
    assert_eq!(DROPS.load(Ordering::SeqCst) - drops, N as usize);
}

#[test]
fn a_panicking_clone_leaves_the_world_as_it_was() {
    let _one = TALLIES.lock().unwrap_or_else(|e| e.into_inner());
    let (clones, drops) = (CLONES.load(Ordering::SeqCst), DROPS.load(Ordering::SeqCst));
    let mut world = World::new();
    let ids = world.spawn_batch((0..N).map(|i| (Pos(i, 0), Tally(Box::new(i)))));
    let snapshot = world.snapshot(&types()).unwrap();
    let mut spare = SpareSlabs::new();
    // A replaced world's slabs in `spare`, for the failing restore to take.
    let replaced = snapshot.restore_over(&mut world, &Sequential, &mut spare);
    replaced.unwrap().recycle_into(&mut spare);
    let kept = spare.bytes();
    assert!(kept > 0);
    advance(&mut world, &ids);
    let (current, id) = (describe(&world), world.id());

    let fail_at = N as usize - 10; // in the last chunk
    let start = CLONES.load(Ordering::SeqCst);
    PANIC_AT.store(start + fail_at, Ordering::SeqCst);
    let run = catch_unwind(AssertUnwindSafe(|| {
        snapshot.restore_over(&mut world, &Sequential, &mut spare)
    }));
    PANIC_AT.store(usize::MAX, Ordering::SeqCst);
    assert!(run.is_err(), "the panic is re-raised");
    assert_eq!((describe(&world), world.id()), (current, id), "unchanged");
    world.check_invariants();
    assert!(spare.bytes() < kept, "the slabs it took are freed");
    let made = N as usize + (CLONES.load(Ordering::SeqCst) - clones) - 1;
    drop((world, snapshot));
    assert_eq!(
        DROPS.load(Ordering::SeqCst) - drops,
        made,
        "each value once"
    );
}

/// A world of plain rows (`Pos`) and of rows that clone (`Pos`, `Tally`), advanced past the
/// snapshot point: returns the plain ids, the snapshot and its description.
fn mixed(world: &mut World) -> (Vec<Entity>, freyr_core::snapshot::WorldSnapshot, Vec<Row>) {
    let ids = world.spawn_batch((0..N).map(|i| (Pos(i, 0),)));
    world.spawn_batch((0..N / 4).map(|i| (Pos(i, 1), Tally(Box::new(i)))));
    let snapshot = world.snapshot(&types()).unwrap();
    let at_s = describe(world);
    advance(world, &ids);
    // A Tally row the snapshot does not hold: the replaced world keeps it to drop.
    world.spawn((Pos(9, 9), Tally(Box::new(9))));
    (ids, snapshot, at_s)
}

#[test]
fn plain_rows_are_restored_in_place_beside_rows_that_clone() {
    let _one = TALLIES.lock().unwrap_or_else(|e| e.into_inner());
    let (clones, drops) = (CLONES.load(Ordering::SeqCst), DROPS.load(Ordering::SeqCst));
    let mut world = World::new();
    let (ids, snapshot, at_s) = mixed(&mut world);
    let addresses = [pos_at(&world, ids[0]), pos_at(&world, ids[IN_SECOND_SLAB])];
    let mut spare = SpareSlabs::new();
    for round in 0..3 {
        let live = tallies(&world);
        let replaced = snapshot
            .restore_over(&mut world, &Sequential, &mut spare)
            .expect("the Tally rows are left to drop");
        world.check_invariants();
        assert_eq!(describe(&world), at_s, "round {round}");
        assert_eq!(
            [pos_at(&world, ids[0]), pos_at(&world, ids[IN_SECOND_SLAB])],
            addresses,
            "the plain rows are copied into the slabs they were in, round {round}"
        );
        // What is handed back is a valid world of the rows to drop, and nothing else.
        replaced.check_invariants();
        assert_eq!((replaced.len(), tallies(&replaced)), (live, live));
        let before = DROPS.load(Ordering::SeqCst);
        replaced.recycle_into(&mut spare);
        assert_eq!(DROPS.load(Ordering::SeqCst) - before, live, "round {round}");
    }
    drop((world, snapshot));
    let made = (N / 4) as usize + 1 + (CLONES.load(Ordering::SeqCst) - clones);
    assert_eq!(
        DROPS.load(Ordering::SeqCst) - drops,
        made,
        "each value once"
    );
}

#[test]
fn the_replaced_world_can_be_used_before_it_is_dropped() {
    let _one = TALLIES.lock().unwrap_or_else(|e| e.into_inner());
    let mut world = World::new();
    let (_, snapshot, _) = mixed(&mut world);
    let mut replaced = snapshot
        .restore_over(&mut world, &Sequential, &mut SpareSlabs::new())
        .unwrap();
    let kept: Vec<Entity> = replaced
        .archetypes()
        .iter()
        .flat_map(|a| a.chunks())
        .flat_map(|c| c.entities().to_vec())
        .collect();
    assert_eq!(kept.len(), replaced.len());
    // Row moves in every direction update the (renumbered) slots.
    let fresh = replaced.spawn((Pos(1, 1), Tally(Box::new(1))));
    replaced.despawn(kept[0]).unwrap();
    replaced.remove::<(Tally,)>(kept[1]).unwrap();
    replaced.despawn(fresh).unwrap();
    replaced.check_invariants();
    assert_eq!(replaced.len(), kept.len() - 1);
    world.check_invariants();
}

#[test]
fn a_panicking_clone_leaves_the_plain_rows_as_they_were() {
    let _one = TALLIES.lock().unwrap_or_else(|e| e.into_inner());
    let (clones, drops) = (CLONES.load(Ordering::SeqCst), DROPS.load(Ordering::SeqCst));
    let mut world = World::new();
    let (ids, snapshot, _) = mixed(&mut world);
    let (current, id) = (describe(&world), world.id());
    let address = pos_at(&world, ids[IN_SECOND_SLAB]);
    let start = CLONES.load(Ordering::SeqCst);
    PANIC_AT.store(start + N as usize / 8, Ordering::SeqCst);
    let run = catch_unwind(AssertUnwindSafe(|| {
        snapshot.restore_over(&mut world, &Sequential, &mut SpareSlabs::new())
    }));
    PANIC_AT.store(usize::MAX, Ordering::SeqCst);
    assert!(run.is_err(), "the panic is re-raised");
    assert_eq!((describe(&world), world.id()), (current, id), "unchanged");
    assert_eq!(pos_at(&world, ids[IN_SECOND_SLAB]), address);
    world.check_invariants();
    let made = (N / 4) as usize + 1 + (CLONES.load(Ordering::SeqCst) - clones) - 1;
    drop((world, snapshot));
    assert_eq!(
        DROPS.load(Ordering::SeqCst) - drops,
        made,
        "each value once"
    );
}

/// Runs its first `parallel_for` in full and skips every later one.
struct SkipsAfterFirst(AtomicUsize);
impl freyr_core::snapshot::ParallelFor for SkipsAfterFirst {
    fn parallel_for(&self, count: usize, f: &(dyn Fn(usize) + Sync)) {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            (0..count).for_each(f);
        }
    }
}

#[test]
fn a_skipping_parallel_for_after_the_world_is_taken_apart_empties_it() {
    let _one = TALLIES.lock().unwrap_or_else(|e| e.into_inner());
    let (clones, drops) = (CLONES.load(Ordering::SeqCst), DROPS.load(Ordering::SeqCst));
    let mut world = World::new();
    let (_, snapshot, _) = mixed(&mut world);
    let run = catch_unwind(AssertUnwindSafe(|| {
        snapshot.restore_over(
            &mut world,
            &SkipsAfterFirst(AtomicUsize::new(0)),
            &mut SpareSlabs::new(),
        )
    }));
    assert!(run.is_err(), "refused");
    assert!(world.is_empty());
    world.check_invariants();
    // The replaced values and the clones made before the skip: each dropped once, already.
    let made = (N / 4) as usize + 1 + (CLONES.load(Ordering::SeqCst) - clones);
    drop(snapshot);
    assert_eq!(
        DROPS.load(Ordering::SeqCst) - drops,
        made,
        "each value once"
    );
}
