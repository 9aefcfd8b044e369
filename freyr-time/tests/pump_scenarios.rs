//! The async pump's scenarios: launch-order delivery with out-of-order
//! completion, capacity gating and coalescing, epoch discard, generation
//! discard after despawn, settle, and results applied only by the owner's
//! drain, never by the thread that completes them.

use std::sync::mpsc;
use std::time::Duration;

use freyr_sched::ThreadPool;
use freyr_time::{AsyncPump, Completer, Discard, Launch, PumpError};

fn external<R, C>(pump: &mut AsyncPump<R, C>, context: C) -> Completer<R>
where
    R: Send + 'static,
{
    match pump.launch_external(context) {
        Ok(Launch::External(completer)) => completer,
        Ok(_) => panic!("expected an external launch, the pump was full"),
        Err(err) => panic!("expected an external launch: {err}"),
    }
}

#[test]
fn delivery_is_in_launch_order_whatever_the_completion_order() {
    let mut pump: AsyncPump<u32, u32> = AsyncPump::with_capacity(4).unwrap();
    let handles: Vec<_> = (0..4).map(|i| external(&mut pump, i)).collect();
    let mut applied = Vec::new();
    // Complete 3, 1, 2, 0 from other threads, draining after each.
    let mut handles: Vec<Option<Completer<u32>>> = handles.into_iter().map(Some).collect();
    for i in [3usize, 1, 2, 0] {
        let completer = handles[i].take().unwrap();
        std::thread::spawn(move || completer.complete(i as u32 * 100).unwrap())
            .join()
            .unwrap();
        pump.drain_all(|ctx, v| applied.push((ctx, v)), |_, why| panic!("{why:?}"));
        if i != 0 {
            assert!(
                applied.is_empty(),
                "launch 0 is still in flight: nothing may pass it"
            );
        }
    }
    assert_eq!(applied, [(0, 0), (1, 100), (2, 200), (3, 300)]);
}

