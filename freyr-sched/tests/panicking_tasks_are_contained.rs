//! One task in ten panics, on an oversubscribed pool: the wait re-raises one of the planted
//! panics on the waiting thread, every other task (and every panicking task up to its panic)
//! still ran exactly once, the group counts the panics, and the pool and the group stay usable.

mod common;

use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use common::{OVERSUBSCRIBED, Tally};
use freyr_sched::{TaskGroup, ThreadPool};

/// Tasks a submission: a tenth of them panic. ThreadSanitizer (`--cfg freyr_tsan`, set by CI's
/// TSan step) runs a tenth of that: each unwind costs it milliseconds, and 1,000 panics a
/// submission still race the wait and the counter.
const TASKS: usize = if cfg!(freyr_tsan) { 10_000 } else { 100_000 };
const PLANTED: &str = "planted panic";

/// Silences the planted panics (ten thousand messages on stderr otherwise) and nothing else.
fn quiet_planted_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let planted = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .is_some_and(|m| m.starts_with(PLANTED));
            if !planted {
                default(info);
            }
        }));
    });
}

/// Counts the run, then panics for every tenth index.
fn hit_or_panic(tally: &Tally, index: usize) {
    tally.hit(index);
    if index % 10 == 3 {
        panic!("{PLANTED} {index}");
    }
}

fn hit(tally: &Tally, index: usize) {
    tally.hit(index);
}

/// Asserts that `result` is an unwind carrying one of the planted panics of `0..len`, and
/// returns its index.
#[track_caller]
fn planted_index(result: std::thread::Result<()>, len: usize) -> usize {
    let payload = result.expect_err("the wait returned normally although tasks panicked");
    let message = payload
        .downcast_ref::<String>()
        .expect("the re-raised payload is the task's own String payload");
    let index: usize = message
        .strip_prefix(PLANTED)
        .and_then(|rest| rest.trim().parse().ok())
        .unwrap_or_else(|| panic!("unexpected panic payload {message:?}"));
    assert!(index < len && index % 10 == 3, "payload {message:?}");
    index
}

/// The chunk path: panics are counted in the group, the wait re-raises the first one, the
/// group is reset by that wait and can be used again.
fn chunk_path_contains_panics(workers: usize) {
    quiet_planted_panics();
    let pool = ThreadPool::new(workers);
    let tally = Tally::new(TASKS);
    let group = TaskGroup::new();
    // SAFETY: `tally` and `group` outlive `group.wait` below and are not moved before it.
    unsafe { pool.submit_indexed(&group, &tally, TASKS, hit_or_panic) };
    // Let the workers finish on their own, so the panic count is complete before the wait.
    while !group.is_done() {
        std::thread::yield_now();
    }
    assert_eq!(group.panicked(), TASKS / 10);
    let result = panic::catch_unwind(AssertUnwindSafe(|| group.wait(&pool)));
    planted_index(result, TASKS);
    tally.assert_exactly_once();
    assert_eq!(group.panicked(), 0, "the re-raising wait resets the group");

    // The same group and pool run a clean batch: the wait returns normally.
    let clean = Tally::new(TASKS);
    // SAFETY: `clean` and `group` outlive `group.wait` below.
    unsafe { pool.submit_indexed(&group, &clean, TASKS, hit) };
    group.wait(&pool);
    clean.assert_exactly_once();
    assert_eq!(group.panicked(), 0);
}

#[test]
fn chunk_path_tenth_of_tasks_panic_oversubscribed() {
    chunk_path_contains_panics(OVERSUBSCRIBED);
}

#[test]
fn chunk_path_tenth_of_tasks_panic_inline() {
    chunk_path_contains_panics(1);
}

#[test]
fn chunk_path_wait_helps_while_tasks_panic() {
    // Wait at once, so the waiting thread itself runs (and catches) some of the panicking tasks.
    quiet_planted_panics();
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    for _ in 0..5 {
        let tally = Tally::new(TASKS);
        let group = TaskGroup::new();
        // SAFETY: `tally` and `group` outlive `group.wait` below.
        unsafe { pool.submit_indexed(&group, &tally, TASKS, hit_or_panic) };
        let result = panic::catch_unwind(AssertUnwindSafe(|| group.wait(&pool)));
        planted_index(result, TASKS);
        tally.assert_exactly_once();
    }
}

#[test]
fn scope_tenth_of_tasks_panic() {
    quiet_planted_panics();
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    for _ in 0..3 {
        let tally = Tally::new(TASKS);
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.scope(|s| {
                for i in 0..TASKS {
                    let tally = &tally;
                    s.spawn(move |_| hit_or_panic(tally, i));
                }
            });
        }));
        planted_index(result, TASKS);
        tally.assert_exactly_once();
    }
    // The pool still runs scopes normally.
    let clean = Tally::new(1000);
    pool.scope(|s| {
        for i in 0..1000 {
            let clean = &clean;
            s.spawn(move |_| {
                clean.hit(i);
            });
        }
    });
    clean.assert_exactly_once();
}

#[test]
fn parallel_for_tenth_of_indices_panic() {
    // A panicking index does not stop the others: every index runs exactly once (grain 1 and a
    // grain that puts several panics in one claim), the first panic is re-raised on the caller,
    // and the pool stays usable.
    quiet_planted_panics();
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    for round in 0..20 {
        let tally = Tally::new(TASKS);
        let grain = if round % 2 == 0 { 1 } else { 97 };
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.parallel_for(TASKS, grain, |i| hit_or_panic(&tally, i));
        }));
        let index = planted_index(result, TASKS);
        tally.assert_exactly_once();
        assert_eq!(tally.count(index), 1, "the re-raised index ran");
    }
    // The inline paths (a pool of 1; count <= grain) keep the same contract.
    for (workers, grain) in [(1, 1), (OVERSUBSCRIBED, TASKS)] {
        let inline_pool = ThreadPool::new(workers);
        let tally = Tally::new(TASKS);
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            inline_pool.parallel_for(TASKS, grain, |i| hit_or_panic(&tally, i));
        }));
        let index = planted_index(result, TASKS);
        assert_eq!(index, 3, "inline, the first planted panic is re-raised");
        tally.assert_exactly_once();
    }
    // The pool is still usable, by every kind of work.
    let clean = Tally::new(TASKS);
    pool.parallel_for(TASKS, 64, |i| {
        clean.hit(i);
    });
    clean.assert_exactly_once();
    let group = TaskGroup::new();
    let clean = Tally::new(TASKS);
    // SAFETY: `clean` and `group` outlive `group.wait` below.
    unsafe { pool.submit_indexed(&group, &clean, TASKS, hit) };
    group.wait(&pool);
    clean.assert_exactly_once();
}

#[test]
fn a_panic_in_the_scope_body_still_waits_for_spawned_tasks() {
    quiet_planted_panics();
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let tally = Tally::new(TASKS);
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        pool.scope(|s| {
            for i in 0..TASKS {
                let tally = &tally;
                s.spawn(move |_| {
                    tally.hit(i);
                });
            }
            panic!("{PLANTED} 3");
        });
    }));
    assert_eq!(planted_index(result, TASKS), 3);
    // Every task spawned before the body panicked ran before `scope` unwound.
    tally.assert_exactly_once();
}
