//! A hostile user of the public API, checked against its rustdoc: payloads whose `Drop`
//! panics, scopes that panic on every side, scopes nested a thousand deep, two pools waiting on
//! each other, a pool dropped by its own task, degenerate counts, and metrics read while work
//! runs. Everything is checked by counting (each task run once, each payload dropped once),
//! never by timing.

use std::panic::{self, AssertUnwindSafe, catch_unwind, panic_any};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, Once};

use freyr_sched::{
    MAX_WORKERS, Scope, TaskGroup, ThreadPool, current_worker_index, drop_payload,
    resolve_worker_count,
};

/// Messages of the panics these tests plant start with this; the hook keeps them quiet.
const PLANTED: &str = "attack:";

/// Silences the planted panics (and the `Nasty` payloads) and nothing else.
fn quiet() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let text = p
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied());
            if !(p.is::<Nasty>() || text.is_some_and(|t| t.starts_with(PLANTED))) {
                default(info);
            }
        }));
    });
}

/// `n` drop counters that live for the rest of the process (payloads must be `'static`).
fn counters(n: usize) -> &'static [AtomicUsize] {
    Box::leak((0..n).map(|_| AtomicUsize::new(0)).collect())
}

/// A panic payload whose own `Drop` counts itself, then panics.
struct Nasty {
    id: usize,
    drops: &'static [AtomicUsize],
}

impl Drop for Nasty {
    fn drop(&mut self) {
        self.drops[self.id].fetch_add(1, SeqCst);
        panic!("{PLANTED} drop of payload {}", self.id);
    }
}

fn nasty(id: usize, drops: &'static [AtomicUsize]) -> ! {
    panic_any(Nasty { id, drops })
}

fn id_of(payload: &(dyn std::any::Any + Send)) -> usize {
    payload.downcast_ref::<Nasty>().expect("a Nasty payload").id
}

/// Every counter is 1, except `except`'s, which is 0.
#[track_caller]
fn dropped_once_except(drops: &[AtomicUsize], except: Option<usize>, what: &str) {
    for (i, d) in drops.iter().enumerate() {
        let want = usize::from(Some(i) != except);
        assert_eq!(d.load(SeqCst), want, "{what}: payload {i} dropped wrongly");
    }
}

/// A scope that panics after spawning tasks that all panic, each with a payload whose `Drop`
/// panics: the scope's own payload is re-raised (it is not dropped), every task payload is
/// dropped exactly once, each task ran once, and the pool still works.
#[test]
fn scope_body_panic_wins_and_every_task_payload_is_dropped_once() {
    quiet();
    const TASKS: usize = 40;
    for workers in [1, 2, 8] {
        let drops = counters(TASKS + 1);
        let runs = AtomicUsize::new(0);
        let caught = catch_unwind(AssertUnwindSafe(|| {
            pool_for(workers).scope(|s| {
                for id in 0..TASKS {
                    let runs = &runs;
                    s.spawn(move |_| {
                        runs.fetch_add(1, SeqCst);
                        nasty(id, drops)
                    });
                }
                nasty(TASKS, drops)
            })
        }))
        .expect_err("the scope body panicked");
        assert_eq!(
            id_of(&*caught),
            TASKS,
            "workers = {workers}: body panic wins"
        );
        assert_eq!(runs.load(SeqCst), TASKS, "workers = {workers}");
        dropped_once_except(drops, Some(TASKS), "scope body panicked");
        drop_payload(caught);
        dropped_once_except(drops, None, "after the caller dropped it");
    }
}

/// The same without the body panic: one task payload is re-raised untouched, the others are
/// dropped once each, and the pool (the same one) runs a clean scope after.
#[test]
fn first_task_panic_is_re_raised_and_the_rest_dropped_once() {
    quiet();
    const TASKS: usize = 64;
    for workers in [1, 2, 8] {
        let pool = pool_for(workers);
        for round in 0..3 {
            let drops = counters(TASKS);
            let caught = catch_unwind(AssertUnwindSafe(|| {
                pool.scope(|s| {
                    for id in 0..TASKS {
                        s.spawn(move |_| nasty(id, drops));
                    }
                })
            }))
            .expect_err("tasks panicked");
            let first = id_of(&*caught);
            dropped_once_except(drops, Some(first), "tasks panicked");
            drop_payload(caught);
            dropped_once_except(drops, None, "after the caller dropped it");
            let ok = AtomicUsize::new(0);
            pool.scope(|s| {
                for _ in 0..TASKS {
                    s.spawn(|_| {
                        ok.fetch_add(1, SeqCst);
                    });
                }
            });
            assert_eq!(ok.load(SeqCst), TASKS, "workers {workers} round {round}");
        }
    }
}

