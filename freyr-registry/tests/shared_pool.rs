//! Registries on one shared pool (`Registry::with_pool`): several ticking at once from different
//! threads give the world hash a registry with a pool of its own gives, for 1, 2, 3 and 8-worker
//! pools; a panicking callback in one changes nothing in the others; the golden rule 3 guard
//! still tells registries apart; each registry's drop waits for its own work only.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use freyr_registry::{Entity, Phase, Registry, StableHash, StableHasher};
use freyr_sched::ThreadPool;

#[derive(Clone, Copy)]
struct Val(u64);
#[derive(Clone, Copy)]
struct Born(u64);

impl StableHash for Val {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}
impl StableHash for Born {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}

fn mix(e: Entity, tick: u64, salt: u64) -> u64 {
    let mut z = e.to_bits() ^ (tick << 40) ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A match: `salt` makes each one different; spawns and despawns come from `each_async`
/// callbacks, so the order commands apply in is part of the hash.
fn new_match(mut registry: Registry, salt: u64) -> Registry {
    registry.spawn_batch((0..3000u64).map(|i| (Val(i ^ salt),)));
    registry.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        let tick = r.tick();
        r.query::<&mut Val>()
            .with_label("Step")
            .each_async_with(move |e, v, ctx| {
                let roll = mix(e, tick, salt);
                v.0 = v.0.wrapping_mul(31).wrapping_add(roll >> 7);
                let cmds = ctx.commands();
                if roll.is_multiple_of(97) {
                    cmds.despawn(e);
                } else if roll.is_multiple_of(89) {
                    cmds.spawn((Val(roll), Born(tick)));
                }
            });
    });
    registry
}

fn hash(registry: &Registry) -> (u64, usize) {
    (registry.world_hash::<(Val, Born)>(), registry.len())
}

fn own_pool(workers: usize, salt: u64, ticks: u32) -> (u64, usize) {
    let mut registry = new_match(Registry::with_workers(workers), salt);
    for _ in 0..ticks {
        registry.update(0.1);
    }
    hash(&registry)
}

#[test]
fn matches_ticking_at_once_on_one_pool_hash_like_matches_with_their_own_pools() {
    const SALTS: [u64; 4] = [1, 2, 3, 4];
    let reference: Vec<(u64, usize)> = SALTS.iter().map(|&s| own_pool(1, s, 12)).collect();
    for workers in [1, 2, 3, 8] {
        let pool = Arc::new(ThreadPool::new(workers));
        let mut matches: Vec<Registry> = SALTS
            .iter()
            .map(|&s| new_match(Registry::with_pool(Arc::clone(&pool)), s))
            .collect();
        std::thread::scope(|scope| {
            for registry in &mut matches {
                scope.spawn(move || {
                    for _ in 0..12 {
                        registry.update(0.1);
                    }
                });
            }
        });
        let hashes: Vec<(u64, usize)> = matches.iter().map(hash).collect();
        assert_eq!(hashes, reference, "{workers}-worker shared pool");
        assert!(matches.iter().all(|r| r.workers() == workers));
        assert!(matches.iter().all(|r| Arc::ptr_eq(r.shared_pool(), &pool)));
        // Every registry's own launches are its own: 12 ticks, one labelled launch each.
        for registry in &matches {
            let profile = registry.profile();
            assert_eq!(profile.label("Step").unwrap().calls, 12);
        }
        drop(matches);
        // The pool outlives its registries and stays usable.
        let hits = AtomicUsize::new(0);
        pool.parallel_for(100, 7, |_| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(hits.into_inner(), 100);
    }
}

#[test]
fn a_panicking_callback_in_one_match_does_not_touch_the_others() {
    let calm_reference = own_pool(1, 7, 10);
    let pool = Arc::new(ThreadPool::new(3));
    let mut calm = new_match(Registry::with_pool(Arc::clone(&pool)), 7);
    let mut stormy = new_match(Registry::with_pool(Arc::clone(&pool)), 8);
    // The stormy match's callback panics for a few entities on tick 4.
    stormy.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        let tick = r.tick();
        r.query::<&Val>().each_async(move |e, _| {
            if tick == 4 && e.index().is_multiple_of(500) {
                panic!("storm at {e}");
            }
        });
    });
    let stormy_panics = std::thread::scope(|scope| {
        let storm = scope.spawn(|| {
            let mut panics = 0;
            for _ in 0..10 {
                if catch_unwind(AssertUnwindSafe(|| stormy.update(0.1))).is_err() {
                    panics += 1;
                }
            }
            panics
        });
        for _ in 0..10 {
            calm.update(0.1);
        }
        storm.join().unwrap()
    });
    assert_eq!(stormy_panics, 1, "only tick 4 panicked, once");
    assert_eq!(hash(&calm), calm_reference);
    // The stormy match itself stays usable and keeps its tick count.
    assert_eq!(stormy.tick(), 10);
    stormy.update(0.1);
    // Its panicking tick lost only the panicking tasks' commands: the same as a private pool.
    let mut alone = new_match(Registry::with_workers(1), 8);
    alone.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        let tick = r.tick();
        r.query::<&Val>().each_async(move |e, _| {
            if tick == 4 && e.index().is_multiple_of(500) {
                panic!("storm at {e}");
            }
        });
    });
    for _ in 0..11 {
        let _ = catch_unwind(AssertUnwindSafe(|| alone.update(0.1)));
    }
    assert_eq!(hash(&stormy), hash(&alone));
}

