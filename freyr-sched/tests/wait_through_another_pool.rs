//! `TaskGroup::wait` through a pool other than the one the tasks were submitted to (or for
//! tasks submitted to two pools) returns once the group is done, as its rustdoc says, instead of
//! sleeping on a pool that the last task's end never wakes. Each wait runs on its own thread
//! under a watchdog, so a wait that sleeps for ever fails the test instead of hanging it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::time::Duration;

use freyr_sched::{TaskGroup, ThreadPool};

/// A task that stays pending until `gate` opens, then counts itself.
struct Held {
    gate: AtomicBool,
    ran: AtomicUsize,
}

fn hold(held: &Held, _: usize) {
    while !held.gate.load(SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    held.ran.fetch_add(1, SeqCst);
}

/// Submits `count` held tasks to each pool of `submit_to`, then waits through `wait_with` on
/// another thread, opening the gate only once that waiter had time to go to sleep. Returns how
/// many tasks ran, or `None` if the wait had not returned 10 s after the gate opened.
fn wait_through(
    submit_to: &[&'static ThreadPool],
    wait_with: &'static ThreadPool,
) -> Option<usize> {
    let held: &'static Held = Box::leak(Box::new(Held {
        gate: AtomicBool::new(false),
        ran: AtomicUsize::new(0),
    }));
    let group: &'static TaskGroup = Box::leak(Box::new(TaskGroup::new()));
    for pool in submit_to {
        // SAFETY: `held` and `group` are leaked ('static), and `hold` is sound for any index.
        unsafe { pool.submit_indexed(group, held, 8, hold) };
    }
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        group.wait(wait_with);
        // The receiver is gone only if the test already failed.
        let _ = done.send(());
    });
    // Past the waiter's spin (micro- to milliseconds): it is asleep, or polling, when the
    // tasks end.
    std::thread::sleep(Duration::from_millis(200));
    assert!(!group.is_done(), "the group ended before its gate opened");
    held.gate.store(true, SeqCst);
    finished
        .recv_timeout(Duration::from_secs(10))
        .ok()
        .map(|()| held.ran.load(SeqCst))
}

fn pool(workers: usize) -> &'static ThreadPool {
    Box::leak(Box::new(ThreadPool::new(workers)))
}

#[test]
fn a_wait_through_another_pool_returns_when_the_group_is_done() {
    for (submit, wait) in [(2, 2), (3, 8), (8, 2)] {
        let (a, b) = (pool(submit), pool(wait));
        assert_eq!(
            wait_through(&[a], b),
            Some(8),
            "tasks on a {submit}-worker pool, waited through a {wait}-worker pool"
        );
    }
}

#[test]
fn a_wait_for_tasks_on_two_pools_returns_through_either() {
    let (a, b) = (pool(2), pool(4));
    assert_eq!(
        wait_through(&[a, b], a),
        Some(16),
        "waited through the first pool"
    );
    assert_eq!(
        wait_through(&[a, b], b),
        Some(16),
        "waited through the second pool"
    );
}

#[test]
fn a_wait_through_an_inline_pool_or_the_same_pool_returns() {
    let a = pool(2);
    assert_eq!(
        wait_through(&[a], pool(1)),
        Some(8),
        "waited through an inline pool"
    );
    assert_eq!(
        wait_through(&[a], a),
        Some(8),
        "waited through its own pool"
    );
}

/// A group used with one pool, then another: each wait goes the way its own submissions call
/// for, and the group stays usable. Runs under the same watchdog.
#[test]
fn a_group_reused_across_pools_stays_usable() {
    fn count(ran: &AtomicUsize, _: usize) {
        ran.fetch_add(1, SeqCst);
    }
    let (a, b) = (pool(2), pool(2));
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let group = TaskGroup::new();
        let ran = AtomicUsize::new(0);
        for round in 0..50 {
            let first = if round % 2 == 0 { a } else { b };
            // SAFETY: `ran` and `group` outlive the wait below, which ends every task.
            unsafe { first.submit_indexed(&group, &ran, 100, count) };
            group.wait(if round % 3 == 0 { a } else { b });
            assert!(group.is_done());
        }
        let _ = done.send(ran.load(SeqCst));
    });
    assert_eq!(finished.recv_timeout(Duration::from_secs(60)), Ok(50 * 100));
}
