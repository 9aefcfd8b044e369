//! Registry snapshots: restore puts back everything observable (world hash, archetypes in
//! order, row order, component ids, the allocator, the tick, registered resources), refuses
//! at a non-quiet point, and never rewinds counters that promise never to repeat. Small sizes
//! under Miri.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use freyr::query::QueryState;
use freyr::snapshot::{Snapshot, SnapshotError, SnapshotRing};
use freyr::storage::CHUNK_CAPACITY;
use freyr::time::pump::AsyncPump;
use freyr::{CommandBuffer, Entity, Phase, Registry, StableHash};

const N: u64 = if cfg!(miri) { 30 } else { 4000 };
const TICKS: u64 = if cfg!(miri) { 4 } else { 12 };
const S: u64 = TICKS / 2;
/// Worker counts. Under Miri one parallel pool: the inline (one-worker) paths are interpreted
/// by the other Miri tests, and each run here is tens of seconds.
const WORKERS: &[usize] = if cfg!(miri) { &[3] } else { &[1, 2, 3, 8] };

#[derive(Clone, Copy, StableHash)]
struct Pos(u64);
#[derive(Clone, Copy, StableHash)]
struct Vel(u64);
#[derive(Clone, StableHash)]
struct Name(String);
#[derive(Clone, Copy, StableHash)]
struct Marked;
/// First used after the snapshot tick.
#[derive(Clone, Copy, StableHash)]
struct Late(u64);
#[derive(Clone, Debug, PartialEq)]
struct Counter(Vec<u64>);
struct Telemetry(u64);

fn registry(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_snapshot_copy::<Pos>();
    r.register_snapshot_copy::<Vel>();
    r.register_snapshot_clone::<Name>();
    r.register_snapshot_copy::<Marked>();
    r.register_snapshot_copy::<Late>();
    r.register_snapshot_resource::<Counter>();
    r.exclude_resource_from_snapshot::<Telemetry>();
    r.insert_resource(Counter(Vec::new()));
    r.insert_resource(Telemetry(0));
    r.spawn_batch((0..N).map(|i| (Pos(i), Vel(i % 5), Name(format!("n{i}")))));
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        let tick = r.tick();
        r.query::<(&mut Pos, &Vel)>()
            .each_async_with(move |e, (p, v), ctx| {
                p.0 = p.0.wrapping_mul(31).wrapping_add(v.0 + tick);
                let key = u64::from(e.index()) + tick;
                if key.is_multiple_of(13) {
                    ctx.commands().despawn(e);
                } else if key.is_multiple_of(7) {
                    ctx.commands().insert(e, (Marked,));
                }
                if key.is_multiple_of(17) {
                    let spawned = ctx.commands().spawn((Pos(key), Vel(1)));
                    if tick > S {
                        ctx.commands().insert(spawned, (Late(tick),));
                    }
                }
            });
        r.resource_mut::<Counter>().unwrap().0.push(tick);
        r.resource_mut::<Telemetry>().unwrap().0 += 1;
    });
    r
}

fn hash(r: &Registry) -> u64 {
    r.world_hash::<(Pos, Vel, Name, Marked, Late)>()
}

/// The archetypes by component names, with their entities in row order.
fn layout(r: &Registry) -> Vec<(Vec<&'static str>, Vec<Entity>)> {
    let world = r.world();
    world
        .archetypes()
        .iter()
        .map(|a| {
            let names = a
                .components()
                .iter()
                .map(|&c| world.component_info(c).name());
            let rows = a.chunks().flat_map(|c| c.entities().to_vec());
            (names.collect(), rows.collect())
        })
        .collect()
}

fn each_order(r: &mut Registry) -> Vec<Entity> {
    let mut seen = Vec::new();
    r.query::<&Pos>().each(|e, _| seen.push(e));
    seen
}

