//! More hostile use of the time tools (see `time_attack.rs`): a restore or a drop while deadline
//! jobs are still running, an apply callback that settles every result type mid-delivery, a
//! job chain re-requested from its own apply callback across a restore, and an async system's
//! launch from a timeline a restore replaced.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use freyr::time::deadline::{DeadlineError, Delivered};
use freyr::time::pump::{Completer, Discard, Launched, Process};
use freyr::{AsyncSystem, Phase, Registry};

/// Values made and dropped.
#[derive(Default)]
struct Tally {
    made: AtomicUsize,
    dropped: AtomicUsize,
}

impl Tally {
    fn live(&self) -> usize {
        self.made.load(Ordering::SeqCst) - self.dropped.load(Ordering::SeqCst)
    }
}

/// A counted value (a job's input or result).
struct Counted(u64, Arc<Tally>);

impl Counted {
    fn new(value: u64, tally: &Arc<Tally>) -> Counted {
        tally.made.fetch_add(1, Ordering::SeqCst);
        Counted(value, Arc::clone(tally))
    }
}

impl Clone for Counted {
    fn clone(&self) -> Self {
        Counted::new(self.0, &self.1)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

type Log = Arc<Mutex<Vec<(u64, u64, u64)>>>;

/// A registry whose system requests, every tick, a job that sleeps `sleep_ms` and returns a
/// counted `tick * 10`, from a counted input; deliveries logged as (tick, id, value).
fn sleepy(workers: usize, sleep_ms: u64, tally: &Arc<Tally>, log: &Log) -> Registry {
    let mut r = Registry::with_workers(workers);
    let sink = Arc::clone(log);
    r.add_deadline_jobs(2, move |r: &mut Registry, done: Delivered<Counted>| {
        let value = done.result.unwrap().0;
        sink.lock()
            .unwrap()
            .push((r.tick(), done.ticket.id(), value));
    })
    .unwrap();
    let tally = Arc::clone(tally);
    r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        let input = Counted::new(r.tick(), &tally);
        r.request_job(input, move |input: Counted| {
            std::thread::sleep(Duration::from_millis(sleep_ms));
            Counted::new(input.0 * 10, &input.1)
        })
        .unwrap();
    });
    r
}

fn run_to(r: &mut Registry, tick: u64) {
    while r.tick() < tick {
        r.update(0.1);
    }
}

#[test]
fn a_restore_while_the_discarded_jobs_still_run_drops_each_value_once() {
    for workers in [1, 2, 4] {
        let tally = Arc::new(Tally::default());
        let log = Log::default();
        let mut r = sleepy(workers, 3, &tally, &log);
        run_to(&mut r, 2);
        let at_two = r.snapshot().unwrap();
        run_to(&mut r, 6); // jobs of ticks 4 and 5 still sleep on the pool
        r.restore(&at_two).unwrap(); // and are discarded: requested after the snapshot
        log.lock().unwrap().clear();
        run_to(&mut r, 8);
        // The snapshot's timeline: it holds the jobs of ticks 0 and 1 (due 2 and 3); those of
        // 2..6 are requested again, with the same ids.
        let expected: Vec<(u64, u64, u64)> = (2..8).map(|t| (t, t - 2, (t - 2) * 10)).collect();
        assert_eq!(*log.lock().unwrap(), expected);
        drop((r, at_two));
        assert_eq!(tally.live(), 0, "{workers} workers");
    }
}

#[test]
fn dropping_a_registry_while_its_jobs_sleep_drops_every_input_and_result_once() {
    for workers in [1, 2, 3, 8] {
        let tally = Arc::new(Tally::default());
        let mut r = sleepy(workers, 5, &tally, &Log::default());
        run_to(&mut r, 5);
        let snapshot = r.snapshot().unwrap();
        drop(r); // three jobs in flight, some still sleeping; the snapshot shares them
        drop(snapshot);
        // Every input was made, and every job ran or was cancelled: nothing is left.
        assert!(tally.made.load(Ordering::SeqCst) >= 5);
        assert_eq!(tally.live(), 0, "{workers} workers");
    }
}

