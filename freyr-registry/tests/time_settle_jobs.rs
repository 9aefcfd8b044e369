//! `Registry::settle_jobs`: results whose `Drop` panics are dropped one at a time (each exactly
//! once, the process alive) before the first panic is re-raised, and every result type refuses
//! later requests, including types registered after the shutdown. Its own test binary: on
//! failure the process aborts.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr_registry::Registry;
use freyr_time::{DeadlineError, Delivered};

static DROPPED: [AtomicUsize; 3] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

/// A job result whose `Drop` counts itself, then panics. (`Clone` as every registry job
/// result is, for a rollback's re-delivery; with no snapshot taken nothing is ever copied.)
#[derive(Clone)]
struct Nasty(usize);

impl Drop for Nasty {
    fn drop(&mut self) {
        DROPPED[self.0].fetch_add(1, Ordering::SeqCst);
        panic!("Nasty({}) dropped", self.0);
    }
}

#[test]
fn three_finished_results_whose_drop_panics_are_dropped_once_each() {
    let mut r = Registry::with_workers(2);
    r.add_deadline_jobs(10, |_: &mut Registry, _: Delivered<Nasty>| {})
        .unwrap();
    for i in 0..3 {
        r.request_job(i, Nasty).unwrap();
    }
    let caught = catch_unwind(AssertUnwindSafe(|| r.settle_jobs())).unwrap_err();
    assert_eq!(
        caught.downcast_ref::<String>().map(String::as_str),
        Some("Nasty(0) dropped")
    );
    let tally: Vec<usize> = DROPPED.iter().map(|d| d.load(Ordering::SeqCst)).collect();
    assert_eq!(tally, [1, 1, 1], "every result dropped exactly once");
    assert!(matches!(
        r.request_job(0, Nasty),
        Err(DeadlineError::Settled)
    ));
    // The registry keeps ticking.
    r.update(0.1);
    assert_eq!(r.tick(), 1);
}

#[test]
fn a_result_type_registered_after_settle_jobs_is_refused_too() {
    let mut r = Registry::with_workers(2);
    r.add_deadline_jobs(1, |_: &mut Registry, _: Delivered<u8>| {})
        .unwrap();
    assert_eq!(r.settle_jobs(), 0);
    r.add_deadline_jobs(1, |_: &mut Registry, _: Delivered<u16>| {})
        .unwrap();
    assert_eq!(
        r.request_job((), |()| 1u16).unwrap_err(),
        DeadlineError::Settled
    );
    assert_eq!(
        r.request_job((), |()| 1u8).unwrap_err(),
        DeadlineError::Settled
    );
}