#[test]
fn pool_work_finishing_out_of_order_is_delivered_in_launch_order() {
    let pool = ThreadPool::new(4);
    let mut pump: AsyncPump<u64, u64> = AsyncPump::with_capacity(8).unwrap();
    for i in 0..8u64 {
        // Earlier launches sleep longer, so they complete last.
        pump.launch(&pool, i, i, |i| {
            std::thread::sleep(Duration::from_millis(2 * (8 - i)));
            Ok(i * i)
        })
        .unwrap();
    }
    let mut applied = Vec::new();
    while pump.in_flight() > 0 {
        pump.drain_all(|ctx, v| applied.push((ctx, v)), |_, why| panic!("{why:?}"));
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(applied, (0..8).map(|i| (i, i * i)).collect::<Vec<_>>());
}

#[test]
fn capacity_gates_launches_and_coalesces_the_extras() {
    let mut pump: AsyncPump<u8> = AsyncPump::new();
    let first = external(&mut pump, ());
    for _ in 0..5 {
        assert!(matches!(pump.launch_external(()), Ok(Launch::Coalesced)));
    }
    assert!(!pump.is_ready());
    assert_eq!(pump.stats().coalesced, 5);
    // Completion alone does not free capacity: draining does.
    first.complete(1).unwrap();
    assert!(!pump.is_ready());
    pump.drain_all(|_, _| {}, |_, _| {});
    assert!(pump.is_ready());
    // The five extras are one pending request, relaunched once.
    assert!(pump.take_coalesced());
    assert!(!pump.take_coalesced());
    let _again = external(&mut pump, ());
    assert_eq!(pump.stats().launched, 2);
}

#[test]
fn capacity_zero_is_rejected() {
    let err = AsyncPump::<u8>::with_capacity(0).unwrap_err();
    assert_eq!(err, PumpError::ZeroCapacity);
    assert!(err.to_string().contains("at least 1"), "{err}");
}

#[test]
fn an_epoch_bump_discards_older_launches_only() {
    let mut pump: AsyncPump<&str> = AsyncPump::with_capacity(3).unwrap();
    let old = external(&mut pump, ());
    pump.invalidate();
    let new = external(&mut pump, ());
    old.complete("old").unwrap();
    new.complete("new").unwrap();
    let (mut applied, mut discarded) = (Vec::new(), Vec::new());
    pump.drain_all(|(), v| applied.push(v), |(), why| discarded.push(why));
    assert_eq!(applied, ["new"]);
    assert_eq!(discarded, [Discard::Stale("old")]);
    assert_eq!(pump.stats().stale, 1);
}

/// A toy entity table: slot index -> current generation (None = free).
struct Entities(Vec<Option<u32>>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Handle {
    index: usize,
    generation: u32,
}

impl Entities {
    fn is_live(&self, h: &Handle) -> bool {
        self.0.get(h.index).copied().flatten() == Some(h.generation)
    }
    fn despawn(&mut self, h: Handle) {
        self.0[h.index] = None;
    }
    fn respawn_in(&mut self, index: usize, generation: u32) -> Handle {
        self.0[index] = Some(generation);
        Handle { index, generation }
    }
}

#[test]
fn results_for_a_despawned_entity_are_dropped_not_applied_to_its_successor() {
    let pool = ThreadPool::new(3);
    let mut world = Entities(vec![Some(0), Some(0), Some(0)]);
    let handles: Vec<Handle> = (0..3)
        .map(|index| Handle {
            index,
            generation: 0,
        })
        .collect();
    let mut pump: AsyncPump<u32, Handle> = AsyncPump::with_capacity(3).unwrap();
    for &h in &handles {
        pump.launch(&pool, h, h.index as u32, |i| Ok(i + 10))
            .unwrap();
    }
    // Entity 1 dies while its result is in flight, and its slot is reused.
    world.despawn(handles[1]);
    let successor = world.respawn_in(1, 1);
    let mut hp = [0u32; 3];
    let mut gone = Vec::new();
    while pump.in_flight() > 0 {
        pump.drain(
            |h| world.is_live(h),
            |h, v| hp[h.index] = v,
            |h, why| gone.push((h, why)),
        );
    }
    assert_eq!(hp, [10, 0, 12], "the successor in slot 1 is untouched");
    assert_eq!(gone, [(handles[1], Discard::TargetGone(11))]);
    assert!(world.is_live(&successor));
}

#[test]
fn failures_go_to_the_discard_path_with_their_error() {
    let pool = ThreadPool::new(2);
    let mut pump: AsyncPump<u8, &str> = AsyncPump::with_capacity(4).unwrap();
    pump.launch(&pool, "rejects", (), |()| Err(String::from("bad request")))
        .unwrap();
    pump.launch(&pool, "panics", (), |()| -> Result<u8, String> {
        panic!("worker died")
    })
    .unwrap();
    let abandoned = external(&mut pump, "abandoned");
    drop(abandoned);
    pump.launch(&pool, "ok", (), |()| Ok(1)).unwrap();
    let (mut applied, mut discarded) = (Vec::new(), Vec::new());
    while pump.in_flight() > 0 {
        pump.drain_all(
            |c, v| applied.push((c, v)),
            |c, why| discarded.push((c, format!("{why:?}"))),
        );
    }
    assert_eq!(applied, [("ok", 1)]);
    assert_eq!(discarded.len(), 3);
    assert!(discarded[0].1.contains("bad request"));
    assert!(discarded[1].1.contains("worker died"));
    assert_eq!(discarded[2], ("abandoned", String::from("Abandoned")));
    let stats = pump.stats();
    assert_eq!((stats.rejected, stats.panicked, stats.applied), (2, 1, 1));
    // The pool is still usable after the panic.
    assert!(matches!(
        pump.launch(&pool, "again", (), |()| Ok(2)),
        Ok(Launch::Started(_))
    ));
}

#[test]
fn completion_never_applies_anything_only_the_owner_drains() {
    let mut pump: AsyncPump<Vec<u8>> = AsyncPump::new();
    let completer = external(&mut pump, ());
    let (done_tx, done_rx) = mpsc::channel();
    let io = std::thread::spawn(move || {
        completer.complete(vec![1, 2, 3]).unwrap();
        done_tx.send(()).unwrap();
    });
    done_rx.recv().unwrap();
    io.join().unwrap();
    // Completed on another thread, but still waiting in the pump: the state
    // the owner would apply it to has not changed.
    let mut owner_state: Vec<u8> = Vec::new();
    assert_eq!(pump.in_flight(), 1);
    assert!(owner_state.is_empty());
    pump.drain_all(|(), v| owner_state = v, |_, _| unreachable!());
    assert_eq!(owner_state, [1, 2, 3]);
}

#[test]
fn settle_waits_for_running_work_cancels_the_rest_and_refuses_more() {
    let pool = ThreadPool::new(2);
    let mut pump: AsyncPump<u32, u32> = AsyncPump::with_capacity(4).unwrap();
    let (release, wait) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    pump.launch(&pool, 0, (), move |()| {
        started_tx.send(()).unwrap();
        wait.recv().unwrap();
        Ok(0)
    })
    .unwrap();
    started.recv().unwrap();
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ran_in_job = std::sync::Arc::clone(&ran);
    pump.launch(&pool, 1, (), move |()| {
        ran_in_job.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(1)
    })
    .unwrap();
    let late = external(&mut pump, 2);
    // Release launch 0 only once `settle` has cancelled everything (the external launch is the
    // last one it cancels), never on a timer: on a loaded machine a timer can fire before
    // `settle` runs, and the freed worker would then start launch 1 before it is cancelled.
    let releaser = std::thread::spawn(move || {
        while late.is_wanted() {
            std::thread::yield_now();
        }
        release.send(()).unwrap();
        late
    });
    let mut cancelled = Vec::new();
    assert_eq!(pump.settle(&pool, |c, why| cancelled.push((c, why))), Ok(3));
    let late = releaser.join().unwrap();
    assert_eq!(
        cancelled,
        [
            // Launch 0 was running: settle waited for it, and it finished with its value.
            (0, Discard::Unapplied(0)),
            (1, Discard::Cancelled),
            (2, Discard::Cancelled)
        ]
    );
    assert!(
        !ran.load(std::sync::atomic::Ordering::Relaxed),
        "a cancelled launch ran"
    );
    assert!(!late.is_wanted());
    assert_eq!(late.complete(5), Err(5), "a late completion is refused");
    assert_eq!(
        pump.launch(&pool, 3, (), |()| Ok(3)).unwrap_err(),
        PumpError::Settled
    );
    assert_eq!(pump.launch_external(4).unwrap_err(), PumpError::Settled);
    assert_eq!(pump.in_flight(), 0);
}

#[test]
fn a_panicking_apply_does_not_stop_the_drain() {
    let mut pump: AsyncPump<u32, u32> = AsyncPump::with_capacity(3).unwrap();
    let completers: Vec<_> = (0..3).map(|i| external(&mut pump, i)).collect();
    for (i, c) in completers.into_iter().enumerate() {
        c.complete(i as u32 * 10).unwrap();
    }
    let mut applied = Vec::new();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pump.drain_all(
            |ctx, v| {
                applied.push((ctx, v));
                if ctx == 0 {
                    panic!("apply of launch 0");
                }
            },
            |_, why| panic!("{why:?}"),
        )
    }))
    .unwrap_err();
    assert_eq!(caught.downcast_ref::<&str>(), Some(&"apply of launch 0"));
    assert_eq!(
        applied,
        [(0, 0), (1, 10), (2, 20)],
        "each result once, in order"
    );
    assert_eq!(pump.in_flight(), 0);
    assert_eq!(pump.stats().applied, 3);
}