#[test]
fn settle_jobs_from_an_apply_callback_discards_the_other_types_deliveries_of_the_tick() {
    let tally = Arc::new(Tally::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let settled = Arc::new(Mutex::new(None));
    let mut r = Registry::with_workers(2);
    let (sink, out) = (Arc::clone(&seen), Arc::clone(&settled));
    r.add_deadline_jobs(1, move |r: &mut Registry, done: Delivered<u8>| {
        sink.lock()
            .unwrap()
            .push(format!("u8 {}", done.result.unwrap()));
        *out.lock().unwrap() = Some(r.settle_jobs());
        assert_eq!(r.request_job((), |()| 0u8), Err(DeadlineError::Settled));
    })
    .unwrap();
    let sink = Arc::clone(&seen);
    r.add_deadline_jobs(1, move |_: &mut Registry, done: Delivered<Counted>| {
        sink.lock()
            .unwrap()
            .push(format!("counted {}", done.result.unwrap().0));
    })
    .unwrap();
    r.request_job((), |()| 1u8).unwrap();
    let t = Arc::clone(&tally);
    r.request_job((), move |()| Counted::new(2, &t)).unwrap();
    let t = Arc::clone(&tally);
    r.request_job((), move |()| Counted::new(3, &t)).unwrap();
    r.update(0.1);
    r.update(0.1); // tick 1: the u8 is applied first and settles; the two others are dropped
    run_to(&mut r, 5);
    assert_eq!(*seen.lock().unwrap(), ["u8 1"]);
    assert_eq!(*settled.lock().unwrap(), Some(2));
    assert_eq!((tally.made.load(Ordering::SeqCst), tally.live()), (2, 0));
}

#[test]
fn a_chain_requested_from_its_own_apply_callback_survives_a_restore() {
    let run = |restore: bool| {
        let log = Log::default();
        let mut r = Registry::with_workers(3);
        let sink = Arc::clone(&log);
        r.add_deadline_jobs(2, move |r: &mut Registry, done: Delivered<u64>| {
            let value = done.result.unwrap();
            sink.lock()
                .unwrap()
                .push((r.tick(), done.ticket.id(), value));
            // Requested at the delivery tick, from inside the deadline hook.
            r.request_job(value, |v: u64| v * 3 + 1).unwrap();
        })
        .unwrap();
        r.request_job(1u64, |v| v).unwrap();
        run_to(&mut r, 5);
        if restore {
            let at_five = r.snapshot().unwrap();
            run_to(&mut r, 9);
            r.restore(&at_five).unwrap();
            log.lock().unwrap().retain(|d| d.0 < 5);
        }
        run_to(&mut r, 11);
        log.lock().unwrap().clone()
    };
    let straight = run(false);
    let expected = [(2, 0, 1), (4, 1, 4), (6, 2, 13), (8, 3, 40), (10, 4, 121)];
    assert_eq!(straight, expected);
    assert_eq!(run(true), straight);
}

/// Hands each launch to the test (through `outbox`), logging what it applies and discards.
struct Remote {
    outbox: Arc<Mutex<Vec<Completer<u64, String>>>>,
    /// (launch tick, tick applied or discarded, stale).
    seen: Arc<Mutex<Vec<(u64, u64, bool)>>>,
}

impl AsyncSystem for Remote {
    type Request = u64;
    type Result = u64;
    type Error = String;
    fn collect(&mut self, r: &mut Registry) -> Option<u64> {
        Some(r.tick())
    }
    fn process(&mut self, _: Arc<u64>) -> Process<u64, String> {
        let outbox = Arc::clone(&self.outbox);
        Process::elsewhere(move |done| outbox.lock().unwrap().push(done))
    }
    fn apply(&mut self, r: &mut Registry, value: u64, launched: &Launched<u64>) {
        assert_eq!(value, launched.tick);
        self.seen
            .lock()
            .unwrap()
            .push((launched.tick, r.tick(), false));
    }
    fn discard(&mut self, r: &mut Registry, why: Discard<u64, String>, launched: &Launched<u64>) {
        let stale = matches!(why, Discard::Stale(_));
        self.seen
            .lock()
            .unwrap()
            .push((launched.tick, r.tick(), stale));
    }
}

#[test]
fn an_async_systems_launch_from_a_replaced_timeline_is_discarded_as_stale() {
    let outbox = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut r = Registry::with_workers(2);
    let remote = Remote {
        outbox: Arc::clone(&outbox),
        seen: Arc::clone(&seen),
    };
    let progress = r.add_async_system(Phase::Update, remote);
    let complete = |outbox: &Arc<Mutex<Vec<Completer<u64, String>>>>, value: u64| {
        outbox
            .lock()
            .unwrap()
            .pop()
            .unwrap()
            .complete(value)
            .unwrap();
    };
    r.update(0.1); // tick 0 launches
    complete(&outbox, 0);
    r.update(0.1); // tick 1 applies 0, launches
    complete(&outbox, 1);
    let at_two = r.snapshot().unwrap();
    r.update(0.1); // tick 2 applies 1, launches
    complete(&outbox, 2); // the launch of tick 2, in the timeline about to be replaced
    r.restore(&at_two).unwrap();
    assert_eq!((progress.in_flight(), progress.drainable()), (1, 1));
    r.update(0.1); // tick 2 again: the replaced timeline's launch must not be applied here
    assert_eq!(
        *seen.lock().unwrap(),
        [(0, 1, false), (1, 2, false), (2, 2, true)],
        "a result launched before a restore is discarded as stale"
    );
    // The re-simulated tick 2 launched again (the stale launch freed its room).
    assert_eq!((progress.in_flight(), outbox.lock().unwrap().len()), (1, 1));
    complete(&outbox, 2);
    r.update(0.1);
    assert_eq!(seen.lock().unwrap().last(), Some(&(2, 3, false)));
    r.settle_systems();
}