#[test]
#[cfg_attr(
    miri,
    ignore = "what it adds is a logic property (the re-simulated run equals the uninterrupted \
              one), run natively at 1, 2, 3 and 8 workers; under Miri snapshots and restores are \
              checked by this file's ring, cache and panicking-clone tests"
)]
fn rolling_back_and_resimulating_gives_the_uninterrupted_run() {
    let mut hashes = Vec::new();
    for &workers in WORKERS {
        let mut straight = registry(workers);
        let mut rolled = registry(workers);
        for _ in 0..S {
            straight.update(0.1);
            rolled.update(0.1);
        }
        let snapshot = rolled.snapshot().unwrap();
        let at_s = (hash(&rolled), layout(&rolled));
        for _ in S..TICKS {
            rolled.update(0.1);
        }
        assert!(rolled.world().component_id::<Late>().is_some());
        rolled.restore(&snapshot).unwrap();
        assert_eq!(rolled.tick(), S);
        assert_eq!((hash(&rolled), layout(&rolled)), at_s, "{workers} workers");
        assert!(
            rolled.world().component_id::<Late>().is_none(),
            "a type of after S is gone"
        );
        assert_eq!(
            rolled.resource::<Counter>().unwrap().0,
            (0..S).collect::<Vec<_>>()
        );
        assert_eq!(
            rolled.resource::<Telemetry>().unwrap().0,
            TICKS,
            "excluded: kept"
        );
        for _ in S..TICKS {
            straight.update(0.1);
            rolled.update(0.1);
            assert_eq!(hash(&rolled), hash(&straight), "tick {}", rolled.tick());
            assert_eq!(each_order(&mut rolled), each_order(&mut straight));
        }
        assert_eq!(layout(&rolled), layout(&straight));
        let late = |r: &Registry| r.world().component_id::<Late>();
        assert_eq!(
            late(&rolled),
            late(&straight),
            "component ids are assigned alike"
        );
        assert_eq!(rolled.resource::<Counter>(), straight.resource::<Counter>());
        assert_eq!(
            rolled.spawn((Pos(0),)),
            straight.spawn((Pos(0),)),
            "next ids"
        );
        rolled.world().check_invariants();
        hashes.push(hash(&straight));
    }
    assert!(hashes.windows(2).all(|w| w[0] == w[1]), "{hashes:?}");
}

#[test]
fn caches_and_held_query_states_see_the_restored_world() {
    let mut r = registry(2);
    let snapshot = r.snapshot().unwrap();
    let mut held = QueryState::<&Pos>::new(r.world()).unwrap();
    // After the snapshot: new archetypes that the registry's cache and the held state match.
    let extra = r.spawn_batch((0..600u64).map(|i| (Pos(i), Late(i))));
    r.update(0.1);
    assert_eq!(r.query::<&Pos>().count(), r.len());
    held.update(r.world());
    let before = held.matched_archetypes().count();
    let first_id = r.world().id();

    r.restore(&snapshot).unwrap();
    assert_ne!(r.world().id(), first_id, "a fresh world identity");
    assert_eq!(
        r.query::<&Pos>().count(),
        N as usize,
        "the cached query rebuilt"
    );
    assert!(!r.contains(extra[0]));
    held.update(r.world());
    let fresh = QueryState::<&Pos>::new(r.world()).unwrap();
    assert!(held.matched_archetypes().eq(fresh.matched_archetypes()));
    assert!(held.matched_archetypes().count() < before);
    let again = r.world().id();
    r.restore(&snapshot).unwrap();
    assert_ne!(r.world().id(), again, "every restore is a new world");
}

#[test]
fn refused_at_a_point_that_is_not_quiet() {
    let mut r = registry(3);
    r.query::<&mut Pos>().each_async(|_, p| p.0 += 1);
    let err = r.snapshot().unwrap_err();
    assert_eq!(
        err,
        SnapshotError::NotQuiet {
            launches_in_flight: 1,
            pending_command_buffers: 0,
            queued_destructions: 0
        }
    );
    assert!(err.to_string().contains("execute_tasks()"), "{err}");
    r.execute_tasks();
    let snapshot = r.snapshot().unwrap();
    let e = r.spawn((Pos(1),));
    r.destroy_entity(e);
    let refused = r.restore(&snapshot).unwrap_err();
    assert!(matches!(
        refused,
        SnapshotError::NotQuiet {
            queued_destructions: 1,
            ..
        }
    ));
    assert!(matches!(r.snapshot(), Err(SnapshotError::NotQuiet { .. })));
    assert!(r.contains(e), "a refused restore changed nothing");
    r.execute_tasks();
    r.restore(&snapshot).unwrap();
    assert_eq!(r.restore(&Snapshot::new()), Err(SnapshotError::Incomplete));
}

#[test]
fn refused_inside_an_update() {
    let mut r = registry(1);
    let snapshot = r.snapshot().unwrap();
    r.insert_resource(Snapshot::new());
    r.exclude_resource_from_snapshot::<Snapshot>();
    r.insert_resource(Vec::<SnapshotError>::new());
    r.exclude_resource_from_snapshot::<Vec<SnapshotError>>();
    r.add_system(Phase::PostUpdate, move |r: &mut Registry, _: f32| {
        let taken = r.snapshot().unwrap_err();
        let restored = r.restore(&snapshot).unwrap_err();
        r.resource_mut::<Vec<SnapshotError>>()
            .unwrap()
            .extend([taken, restored]);
    });
    r.update(0.1);
    let errors = r.resource::<Vec<SnapshotError>>().unwrap();
    assert_eq!(
        errors,
        &[SnapshotError::InsideUpdate, SnapshotError::InsideUpdate]
    );
    assert!(errors[0].to_string().contains("between ticks"));
}

