//! Hostile uses of snapshots: a snapshot restored into another registry (component ids in
//! another order, another worker count, other archetypes and entities, a type copied in one
//! and cloned in the other), restored twice and after its registry is gone, one `Snapshot`
//! refilled by registries of different shapes, a `SnapshotRing` of one slot, pushes of the
//! same tick twice and refused pushes, every tick in and out of the ring, and the values a
//! snapshot owns counted exactly (an `Arc`'s strong count: no leak, no double drop).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use freyr::query::QueryState;
use freyr::snapshot::{Snapshot, SnapshotError, SnapshotRing};
use freyr::{Entity, Phase, Registry, StableHash};

const N: u64 = if cfg!(miri) { 20 } else { 700 };

#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
struct Pos(u64);
#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
struct Vel(u64);
#[derive(Clone, Debug, PartialEq, StableHash)]
struct Name(String);
/// Only the target registry of a cross-registry restore uses it.
#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
struct Extra(u32);
/// Holds heap memory through a newtype, copied with `Clone`: the strong count says how many
/// copies are alive.
#[derive(Clone)]
struct Shared(Arc<u64>);
#[derive(Clone, Debug, PartialEq)]
struct Score(Vec<u64>);
#[derive(Debug, PartialEq)]
struct Socket(u16);

fn hash(r: &Registry) -> u64 {
    r.world_hash::<(Pos, Vel, Name, Extra)>()
}

/// The archetypes by component names, with their entities in row order.
fn layout(r: &Registry) -> Vec<(Vec<&'static str>, Vec<Entity>)> {
    let world = r.world();
    let names = |a: &freyr::storage::Archetype| {
        a.components()
            .iter()
            .map(|&c| world.component_info(c).name())
            .collect()
    };
    let rows = |a: &freyr::storage::Archetype| {
        a.chunks()
            .flat_map(|c| c.entities().to_vec())
            .collect::<Vec<_>>()
    };
    world
        .archetypes()
        .iter()
        .map(|a| (names(a), rows(a)))
        .collect()
}

/// The system every registry of the cross-registry tests runs: moves, despawns and spawns by
/// command, so the next ids depend on the restored allocator.
fn simulate(r: &mut Registry, _: f32) {
    let tick = r.tick();
    r.query::<(&mut Pos, &Vel)>()
        .each_async_with(move |e, (p, v), ctx| {
            p.0 = p.0.wrapping_mul(31).wrapping_add(v.0 + tick);
            let key = u64::from(e.index()) + tick;
            if key.is_multiple_of(11) {
                ctx.commands().despawn(e);
            } else if key.is_multiple_of(7) {
                ctx.commands()
                    .spawn((Pos(key), Vel(1), Name(format!("s{key}"))));
            }
        });
    r.query::<&mut Name>().each(|_, n| n.0.push('.'));
}

/// Registry A: `Pos` copied, types first used in the order Pos, Vel, Name.
fn source(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_snapshot_copy::<Pos>();
    r.register_snapshot_copy::<Vel>();
    r.register_snapshot_clone::<Name>();
    r.register_snapshot_copy::<Extra>();
    r.register_snapshot_resource::<Score>();
    r.insert_resource(Score(vec![1, 2, 3]));
    r.spawn_batch((0..N).map(|i| (Pos(i), Vel(i % 5), Name(format!("n{i}")))));
    r.spawn_batch((0..N / 3).map(|i| (Pos(i),)));
    r.add_system(Phase::Update, simulate);
    r
}

/// Registry B: other component ids (Extra, Name, Vel, Pos first used in that order), `Pos`
/// cloned rather than copied, more archetypes and entities, a cached query and a held
/// `QueryState` resolved against its own ids.
fn target(workers: usize) -> (Registry, QueryState<(&'static Pos, &'static Vel)>) {
    let mut r = Registry::with_workers(workers);
    r.register_snapshot_clone::<Pos>();
    r.register_snapshot_copy::<Vel>();
    r.register_snapshot_clone::<Name>();
    r.register_snapshot_copy::<Extra>();
    r.register_snapshot_resource::<Score>();
    r.spawn((Extra(9),));
    r.spawn((Name("b".into()), Extra(1)));
    r.spawn_batch((0..3 * N).map(|i| (Vel(i), Pos(i), Extra(2))));
    r.add_system(Phase::Update, simulate);
    assert_eq!(r.query::<(&Pos, &Vel)>().count(), 3 * N as usize);
    let held = QueryState::<(&Pos, &Vel)>::new(r.world()).unwrap();
    (r, held)
}

