//! The tick profiler attacked through its public API: turned on, off and on again from inside
//! a system, its counters reset inside a tick, a system panicking in a profiled tick, function
//! systems on 1, 2, 8 and 16 workers (each exactly once per tick, inside the tick), names that
//! JSON must escape, a restore and a load sending the tick number back, thousands of ticks
//! through a small window, and a profile asked for before anything was recorded.
//!
//! Every check is structural: no assertion compares a duration with a fixed bound.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use freyr_registry::systems::Query;
use freyr_registry::{
    AsyncSystem, CALLER_ROW, Launched, Phase, Process, Registry, TICK_ROW, TickExtras, TickProfile,
    TickProfileConfig, TickRecord, TickReport, TraceEvent, TraceKind,
};
use freyr_time::{Discard, ManualClock};

struct Pos(f32);
struct Vel(f32);
struct Hp(u32);

fn traced(ticks: core::ops::Range<u64>) -> TickProfileConfig {
    TickProfileConfig {
        trace_ticks: ticks,
        ..Default::default()
    }
}

fn phase_names(record: &TickRecord) -> Vec<&'static str> {
    record.phases.iter().map(|(n, _)| *n).collect()
}

fn ticks_of(profile: &TickProfile) -> Vec<u64> {
    profile.records().map(|r| r.tick).collect()
}

/// Phases are consecutive parts of their tick: together no longer than it.
fn assert_phases_fit(record: &TickRecord) {
    let sum: Duration = record.phases.iter().map(|(_, d)| *d).sum();
    assert!(
        sum <= record.wall,
        "phases outlast tick {}: {record:?}",
        record.tick
    );
}

const UPDATE_PHASES: [&str; 4] = ["deadlines", "PreUpdate", "Update", "PostUpdate"];

// ---------------------------------------------------------------------------------------------
// On and off in the middle of an update.

#[test]
fn enabling_again_from_a_system_mid_update_does_not_break_the_update() {
    let mut registry = Registry::with_workers(2);
    registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        if r.tick() == 1 {
            // Documented: replaces any earlier recording.
            r.enable_tick_profile(TickProfileConfig::default());
        }
    });
    registry.enable_tick_profile(TickProfileConfig::default());
    for _ in 0..3 {
        registry.update(0.1);
    }
    let profile = registry.tick_profile().unwrap();
    // The new recording starts with the next tick the update opens.
    assert_eq!(ticks_of(profile), [2]);
    assert_eq!(phase_names(profile.last().unwrap()), UPDATE_PHASES);
    assert_eq!(registry.tick(), 3);
}

#[test]
fn off_then_on_from_one_system_and_on_from_another_phase() {
    let kept: Arc<Mutex<Option<TickProfile>>> = Arc::default();
    let out = Arc::clone(&kept);
    let mut registry = Registry::with_workers(2);
    registry.add_system(Phase::PreUpdate, move |r: &mut Registry, _: f32| {
        match r.tick() {
            1 => {
                *out.lock().unwrap() = r.disable_tick_profile();
                r.enable_tick_profile(TickProfileConfig::default());
            }
            3 => *out.lock().unwrap() = r.disable_tick_profile(),
            _ => {}
        }
    });
    registry.add_system(Phase::PostUpdate, |r: &mut Registry, _: f32| {
        if r.tick() == 4 && r.tick_profile().is_none() {
            r.enable_tick_profile(TickProfileConfig::default());
        }
    });
    registry.enable_tick_profile(TickProfileConfig::default());
    for tick in 0..6 {
        registry.update(0.1);
        if tick == 1 {
            let old = kept.lock().unwrap().take().unwrap();
            assert_eq!(ticks_of(&old), [0], "the old recording ends before tick 1");
        }
    }
    // Tick 3 turned off the recording begun after tick 1, which had recorded tick 2 only.
    let second = kept.lock().unwrap().take().unwrap();
    assert_eq!(ticks_of(&second), [2]);
    assert_eq!(phase_names(second.last().unwrap()), UPDATE_PHASES);
    // Turned on in tick 4's PostUpdate: tick 5 is its first.
    let profile = registry.tick_profile().unwrap();
    assert_eq!(ticks_of(profile), [5]);
    assert_eq!(phase_names(profile.last().unwrap()), UPDATE_PHASES);
}

