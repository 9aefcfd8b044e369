//! World snapshots: a restored world equals the world at the snapshot in everything observable
//! (component ids, archetype order, row order, slabs, the allocator), and a panicking `Clone`
//! loses nothing. Small sizes under Miri.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr_core::snapshot::{ParallelFor, Sequential, SnapshotTypes, WorldSnapshot};
use freyr_core::{CHUNK_CAPACITY, Entity, World};

const N: usize = if cfg!(miri) { 40 } else { 3000 };

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(u64, u32);
#[derive(Clone, Debug, PartialEq)]
struct Name(String);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tag;
#[derive(Clone, Copy, Debug, PartialEq)]
struct Late(u16);

fn types() -> SnapshotTypes {
    let mut types = SnapshotTypes::new();
    types.register_copy::<Pos>();
    types.register_clone::<Name>();
    types.register_copy::<Tag>();
    types.register_copy::<Late>();
    types
}

/// A world with several archetypes, holes in its free list and an emptied archetype.
fn build() -> (World, Vec<Entity>) {
    let mut world = World::new();
    let ids = world.spawn_batch((0..N).map(|i| (Pos(i as u64, 1), Name(format!("e{i}")))));
    for (k, &e) in ids.iter().enumerate() {
        match k % 7 {
            0 => world.despawn(e).unwrap(),
            3 => world.insert(e, (Tag,)).unwrap(),
            5 => drop(world.remove::<(Name,)>(e).unwrap()),
            _ => {}
        }
    }
    let gone = world.spawn((Tag, 0u8));
    world.despawn(gone).unwrap(); // leaves an empty archetype (Tag, u8)
    (world, ids)
}

/// What happens after the snapshot point: spawns reuse freed ids, a new type appears.
fn advance(world: &mut World, ids: &[Entity]) -> Vec<Entity> {
    let mut spawned = Vec::new();
    for &e in ids.iter().step_by(11) {
        if world.contains(e) {
            world.insert(e, (Late(7),)).unwrap();
        }
    }
    for i in 0..N / 10 {
        spawned.push(world.spawn((Pos(i as u64, 9),)));
    }
    spawned.push(world.spawn((Late(3), Tag)));
    spawned
}

/// One observation of [`describe`]: data compared with `==` (formatted only when an assertion
/// fails, which keeps the comparison cheap under Miri).
#[derive(Debug, PartialEq)]
enum Seen {
    Archetype(String, Vec<&'static str>, usize, usize, usize),
    Row(Entity, usize, Option<Pos>, Option<Name>, Option<Late>),
}

/// Everything observable about a world's storage, in iteration order.
fn describe(world: &World) -> Vec<Seen> {
    let mut out = Vec::new();
    for archetype in world.archetypes() {
        let names: Vec<_> = archetype
            .components()
            .iter()
            .map(|&c| world.component_info(c).name())
            .collect();
        out.push(Seen::Archetype(
            format!("{:?}", archetype.id()),
            names,
            archetype.len(),
            archetype.allocated_chunks(),
            archetype.allocated_slabs(),
        ));
        for chunk in archetype.chunks() {
            for (row, &e) in chunk.entities().iter().enumerate() {
                out.push(Seen::Row(
                    e,
                    row,
                    world.get::<Pos>(e).ok().copied(),
                    world.get::<Name>(e).ok().cloned(),
                    world.get::<Late>(e).ok().copied(),
                ));
            }
        }
    }
    out
}

#[test]
fn a_restored_world_continues_exactly_like_the_original() {
    let (mut world, ids) = build();
    let snapshot = world.snapshot(&types()).unwrap();
    let before = describe(&world);
    let emptied = |w: &World| w.archetypes().iter().filter(|a| a.is_empty()).count();
    let empty_at_s = emptied(&world);
    assert!(empty_at_s >= 2, "the empty set and (Tag, u8) at least");
    let spawned = advance(&mut world, &ids);
    let after = describe(&world);
    let late_id = world.component_id::<Late>().unwrap();

    let mut restored = World::restore_from(&snapshot);
    restored.check_invariants();
    assert_ne!(
        restored.id(),
        world.id(),
        "a restored world has a fresh identity"
    );
    assert_eq!(describe(&restored), before);
    assert_eq!(emptied(&restored), empty_at_s, "empty archetypes are kept");
    assert_eq!(
        restored.component_id::<Late>(),
        None,
        "types first used after S are gone"
    );
    let respawned = advance(&mut restored, &ids);
    restored.check_invariants();
    assert_eq!(respawned, spawned, "the allocator hands out the same ids");
    assert_eq!(
        restored.component_id::<Late>(),
        Some(late_id),
        "and the same component ids"
    );
    assert_eq!(describe(&restored), after);
}

#[test]
fn restore_on_several_threads_equals_sequential() {
    struct Threads(usize);
    impl ParallelFor for Threads {
        fn parallel_for(&self, count: usize, f: &(dyn Fn(usize) + Sync)) {
            let next = AtomicUsize::new(0);
            std::thread::scope(|s| {
                for _ in 0..self.0 {
                    s.spawn(|| {
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= count {
                                break;
                            }
                            f(i);
                        }
                    });
                }
            });
        }
    }
    let (world, _) = build();
    let expected = describe(&world);
    for threads in [1, 2, 3] {
        let mut snapshot = WorldSnapshot::new();
        world
            .snapshot_into(&mut snapshot, &types(), &Threads(threads))
            .unwrap();
        assert_eq!(describe(&snapshot.restore(&Threads(threads))), expected);
    }
}

