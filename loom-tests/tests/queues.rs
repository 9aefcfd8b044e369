//! Loom models of the queues: pop vs steal, overflow, and range splitting
//! (PROTOCOL.md "Submit", "Find" and "Run").
#![cfg(freyr_loom)]

use freyr_loom_tests::{Tally, check, hit, require};
use freyr_sched::{TaskGroup, ThreadPool};
use freyr_sync::Queue;
use loom::sync::Arc;

/// Model 3. Owner pop and thief steal are the same `pop` on the same queue
/// (there is no owner-only end). Forced here on the queue itself: one thread
/// pushes a task while the owner and a thief both pop; afterwards whatever
/// is left is drained. The task is taken exactly once, and its taker reads
/// what the pusher wrote (loom's `UnsafeCell` reports a read of the slot not
/// ordered after its write). Mutants `pop_not_atomic` and
/// `queue_publish_relaxed` make it fail.
#[test]
fn owner_pop_and_thief_steal_of_the_last_task_take_it_exactly_once() {
    check(|| {
        let queue = Arc::new(Queue::<usize>::new(2));
        let pusher = {
            let queue = Arc::clone(&queue);
            loom::thread::spawn(move || {
                require(queue.push(7).is_ok(), || {
                    "a push into an empty queue must succeed".into()
                });
            })
        };
        let thief = {
            let queue = Arc::clone(&queue);
            loom::thread::spawn(move || queue.pop())
        };
        let owner = queue.pop();
        let stolen = thief.join().unwrap();
        pusher.join().unwrap();
        let drained = queue.pop();
        let taken: Vec<usize> = [owner, stolen, drained].into_iter().flatten().collect();
        require(taken == [7], || {
            format!("the task must be taken exactly once, intact; taken: {taken:?}")
        });
        require(queue.is_empty(), || "the queue must end empty".into());
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

/// Model 8. Three indices queued as one range. Whenever the thread running
/// it sees the other thread asleep without a wake-up (loom explores those
/// interleavings), it splits off the upper half, which the other thread
/// then takes (and may split again). Every index runs exactly once, whoever
/// splits. Mutant `split_overlap` makes it fail.
#[test]
fn a_range_split_while_the_other_thread_sleeps_runs_each_index_once() {
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
