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

#[test]
fn a_rewind_delivers_again_what_the_uninterrupted_run_delivered() {
    let pool = ThreadPool::new(3);
    let mut straight = DeadlineScheduler::new(3).unwrap();
    let expected = drive(&mut straight, &pool, 0, 20, 10);
    let mut jobs = DeadlineScheduler::new(3).unwrap();
    jobs.keep_results_from(6);
    let first = drive(&mut jobs, &pool, 0, 11, 10);
    // Back to tick 6: jobs 6..=10 are discarded (requested at or after 6).
    assert_eq!(jobs.rewind(&pool, 6), Ok(5));
    let again = drive(&mut jobs, &pool, 6, 20, 10);
    let tail: Vec<_> = expected.iter().filter(|d| d.0 >= 6).copied().collect();
    // Tickets name their scheduler: compare the rest.
    let plain = |v: &[(u64, JobTicket, u64)]| -> Vec<_> {
        v.iter()
            .map(|&(t, k, r)| (t, k.id(), k.requested_at(), k.due(), r))
            .collect()
    };
    assert_eq!(
        plain(&again),
        plain(&tail),
        "same ticks, tickets and results"
    );
    assert_eq!(plain(&first), plain(&expected[..first.len()]));
}

#[test]
fn jobs_requested_at_or_after_the_rewound_tick_are_replaced() {
    let pool = ThreadPool::new(2);
    let mut jobs = DeadlineScheduler::new(2).unwrap();
    jobs.keep_results_from(0);
    drive(&mut jobs, &pool, 0, 6, 1);
    jobs.rewind(&pool, 3).unwrap();
    // The re-simulation requests other inputs: their results, not the discarded ones, come.
    let again = drive(&mut jobs, &pool, 3, 8, 100);
    let got: Vec<_> = again.iter().map(|d| (d.0, d.1.id(), d.2)).collect();
    assert_eq!(
        got,
        [(3, 1, 2), (4, 2, 3), (5, 3, 301), (6, 4, 401), (7, 5, 501)]
    );
}

#[test]
fn confirmed_ticks_drop_their_results_and_refuse_a_rewind() {
    let pool = ThreadPool::new(2);
    let mut jobs = DeadlineScheduler::new(2).unwrap();
    jobs.keep_results_from(0);
    drive(&mut jobs, &pool, 0, 8, 1);
    assert_eq!(jobs.kept(), 6, "due at 2..=7");
    assert_eq!(jobs.confirm(5), 3);
    let refused = jobs.rewind(&pool, 4).unwrap_err();
    assert_eq!(
        refused,
        DeadlineError::RewindBeforeConfirmed {
            tick: 4,
            confirmed: 5
        }
    );
    assert_eq!((jobs.kept(), jobs.pending()), (3, 2), "nothing changed");
    // Requested at 6 and 7 (pending) and at 5 (delivered at 7, kept).
    assert_eq!(jobs.rewind(&pool, 5), Ok(3));
    assert_eq!(jobs.kept(), 2);
}

#[test]
fn a_rewind_needing_an_unkept_result_is_refused() {
    let pool = ThreadPool::new(1);
    let mut jobs = DeadlineScheduler::new(2).unwrap();
    drive(&mut jobs, &pool, 0, 6, 1);
    assert_eq!(
        jobs.rewind(&pool, 3),
        Err(DeadlineError::ResultsNotKept {
            tick: 3,
            kept_from: u64::MAX
        })
    );
    // Keeping from now on covers only later deliveries.
    jobs.keep_results_from(0);
    assert!(jobs.check_rewind(3).is_err());
    assert!(jobs.check_rewind(6).is_ok());
    assert_eq!(jobs.pending(), 2);
}

#[test]
fn discarded_and_confirmed_results_are_dropped_once() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    #[derive(Clone)]
    struct Tally(Arc<AtomicUsize>);
    impl Drop for Tally {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let made = Arc::new(AtomicUsize::new(0));
    let pool = ThreadPool::new(2);
    let mut jobs = DeadlineScheduler::new(2).unwrap();
    jobs.keep_results_from(0);
    for tick in 0..4u64 {
        jobs.collect(&pool, tick, drop).unwrap(); // 0 and 1 delivered (2 drops)
        let (d, m) = (Arc::clone(&drops), Arc::clone(&made));
        jobs.request(&pool, tick, (), move |()| {
            m.fetch_add(1, Ordering::Relaxed);
            Tally(d)
        })
        .unwrap();
    }
    assert_eq!(drops.load(Ordering::Relaxed), 2);
    // Requested at 2 and 3: pending, discarded (a job not started yet skips its work, a
    // finished one's result is dropped); the kept copies of 0 and 1 stay.
    assert_eq!(jobs.rewind(&pool, 2), Ok(2));
    let live = |d: &AtomicUsize| made.load(Ordering::Relaxed) + 2 - d.load(Ordering::Relaxed);
    assert_eq!(live(&drops), 2, "only the two kept copies are alive");
    assert_eq!(jobs.confirm(10), 2, "the two kept copies");
    assert_eq!(live(&drops), 0);
}
