//! A hostile pass over component hooks (`on_add`, `on_insert`, `on_remove`), part one: the
//! documented order of every operation, sync points for 1/2/8/16 workers, `spawn_batch` rounds,
//! chains cut off at `MAX_HOOK_ROUNDS`, hooks that despawn or re-add what triggered them,
//! panicking hooks. Part two is `hooks_attack_more.rs`.

mod hooks_attack_support;

use hooks_attack_support::*;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use freyr::hierarchy::HierarchyCommands;
use freyr::hooks::MAX_HOOK_ROUNDS;
use freyr::{Entity, EventCursor, Registry};

#[test]
fn spawn_and_insert_follow_bundle_order_whatever_the_component_ids() {
    let mut registry = Registry::with_workers(1);
    // Component ids: C first, then B, then A (the order the world first sees them).
    registry.spawn((C(0), B(0), A(0)));
    let log = Log::default();
    log_hooks::<A>(&mut registry, "A", &log);
    log_hooks::<B>(&mut registry, "B", &log);
    log_hooks::<C>(&mut registry, "C", &log);

    let e = registry.spawn((A(1), C(1), B(1)));
    let i = e.index();
    assert_eq!(
        take(&log),
        [
            format!("add A {i}"),
            format!("add C {i}"),
            format!("add B {i}"),
            format!("insert A {i}"),
            format!("insert C {i}"),
            format!("insert B {i}"),
        ]
    );
    // Insert: on_add for the new ones only, on_insert for all, both in bundle order.
    registry.remove::<(C,)>(e).unwrap();
    take(&log);
    registry.insert(e, (B(2), C(2), A(2))).unwrap();
    assert_eq!(
        take(&log),
        [
            format!("add C {i}"),
            format!("insert B {i}"),
            format!("insert C {i}"),
            format!("insert A {i}"),
        ]
    );
    // The same through commands at a sync point.
    registry.remove::<(C,)>(e).unwrap();
    take(&log);
    registry
        .query::<&A>()
        .each_with(|x, _, ctx| ctx.commands().insert(x, (B(3), C(3), A(3))));
    registry.execute_tasks();
    let got = take(&log);
    let mine: Vec<_> = got
        .iter()
        .filter(|s| s.ends_with(&format!(" {i}")))
        .cloned()
        .collect();
    assert_eq!(
        mine,
        [
            format!("add C {i}"),
            format!("insert B {i}"),
            format!("insert C {i}"),
            format!("insert A {i}"),
        ]
    );
}

#[test]
fn remove_and_despawn_follow_component_ids_whatever_the_bundle_order() {
    for deferred in [false, true] {
        let mut registry = Registry::with_workers(2);
        // Component ids: B, then C, then A.
        registry.spawn((B(0), C(0), A(0)));
        let log = Log::default();
        log_hooks::<A>(&mut registry, "A", &log);
        log_hooks::<B>(&mut registry, "B", &log);
        log_hooks::<C>(&mut registry, "C", &log);
        let e = registry.spawn((A(1), B(1), C(1)));
        let f = registry.spawn((C(2), A(2), B(2)));
        take(&log);
        if deferred {
            registry.query::<&A>().each_async_with(move |x, _, ctx| {
                if x == e {
                    ctx.commands().remove::<(A, C, B)>(x);
                }
                if x == f {
                    ctx.commands().despawn(x);
                }
            });
            registry.execute_tasks();
        } else {
            registry.remove::<(A, C, B)>(e).unwrap();
            registry.despawn(f).unwrap();
        }
        let (i, j) = (e.index(), f.index());
        assert_eq!(
            take(&log),
            [
                format!("remove B {i}"),
                format!("remove C {i}"),
                format!("remove A {i}"),
                format!("remove B {j}"),
                format!("remove C {j}"),
                format!("remove A {j}"),
            ],
            "deferred: {deferred}"
        );
    }
}

