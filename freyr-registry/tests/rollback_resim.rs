//! Deadline jobs and async pumps across a registry restore: a job requested before the
//! snapshot tick S and due after it is delivered again at its due tick with the same ticket
//! and result; a job requested at or after S is discarded and the re-simulation's own request
//! replaces it; a tick before a confirmed one cannot be restored to (a typed error); a pump
//! invalidated on a restore discards the result it launched before as stale. Over 1, 2, 3 and
//! 8 workers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use freyr::snapshot::SnapshotError;
use freyr::time::deadline::Delivered;
use freyr::time::pump::{AsyncPump, Discard};
use freyr::{Phase, Registry};

const K: u64 = 3;

/// What the apply callback saw: (tick, ticket id, requested at, due, result).
type Log = Arc<Mutex<Vec<(u64, u64, u64, u64, u64)>>>;

/// A registry whose system requests, on every tick t, a job of `t * question` (read when
/// the tick runs), logging the deliveries.
fn registry(workers: usize, log: &Log, question: &Arc<AtomicU64>) -> Registry {
    let mut r = Registry::with_workers(workers);
    let sink = Arc::clone(log);
    r.add_deadline_jobs(K, move |r: &mut Registry, done: Delivered<u64>| {
        let t = done.ticket;
        let result = done.result.unwrap();
        sink.lock()
            .unwrap()
            .push((r.tick(), t.id(), t.requested_at(), t.due(), result));
    })
    .unwrap();
    let question = Arc::clone(question);
    r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        let t = r.tick();
        let q = question.load(Ordering::Relaxed);
        r.request_job(t * q, |x: u64| x + 1).unwrap();
    });
    r
}

fn run(r: &mut Registry, ticks: u64) {
    for _ in 0..ticks {
        r.update(0.1);
    }
}

#[test]
fn jobs_in_flight_across_the_snapshot_tick_are_delivered_again() {
    for workers in [1, 2, 3, 8] {
        let one = Arc::new(AtomicU64::new(1));
        let straight_log = Log::default();
        let mut straight = registry(workers, &straight_log, &one);
        run(&mut straight, 12);

        let log = Log::default();
        let mut r = registry(workers, &log, &one);
        run(&mut r, 5);
        let snapshot = r.snapshot().unwrap(); // the start of tick 5
        run(&mut r, 4); // ticks 5..=8: jobs 2, 3, 4 (requested at 2..=4) land at 5..=7
        log.lock().unwrap().clear();
        r.restore(&snapshot).unwrap();
        assert_eq!(r.tick(), 5);
        run(&mut r, 7); // ticks 5..=11 again
        let again = log.lock().unwrap().clone();
        let expected: Vec<_> = straight_log
            .lock()
            .unwrap()
            .iter()
            .filter(|d| d.0 >= 5)
            .copied()
            .collect();
        // Jobs 2..=4 (requested before 5) come again from the snapshot; jobs 5.. are the
        // re-simulation's own requests, with the tickets and results of the straight run.
        assert_eq!(again, expected, "{workers} workers");
        assert_eq!(again[0], (5, 2, 2, 5, 3));
    }
}

#[test]
fn a_job_requested_at_or_after_the_snapshot_tick_is_replaced() {
    let question = Arc::new(AtomicU64::new(1));
    let log = Log::default();
    let mut r = registry(2, &log, &question);
    run(&mut r, 4);
    let snapshot = r.snapshot().unwrap(); // tick 4
    run(&mut r, 3); // jobs 4, 5, 6 requested with the first question
    r.restore(&snapshot).unwrap();
    log.lock().unwrap().clear();
    // The re-simulation asks another question: its answers, not the discarded ones, land.
    question.store(7, Ordering::Relaxed);
    run(&mut r, 4); // ticks 4..=7
    let seen = log.lock().unwrap().clone();
    // Jobs 1, 2, 3 were requested before the snapshot (the first question, held by it);
    // job 4, requested at 4 in the re-simulation, has the same ticket and the new answer.
    assert_eq!(
        seen,
        [
            (4, 1, 1, 4, 2),
            (5, 2, 2, 5, 3),
            (6, 3, 3, 6, 4),
            (7, 4, 4, 7, 29)
        ]
    );
}

