//! Unit tests of the fixed step: accumulator, catch-up clamp, gates, tick counter.

use super::*;
use crate::clock::ManualClock;

const MS: Duration = Duration::from_millis(1);

fn loop_of(dt: Duration) -> (FixedStep<ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    (FixedStep::with_clock(dt, clock.clone()).unwrap(), clock)
}

#[test]
fn no_time_no_tick() {
    let (mut fixed, _clock) = loop_of(MS);
    assert_eq!(fixed.run_frame(|_| panic!("no tick is due")).ran, 0);
}

#[test]
fn partial_ticks_carry_over_between_frames() {
    let (mut fixed, clock) = loop_of(10 * MS);
    let mut ticks = Vec::new();
    for _ in 0..10 {
        clock.advance(3 * MS);
        fixed.run_frame(|t| ticks.push(t));
    }
    // 30 ms of wall time = 3 ticks, numbered without gaps.
    assert_eq!(ticks, [0, 1, 2]);
    assert!((fixed.alpha() - 0.0).abs() < 1e-12);
}

#[test]
fn dropped_time_is_discarded_not_carried() {
    let (mut fixed, clock) = loop_of(MS);
    fixed.set_max_catchup_ticks(4).unwrap();
    clock.advance(Duration::from_micros(10_500));
    let report = fixed.run_frame(|_| {});
    assert_eq!((report.ran, report.dropped), (4, 6));
    assert_eq!(fixed.alpha(), 0.5);
    // The next frame starts from the half tick left, not from 6 more.
    clock.advance(Duration::from_micros(500));
    assert_eq!(fixed.run_frame(|_| {}).ran, 1);
    assert_eq!(fixed.dropped_ticks(), 6);
}

#[test]
fn a_clock_going_backwards_counts_as_no_time() {
    let (mut fixed, clock) = loop_of(MS);
    clock.set(10 * MS);
    assert_eq!(fixed.run_frame(|_| {}).ran, 8);
    clock.set(2 * MS);
    assert_eq!(fixed.run_frame(|_| {}).ran, 0);
    clock.set(11 * MS);
    assert_eq!(fixed.run_frame(|_| {}).ran, 1);
}

#[test]
fn a_held_tick_runs_later_with_the_same_number() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (mut fixed, clock) = loop_of(MS);
    let open = Arc::new(AtomicBool::new(false));
    let gate_open = Arc::clone(&open);
    fixed.add_gate(move |next: u64| next < 2 || gate_open.load(Ordering::Relaxed));
    let mut ticks = Vec::new();
    clock.advance(3 * MS);
    let report = fixed.run_frame(|t| ticks.push(t));
    assert_eq!((report.ran, report.held), (2, true));
    assert_eq!(fixed.held_ticks(), 1);
    clock.advance(MS);
    assert!(fixed.run_frame(|t| ticks.push(t)).held);
    assert_eq!(fixed.held_ticks(), 2);
    open.store(true, Ordering::Relaxed);
    clock.advance(MS);
    let report = fixed.run_frame(|t| ticks.push(t));
    // The held time was kept: ticks 2, 3 and 4 run now.
    assert_eq!((report.first_tick, report.ran, report.held), (2, 3, false));
    assert_eq!(ticks, [0, 1, 2, 3, 4]);
}

#[test]
fn held_time_is_still_bounded_by_the_clamp() {
    let (mut fixed, clock) = loop_of(MS);
    let gate = fixed.add_gate(|_: u64| false);
    for _ in 0..5 {
        clock.advance(5 * MS);
        fixed.run_frame(|_| {});
    }
    fixed.remove_gate(gate);
    clock.advance(MS);
    let report = fixed.run_frame(|_| {});
    assert_eq!(report.ran, 8);
    // 26 ms of wall time: 8 ticks ran, the other 18 were dropped along
    // the way (never more than the bound kept queued).
    assert_eq!(fixed.dropped_ticks() + 8, 26);
}

#[test]
fn an_absurd_tick_length_is_rejected_with_a_typed_error() {
    for dt in [
        Duration::MAX,
        MAX_FIXED_DT + Duration::from_nanos(1),
        Duration::from_secs(86_400),
    ] {
        let err = FixedStep::with_clock(dt, ManualClock::new()).unwrap_err();
        assert_eq!(err, FixedStepError::DtTooLong { dt });
        assert!(
            err.to_string().contains("longer than MAX_FIXED_DT (3600s)"),
            "{err}"
        );
    }
    assert_eq!(
        FixedStep::with_clock(MAX_FIXED_DT, ManualClock::new())
            .unwrap()
            .dt(),
        MAX_FIXED_DT
    );
}

#[test]
fn zero_configuration_is_rejected_with_a_message_that_says_what_to_do() {
    let err = FixedStep::with_clock(Duration::ZERO, ManualClock::new()).unwrap_err();
    assert!(err.to_string().contains("at least 1 ns"), "{err}");
    let (mut fixed, _) = loop_of(MS);
    let err = fixed.set_max_catchup_ticks(0).unwrap_err();
    assert!(
        err.to_string().contains("DEFAULT_MAX_CATCHUP_TICKS"),
        "{err}"
    );
    assert_eq!(fixed.max_catchup_ticks(), 8);
}