#[test]
fn a_callback_may_drive_another_registry_on_the_same_pool_but_never_its_own() {
    let pool = Arc::new(ThreadPool::new(4));
    let mut outer = Registry::with_pool(Arc::clone(&pool));
    outer.spawn_batch((0..4u64).map(|i| (Val(i),)));
    // Inside a callback of `outer`, a second registry on the same pool runs parallel work and
    // its sync point: the guard tells the two apart, and the nested wait helps the pool.
    let inner_pool = Arc::clone(&pool);
    let mut sums = Vec::new();
    outer.query::<&Val>().each(|_, v| {
        let mut inner = Registry::with_pool(Arc::clone(&inner_pool));
        inner.spawn_batch((0..2000u64).map(|i| (Val(i + v.0),)));
        inner.query::<&mut Val>().each_async(|_, x| x.0 *= 2);
        inner.execute_tasks();
        let mut sum = 0;
        inner.query::<&Val>().each(|_, x| sum += x.0);
        sums.push(sum);
    });
    let expect = |k: u64| 2 * ((0..2000u64).sum::<u64>() + 2000 * k);
    assert_eq!(sums, (0..4).map(expect).collect::<Vec<_>>());
    // Golden rule 3 still stops a registry driven from its own callback, on a shared pool.
    let shared = Arc::new(Mutex::new(Registry::with_pool(Arc::clone(&pool))));
    shared.lock().unwrap().spawn((Val(0),));
    let inner = Arc::clone(&shared);
    let tried = Arc::new(AtomicBool::new(false));
    let t = Arc::clone(&tried);
    shared
        .lock()
        .unwrap()
        .query::<&Val>()
        .each_async(move |_, _| {
            let start = Instant::now();
            loop {
                if let Ok(mut r) = inner.try_lock() {
                    t.store(true, Ordering::SeqCst);
                    r.execute_tasks(); // golden rule 3
                    break;
                }
                assert!(start.elapsed() < Duration::from_secs(20));
                std::thread::yield_now();
            }
        });
    while !tried.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let mut guard = shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let payload = catch_unwind(AssertUnwindSafe(|| guard.execute_tasks())).unwrap_err();
    let msg = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(msg.contains("golden rule 3"), "{msg}");
    guard.update(1.0);
}
