//! Systems run per phase in registration order; each phase ends with a sync point; updates do
//! not nest; callbacks cannot drive their registry (golden rule 3).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use freyr_registry::{Phase, Registry, System};

struct Log(Vec<String>);
#[derive(Clone, Copy)]
struct Counter(u32);

struct Named(&'static str);
impl System for Named {
    fn update(&mut self, registry: &mut Registry, _dt: f32) {
        let phase = registry.current_phase().unwrap();
        registry
            .resource_mut::<Log>()
            .unwrap()
            .0
            .push(format!("{}:{}", phase.name(), self.0));
    }
}

#[test]
fn phases_run_in_order_and_systems_in_registration_order() {
    let mut registry = Registry::with_workers(2);
    registry.insert_resource(Log(Vec::new()));
    registry.add_system(Phase::PostUpdate, Named("z"));
    registry.add_system(Phase::Update, Named("b"));
    registry.add_system(Phase::PreUpdate, Named("a"));
    registry.add_system(Phase::Update, Named("c"));
    registry.update(0.1);
    assert_eq!(
        registry.resource::<Log>().unwrap().0,
        ["PreUpdate:a", "Update:b", "Update:c", "PostUpdate:z"]
    );
    let report = registry.profile();
    assert_eq!(report.sync_points, 3);
    for phase in Phase::ALL {
        assert_eq!(report.phases[phase.index()].runs, 1);
    }
}

/// The profile's phase times: a sync point that waits for a launch is timed; one with nothing
/// to wait for or apply counts as no sync time; a phase that ran nothing and synced nothing
/// counts as no time at all (its run is still counted). The tick's wall time covers the phases.
#[test]
fn phase_times_count_what_ran_and_what_was_synced() {
    let mut registry = Registry::with_workers(2);
    registry.spawn_batch((0..4096).map(|_| (Counter(0),)));
    registry.add_system(Phase::PreUpdate, |r: &mut Registry, _: f32| {
        r.query::<&mut Counter>().each_async(|_, c| {
            c.0 += 1;
            std::thread::sleep(Duration::from_micros(1));
        });
    });
    registry.add_system(Phase::Update, |_: &mut Registry, _: f32| {
        std::thread::sleep(Duration::from_millis(1));
    });
    registry.update(0.1);
    let report = registry.profile();
    let [pre, update, post] = report.phases;
    assert_eq!((pre.runs, update.runs, post.runs), (1, 1, 1));
    assert!(
        pre.sync > Duration::ZERO,
        "the launch was waited for: {pre:?}"
    );
    assert!(pre.wall >= pre.sync);
    assert_eq!(update.sync, Duration::ZERO, "nothing in flight: {update:?}");
    assert!(update.wall >= Duration::from_millis(1), "{update:?}");
    assert_eq!(post.wall, Duration::ZERO, "an empty phase: {post:?}");
    assert_eq!(post.sync, Duration::ZERO);
    let tick = registry.last_tick().expect("an update ran");
    assert!(tick.wall >= pre.wall + update.wall, "{tick:?} {report:?}");
    let mut ones = 0;
    registry
        .query::<&Counter>()
        .each(|_, c| ones += usize::from(c.0 == 1));
    assert_eq!(ones, 4096);
}

#[test]
fn each_phase_ends_with_a_sync_point_that_applies_commands_and_destructions() {
    let mut registry = Registry::with_workers(4);
    let doomed = registry.spawn((Counter(0),));
    registry.spawn_batch((0..999u32).map(|i| (Counter(i),)));
    registry.add_system(Phase::PreUpdate, move |r: &mut Registry, _: f32| {
        r.query::<&mut Counter>().each_async(|_, c| c.0 += 1);
        r.destroy_entity(doomed);
    });
    registry.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        // PreUpdate's tasks finished and its destruction happened.
        assert!(!r.contains(doomed));
        assert_eq!(r.in_flight(), 0);
        r.query::<&Counter>().each_async_with(|_, c, ctx| {
            if c.0 == 1 {
                ctx.commands().spawn((Counter(5000),));
            }
        });
    });
    registry.add_system(Phase::PostUpdate, |r: &mut Registry, _: f32| {
        assert_eq!(r.query::<&Counter>().count(), 1000);
    });
    registry.update(1.0);
    assert_eq!(registry.implicit_syncs(), 0);
}

#[test]
fn systems_may_sync_explicitly_inside_a_phase() {
    let mut registry = Registry::with_workers(3);
    let e = registry.spawn((Counter(0),));
    registry.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        r.query::<&mut Counter>().each_async(|_, c| c.0 += 1);
        r.execute_tasks();
        assert_eq!(r.in_flight(), 0);
        assert_eq!(r.get::<Counter>(e).unwrap().0, 1);
    });
    registry.update(1.0);
    assert_eq!(registry.implicit_syncs(), 0);
}

#[test]
fn systems_added_during_an_update_run_after_the_existing_ones() {
    let mut registry = Registry::with_workers(1);
    registry.insert_resource(Log(Vec::new()));
    registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        r.resource_mut::<Log>().unwrap().0.push("first".into());
        if r.system_count(Phase::Update) == 1 {
            r.add_system(Phase::Update, Named("added"));
        }
    });
    registry.update(1.0);
    registry.update(1.0);
    assert_eq!(registry.system_count(Phase::Update), 2);
    assert_eq!(
        registry.resource::<Log>().unwrap().0,
        ["first", "first", "Update:added"]
    );
}

#[test]
fn nested_update_from_a_system_panics_clearly_and_the_registry_recovers() {
    let mut registry = Registry::with_workers(2);
    let nest = Arc::new(AtomicBool::new(true));
    let n = Arc::clone(&nest);
    registry.add_system(Phase::Update, move |r: &mut Registry, dt: f32| {
        if n.load(Ordering::Relaxed) {
            r.update(dt);
        }
    });
    let payload = catch_unwind(AssertUnwindSafe(|| registry.update(1.0))).unwrap_err();
    let msg = payload.downcast_ref::<&str>().copied().unwrap_or_default();
    assert!(msg.contains("updates do not nest"), "{msg}");
    nest.store(false, Ordering::Relaxed);
    registry.update(1.0);
}

#[test]
fn a_callback_that_reaches_its_registry_through_shared_ownership_is_stopped() {
    let registry = Arc::new(Mutex::new(Registry::with_workers(8)));
    registry.lock().unwrap().spawn((Counter(0),));
    let inner = Arc::clone(&registry);
    let tried = Arc::new(AtomicBool::new(false));
    let t = Arc::clone(&tried);
    registry
        .lock()
        .unwrap()
        .query::<&Counter>()
        .each_async(move |_, _| {
            // Wait for the main thread to release the lock, then misuse the registry.
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
    // The task's guard is dropped while unwinding, which poisons the mutex.
    let mut guard = registry
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