/// `parallel_for` whose body panics on every index with a nasty payload: every index ran once,
/// one payload is re-raised intact, every other one was dropped exactly once.
#[test]
fn parallel_for_drops_each_set_aside_payload_once() {
    quiet();
    const COUNT: usize = 300;
    for (workers, grain) in [(1, 1), (2, 1), (8, 3), (8, 1000)] {
        let drops = counters(COUNT);
        let runs: Vec<AtomicUsize> = (0..COUNT).map(|_| AtomicUsize::new(0)).collect();
        let pool = pool_for(workers);
        let caught = catch_unwind(AssertUnwindSafe(|| {
            pool.parallel_for(COUNT, grain, |i| {
                runs[i].fetch_add(1, SeqCst);
                nasty(i, drops)
            });
        }))
        .expect_err("every index panicked");
        assert!(
            runs.iter().all(|r| r.load(SeqCst) == 1),
            "workers {workers}"
        );
        let first = id_of(&*caught);
        dropped_once_except(drops, Some(first), "parallel_for");
        drop_payload(caught);
        dropped_once_except(drops, None, "parallel_for, after the caller dropped it");
    }
}

fn nasty_index(drops: &&'static [AtomicUsize], i: usize) {
    nasty(i, drops)
}

/// "Dropping a group whose tasks are still pending blocks [...]; a panic stored at that point
/// is discarded." A stored payload whose `Drop` panics must not unwind out of the group's drop
/// (inside an unwind that would abort the process), and every payload is dropped exactly once.
#[test]
fn dropping_a_group_with_a_stored_nasty_payload_does_not_unwind() {
    quiet();
    for workers in [1, 2, 4] {
        let pool = pool_for(workers);
        let drops = counters(3);
        let group = TaskGroup::new();
        // SAFETY: `drops` is 'static; `group` is not moved before it is dropped below, and its
        // drop blocks until the tasks finished.
        unsafe { pool.submit_indexed(&group, &drops, 3, nasty_index) };
        while !group.is_done() {
            std::thread::yield_now();
        }
        assert_eq!(group.panicked(), 3, "workers = {workers}");
        let dropped = catch_unwind(AssertUnwindSafe(move || drop(group)));
        assert!(
            dropped.is_ok(),
            "workers = {workers}: the group's drop unwound"
        );
        dropped_once_except(drops, None, "group dropped");
        // The same drop during an unwind (which aborts if it unwinds).
        let group = TaskGroup::new();
        let drops = counters(1);
        // SAFETY: as above.
        unsafe { pool.submit_indexed(&group, &drops, 1, nasty_index) };
        while !group.is_done() {
            std::thread::yield_now();
        }
        let caught = catch_unwind(AssertUnwindSafe(move || {
            let _group = group;
            panic!("{PLANTED} unwinding past a group");
        }));
        assert!(caught.is_err());
        dropped_once_except(drops, None, "group dropped while unwinding");
    }
}

fn pool_for(workers: usize) -> ThreadPool {
    ThreadPool::builder().workers(workers).build()
}

/// One task per level, each opening the next level's scope from inside a task.
fn descend(pool: &ThreadPool, depth: usize, levels: &AtomicUsize) {
    pool.scope(|s| {
        s.spawn(move |_| {
            levels.fetch_add(1, SeqCst);
            if depth > 1 {
                descend(pool, depth - 1, levels);
            }
        });
    });
}

/// Scopes nested 1,000 deep, each opened from a task of the one above: no deadlock, every level
/// ran once. A level costs ~2.7 KiB of stack inline and ~4 KiB on a worker in a debug build,
/// so 1,000 levels overflow the default 2 MiB thread stacks there: the caller and the workers
/// get 16 MiB (`ThreadPoolBuilder::stack_size`), as a program nesting this deep must.
#[test]
fn scopes_nested_a_thousand_deep_from_tasks() {
    const STACK: usize = 16 << 20;
    let caller = std::thread::Builder::new().stack_size(STACK);
    let nest = || {
        for workers in [1, 2, 8, 16] {
            let pool = ThreadPool::builder()
                .workers(workers)
                .stack_size(STACK)
                .build();
            let levels = AtomicUsize::new(0);
            descend(&pool, 1000, &levels);
            assert_eq!(levels.load(SeqCst), 1000, "workers = {workers}");
        }
    };
    caller.spawn(nest).unwrap().join().unwrap();
}

