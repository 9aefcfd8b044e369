//! An authoritative 60 Hz game-server tick on Freyr: aircraft, AI, physics and one
//! interest-managed, delta-encoded snapshot per peer, under an overrun governor.
//!
//! ```text
//! cargo run --release --example server_tick -- [--ticks N] [--workers N] [--entities N]
//!     [--peers N] [--budget-ms MS] [--governor on|off] [--force-load-factor X]
//!     [--pace realtime|free] [--json FILE] [--trace FILE] [--timeline-svg FILE]
//! ```
//!
//! Each tick (see `server_tick/server.rs`): rebuild the spatial grid; the AI pass
//! (`each_async`, reading every aircraft's pre-step state through the grid and a read-only
//! view); the integrate pass (`each_async`, turbulence seeded per entity and tick); a serial
//! gather of the snapshot table and the peers due; the per-peer pass (`parallel_for` over
//! peers, each into its own buffer); a serial flush. The loop is `FixedStep` at 60 Hz with the
//! catch-up clamp; the governor steps once per tick from the previous tick's wall time.
//!
//! It prints ticks per second, p50/p99 tick time, per-phase wall times, the governor's state,
//! dropped ticks, the digest over every peer's byte stream and the digest of the lever
//! sequence. The stream digest is the same for every `--workers` whenever the lever sequence
//! is (`--governor off`, or `--force-load-factor`).

#[path = "server_tick/ai.rs"]
mod ai;
#[path = "server_tick/args.rs"]
mod args;
#[path = "server_tick/grid.rs"]
mod grid;
#[path = "server_tick/peer.rs"]
mod peer;
#[path = "server_tick/physics.rs"]
mod physics;
#[path = "server_tick/run.rs"]
mod run;
#[path = "server_tick/server.rs"]
mod server;
#[path = "server_tick/snapshot.rs"]
mod snapshot;
#[path = "server_tick/timeline.rs"]
mod timeline;
#[path = "server_tick/wire.rs"]
mod wire;
#[path = "server_tick/world.rs"]
mod world;

#[cfg(test)]
#[path = "server_tick/equivalence.rs"]
mod equivalence;

use std::fs::File;
use std::io::BufWriter;
use std::process::ExitCode;
use std::time::Duration;

use freyr::{GovernorParams, TickProfile, TickProfileConfig};

use crate::run::{LeverSource, RunConfig, RunReport};
use crate::server::Server;

fn main() -> ExitCode {
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(msg) if msg.is_empty() => {
            println!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("server_tick: {msg}\n{}", args::USAGE);
            return ExitCode::FAILURE;
        }
    };
    let mut server = Server::new(args.settings.clone(), args.workers);
    println!(
        "server_tick: {} aircraft, {} peers, {} workers, {} ticks at 60 Hz ({:?} pace), budget {:.3} ms, levers {}",
        args.settings.entities,
        args.settings.peers,
        server.registry.workers(),
        args.ticks,
        args.pace,
        args.budget.as_secs_f64() * 1e3,
        match &args.levers {
            LeverSource::Governor { enabled: true } => "governed".to_owned(),
            LeverSource::Governor { enabled: false } => "governor off".to_owned(),
            LeverSource::Forced(s) => format!("forced at load factor {}", s[0].1),
        }
    );
    let config = RunConfig {
        ticks: args.ticks,
        pace: args.pace,
        governor: GovernorParams {
            budget: args.budget,
            ..GovernorParams::default()
        },
        levers: args.levers.clone(),
        raise_budget: args
            .raise_budget_at
            .map(|tick| (tick, Duration::from_secs(1) / 60)),
        profile: Some(TickProfileConfig {
            window: args.ticks as usize,
            trace_ticks: args.traced_ticks(),
            ..TickProfileConfig::default()
        }),
    };
    let report = run::run(&mut server, &config);
    let profile = server
        .registry
        .tick_profile()
        .expect("the run enables the tick profiler");
    print_report(&server, &report, profile);
    if let Err(msg) = write_outputs(&args, profile) {
        eprintln!("server_tick: {msg}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn print_report(server: &Server, report: &RunReport, profile: &TickProfile) {
    let wall = profile.wall_stats();
    let secs = report.busy.as_secs_f64().max(1e-9);
    println!(
        "ticks {}  in {:.2} s  ({:.1} ticks/s of wall time; {:.1} ticks/s of tick time)",
        report.ticks,
        report.elapsed.as_secs_f64(),
        report.ticks as f64 / report.elapsed.as_secs_f64().max(1e-9),
        report.ticks as f64 / secs
    );
    println!(
        "tick time: p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms  ewma {:.3} ms",
        wall.p50_ms, wall.p99_ms, wall.max_ms, wall.ewma_ms
    );
    println!(
        "{:<12} {:>10} {:>10} {:>10}",
        "phase", "mean ms", "p50 ms", "p99 ms"
    );
    for name in profile.phase_names() {
        let s = profile.phase_stats(name);
        println!(
            "{name:<12} {:>10.3} {:>10.3} {:>10.3}",
            s.mean_ms, s.p50_ms, s.p99_ms
        );
    }
    let json = profile.report();
    println!(
        "tasks {}  steals {}  parks {}  implicit syncs {}  sync points {}",
        json.summary.tasks,
        json.summary.steals,
        json.summary.parks,
        json.summary.implicit_syncs,
        json.summary.sync_points
    );
    let (lf, (down, up), ewma) = report.governor;
    let min_lf = report.load_factors.iter().copied().fold(1.0, f64::min);
    println!(
        "governor: load factor {lf:.3} (lowest {min_lf:.3}), {down} decreases, {up} increases, ewma {:.3} ms",
        ewma.unwrap_or(0.0)
    );
    println!(
        "dropped ticks {}  aircraft shot down {}  peers now {}  bytes sent {}",
        report.dropped,
        server.killed,
        server.peer_count(),
        server.bytes_sent()
    );
    println!("world hash     {:016x}", report.world_hash);
    println!("stream digest  {:016x}", report.stream_digest);
    println!("lever digest   {:016x}", report.lever_digest);
}

fn write_outputs(args: &args::Args, profile: &TickProfile) -> Result<(), String> {
    let create = |path: &std::path::Path| {
        File::create(path)
            .map(BufWriter::new)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    if let Some(path) = &args.json {
        profile
            .write_json(create(path)?)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.trace {
        profile
            .write_chrome_trace(create(path)?)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        println!(
            "wrote {} (open it in https://ui.perfetto.dev)",
            path.display()
        );
    }
    if let Some(path) = &args.timeline_svg {
        let tick = args.traced_ticks().start;
        let bars = timeline::draw(profile.trace_events(), tick, path)?;
        println!("wrote {} (tick {tick}, {bars} spans)", path.display());
    }
    Ok(())
}
