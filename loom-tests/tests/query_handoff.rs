//! Loom models of freyr-query's launch hand-off (`freyr-query/src/launch/handoff.rs`;
//! PROTOCOL.md "The query launch hand-off"): per-task output slots handed to the retiring
//! thread through the task group's wait, and the countdown whose last finisher stamps the
//! launch's end.
#![cfg(freyr_loom)]

use freyr_loom_tests::{check, require};
use freyr_query::loom_handoff::{Countdown, TaskSlots};
use freyr_sched::{TaskGroup, ThreadPool};
use loom::cell::UnsafeCell;
use loom::sync::Arc;

/// A task of the slot model: writes `index + 1` into its own slot, as a reduction task writes
/// its partial or a context task its command buffer.
fn write_own_slot(slots: &TaskSlots<usize>, index: usize) {
    // SAFETY: the pool runs task `index` exactly once, on one thread; the slots are read only
    // after the group's wait.
    unsafe {
        slots.with_mut(index, |slot| {
            require(*slot == 0, || {
                format!("task {index} found its slot already written (two writers on one slot)")
            });
            *slot = index + 1;
        });
    }
}

/// Query model 1. Two tasks of one launch run on a pool of two (the caller helps while it
/// waits), each writing its own slot; the retiring thread waits for the group and then takes
/// the slots. It must see each task's value exactly once, in its own slot; loom's `UnsafeCell`
/// also reports any slot access not ordered before the retiring read. Mutant
/// `handoff_slot_index_shift` (a task writes its neighbour's slot) makes it fail.
#[test]
fn every_task_slot_reaches_the_retiring_thread_exactly_once() {
    check(|| {
        let slots = TaskSlots::<usize>::new(2);
        let group = TaskGroup::new();
        let pool = ThreadPool::new(2);
        // SAFETY: `slots` and `group` outlive the wait, and the slots are moved only after it.
        unsafe { pool.submit_indexed(&group, &slots, 2, write_own_slot) };
        group.wait(&pool);
        let values = slots.into_vec();
        require(values == [1, 2], || {
            format!("the retiring thread must see task i's value in slot i, got {values:?}")
        });
    });
}

/// What the countdown model's threads share: the countdown, and each task's "finished" mark,
/// a plain cell (loom checks every read of it against its write).
struct Launch {
    countdown: Countdown,
    finished: [UnsafeCell<bool>; 3],
}

/// Finishes task `task`: marks it finished, then counts it down. The stamp closure, run only by
/// the last finisher, reads every task's mark: a mark it does not happen-after is a loom
/// causality violation, and a mark not yet written a stamp taken before the launch ended.
fn finish_task(launch: &Launch, task: usize) -> bool {
    launch.finished[task].with_mut(|mark| {
        // SAFETY: only this thread writes `finished[task]`, before its countdown; the stamp
        // closure reads it after (loom reports the read if it is not ordered after this write).
        unsafe { *mark = true }
    });
    launch.countdown.finish(1, || {
        for (i, mark) in launch.finished.iter().enumerate() {
            // SAFETY: a read; loom reports it if it races the write.
            let done = mark.with(|mark| unsafe { *mark });
            require(done, || {
                format!("task {task} stamped the launch's end before task {i} finished")
            });
        }
        7
    })
}

/// Query model 2. Three tasks of a timed launch finish on three threads (two spawned, one the
/// main thread). Exactly one of them must be the last finisher, its stamp must come after
/// every task finished (the end is no earlier than any task's end), and the stamp must be
/// there for the retiring thread. Mutants `handoff_countdown_relaxed` (the decrement orders
/// nothing) and `handoff_last_check_off_by_one` (the next-to-last finisher stamps) make it
/// fail.
#[test]
fn the_last_finisher_is_unique_and_stamps_the_end_after_every_task() {
    check(|| {
        let launch = Arc::new(Launch {
            countdown: Countdown::new(3),
            finished: [(); 3].map(|()| UnsafeCell::new(false)),
        });
        let threads: Vec<_> = (0..2)
            .map(|task| {
                let launch = Arc::clone(&launch);
                loom::thread::spawn(move || finish_task(&launch, task))
            })
            .collect();
        let mut lasts = usize::from(finish_task(&launch, 2));
        for thread in threads {
            lasts += usize::from(thread.join().expect("a finishing thread panicked"));
        }
        require(lasts == 1, || {
            format!("exactly one task must finish last, {lasts} believed they did")
        });
        let end = launch.countdown.end();
        require(end == Some(7), || {
            format!("the retiring thread must see the last finisher's stamp, got {end:?}")
        });
    });
}
