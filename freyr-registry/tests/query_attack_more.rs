//! More of the hostile user (see `query_attack.rs`): hooks that panic while other hooks'
//! commands and the tasks' events are pending, at a sync point and on direct calls; the hooks of
//! a `spawn_batch` in operation order; panics in calling-thread runs and reductions; cached runs
//! across world swaps.

mod query_support;

use query_support::*;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use freyr::{Entity, EventCursor, Registry};

/// A hook panics at a sync point while the commands of the hooks before it and the events of the
/// tasks are pending: both survive, the panicking hook's own commands do not, and the registry
/// goes on.
#[test]
fn a_panicking_hook_keeps_the_other_hooks_commands_and_the_events() {
    for &workers in WORKERS {
        let mut r = Registry::with_workers(workers);
        r.on_remove::<Hp>(|e, commands| {
            commands.spawn((Id(1000 + e.index()),));
        });
        r.on_remove::<Hp>(|e, commands| {
            commands.spawn((Marked,));
            if e.index() % 3 == 0 {
                panic!("hook of {}", e.index());
            }
        });
        let ids = r.spawn_batch((0..2 * C as u32).map(|i| (Hp(i),)));
        r.query::<(Entity, &Hp)>()
            .each_async_with(|_, (e, hp), ctx| {
                if hp.0 % 2 == 0 {
                    ctx.commands().despawn(e);
                    ctx.send(Ev(hp.0));
                }
            });
        let payload = panic::catch_unwind(AssertUnwindSafe(|| r.execute_tasks())).unwrap_err();
        assert_eq!(message(payload), "hook of 0", "{workers}");
        let despawned: Vec<Entity> = ids.iter().copied().step_by(2).collect();
        assert!(despawned.iter().all(|&e| !r.contains(e)));
        let mut first = Vec::new();
        r.query::<&Id>().each(|_, id| first.push(id.0));
        let expected: Vec<u32> = despawned.iter().map(|e| 1000 + e.index()).collect();
        assert_eq!(first, expected, "{workers}: the first hook's commands");
        let marked = despawned.iter().filter(|e| e.index() % 3 != 0).count();
        assert_eq!(r.query::<&Marked>().count(), marked, "{workers}");
        let mut cursor = EventCursor::default();
        let events: Vec<u32> = r.read_events::<Ev>(&mut cursor).map(|e| e.0).collect();
        assert_eq!(events, (0..2 * C as u32).step_by(2).collect::<Vec<_>>());
        // Usable after, nothing left pending.
        let applied = r.profile().commands_applied;
        r.execute_tasks();
        assert_eq!(r.profile().commands_applied, applied);
        r.spawn((Hp(1),));
        r.world().check_invariants();
    }
}

/// The same on a direct call: the second hook panics after the first recorded its command; the
/// spawn is done, the first hook's command applied, the panic re-raised by the call.
#[test]
fn a_panicking_hook_on_a_direct_spawn_keeps_the_first_hooks_command() {
    let mut r = Registry::with_workers(2);
    r.on_add::<Hp>(|e, commands| commands.insert(e, (Marked,)));
    r.on_add::<Hp>(|e, commands| {
        commands.insert(e, (Id(7),));
        panic!("second hook of {e}");
    });
    let payload = panic::catch_unwind(AssertUnwindSafe(|| r.spawn((Hp(1),)))).unwrap_err();
    assert!(message(payload).starts_with("second hook of"));
    let mut rows = Vec::new();
    r.query::<(Entity, &Hp, Option<&Marked>, Option<&Id>)>()
        .each(|_, (e, hp, m, id)| rows.push((e, *hp, m.is_some(), id.copied())));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].1, Hp(1));
    assert!(rows[0].2, "the first hook's insert applied");
    assert_eq!(rows[0].3, None, "the panicking hook's insert dropped");
    let applied = r.profile().commands_applied;
    r.execute_tasks();
    assert_eq!(
        r.profile().commands_applied,
        applied,
        "nothing left pending"
    );
}