#[test]
fn a_reused_snapshot_holds_the_latest_world() {
    let (mut world, ids) = build();
    let mut snapshot = WorldSnapshot::new();
    for _ in 0..3 {
        world
            .snapshot_into(&mut snapshot, &types(), &Sequential)
            .unwrap();
        assert!(snapshot.is_complete());
    }
    let first = describe(&world);
    assert_eq!(describe(&World::restore_from(&snapshot)), first);
    advance(&mut world, &ids);
    world
        .snapshot_into(&mut snapshot, &types(), &Sequential)
        .unwrap();
    let latest = describe(&World::restore_from(&snapshot));
    assert_ne!(latest, first);
    assert_eq!(latest, describe(&world));
    // A refused snapshot keeps what it held.
    world.spawn((1u32,));
    assert!(
        world
            .snapshot_into(&mut snapshot, &types(), &Sequential)
            .is_err()
    );
    assert!(snapshot.is_complete());
    assert_eq!(describe(&World::restore_from(&snapshot)), latest);
}

#[test]
fn unregistered_and_excluded_live_types_are_named() {
    let (mut world, _) = build();
    world.spawn((1u32, 2i64));
    let mut types = types();
    types.exclude::<i64>();
    let empty_only = World::new().snapshot(&SnapshotTypes::new());
    assert!(empty_only.is_ok(), "an empty world needs no registration");
    let err = world.snapshot(&types).unwrap_err();
    assert_eq!(err.unregistered, ["u32"]);
    assert_eq!(err.excluded_live, ["i64"]);
    let text = err.to_string();
    assert!(
        text.contains("`u32`") && text.contains("register_snapshot_clone"),
        "{text}"
    );
    assert!(text.contains("`i64`, excluded"), "{text}");
    // Unregistered types of empty archetypes only are fine (`(Tag, u8)` is empty).
    assert!(build().0.snapshot(&self::types()).is_ok());
}

#[test]
#[should_panic(expected = "a type is either copied or excluded")]
fn a_type_is_either_copied_or_excluded() {
    let mut types = SnapshotTypes::new();
    types.exclude::<u8>();
    types.register_copy::<u8>();
}

static CLONES: AtomicUsize = AtomicUsize::new(0);
static DROPS: AtomicUsize = AtomicUsize::new(0);
static PANIC_AT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Counts its clones and drops; the clone numbered `PANIC_AT` panics.
#[derive(Debug)]
struct Tally(u64);
impl Clone for Tally {
    fn clone(&self) -> Self {
        let n = CLONES.fetch_add(1, Ordering::SeqCst);
        if n == PANIC_AT.load(Ordering::SeqCst) {
            panic!("clone {n} fails");
        }
        Tally(self.0)
    }
}
impl Drop for Tally {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_panicking_clone_loses_nothing() {
    let c = CHUNK_CAPACITY;
    let rows = if cfg!(miri) { c + c * 3 / 8 } else { 2000 }; // several chunks
    // The clone that panics: in the middle of the second chunk (row 600 of 512-row chunks).
    let at = c + c * 11 / 64;
    let mut types = SnapshotTypes::new();
    types.register_clone::<Tally>();
    let mut world = World::new();
    let ids = world.spawn_batch((0..rows as u64).map(|i| (Tally(i),)));
    let mut snapshot = WorldSnapshot::new();

    // Taking: the clone in the middle of the second chunk panics.
    PANIC_AT.store(at, Ordering::SeqCst);
    let taken = catch_unwind(AssertUnwindSafe(|| {
        world.snapshot_into(&mut snapshot, &types, &Sequential)
    }));
    assert!(taken.is_err(), "the panic is re-raised");
    assert!(!snapshot.is_complete());
    assert_eq!(CLONES.load(Ordering::SeqCst), at + 1);
    // The values cloned before the panic are dropped exactly once: those of the work unit
    // that panicked at once (a unit copies a run of chunks), those of units done before it
    // with the snapshot.
    let at_once = DROPS.load(Ordering::SeqCst);
    assert!(at_once > at - c && at_once <= at, "{at_once}");
    drop(snapshot);
    assert_eq!(DROPS.load(Ordering::SeqCst), at);
    for (i, &e) in ids.iter().enumerate() {
        assert_eq!(
            world.get::<Tally>(e).unwrap().0,
            i as u64,
            "the world is untouched"
        );
    }
    world.check_invariants();

