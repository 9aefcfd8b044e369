//! Loom models of parking, waking and shutdown (PROTOCOL.md "Park and wake"
//! and "Shutdown").
#![cfg(freyr_loom)]

use freyr_loom_tests::{Tally, check, hit, require};
use freyr_sched::{TaskGroup, ThreadPool};
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread::Thread;

/// A task that signals the submitting thread, which blocks without helping.
struct Signal {
    runs: AtomicUsize,
    done: AtomicBool,
    submitter: Thread,
}

fn signal(job: &Signal, _index: usize) {
    job.runs.fetch_add(1, Ordering::Relaxed);
    job.done.store(true, Ordering::Release);
    job.submitter.unpark();
}

/// Model 2. The submitter does not help: only the worker can run the task,
/// so a lost wake-up is a deadlock. Mutant `no_recheck_before_sleep` makes it
/// fail.
#[test]
fn a_worker_parking_during_a_submission_never_misses_the_wake_up() {
    check(|| {
        let job = Signal {
            runs: AtomicUsize::new(0),
            done: AtomicBool::new(false),
            submitter: loom::thread::current(),
        };
        let group = TaskGroup::new();
        let pool = ThreadPool::new(2);
        // SAFETY: `job` and `group` outlive the wait below.
        unsafe { pool.submit_indexed(&group, &job, 1, signal) };
        while !job.done.load(Ordering::Acquire) {
            loom::thread::park();
        }
        group.wait(&pool);
        let runs = job.runs.load(Ordering::Relaxed);
        require(runs == 1, || {
            format!("the task must run exactly once, ran {runs} times")
        });
    });
}

/// Model 9. Dropping the pool while its worker parks (or is about to) must
/// wake it, let it drain the queued task, and join it. Mutant
/// `shutdown_flag_after_notify` makes it fail.
#[test]
fn shutdown_racing_a_parked_worker_drains_and_joins_every_thread() {
    check(|| {
        let tally = Tally::new(1);
        let group = TaskGroup::new();
        let pool = ThreadPool::new(2);
        // SAFETY: `tally` and `group` outlive the pool, whose drop drains it.
        unsafe { pool.submit_indexed(&group, &tally, 1, hit) };
        drop(pool);
        require(group.is_done(), || {
            "dropping the pool must drain queued tasks".into()
        });
        tally.assert_each_ran_once();
    });
}

/// Model 11. An oversubscribed pool (three threads on loom's two cores) keeps
/// at most one worker awake: a submission wakes a sleeper only while none is
/// awake. Whatever the two workers are doing when the task is pushed (both
/// asleep, one running or on its way to park while the other sleeps), the
/// task runs (the submitter does not help, so a lost wake-up is a deadlock),
/// and dropping the pool drains and joins both. Mutant
/// `cap_counts_sleepers_awake` makes it fail.
#[test]
fn an_oversubscribed_pool_with_one_worker_awake_runs_every_push_and_drains() {
    check(|| {
        let job = Signal {
            runs: AtomicUsize::new(0),
            done: AtomicBool::new(false),
            submitter: loom::thread::current(),
        };
        let group = TaskGroup::new();
        let pool = ThreadPool::new(3);
        // Yields are free switches for loom (not preemptions): they let both
        // workers reach their park, or one of them, before the push, within
        // the preemption bound.
        loom::thread::yield_now();
        loom::thread::yield_now();
        // SAFETY: `job` and `group` outlive the wait below.
        unsafe { pool.submit_indexed(&group, &job, 1, signal) };
        while !job.done.load(Ordering::Acquire) {
            loom::thread::park();
        }
        group.wait(&pool);
        drop(pool);
        let runs = job.runs.load(Ordering::Relaxed);
        require(runs == 1, || {
            format!("the task must run exactly once, ran {runs} times")
        });
    });
}