/// A panic inside `each`, `each_chunk` and `each_with` (after recording commands) and inside a
/// reduction leaves a usable registry: the stamps of the grant stay, the panicking call's own
/// commands are discarded whole, the other pending commands apply, no panic is raised twice, and
/// the world ends as a run without the panics would have left it.
#[test]
fn panics_in_calling_thread_runs_and_reductions_leave_a_usable_registry() {
    let run = |panics: bool| {
        let mut r = Registry::with_workers(3);
        let ids = r.spawn_batch((0..2 * C as u32).map(|i| (Hp(i),)));
        r.update(0.0);
        // Pending commands of an earlier call: they must survive the panics below.
        r.query::<(Entity, &Hp)>().each_with(|_, (e, hp), ctx| {
            if hp.0 == 5 {
                ctx.commands().insert(e, (Marked,));
            }
        });
        let calls: [&dyn Fn(&mut Registry); 3] = [
            &|r| {
                r.query::<&mut Hp>().each(|_, hp| {
                    assert!(!(panics && hp.0 == 3), "each");
                })
            },
            &|r| {
                r.query::<&Hp>()
                    .each_chunk(|_, _| assert!(!panics, "each_chunk"));
            },
            &|r| {
                r.query::<(Entity, &Hp)>().each_with(|_, (e, hp), ctx| {
                    ctx.commands().insert(e, (Id(hp.0),));
                    assert!(!(panics && hp.0 == 10), "each_with");
                });
            },
        ];
        for call in calls {
            let result = panic::catch_unwind(AssertUnwindSafe(|| call(&mut r)));
            assert_eq!(result.is_err(), panics);
        }
        // The `&mut Hp` grant was stamped before the rows ran, panic or not.
        assert_eq!(changed_rows(&mut r, 0), 2 * C);
        let reduction = r.query::<&Hp>().each_async_reduce(
            || 0u64,
            move |n, _, hp| {
                assert!(!(panics && hp.0 == C as u32 + 1), "fold");
                n + u64::from(hp.0)
            },
            |a, b| a + b,
        );
        let joined = panic::catch_unwind(AssertUnwindSafe(|| reduction.join(&mut r)));
        assert_eq!(joined.is_err(), panics);
        // A second reduction whose panic the sync point re-raises: `join` says it is lost.
        let reduction = r.query::<&Hp>().each_async_reduce(
            || 0u64,
            move |n, _, _| {
                assert!(!panics, "fold 2");
                n + 1
            },
            |a, b| a + b,
        );
        let synced = panic::catch_unwind(AssertUnwindSafe(|| r.execute_tasks()));
        assert_eq!(synced.is_err(), panics);
        let joined = panic::catch_unwind(AssertUnwindSafe(|| reduction.join(&mut r)));
        assert_eq!(joined.is_err(), panics);
        if panics {
            let text = message(joined.unwrap_err());
            assert!(text.contains("result lost"), "{text}");
        }
        // Nothing is raised twice; the earlier commands applied, the panicking call's did not.
        r.execute_tasks();
        r.update(0.0);
        assert_eq!(r.query::<&Marked>().count(), 1);
        assert!(r.get::<Marked>(ids[5]).is_ok());
        assert_eq!(r.query::<&Id>().count(), if panics { 0 } else { 2 * C });
        r.world().check_invariants();
        r.world_hash::<(Hp, Marked)>()
    };
    assert_eq!(run(true), run(false));
}