#[test]
fn reset_profile_inside_a_profiled_tick_keeps_the_records_consistent() {
    let mut registry = Registry::with_workers(2);
    registry.spawn_batch((0..1000).map(|i| (Pos(i as f32),)));
    registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        let label = if r.tick().is_multiple_of(2) {
            "Even"
        } else {
            "Odd"
        };
        r.query::<&mut Pos>()
            .with_label(label)
            .each_async(|_, p| p.0 += 1.0);
    });
    registry.add_system(Phase::PostUpdate, |r: &mut Registry, _: f32| {
        if r.tick() == 2 {
            r.reset_profile();
        }
    });
    registry.enable_tick_profile(TickProfileConfig::default());
    for _ in 0..4 {
        registry.update(0.1);
    }
    let profile = registry.tick_profile().unwrap();
    assert_eq!(ticks_of(profile), [0, 1, 2, 3]);
    let records: Vec<&TickRecord> = profile.records().collect();
    // The reset tick counts from the reset on: its launch was before it.
    assert_eq!(records[2].tasks, 0);
    assert!(records[2].labels.is_empty(), "{:?}", records[2].labels);
    for r in [records[0], records[1], records[3]] {
        assert_eq!(r.tasks, 2, "tick {}", r.tick);
        assert_eq!(r.labels.len(), 1, "tick {}: {:?}", r.tick, r.labels);
        assert_eq!((r.labels[0].calls, r.labels[0].tasks), (1, 2));
    }
    assert_eq!(records[3].labels[0].label, "Odd");
    assert_eq!(registry.profile().label("Odd").unwrap().calls, 1);
}

#[test]
fn reset_profile_between_frames_keeps_the_dropped_ticks() {
    let clock = ManualClock::new();
    let mut registry = Registry::with_workers(1);
    registry
        .set_fixed_step(Duration::from_millis(10), clock.clone())
        .unwrap();
    registry.enable_tick_profile(TickProfileConfig::default());
    clock.advance(Duration::from_millis(100)); // 10 due: 8 run, 2 dropped
    registry.run_frame();
    registry.reset_profile();
    clock.advance(Duration::from_millis(100));
    registry.run_frame();
    let profile = registry.tick_profile().unwrap();
    let dropped: Vec<u64> = profile.records().map(|r| r.dropped_ticks).collect();
    assert_eq!(profile.records().len(), 16);
    assert_eq!(dropped[0], 2);
    assert_eq!(dropped[8], 2, "the second frame's drops: {dropped:?}");
    assert_eq!(dropped.iter().sum::<u64>(), 4);
}

#[test]
fn a_hand_bracketed_tick_survives_the_profiler_turning_off_and_documents_turning_on() {
    let mut registry = Registry::with_workers(1);
    registry.enable_tick_profile(TickProfileConfig::default());
    registry.profile_tick_begin(0);
    registry.profile_tick_phase("a");
    let old = registry.disable_tick_profile().unwrap();
    assert_eq!(old.ticks_recorded(), 0, "an open tick is no record");
    registry.profile_tick_phase("b"); // off: no-ops
    registry.profile_tick_end(TickExtras::default());
    // On between begin and end: the documented panic, and the registry goes on.
    registry.enable_tick_profile(TickProfileConfig::default());
    let end = catch_unwind(AssertUnwindSafe(|| {
        registry.profile_tick_end(TickExtras::default())
    }));
    assert!(end.is_err());
    registry.update(0.1);
    let profile = registry.tick_profile().unwrap();
    assert_eq!(ticks_of(profile), [0]);
    assert_eq!(phase_names(profile.last().unwrap()), UPDATE_PHASES);
}

// ---------------------------------------------------------------------------------------------
// A system that panics while profiled.

