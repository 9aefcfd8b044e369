//! Nothing is lost when user code panics at a sync point: a reduction's `combine`, a
//! component's `Drop` while commands apply, a panic payload whose own `Drop` panics. Every
//! command of every task that did not panic is applied, every value is dropped exactly once
//! (tallied), the first panic is re-raised after the sync point finished, the pool stays
//! usable, and `Reduction::join` returns or raises a clear panic. On 1, 2 and 8 workers; sized
//! small under Miri (`cargo +nightly miri test -p freyr-query --test sync_point_panics`).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, panic_any};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr_registry::{Registry, Without};

/// Worker counts; Miri runs the pool's threads one at a time, so it gets 1 and 2 only.
const WORKERS: &[usize] = if cfg!(miri) { &[1, 2] } else { &[1, 2, 8] };

/// Entities per test: several tasks even under Miri (with `rows_per_task(ROWS)`).
const N: u32 = if cfg!(miri) { 24 } else { 1000 };
const ROWS: usize = if cfg!(miri) { 4 } else { 64 };

/// How many values of a kind were made and dropped.
#[derive(Clone, Default)]
struct Tally {
    made: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
}

impl Tally {
    fn value(&self, id: u32) -> Counted {
        self.made.fetch_add(1, Ordering::SeqCst);
        Counted {
            id,
            dropped: self.dropped.clone(),
        }
    }

    fn made(&self) -> usize {
        self.made.load(Ordering::SeqCst)
    }

    fn dropped(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }
}

/// A component value that counts its drop.
struct Counted {
    id: u32,
    dropped: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// A second tallied kind, so that two launches' commands are told apart.
struct Spawned(Counted);

#[derive(Clone, Copy)]
struct Id(u32);

/// A component whose `Drop` panics when `armed`.
struct Bomb {
    armed: bool,
    dropped: Arc<AtomicUsize>,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.dropped.fetch_add(1, Ordering::SeqCst);
        if self.armed {
            panic!("a component's Drop panicked");
        }
    }
}

/// A panic payload whose own `Drop` panics.
struct NastyPayload {
    dropped: Arc<AtomicUsize>,
}

impl Drop for NastyPayload {
    fn drop(&mut self) {
        self.dropped.fetch_add(1, Ordering::SeqCst);
        panic!("the payload's Drop panicked");
    }
}

fn message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<not a string>".to_owned())
}

fn registry(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.spawn_batch((0..N).map(|i| (Id(i),)));
    r
}

/// Launches a command-recording launch: every entity gets a tallied `Counted` inserted.
fn insert_counted(r: &mut Registry, tally: &Tally) {
    let tally = tally.clone();
    r.query_filtered::<&Id, Without<Counted>>()
        .rows_per_task(ROWS)
        .each_async_with(move |e, id, ctx| ctx.commands().insert(e, (tally.value(id.0),)));
}

/// Launches a spawning launch: one tallied `Spawned` per entity.
fn spawn_counted(r: &mut Registry, tally: &Tally) {
    let tally = tally.clone();
    r.query::<&Id>()
        .rows_per_task(ROWS)
        .each_async_with(move |_, id, ctx| {
            ctx.commands().spawn((Spawned(tally.value(id.0)),));
        });
}

fn assert_all_applied(r: &mut Registry) {
    let mut inserted = 0;
    r.query::<(&Id, &Counted)>().each(|_, (id, c)| {
        assert_eq!(id.0, c.id);
        inserted += 1;
    });
    assert_eq!(inserted, N as usize, "every insert applied");
    let mut spawned = Vec::new();
    r.query::<&Spawned>().each(|_, s| spawned.push(s.0.id));
    assert_eq!(
        spawned,
        (0..N).collect::<Vec<_>>(),
        "every spawn applied, in order"
    );
}

#[test]
fn a_panicking_combine_loses_no_other_launchs_commands() {
    for &workers in WORKERS {
        let (inserts, spawns) = (Tally::default(), Tally::default());
        let mut r = registry(workers);
        insert_counted(&mut r, &inserts);
        let reduction = r.query::<&Id>().rows_per_task(ROWS).each_async_reduce(
            || 0u64,
            |acc, _, id| acc + u64::from(id.0),
            |_, _| panic!("combine panicked"),
        );
        spawn_counted(&mut r, &spawns);
        let payload = catch_unwind(AssertUnwindSafe(|| r.execute_tasks())).unwrap_err();
        assert_eq!(
            message(&*payload),
            "combine panicked",
            "workers = {workers}"
        );
        assert_all_applied(&mut r);
        r.world().check_invariants();
        // The reduction's loss is reported clearly, never `unreachable!`.
        let lost = catch_unwind(AssertUnwindSafe(|| reduction.join(&mut r))).unwrap_err();
        assert!(
            message(&*lost).contains("reduction result lost"),
            "{}",
            message(&*lost)
        );
        // The pool stays usable, and a join that retires the launch itself re-raises.
        let again = r.query::<&Id>().rows_per_task(ROWS).each_async_reduce(
            || 0u64,
            |acc, _, _| acc + 1,
            |_, _| panic!("combine panicked again"),
        );
        let raised = catch_unwind(AssertUnwindSafe(|| again.join(&mut r))).unwrap_err();
        assert_eq!(message(&*raised), "combine panicked again");
        let count = r
            .query::<&Id>()
            .rows_per_task(ROWS)
            .each_async_reduce(|| 0usize, |acc, _, _| acc + 1, |a, b| a + b)
            .join(&mut r);
        assert_eq!(count, N as usize);
        drop(r);
        for tally in [&inserts, &spawns] {
            assert_eq!(tally.made(), N as usize);
            assert_eq!(
                tally.dropped(),
                tally.made(),
                "each value dropped exactly once"
            );
        }
    }
}