/// Scopes of pool A opened from tasks of pool B and back, three levels, with pools of
/// different sizes (a worker of the large pool helping the small one must not use its own
/// index there): every task runs once and each pool's metrics count exactly its own tasks.
#[test]
fn scopes_across_two_pools_in_both_directions() {
    for (wa, wb) in [(8, 2), (2, 8), (1, 4), (3, 1)] {
        let (a, b) = (pool_for(wa), pool_for(wb));
        let (on_a, on_b) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let bad_index = AtomicUsize::new(0);
        let check = || {
            // "Its pool" is the pool whose worker this thread is; never past the largest one.
            if current_worker_index().is_some_and(|i| i >= wa.max(wb) - 1) {
                bad_index.fetch_add(1, SeqCst);
            }
        };
        a.scope(|sa| {
            for _ in 0..8 {
                sa.spawn(|_| {
                    on_a.fetch_add(1, SeqCst);
                    check();
                    b.scope(|sb| {
                        for _ in 0..4 {
                            sb.spawn(|_| {
                                on_b.fetch_add(1, SeqCst);
                                check();
                                a.scope(|sa2| {
                                    sa2.spawn(|_| {
                                        on_a.fetch_add(1, SeqCst);
                                        check();
                                    });
                                });
                            });
                        }
                    });
                });
            }
        });
        assert_eq!(on_a.load(SeqCst), 8 + 32, "pools {wa}/{wb}");
        assert_eq!(on_b.load(SeqCst), 32, "pools {wa}/{wb}");
        assert_eq!(bad_index.load(SeqCst), 0, "pools {wa}/{wb}");
        assert_eq!(
            a.metrics().total().tasks_run,
            40,
            "pools {wa}/{wb}: A's tasks"
        );
        assert_eq!(
            b.metrics().total().tasks_run,
            32,
            "pools {wa}/{wb}: B's tasks"
        );
        assert_eq!(a.metrics().workers.len(), wa);
        assert_eq!(b.metrics().workers.len(), wb);
    }
}

/// `Scope` is `Send + Sync`: threads that are no pool's workers, started inside a task, spawn
/// into the scope; the scope waits for all of it.
#[test]
fn foreign_threads_spawn_into_a_scope() {
    for workers in [1, 2, 4] {
        let pool = pool_for(workers);
        let runs = AtomicUsize::new(0);
        let foreign = AtomicUsize::new(0);
        pool.scope(|s: &Scope<'_, '_>| {
            s.spawn(|s| {
                std::thread::scope(|t| {
                    for _ in 0..4 {
                        t.spawn(|| {
                            if current_worker_index().is_none() {
                                foreign.fetch_add(1, SeqCst);
                            }
                            for _ in 0..25 {
                                s.spawn(|_| {
                                    runs.fetch_add(1, SeqCst);
                                });
                            }
                        });
                    }
                });
            });
        });
        assert_eq!(runs.load(SeqCst), 100, "workers = {workers}");
        assert_eq!(foreign.load(SeqCst), 4, "a fresh thread is no worker");
    }
}

/// A pool kept where one of its own tasks can take it.
struct Holder {
    pool: Mutex<Option<ThreadPool>>,
    dropper: Mutex<Option<Option<usize>>>,
}

fn drop_own_pool(holder: &Holder, _: usize) {
    let pool = holder.pool.lock().unwrap().take();
    *holder.dropper.lock().unwrap() = Some(current_worker_index());
    drop(pool);
}

fn count_one(hits: &AtomicUsize, _: usize) {
    hits.fetch_add(1, SeqCst);
}

/// A task that drops its own pool (the pool reached through a `Mutex`, as safe code allows):
/// no hang, no panic, and every task queued before still runs exactly once.
#[test]
fn a_task_drops_its_own_pool() {
    for workers in [2, 4] {
        let holder: &'static Holder = Box::leak(Box::new(Holder {
            pool: Mutex::new(Some(pool_for(workers))),
            dropper: Mutex::new(None),
        }));
        let hits: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
        let (work, dropper) = (TaskGroup::new(), TaskGroup::new());
        {
            let guard = holder.pool.lock().unwrap();
            let pool = guard.as_ref().unwrap();
            // SAFETY: the jobs are 'static; the groups are not moved, and we wait for both
            // below (the tasks run on the pool's own workers, since this thread never helps).
            unsafe {
                pool.submit_indexed(&work, hits, 2000, count_one);
                pool.submit_indexed(&dropper, holder, 1, drop_own_pool);
            }
        }
        while !(dropper.is_done() && work.is_done()) {
            std::thread::yield_now();
        }
        let ran_on = holder
            .dropper
            .lock()
            .unwrap()
            .expect("the dropping task ran");
        assert!(ran_on.is_some(), "it ran on one of the pool's workers");
        assert!(holder.pool.lock().unwrap().is_none());
        assert_eq!(
            dropper.panicked(),
            0,
            "workers = {workers}: dropping the pool from its own task panicked"
        );
        assert_eq!(hits.load(SeqCst), 2000, "workers = {workers}");
    }
}

