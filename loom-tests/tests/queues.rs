//! Loom models of the queues: pop vs steal, overflow, and range splitting
//! (PROTOCOL.md "Submit", "Find" and "Run").
#![cfg(freyr_loom)]

use freyr_loom_tests::{Tally, check, hit};
use freyr_sched::{TaskGroup, ThreadPool};

/// Model 3. The single task sits in the worker's own queue: the worker pops
/// it while the waiting thread steals it. Mutant `pop_not_atomic` makes it
/// fail.
#[test]
fn owner_pop_and_thief_steal_of_the_last_task_take_it_exactly_once() {
    check(|| {
        let tally = Tally::new(1);
        let group = TaskGroup::new();
        let pool = ThreadPool::new(2);
        // SAFETY: `tally` and `group` outlive the wait.
        unsafe { pool.submit_indexed(&group, &tally, 1, hit) };
        group.wait(&pool);
        tally.assert_each_ran_once();
    });
}

/// Model 4. Three spawns into one queue of capacity 2: at least one goes
/// through the overflow queue unless the worker already popped. Mutant
/// `overflow_drop` makes it fail.
#[test]
fn a_full_queue_overflows_without_losing_a_task() {
    check(|| {
        let tally = Tally::new(3);
        let pool = ThreadPool::new(2);
        pool.scope(|s| {
            for index in 0..3 {
                let tally = &tally;
                s.spawn(move |_| tally.hit(index));
            }
        });
        tally.assert_each_ran_once();
    });
}

/// Model 8. Three indices queued as one range: whoever runs it while the
/// other thread sleeps splits off the upper half, which the other steals
/// (and may split again). Mutant `split_overlap` makes it fail.
#[test]
fn a_helping_waiter_and_a_stealing_worker_never_run_a_task_twice() {
    check(|| {
        let tally = Tally::new(3);
        let group = TaskGroup::new();
        let pool = ThreadPool::new(2);
        // SAFETY: `tally` and `group` outlive the wait.
        unsafe { pool.submit_indexed(&group, &tally, 3, hit) };
        group.wait(&pool);
        tally.assert_each_ran_once();
    });
}