#[test]
fn unregistered_types_are_all_named() {
    struct Secret;
    struct Hidden(#[allow(dead_code)] u8);
    struct Config;
    struct Transient;
    let mut r = registry(1);
    r.spawn((Secret, Pos(0)));
    r.spawn((Hidden(1),));
    r.insert_resource(Config);
    r.exclude_from_snapshot::<Transient>();
    r.spawn((Transient,));
    let SnapshotError::MissingTypes {
        components,
        resources,
    } = r.snapshot().unwrap_err()
    else {
        panic!("expected MissingTypes");
    };
    let name = core::any::type_name::<Secret>;
    assert_eq!(
        components.unregistered,
        [name(), core::any::type_name::<Hidden>()]
    );
    assert_eq!(
        components.excluded_live,
        [core::any::type_name::<Transient>()]
    );
    assert_eq!(resources, [core::any::type_name::<Config>()]);
}

#[test]
#[should_panic(expected = "a type is either copied or excluded")]
fn a_resource_is_either_copied_or_excluded() {
    #[derive(Clone)]
    struct Telemetry2;
    let mut r = Registry::with_workers(1);
    r.exclude_resource_from_snapshot::<Telemetry2>();
    r.register_snapshot_resource::<Telemetry2>();
}

#[test]
fn resources_absent_at_the_snapshot_are_removed() {
    let mut r = Registry::with_workers(1);
    r.register_snapshot_resource::<u32>();
    let snapshot = r.snapshot().unwrap();
    r.insert_resource(5u32);
    r.restore(&snapshot).unwrap();
    assert_eq!(r.resource::<u32>(), None);
}

#[test]
fn counters_that_never_repeat_are_not_rewound() {
    let mut r = registry(2);
    let snapshot = r.snapshot().unwrap();
    // Pending-handle tags: process-wide, a restore does not hand one out again.
    let before = CommandBuffer::new().spawn((Pos(0),));
    r.restore(&snapshot).unwrap();
    let after = CommandBuffer::new().spawn((Pos(0),));
    assert_ne!(before, after);
    // Pump epochs live in the pump, which a restore never touches.
    let mut pump = AsyncPump::<u32, Entity>::new();
    pump.invalidate();
    let epoch = pump.epoch();
    r.restore(&snapshot).unwrap();
    pump.invalidate();
    assert_eq!(pump.epoch(), epoch + 1);
    // Launch numbers keep counting: commands of a launch after a restore still apply in order.
    r.query::<&Pos>().each_async_with(|e, _, ctx| {
        if e.index() == 0 {
            ctx.commands().insert(e, (Late(1),));
        }
    });
    r.execute_tasks();
    assert_eq!(r.query::<&Late>().count(), 1);
}

static CLONES: AtomicUsize = AtomicUsize::new(0);
static DROPS: AtomicUsize = AtomicUsize::new(0);
static FAIL_AT: AtomicUsize = AtomicUsize::new(usize::MAX);

struct Tally(u64);
impl Clone for Tally {
    fn clone(&self) -> Self {
        if CLONES.fetch_add(1, Ordering::SeqCst) == FAIL_AT.load(Ordering::SeqCst) {
            panic!("this clone fails");
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
fn a_clone_panicking_mid_snapshot_loses_nothing() {
    // Two chunks and more under Miri, mid-snapshot panics in the second.
    let rows = if cfg!(miri) {
        CHUNK_CAPACITY as u64 + 88
    } else {
        5000
    };
    let mut r = Registry::with_workers(3);
    r.register_snapshot_clone::<Tally>();
    let ids = r.spawn_batch((0..rows).map(|i| (Tally(i),)));
    let mut snapshot = Snapshot::new();
    FAIL_AT.store(rows as usize / 2, Ordering::SeqCst);
    let taken = catch_unwind(AssertUnwindSafe(|| r.snapshot_into(&mut snapshot)));
    assert!(taken.is_err(), "the panic is re-raised");
    FAIL_AT.store(usize::MAX, Ordering::SeqCst);
    assert!(!snapshot.is_complete());
    assert_eq!(r.restore(&snapshot), Err(SnapshotError::Incomplete));
    drop(snapshot);
    // Every clone made before the panic is dropped, exactly once.
    let (clones, drops) = (CLONES.load(Ordering::SeqCst), DROPS.load(Ordering::SeqCst));
    assert_eq!(drops, clones - 1, "all but the clone that panicked");
    for (i, &e) in ids.iter().enumerate() {
        assert_eq!(
            r.get::<Tally>(e).unwrap().0,
            i as u64,
            "the world is untouched"
        );
    }
    let snapshot = r.snapshot().unwrap();
    r.restore(&snapshot).unwrap();
    drop(snapshot);
    drop(r);
    // Each value made is dropped once: the clones that succeeded and the originals.
    let made = CLONES.load(Ordering::SeqCst) - 1 + rows as usize;
    assert_eq!(DROPS.load(Ordering::SeqCst), made);
}

#[test]
fn a_ring_rolls_back_to_any_tick_it_holds() {
    let mut ring = SnapshotRing::new(3);
    let mut straight = registry(2);
    let mut rolled = registry(2);
    let mut hashes = Vec::new();
    for _ in 0..TICKS {
        hashes.push(hash(&straight));
        ring.push(&rolled).unwrap();
        straight.update(0.1);
        rolled.update(0.1);
    }
    assert_eq!(ring.ticks(), (TICKS - 3..TICKS).collect::<Vec<_>>());
    let back = TICKS - 2;
    ring.restore(&mut rolled, back).unwrap();
    assert_eq!(hash(&rolled), hashes[back as usize]);
    assert_eq!(
        ring.ticks(),
        (TICKS - 3..=back).collect::<Vec<_>>(),
        "later ticks forgotten"
    );
    assert_eq!(
        ring.restore(&mut rolled, 0),
        Err(SnapshotError::TickNotInRing { tick: 0 })
    );
    for _ in back..TICKS {
        ring.push(&rolled).unwrap();
        rolled.update(0.1);
    }
    assert_eq!(hash(&rolled), hash(&straight));
}

static RING_CLONES: AtomicUsize = AtomicUsize::new(0);
static RING_DROPS: AtomicUsize = AtomicUsize::new(0);
/// While set, cloning the value numbered `RING_FAIL_ON` panics.
static RING_FAILING: AtomicBool = AtomicBool::new(false);
const RING_FAIL_ON: u64 = 7;

/// A tallied value of its own (the test above counts `Tally` process-wide).
struct RingTally(u64);
impl Clone for RingTally {
    fn clone(&self) -> Self {
        RING_CLONES.fetch_add(1, Ordering::SeqCst);
        if self.0 == RING_FAIL_ON && RING_FAILING.load(Ordering::SeqCst) {
            panic!("this clone fails");
        }
        RingTally(self.0)
    }
}
impl Drop for RingTally {
    fn drop(&mut self) {
        RING_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

/// Pushes with `Clone` failing; returns whether the push panicked.
fn push_failing(ring: &mut SnapshotRing, registry: &Registry) -> bool {
    RING_FAILING.store(true, Ordering::SeqCst);
    let pushed = catch_unwind(AssertUnwindSafe(|| ring.push(registry)));
    RING_FAILING.store(false, Ordering::SeqCst);
    pushed.is_err()
}

#[test]
fn a_ring_push_whose_clone_panics_is_refused_as_incomplete() {
    let rows = if cfg!(miri) { 40 } else { 3000 };
    let mut r = Registry::with_workers(3);
    r.register_snapshot_clone::<RingTally>();
    r.spawn_batch((0..rows).map(|i| (RingTally(i),)));
    let mut ring = SnapshotRing::new(3);
    for _ in 0..2 {
        ring.push(&r).unwrap();
        r.update(0.1);
    }
    // Tick 2 goes to a slot that never held a tick.
    assert!(push_failing(&mut ring, &r), "the panic is re-raised");
    assert_eq!(ring.ticks(), [0, 1], "tick 2 cannot be restored");
    assert_eq!(ring.restore(&mut r, 2), Err(SnapshotError::Incomplete));
    r.update(0.1);
    // Tick 3 goes to the slot of tick 0, which the panic overwrote half-way.
    assert!(push_failing(&mut ring, &r));
    assert_eq!(ring.ticks(), [1], "tick 0 is gone, tick 3 incomplete");
    assert_eq!(ring.restore(&mut r, 3), Err(SnapshotError::Incomplete));
    assert_eq!(
        ring.restore(&mut r, 0),
        Err(SnapshotError::TickNotInRing { tick: 0 })
    );
    assert_eq!(r.tick(), 3, "nothing was restored");
    // A push that succeeds fills the slot again.
    ring.push(&r).unwrap();
    assert_eq!(ring.ticks(), [1, 3]);
    ring.restore(&mut r, 1).unwrap();
    assert_eq!(
        (r.tick(), r.query::<&RingTally>().count()),
        (1, rows as usize)
    );
    drop(ring);
    drop(r);
    // Every value made is dropped once: each clone that returned (not the two that panicked)
    // and the originals.
    let made = RING_CLONES.load(Ordering::SeqCst) - 2 + rows as usize;
    assert_eq!(RING_DROPS.load(Ordering::SeqCst), made);
}
