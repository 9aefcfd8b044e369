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

/// Runs ticks `from..to` of a scheduler requesting, at each tick `t`, a job of `t * mul`, and
/// returns the deliveries as (tick, ticket, result).
fn drive(
    jobs: &mut DeadlineScheduler<u64>,
    pool: &ThreadPool,
    from: u64,
    to: u64,
    mul: u64,
) -> Vec<(u64, JobTicket, u64)> {
    let mut seen = Vec::new();
    for tick in from..to {
        jobs.collect(pool, tick, |d| {
            seen.push((tick, d.ticket, d.result.unwrap()))
        })
        .unwrap();
        jobs.request(pool, tick, tick * mul, |x| x + 1).unwrap();
    }
    seen
}

/// Tickets name their scheduler: the rest of each delivery.
fn plain(v: &[(u64, JobTicket, u64)]) -> Vec<(u64, u64, u64, u64, u64)> {
    v.iter()
        .map(|&(t, k, r)| (t, k.id(), k.requested_at(), k.due(), r))
        .collect()
}

#[test]
fn a_restore_delivers_again_what_the_uninterrupted_run_delivered() {
    let pool = ThreadPool::new(3);
    let mut straight = DeadlineScheduler::new(3).unwrap();
    let expected = drive(&mut straight, &pool, 0, 20, 10);
    let mut jobs = DeadlineScheduler::new(3).unwrap();
    let first = drive(&mut jobs, &pool, 0, 6, 10);
    let at_six = jobs.capture(6).unwrap();
    assert_eq!(at_six.len(), 3, "requested at 3, 4, 5");
    drive(&mut jobs, &pool, 6, 11, 10);
    // Back to tick 6: jobs 6..=10 are discarded, jobs 3..=5 come again.
    assert_eq!(jobs.restore(&pool, &at_six), Ok(3));
    let again = drive(&mut jobs, &pool, 6, 20, 10);
    let tail: Vec<_> = expected.iter().filter(|d| d.0 >= 6).copied().collect();
    assert_eq!(
        plain(&again),
        plain(&tail),
        "same ticks, tickets and results"
    );
    assert_eq!(plain(&first), plain(&expected[..first.len()]));
}

#[test]
fn jobs_requested_at_or_after_the_captured_tick_are_replaced() {
    let pool = ThreadPool::new(2);
    let mut jobs = DeadlineScheduler::new(2).unwrap();
    drive(&mut jobs, &pool, 0, 3, 1);
    let at_three = jobs.capture(3).unwrap();
    drive(&mut jobs, &pool, 3, 6, 1);
    jobs.restore(&pool, &at_three).unwrap();
    // The re-simulation requests other inputs: their results, not the discarded ones, come.
    let again = drive(&mut jobs, &pool, 3, 8, 100);
    let got: Vec<_> = again.iter().map(|d| (d.0, d.1.id(), d.2)).collect();
    assert_eq!(
        got,
        [(3, 1, 2), (4, 2, 3), (5, 3, 301), (6, 4, 401), (7, 5, 501)]
    );
}

#[test]
fn a_forward_restore_delivers_the_later_timeline() {
    for workers in [1, 2, 4] {
        let pool = ThreadPool::new(workers);
        let mut straight = DeadlineScheduler::new(3).unwrap();
        let expected = drive(&mut straight, &pool, 0, 16, 7);
        let mut jobs = DeadlineScheduler::new(3).unwrap();
        drive(&mut jobs, &pool, 0, 4, 7);
        let at_four = jobs.capture(4).unwrap();
        drive(&mut jobs, &pool, 4, 10, 7);
        let at_ten = jobs.capture(10).unwrap();
        jobs.restore(&pool, &at_four).unwrap();
        drive(&mut jobs, &pool, 4, 6, 7);
        // Seek forward again: the jobs requested at 7, 8, 9 are the captured ones.
        jobs.restore(&pool, &at_ten).unwrap();
        let again = drive(&mut jobs, &pool, 10, 16, 7);
        let tail: Vec<_> = expected.iter().filter(|d| d.0 >= 10).copied().collect();
        assert_eq!(plain(&again), plain(&tail), "{workers} workers");
        assert_eq!(again.len(), 6);
    }
}

