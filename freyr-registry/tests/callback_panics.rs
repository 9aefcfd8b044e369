//! Panics in callbacks: re-raised at the sync point, the panicking chunk's commands discarded,
//! the world valid, the registry usable afterwards.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use freyr_registry::{Phase, Registry};

#[derive(Clone, Copy)]
struct Id(u32);
struct Child(u32);

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

fn registry(workers: usize) -> Registry {
    let mut registry = Registry::with_workers(workers);
    // Three chunks: rows 0..512, 512..1024, 1024..1300.
    registry.spawn_batch((0..1300u32).map(|i| (Id(i),)));
    registry
}

#[test]
fn async_panic_is_reraised_at_the_sync_point_and_discards_only_its_chunk() {
    for workers in [1, 3, 8] {
        let mut registry = registry(workers);
        registry.query::<&Id>().each_async_with(|_, id, ctx| {
            ctx.commands().spawn((Child(id.0),));
            if id.0 == 700 {
                panic!("boom at 700");
            }
        });
        let payload = catch_unwind(AssertUnwindSafe(|| registry.execute_tasks())).unwrap_err();
        assert_eq!(panic_message(&*payload), "boom at 700");
        registry.world().check_invariants();
        // Chunk 1 (rows 512..1024) recorded 189 spawns before panicking: all discarded.
        let mut children = Vec::new();
        registry.query::<&Child>().each(|_, c| children.push(c.0));
        children.sort_unstable();
        let expected: Vec<u32> = (0..512).chain(1024..1300).collect();
        assert_eq!(children, expected, "workers = {workers}");
        assert_eq!(registry.profile().panics, 1);
        // Usable afterwards.
        registry.query::<&mut Id>().each_async(|_, id| id.0 += 1);
        registry.execute_tasks();
        assert_eq!(registry.query::<&Id>().count(), 1300);
    }
}

#[test]
fn implicit_waits_keep_the_panic_for_the_explicit_sync_point() {
    let mut registry = registry(4);
    let e = registry.spawn((Id(5000),));
    registry.query::<&mut Id>().each_async(|_, id| {
        if id.0 == 3 {
            panic!("late");
        }
        id.0 += 1;
    });
    // Conflicting read: waits, but does not unwind here.
    assert_eq!(registry.get::<Id>(e).unwrap().0, 5001);
    assert_eq!(registry.implicit_syncs(), 1);
    let payload = catch_unwind(AssertUnwindSafe(|| registry.execute_tasks())).unwrap_err();
    assert_eq!(panic_message(&*payload), "late");
    registry.execute_tasks(); // nothing left to re-raise
}

#[test]
fn first_panic_in_launch_order_wins_and_all_launches_are_retired() {
    struct Other(u32);
    let mut registry = registry(8);
    registry.spawn_batch((0..600u32).map(|i| (Other(i),)));
    registry.query::<&Id>().each_async(|_, id| {
        if id.0 == 1 {
            panic!("first launch");
        }
    });
    registry.query::<&Other>().each_async(|_, o| {
        if o.0 == 1 {
            panic!("second launch");
        }
    });
    let payload = catch_unwind(AssertUnwindSafe(|| registry.execute_tasks())).unwrap_err();
    assert_eq!(panic_message(&*payload), "first launch");
    assert_eq!(registry.in_flight(), 0);
    assert_eq!(registry.profile().panics, 2);
}

#[test]
fn synchronous_panics_propagate_at_once_and_drop_their_commands() {
    let mut registry = registry(2);
    let result = catch_unwind(AssertUnwindSafe(|| {
        registry.query::<&Id>().each_with(|e, id, ctx| {
            ctx.commands().despawn(e);
            if id.0 == 10 {
                panic!("sync");
            }
        });
    }));
    assert!(result.is_err());
    registry.execute_tasks();
    assert_eq!(registry.len(), 1300);
    registry.world().check_invariants();
}

