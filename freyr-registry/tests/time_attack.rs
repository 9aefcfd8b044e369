//! Deadline jobs and the fixed step attacked as a hostile user would: results whose `Clone`
//! or `Drop` panic (at delivery, at a restore's discard, at the registry's or a snapshot's
//! drop), panic payloads whose `Drop` panics, any `dt`, a clock jump of centuries, jobs that
//! take any time on any number of workers, a registry dropped or restored while its jobs run,
//! and an apply callback that settles every result type mid-delivery. Every result made is
//! counted dropped exactly once.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use freyr::time::ManualClock;
use freyr::time::deadline::{DeadlineError, Delivered, JobStatus};
use freyr::{Phase, Registry};

/// Results made (by a job or a `Clone`) and dropped.
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

/// A counted result whose `Clone` panics while `clone_panics` is set and whose `Drop` panics
/// when `drop_panics`.
struct Hostile {
    value: u64,
    tally: Arc<Tally>,
    clone_panics: Arc<AtomicBool>,
    drop_panics: bool,
}

impl Hostile {
    fn new(
        value: u64,
        tally: &Arc<Tally>,
        clone_panics: &Arc<AtomicBool>,
        drop_panics: bool,
    ) -> Self {
        tally.made.fetch_add(1, Ordering::SeqCst);
        Hostile {
            value,
            tally: Arc::clone(tally),
            clone_panics: Arc::clone(clone_panics),
            drop_panics,
        }
    }
}

impl Clone for Hostile {
    fn clone(&self) -> Self {
        assert!(
            !self.clone_panics.load(Ordering::SeqCst),
            "clone of {} refused",
            self.value
        );
        Hostile::new(
            self.value,
            &self.tally,
            &self.clone_panics,
            self.drop_panics,
        )
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.tally.dropped.fetch_add(1, Ordering::SeqCst);
        // Like most user `Drop`s, it does not ask whether the thread is already unwinding.
        if self.drop_panics {
            panic!("drop of {} refused", self.value);
        }
    }
}

/// (tick, ticket id, due, value or the panic's message).
type Log = Arc<Mutex<Vec<(u64, u64, u64, Result<u64, String>)>>>;

fn logging(r: &mut Registry, latency: u64, log: &Log) {
    let sink = Arc::clone(log);
    r.add_deadline_jobs(
        latency,
        move |r: &mut Registry, done: Delivered<Hostile>| {
            let t = done.ticket;
            let value = done
                .result
                .as_ref()
                .map(|h| h.value)
                .map_err(|e| e.message().to_owned());
            sink.lock()
                .unwrap()
                .push((r.tick(), t.id(), t.due(), value));
        },
    )
    .unwrap();
}

fn run_to(r: &mut Registry, tick: u64) {
    while r.tick() < tick {
        r.update(0.1);
    }
}

#[test]
fn a_clone_that_panics_at_delivery_strands_no_other_job_of_its_tick() {
    let tally = Arc::new(Tally::default());
    let refuse = Arc::new(AtomicBool::new(false));
    let log = Log::default();
    let mut r = Registry::with_workers(2);
    logging(&mut r, 2, &log);
    for value in [10, 11, 12] {
        let (tally, refuse) = (Arc::clone(&tally), Arc::clone(&refuse));
        r.request_job(value, move |v| Hostile::new(v, &tally, &refuse, false))
            .unwrap();
    }
    r.update(0.1); // tick 0
    // The snapshot shares the jobs in flight: their deliveries are copies.
    let at_one = r.snapshot().unwrap();
    refuse.store(true, Ordering::SeqCst);
    for _ in 1..6 {
        let tick = r.tick();
        let outcome = catch_unwind(AssertUnwindSafe(|| r.update(0.1)));
        assert!(outcome.is_ok(), "tick {tick} panicked");
    }
    let seen = log.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "every job delivered once: {seen:?}");
    for (i, (tick, id, due, value)) in seen.iter().enumerate() {
        assert_eq!((*tick, *id, *due), (2, i as u64, 2));
        let message = value.as_ref().unwrap_err();
        assert!(message.contains("clone of 1"), "{message}");
    }
    // Copies are allowed again: the snapshot's timeline still delivers every original.
    refuse.store(false, Ordering::SeqCst);
    log.lock().unwrap().clear();
    r.restore(&at_one).unwrap();
    run_to(&mut r, 4);
    let again: Vec<_> = log.lock().unwrap().iter().map(|d| d.3.clone()).collect();
    assert_eq!(again, [Ok(10), Ok(11), Ok(12)]);
    drop((r, at_one));
    assert_eq!(tally.live(), 0);
}