#[test]
fn a_panicking_system_s_tick_is_recorded_up_to_its_phase_and_the_next_tick_is_whole() {
    let mut registry = Registry::with_workers(2);
    registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        assert!(r.tick() != 1, "boom");
    });
    registry.enable_tick_profile(traced(0..3));
    registry.update(0.1);
    assert!(catch_unwind(AssertUnwindSafe(|| registry.update(0.1))).is_err());
    registry.update(0.1);
    let profile = registry.tick_profile().unwrap();
    assert_eq!(ticks_of(profile), [0, 1, 2]);
    let records: Vec<&TickRecord> = profile.records().collect();
    assert_eq!(phase_names(records[0]), UPDATE_PHASES);
    assert_eq!(phase_names(records[1]), UPDATE_PHASES[..3]);
    assert_eq!(phase_names(records[2]), UPDATE_PHASES);
    records.iter().for_each(|r| assert_phases_fit(r));
    // The trace: one tick span per tick, and each phase span inside its own tick's.
    let events = profile.trace_events();
    for tick in 0..3 {
        let ticks: Vec<&TraceEvent> = events
            .iter()
            .filter(|e| e.kind == TraceKind::Tick && e.tick == tick)
            .collect();
        assert_eq!(ticks.len(), 1, "tick {tick}");
        let phases: Vec<&TraceEvent> = events
            .iter()
            .filter(|e| e.kind == TraceKind::Phase && e.tick == tick)
            .collect();
        assert_eq!(phases.len(), records[tick as usize].phases.len());
        for p in phases {
            assert!(inside(p, ticks[0]), "{p:?} outside {:?}", ticks[0]);
        }
    }
    assert_eq!(registry.profile().phases[Phase::PostUpdate.index()].runs, 2);
}

#[test]
fn a_panicking_function_system_s_run_is_booked_and_traced() {
    let mut registry = Registry::with_workers(2);
    registry.spawn((Pos(0.0), Vel(1.0)));
    registry
        .add_fn_system(
            Phase::Update,
            "boom",
            |_: Query<&mut Pos>, t: freyr_registry::systems::Tick| {
                assert!(t.tick != 1, "boom");
            },
        )
        .unwrap();
    registry
        .add_fn_system(Phase::Update, "fine", |mut q: Query<&mut Vel>| {
            q.each(|_, v| v.0 += 1.0)
        })
        .unwrap();
    registry.enable_tick_profile(traced(0..3));
    registry.update(0.1);
    assert!(catch_unwind(AssertUnwindSafe(|| registry.update(0.1))).is_err());
    registry.update(0.1);
    let profile = registry.tick_profile().unwrap();
    for record in profile.records() {
        for name in ["boom", "fine"] {
            let label = record.label(name);
            assert_eq!(
                label.map(|l| l.calls),
                Some(1),
                "{name} in tick {}",
                record.tick
            );
        }
        let spans = profile
            .trace_events()
            .iter()
            .filter(|e| e.tick == record.tick && e.name == "boom")
            .count();
        assert_eq!(spans, 1, "boom's span in tick {}", record.tick);
    }
    assert_eq!(registry.profile().label("boom").unwrap().calls, 3);
}

// ---------------------------------------------------------------------------------------------
// Function systems on 1, 2, 8 and 16 workers.

fn inside(e: &TraceEvent, outer: &TraceEvent) -> bool {
    e.start_ns >= outer.start_ns && e.start_ns + e.dur_ns <= outer.start_ns + outer.dur_ns
}

/// An async system whose collect and apply make labelled passes, counting its own calls.
struct Sampler(Arc<[AtomicU64; 2]>);
impl AsyncSystem for Sampler {
    type Request = u64;
    type Result = u64;
    type Error = String;
    fn collect(&mut self, r: &mut Registry) -> Option<u64> {
        self.0[0].fetch_add(1, Ordering::Relaxed);
        let mut n = 0;
        r.query::<&Hp>()
            .with_label("sample")
            .each(|_, h| n += u64::from(h.0 > 0));
        Some(n)
    }
    fn process(&mut self, n: Arc<u64>) -> Process<u64, String> {
        Process::on_pool(move || Ok(*n))
    }
    fn apply(&mut self, r: &mut Registry, n: u64, _: &Launched<u64>) {
        self.0[1].fetch_add(1, Ordering::Relaxed);
        r.query::<&mut Hp>()
            .with_label("heal")
            .each(|_, h| h.0 += n as u32);
    }
    fn discard(&mut self, _: &mut Registry, _: Discard<u64, String>, _: &Launched<u64>) {}
}

