//! The tick profiler: nothing recorded (no allocation, no clock) while it is off; the records,
//! the JSON report and the Chrome trace while it is on.
//!
//! This binary installs a counting global allocator, so it is a test file of its own.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;

use freyr::Registry;
use freyr::profile::{TickExtras, TickProfileConfig, TickReport};

/// Counts the allocations of the thread that turned counting on.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: defers every call to `System`; the thread-locals it touches are const-initialised, so
// counting never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = COUNTING.try_with(|c| {
            if c.get() {
                ALLOCATIONS.with(|a| a.set(a.get() + 1));
            }
        });
        // SAFETY: the caller's contract is `System::alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `System::dealloc`'s.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations made by `f` on this thread.
fn allocations_in(f: impl FnOnce()) -> u64 {
    ALLOCATIONS.with(|a| a.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.with(Cell::get)
}

struct Pos(f32);
struct Vel(f32);

fn world(workers: usize) -> Registry {
    let mut registry = Registry::with_workers(workers);
    registry.spawn_batch((0..20_000).map(|i| (Pos(i as f32), Vel(1.0))));
    registry
}

/// One tick: two labelled launches and a synchronous pass, in three phases.
fn tick(registry: &mut Registry, n: u64) {
    registry.profile_tick_begin(n);
    registry.profile_tick_phase("move");
    registry
        .query::<(&mut Pos, &Vel)>()
        .with_label("Move")
        .each_async(|_, (p, v)| p.0 += v.0);
    registry.execute_tasks();
    registry.profile_tick_phase("steer");
    registry
        .query::<&mut Vel>()
        .with_label("Steer")
        .rows_per_task(128)
        .each_async(|_, v| v.0 *= 0.5);
    registry.execute_tasks();
    registry.profile_tick_phase("count");
    let _ = registry.query::<&Pos>().count();
    registry.profile_tick_end(TickExtras::default());
}

#[test]
fn a_disabled_tick_profiler_allocates_nothing() {
    let mut registry = world(1);
    tick(&mut registry, 0); // warm the query caches
    let with_calls = allocations_in(|| tick(&mut registry, 1));
    // The same tick without the profiler calls: the difference is what the calls cost.
    let without_calls = allocations_in(|| {
        registry
            .query::<(&mut Pos, &Vel)>()
            .with_label("Move")
            .each_async(|_, (p, v)| p.0 += v.0);
        registry.execute_tasks();
        registry
            .query::<&mut Vel>()
            .with_label("Steer")
            .rows_per_task(128)
            .each_async(|_, v| v.0 *= 0.5);
        registry.execute_tasks();
        let _ = registry.query::<&Pos>().count();
    });
    assert_eq!(
        with_calls, without_calls,
        "the tick calls allocated while the profiler was off"
    );
    // And the calls alone, with nothing between them, allocate nothing at all.
    let bare = allocations_in(|| {
        registry.profile_tick_begin(2);
        registry.profile_tick_phase("a");
        registry.profile_tick_end(TickExtras::default());
    });
    assert_eq!(bare, 0);
    assert!(!registry.is_tracing());
}

#[test]
fn an_enabled_tick_profiler_records_every_tick_in_its_window() {
    let mut registry = world(3);
    registry.enable_tick_profile(TickProfileConfig {
        window: 4,
        ..Default::default()
    });
    for n in 0..10 {
        tick(&mut registry, n);
    }
    let profile = registry.tick_profile().unwrap();
    assert_eq!(profile.ticks_recorded(), 10);
    let ticks: Vec<u64> = profile.records().map(|r| r.tick).collect();
    assert_eq!(ticks, [6, 7, 8, 9]);
    let last = profile.last().unwrap();
    // 20,000 entities = 40 chunks; Steer cuts each into 4 tasks of 128 rows.
    assert_eq!(last.label("Move").unwrap().tasks, 40);
    assert_eq!(last.label("Steer").unwrap().tasks, 160);
    assert_eq!(last.tasks, 200);
    assert_eq!(last.sync_points, 2);
    assert_eq!(last.implicit_syncs, 0);
    let phases: Vec<&str> = last.phases.iter().map(|(n, _)| *n).collect();
    assert_eq!(phases, ["move", "steer", "count"]);
    let phase_sum: std::time::Duration = last.phases.iter().map(|(_, d)| *d).sum();
    assert!(phase_sum <= last.wall);
    assert!(profile.ewma_ms().unwrap() > 0.0);
    assert!(
        profile.trace_events().is_empty(),
        "no tick was to be traced"
    );
}

#[test]
fn the_json_report_parses_and_matches_the_records() {
    let mut registry = world(2);
    registry.enable_tick_profile(TickProfileConfig::default());
    for n in 0..3 {
        tick(&mut registry, n);
    }
    let mut bytes = Vec::new();
    registry
        .tick_profile()
        .unwrap()
        .write_json(&mut bytes)
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(value["schema"], "freyr.tick_profile");
    assert_eq!(value["version"], 1);
    assert_eq!(value["ticks"].as_array().unwrap().len(), 3);
    assert_eq!(value["summary"]["tasks"], 600);
    assert_eq!(value["ticks"][2]["labels"][1]["label"], "Steer");
    let report: TickReport = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(report.summary.phases.len(), 3);
    assert!(report.summary.wall_ms.p99_ms >= report.summary.wall_ms.p50_ms);
}

#[test]
fn the_chrome_trace_parses_and_its_events_cover_every_task_of_the_traced_ticks() {
    for workers in [1, 3] {
        let mut registry = world(workers);
        registry.enable_tick_profile(TickProfileConfig {
            trace_ticks: 2..4,
            ..Default::default()
        });
        for n in 0..5 {
            tick(&mut registry, n);
        }
        let mut bytes = Vec::new();
        registry
            .tick_profile()
            .unwrap()
            .write_chrome_trace(&mut bytes)
            .unwrap();
        let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let events = value["traceEvents"].as_array().unwrap();
        // Tasks per (tick, launch): the union of the batches' ranges.
        let mut covered: BTreeMap<(u64, u64), Vec<(u64, u64)>> = BTreeMap::new();
        let mut ticks = Vec::new();
        let mut syncs = 0;
        for e in events {
            if e["ph"] == "M" {
                continue;
            }
            assert_eq!(e["ph"], "X");
            assert!(e["ts"].as_f64().unwrap() >= 0.0 && e["dur"].as_f64().unwrap() >= 0.0);
            let tick = e["args"]["tick"].as_u64().unwrap();
            match e["cat"].as_str().unwrap() {
                "task" => covered
                    .entry((tick, e["args"]["launch"].as_u64().unwrap()))
                    .or_default()
                    .push((
                        e["args"]["first_task"].as_u64().unwrap(),
                        e["args"]["end_task"].as_u64().unwrap(),
                    )),
                "tick" => ticks.push(tick),
                "sync" => syncs += 1,
                "phase" => {}
                other => panic!("unexpected category {other}"),
            }
        }
        assert_eq!(ticks, [2, 3], "{workers} workers");
        assert_eq!(syncs, 4, "two sync points per traced tick");
        assert_eq!(covered.len(), 4, "two launches per traced tick");
        let profile = registry.tick_profile().unwrap();
        for tick in [2, 3] {
            let record = profile.records().find(|r| r.tick == tick).unwrap();
            let mut total = 0;
            for ((_, _), ranges) in covered.range((tick, 0)..(tick + 1, 0)) {
                let mut ranges = ranges.clone();
                ranges.sort_unstable();
                let mut next = 0;
                for (first, end) in ranges {
                    assert_eq!(
                        first, next,
                        "{workers} workers: a gap or overlap in the tasks"
                    );
                    next = end;
                }
                total += next;
            }
            assert_eq!(total, record.tasks, "{workers} workers, tick {tick}");
        }
    }
}

#[test]
fn a_late_deadline_job_shows_as_a_stall_in_the_tick_that_waited_for_it() {
    let mut registry = Registry::with_workers(2);
    registry
        .add_deadline_jobs(
            1,
            |_: &mut Registry, _: freyr::time::deadline::Delivered<()>| {},
        )
        .unwrap();
    registry.enable_tick_profile(TickProfileConfig::default());
    registry.profile_tick_begin(0);
    registry
        .request_job((), |()| {
            std::thread::sleep(std::time::Duration::from_millis(30))
        })
        .unwrap();
    registry.update(0.0); // tick 0 requests; the job is due at tick 1
    registry.profile_tick_end(TickExtras::default());
    registry.profile_tick_begin(1);
    registry.update(0.0); // tick 1 waits for the job, still asleep
    registry.profile_tick_end(TickExtras {
        deadline_stalls: 2, // a scheduler the registry does not own adds its own
        ..TickExtras::default()
    });
    let records: Vec<_> = registry
        .tick_profile()
        .unwrap()
        .records()
        .cloned()
        .collect();
    assert_eq!(records[0].deadline_stalls, 0);
    assert_eq!(records[1].deadline_stalls, 3);
    assert!(records[1].deadline_stall > std::time::Duration::ZERO);
}

#[test]
fn a_long_run_keeps_only_its_window_and_reports_over_the_last_ticks() {
    const TICKS: u64 = 100_000;
    const WINDOW: usize = 1000;
    let mut registry = Registry::with_workers(1);
    registry.enable_tick_profile(TickProfileConfig {
        window: WINDOW,
        ..Default::default()
    });
    // Known per-tick values the caller passes in: the load factor falls by one step per tick
    // from 1, the dropped ticks are 1 on every tick divisible by 3.
    let load_factor = |n: u64| 1.0 - n as f64 / (2 * TICKS) as f64;
    for n in 0..TICKS {
        registry.profile_tick_begin(n);
        registry.profile_tick_phase("only");
        registry.profile_tick_end(TickExtras {
            load_factor: load_factor(n),
            dropped_ticks: u64::from(n % 3 == 0),
            ..Default::default()
        });
        if n == 10 {
            assert_eq!(registry.tick_profile().unwrap().records().len(), 11);
        }
    }
    let profile = registry.tick_profile().unwrap();
    assert_eq!(profile.ticks_recorded(), TICKS, "the total is exact");
    assert_eq!(profile.records().len(), WINDOW, "the ring holds the window");
    let first = TICKS - WINDOW as u64;
    let ticks: Vec<u64> = profile.records().map(|r| r.tick).collect();
    assert_eq!(ticks, (first..TICKS).collect::<Vec<_>>());
    let report = profile.report();
    assert_eq!(report.window, WINDOW);
    assert_eq!(report.ticks.len(), WINDOW);
    assert_eq!(report.ticks_recorded, TICKS);
    // Sums and minima are over the last WINDOW ticks, not the whole run.
    let dropped = (first..TICKS).filter(|n| n % 3 == 0).count() as u64;
    assert_eq!(report.summary.dropped_ticks, dropped);
    assert_eq!(report.summary.load_factor.min, load_factor(TICKS - 1));
    assert_eq!(report.summary.load_factor.last, load_factor(TICKS - 1));
    let walls: Vec<std::time::Duration> = profile.records().map(|r| r.wall).collect();
    assert_eq!(
        report.summary.wall_ms.max_ms,
        walls.iter().max().unwrap().as_secs_f64() * 1e3
    );
    assert_eq!(profile.phase_names(), ["only"]);
}

#[test]
fn a_window_far_longer_than_the_run_costs_only_the_ticks_recorded() {
    // A window sized for a run of any length (an hour, a year, usize::MAX ticks) is not
    // allocated up front: the ring grows with the ticks recorded.
    for window in [usize::MAX, 1 << 40, 216_000] {
        let mut registry = Registry::with_workers(1);
        registry.enable_tick_profile(TickProfileConfig {
            window,
            ..Default::default()
        });
        for n in 0..5 {
            registry.profile_tick_begin(n);
            registry.profile_tick_end(TickExtras::default());
        }
        let profile = registry.tick_profile().unwrap();
        assert_eq!(profile.records().len(), 5);
        assert_eq!(profile.report().window, window);
    }
}
