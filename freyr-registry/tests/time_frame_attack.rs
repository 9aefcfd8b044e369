//! The fixed-tick frame loop and its clocks attacked as a hostile user would: a clock that goes
//! backwards, jumps by `u64::MAX` nanoseconds, or panics while read; zero-length frames; tick
//! lengths at and past their limits; NaN, infinite and negative floats where a float is
//! accepted; systems that panic mid-frame; the catch-up clamp at its limits; clocks switched
//! between frames and from inside a frame; `run_frame` called from a system; and the same manual
//! clock sequence on 1, 2, 8 and 16 workers. After every refusal or panic the registry must be
//! usable and consistent: tick numbers gapless, no tick lost or run twice, counters exact.

mod time_frame_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use time_frame_support::*;

use freyr::time::{FixedStepError, GovernorParams, MAX_FIXED_DT, ManualClock, TickGovernor};
use freyr::{Phase, Registry};

/// A clock set backwards runs no tick and owes no time until it has caught up with its latest
/// reading; then ticks resume with the next number and no tick is run twice.
#[test]
fn a_clock_going_backwards_runs_nothing_until_it_catches_up() {
    let (mut r, clock) = logged(2, DT);
    clock.advance(Duration::from_millis(30));
    assert_eq!(r.run_frame().ran, 3);
    clock.set(Duration::from_millis(5));
    let frame = r.run_frame();
    assert_eq!((frame.first_tick, frame.ran, frame.dropped), (3, 0, 0));
    assert_eq!(r.time_until_next_tick(), Some(DT), "no time passed");
    clock.set(Duration::from_millis(35)); // 5 ms past the latest reading
    assert_eq!(r.run_frame().ran, 0);
    assert_eq!(r.time_until_next_tick(), Some(Duration::from_millis(5)));
    clock.set(Duration::from_millis(40));
    let frame = r.run_frame();
    assert_eq!((frame.first_tick, frame.ran), (3, 1));
    assert_eq!(seen(&r), [0, 1, 2, 3]);
    assert_eq!(r.profile().time.frames, 4);
    assert_eq!(r.dropped_ticks(), 0);
}

/// A jump of `u64::MAX` nanoseconds runs the catch-up bound and drops the rest; a second such
/// jump (on a fresh clock) saturates the profile's dropped count instead of overflowing it, and
/// the registry's own count stays the fixed step's.
#[test]
fn a_jump_of_u64_max_nanoseconds_runs_the_bound_and_saturates_the_counts() {
    let (mut r, clock) = logged(2, Duration::from_nanos(1));
    clock.advance(Duration::MAX); // saturates at u64::MAX ns
    clock.advance(Duration::MAX);
    let frame = r.run_frame();
    assert_eq!((frame.ran, frame.dropped), (8, u64::MAX - 8));
    assert_eq!(r.dropped_ticks(), u64::MAX - 8);
    assert_eq!(r.time_until_next_tick(), Some(Duration::from_nanos(1)));
    // A second driver on a fresh clock, the same jump: the profile keeps counting.
    let clock = ManualClock::new();
    r.set_fixed_step(Duration::from_nanos(1), clock.clone())
        .unwrap();
    clock.set(Duration::MAX);
    let frame = r.run_frame();
    assert_eq!((frame.first_tick, frame.ran), (8, 8));
    assert_eq!(r.dropped_ticks(), u64::MAX - 8, "counted since this driver");
    assert_eq!(r.profile().time.dropped_ticks, u64::MAX, "saturated");
    assert_eq!(r.profile().time.frames, 2);
    assert_eq!(seen(&r), (0..16).collect::<Vec<_>>());
    // The clock can go no further, and nothing more is owed.
    clock.advance(Duration::from_secs(1));
    assert_eq!(r.run_frame().ran, 0);
    assert_eq!(r.tick(), 16);
}

/// A huge but representable jump on a one-hour tick (the longest accepted) does not overflow
/// the accumulator's arithmetic: the bound runs, the rest is dropped, the fraction is kept.
#[test]
fn a_century_on_an_hour_long_tick_runs_the_bound() {
    let (mut r, clock) = logged(1, MAX_FIXED_DT);
    let century = Duration::from_secs(100 * 365 * 24 * 3600);
    clock.advance(century + Duration::from_secs(1800));
    let frame = r.run_frame();
    let owed = century.as_secs() / 3600;
    assert_eq!((frame.ran, frame.dropped), (8, owed - 8));
    assert_eq!(r.fixed_step().unwrap().alpha(), 0.5);
    assert_eq!(r.time_until_next_tick(), Some(Duration::from_secs(1800)));
}

/// Frames of zero length run no tick, count as frames, and report the next tick as their first.
#[test]
fn zero_length_frames_run_nothing_and_are_counted() {
    let (mut r, clock) = logged(2, DT);
    for _ in 0..5 {
        let frame = r.run_frame();
        assert_eq!(frame, freyr::time::FrameReport::default());
    }
    clock.advance(DT);
    assert_eq!(r.run_frame().ran, 1);
    for _ in 0..5 {
        let frame = r.run_frame();
        assert_eq!(
            (frame.first_tick, frame.ran, frame.dropped, frame.held),
            (1, 0, 0, false)
        );
    }
    let time = r.profile().time;
    assert_eq!((time.frames, time.ticks, time.dropped_ticks), (11, 1, 0));
    assert_eq!(r.time_until_next_tick(), Some(DT));
}