#[test]
fn several_hooks_of_one_kind_run_in_registration_order() {
    let mut registry = Registry::with_workers(1);
    let log = Log::default();
    for n in 0..5 {
        let l = log.clone();
        registry.on_insert::<A>(move |_, _| l.lock().unwrap().push(format!("insert {n}")));
        let l = log.clone();
        registry.on_add::<A>(move |_, _| l.lock().unwrap().push(format!("add {n}")));
    }
    registry.spawn((A(0),));
    let expected: Vec<String> = (0..5)
        .map(|n| format!("add {n}"))
        .chain((0..5).map(|n| format!("insert {n}")))
        .collect();
    assert_eq!(take(&log), expected);
}

/// Hooks that cascade: `on_add::<A>` inserts a `B` and spawns a child; `on_remove::<B>` spawns
/// a `C`; `on_insert::<C>` despawns the C entity when its value is odd (it cannot read it: it
/// goes by index); everything logged.
fn cascading(registry: &mut Registry) -> Log {
    let log = Log::default();
    log_hooks::<A>(registry, "A", &log);
    log_hooks::<B>(registry, "B", &log);
    log_hooks::<C>(registry, "C", &log);
    registry.on_add::<A>(|e, commands| {
        commands.insert(e, (B(e.index()),));
        if e.index() % 3 == 0 {
            commands.spawn_child(e, (C(e.index()),));
        }
    });
    registry.on_remove::<B>(|e, commands| {
        commands.spawn((C(e.index() + 1),));
    });
    registry.on_insert::<C>(|e, commands| {
        if e.index() % 2 == 1 {
            commands.despawn(e);
        }
    });
    log
}

#[test]
fn sync_point_hooks_are_identical_for_1_2_8_16_workers() {
    let run = |workers: usize| {
        let mut registry = Registry::with_workers(workers);
        let es = registry.spawn_batch((0..3000u32).map(|i| (C(i),)));
        let log = cascading(&mut registry);
        let mut logs = Vec::new();
        for tick in 0..3u32 {
            registry
                .query::<&C>()
                .each_async_with(move |e, c, ctx| match (c.0 + tick) % 97 {
                    0 => ctx.commands().insert(e, (A(c.0),)),
                    1 => ctx.commands().despawn(e),
                    2 => {
                        ctx.commands().spawn((A(c.0), C(c.0)));
                    }
                    3 => ctx.commands().remove::<(C,)>(e),
                    _ => {}
                });
            registry.query::<&B>().each_async_with(move |e, b, ctx| {
                if (b.0 + tick) % 5 == 0 {
                    ctx.commands().remove::<(B,)>(e);
                }
            });
            registry.destroy_entity(es[(tick as usize * 7 + 5) % es.len()]);
            registry.execute_tasks();
            logs.push(take(&log));
        }
        registry.check_hierarchy();
        (logs, hashes(&registry), registry.len())
    };
    let one = run(1);
    assert!(one.0.iter().all(|l| l.len() > 50), "hooks ran: {:?}", one.0);
    for workers in [2, 8, 16] {
        assert!(run(workers) == one, "{workers} workers differ from 1");
    }
}

#[test]
fn spawn_batch_hooks_run_in_one_round_in_batch_order() {
    let mut registry = Registry::with_workers(4);
    let log = Log::default();
    let l = log.clone();
    registry.on_add::<A>(move |e, commands| {
        l.lock().unwrap().push(format!("add A {}", e.index()));
        commands.insert(e, (B(0),));
    });
    let l = log.clone();
    registry.on_add::<B>(move |e, _| l.lock().unwrap().push(format!("add B {}", e.index())));
    let es = registry.spawn_batch((0..1500).map(|i| (A(i),)));
    let expected: Vec<String> = es
        .iter()
        .map(|e| format!("add A {}", e.index()))
        .chain(es.iter().map(|e| format!("add B {}", e.index())))
        .collect();
    assert_eq!(take(&log), expected);
    assert_eq!(registry.query::<&B>().count(), 1500);
}

