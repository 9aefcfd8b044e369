//! More attacks on the fixed-tick frame loop (see `time_frame_attack.rs`): a clock that panics
//! while read, systems and gates that panic mid-frame, the catch-up bound at its limits, clocks
//! switched between frames and from inside one, `run_frame` called from a system, and the same
//! manual clock sequence on 1, 2, 8 and 16 workers.

mod time_frame_support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use time_frame_support::*;

use freyr::time::{
    Clock, DEFAULT_MAX_CATCHUP_TICKS, FixedStepError, ManualClock, clamp_catchup_ticks,
};
use freyr::{Phase, Registry, StableHash};

/// A clock that panics on demand, counting its readings.
#[derive(Clone)]
struct Flaky {
    inner: ManualClock,
    fail: Arc<AtomicBool>,
}

impl Clock for Flaky {
    fn now(&mut self) -> Duration {
        assert!(!self.fail.load(Ordering::SeqCst), "the clock broke");
        self.inner.now()
    }
}

/// A clock whose `now` panics aborts the frame before any tick runs: the tick number, the
/// profile's ticks and frames are unchanged, no system ran, and once the clock reads again
/// the time it owes (including the time that passed while it was broken) runs with the next
/// numbers.
#[test]
fn a_clock_that_panics_leaves_the_registry_usable_and_consistent() {
    let inner = ManualClock::new();
    let fail = Arc::new(AtomicBool::new(false));
    let mut r = Registry::with_workers(2);
    r.insert_resource(Seen(Vec::new()));
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        let tick = r.tick();
        r.resource_mut::<Seen>().unwrap().0.push(tick);
    });
    let clock = Flaky {
        inner: inner.clone(),
        fail: Arc::clone(&fail),
    };
    fail.store(true, Ordering::SeqCst);
    let msg = panics(|| {
        let _ = r.set_fixed_step(DT, clock.clone());
    });
    assert!(msg.contains("the clock broke"), "{msg}");
    assert!(
        r.fixed_step().is_none(),
        "a failed install installs nothing"
    );
    fail.store(false, Ordering::SeqCst);
    r.set_fixed_step(DT, clock).unwrap();
    inner.advance(Duration::from_millis(25));
    assert_eq!(r.run_frame().ran, 2);
    let before = r.profile().time;

    fail.store(true, Ordering::SeqCst);
    inner.advance(Duration::from_millis(20));
    let msg = panics(|| {
        let _ = r.run_frame();
    });
    assert!(msg.contains("the clock broke"), "{msg}");
    let msg = panics(|| {
        let _ = r.time_until_next_tick();
    });
    assert!(msg.contains("the clock broke"), "{msg}");
    assert_eq!(r.tick(), 2);
    assert_eq!(seen(&r), [0, 1]);
    let after = r.profile().time;
    assert_eq!((after.ticks, after.frames), (before.ticks, before.frames));
    assert_eq!(r.current_phase(), None);

    fail.store(false, Ordering::SeqCst);
    let frame = r.run_frame();
    assert_eq!(
        (frame.first_tick, frame.ran),
        (2, 2),
        "5 + 20 ms owed: two ticks"
    );
    assert_eq!(seen(&r), [0, 1, 2, 3]);
    assert_eq!(r.time_until_next_tick(), Some(Duration::from_millis(5)));
    r.update(0.5); // still drivable by hand
    assert_eq!(r.tick(), 5);
}