/// Runs `scenario` in a child process (this test binary, filtered to `test`): an abort there
/// fails the test instead of killing the whole run.
fn in_child(test: &str, scenario: impl FnOnce()) {
    const VAR: &str = "FREYR_TIME_ATTACK_CHILD";
    if std::env::var_os(VAR).is_some() {
        scenario();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(VAR, "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the child failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A registry with three finished jobs in flight whose results' `Drop` panics.
fn three_doomed(tally: &Arc<Tally>) -> Registry {
    let never = Arc::new(AtomicBool::new(false));
    let mut r = Registry::with_workers(2);
    logging(&mut r, 5, &Log::default());
    let mut tickets = Vec::new();
    for value in 0..3 {
        let (tally, never) = (Arc::clone(tally), Arc::clone(&never));
        tickets.push(
            r.request_job(value, move |v| Hostile::new(v, &tally, &never, true))
                .unwrap(),
        );
    }
    for ticket in &tickets {
        while r.job_status::<Hostile>(ticket) != Ok(JobStatus::Finished) {
            std::thread::yield_now();
        }
    }
    r
}

#[test]
fn dropping_a_registry_whose_pending_results_panic_in_drop_neither_aborts_nor_leaks() {
    in_child(
        "dropping_a_registry_whose_pending_results_panic_in_drop_neither_aborts_nor_leaks",
        || {
            let tally = Arc::new(Tally::default());
            let r = three_doomed(&tally);
            let dropped = catch_unwind(AssertUnwindSafe(move || drop(r)));
            assert!(dropped.is_ok(), "a registry's drop does not re-raise");
            assert_eq!((tally.made.load(Ordering::SeqCst), tally.live()), (3, 0));
        },
    );
}

#[test]
fn dropping_the_last_snapshot_holding_such_results_neither_aborts_nor_leaks() {
    in_child(
        "dropping_the_last_snapshot_holding_such_results_neither_aborts_nor_leaks",
        || {
            let tally = Arc::new(Tally::default());
            let mut r = three_doomed(&tally);
            let snapshot = r.snapshot().unwrap();
            // The registry lets go of its handles; the snapshot holds the last ones.
            assert_eq!(r.settle_jobs(), 3);
            drop(r);
            assert_eq!(tally.live(), 3);
            let dropped = catch_unwind(AssertUnwindSafe(move || drop(snapshot)));
            assert!(dropped.is_ok());
            assert_eq!(tally.live(), 0);
        },
    );
}

/// A panic payload whose `Drop` panics too.
struct NastyPayload;

impl Drop for NastyPayload {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("the payload's drop panicked");
        }
    }
}

#[test]
fn a_job_panicking_with_a_payload_whose_drop_panics_is_delivered_as_an_error() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut r = Registry::with_workers(3);
    let sink = Arc::clone(&seen);
    r.add_deadline_jobs(1, move |r: &mut Registry, done: Delivered<u8>| {
        let result = done.result.map_err(|e| e.message().to_owned());
        sink.lock().unwrap().push((r.tick(), result));
    })
    .unwrap();
    r.request_job((), |()| -> u8 { std::panic::panic_any(NastyPayload) })
        .unwrap();
    r.request_job((), |()| 5u8).unwrap();
    run_to(&mut r, 3);
    r.request_job((), |()| 6u8).unwrap();
    run_to(&mut r, 5);
    let not_a_string = Err("(a panic payload that is not a string)".to_owned());
    assert_eq!(
        *seen.lock().unwrap(),
        [(1, not_a_string), (1, Ok(5)), (4, Ok(6))]
    );
}

/// Runs 24 ticks on `workers`: every tick requests a job that sleeps a time depending on
/// the tick (later jobs finishing first); the apply callback writes the result into an
/// entity. Returns the deliveries and the world's hash.
fn sleepy_run(workers: usize) -> (Vec<(u64, u64, u64, u64)>, u64) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut r = Registry::with_workers(workers);
    let e = r.spawn((0u64,));
    let sink = Arc::clone(&log);
    r.add_deadline_jobs(3, move |r: &mut Registry, done: Delivered<u64>| {
        let value = done.result.unwrap();
        *r.get_mut::<u64>(e).unwrap() = r.get::<u64>(e).unwrap().wrapping_mul(31) ^ value;
        r.spawn((value,));
        let t = done.ticket;
        sink.lock()
            .unwrap()
            .push((r.tick(), t.id(), t.requested_at(), value));
    })
    .unwrap();
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        let t = r.tick();
        if t < 20 {
            r.request_job(t, |t: u64| {
                std::thread::sleep(Duration::from_micros((20 - t) * 300));
                t * t + 7
            })
            .unwrap();
        }
    });
    run_to(&mut r, 24);
    let hash = r.world_hash::<(u64,)>();
    let log = log.lock().unwrap().clone();
    (log, hash)
}