#[test]
fn panicking_discards_and_liveness_tests_lose_nothing_either() {
    let mut pump: AsyncPump<u32, u32> = AsyncPump::with_capacity(4).unwrap();
    let completers: Vec<_> = (0..4).map(|i| external(&mut pump, i)).collect();
    for (i, c) in completers.into_iter().enumerate() {
        if i == 1 {
            c.reject(String::from("no")).unwrap();
        } else {
            c.complete(i as u32).unwrap();
        }
    }
    let (mut applied, mut discarded) = (Vec::new(), Vec::new());
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pump.drain(
            |&ctx| {
                assert_ne!(ctx, 2, "liveness test of launch 2");
                true
            },
            |ctx, v| applied.push((ctx, v)),
            |ctx, why| {
                discarded.push((ctx, why));
                panic!("discard of launch {ctx}");
            },
        )
    }))
    .unwrap_err();
    assert_eq!(
        caught.downcast_ref::<String>().map(String::as_str),
        Some("discard of launch 1")
    );
    assert_eq!(applied, [(0, 0), (3, 3)]);
    assert_eq!(discarded, [(1, Discard::Rejected(String::from("no")))]);
    // Launch 2's result was dropped when its liveness test panicked; it is counted.
    let stats = pump.stats();
    assert_eq!(
        (stats.applied, stats.discarded, stats.rejected, stats.stale),
        (2, 2, 1, 1)
    );
    assert_eq!(pump.in_flight(), 0);
}