const FN_SYSTEMS: [&str; 6] = ["move", "spin", "age", "read_a", "read_b", "idle"];

#[test]
fn every_function_system_is_traced_once_per_tick_inside_it_on_any_worker_count() {
    const TICKS: u64 = 4;
    for workers in [1, 2, 8, 16] {
        let mut registry = Registry::with_workers(workers);
        registry.spawn_batch((0..600).map(|i| (Pos(i as f32), Vel(1.0), Hp(0))));
        let r = &mut registry;
        r.add_fn_system(Phase::Update, "move", |mut q: Query<(&mut Pos, &Vel)>| {
            q.each(|_, (p, v)| p.0 += v.0)
        })
        .unwrap();
        r.add_fn_system(Phase::Update, "spin", |mut q: Query<&mut Vel>| {
            q.each(|_, v| v.0 *= 1.0)
        })
        .unwrap();
        r.add_fn_system(Phase::Update, "age", |mut q: Query<&mut Hp>| {
            q.each(|_, h| h.0 += 1)
        })
        .unwrap();
        r.add_fn_system(Phase::PostUpdate, "read_a", |mut q: Query<&Pos>| {
            assert!(q.count() > 0)
        })
        .unwrap();
        r.add_fn_system(Phase::PostUpdate, "read_b", |mut q: Query<&Pos>| {
            assert!(q.count() > 0)
        })
        .unwrap();
        r.add_fn_system(Phase::PreUpdate, "idle", || {}).unwrap();
        let counts: Arc<[AtomicU64; 2]> = Arc::default();
        r.add_async_system(Phase::PreUpdate, Sampler(Arc::clone(&counts)));
        r.enable_tick_profile(traced(0..TICKS));
        for _ in 0..TICKS {
            registry.update(0.1);
        }
        let profile = registry.tick_profile().unwrap();
        let events = profile.trace_events();
        assert_eq!(ticks_of(profile), (0..TICKS).collect::<Vec<_>>());
        for record in profile.records() {
            let tick = record.tick;
            let span = events
                .iter()
                .find(|e| e.kind == TraceKind::Tick && e.tick == tick)
                .unwrap();
            assert_eq!(span.row, TICK_ROW);
            for name in FN_SYSTEMS {
                let label = record
                    .label(name)
                    .unwrap_or_else(|| panic!("{name} {tick}"));
                assert_eq!(label.calls, 1, "{name} in tick {tick} at {workers} workers");
                let runs: Vec<&TraceEvent> = events
                    .iter()
                    .filter(|e| e.tick == tick && e.name == name)
                    .collect();
                assert_eq!(runs.len(), 1, "{name} in tick {tick} at {workers} workers");
                let run = runs[0];
                assert_eq!(run.kind, TraceKind::Task);
                let worker_rows = 2..2 + workers as u32;
                assert!(
                    run.row == CALLER_ROW || worker_rows.contains(&run.row),
                    "{run:?}"
                );
                assert!(inside(run, span), "{run:?} outside {span:?} at {workers}");
            }
            // The async system's passes are its labels, at most once per tick each.
            for label in ["sample", "heal"] {
                let calls = record.label(label).map_or(0, |l| l.calls);
                assert!(calls <= 1, "{label} in tick {tick}: {calls}");
            }
            assert_phases_fit(record);
        }
        for name in FN_SYSTEMS {
            assert_eq!(registry.profile().label(name).unwrap().calls, TICKS);
        }
        // Every collect and apply of the async system was booked to one recorded tick.
        for (i, label) in ["sample", "heal"].into_iter().enumerate() {
            let booked: u64 = profile
                .records()
                .filter_map(|r| r.label(label))
                .map(|l| l.calls)
                .sum();
            assert_eq!(booked, counts[i].load(Ordering::Relaxed), "{label}");
        }
        assert!(counts[0].load(Ordering::Relaxed) > 0);
    }
}