/// Tick lengths: 1 ns and one hour are accepted and reach the systems as `dt` in seconds;
/// zero, one nanosecond over an hour and `Duration::MAX` are refused with their typed error
/// and leave the installed driver (and the time it owes) as it was.
#[test]
fn tick_lengths_at_and_past_their_limits() {
    let (mut r, clock) = logged(1, DT);
    let got = Arc::new(AtomicU64::new(0));
    let got_in = Arc::clone(&got);
    r.add_system(Phase::PostUpdate, move |_: &mut Registry, dt: f32| {
        got_in.store(u64::from(dt.to_bits()), Ordering::SeqCst);
    });
    clock.advance(Duration::from_millis(15));
    assert_eq!(r.run_frame().ran, 1);
    assert_eq!(f32::from_bits(got.load(Ordering::SeqCst) as u32), 0.01);
    let past = MAX_FIXED_DT + Duration::from_nanos(1);
    for (bad, err) in [
        (Duration::ZERO, FixedStepError::ZeroDt),
        (past, FixedStepError::DtTooLong { dt: past }),
        (
            Duration::MAX,
            FixedStepError::DtTooLong { dt: Duration::MAX },
        ),
    ] {
        assert_eq!(r.set_fixed_step(bad, ManualClock::new()), Err(err));
        assert_eq!(r.fixed_step().unwrap().dt(), DT, "the old driver stays");
    }
    clock.advance(Duration::from_millis(5));
    assert_eq!(r.run_frame().ran, 1, "the 5 ms it owed were kept");
    for (dt, secs) in [(Duration::from_nanos(1), 1e-9f32), (MAX_FIXED_DT, 3600.0)] {
        let clock = ManualClock::new();
        r.set_fixed_step(dt, clock.clone()).unwrap();
        clock.advance(dt);
        assert_eq!(r.run_frame().ran, 1);
        assert_eq!(f32::from_bits(got.load(Ordering::SeqCst) as u32), secs);
    }
    assert_eq!(seen(&r), [0, 1, 2, 3]);
}

/// `update` takes any float as `dt` (NaN, infinities, negatives, subnormals) and hands it to
/// every system bit for bit, one tick each.
#[test]
fn update_passes_any_float_dt_through_bit_for_bit() {
    let mut r = Registry::with_workers(2);
    let got = Arc::new(AtomicU64::new(0));
    let got_in = Arc::clone(&got);
    r.add_system(Phase::Update, move |_: &mut Registry, dt: f32| {
        got_in.store(u64::from(dt.to_bits()), Ordering::SeqCst);
    });
    let odd = [
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -1.0,
        -0.0,
        f32::MIN_POSITIVE / 2.0,
        f32::MAX,
    ];
    for (i, dt) in odd.into_iter().enumerate() {
        r.update(dt);
        assert_eq!(got.load(Ordering::SeqCst) as u32, dt.to_bits());
        assert_eq!(r.tick(), i as u64 + 1);
    }
}

/// `set_load_factor` refuses NaN, infinities, negatives and values above 1 with a clear panic
/// and keeps the value it had; the endpoints 0 and 1 are accepted.
#[test]
fn the_load_factor_refuses_every_float_outside_zero_to_one() {
    let mut r = Registry::with_workers(1);
    r.set_load_factor(0.5);
    for bad in [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.1,
        1.0 + f64::EPSILON,
    ] {
        let msg = panics(|| r.set_load_factor(bad));
        assert!(msg.contains("load factor"), "{msg}");
        assert_eq!(r.load_factor(), 0.5);
    }
    r.set_load_factor(0.0);
    assert_eq!(r.load_factor(), 0.0);
    r.set_load_factor(1.0);
    assert_eq!(r.load_factor(), 1.0);
}

/// The governor refuses NaN and infinite parameters by name, and its load factor stays finite
/// and within `[floor, 1]` for samples of zero and of `Duration::MAX`.
#[test]
fn the_governor_refuses_nan_params_and_survives_extreme_samples() {
    let base = GovernorParams::default();
    let nan = f64::NAN;
    for (field, params) in [
        (
            "high_watermark",
            GovernorParams {
                high_watermark: nan,
                ..base
            },
        ),
        (
            "high_watermark",
            GovernorParams {
                high_watermark: f64::INFINITY,
                ..base
            },
        ),
        (
            "low_watermark",
            GovernorParams {
                low_watermark: nan,
                ..base
            },
        ),
        (
            "decrease_factor",
            GovernorParams {
                decrease_factor: nan,
                ..base
            },
        ),
        (
            "increase_step",
            GovernorParams {
                increase_step: nan,
                ..base
            },
        ),
        (
            "ewma_alpha",
            GovernorParams {
                ewma_alpha: nan,
                ..base
            },
        ),
        (
            "min_load_factor",
            GovernorParams {
                min_load_factor: nan,
                ..base
            },
        ),
        (
            "budget",
            GovernorParams {
                budget: Duration::ZERO,
                ..base
            },
        ),
    ] {
        assert_eq!(TickGovernor::new(params).unwrap_err().field(), field);
    }
    let params = GovernorParams {
        eval_interval_ticks: 1,
        ewma_alpha: 1.0,
        ..base
    };
    let mut governor = TickGovernor::new(params).unwrap();
    for sample in [
        Duration::MAX,
        Duration::MAX,
        Duration::ZERO,
        Duration::MAX,
        Duration::ZERO,
    ] {
        let lf = governor.step(sample);
        assert!(
            lf.is_finite() && (params.floor()..=1.0).contains(&lf),
            "{lf}"
        );
        assert!(governor.ewma_ms().unwrap().is_finite());
    }
    let mut r = Registry::with_workers(1);
    r.set_load_factor(governor.load_factor()); // always a valid load factor
}
