//! Unit tests of the deadline scheduler.

use super::*;

#[test]
fn due_tick_is_request_plus_latency() {
    for t in [0, 1, 99, u64::MAX - 5] {
        for k in 1..=5 {
            assert_eq!(due_tick(t, k), Some(t + k));
        }
    }
    assert_eq!(due_tick(u64::MAX, 1), None);
}

#[test]
fn zero_latency_is_rejected_with_advice() {
    let err = DeadlineScheduler::<u8>::new(0).unwrap_err();
    assert_eq!(err, DeadlineError::ZeroLatency);
    assert!(err.to_string().contains("K = 0"));
}

#[test]
fn nothing_is_applied_before_its_due_tick() {
    let pool = ThreadPool::new(2);
    let mut jobs = DeadlineScheduler::new(3).unwrap();
    let ticket = jobs.request(&pool, 10, 5u32, |x| x + 1).unwrap();
    for tick in 10..13 {
        jobs.collect(&pool, tick, |_| panic!("applied early at {tick}"))
            .unwrap();
    }
    let mut got = None;
    jobs.collect(&pool, 13, |d| got = Some((d.ticket, d.result)))
        .unwrap();
    assert_eq!(got, Some((ticket, Ok(6))));
    assert_eq!(jobs.status(&ticket), Ok(JobStatus::Applied));
}

#[test]
fn jobs_due_on_one_tick_are_applied_in_request_order() {
    let pool = ThreadPool::new(4);
    let mut jobs = DeadlineScheduler::new(1).unwrap();
    for i in 0..32u64 {
        // Earlier jobs take longer, so they finish last.
        jobs.request(&pool, 0, i, move |i| {
            std::thread::sleep(Duration::from_micros(50 * (32 - i)));
            i
        })
        .unwrap();
    }
    let mut order = Vec::new();
    jobs.collect(&pool, 1, |d| order.push(d.result.unwrap()))
        .unwrap();
    assert_eq!(order, (0..32).collect::<Vec<_>>());
}

#[test]
fn a_skipped_due_tick_is_an_error_and_applies_nothing() {
    let pool = ThreadPool::new(1);
    let mut jobs = DeadlineScheduler::new(1).unwrap();
    jobs.request(&pool, 0, (), |()| ()).unwrap();
    let err = jobs
        .collect(&pool, 2, |_| panic!("nothing may be applied"))
        .unwrap_err();
    assert_eq!(
        err,
        DeadlineError::MissedDueTick {
            job: 0,
            due: 1,
            now: 2
        }
    );
    assert!(err.to_string().contains("once on every tick"));
    assert_eq!(jobs.pending(), 1);
}

#[test]
fn ticks_never_go_back() {
    let pool = ThreadPool::new(1);
    let mut jobs = DeadlineScheduler::<()>::new(2).unwrap();
    jobs.collect(&pool, 5, |_| {}).unwrap();
    assert_eq!(
        jobs.request(&pool, 4, (), |()| ()).unwrap_err(),
        DeadlineError::TickInPast {
            now: 4,
            collected: 5
        }
    );
    assert!(jobs.collect(&pool, 4, |_| {}).is_err());
    assert!(
        jobs.collect(&pool, 5, |_| {}).is_ok(),
        "the same tick again is fine"
    );
}

#[test]
fn overflowing_due_ticks_are_refused() {
    let pool = ThreadPool::new(1);
    let mut jobs = DeadlineScheduler::<()>::new(2).unwrap();
    assert_eq!(
        jobs.request(&pool, u64::MAX - 1, (), |()| ()).unwrap_err(),
        DeadlineError::TickOverflow
    );
}

#[test]
fn a_second_pool_is_refused_everywhere() {
    let pool = ThreadPool::new(2);
    let other = ThreadPool::new(2);
    let mut jobs = DeadlineScheduler::new(1).unwrap();
    jobs.request(&pool, 0, (), |()| ()).unwrap();
    assert_eq!(
        jobs.collect(&other, 1, |_| {}).unwrap_err(),
        DeadlineError::ForeignPool
    );
    assert_eq!(jobs.settle(&other).unwrap_err(), DeadlineError::ForeignPool);
    assert!(jobs.collect(&pool, 1, |_| {}).is_ok());
}

#[test]
fn settle_discards_waits_and_refuses() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    let pool = ThreadPool::new(3);
    let ran = Arc::new(AtomicUsize::new(0));
    let mut jobs = DeadlineScheduler::new(5).unwrap();
    for _ in 0..10 {
        let ran = Arc::clone(&ran);
        jobs.request(&pool, 0, (), move |()| {
            std::thread::sleep(Duration::from_millis(1));
            ran.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
    }
    assert_eq!(jobs.settle(&pool), Ok(10));
    assert_eq!(
        ran.load(Ordering::Relaxed),
        10,
        "settle waited for every job"
    );
    assert_eq!(jobs.pending(), 0);
    let err = jobs.request(&pool, 1, (), |()| ()).unwrap_err();
    assert_eq!(err, DeadlineError::Settled);
    assert!(err.to_string().contains("after settle()"));
}