#[test]
fn a_panicking_component_drop_while_commands_apply_loses_no_command() {
    for &workers in WORKERS {
        let (inserts, spawns) = (Tally::default(), Tally::default());
        let bombs = Arc::new(AtomicUsize::new(0));
        let mut r = registry(workers);
        // Every third of these targets panics when despawned.
        let targets = r.spawn_batch((0..N).map(|i| {
            (Bomb {
                armed: i % 3 == 0,
                dropped: bombs.clone(),
            },)
        }));
        let doomed = Arc::new(targets);
        let list = doomed.clone();
        r.query::<&Id>()
            .rows_per_task(ROWS)
            .each_async_with(move |_, id, ctx| ctx.commands().despawn(list[id.0 as usize]));
        insert_counted(&mut r, &inserts);
        spawn_counted(&mut r, &spawns);
        let payload = catch_unwind(AssertUnwindSafe(|| r.execute_tasks())).unwrap_err();
        assert_eq!(message(&*payload), "a component's Drop panicked");
        assert!(
            doomed.iter().all(|&e| !r.contains(e)),
            "every despawn applied"
        );
        assert_eq!(bombs.load(Ordering::SeqCst), N as usize);
        assert_all_applied(&mut r);
        r.world().check_invariants();
        assert_eq!(r.len(), 2 * N as usize);
        // Queued destructions run even when one of them panics.
        let more: Vec<_> = (0..4)
            .map(|i| {
                r.spawn((Bomb {
                    armed: i % 2 == 0,
                    dropped: bombs.clone(),
                },))
            })
            .collect();
        for &e in &more {
            r.destroy_entity(e);
        }
        assert!(catch_unwind(AssertUnwindSafe(|| r.execute_tasks())).is_err());
        assert!(more.iter().all(|&e| !r.contains(e)));
        assert_eq!(bombs.load(Ordering::SeqCst), N as usize + 4);
        drop(r);
        for tally in [&inserts, &spawns] {
            assert_eq!(tally.made(), N as usize);
            assert_eq!(
                tally.dropped(),
                tally.made(),
                "each value dropped exactly once"
            );
        }
    }
}

#[test]
fn a_payload_whose_drop_panics_is_neither_swapped_nor_fatal() {
    for &workers in WORKERS {
        let (inserts, spawns) = (Tally::default(), Tally::default());
        let payloads = Arc::new(AtomicUsize::new(0));
        let mut r = registry(workers);
        insert_counted(&mut r, &inserts);
        // Every task of this launch panics with a payload whose `Drop` panics.
        let count = payloads.clone();
        r.query::<&Id>()
            .rows_per_task(ROWS)
            .each_async(move |_, _| {
                panic_any(NastyPayload {
                    dropped: count.clone(),
                })
            });
        spawn_counted(&mut r, &spawns);
        let tasks = (N as usize).div_ceil(ROWS);
        let payload = catch_unwind(AssertUnwindSafe(|| r.execute_tasks())).unwrap_err();
        // The task's own payload is re-raised, not the panic of another payload's Drop.
        assert!(payload.is::<NastyPayload>(), "got {:?}", message(&*payload));
        freyr_sched::drop_payload(payload);
        assert_eq!(
            payloads.load(Ordering::SeqCst),
            tasks,
            "each payload dropped once"
        );
        assert_all_applied(&mut r);
        // The next conflicting query returns: the pool is not stuck.
        r.query::<&mut Id>().each_async(|_, id| id.0 += 1);
        assert_eq!(r.query::<&Id>().count(), N as usize);
        let mut sum = 0u64;
        r.query::<&Id>().each(|_, id| sum += u64::from(id.0));
        assert_eq!(sum, u64::from(N) * u64::from(N + 1) / 2);
        drop(r);
        for tally in [&inserts, &spawns] {
            assert_eq!(tally.made(), N as usize);
            assert_eq!(
                tally.dropped(),
                tally.made(),
                "each value dropped exactly once"
            );
        }
    }
}

#[test]
fn combine_panics_in_several_launches_reraise_the_first_in_launch_order() {
    for &workers in WORKERS {
        let mut r = registry(workers);
        let first = r.query::<&Id>().rows_per_task(ROWS).each_async_reduce(
            || 0u32,
            |a, _, _| a,
            |_, _| panic!("first"),
        );
        let second = r.query::<&Id>().rows_per_task(ROWS).each_async_reduce(
            || 0u32,
            |a, _, _| a,
            |_, _| {
                panic_any(NastyPayload {
                    dropped: Arc::default(),
                })
            },
        );
        let payload = catch_unwind(AssertUnwindSafe(|| r.execute_tasks())).unwrap_err();
        assert_eq!(message(&*payload), "first");
        // Both results are reported lost (the second launch's panic was dropped), never
        // `unreachable!`.
        for reduction in [first, second] {
            let lost = catch_unwind(AssertUnwindSafe(|| reduction.join(&mut r))).unwrap_err();
            assert!(
                message(&*lost).contains("reduction result lost"),
                "{}",
                message(&*lost)
            );
        }
        r.execute_tasks();
        assert_eq!(r.profile().panics, 2);
    }
}
