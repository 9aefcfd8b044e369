//! `DeadlineScheduler::settle` with finished results whose `Drop` panics: every result is
//! dropped exactly once, the process survives (no panic while panicking), and the first panic
//! is re-raised once the scheduler is settled. Its own test binary: on failure the process
//! aborts.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr_sched::ThreadPool;
use freyr_time::{DeadlineError, DeadlineScheduler};

static DROPPED: [AtomicUsize; 3] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

/// A result whose `Drop` counts itself, then panics.
struct Nasty(usize);

impl Drop for Nasty {
    fn drop(&mut self) {
        DROPPED[self.0].fetch_add(1, Ordering::SeqCst);
        panic!("Nasty({}) dropped", self.0);
    }
}

#[test]
fn results_whose_drop_panics_are_each_dropped_once_then_the_first_panic_is_raised() {
    let pool = ThreadPool::new(2);
    let mut jobs = DeadlineScheduler::new(5).unwrap();
    let tickets: Vec<_> = (0..3)
        .map(|i| jobs.request(&pool, 0, i, Nasty).unwrap())
        .collect();
    let caught = catch_unwind(AssertUnwindSafe(|| jobs.settle(&pool))).unwrap_err();
    assert_eq!(
        caught.downcast_ref::<String>().map(String::as_str),
        Some("Nasty(0) dropped"),
        "the first panic is the one re-raised"
    );
    let tally: Vec<usize> = DROPPED.iter().map(|d| d.load(Ordering::SeqCst)).collect();
    assert_eq!(tally, [1, 1, 1], "every result dropped exactly once");
    assert!(jobs.is_settled());
    assert_eq!(jobs.pending(), 0);
    assert_eq!(
        jobs.request(&pool, 1, 0, Nasty).unwrap_err(),
        DeadlineError::Settled
    );
    drop(tickets);
    // The pool is still usable.
    let mut more = DeadlineScheduler::new(1).unwrap();
    more.request(&pool, 0, 2u8, |x| x * 3).unwrap();
    let mut got = None;
    more.collect(&pool, 1, |d| got = Some(d.result.unwrap()))
        .unwrap();
    assert_eq!(got, Some(6));
}