#[test]
fn slow_jobs_land_on_the_same_tick_for_every_worker_count() {
    let (log, hash) = sleepy_run(1);
    assert_eq!(log.len(), 20);
    for (tick, id, requested_at, value) in &log {
        assert_eq!(
            (*tick, *id, *value),
            (requested_at + 3, *requested_at, requested_at.pow(2) + 7)
        );
    }
    for workers in [2, 3, 8, 16] {
        assert_eq!(
            sleepy_run(workers),
            (log.clone(), hash),
            "{workers} workers"
        );
    }
}

#[test]
fn any_dt_runs_one_tick_and_delivers_on_time() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let dts = Arc::new(Mutex::new(Vec::new()));
    let mut r = Registry::with_workers(2);
    let sink = Arc::clone(&seen);
    r.add_deadline_jobs(2, move |r: &mut Registry, done: Delivered<u64>| {
        sink.lock().unwrap().push((r.tick(), done.result.unwrap()));
    })
    .unwrap();
    let sink = Arc::clone(&dts);
    r.add_system(Phase::Update, move |r: &mut Registry, dt: f32| {
        sink.lock().unwrap().push(dt.to_bits());
        let t = r.tick();
        r.request_job(t, |t: u64| t + 100).unwrap();
    });
    let given = [
        0.0,
        f32::NAN,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        -0.0,
        1e-30,
    ];
    for dt in given {
        r.update(dt);
    }
    assert_eq!(r.tick(), given.len() as u64);
    let expected: Vec<(u64, u64)> = (2..given.len() as u64).map(|t| (t, t - 2 + 100)).collect();
    assert_eq!(*seen.lock().unwrap(), expected);
    let bits: Vec<u32> = given.iter().map(|dt| dt.to_bits()).collect();
    assert_eq!(
        *dts.lock().unwrap(),
        bits,
        "systems get the dt given, untouched"
    );
}

#[test]
fn a_clock_jump_of_a_century_runs_the_catch_up_bound_and_keeps_the_deadlines() {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let clock = ManualClock::new();
    let mut r = Registry::with_workers(2);
    r.set_fixed_step(Duration::from_nanos(1), clock.clone())
        .unwrap();
    let sink = Arc::clone(&seen);
    r.add_deadline_jobs(3, move |r: &mut Registry, done: Delivered<u64>| {
        sink.lock()
            .unwrap()
            .push((r.tick(), done.ticket.requested_at()));
    })
    .unwrap();
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        let t = r.tick();
        r.request_job(t, |t: u64| t).unwrap();
    });
    for _ in 0..3 {
        clock.advance(CENTURY);
        assert_eq!(r.run_frame().ran, 8);
    }
    let century = CENTURY.as_nanos() as u64;
    assert_eq!((r.tick(), r.dropped_ticks()), (24, 3 * century - 24));
    // Past the clock's end (it saturates at u64::MAX ns, about 584 years): one more bounded
    // frame, then time stands still; never a hang or a wrapped count.
    clock.advance(Duration::MAX);
    assert_eq!(r.run_frame().ran, 8);
    clock.advance(Duration::MAX);
    assert_eq!(r.run_frame().ran, 0);
    assert_eq!(r.tick(), 32);
    let expected: Vec<(u64, u64)> = (3..32).map(|t| (t, t - 3)).collect();
    assert_eq!(
        *seen.lock().unwrap(),
        expected,
        "every job at requested + K, none skipped"
    );
}

#[test]
fn a_huge_latency_overflows_with_a_typed_error_and_changes_nothing() {
    let mut r = Registry::with_workers(1);
    r.add_deadline_jobs(
        u64::MAX,
        |_: &mut Registry, _: Delivered<u8>| unreachable!(),
    )
    .unwrap();
    let ticket = r.request_job((), |()| 1u8).unwrap();
    assert_eq!(ticket.due(), u64::MAX);
    r.update(0.1);
    assert_eq!(
        r.request_job((), |()| 2u8).unwrap_err(),
        DeadlineError::TickOverflow
    );
    assert_eq!(r.profile().time.deadlines.requested, 1);
    run_to(&mut r, 5);
    assert_eq!(r.job_status::<u8>(&ticket), Ok(JobStatus::Finished));
    assert_eq!(r.settle_jobs(), 1);
}