// ---------------------------------------------------------------------------------------------
// Names JSON must escape.

const NASTY: [&str; 10] = [
    "quote\"d",
    "back\\slash",
    "new\nline\r\t",
    "nul\u{0}bell\u{7}esc\u{1b}del\u{7f}",
    "日本語のシステム",
    "crab 🦀 fire 🔥 family 👨‍👩‍👧",
    "rtl \u{202e}gnp.exe",
    "replacement \u{fffd} max \u{10ffff}",
    "</script><!--",
    "",
];

#[test]
fn names_that_json_must_escape_come_back_whole_from_the_report_and_the_trace() {
    let mut registry = Registry::with_workers(2);
    registry.spawn_batch((0..1000).map(|i| (Pos(i as f32),)));
    for name in NASTY {
        registry
            .add_fn_system(Phase::Update, format!("fn {name}"), || {})
            .unwrap();
    }
    registry.enable_tick_profile(traced(0..102));
    for n in 0..2 {
        registry.update(0.1); // ticks 0 and 1
        registry.profile_tick_begin(100 + n);
        for name in NASTY {
            registry.profile_tick_phase(name);
            registry
                .query::<&mut Pos>()
                .with_label(name)
                .each_async(|_, p| p.0 += 1.0);
            registry.execute_tasks();
        }
        registry.profile_tick_end(TickExtras::default());
    }
    let profile = registry.tick_profile().unwrap();
    let mut trace = Vec::new();
    profile.write_chrome_trace(&mut trace).unwrap();
    let trace: serde_json::Value = serde_json::from_slice(&trace).expect("valid JSON trace");
    let events: Vec<(&str, &str)> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| (e["name"].as_str().unwrap(), e["cat"].as_str().unwrap()))
        .collect();
    assert_eq!(events.len(), profile.trace_events().len());
    let count = |name: &str, cat: &str| events.iter().filter(|e| **e == (name, cat)).count();
    for name in NASTY {
        // Each fn system ran once per update; each phase once per hand tick; each launch
        // stamped at least one batch per hand tick.
        assert_eq!(count(&format!("fn {name}"), "task"), 2, "{name:?}");
        assert_eq!(count(name, "phase"), 2, "{name:?}");
        assert!(count(name, "task") >= 2, "{name:?}");
    }
    let mut json = Vec::new();
    profile.write_json(&mut json).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&json).expect("valid JSON report");
    let back: TickReport = serde_json::from_value(value).unwrap();
    assert_eq!(back, profile.report());
    let hand = back.ticks.iter().find(|t| t.tick == 100).unwrap();
    let phases: Vec<&str> = hand.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(phases, NASTY);
    let labels: Vec<&str> = hand.labels.iter().map(|l| l.label.as_str()).collect();
    assert_eq!(labels, NASTY);
    let summary: Vec<&str> = back
        .summary
        .labels
        .iter()
        .map(|l| l.label.as_str())
        .collect();
    for name in NASTY {
        assert!(summary.contains(&name), "{name:?} in {summary:?}");
        assert!(summary.contains(&format!("fn {name}").as_str()), "{name:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Ticks that go backwards, long runs, nothing recorded.

#[test]
fn a_restore_sends_the_tick_back_and_the_profile_keeps_recording_order() {
    let mut registry = Registry::with_workers(2);
    registry.enable_tick_profile(traced(3..4));
    registry.update(0.1);
    registry.update(0.1);
    let snapshot = registry.snapshot().unwrap();
    for _ in 0..3 {
        registry.update(0.1);
    }
    registry.restore(&snapshot).unwrap();
    assert_eq!(registry.tick(), 2);
    for _ in 0..3 {
        registry.update(0.1);
    }
    let save = registry.save_to_vec().unwrap(); // at tick 5
    registry.update(0.1);
    registry.load_into(&save).unwrap();
    registry.update(0.1);
    let profile = registry.tick_profile().unwrap();
    // Not rewound (documented on `restore`): records in the order they were recorded.
    assert_eq!(ticks_of(profile), [0, 1, 2, 3, 4, 2, 3, 4, 5, 5]);
    assert_eq!(profile.ticks_recorded(), 10);
    let traced_ticks: Vec<u64> = profile
        .trace_events()
        .iter()
        .filter(|e| e.kind == TraceKind::Tick)
        .map(|e| e.tick)
        .collect();
    assert_eq!(traced_ticks, [3, 3], "tick 3 ran, and was traced, twice");
    let tick_spans: Vec<&TraceEvent> = profile
        .trace_events()
        .iter()
        .filter(|e| e.kind == TraceKind::Tick)
        .collect();
    assert!(tick_spans[0].start_ns + tick_spans[0].dur_ns <= tick_spans[1].start_ns);
}

#[test]
fn thousands_of_updates_keep_only_the_window_and_trace_only_the_traced_ticks() {
    const TICKS: u64 = 3000;
    let mut registry = Registry::with_workers(2);
    registry.spawn((Pos(0.0),));
    registry
        .add_fn_system(Phase::Update, "step", |mut q: Query<&mut Pos>| {
            q.each(|_, p| p.0 += 1.0)
        })
        .unwrap();
    registry.enable_tick_profile(TickProfileConfig {
        window: 7,
        trace_ticks: 10..12,
        ..Default::default()
    });
    for _ in 0..TICKS {
        registry.update(0.01);
    }
    let profile = registry.tick_profile().unwrap();
    assert_eq!(profile.ticks_recorded(), TICKS);
    assert_eq!(ticks_of(profile), (TICKS - 7..TICKS).collect::<Vec<_>>());
    let report = profile.report();
    assert_eq!(report.ticks.len(), 7);
    assert_eq!(report.summary.labels.len(), 1);
    assert_eq!(
        report.summary.labels[0].calls, 7,
        "summed over the window only"
    );
    assert_eq!(report.summary.phases.len(), 4);
    let mut traced: Vec<u64> = profile.trace_events().iter().map(|e| e.tick).collect();
    traced.dedup();
    assert_eq!(traced, [10, 11]);
    assert_eq!(registry.profile().label("step").unwrap().calls, TICKS);
}

#[test]
fn a_profile_asked_for_before_anything_was_recorded_is_none_or_empty() {
    let mut registry = Registry::with_workers(1);
    assert!(registry.tick_profile().is_none());
    assert!(registry.disable_tick_profile().is_none());
    registry.profile_tick_begin(0); // off: no-ops, nothing opened
    registry.profile_tick_phase("p");
    registry.profile_tick_end(TickExtras::default());
    registry.enable_tick_profile(traced(0..10));
    let profile = registry.tick_profile().unwrap();
    assert_eq!(profile.ticks_recorded(), 0);
    assert!(profile.last().is_none());
    assert_eq!(profile.records().len(), 0);
    assert_eq!(profile.ewma_ms(), None);
    assert_eq!(profile.wall_stats(), Default::default());
    assert!(profile.phase_names().is_empty() && profile.label_names().is_empty());
    assert!(profile.trace_events().is_empty());
    let mut json = Vec::new();
    profile.write_json(&mut json).unwrap();
    let back: TickReport = serde_json::from_slice(&json).unwrap();
    assert_eq!(back, profile.report());
    assert!(back.ticks.is_empty() && back.summary.phases.is_empty());
    assert_eq!(back.ticks_recorded, 0);
    let mut trace = Vec::new();
    profile.write_chrome_trace(&mut trace).unwrap();
    let trace: serde_json::Value = serde_json::from_slice(&trace).unwrap();
    assert_eq!(trace["traceEvents"].as_array().map(Vec::len), Some(0));
    // A phase without a tick is the documented panic, and leaves the profiler usable.
    assert!(catch_unwind(AssertUnwindSafe(|| registry.profile_tick_phase("x"))).is_err());
    registry.update(0.1);
    assert_eq!(ticks_of(registry.tick_profile().unwrap()), [0]);
}