/// A system that panics mid-frame ends the frame with that tick (its later phases do not run);
/// the frame's drops are already counted; the ticks it still owed run in the next frame with
/// the next numbers, none lost and none run twice.
#[test]
fn a_system_panic_ends_the_frame_and_the_next_frame_runs_the_rest() {
    let (mut r, clock) = logged(4, DT);
    let late = Arc::new(AtomicU64::new(0));
    let late_in = Arc::clone(&late);
    r.add_system(Phase::PreUpdate, |r: &mut Registry, _: f32| {
        if r.tick() == 1 {
            panic!("tick 1 fails");
        }
    });
    r.add_system(Phase::PostUpdate, move |_: &mut Registry, _: f32| {
        late_in.fetch_add(1, Ordering::SeqCst);
    });
    clock.advance(Duration::from_millis(205)); // 20 owed: 8 run, 12 dropped
    let msg = panics(|| {
        let _ = r.run_frame();
    });
    assert_eq!(msg, "tick 1 fails");
    assert_eq!(r.tick(), 2, "the panicking tick counts");
    assert_eq!(seen(&r), [0], "tick 1's Update never ran");
    assert_eq!(late.load(Ordering::SeqCst), 1, "nor its PostUpdate");
    assert_eq!(r.dropped_ticks(), 12);
    assert_eq!(r.profile().time.dropped_ticks, 12);
    assert_eq!(r.current_phase(), None);
    // No new time: the six ticks the frame still owed run now.
    let frame = r.run_frame();
    assert_eq!((frame.first_tick, frame.ran, frame.dropped), (2, 6, 0));
    assert_eq!(seen(&r), [0, 2, 3, 4, 5, 6, 7]);
    assert_eq!(r.time_until_next_tick(), Some(Duration::from_millis(5)));
    let time = r.profile().time;
    assert_eq!((time.ticks, time.frames, time.dropped_ticks), (8, 2, 12));
    assert_eq!(r.profile().time.ticks + r.dropped_ticks(), 20);
}

/// The ticks a panicking frame still owed are clamped again with the next frame's time: the
/// two frames together never run more than the bound beyond what the wall clock paid for.
#[test]
fn owed_ticks_of_a_panicked_frame_are_clamped_with_the_next_frames_time() {
    let (mut r, clock) = logged(2, DT);
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        assert_ne!(r.tick(), 0, "tick 0 fails");
    });
    clock.advance(Duration::from_millis(80)); // 8 owed
    panics(|| {
        let _ = r.run_frame();
    });
    assert_eq!(r.tick(), 1);
    clock.advance(Duration::from_millis(80)); // 7 still owed + 8 new
    let frame = r.run_frame();
    assert_eq!((frame.first_tick, frame.ran, frame.dropped), (1, 8, 7));
    assert_eq!(r.tick() + r.dropped_ticks(), 16);
    assert_eq!(seen(&r), (0..9).collect::<Vec<_>>());
}

/// A gate that panics ends the frame before the tick it was asked about: that tick is not run,
/// not counted held, and runs in the next frame with its number.
#[test]
fn a_panicking_gate_holds_nothing_and_loses_nothing() {
    let (mut r, clock) = logged(2, DT);
    let broken = Arc::new(AtomicBool::new(true));
    let broken_in = Arc::clone(&broken);
    r.add_gate(move |next: u64| {
        assert!(
            !(next == 1 && broken_in.load(Ordering::SeqCst)),
            "gate broke"
        );
        true
    });
    clock.advance(Duration::from_millis(30));
    assert_eq!(
        panics(|| {
            let _ = r.run_frame();
        }),
        "gate broke"
    );
    assert_eq!((r.tick(), seen(&r)), (1, vec![0]));
    assert_eq!(r.held_ticks(), 0);
    broken.store(false, Ordering::SeqCst);
    let frame = r.run_frame();
    assert_eq!((frame.first_tick, frame.ran, frame.held), (1, 2, false));
    assert_eq!(seen(&r), [0, 1, 2]);
}