#[test]
fn a_snapshot_restored_into_another_registry_is_that_world_whatever_its_ids_and_workers() {
    let workers: &[(usize, usize)] = if cfg!(miri) {
        &[(2, 1)]
    } else {
        &[(1, 3), (3, 1), (2, 16), (8, 2)]
    };
    for &(wa, wb) in workers {
        let mut a = source(wa);
        a.update(0.1);
        let snapshot = a.snapshot().unwrap();
        let (mut b, mut held) = target(wb);
        let b_pos = b.world().component_id::<Pos>();
        assert_ne!(a.world().component_id::<Pos>(), b_pos, "the ids differ");
        b.restore(&snapshot).unwrap();
        assert_eq!(b.tick(), a.tick());
        assert_eq!(hash(&b), hash(&a), "{wa} -> {wb} workers");
        assert_eq!(layout(&b), layout(&a));
        assert_eq!(b.resource::<Score>(), a.resource::<Score>());
        let a_pos = a.world().component_id::<Pos>();
        assert_eq!(b.world().component_id::<Pos>(), a_pos, "the snapshot's ids");
        assert_eq!(
            b.query::<&Extra>().count(),
            0,
            "B's own archetypes are gone"
        );
        let matched = a.query::<(&Pos, &Vel)>().count();
        assert_eq!(b.query::<(&Pos, &Vel)>().count(), matched);
        held.update(b.world());
        let fresh = QueryState::<(&Pos, &Vel)>::new(b.world()).unwrap();
        assert!(held.matched_archetypes().eq(fresh.matched_archetypes()));
        // Both go on alike: same ids spawned, same values, at any worker count.
        for _ in 0..3 {
            a.update(0.1);
            b.update(0.1);
            assert_eq!(hash(&b), hash(&a), "{wa} -> {wb} workers");
        }
        assert_eq!(layout(&b), layout(&a));
        assert_eq!(b.spawn((Extra(3),)), a.spawn((Extra(3),)));
        assert_eq!(hash(&b), hash(&a));
        // And B snapshots and restores its new world with its own registrations.
        let again = b.snapshot().unwrap();
        b.update(0.1);
        b.restore(&again).unwrap();
        assert_eq!(hash(&b), hash(&a));
    }
}

#[test]
fn a_snapshot_outlives_its_registry_and_restores_into_new_ones_again_and_again() {
    let token = Arc::new(7u64);
    let (snapshot, ids) = {
        let mut a = Registry::with_workers(2);
        a.register_snapshot_clone::<Shared>();
        a.register_snapshot_clone::<Name>();
        a.register_snapshot_resource::<Shared>();
        a.insert_resource(Shared(token.clone()));
        let ids = a.spawn_batch((0..N).map(|i| (Shared(token.clone()), Name(i.to_string()))));
        a.despawn(ids[1]).unwrap();
        let snapshot = a.snapshot().unwrap();
        // A's values and resource, and the snapshot's copies of both.
        assert_eq!(Arc::strong_count(&token), 1 + 2 * N as usize);
        (snapshot, ids)
    };
    // The token and the snapshot's copies: N - 1 values and the resource.
    assert_eq!(Arc::strong_count(&token), 1 + N as usize, "A's are dropped");
    for workers in [1, 3] {
        let mut b = Registry::with_workers(workers);
        b.register_snapshot_clone::<Shared>();
        b.register_snapshot_clone::<Name>();
        b.register_snapshot_resource::<Shared>();
        for round in 0..3 {
            b.restore(&snapshot).unwrap();
            // The token, the snapshot's copies, and B's: N - 1 values and the resource.
            assert_eq!(
                Arc::strong_count(&token),
                1 + 2 * N as usize,
                "round {round}"
            );
            assert_eq!(b.get::<Name>(ids[2]).unwrap().0, "2");
            assert!(!b.contains(ids[1]));
            assert_eq!(*b.resource::<Shared>().unwrap().0, 7);
            b.despawn(ids[0]).unwrap();
            b.spawn((Shared(token.clone()), Name("new".into())));
        }
        drop(b);
        assert_eq!(Arc::strong_count(&token), 1 + N as usize, "B's all dropped");
    }
    drop(snapshot);
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "every copy dropped exactly once"
    );
}