#[test]
fn restoring_before_a_confirmed_tick_is_refused_before_anything_changes() {
    let log = Log::default();
    let mut r = registry(2, &log, &Arc::new(AtomicU64::new(1)));
    run(&mut r, 2);
    let old = r.snapshot().unwrap(); // tick 2
    run(&mut r, 6);
    r.confirm_tick(6);
    let refused = r.restore(&old).unwrap_err();
    assert_eq!(
        refused,
        SnapshotError::BeforeConfirmed {
            tick: 2,
            confirmed: 6
        }
    );
    assert!(refused.to_string().contains("confirm_tick"), "{refused}");
    assert_eq!(r.tick(), 8, "nothing changed");
    run(&mut r, 2);
    assert_eq!(log.lock().unwrap().last().unwrap().0, 9);
}

type Log1 = Arc<Mutex<Vec<u64>>>;

/// A system that launches one pump job per tick and invalidates its pump when the registry
/// was restored since it last ran.
struct Labeler {
    pump: AsyncPump<u64, freyr::Entity>,
    target: freyr::Entity,
    seen_rewinds: u64,
    applied: Arc<Mutex<Vec<u64>>>,
    stale: Arc<Mutex<Vec<u64>>>,
    launched: Arc<Mutex<Vec<u64>>>,
}

impl freyr::System for Labeler {
    fn update(&mut self, r: &mut Registry, _: f32) {
        if r.rewinds() != self.seen_rewinds {
            self.seen_rewinds = r.rewinds();
            self.pump.invalidate();
        }
        let (applied, stale) = (Arc::clone(&self.applied), Arc::clone(&self.stale));
        r.drain_pump(
            &mut self.pump,
            |_, _, v| applied.lock().unwrap().push(v),
            |_, _, why| {
                if let Discard::Stale(v) = why {
                    stale.lock().unwrap().push(v);
                }
            },
        );
        let (target, tick) = (self.target, r.tick());
        if self.pump.is_ready() {
            self.pump
                .launch(r.pool(), target, tick, |t: u64| Ok(t))
                .unwrap();
            self.launched.lock().unwrap().push(tick);
        }
    }
}

#[test]
fn a_pump_result_launched_before_a_restore_is_discarded_as_stale() {
    for workers in [1, 3] {
        let (applied, stale, launched): (Log1, Log1, Log1) = Default::default();
        let mut r = Registry::with_workers(workers);
        let target = r.spawn((0u8,));
        r.register_snapshot_copy::<u8>();
        r.add_system(
            Phase::Update,
            Labeler {
                pump: AsyncPump::new(),
                target,
                seen_rewinds: 0,
                applied: Arc::clone(&applied),
                stale: Arc::clone(&stale),
                launched: Arc::clone(&launched),
            },
        );
        let snapshot = r.snapshot().unwrap(); // tick 0
        run(&mut r, 3); // launches 0, 1, 2 (or fewer, coalesced while one is in flight)
        let before = applied.lock().unwrap().len();
        let in_flight = *launched.lock().unwrap().last().unwrap();
        r.restore(&snapshot).unwrap();
        // Tick 0 again: the launch still in flight, of the replaced timeline, is discarded as
        // stale once it settles, never applied to the restored world.
        run(&mut r, 3);
        // On a pool the launch settles when it settles: drain until it did (bounded).
        for _ in 0..2000 {
            if !stale.lock().unwrap().is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
            run(&mut r, 1);
        }
        assert_eq!(*stale.lock().unwrap(), [in_flight], "{workers} workers");
        let after = applied.lock().unwrap()[before..].to_vec();
        let relaunched = launched.lock().unwrap().len() - 1 - before;
        assert!(after.len() <= relaunched, "{workers} workers: {after:?}");
        if workers == 1 {
            // Inline: every launch is done when made, so the timeline is exact.
            assert_eq!(*applied.lock().unwrap(), [0, 1, 0, 1]);
        }
    }
}
