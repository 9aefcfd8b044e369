//! An authoritative 60 Hz game-server tick on Freyr: aircraft, AI, physics and one
//! interest-managed, delta-encoded snapshot per peer, under an overrun governor.
//!
//! ```text
//! cargo run --release --example server_tick -- [--ticks N] [--workers N] [--entities N]
//!     [--peers N] [--budget-ms MS] [--governor on|off] [--force-load-factor X]
//!     [--pace realtime|free] [--kill-every N] [--churn-every N] [--profile-window N]
//!     [--json FILE] [--trace FILE] [--trace-ticks A..B] [--timeline-svg FILE]
//! ```
//!
//! Every flag is checked against its range (`--help` lists them) and every output file is
//! opened before the first tick; a command line that is not accepted exits with status 2.
//!
//! Each tick is one `Registry::update`, its systems in phases (see `server_tick/server.rs`):
//! rebuild the spatial grid and step the governor (PreUpdate); the AI pass (`each_async`,
//! reading every aircraft's pre-step state through the grid and a read-only view); the
//! integrate pass (`each_async`, turbulence seeded per entity and tick); two function systems
//! side by side, `damage` and `weapons` (each aircraft carries its weapons as children, which
//! are destroyed with it); a serial gather of the snapshot table and the peers due, the
//! per-peer pass (`parallel_for` over peers, each into its own buffer) and a serial flush
//! (Update); kills, respawns and peer churn (PostUpdate).
//! The loop is the registry's own (`server_tick/run.rs`): `set_fixed_step` at 60 Hz on the real
//! clock, `run_frame` with the catch-up clamp, `time_until_next_tick` slept in between; the
//! governor system steps once per tick from the previous tick's wall time (`last_tick`).
//!
//! It prints ticks per second, p50/p99 tick time, per-phase wall times, the governor's state
//! (or the forced levers), dropped ticks, bytes per peer per second, the digest over every peer's byte stream and the digest of the lever
//! sequence. The stream digest is the same for every `--workers` whenever the lever sequence
//! is (`--governor off`, or `--force-load-factor`).

#[path = "server_tick/ai.rs"]
mod ai;
#[path = "server_tick/args.rs"]
mod args;
#[path = "server_tick/grid.rs"]
mod grid;
#[path = "server_tick/levers.rs"]
mod levers;
#[path = "server_tick/outputs.rs"]
mod outputs;
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
#[path = "server_tick/despawn_log.rs"]
mod despawn_log;
#[cfg(test)]
#[path = "server_tick/equivalence.rs"]
mod equivalence;

use std::process::ExitCode;
use std::time::Duration;

use freyr::profile::TickProfile;

use crate::args::{Args, ArgsError};
use crate::outputs::Outputs;
use crate::run::{LeverSource, RunConfig, RunReport};
use crate::server::Server;

/// The exit status of a command line that was not accepted (nothing ran).
const USAGE_ERROR: u8 = 2;

fn main() -> ExitCode {
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(ArgsError::Help) => {
            println!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(ArgsError::Invalid(msg)) => {
            eprintln!("server_tick: {msg}\n{}", args::USAGE);
            return ExitCode::from(USAGE_ERROR);
        }
    };
    // Every output file is opened before the first tick: an unwritable path fails now.
    let outputs = match Outputs::open(&args) {
        Ok(outputs) => outputs,
        Err(msg) => {
            eprintln!("server_tick: {msg}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let mut server = Server::new(args.settings.clone(), args.workers);
    println!(
        "server_tick: {} aircraft on a {:.1} km map, {} peers, {} workers, {} ticks at 60 Hz \
         (--pace {}), budget {:.3} ms, levers {}",
        args.settings.entities,
        f64::from(args.settings.map_side()) / 1e3,
        args.settings.peers,
        server.registry.workers(),
        args.ticks,
        args.pace_name(),
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
        governor: args.governor_params(),
        levers: args.levers.clone(),
        raise_budget: args
            .raise_budget_at
            .map(|tick| (tick, Duration::from_secs(1) / 60)),
        profile: Some(args.profile_config()),
    };
    let report = run::run(&mut server, &config);
    let profile = server
        .registry
        .tick_profile()
        .expect("the run enables the tick profiler");
    print_report(&args, &server, &report, profile);
    let mut failed = false;
    for written in outputs.write(profile) {
        match written {
            Ok(line) => println!("{line}"),
            Err(msg) => {
                eprintln!("server_tick: {msg}");
                failed = true;
            }
        }
    }
    if failed {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn print_report(args: &Args, server: &Server, report: &RunReport, profile: &TickProfile) {
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
        "tick time over the last {} ticks: p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms  ewma {:.3} ms",
        profile.records().len(),
        wall.p50_ms,
        wall.p99_ms,
        wall.max_ms,
        wall.ewma_ms
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
    match &args.levers {
        LeverSource::Forced(schedule) => println!(
            "levers: forced at load factor {} for the whole run (the governor was not consulted)",
            schedule[0].1
        ),
        LeverSource::Governor { enabled: false } => println!(
            "governor: off, levers held at load factor 1, ewma {:.3} ms",
            ewma.unwrap_or(0.0)
        ),
        LeverSource::Governor { enabled: true } => println!(
            "governor: load factor {lf:.3} (lowest {:.3}), {down} decreases, {up} increases \
             (decisions that moved it), ewma {:.3} ms",
            report.lowest_load_factor,
            ewma.unwrap_or(0.0)
        ),
    }
    // Bytes per peer per second of game time (60 ticks a second); peers churn one for one, so
    // the count of peer-ticks is peers x ticks.
    let peer_seconds = server.settings().peers as f64 * report.ticks as f64 / 60.0;
    let per_peer = if peer_seconds > 0.0 {
        format!("{:.0}", server.bytes_sent() as f64 / peer_seconds)
    } else {
        "n/a (no peers)".to_owned()
    };
    println!(
        "dropped ticks {}  aircraft shot down {}  peers now {}  bytes sent {}  bytes per peer per \
         second {per_peer}",
        report.dropped,
        server.killed(),
        server.peer_count(),
        server.bytes_sent()
    );
    println!("world hash     {:016x}", report.world_hash);
    println!("stream digest  {:016x}", report.stream_digest);
    println!("lever digest   {:016x}", report.lever_digest);
}