#[test]
fn one_snapshot_refilled_by_registries_of_other_shapes_holds_each_exactly() {
    let token = Arc::new(0u64);
    // A: resources registered Shared then Score; B: Score then Shared, and other components.
    let mut a = Registry::with_workers(2);
    a.register_snapshot_clone::<Shared>();
    a.register_snapshot_clone::<Name>();
    a.register_snapshot_resource::<Shared>();
    a.register_snapshot_resource::<Score>();
    a.insert_resource(Shared(token.clone()));
    a.insert_resource(Score(vec![1]));
    a.spawn_batch((0..N).map(|i| (Shared(token.clone()), Name(i.to_string()))));
    let mut b = Registry::with_workers(3);
    b.register_snapshot_resource::<Score>();
    b.register_snapshot_resource::<Shared>();
    b.register_snapshot_copy::<Pos>();
    b.register_snapshot_clone::<Shared>();
    b.insert_resource(Score(vec![2, 2]));
    b.spawn_batch((0..2 * N).map(|i| (Pos(i),)));
    b.spawn((Shared(token.clone()), Pos(0)));
    let base = Arc::strong_count(&token); // the token, A's values and resource, B's one value
    let mut snapshot = Snapshot::new();
    for round in 0..4 {
        let (from_a, from) = if round % 2 == 0 {
            (true, &mut a)
        } else {
            (false, &mut b)
        };
        from.snapshot_into(&mut snapshot).unwrap();
        let held = if from_a { N as usize + 1 } else { 1 };
        assert_eq!(Arc::strong_count(&token), base + held, "round {round}");
        let mut c = Registry::with_workers(1);
        c.register_snapshot_copy::<Pos>();
        c.register_snapshot_clone::<Shared>();
        c.register_snapshot_clone::<Name>();
        c.register_snapshot_resource::<Score>();
        c.register_snapshot_resource::<Shared>();
        c.restore(&snapshot).unwrap();
        assert_eq!(c.len(), from.len());
        assert_eq!(c.resource::<Score>(), from.resource::<Score>());
        assert_eq!(c.resource::<Shared>().is_some(), from_a);
        assert_eq!(
            c.query::<&Shared>().count(),
            from.query::<&Shared>().count()
        );
        assert_eq!(hash(&c), hash(from));
        drop(c);
        assert_eq!(Arc::strong_count(&token), base + held, "round {round}");
    }
    drop(snapshot);
    assert_eq!(Arc::strong_count(&token), base);
}

#[test]
fn a_resource_the_target_excludes_keeps_its_value_when_another_registrys_snapshot_is_restored() {
    let mut a = Registry::with_workers(1);
    a.register_snapshot_resource::<Score>();
    a.register_snapshot_resource::<Shared>();
    a.insert_resource(Score(vec![1]));
    a.insert_resource(Shared(Arc::new(1)));
    let snapshot = a.snapshot().unwrap();

    let mut b = Registry::with_workers(1);
    b.register_snapshot_resource::<Score>();
    b.exclude_resource_from_snapshot::<Shared>();
    let kept = Arc::new(2);
    b.insert_resource(Shared(kept.clone()));
    b.restore(&snapshot).unwrap();
    assert_eq!(b.resource::<Score>(), Some(&Score(vec![1])));
    assert!(
        Arc::ptr_eq(&b.resource::<Shared>().unwrap().0, &kept),
        "an excluded resource is left as it is"
    );
    // Excluded and absent: still absent.
    b.remove_resource::<Shared>();
    b.restore(&snapshot).unwrap();
    assert!(b.resource::<Shared>().is_none());
    assert!(b.snapshot().is_ok());
}