fn never(_: &(), _: usize) {
    panic!("{PLANTED} a zero-count batch ran an index");
}

/// Zero counts: nothing runs, nothing is waited for, the group stays done.
#[test]
fn zero_counts_run_nothing() {
    quiet();
    for workers in [1, 2, 8] {
        let pool = pool_for(workers);
        let ran = AtomicUsize::new(0);
        for grain in [1, 7, usize::MAX] {
            pool.parallel_for(0, grain, |_| {
                ran.fetch_add(1, SeqCst);
            });
        }
        pool.scope(|s| s.spawn_indexed(&(), 0, never));
        let group = TaskGroup::new();
        // SAFETY: nothing is queued; `group` outlives the wait.
        unsafe { pool.submit_indexed(&group, &(), 0, never) };
        assert!(group.is_done());
        group.wait(&pool);
        assert_eq!(ran.load(SeqCst), 0);
        assert_eq!(pool.metrics().total().tasks_run, 0, "workers = {workers}");
    }
}

/// Blocks until `gate` opens (a task that stays pending while the test acts).
fn hold(gate: &AtomicBool, _: usize) {
    while !gate.load(SeqCst) {
        std::thread::yield_now();
    }
}

/// A count that overflows the group's pending counter is refused with a panic *before*
/// anything changes: the group is not corrupted (never "done" while a task is pending, never
/// pending forever), and the safe `Scope::spawn_indexed` re-raises instead of hanging.
#[test]
fn a_count_that_overflows_the_group_is_refused_cleanly() {
    quiet();
    let pool = pool_for(2);
    let gate: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    for huge in [usize::MAX, usize::MAX / 2 + 1, 1 << 63] {
        let group = TaskGroup::new();
        // SAFETY: `gate` is 'static; `group` is waited for (or, on failure, leaked) below.
        unsafe { pool.submit_indexed(&group, gate, 1, hold) };
        let refused = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: as above; `never` is never called (the count is refused).
            unsafe { pool.submit_indexed(&group, &(), huge, never) };
        }));
        let pending_still = !group.is_done();
        gate.store(true, SeqCst);
        let done_after = (0..1_000_000).any(|_| {
            std::thread::yield_now();
            group.is_done()
        });
        let ok = refused.is_err() && pending_still && done_after;
        if !ok {
            // A corrupted counter would make the group's drop block forever.
            std::mem::forget(group);
        }
        assert!(refused.is_err(), "count {huge} was accepted");
        assert!(
            pending_still,
            "count {huge}: group read done with a task pending"
        );
        assert!(done_after, "count {huge}: group never finished");
        gate.store(false, SeqCst);
    }
    let caught = catch_unwind(AssertUnwindSafe(|| {
        pool.scope(|s| s.spawn_indexed(&(), usize::MAX, never));
    }))
    .expect_err("a scope of usize::MAX tasks was accepted");
    let message = caught.downcast_ref::<String>().expect("a formatted panic");
    assert!(message.contains("counter overflow"), "{message}");
}

/// A body that panics on one index of a `count` far larger than the grain: every other index
/// ran exactly once and the re-raised payload is that index's.
#[test]
fn parallel_for_one_bad_index_among_many() {
    quiet();
    const COUNT: usize = 100_003;
    for workers in [2, 8] {
        let pool = pool_for(workers);
        for bad in [0, 4_999, COUNT - 1] {
            let runs: Vec<AtomicUsize> = (0..COUNT).map(|_| AtomicUsize::new(0)).collect();
            let caught = catch_unwind(AssertUnwindSafe(|| {
                pool.parallel_for(COUNT, 17, |i| {
                    runs[i].fetch_add(1, SeqCst);
                    assert_ne!(i, bad, "{PLANTED} bad index");
                });
            }))
            .expect_err("index panicked");
            let message = caught.downcast_ref::<String>().expect("assert_ne! message");
            assert!(message.contains("bad index"), "{message}");
            let wrong = runs.iter().filter(|r| r.load(SeqCst) != 1).count();
            assert_eq!(wrong, 0, "workers {workers}, bad {bad}");
        }
    }
}