    // Restoring: a panic halfway drops the restored values and leaves the snapshot whole.
    PANIC_AT.store(usize::MAX, Ordering::SeqCst);
    let snapshot = world.snapshot(&types).unwrap();
    let (clones, drops) = (CLONES.load(Ordering::SeqCst), DROPS.load(Ordering::SeqCst));
    let fail_at = rows - rows % c / 2; // in the last chunk
    PANIC_AT.store(clones + fail_at, Ordering::SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(|| World::restore_from(&snapshot))).is_err());
    assert_eq!(DROPS.load(Ordering::SeqCst) - drops, fail_at);
    assert_eq!(CLONES.load(Ordering::SeqCst) - clones, fail_at + 1);
    PANIC_AT.store(usize::MAX, Ordering::SeqCst);
    let restored = World::restore_from(&snapshot);
    assert_eq!(
        restored.get::<Tally>(ids[rows - 1]).unwrap().0,
        rows as u64 - 1
    );
    let drops = DROPS.load(Ordering::SeqCst);
    drop((snapshot, restored));
    assert_eq!(DROPS.load(Ordering::SeqCst) - drops, 2 * rows);
}

#[test]
#[should_panic(expected = "restoring an incomplete snapshot")]
fn an_incomplete_snapshot_is_not_restored() {
    World::restore_from(&WorldSnapshot::new());
}

#[test]
fn a_parallel_for_that_skips_work_is_caught() {
    struct Lazy;
    impl ParallelFor for Lazy {
        fn parallel_for(&self, count: usize, f: &(dyn Fn(usize) + Sync)) {
            (0..count.saturating_sub(1)).for_each(|i| {
                f(i);
                f(i); // a second call of an index is harmless
            });
        }
    }
    let mut world = World::new();
    world.spawn_batch((0..3).map(|i| (Name(format!("{i}")),)));
    let mut snapshot = WorldSnapshot::new();
    let run = catch_unwind(AssertUnwindSafe(|| {
        world.snapshot_into(&mut snapshot, &types(), &Lazy)
    }));
    assert!(run.is_err());
    assert!(!snapshot.is_complete());
}

/// A world of many chunks over several slabs, its last chunk partial: a snapshot copies each
/// column of a run of chunks at once, and both directions give back every row, across the
/// slabs' ends and the runs' ends, for plain and cloned columns, on one thread and on two.
#[test]
#[cfg_attr(
    miri,
    ignore = "40 s under Miri; its runs of 2 chunks there are copied by every other test of this file"
)]
fn runs_of_chunks_across_slabs_copy_every_row() {
    let c = CHUNK_CAPACITY;
    // 28 chunks: slabs of 1, 2, 4 and 8, then 13 of a 16-chunk slab, split into runs of 8 and 5.
    let rows = c * 27 + 5;
    let mut types = SnapshotTypes::new();
    types.register_copy::<u32>();
    types.register_copy::<[u64; 3]>();
    types.register_clone::<String>();
    let mut world = World::new();
    // One at a time, so each archetype grows slab by slab (1, 2, 4, 8, ... chunks).
    let plain: Vec<Entity> = (0..rows as u32)
        .map(|i| world.spawn((i, [u64::from(i); 3])))
        .collect();
    let named: Vec<Entity> = (0..rows as u32)
        .map(|i| world.spawn((i, format!("n{i}"))))
        .collect();
    struct Two;
    impl ParallelFor for Two {
        fn parallel_for(&self, count: usize, f: &(dyn Fn(usize) + Sync)) {
            std::thread::scope(|s| {
                s.spawn(|| (0..count).step_by(2).for_each(f));
                (1..count).step_by(2).for_each(f);
            });
        }
    }
    for parallel in [&Sequential as &dyn ParallelFor, &Two] {
        let mut snapshot = WorldSnapshot::new();
        world
            .snapshot_into(&mut snapshot, &types, parallel)
            .unwrap();
        let restored = snapshot.restore(parallel);
        restored.check_invariants();
        for (i, (&p, &n)) in plain.iter().zip(&named).enumerate() {
            let i = i as u32;
            assert_eq!(restored.get::<u32>(p), Ok(&i));
            assert_eq!(restored.get::<[u64; 3]>(p), Ok(&[u64::from(i); 3]));
            assert_eq!(restored.get::<u32>(n), Ok(&i));
            assert_eq!(restored.get::<String>(n).unwrap(), &format!("n{i}"));
        }
        // Over a world of other values in the same layout: every row is the snapshot's again.
        let mut over = World::restore_from(&snapshot);
        for &p in &plain {
            *over.get_mut::<u32>(p).unwrap() += 1;
        }
        let mut spare = freyr_core::SpareSlabs::new();
        if let Some(old) = snapshot.restore_over(&mut over, parallel, &mut spare) {
            drop(old);
        }
        over.check_invariants();
        for (i, &p) in plain.iter().enumerate() {
            assert_eq!(over.get::<u32>(p), Ok(&(i as u32)));
        }
    }
}