#[test]
fn insert_remove_ping_pong_is_cut_off_after_max_rounds() {
    let mut registry = Registry::with_workers(1);
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    registry.on_add::<A>(move |e, commands| {
        c.fetch_add(1, Ordering::Relaxed);
        commands.remove::<(A,)>(e);
    });
    let c = calls.clone();
    registry.on_remove::<A>(move |e, commands| {
        c.fetch_add(1, Ordering::Relaxed);
        commands.insert(e, (A(1),));
    });
    let e = registry.spawn((B(0),));
    let result = panic::catch_unwind(AssertUnwindSafe(|| registry.insert(e, (A(0),))));
    let text = message(result.unwrap_err());
    assert!(text.contains("rounds"), "{text}");
    assert_eq!(calls.load(Ordering::Relaxed), MAX_HOOK_ROUNDS);
    // The commands of the last round that ran were applied; the hooks they triggered were not.
    // Round 64 ran an on_remove, which inserted A again.
    assert_eq!(registry.get::<A>(e), Ok(&A(1)));
    registry.world().check_invariants();
    // The limit is per call: the next operation gets its own rounds, and the registry works.
    calls.store(0, Ordering::Relaxed);
    let result = panic::catch_unwind(AssertUnwindSafe(|| registry.remove::<(A,)>(e)));
    assert!(message(result.unwrap_err()).contains("rounds"));
    assert_eq!(calls.load(Ordering::Relaxed), MAX_HOOK_ROUNDS);
    assert!(
        registry.get::<A>(e).is_err(),
        "round 64 was an on_add: it removed A"
    );
    let f = registry.spawn((B(1),));
    assert_eq!(registry.get::<B>(f), Ok(&B(1)));
}

#[derive(Clone, Debug, PartialEq)]
struct Ping(u32);

#[test]
fn a_chain_cut_off_at_a_sync_point_loses_nothing_else() {
    let mut registry = Registry::with_workers(4);
    registry.on_add::<A>(|_, commands| {
        commands.spawn((A(0),));
    });
    let es = registry.spawn_batch((0..2000u32).map(|i| (B(i),)));
    registry.query::<&B>().each_async_with(|e, b, ctx| {
        ctx.send(Ping(b.0));
        if b.0 == 1000 {
            ctx.commands().insert(e, (A(0),));
        } else {
            ctx.commands().insert(e, (C(b.0),));
        }
    });
    registry.destroy_entity(es[5]);
    let result = panic::catch_unwind(AssertUnwindSafe(|| registry.execute_tasks()));
    assert!(message(result.unwrap_err()).contains("rounds"));
    assert_eq!(registry.query::<&C>().count(), 1999 - 1);
    assert!(!registry.contains(es[5]));
    // One A from the command, one per round of the chain.
    assert_eq!(registry.query::<&A>().count(), 1 + MAX_HOOK_ROUNDS);
    let mut cursor = EventCursor::default();
    assert_eq!(registry.read_events::<Ping>(&mut cursor).count(), 2000);
    // The next sync point is clean.
    registry.spawn((C(0),));
    registry.execute_tasks();
}

#[test]
fn a_hook_that_despawns_its_own_entity() {
    for deferred in [false, true] {
        let mut registry = Registry::with_workers(2);
        let log = Log::default();
        log_hooks::<A>(&mut registry, "A", &log);
        log_hooks::<B>(&mut registry, "B", &log);
        registry.on_add::<A>(|e, commands| commands.despawn(e));
        // A despawn of what is already gone is a stale command: skipped, no panic.
        registry.on_remove::<A>(|e, commands| {
            commands.despawn(e);
            commands.insert(e, (C(0),));
        });
        let e = if deferred {
            registry.spawn((C(9),));
            registry.query::<&C>().each_with(|_, _, ctx| {
                ctx.commands().spawn((A(1), B(1)));
            });
            registry.execute_tasks();
            // The C entity is index 0; the spawned one index 1, generation 1.
            Entity::from_bits((1u64 << 32) | 1).unwrap()
        } else {
            registry.spawn((A(1), B(1)))
        };
        let i = e.index();
        assert!(!registry.contains(e));
        // Every hook of the spawn's round ran, though the first one's command despawns it.
        assert_eq!(
            take(&log),
            [
                format!("add A {i}"),
                format!("add B {i}"),
                format!("insert A {i}"),
                format!("insert B {i}"),
                format!("remove A {i}"),
                format!("remove B {i}"),
            ],
            "deferred: {deferred}"
        );
        assert_eq!(registry.query::<&C>().count(), usize::from(deferred));
    }
}