#[test]
fn every_worker_count_restores_the_same_world_and_goes_on_alike() {
    let counts: &[usize] = if cfg!(miri) {
        &[1, 3]
    } else {
        &[1, 2, 3, 8, 16]
    };
    let mut straight = source(1);
    for _ in 0..2 {
        straight.update(0.1);
    }
    let snapshot = straight.snapshot().unwrap();
    let mut expected = vec![hash(&straight)];
    for _ in 0..3 {
        straight.update(0.1);
        expected.push(hash(&straight));
    }
    for &workers in counts {
        let mut r = source(workers);
        r.restore(&snapshot).unwrap();
        let mut seen = vec![hash(&r)];
        for _ in 0..3 {
            r.update(0.1);
            seen.push(hash(&r));
        }
        assert_eq!(seen, expected, "{workers} workers");
        // Its own snapshot, taken at this worker count, restores into a one-worker registry.
        let own = r.snapshot().unwrap();
        let mut one = source(1);
        one.restore(&own).unwrap();
        assert_eq!((hash(&one), layout(&one)), (hash(&r), layout(&r)));
    }
}

/// A registry whose every tick adds 1 to `Pos` and records the tick in `Score`.
fn counting(workers: usize) -> (Registry, Entity) {
    let mut r = Registry::with_workers(workers);
    r.register_snapshot_copy::<Pos>();
    r.register_snapshot_resource::<Score>();
    r.insert_resource(Score(Vec::new()));
    let e = r.spawn((Pos(0),));
    r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        r.get_mut::<Pos>(e).unwrap().0 += 1;
        let tick = r.tick();
        r.resource_mut::<Score>().unwrap().0.push(tick);
    });
    (r, e)
}

#[test]
fn a_ring_of_one_slot_holds_the_last_tick_only() {
    let (mut r, e) = counting(2);
    let mut ring = SnapshotRing::new(1);
    assert_eq!(ring.capacity(), 1);
    assert!(ring.ticks().is_empty());
    assert_eq!(
        ring.restore(&mut r, 0),
        Err(SnapshotError::TickNotInRing { tick: 0 })
    );
    for t in 0..5u64 {
        assert_eq!(ring.push(&r).unwrap(), t);
        assert_eq!(ring.ticks(), [t]);
        r.update(0.1);
    }
    assert!(ring.get(3).is_none() && ring.get(4).is_some());
    assert_eq!(
        ring.restore(&mut r, 3),
        Err(SnapshotError::TickNotInRing { tick: 3 })
    );
    assert_eq!(r.tick(), 5, "a refused restore changed nothing");
    ring.restore(&mut r, 4).unwrap();
    assert_eq!((r.tick(), r.get::<Pos>(e).unwrap().0), (4, 4));
    ring.restore(&mut r, 4).unwrap(); // the same slot restores twice
    assert_eq!(r.resource::<Score>().unwrap().0, [0, 1, 2, 3]);
    assert_eq!(ring.ticks(), [4]);
    let Err(zero) = catch_unwind(|| SnapshotRing::new(0)) else {
        panic!("a ring of no slot")
    };
    let message = zero.downcast_ref::<&str>().copied().unwrap_or_default();
    assert!(message.contains("at least one slot"), "{message}");
}

#[test]
fn pushing_the_same_tick_twice_keeps_the_later_state() {
    let (mut r, e) = counting(1);
    let mut ring = SnapshotRing::new(4);
    ring.push(&r).unwrap();
    r.update(0.1);
    ring.push(&r).unwrap();
    r.get_mut::<Pos>(e).unwrap().0 = 100; // between ticks: the same tick, another state
    assert_eq!(ring.push(&r).unwrap(), 1);
    assert_eq!(ring.ticks(), [0, 1], "one slot per tick");
    r.update(0.1);
    r.update(0.1);
    ring.restore(&mut r, 1).unwrap();
    assert_eq!(r.get::<Pos>(e).unwrap().0, 100);
    ring.restore(&mut r, 0).unwrap();
    assert_eq!((r.tick(), r.get::<Pos>(e).unwrap().0), (0, 0));
    assert_eq!(
        ring.ticks(),
        [0],
        "the later tick is of the replaced timeline"
    );
}