/// 0 workers is "auto"; `usize::MAX` is clamped to `MAX_WORKERS` (documented), and such a pool
/// works: every background worker has its own index below `MAX_WORKERS - 1`.
#[test]
fn degenerate_worker_counts_are_resolved_as_documented() {
    let detected = std::thread::available_parallelism().map_or(1, usize::from);
    assert_eq!(
        ThreadPool::new(0).workers(),
        resolve_worker_count(0, detected)
    );
    let pool = ThreadPool::builder()
        .workers(usize::MAX)
        .stack_size(128 * 1024)
        .build();
    assert_eq!(pool.workers(), MAX_WORKERS);
    assert_eq!(pool.metrics().workers.len(), MAX_WORKERS);
    let seen: Vec<AtomicUsize> = (0..MAX_WORKERS).map(|_| AtomicUsize::new(0)).collect();
    pool.scope(|s| {
        for _ in 0..2000 {
            s.spawn(|_| {
                let slot = current_worker_index().unwrap_or(MAX_WORKERS - 1);
                seen[slot].fetch_add(1, SeqCst);
            });
        }
    });
    let total: usize = seen.iter().map(|c| c.load(SeqCst)).sum();
    assert_eq!(total, 2000);
    let per_slot: Vec<u64> = pool.metrics().workers.iter().map(|w| w.tasks_run).collect();
    let seen: Vec<u64> = seen.iter().map(|c| c.load(SeqCst) as u64).collect();
    assert_eq!(
        per_slot, seen,
        "each task counted in the slot of the thread that ran it"
    );
}

/// `current_worker_index` is `None` outside any pool, on an inline pool's tasks, and on the
/// caller while it helps; on a background worker it is that worker's index; thread-locals set
/// inside tasks stay on the thread that ran them.
#[test]
fn current_worker_index_inside_and_outside_tasks() {
    thread_local! {
        static MARK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }
    assert_eq!(current_worker_index(), None);
    let inline = pool_for(1);
    inline.scope(|s| s.spawn(|_| assert_eq!(current_worker_index(), None)));
    let pool = pool_for(4);
    let caller = std::thread::current().id();
    let wrong = AtomicUsize::new(0);
    pool.scope(|s| {
        for _ in 0..500 {
            s.spawn(|_| {
                let index = current_worker_index();
                let on_caller = std::thread::current().id() == caller;
                let worker_name = std::thread::current()
                    .name()
                    .and_then(|n| n.strip_prefix("freyr-worker-"))
                    .and_then(|n| n.parse::<usize>().ok());
                if on_caller != index.is_none() || (!on_caller && index != worker_name) {
                    wrong.fetch_add(1, SeqCst);
                }
                MARK.with(|m| m.set(m.get() + 1));
            });
        }
    });
    assert_eq!(wrong.load(SeqCst), 0);
    assert_eq!(current_worker_index(), None, "helping left no trace");
    let here = MARK.with(std::cell::Cell::get) as u64;
    let external = *pool.metrics().workers.last().unwrap();
    assert_eq!(
        here, external.tasks_run,
        "tasks run here are counted in the caller slot"
    );
    drop(pool);
    assert_eq!(current_worker_index(), None);
}

/// Metrics read in a loop on another thread while work runs: every counter of every slot only
/// grows between snapshots, and once quiet the total is exact.
#[test]
fn metrics_read_while_work_runs_are_monotonic_and_exact_when_quiet() {
    let pool = pool_for(4);
    let done = AtomicBool::new(false);
    let ran = AtomicUsize::new(0);
    std::thread::scope(|t| {
        let reader = t.spawn(|| {
            let mut last = pool.metrics();
            let mut snapshots = 0usize;
            while !done.load(SeqCst) || snapshots < 10 {
                let now = pool.metrics();
                assert_eq!(now.workers.len(), 4);
                for (old, new) in last.workers.iter().zip(&now.workers) {
                    assert!(new.tasks_run >= old.tasks_run, "{old:?} -> {new:?}");
                    assert!(new.tasks_stolen >= old.tasks_stolen, "{old:?} -> {new:?}");
                    assert!(new.parks >= old.parks && new.wakeups >= old.wakeups);
                    assert!(new.busy >= old.busy, "{old:?} -> {new:?}");
                }
                // This thread is no worker: it reads the shared external slot.
                assert!(pool.tasks_run_here() >= last.workers[3].tasks_run);
                last = now;
                snapshots += 1;
            }
        });
        for _ in 0..200 {
            pool.scope(|s| {
                for _ in 0..50 {
                    s.spawn(|_| {
                        ran.fetch_add(1, SeqCst);
                    });
                }
            });
        }
        done.store(true, SeqCst);
        reader.join().unwrap();
    });
    assert_eq!(ran.load(SeqCst), 200 * 50);
    assert_eq!(pool.metrics().total().tasks_run, 200 * 50);
}