#[test]
fn settle_reports_what_became_of_each_launch() {
    let pool = ThreadPool::new(2);
    let mut pump: AsyncPump<u32, u32> = AsyncPump::with_capacity(6).unwrap();
    pump.launch(&pool, 0, (), |()| -> Result<u32, String> {
        panic!("launch 0 crashed")
    })
    .unwrap();
    pump.launch(&pool, 1, (), |()| Ok(11)).unwrap();
    pump.launch(&pool, 2, (), |()| Err(String::from("launch 2 refused")))
        .unwrap();
    let done = external(&mut pump, 3);
    done.complete(33).unwrap();
    drop(external(&mut pump, 4)); // abandoned
    let never = external(&mut pump, 5);
    // Every pool launch has finished before settle runs.
    while pump.drainable() < 5 {
        std::thread::yield_now();
    }
    let mut why = Vec::new();
    assert_eq!(pump.settle(&pool, |c, d| why.push((c, d))), Ok(6));
    assert!(matches!(&why[0], (0, Discard::Panicked(p)) if p.message() == "launch 0 crashed"));
    assert_eq!(
        why[1..],
        [
            (1, Discard::Unapplied(11)),
            (2, Discard::Rejected(String::from("launch 2 refused"))),
            (3, Discard::Unapplied(33)),
            (4, Discard::Abandoned),
            (5, Discard::Cancelled),
        ]
    );
    let stats = pump.stats();
    assert_eq!((stats.discarded, stats.panicked, stats.rejected), (6, 1, 2));
    assert_eq!(never.complete(1), Err(1));
}

#[test]
fn a_panicking_discard_in_settle_still_hands_every_launch_over() {
    let mut pump: AsyncPump<u32, u32> = AsyncPump::with_capacity(3).unwrap();
    let _pending: Vec<_> = (0..3).map(|i| external(&mut pump, i)).collect();
    let mut seen = Vec::new();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pump.settle(&ThreadPool::new(1), |c, d| {
            seen.push((c, d));
            panic!("discard {c}");
        })
    }))
    .unwrap_err();
    assert_eq!(
        caught.downcast_ref::<String>().map(String::as_str),
        Some("discard 0")
    );
    assert_eq!(
        seen,
        [
            (0, Discard::Cancelled),
            (1, Discard::Cancelled),
            (2, Discard::Cancelled)
        ]
    );
    assert_eq!(pump.in_flight(), 0);
}
