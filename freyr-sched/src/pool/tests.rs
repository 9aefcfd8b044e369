//! The pool's unit tests.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn pools_and_groups_are_send_and_sync() {
    assert_send_sync::<ThreadPool>();
    assert_send_sync::<TaskGroup>();
}

#[test]
fn a_pool_of_one_runs_a_batch_before_submit_returns() {
    fn record(seen: &[AtomicUsize; 5], i: usize) {
        seen[i].fetch_add(1, Ordering::Relaxed);
    }
    let pool = ThreadPool::new(1);
    let seen: [AtomicUsize; 5] = Default::default();
    let group = TaskGroup::new();
    // SAFETY: `seen` and `group` outlive this test.
    unsafe { pool.submit_indexed(&group, &seen, 5, record) };
    assert!(seen.iter().all(|s| s.load(Ordering::Relaxed) == 1));
    assert!(group.is_done());
    assert_eq!(pool.metrics().workers[0].tasks_run, 5);
}

#[test]
fn a_zero_count_batch_is_a_no_op() {
    fn never(_: &(), _: usize) {
        unreachable!("no index to run");
    }
    let pool = ThreadPool::new(2);
    let group = TaskGroup::new();
    // SAFETY: nothing is queued.
    unsafe { pool.submit_indexed(&group, &(), 0, never) };
    assert!(group.is_done());
}

#[test]
fn dropping_a_pool_drains_unwaited_tasks() {
    fn bump(counter: &AtomicUsize, _: usize) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
    let counter = AtomicUsize::new(0);
    let group = TaskGroup::new();
    let pool = ThreadPool::new(3);
    // SAFETY: `counter` and `group` outlive the pool, whose drop drains it.
    unsafe { pool.submit_indexed(&group, &counter, 500, bump) };
    drop(pool);
    assert!(group.is_done());
    assert_eq!(counter.load(Ordering::Relaxed), 500);
}
