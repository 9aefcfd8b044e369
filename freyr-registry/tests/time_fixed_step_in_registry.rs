//! The registry's fixed-step loop: systems see gapless tick numbers whatever the frame timing,
//! the catch-up clamp's dropped ticks and the gates' held ticks are counted in the profile, and
//! a held tick runs later with the same number.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use freyr_registry::{Phase, Registry};
use freyr_time::ManualClock;

struct Ticks(Vec<u64>);

fn registry_with_log(workers: usize) -> (Registry, ManualClock) {
    let clock = ManualClock::new();
    let mut r = Registry::with_workers(workers);
    r.set_fixed_step(Duration::from_millis(10), clock.clone())
        .unwrap();
    r.insert_resource(Ticks(Vec::new()));
    r.add_system(Phase::Update, |r: &mut Registry, dt: f32| {
        assert_eq!(dt, 0.01, "every tick gets the fixed dt");
        let tick = r.tick();
        r.resource_mut::<Ticks>().unwrap().0.push(tick);
    });
    (r, clock)
}

#[test]
fn irregular_frames_give_gapless_ticks_and_count_the_dropped_ones() {
    let (mut r, clock) = registry_with_log(2);
    let mut ran = 0;
    for step_ms in [3, 25, 7, 0, 140, 12, 9] {
        clock.advance(Duration::from_millis(step_ms));
        ran += r.run_frame().ran;
    }
    let ticks = &r.resource::<Ticks>().unwrap().0;
    assert_eq!(ticks, &(0..ran).collect::<Vec<_>>());
    // 196 ms of wall time = 19 whole ticks; the 140 ms frame had 14 due and ran only 8.
    let time = r.profile().time;
    assert_eq!(time.ticks, ran);
    assert_eq!(time.frames, 7);
    assert_eq!(ran + time.dropped_ticks, 19);
    assert_eq!(r.dropped_ticks(), time.dropped_ticks);
}

#[test]
fn a_held_tick_runs_no_system_and_resumes_with_its_number() {
    let (mut r, clock) = registry_with_log(3);
    let ready = Arc::new(AtomicBool::new(false));
    let gate_ready = Arc::clone(&ready);
    r.add_gate(move |next: u64| next != 2 || gate_ready.load(Ordering::Acquire));
    clock.advance(Duration::from_millis(40));
    let frame = r.run_frame();
    assert_eq!((frame.ran, frame.held), (2, true));
    assert_eq!(r.tick(), 2);
    clock.advance(Duration::from_millis(10));
    assert_eq!(r.run_frame().ran, 0, "still held");
    ready.store(true, Ordering::Release);
    clock.advance(Duration::from_millis(10));
    let frame = r.run_frame();
    assert_eq!(
        (frame.first_tick, frame.ran),
        (2, 4),
        "the held time is still due"
    );
    assert_eq!(r.resource::<Ticks>().unwrap().0, [0, 1, 2, 3, 4, 5]);
    assert_eq!(r.held_ticks(), 2);
    assert_eq!(r.profile().time.held_ticks, 2);
}

#[test]
fn direct_updates_and_frames_share_one_tick_counter() {
    let (mut r, clock) = registry_with_log(1);
    r.update(0.01);
    clock.advance(Duration::from_millis(20));
    r.run_frame();
    r.update(0.01);
    assert_eq!(r.resource::<Ticks>().unwrap().0, [0, 1, 2, 3]);
}

#[test]
#[should_panic(expected = "install one with Registry::set_fixed_step")]
fn a_frame_without_a_fixed_step_says_what_to_do() {
    Registry::with_workers(1).run_frame();
}

#[test]
fn a_tick_that_panics_ends_the_frame_but_keeps_its_telemetry() {
    let (mut r, clock) = registry_with_log(2);
    r.add_system(Phase::PostUpdate, |r: &mut Registry, _: f32| {
        assert_ne!(r.tick(), 1, "tick 1 fails");
    });
    clock.advance(Duration::from_millis(100)); // 10 due: 8 may run, 2 dropped
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.run_frame()));
    assert!(caught.is_err());
    assert_eq!(r.resource::<Ticks>().unwrap().0, [0, 1]);
    let time = r.profile().time;
    assert_eq!((time.frames, time.dropped_ticks, time.ticks), (1, 2, 2));
    // The loop goes on from tick 2 with the time it still owes.
    clock.advance(Duration::from_millis(10));
    let frame = r.run_frame();
    assert_eq!(frame.first_tick, 2);
    assert_eq!(r.tick(), 2 + frame.ran);
}

#[test]
fn an_absurd_tick_length_is_refused_by_the_registry() {
    use freyr_time::{FixedStepError, MAX_FIXED_DT};
    let mut r = Registry::with_workers(1);
    assert_eq!(
        r.set_fixed_step(Duration::MAX, ManualClock::new()),
        Err(FixedStepError::DtTooLong { dt: Duration::MAX })
    );
    assert!(r.fixed_step().is_none());
    r.set_fixed_step(MAX_FIXED_DT, ManualClock::new()).unwrap();
    assert_eq!(r.fixed_step().unwrap().dt(), MAX_FIXED_DT);
}

#[test]
fn held_ticks_counts_gate_refusals_one_per_frame() {
    let clock = ManualClock::new();
    let mut r = Registry::with_workers(1);
    r.set_fixed_step(Duration::from_millis(1), clock.clone())
        .unwrap();
    r.add_gate(|_: u64| false);
    // One frame owing 5 ticks, held at the first: one refusal.
    clock.advance(Duration::from_millis(5));
    assert!(r.run_frame().held);
    assert_eq!(r.profile().time.held_ticks, 1);
    // The same tick held across two more frames: two more refusals.
    r.run_frame();
    r.run_frame();
    assert_eq!((r.held_ticks(), r.profile().time.held_ticks), (3, 3));
}
