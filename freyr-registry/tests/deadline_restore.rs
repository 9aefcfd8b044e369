//! Deadline jobs in flight across a restore or a load. A snapshot holds the jobs in flight, so
//! a restore backward, forward (a redo), past a pending job's due tick, or into another
//! registry delivers from the snapshot's tick on exactly what the snapshot's timeline
//! delivered; a save holds none (a save with jobs in flight is refused), so a load discards
//! the registry's own. What cannot be exact is refused with a typed error that changes
//! nothing. Every result is counted: made (by a job or a `Clone`) and dropped exactly once.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use freyr::persist::{LoadError, SaveError};
use freyr::snapshot::{JobsRefusal, SnapshotError};
use freyr::time::deadline::{DeadlineError, Delivered};
use freyr::{Phase, Registry};

const K: u64 = 3;

/// No job is requested on these ticks, so a save at the end of the window has none in flight.
const QUIET: core::ops::Range<u64> = 15..20;

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

/// A job's result, counted.
struct Counted {
    value: u64,
    tally: Arc<Tally>,
}

impl Counted {
    fn new(value: u64, tally: Arc<Tally>) -> Counted {
        tally.made.fetch_add(1, Ordering::SeqCst);
        Counted { value, tally }
    }
}

impl Clone for Counted {
    fn clone(&self) -> Self {
        Counted::new(self.value, Arc::clone(&self.tally))
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.tally.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// What the apply callback saw: (tick, ticket id, requested at, due, value).
type Log = Arc<Mutex<Vec<(u64, u64, u64, u64, u64)>>>;

/// A registry whose system requests, on every tick t outside [`QUIET`], a job computing
/// `t * 10 + 1` (some of them slow, so that they are still running at a snapshot), logging
/// the deliveries.
fn registry(workers: usize, tally: &Arc<Tally>, log: &Log) -> Registry {
    let mut r = Registry::with_workers(workers);
    let sink = Arc::clone(log);
    r.add_deadline_jobs(K, move |r: &mut Registry, done: Delivered<Counted>| {
        let t = done.ticket;
        let value = done.result.unwrap().value;
        sink.lock()
            .unwrap()
            .push((r.tick(), t.id(), t.requested_at(), t.due(), value));
    })
    .unwrap();
    let tally = Arc::clone(tally);
    r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        let t = r.tick();
        if !QUIET.contains(&t) {
            let tally = Arc::clone(&tally);
            r.request_job(t, move |t: u64| {
                if t.is_multiple_of(3) {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                Counted::new(t * 10 + 1, tally)
            })
            .unwrap();
        }
    });
    r
}

fn run_to(r: &mut Registry, tick: u64) {
    while r.tick() < tick {
        r.update(0.1);
    }
}

/// The deliveries logged at or after `tick`.
fn from(log: &Log, tick: u64) -> Vec<(u64, u64, u64, u64, u64)> {
    let log = log.lock().unwrap();
    log.iter().filter(|d| d.0 >= tick).copied().collect()
}

/// Registry A run to `to`, and the deliveries it made at or after `since`.
fn straight(workers: usize, since: u64, to: u64) -> Vec<(u64, u64, u64, u64, u64)> {
    let tally = Arc::new(Tally::default());
    let log = Log::default();
    let mut a = registry(workers, &tally, &log);
    run_to(&mut a, to);
    drop(a);
    assert_eq!(tally.live(), 0);
    from(&log, since)
}

#[test]
fn a_restore_past_a_pending_due_tick_delivers_the_snapshot_timeline() {
    let tally = Arc::new(Tally::default());
    let (log_a, log_b) = (Log::default(), Log::default());
    let mut a = registry(3, &tally, &log_a);
    run_to(&mut a, 10);
    let at_ten = a.snapshot().unwrap();
    assert_eq!(at_ten.jobs_in_flight(), 3, "requested at 7, 8, 9");
    run_to(&mut a, 16);
    // B at tick 5 has jobs in flight due at 5, 6 and 7, before the snapshot's tick.
    let mut b = registry(3, &tally, &log_b);
    run_to(&mut b, 5);
    b.restore(&at_ten).unwrap();
    assert_eq!(b.tick(), 10);
    run_to(&mut b, 16);
    assert_eq!(from(&log_b, 10), from(&log_a, 10));
    assert_eq!(from(&log_b, 10).len(), 6);
    drop((a, b, at_ten));
    assert_eq!(tally.live(), 0, "every result and copy dropped once");
}

#[test]
fn a_forward_restore_delivers_every_job_of_the_later_timeline() {
    let tally = Arc::new(Tally::default());
    let log = Log::default();
    let mut r = registry(2, &tally, &log);
    run_to(&mut r, 5);
    let at_five = r.snapshot().unwrap();
    run_to(&mut r, 12);
    let at_twelve = r.snapshot().unwrap();
    run_to(&mut r, 17);
    let expected = from(&log, 12);
    assert_eq!(
        expected.iter().map(|d| d.0).collect::<Vec<_>>(),
        [12, 13, 14, 15, 16]
    );
    // Back to 5 and a tick forward, then seek to 12 again (a redo).
    r.restore(&at_five).unwrap();
    run_to(&mut r, 6);
    log.lock().unwrap().clear();
    r.restore(&at_twelve).unwrap();
    run_to(&mut r, 17);
    assert_eq!(
        from(&log, 0),
        expected,
        "jobs requested at 9, 10 and 11 delivered"
    );
    // Straight back to 5 and seek again without running: the same.
    r.restore(&at_five).unwrap();
    log.lock().unwrap().clear();
    r.restore(&at_twelve).unwrap();
    run_to(&mut r, 17);
    assert_eq!(from(&log, 0), expected);
    drop((r, at_five, at_twelve));
    assert_eq!(tally.live(), 0);
}

#[test]
fn a_snapshot_restored_into_another_registry_delivers_its_jobs() {
    let tally = Arc::new(Tally::default());
    let (log_a, log_b) = (Log::default(), Log::default());
    let mut a = registry(2, &tally, &log_a);
    run_to(&mut a, 10);
    let at_ten = a.snapshot().unwrap();
    run_to(&mut a, 30);
    let mut b = registry(2, &tally, &log_b);
    b.restore(&at_ten).unwrap();
    run_to(&mut b, 30);
    assert_eq!(from(&log_b, 0), from(&log_a, 10));
    // At 10..=17 (requested at 7..=14) and at 23..=29: ids 7..=21, B numbering its jobs on
    // from the snapshot's next id.
    assert_eq!(from(&log_b, 0).len(), 15);
    drop((a, b, at_ten));
    assert_eq!(tally.live(), 0);
}

#[test]
fn a_restore_into_another_registry_is_the_same_for_every_worker_count() {
    let expected = straight(1, 10, 24);
    // Under Miri two pairs: the inline pool against a parallel one, both ways.
    let pairs: &[(usize, usize)] = if cfg!(miri) {
        &[(1, 3), (3, 1)]
    } else {
        &[(1, 16), (2, 8), (3, 3), (8, 2), (16, 1)]
    };
    for &(workers_a, workers_b) in pairs {
        let tally = Arc::new(Tally::default());
        let (log_a, log_b) = (Log::default(), Log::default());
        let mut a = registry(workers_a, &tally, &log_a);
        run_to(&mut a, 10);
        let at_ten = a.snapshot().unwrap();
        drop(a); // the snapshot alone keeps its jobs
        let mut b = registry(workers_b, &tally, &log_b);
        run_to(&mut b, 4);
        b.restore(&at_ten).unwrap();
        drop(at_ten);
        run_to(&mut b, 24);
        assert_eq!(
            from(&log_b, 10),
            expected,
            "{workers_a} -> {workers_b} workers"
        );
        drop(b);
        assert_eq!(tally.live(), 0, "{workers_a} -> {workers_b} workers");
    }
}

#[test]
fn a_snapshot_whose_jobs_cannot_be_delivered_is_refused_and_changes_nothing() {
    let tally = Arc::new(Tally::default());
    let log = Log::default();
    let mut a = registry(2, &tally, &log);
    run_to(&mut a, 6);
    let at_six = a.snapshot().unwrap();
    let name = core::any::type_name::<Counted>();
    // Not registered.
    let mut bare = Registry::with_workers(2);
    assert_eq!(
        bare.restore(&at_six),
        Err(SnapshotError::JobsNotRestorable {
            result_type: name,
            jobs: 3,
            reason: JobsRefusal::NotRegistered
        })
    );
    assert_eq!(bare.tick(), 0);
    // Another latency.
    let mut other = Registry::with_workers(2);
    other
        .add_deadline_jobs(K + 1, |_: &mut Registry, _: Delivered<Counted>| {})
        .unwrap();
    let refused = other.restore(&at_six).unwrap_err();
    assert_eq!(
        refused,
        SnapshotError::JobsNotRestorable {
            result_type: name,
            jobs: 3,
            reason: JobsRefusal::Refused(DeadlineError::LatencyMismatch {
                captured: K,
                latency: K + 1
            })
        }
    );
    assert!(refused.to_string().contains("same latency"), "{refused}");
    // Settled.
    let settled_log = Log::default();
    let mut settled = registry(2, &tally, &settled_log);
    settled.settle_jobs();
    assert!(matches!(
        settled.restore(&at_six),
        Err(SnapshotError::JobsNotRestorable {
            reason: JobsRefusal::Refused(DeadlineError::Settled),
            ..
        })
    ));
    // Before a confirmed tick: the registry goes on as if nothing was asked.
    run_to(&mut a, 9);
    a.confirm_tick(8);
    assert_eq!(
        a.restore(&at_six),
        Err(SnapshotError::BeforeConfirmed {
            tick: 6,
            confirmed: 8
        })
    );
    run_to(&mut a, 14);
    assert_eq!(from(&log, 0), straight(2, 0, 14));
    drop((a, at_six, settled));
    assert_eq!(tally.live(), 0);
}

#[test]
fn a_save_with_jobs_in_flight_is_refused() {
    let tally = Arc::new(Tally::default());
    let log = Log::default();
    let mut a = registry(2, &tally, &log);
    run_to(&mut a, 10);
    match a.save_to_vec() {
        Err(SaveError::JobsInFlight { jobs }) => {
            assert_eq!(jobs, [(core::any::type_name::<Counted>(), 3)]);
        }
        other => panic!("{other:?}"),
    }
    run_to(&mut a, 20); // the quiet window: nothing in flight
    assert!(a.save_to_vec().is_ok());
    drop(a);
    assert_eq!(tally.live(), 0);
}

#[test]
fn a_load_past_a_pending_due_tick_discards_the_jobs_in_flight() {
    let (tally, tally_b) = (Arc::new(Tally::default()), Arc::new(Tally::default()));
    let (log_a, log_b) = (Log::default(), Log::default());
    let mut a = registry(2, &tally, &log_a);
    run_to(&mut a, 20);
    let save = a.save_to_vec().unwrap();
    run_to(&mut a, 26);
    // B at tick 5 has jobs in flight due at 5, 6 and 7.
    let mut b = registry(2, &tally_b, &log_b);
    run_to(&mut b, 5);
    b.load_into(&save).unwrap();
    assert_eq!(b.tick(), 20);
    assert_eq!(
        tally_b.live(),
        0,
        "B's jobs in flight were discarded, their results dropped"
    );
    run_to(&mut b, 26);
    // The same ticks and results; job ids go on from B's own count (a save holds none).
    let plain = |v: Vec<(u64, u64, u64, u64, u64)>| -> Vec<_> {
        v.into_iter().map(|(t, _, r, d, x)| (t, r, d, x)).collect()
    };
    assert_eq!(plain(from(&log_b, 20)), plain(from(&log_a, 20)));
    assert_eq!(from(&log_b, 20).len(), 3);
    drop((a, b));
    assert_eq!(tally.live() + tally_b.live(), 0);
}

#[test]
fn a_load_before_a_confirmed_tick_is_a_typed_error() {
    let tally = Arc::new(Tally::default());
    let (log_a, log_b) = (Log::default(), Log::default());
    let mut a = registry(2, &tally, &log_a);
    run_to(&mut a, 20);
    let save = a.save_to_vec().unwrap();
    let mut b = registry(2, &tally, &log_b);
    run_to(&mut b, 30);
    b.confirm_tick(25);
    match b.load_into(&save) {
        Err(LoadError::Snapshot(SnapshotError::BeforeConfirmed {
            tick: 20,
            confirmed: 25,
        })) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(b.tick(), 30, "nothing changed");
    run_to(&mut b, 34);
    assert_eq!(from(&log_b, 0), straight(2, 0, 34));
    // A registry that confirmed only earlier ticks loads it.
    let mut c = registry(2, &tally, &Log::default());
    run_to(&mut c, 12);
    c.confirm_tick(12);
    c.load_into(&save).unwrap();
    assert_eq!(c.tick(), 20);
    drop((a, b, c));
    assert_eq!(tally.live(), 0);
}

/// A result whose `Drop` panics when it was made by a job of the first timeline.
struct Nasty {
    panics: bool,
    tally: Arc<Tally>,
}

impl Clone for Nasty {
    fn clone(&self) -> Self {
        self.tally.made.fetch_add(1, Ordering::SeqCst);
        Nasty {
            panics: self.panics,
            tally: Arc::clone(&self.tally),
        }
    }
}

impl Drop for Nasty {
    fn drop(&mut self) {
        self.tally.dropped.fetch_add(1, Ordering::SeqCst);
        if self.panics {
            panic!("a result's Drop panicked");
        }
    }
}

#[test]
fn a_panicking_drop_of_a_discarded_result_is_raised_after_the_restore() {
    let tally = Arc::new(Tally::default());
    let nasty = Arc::new(AtomicBool::new(false));
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut r = Registry::with_workers(2);
    let sink = Arc::clone(&log);
    r.add_deadline_jobs(K, move |r: &mut Registry, done: Delivered<Nasty>| {
        let panics = done.result.as_ref().unwrap().panics;
        sink.lock()
            .unwrap()
            .push((r.tick(), done.ticket.id(), panics));
    })
    .unwrap();
    let (t, n) = (Arc::clone(&tally), Arc::clone(&nasty));
    r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        let (tally, panics) = (Arc::clone(&t), n.load(Ordering::SeqCst));
        r.request_job((), move |()| {
            tally.made.fetch_add(1, Ordering::SeqCst);
            Nasty { panics, tally }
        })
        .unwrap();
    });
    run_to(&mut r, 5);
    let at_five = r.snapshot().unwrap();
    nasty.store(true, Ordering::SeqCst);
    run_to(&mut r, 7); // jobs 5 and 6 in flight, their results' `Drop` panics
    nasty.store(false, Ordering::SeqCst);
    // Made: jobs 0..=6 and the copies of 2 and 3 delivered while the snapshot held them. Wait
    // until jobs 5 and 6 ran (a job discarded before it starts makes no result).
    for _ in 0..5000 {
        if tally.made.load(Ordering::SeqCst) == 9 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(tally.made.load(Ordering::SeqCst), 9);
    let caught = catch_unwind(AssertUnwindSafe(|| r.restore(&at_five))).unwrap_err();
    assert_eq!(
        caught.downcast_ref::<&str>(),
        Some(&"a result's Drop panicked")
    );
    // Fully restored: both discarded results dropped once; alive are the results of jobs
    // 2, 3 and 4 that the snapshot holds.
    assert_eq!(r.tick(), 5);
    assert_eq!(tally.live(), 3);
    log.lock().unwrap().clear();
    run_to(&mut r, 9);
    assert_eq!(
        *log.lock().unwrap(),
        [(5, 2, false), (6, 3, false), (7, 4, false), (8, 5, false)]
    );
    drop((r, at_five));
    assert_eq!(tally.live(), 0);
}

#[test]
fn another_registry_waits_for_a_job_still_running_on_the_first_ones_pool() {
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let make = |seen: &Arc<Mutex<Vec<(u64, u32)>>>| {
        let mut r = Registry::with_workers(2);
        let sink = Arc::clone(seen);
        r.add_deadline_jobs(2, move |r: &mut Registry, done: Delivered<u32>| {
            sink.lock().unwrap().push((r.tick(), done.result.unwrap()));
        })
        .unwrap();
        r
    };
    let mut a = make(&Arc::new(Mutex::new(Vec::new())));
    a.request_job((), move |()| {
        wait.recv().unwrap();
        7u32
    })
    .unwrap();
    let at_zero = a.snapshot().unwrap();
    let mut b = make(&seen);
    b.restore(&at_zero).unwrap();
    // Released (on a machine that is not too slow) while B waits for it at tick 2: the
    // completion on A's pool must reach B.
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(30));
        go.send(()).unwrap();
    });
    run_to(&mut b, 3);
    release.join().unwrap();
    assert_eq!(*seen.lock().unwrap(), [(2, 7)]);
}