#[test]
fn another_scheduler_takes_over_a_capture_of_its_latency_only() {
    let pool = ThreadPool::new(3);
    let mut a = DeadlineScheduler::new(2).unwrap();
    let expected = drive(&mut a, &pool, 0, 10, 3);
    let mut b = DeadlineScheduler::new(2).unwrap();
    let mut a2 = DeadlineScheduler::new(2).unwrap();
    drive(&mut a2, &pool, 0, 5, 3);
    let captured = a2.capture(5).unwrap();
    let mut c = DeadlineScheduler::<u64>::new(4).unwrap();
    c.request(&pool, 0, 1, |x| x).unwrap();
    assert_eq!(
        c.restore(&pool, &captured),
        Err(DeadlineError::LatencyMismatch {
            captured: 2,
            latency: 4
        })
    );
    assert_eq!(c.pending(), 1, "nothing changed");
    assert_eq!(b.restore(&pool, &captured), Ok(0));
    let got = drive(&mut b, &pool, 5, 10, 3);
    let tail: Vec<_> = expected.iter().filter(|d| d.0 >= 5).copied().collect();
    assert_eq!(plain(&got), plain(&tail));
    assert!(got.iter().all(|d| d.1.scheduler() == b.id()), "b's tickets");
    // Refused: a capture at a tick already collected, or past a due tick.
    assert_eq!(
        b.capture(9).unwrap_err(),
        DeadlineError::TickCollected { tick: 9 }
    );
    assert!(matches!(
        b.capture(12),
        Err(DeadlineError::MissedDueTick { due: 10, .. })
    ));
}

#[test]
fn a_job_running_on_another_pool_is_waited_for_without_helping_it() {
    use std::sync::mpsc;
    let (pool_a, pool_b) = (ThreadPool::new(2), ThreadPool::new(2));
    let mut a = DeadlineScheduler::new(1).unwrap();
    let (go, wait) = mpsc::channel::<()>();
    a.request(&pool_a, 0, (), move |()| {
        wait.recv().unwrap();
        7u32
    })
    .unwrap();
    let captured = a.capture(1).unwrap();
    drop(a);
    let mut b = DeadlineScheduler::new(1).unwrap();
    b.restore(&pool_b, &captured).unwrap();
    drop(captured);
    // Released once b waits: pool a's completion must reach a waiter on pool b.
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(30));
        go.send(()).unwrap();
    });
    let mut seen = Vec::new();
    let report = b
        .collect(&pool_b, 1, |d| seen.push(d.result.unwrap()))
        .unwrap();
    release.join().unwrap();
    assert_eq!(seen, [7]);
    assert_eq!(report.late_jobs, 1);
}

#[test]
fn captured_and_discarded_results_are_dropped_once() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    /// Counts its drops; a copy is counted as made.
    struct Tally(Arc<AtomicUsize>, Arc<AtomicUsize>);
    impl Clone for Tally {
        fn clone(&self) -> Self {
            self.1.fetch_add(1, Ordering::Relaxed);
            Tally(Arc::clone(&self.0), Arc::clone(&self.1))
        }
    }
    impl Drop for Tally {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let made = Arc::new(AtomicUsize::new(0));
    let live = || made.load(Ordering::Relaxed) - drops.load(Ordering::Relaxed);
    let pool = ThreadPool::new(2);
    let mut jobs = DeadlineScheduler::new(2).unwrap();
    let mut captures = Vec::new();
    for tick in 0..6u64 {
        jobs.collect(&pool, tick, drop).unwrap();
        captures.push(jobs.capture(tick + 1).unwrap());
        let (d, m) = (Arc::clone(&drops), Arc::clone(&made));
        jobs.request(&pool, tick, (), move |()| {
            m.fetch_add(1, Ordering::Relaxed);
            Tally(d, m)
        })
        .unwrap();
    }
    // Back to tick 2 (jobs 1 and 2 in flight, held by the capture), then drop every capture.
    let back = jobs.capture(2);
    assert!(back.is_err(), "tick 2 was collected");
    let at_two = captures.swap_remove(1);
    assert_eq!(jobs.restore(&pool, &at_two), Ok(2), "jobs 4 and 5");
    drop(captures);
    jobs.collect(&pool, 2, drop).unwrap();
    jobs.collect(&pool, 3, drop).unwrap();
    drop(at_two);
    assert_eq!(jobs.pending(), 0);
    assert_eq!(live(), 0, "every result and copy dropped once");
}
