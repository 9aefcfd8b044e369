//! Criterion bench group `server_tick`: one whole tick of the `server_tick` example (20,000
//! aircraft, 256 peers: grid, AI, integrate, gather, per-peer snapshots, flush, tail) at 1 and 2
//! workers, levers at load factor 1 (scaling further: the example's `--workers`).
//!
//! It compiles the example's own modules (`examples/server_tick/*.rs`), so it measures exactly
//! the code the example runs. Setup (spawning, 30 warm-up ticks so every peer has a history to
//! delta against) happens outside the measured part; the measured part is one
//! `#[inline(never)] run` = one tick, and the world keeps moving from one iteration to the
//! next. Run: `cargo bench -p freyr-benches --bench server_tick`; ticks per second = 1 / time.
//!
//! Two more variants at 1 worker price the tick profiler: `profiled` records every tick (the
//! update is the tick; records, no trace), `traced` also traces every tick (every batch
//! of tasks stamped, every peer's build timed). On a busy machine the whole-tick variants are too
//! noisy to price something this small, so group `tick_profiler` measures the profiler's own
//! work directly: the tick calls (begin, 7 phases, end) with the profiler off and on, and a
//! 40-task `each_async` over 20,000 entities untraced and traced.

// The bench drives the server directly and leaves the example's command line and its test-only
// helpers unused (benches build with cfg(test) but without the test harness, so the modules'
// test imports are unused too).
#![allow(dead_code, unused_imports)]

#[path = "../../examples/server_tick/ai.rs"]
mod ai;
#[path = "../../examples/server_tick/grid.rs"]
mod grid;
#[path = "../../examples/server_tick/levers.rs"]
#[allow(dead_code)] // the bench uses the unloaded levers only
mod levers;
#[path = "../../examples/server_tick/peer.rs"]
mod peer;
#[path = "../../examples/server_tick/physics.rs"]
mod physics;
#[path = "../../examples/server_tick/server.rs"]
mod server;
#[path = "../../examples/server_tick/snapshot.rs"]
mod snapshot;
#[path = "../../examples/server_tick/wire.rs"]
mod wire;
#[path = "../../examples/server_tick/world.rs"]
mod world;

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use freyr::Registry;
use freyr::profile::{TickExtras, TickProfileConfig};

use crate::server::{Server, Settings};

/// A server at the example's defaults (levers unloaded), warmed up by 30 ticks.
fn new(workers: usize) -> Server {
    let mut server = Server::new(Settings::default(), workers);
    for _ in 0..30 {
        server.tick();
    }
    server
}

/// One tick on the registry's loop (`update`); with the tick profiler on, the update records
/// itself as a tick.
#[inline(never)]
fn run(server: &mut Server) {
    server.tick();
}

fn server_tick(c: &mut Criterion) {
    let mut group = c.benchmark_group("server_tick");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(8));
    for workers in [1, 2] {
        let mut server = new(workers);
        group.bench_function(format!("20k_aircraft_256_peers/{workers}_workers"), |b| {
            b.iter(|| run(&mut server));
        });
    }
    for (name, trace_ticks) in [("profiled", 0..0), ("traced", 0..u64::MAX)] {
        let mut server = new(1);
        server.registry.enable_tick_profile(TickProfileConfig {
            trace_ticks,
            ..TickProfileConfig::default()
        });
        group.bench_function(format!("20k_aircraft_256_peers/1_workers_{name}"), |b| {
            b.iter(|| run(&mut server));
        });
    }
    group.finish();
}

const PHASES: [&str; 7] = [
    "grid",
    "ai",
    "integrate",
    "gather",
    "serialize",
    "flush",
    "tail",
];

/// The tick calls alone: what the profiler adds to a tick that does nothing.
#[inline(never)]
fn tick_calls(registry: &mut Registry, tick: &mut u64) {
    registry.profile_tick_begin(*tick);
    for phase in PHASES {
        registry.profile_tick_phase(phase);
    }
    registry.profile_tick_end(TickExtras::default());
    *tick += 1;
}

struct Value(f32);

/// One labelled 40-task launch and its sync point, inside a tick.
#[inline(never)]
fn launch(registry: &mut Registry, tick: &mut u64) {
    registry.profile_tick_begin(*tick);
    registry
        .query::<&mut Value>()
        .with_label("Add")
        .each_async(|_, v| v.0 += 1.0);
    registry.execute_tasks();
    registry.profile_tick_end(TickExtras::default());
    *tick += 1;
}

fn tick_profiler(c: &mut Criterion) {
    let mut group = c.benchmark_group("tick_profiler");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (name, config) in [("off", None), ("on", Some(TickProfileConfig::default()))] {
        let mut registry = Registry::with_workers(1);
        registry.spawn_batch((0..20_000).map(|i| (Value(i as f32),)));
        if let Some(config) = config {
            registry.enable_tick_profile(config);
        }
        let mut tick = 0;
        group.bench_function(format!("tick_calls/{name}"), |b| {
            b.iter(|| tick_calls(&mut registry, &mut tick));
        });
    }
    for (name, trace_ticks) in [("untraced", 0..0), ("traced", 0..u64::MAX)] {
        let mut registry = Registry::with_workers(1);
        registry.spawn_batch((0..20_000).map(|i| (Value(i as f32),)));
        registry.enable_tick_profile(TickProfileConfig {
            trace_ticks,
            ..TickProfileConfig::default()
        });
        let mut tick = 0;
        group.bench_function(format!("each_async_40_tasks/{name}"), |b| {
            b.iter(|| launch(&mut registry, &mut tick));
        });
    }
    group.finish();
}

criterion_group!(benches, server_tick, tick_profiler);
criterion_main!(benches);