/// The catch-up bound at its limits: 0 is refused and leaves the bound as it was; 1 runs one
/// tick per frame; `u64::MAX` runs every owed tick; the pure clamp agrees at the edges.
#[test]
fn the_catch_up_bound_at_its_limits() {
    let (mut r, clock) = logged(2, Duration::from_millis(1));
    let fixed = r.fixed_step_mut().unwrap();
    assert_eq!(
        fixed.set_max_catchup_ticks(0),
        Err(FixedStepError::ZeroMaxCatchup)
    );
    assert_eq!(fixed.max_catchup_ticks(), DEFAULT_MAX_CATCHUP_TICKS);
    fixed.set_max_catchup_ticks(1).unwrap();
    clock.advance(Duration::from_millis(5));
    let frame = r.run_frame();
    assert_eq!((frame.ran, frame.dropped), (1, 4));
    r.fixed_step_mut()
        .unwrap()
        .set_max_catchup_ticks(u64::MAX)
        .unwrap();
    clock.advance(Duration::from_millis(500));
    let frame = r.run_frame();
    assert_eq!((frame.first_tick, frame.ran, frame.dropped), (1, 500, 0));
    assert_eq!(seen(&r), (0..501).collect::<Vec<_>>());
    assert_eq!(r.dropped_ticks(), 4);

    let mut dropped = u64::MAX - 3;
    assert_eq!(
        clamp_catchup_ticks(u64::MAX, u64::MAX, &mut dropped),
        u64::MAX
    );
    assert_eq!(clamp_catchup_ticks(0, 1, &mut dropped), 0);
    assert_eq!(dropped, u64::MAX - 3);
    assert_eq!(clamp_catchup_ticks(u64::MAX, 1, &mut dropped), 1);
    assert_eq!(dropped, u64::MAX);
}

/// Switching clocks between frames: tick numbers continue the registry's, the new clock's
/// current reading is its origin (no time owed from the old clock or from the new one's past),
/// the old clock no longer drives anything, and the old driver's gates are gone.
#[test]
fn switching_clocks_between_frames_continues_the_ticks() {
    let (mut r, old) = logged(2, DT);
    r.add_gate(|_: u64| false);
    old.advance(Duration::from_millis(30));
    assert!(r.run_frame().held);
    let new = ManualClock::new();
    new.set(Duration::from_secs(1000));
    r.set_fixed_step(Duration::from_millis(20), new.clone())
        .unwrap();
    assert_eq!(r.time_until_next_tick(), Some(Duration::from_millis(20)));
    assert_eq!(
        r.run_frame().ran,
        0,
        "nothing owed from the new clock's past"
    );
    old.advance(Duration::from_secs(10));
    assert_eq!(r.run_frame().ran, 0, "the old clock drives nothing");
    new.advance(Duration::from_millis(45));
    let frame = r.run_frame();
    assert_eq!((frame.first_tick, frame.ran, frame.held), (0, 2, false));
    r.update(0.02);
    new.advance(Duration::from_millis(15));
    let frame = r.run_frame();
    assert_eq!(
        (frame.first_tick, frame.ran),
        (3, 1),
        "numbering follows the hand-run tick"
    );
    assert_eq!(seen(&r), [0, 1, 2, 3]);
    assert_eq!(r.held_ticks(), 0, "counted since this driver");
    assert_eq!(
        r.profile().time.held_ticks,
        1,
        "the profile keeps the old refusal"
    );
}

/// A system that installs a new driver in the middle of a frame: the frame stops there (the new
/// driver owes nothing yet), and the report it returns tells the truth about the ticks that ran.
#[test]
fn switching_clocks_from_a_system_mid_frame_reports_what_ran() {
    let (mut r, clock) = logged(2, DT);
    let fresh = ManualClock::new();
    let fresh_in = fresh.clone();
    r.add_system(Phase::PostUpdate, move |r: &mut Registry, _: f32| {
        if r.tick() == 1 {
            r.set_fixed_step(DT, fresh_in.clone()).unwrap();
        }
    });
    clock.advance(Duration::from_millis(50));
    let frame = r.run_frame();
    assert_eq!(r.tick(), 2);
    assert_eq!(
        (frame.first_tick, frame.ran),
        (0, 2),
        "the report says what ran"
    );
    fresh.advance(Duration::from_millis(30));
    let frame = r.run_frame();
    assert_eq!((frame.first_tick, frame.ran), (2, 3));
    assert_eq!(seen(&r), [0, 1, 2, 3, 4]);
    assert_eq!(r.profile().time.ticks, 5);
}

