//! Loom models of task-group completion, waiting and panic delivery
//! (PROTOCOL.md "Group completion" and "Panic delivery").
#![cfg(freyr_loom)]

use std::panic::{self, AssertUnwindSafe};

use freyr_loom_tests::{EXPECTED_PANIC, Tally, check, hit, require};
use freyr_sched::{IndexedJob, TaskGroup, ThreadPool};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering};

/// Model 1. Two tasks submitted one by one into one group, so the counter
/// goes 2, 1, 0 through two separate decrements (on one thread or two): the
/// wait returns only after both ran, and sees what both did. The decrements
/// form a release sequence that the waiter's acquire reads from; the tallies
/// are relaxed counters, so a missing edge shows up as a stale zero. Mutants
/// `decrement_before_run`, `decrement_relaxed` and `is_done_relaxed` make it
/// fail.
#[test]
fn the_wait_returns_after_every_task_and_sees_their_effects() {
    check(|| {
        let first = Tally::new(1);
        let second = Tally::new(1);
        let group = TaskGroup::new();
        let pool = ThreadPool::new(2);
        // SAFETY: the tallies and `group` outlive the wait (and the pool,
        // which is declared last so it is dropped first).
        unsafe {
            pool.submit_indexed(&group, &first, 1, hit);
            pool.submit_indexed(&group, &second, 1, hit);
        }
        group.wait(&pool);
        first.assert_each_ran_once();
        second.assert_each_ran_once();
    });
}

/// Model 5. Mutant `increment_after_publish` makes it fail.
#[test]
fn a_task_spawned_into_its_own_group_is_covered_by_the_wait() {
    check(|| {
        let parent_done = AtomicBool::new(false);
        let child_done = AtomicBool::new(false);
        let pool = ThreadPool::new(2);
        pool.scope(|s| {
            s.spawn(|s| {
                s.spawn(|_| child_done.store(true, Ordering::Relaxed));
                parent_done.store(true, Ordering::Relaxed);
            });
        });
        require(parent_done.load(Ordering::Relaxed), || {
            "scope returned before the parent task finished".into()
        });
        require(child_done.load(Ordering::Relaxed), || {
            "scope returned before the child task ran".into()
        });
    });
}

/// Model 6. Mutant `no_wake_on_group_done` makes it fail.
#[test]
fn two_groups_waited_on_two_threads_each_return_after_their_own_work() {
    check(|| {
        let pool = Arc::new(ThreadPool::new(2));
        let other = {
            let pool = Arc::clone(&pool);
            loom::thread::spawn(move || {
                let tally = Tally::new(1);
                let group = TaskGroup::new();
                // SAFETY: `tally` and `group` outlive the wait.
                unsafe { pool.submit_indexed(&group, &tally, 1, hit) };
                group.wait(&pool);
                tally.assert_each_ran_once();
            })
        };
        let tally = Tally::new(1);
        let group = TaskGroup::new();
        // SAFETY: `tally` and `group` outlive the wait.
        unsafe { pool.submit_indexed(&group, &tally, 1, hit) };
        group.wait(&pool);
        tally.assert_each_ran_once();
        other.join().unwrap();
    });
}

/// Index 0 panics, the others record their run. An [`IndexedJob`], so this
/// model goes through `submit_job`'s monomorphised batch runner (the other
/// models use `submit_indexed`'s per-index function; the protocol is the same).
struct PanicOnZero(Tally);

impl IndexedJob for PanicOnZero {
    fn run(&self, index: usize) {
        if index == 0 {
            panic!("{}", EXPECTED_PANIC);
        }
        self.0.hit(index);
    }
}

/// Model 7. Mutant `no_decrement_on_panic` makes it fail.
#[test]
fn a_panicking_task_is_re_raised_by_the_wait_and_the_counter_reaches_zero() {
    check(|| {
        let job = PanicOnZero(Tally::new(2));
        let group = TaskGroup::new();
        let pool = ThreadPool::new(2);
        // SAFETY: `job` and `group` outlive the wait.
        unsafe { pool.submit_job(&group, &job, 2) };
        let raised = panic::catch_unwind(AssertUnwindSafe(|| group.wait(&pool)));
        let payload = raised.err();
        let message = payload
            .as_ref()
            .and_then(|p| p.downcast_ref::<String>())
            .map(String::as_str);
        require(message == Some(EXPECTED_PANIC), || {
            "the wait must re-raise the task's own panic payload".into()
        });
        require(group.is_done(), || {
            "the panicking task must still complete".into()
        });
        let counts = job.0.counts();
        require(counts == [0, 1], || {
            format!("the other task must run exactly once, got {counts:?}")
        });
        require(group.panicked() == 0, || {
            "the wait must reset the group".into()
        });
    });
}