#[test]
fn a_refused_push_keeps_what_the_slot_held() {
    let (mut r, e) = counting(2);
    let mut ring = SnapshotRing::new(1);
    ring.push(&r).unwrap();
    r.update(0.1);
    // Not quiet: a launch in flight.
    r.query::<&mut Pos>().each_async(|_, p| p.0 += 10);
    assert!(matches!(
        ring.push(&r),
        Err(SnapshotError::NotQuiet {
            launches_in_flight: 1,
            ..
        })
    ));
    r.execute_tasks();
    // Not accounted for: an unregistered resource.
    r.insert_resource(Socket(1));
    assert!(matches!(
        ring.push(&r),
        Err(SnapshotError::MissingTypes { .. })
    ));
    assert_eq!(ring.ticks(), [0], "the slot of tick 1 still holds tick 0");
    // Inside an update: the same, from a system that owns the ring.
    r.remove_resource::<Socket>();
    r.exclude_resource_from_snapshot::<SnapshotRing>();
    r.exclude_resource_from_snapshot::<Vec<SnapshotError>>();
    r.insert_resource(ring);
    r.insert_resource(Vec::<SnapshotError>::new());
    r.add_system(Phase::PostUpdate, |r: &mut Registry, _: f32| {
        let mut ring = r.remove_resource::<SnapshotRing>().unwrap();
        let refused = ring.push(r).unwrap_err();
        let restore = ring.restore(r, 0).unwrap_err();
        r.resource_mut::<Vec<SnapshotError>>()
            .unwrap()
            .extend([refused, restore]);
        r.insert_resource(ring);
    });
    r.update(0.1);
    let errors = r.remove_resource::<Vec<SnapshotError>>().unwrap();
    assert_eq!(
        errors,
        [SnapshotError::InsideUpdate, SnapshotError::InsideUpdate]
    );
    let mut ring = r.remove_resource::<SnapshotRing>().unwrap();
    assert_eq!(ring.ticks(), [0]);
    assert_eq!(r.tick(), 2, "the refused restore changed nothing");
    ring.restore(&mut r, 0).unwrap();
    assert_eq!((r.tick(), r.get::<Pos>(e).unwrap().0), (0, 0));
}

#[test]
fn every_tick_in_and_out_of_the_ring_restores_or_is_refused() {
    const CAPACITY: usize = 5;
    const TICKS: u64 = if cfg!(miri) { 9 } else { 40 };
    let (mut r, e) = counting(3);
    let mut ring = SnapshotRing::new(CAPACITY);
    for _ in 0..TICKS {
        ring.push(&r).unwrap();
        r.update(0.1);
        let ticks = ring.ticks();
        assert!(ticks.len() <= CAPACITY);
        let first = r.tick().saturating_sub(CAPACITY as u64);
        assert_eq!(ticks, (first..r.tick()).collect::<Vec<_>>());
    }
    // From the newest to the oldest: each one held restores, and forgets those after it.
    for t in (0..TICKS + 3).rev() {
        let held = ring.ticks().contains(&t);
        match ring.restore(&mut r, t) {
            Ok(()) => {
                assert!(held, "restored {t}, which the ring does not list");
                assert_eq!((r.tick(), r.get::<Pos>(e).unwrap().0), (t, t));
                assert_eq!(r.resource::<Score>().unwrap().0, (0..t).collect::<Vec<_>>());
                assert_eq!(ring.ticks().last(), Some(&t));
            }
            Err(err) => {
                assert!(!held, "refused {t}, which the ring lists: {err}");
                assert_eq!(err, SnapshotError::TickNotInRing { tick: t });
            }
        }
    }
    assert_eq!(ring.ticks(), [TICKS - CAPACITY as u64]);
    // Forward again from there: the ring fills as before.
    for _ in 0..CAPACITY as u64 + 2 {
        ring.push(&r).unwrap();
        r.update(0.1);
    }
    let t = r.tick();
    assert_eq!(ring.ticks(), (t - CAPACITY as u64..t).collect::<Vec<_>>());
    assert_eq!(r.get::<Pos>(e).unwrap().0, t);
}