#[test]
fn two_panicking_hooks_first_is_reraised_and_every_other_hook_runs() {
    for deferred in [false, true] {
        let mut registry = Registry::with_workers(4);
        let ran = Log::default();
        let r = ran.clone();
        registry.on_add::<A>(move |e, commands| {
            r.lock().unwrap().push(format!("add A {}", e.index()));
            commands.insert(e, (C(1),));
            panic!("first");
        });
        let r = ran.clone();
        registry.on_add::<A>(move |e, commands| {
            r.lock().unwrap().push(format!("add A' {}", e.index()));
            commands.insert(e, (C(2),));
        });
        let r = ran.clone();
        registry.on_insert::<B>(move |e, commands| {
            r.lock().unwrap().push(format!("insert B {}", e.index()));
            commands.spawn((C(3),));
            panic!("second");
        });
        let result = if deferred {
            registry.spawn((0u8,));
            registry.query::<&u8>().each_async_with(|_, _, ctx| {
                ctx.commands().spawn((A(0), B(0)));
            });
            panic::catch_unwind(AssertUnwindSafe(|| registry.execute_tasks()))
        } else {
            panic::catch_unwind(AssertUnwindSafe(|| {
                registry.spawn((A(0), B(0)));
            }))
        };
        assert_eq!(
            message(result.unwrap_err()),
            "first",
            "deferred: {deferred}"
        );
        let e = with::<A>(&mut registry)[0];
        let i = e.index();
        assert_eq!(
            take(&ran),
            [
                format!("add A {i}"),
                format!("add A' {i}"),
                format!("insert B {i}")
            ]
        );
        // Only the second on_add's commands survived.
        assert_eq!(registry.get::<C>(e), Ok(&C(2)));
        assert_eq!(registry.query::<&C>().count(), 1);
        // The registry is usable and the next sync point is clean.
        registry.execute_tasks();
    }
}

#[test]
fn a_panicking_hook_in_a_batch_of_10_000_stops_none_of_it() {
    let mut registry = Registry::with_workers(8);
    let order = Arc::new(Mutex::new(Vec::with_capacity(10_000)));
    let o = order.clone();
    registry.on_add::<A>(move |e, commands| {
        o.lock().unwrap().push(e);
        commands.insert(e, (B(e.index()),));
        if e.index() % 1000 == 999 {
            panic!("hook {}", e.index());
        }
    });
    let next = registry.world().next_spawn_ids(10_000);
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        registry.spawn_batch((0..10_000).map(|i| (A(i),)));
    }));
    assert_eq!(message(result.unwrap_err()), "hook 999");
    let es = with::<A>(&mut registry);
    assert_eq!(es.len(), 10_000, "every entity stays spawned");
    assert!(
        *order.lock().unwrap() == next,
        "the hooks ran in batch order"
    );
    assert_eq!(registry.query::<&B>().count(), 10_000 - 10);
    for e in es {
        assert_eq!(registry.get::<B>(e).is_ok(), e.index() % 1000 != 999);
    }
}

#[test]
fn a_hook_registered_while_work_is_in_flight_sees_that_work_at_the_sync_point() {
    let mut registry = Registry::with_workers(4);
    registry.spawn_batch((0..2000).map(|i| (B(i),)));
    registry
        .query::<&B>()
        .each_async_with(|e, _, ctx| ctx.commands().insert(e, (A(0),)));
    let fired = Arc::new(AtomicUsize::new(0));
    let f = fired.clone();
    // Registered before the sync point that applies the commands: it runs for them.
    registry.on_add::<A>(move |_, _| {
        f.fetch_add(1, Ordering::Relaxed);
    });
    registry.execute_tasks();
    assert_eq!(fired.load(Ordering::Relaxed), 2000);
}