#[test]
fn a_panicking_reduction_is_reraised_by_join() {
    let mut registry = registry(3);
    let sum = registry.query::<&Id>().each_async_reduce(
        || 0u64,
        |acc, _, id| {
            assert!(id.0 != 900, "reduce failed");
            acc + u64::from(id.0)
        },
        |a, b| a + b,
    );
    let payload = catch_unwind(AssertUnwindSafe(|| sum.join(&mut registry))).unwrap_err();
    assert!(panic_message(&*payload).contains("reduce failed"));
    registry.execute_tasks();
    let sum = registry.query::<&Id>().each_async_reduce(
        || 0u64,
        |acc, _, id| acc + u64::from(id.0),
        |a, b| a + b,
    );
    assert_eq!(sum.join(&mut registry), (0..1300u64).sum::<u64>());
}

#[test]
fn a_reduction_whose_panic_was_reraised_by_a_sync_point_reports_the_loss() {
    let mut registry = registry(2);
    let sum =
        registry
            .query::<&Id>()
            .each_async_reduce(|| 0u64, |_, _, _| panic!("gone"), |a, b| a + b);
    assert!(catch_unwind(AssertUnwindSafe(|| registry.execute_tasks())).is_err());
    let payload = catch_unwind(AssertUnwindSafe(|| sum.join(&mut registry))).unwrap_err();
    assert!(panic_message(&*payload).contains("reduction result lost"));
}

#[test]
fn panics_in_a_phase_stop_the_tick_after_its_sync_point() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut registry = registry(4);
    let l = Arc::clone(&log);
    registry.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        l.lock().unwrap().push("update");
        r.query::<&Id>().each_async_with(|e, id, ctx| {
            if id.0 == 0 {
                ctx.commands().despawn(e);
            }
            if id.0 == 1299 {
                panic!("task in Update");
            }
        });
    });
    let l = Arc::clone(&log);
    registry.add_system(Phase::PostUpdate, move |_: &mut Registry, _: f32| {
        l.lock().unwrap().push("post");
    });
    let payload = catch_unwind(AssertUnwindSafe(|| registry.update(1.0))).unwrap_err();
    assert_eq!(panic_message(&*payload), "task in Update");
    assert_eq!(*log.lock().unwrap(), ["update"]);
    assert_eq!(registry.len(), 1299); // the Update sync point applied chunk 0's despawn
    assert_eq!(registry.current_phase(), None);
    // The next tick runs normally once the callback no longer meets its panicking row.
    registry.query::<&mut Id>().each(|_, id| id.0 = 5);
    registry.update(1.0);
    assert_eq!(*log.lock().unwrap(), ["update", "update", "post"]);
}

#[test]
fn system_panics_leave_the_registry_usable() {
    let mut registry = registry(2);
    registry.add_system(Phase::PreUpdate, |r: &mut Registry, _: f32| {
        let n = r.query::<&Id>().count();
        assert!(n < 1300, "system failed with {n}");
    });
    let payload = catch_unwind(AssertUnwindSafe(|| registry.update(1.0))).unwrap_err();
    assert!(panic_message(&*payload).contains("system failed with 1300"));
    registry
        .despawn(registry.world().archetypes()[1].chunk(0).entities()[0])
        .unwrap();
    registry.update(1.0);
    assert_eq!(registry.system_count(Phase::PreUpdate), 1);
}

#[test]
fn dropping_a_registry_with_work_in_flight_waits_for_it() {
    let flag = Arc::new(Mutex::new(0u32));
    {
        let mut registry = registry(8);
        let f = Arc::clone(&flag);
        registry.query::<&Id>().each_async(move |_, _| {
            *f.lock().unwrap() += 1;
        });
        registry.query::<&Id>().each_async(|_, id| {
            if id.0 == 5 {
                panic!("dropped with a panic pending");
            }
        });
    }
    assert_eq!(*flag.lock().unwrap(), 1300);
}

#[test]
fn dropping_a_registry_while_the_caller_unwinds_waits_for_tasks() {
    let flag = Arc::new(Mutex::new(0u32));
    let f = Arc::clone(&flag);
    let result = catch_unwind(AssertUnwindSafe(move || {
        let mut registry = registry(8);
        registry.query::<&Id>().each_async(move |_, _| {
            std::thread::yield_now();
            *f.lock().unwrap() += 1;
        });
        panic!("caller panics with tasks in flight");
    }));
    assert!(result.is_err());
    assert_eq!(*flag.lock().unwrap(), 1300);
}