#[test]
fn a_ring_holds_each_slots_values_once_however_long_it_runs() {
    let token = Arc::new(0u64);
    let mut r = Registry::with_workers(2);
    r.register_snapshot_clone::<Shared>();
    r.register_snapshot_resource::<Shared>();
    r.insert_resource(Shared(token.clone()));
    let ids = r.spawn_batch((0..10).map(|_| (Shared(token.clone()),)));
    let live = 1 + 11; // the token, the world's values and the resource
    let mut ring = SnapshotRing::new(3);
    let rounds = if cfg!(miri) { 8 } else { 200 };
    // A slot keeps its copies until a push refills it (one the restore forgot too): so every
    // slot filled once holds 11, never more, whatever the pushes and restores.
    for i in 0..rounds {
        ring.push(&r).unwrap();
        let filled = (i + 1).min(3);
        assert_eq!(Arc::strong_count(&token), live + 11 * filled, "push {i}");
        r.update(0.1);
        if i % 7 == 6 {
            let back = ring.ticks()[0];
            ring.restore(&mut r, back).unwrap();
            assert_eq!(ring.ticks(), [back]);
            assert_eq!(Arc::strong_count(&token), live + 11 * filled, "restore {i}");
        }
    }
    r.despawn(ids[0]).unwrap();
    drop(ring);
    assert_eq!(Arc::strong_count(&token), live - 1);
    drop(r);
    assert_eq!(Arc::strong_count(&token), 1);
}

#[test]
fn a_snapshot_whose_taking_panicked_is_refused_by_another_registry_which_is_unchanged() {
    #[derive(Debug)]
    struct Fragile(u32);
    impl Clone for Fragile {
        fn clone(&self) -> Self {
            assert!(self.0 != 13, "Fragile(13) does not clone");
            Fragile(self.0)
        }
    }
    let mut a = Registry::with_workers(2);
    a.register_snapshot_clone::<Fragile>();
    a.spawn_batch((0..N as u32).map(|i| (Fragile(i + 100),)));
    let good = a.snapshot().unwrap();
    a.spawn((Fragile(13),));
    // Taking it clones values that the world holds: Fragile(13) panics there already.
    let taken = catch_unwind(AssertUnwindSafe(|| a.snapshot()));
    assert!(taken.is_err());
    let (mut b, mut held) = target(1);
    let before = (hash(&b), layout(&b), b.tick());
    let mut incomplete = Snapshot::new();
    let filled = catch_unwind(AssertUnwindSafe(|| a.snapshot_into(&mut incomplete)));
    assert!(filled.is_err());
    assert_eq!(b.restore(&incomplete), Err(SnapshotError::Incomplete));
    assert_eq!((hash(&b), layout(&b), b.tick()), before);
    held.update(b.world());
    assert_eq!(held.matched_archetypes().count(), 1);
    b.register_snapshot_clone::<Fragile>();
    b.restore(&good).unwrap();
    assert_eq!(b.query::<&Fragile>().count(), N as usize);
    held.update(b.world());
    assert_eq!(held.matched_archetypes().count(), 0, "no Pos in A's world");
}

#[test]
fn an_event_store_restored_from_another_registry_is_snapshot_as_if_made_there() {
    #[derive(Clone, Debug, PartialEq)]
    struct Goal(u32);
    let mut a = Registry::with_workers(1);
    a.send_event(Goal(1));
    a.update(0.1); // the store is made, and registered, at the sync point
    let snapshot = a.snapshot().unwrap();
    let mut b = Registry::with_workers(2);
    b.restore(&snapshot).unwrap();
    let mut cursor = freyr::EventCursor::default();
    let read: Vec<Goal> = b.read_events::<Goal>(&mut cursor).cloned().collect();
    assert_eq!(read, [Goal(1)]);
    // B stores its own: its store came from the restore, not from a first use here.
    b.send_event(Goal(2));
    b.update(0.1);
    let own = b.snapshot().expect("the restored store is copied like A's");
    b.update(0.1);
    b.update(0.1);
    assert_eq!(b.read_events::<Goal>(&mut cursor).count(), 0, "gone");
    b.restore(&own).unwrap();
    let mut again = freyr::EventCursor::default();
    let kept: Vec<Goal> = b.read_events::<Goal>(&mut again).cloned().collect();
    assert_eq!(kept, [Goal(2)], "kept at the tick stored and the next only");
}