/// A direct `spawn_batch` is one operation: every spawn's `on_add` runs in the first round, and
/// what their commands do runs after, never interleaved with the batch's later spawns. A hook on
/// the first entity that despawns the second must not make the second's `on_remove` run before
/// its `on_add` (a tracker of live entities would keep the dead one forever).
#[test]
fn spawn_batch_hooks_run_in_operation_order() {
    let mut r = Registry::with_workers(2);
    let log: Arc<Mutex<Vec<(&'static str, Entity)>>> = Arc::default();
    let live: Arc<Mutex<Vec<Entity>>> = Arc::default();
    let (l1, l2, v1, v2) = (log.clone(), log.clone(), live.clone(), live.clone());
    r.on_add::<Id>(move |e, commands| {
        l1.lock().unwrap().push(("add", e));
        v1.lock().unwrap().push(e);
        if e.index() == 0 {
            // The batch's next entity (index 1, generation 1 in a fresh world).
            commands.despawn(Entity::from_bits(e.to_bits() + 1).unwrap());
        }
    });
    r.on_remove::<Id>(move |e, _| {
        l2.lock().unwrap().push(("remove", e));
        v2.lock().unwrap().retain(|&x| x != e);
    });
    let ids = r.spawn_batch((0..3).map(|i| (Id(i),)));
    assert!(!r.contains(ids[1]));
    assert_eq!(
        *log.lock().unwrap(),
        [
            ("add", ids[0]),
            ("add", ids[1]),
            ("add", ids[2]),
            ("remove", ids[1])
        ]
    );
    assert_eq!(*live.lock().unwrap(), [ids[0], ids[2]]);

    // A panicking hook on the batch's first entity stops none of the others' hooks.
    let mut r = Registry::with_workers(2);
    let added: Arc<Mutex<Vec<Entity>>> = Arc::default();
    let a = added.clone();
    r.on_add::<Id>(move |e, commands| {
        a.lock().unwrap().push(e);
        commands.insert(e, (Marked,));
        if e.index() == 0 {
            panic!("hook of the first");
        }
    });
    let payload = panic::catch_unwind(AssertUnwindSafe(|| {
        r.spawn_batch((0..3).map(|i| (Id(i),)));
    }))
    .unwrap_err();
    assert_eq!(message(payload), "hook of the first");
    assert_eq!(added.lock().unwrap().len(), 3, "every spawn's hook ran");
    assert_eq!(r.query::<&Id>().count(), 3);
    assert_eq!(
        r.query::<&Marked>().count(),
        2,
        "the panicking hook's insert dropped"
    );
}

/// Cached runs across worlds swapped in and out under the registry (and between two
/// registries): every run reads the rows of the world it runs on, never a cached layout of
/// another, and writes land in it.
#[test]
fn cached_runs_follow_the_world_across_swaps() {
    let sum = |r: &mut Registry| {
        let mut s = 0u64;
        r.query::<&mut Hp>().each(|_, hp| {
            hp.0 += 1;
            s += u64::from(hp.0);
        });
        s
    };
    let mut a = Registry::with_workers(2);
    let mut b = Registry::with_workers(1);
    a.spawn_batch((0..C as u32 + 3).map(|i| (Hp(i),)));
    b.spawn_batch((0..5u32).map(|i| (Id(i), Hp(10 * i))));
    let base_a: u64 = (0..C as u64 + 3).sum();
    assert_eq!(sum(&mut a), base_a + C as u64 + 3);
    assert_eq!(sum(&mut a), base_a + 2 * (C as u64 + 3), "cached runs");
    assert_eq!(sum(&mut b), 100 + 5);
    assert_eq!(sum(&mut b), 100 + 10);
    std::mem::swap(a.world_mut(), b.world_mut());
    assert_eq!(sum(&mut a), 100 + 15, "a runs on b's old world");
    assert_eq!(sum(&mut b), base_a + 3 * (C as u64 + 3));
    std::mem::swap(a.world_mut(), b.world_mut());
    assert_eq!(sum(&mut a), base_a + 4 * (C as u64 + 3));
    assert_eq!(sum(&mut b), 100 + 20);
    // A swap inside one registry and back: the old world's id again, with a new layout.
    let mut other = freyr::World::new();
    other.spawn((Hp(1),));
    std::mem::swap(a.world_mut(), &mut other);
    assert_eq!(sum(&mut a), 2);
    std::mem::swap(a.world_mut(), &mut other);
    let mut first = None;
    a.query::<Entity>().each(|e, _| {
        first.get_or_insert(e);
    });
    a.despawn(first.unwrap()).unwrap();
    let mut count = 0;
    a.query::<&Hp>().each(|_, _| count += 1);
    assert_eq!(count, C + 2);
    a.world().check_invariants();
}

/// Conflicts hidden in nested tuples and options are still typed errors before anything runs,
/// and leave no state and no stamp behind.
#[test]
fn conflicts_hidden_in_nested_tuples_are_typed_errors() {
    use freyr::{QueryError, View};
    let mut r = Registry::with_workers(2);
    r.spawn_batch((0..C as u32 + 1).map(|i| (Hp(i), Id(i))));
    r.update(0.0);
    let is_conflict = |e: Option<QueryError>| {
        matches!(e, Some(QueryError::ConflictingAccess { type_name, .. })
            if type_name == core::any::type_name::<Hp>())
    };
    assert!(is_conflict(r.try_query::<((&mut Hp,), &Hp)>().err()));
    assert!(is_conflict(
        r.try_query::<(Entity, (&Id, (Option<&Hp>,)), &mut Hp)>()
            .err()
    ));
    assert!(is_conflict(
        r.try_query::<((Option<&mut Hp>, &Id), (&mut Hp,))>().err()
    ));
    assert!(is_conflict(
        r.query::<(&Id, (Option<&mut Hp>,))>()
            .try_views::<((View<Id>,), View<Hp>)>()
            .err()
    ));
    assert!(r.query_state::<((&mut Hp,), &Hp), ()>().is_none());
    assert_eq!(changed_rows(&mut r, 0), 0, "nothing was granted");
    // Reading a type in several places, and viewing it, is fine.
    let mut n = 0;
    r.query::<((&Hp,), Option<&Hp>, &Id)>()
        .each(|_, ((a,), b, _)| n += usize::from(b == Some(a)));
    assert_eq!(n, C + 1);
}
