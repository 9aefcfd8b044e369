//! Component hooks: they run in the order the world operations ran, after the operation, with
//! commands applied right after; a panicking hook loses nothing else; a restore fires none.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use freyr_registry::Registry;
use freyr_registry::hooks::MAX_HOOK_ROUNDS;

#[derive(Clone, Copy, Debug, PartialEq)]
struct A(u32);
#[derive(Clone, Copy, Debug, PartialEq)]
struct B(u32);
struct Marker;

type Log = Arc<Mutex<Vec<String>>>;

fn logging(registry: &mut Registry) -> Log {
    let log: Log = Arc::default();
    let l = log.clone();
    registry.on_add::<A>(move |e, _| l.lock().unwrap().push(format!("add A {}", e.index())));
    let l = log.clone();
    registry.on_insert::<A>(move |e, _| l.lock().unwrap().push(format!("insert A {}", e.index())));
    let l = log.clone();
    registry.on_add::<B>(move |e, _| l.lock().unwrap().push(format!("add B {}", e.index())));
    let l = log.clone();
    registry.on_remove::<A>(move |e, _| l.lock().unwrap().push(format!("remove A {}", e.index())));
    let l = log.clone();
    registry.on_remove::<B>(move |e, _| l.lock().unwrap().push(format!("remove B {}", e.index())));
    log
}

fn take(log: &Log) -> Vec<String> {
    core::mem::take(&mut *log.lock().unwrap())
}

#[test]
fn direct_operations_run_hooks_right_after() {
    let mut registry = Registry::with_workers(1);
    let log = logging(&mut registry);
    let e = registry.spawn((A(1), B(2)));
    assert_eq!(take(&log), ["add A 0", "add B 0", "insert A 0"]);
    registry.insert(e, (A(3),)).unwrap();
    assert_eq!(take(&log), ["insert A 0"]);
    registry.remove::<(B,)>(e).unwrap();
    assert_eq!(take(&log), ["remove B 0"]);
    registry.despawn(e).unwrap();
    assert_eq!(take(&log), ["remove A 0"]);
    registry.spawn_batch((0..2).map(|i| (B(i),)));
    // Index 0 is free again and reused first.
    assert_eq!(take(&log), ["add B 0", "add B 1"]);
}

#[test]
fn hooks_follow_the_command_order_of_a_sync_point() {
    for workers in [1, 2, 3, 8] {
        let mut registry = Registry::with_workers(workers);
        let es: Vec<_> = (0..1200).map(|i| registry.spawn((B(i),))).collect();
        let log = logging(&mut registry);
        registry.query::<&B>().each_async_with(|e, b, ctx| {
            if b.0 % 400 == 0 {
                ctx.commands().insert(e, (A(b.0),));
                ctx.commands().remove::<(B,)>(e);
            }
        });
        registry.destroy_entity(es[1]);
        registry.execute_tasks();
        assert_eq!(
            take(&log),
            [
                "add A 0",
                "insert A 0",
                "remove B 0",
                "add A 400",
                "insert A 400",
                "remove B 400",
                "add A 800",
                "insert A 800",
                "remove B 800",
                "remove B 1",
            ],
            "{workers} workers"
        );
    }
}

#[test]
fn hook_commands_apply_in_the_same_sync_point_and_cascade() {
    let mut registry = Registry::with_workers(2);
    registry.on_add::<A>(|e, commands| commands.insert(e, (B(0),)));
    registry.on_add::<B>(|e, commands| commands.insert(e, (Marker,)));
    let e = registry.spawn((0u8,));
    registry
        .query::<&u8>()
        .each_with(|e, _, ctx| ctx.commands().insert(e, (A(1),)));
    registry.execute_tasks();
    assert_eq!(registry.get::<B>(e), Ok(&B(0)));
    assert!(registry.get::<Marker>(e).is_ok());
}

#[test]
fn a_hook_that_keeps_triggering_itself_stops_with_a_panic() {
    let mut registry = Registry::with_workers(1);
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    registry.on_add::<A>(move |_, commands| {
        c.fetch_add(1, Ordering::Relaxed);
        commands.spawn((A(0),));
    });
    let result = panic::catch_unwind(AssertUnwindSafe(|| registry.spawn((A(0),))));
    let message = result.unwrap_err().downcast::<String>().unwrap();
    assert!(message.contains("rounds"), "{message}");
    assert_eq!(calls.load(Ordering::Relaxed), MAX_HOOK_ROUNDS);
    // The registry stays usable.
    assert_eq!(registry.query::<&A>().count(), MAX_HOOK_ROUNDS + 1);
}

static DROPS: AtomicUsize = AtomicUsize::new(0);

struct Counted;
impl Drop for Counted {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_panicking_hook_loses_nothing_else() {
    let mut registry = Registry::with_workers(4);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    registry.on_add::<A>(move |e, commands| {
        r.fetch_add(1, Ordering::Relaxed);
        commands.insert(e, (Counted,));
        if e.index() % 2 == 1 {
            panic!("hook of {}", e.index());
        }
    });
    let es: Vec<_> = (0..6).map(|i| registry.spawn((B(i),))).collect();
    registry
        .query::<&B>()
        .each_async_with(|e, b, ctx| ctx.commands().insert(e, (A(b.0),)));
    let result = panic::catch_unwind(AssertUnwindSafe(|| registry.execute_tasks()));
    // The first panic (entity 1's hook) is re-raised after every hook ran.
    let message = result.unwrap_err().downcast::<String>().unwrap();
    assert_eq!(*message, "hook of 1");
    assert_eq!(ran.load(Ordering::Relaxed), 6);
    // Every command applied; the panicking hooks' own commands were dropped, the others applied.
    for &e in &es {
        assert!(registry.get::<A>(e).is_ok());
        assert_eq!(registry.get::<Counted>(e).is_ok(), e.index() % 2 == 0);
    }
    assert_eq!(
        DROPS.load(Ordering::Relaxed),
        3,
        "the discarded values were dropped"
    );
    drop(registry);
    assert_eq!(
        DROPS.load(Ordering::Relaxed),
        6,
        "every value dropped exactly once"
    );
}

#[test]
fn restore_fires_no_hooks() {
    let mut registry = Registry::with_workers(2);
    registry.register_snapshot_copy::<A>();
    registry.register_snapshot_copy::<B>();
    let snapshot = registry.snapshot().unwrap();
    for i in 0..10 {
        registry.spawn((A(i), B(i)));
    }
    let full = registry.snapshot().unwrap();
    let log = logging(&mut registry);
    registry.restore(&snapshot).unwrap();
    registry.restore(&full).unwrap();
    registry.execute_tasks();
    assert!(take(&log).is_empty());
    assert_eq!(registry.query::<&A>().count(), 10);
    // Hooks still fire for operations after the restore.
    registry.spawn((A(99),));
    assert_eq!(take(&log), ["add A 10", "insert A 10"]);
}