/// `run_frame` called from a system is refused with a panic naming `run_frame`, before it
/// changes anything: the outer frame still runs every tick it owed, in order, and counts one
/// frame.
#[test]
fn run_frame_from_a_system_is_refused_before_it_changes_anything() {
    let (mut r, clock) = logged(2, DT);
    let refusals = Arc::new(std::sync::Mutex::new(Vec::new()));
    let refusals_in = Arc::clone(&refusals);
    r.add_system(Phase::PreUpdate, move |r: &mut Registry, _: f32| {
        let caught = catch_unwind(AssertUnwindSafe(|| {
            let _ = r.run_frame();
        }));
        let msg = message(&*caught.expect_err("nested run_frame refused"));
        refusals_in.lock().unwrap().push(msg);
    });
    clock.advance(Duration::from_millis(45));
    let frame = r.run_frame();
    assert_eq!(
        (frame.first_tick, frame.ran, frame.dropped, frame.held),
        (0, 4, 0, false)
    );
    assert_eq!(seen(&r), [0, 1, 2, 3]);
    let refusals = refusals.lock().unwrap().clone();
    assert_eq!(refusals.len(), 4);
    for msg in refusals.iter() {
        assert!(
            msg.contains("run_frame"),
            "the refusal names run_frame: {msg}"
        );
    }
    let time = r.profile().time;
    assert_eq!((time.frames, time.ticks), (1, 4));
    assert_eq!(r.time_until_next_tick(), Some(Duration::from_millis(5)));
    clock.advance(Duration::from_millis(5));
    assert_eq!(r.run_frame().ran, 1);
}

#[derive(Clone, Copy, StableHash)]
struct Pos(i64);
#[derive(Clone, Copy, StableHash)]
struct Vel(i64);

/// Drives a small simulation through a fixed, hostile clock sequence (stalls, zero frames, a
/// backwards set, a held tick) on `workers` threads; returns the world hash, the reports and
/// the counters.
fn scripted(workers: usize) -> (u64, Vec<freyr::time::FrameReport>, u64, u64, u64) {
    let clock = ManualClock::new();
    let mut r = Registry::with_workers(workers);
    r.register_hashable::<Pos>();
    r.register_hashable::<Vel>();
    r.set_fixed_step(Duration::from_millis(4), clock.clone())
        .unwrap();
    for i in 0..500 {
        r.spawn((Pos(i), Vel(i % 7 - 3)));
    }
    let gate = r.add_gate(|next: u64| next != 12);
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        let tick = r.tick() as i64;
        r.query::<(&mut Pos, &Vel)>().each_async(move |_, (p, v)| {
            p.0 = p.0.wrapping_mul(31).wrapping_add(v.0 * tick) % 1_000_003;
        });
        r.execute_tasks();
        if tick % 3 == 0 {
            r.spawn((Pos(tick), Vel(tick % 5)));
        }
    });
    let mut reports = Vec::new();
    for (i, step) in [3u64, 9, 0, 400, 4, 4, 1, 2, 120, 0, 7, 33, 4, 4, 4, 60]
        .into_iter()
        .enumerate()
    {
        if i == 9 {
            clock.set(Duration::from_millis(530)); // backwards, 13 ms
        } else {
            clock.advance(Duration::from_millis(step));
        }
        reports.push(r.run_frame());
        if i == 12 {
            assert!(r.remove_gate(gate), "tick 12 was held until now");
            let fixed = r.fixed_step_mut().unwrap();
            fixed.set_max_catchup_ticks(3).unwrap();
        }
    }
    let hash = r.world_hash_all().unwrap();
    (hash, reports, r.tick(), r.dropped_ticks(), r.held_ticks())
}

/// The same manual clock sequence gives the same reports, tick count, counters and world hash
/// on 1, 2, 8 and 16 workers.
#[test]
fn the_same_clock_sequence_gives_the_same_world_on_any_worker_count() {
    let reference = scripted(1);
    assert!(
        reference.2 > 13,
        "the run passes the held ticks: {}",
        reference.2
    );
    assert!(
        reference.3 > 0 && reference.4 > 0,
        "the run drops and holds ticks"
    );
    for workers in [2, 8, 16] {
        assert_eq!(scripted(workers), reference, "{workers} workers");
    }
}
