//! The aircraft of `server_tick` split into zones: vertical strips of the map, each its own
//! Freyr world, handing aircraft across the borders through a bus.
//!
//! ```text
//! cargo run --release --example zones                      # two zones, one process, no setup
//! cargo run --release --example zones -- --bus nats://127.0.0.1:4222 --zone 0 --of 2
//! cargo run --release --example zones -- --bus nats://127.0.0.1:4222 --zone 1 --of 2
//! ```
//!
//! Every flag is checked before the run (`--help` lists them); a command line that is not
//! accepted exits with status 2. It prints, per zone, ticks per second, handoffs per second,
//! the handoff latency in ticks of 1/60 s (p50/p99, from publish to arrival), the time spent
//! waiting for neighbours and for whom, and the merged digest (aircraft keyed by their stable
//! key: the same for any placement of zones in processes and any worker count).

#[path = "zones/args.rs"]
mod args;

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use freyr_zone::aircraft::{self, Strips};
use freyr_zone::{Bus, InProcessBus, NatsBus, Pace, Zone, ZoneConfig, ZoneDigest, ZoneStats};

use crate::args::{Args, ArgsError, BusChoice};

/// The exit status of a command line that was not accepted (nothing ran).
const USAGE_ERROR: u8 = 2;

/// One zone's run: its digest, telemetry and wall time.
struct ZoneRun {
    zone: u32,
    digest: ZoneDigest,
    stats: ZoneStats,
    wall: Duration,
}

fn main() -> ExitCode {
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(ArgsError::Help) => {
            println!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(ArgsError::Invalid(msg)) => {
            eprintln!("zones: {msg}\n{}", args::USAGE);
            return ExitCode::from(USAGE_ERROR);
        }
    };
    // The digest part is written after the run: a directory it cannot go to fails now.
    if let (Some(dir), BusChoice::Nats { zone, .. }) = (&args.parts_dir, &args.bus)
        && let Err(msg) = check_parts_dir(dir, *zone)
    {
        eprintln!("zones: {msg}");
        return ExitCode::from(USAGE_ERROR);
    }
    let result = match &args.bus {
        BusChoice::InProcess { zones } => run_in_process(&args, *zones),
        BusChoice::Nats { url, zone, of } => run_nats(&args, url, *zone, *of),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("zones: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn config(args: &Args, zone: u32, zones: u32) -> ZoneConfig {
    let mut c = ZoneConfig::new(zone, zones);
    c.lookahead = args.lookahead;
    c.pace = if args.realtime {
        Pace::RealTime
    } else {
        Pace::Free
    };
    c.neighbour_timeout = Duration::from_secs(60);
    c
}

fn run_zone<B: Bus>(args: &Args, zone: u32, zones: u32, bus: B) -> Result<ZoneRun, String> {
    let strips = Strips {
        zones,
        side: args.side,
    };
    let mut registry = aircraft::registry(args.workers, args.side);
    aircraft::spawn_zone(&mut registry, &strips, zone, args.aircraft);
    let mut z =
        Zone::new(registry, bus, strips, config(args, zone, zones)).map_err(|e| e.to_string())?;
    let start = Instant::now();
    z.run_until(args.ticks)
        .map_err(|e| format!("zone {zone}: {e}"))?;
    let wall = start.elapsed();
    z.settle().map_err(|e| format!("zone {zone}: {e}"))?;
    Ok(ZoneRun {
        zone,
        digest: z.digest(),
        stats: z.stats().clone(),
        wall,
    })
}

fn banner(args: &Args, what: &str) {
    println!(
        "zones: {} aircraft on a {:.1} km map, {what}, {} ticks (--pace {}), K = {}, {} worker(s) per zone",
        args.aircraft,
        f64::from(args.side) / 1e3,
        args.ticks,
        if args.realtime { "realtime" } else { "free" },
        args.lookahead,
        args.workers
    );
}

fn run_in_process(args: &Args, zones: u32) -> Result<(), String> {
    banner(
        args,
        &format!("{zones} zone(s) on threads of one process, in-process bus"),
    );
    let bus = InProcessBus::new(zones);
    let runs: Vec<Result<ZoneRun, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..zones)
            .map(|z| {
                let bus = bus.clone();
                s.spawn(move || run_zone(args, z, zones, bus))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a zone thread panicked"))
            .collect()
    });
    let runs: Vec<ZoneRun> = runs.into_iter().collect::<Result<_, _>>()?;
    report_header();
    let mut merged = ZoneDigest::default();
    for run in &runs {
        report(run);
        merged.merge(&run.digest);
    }
    let dups = merged.duplicate_keys().len();
    println!(
        "merged digest  {:016x}  ({} aircraft, {} duplicated keys)",
        merged.value(),
        merged.entities(),
        dups
    );
    if merged.entities() != args.aircraft || dups != 0 {
        return Err("aircraft were lost or duplicated".into());
    }
    Ok(())
}

fn run_nats(args: &Args, url: &str, zone: u32, of: u32) -> Result<(), String> {
    banner(
        args,
        &format!("zone {zone} of {of} in this process, NATS JetStream at {url}"),
    );
    let mut bus = NatsBus::connect(url, &args.stream, Duration::from_secs(5))
        .map_err(|e| format!("{e} (is nats-server -js running there?)"))?;
    if args.fresh {
        bus.delete_stream(&args.stream).map_err(|e| e.to_string())?;
        bus = NatsBus::connect(url, &args.stream, Duration::from_secs(5))
            .map_err(|e| e.to_string())?;
    }
    let run = run_zone(args, zone, of, bus)?;
    report_header();
    report(&run);
    println!(
        "digest part    zone {zone}: {} aircraft, sum {:016x}",
        run.digest.entities(),
        run.digest.sum()
    );
    if let Some(dir) = &args.parts_dir {
        let merged = merge_parts(dir, zone, of, &run.digest)?;
        println!("merged digest  {merged:016x}  (all {of} zones' parts)");
    }
    Ok(())
}

/// Creates `dir` if needed and checks that this zone's digest part can be written there.
fn check_parts_dir(dir: &Path, zone: u32) -> Result<(), String> {
    let probe = dir.join(format!("zone-{zone}.part.tmp"));
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&probe, ""))
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| {
            format!(
                "--parts-dir {}: cannot write there ({e}); pass a writable directory",
                dir.display()
            )
        })
}

/// Writes this zone's digest part to `dir` and waits (up to 60 s) for every zone's.
fn merge_parts(dir: &Path, zone: u32, of: u32, digest: &ZoneDigest) -> Result<u64, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = |z: u32| dir.join(format!("zone-{z}.part"));
    let tmp = dir.join(format!("zone-{zone}.part.tmp"));
    std::fs::write(&tmp, format!("{} {}", digest.entities(), digest.sum()))
        .and_then(|()| std::fs::rename(&tmp, path(zone)))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut parts = Vec::new();
    for z in 0..of {
        let text = loop {
            if let Ok(text) = std::fs::read_to_string(path(z)) {
                break text;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "zone {z}'s digest part did not appear in {}",
                    dir.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut fields = text.split(' ').map(str::parse::<u64>);
        match (fields.next(), fields.next()) {
            (Some(Ok(n)), Some(Ok(sum))) => parts.push((n, sum)),
            _ => return Err(format!("{}: not a digest part", path(z).display())),
        }
    }
    Ok(ZoneDigest::value_of_parts(&parts))
}

fn report_header() {
    println!(
        "{:<5} {:>7} {:>9} {:>10} {:>10} {:>8} {:>8} {:>9}  waited for",
        "zone", "ticks", "ticks/s", "handoffs", "handoff/s", "lat p50", "lat p99", "wait s"
    );
}

fn report(run: &ZoneRun) {
    let s = &run.stats;
    let secs = run.wall.as_secs_f64().max(1e-9);
    let tick = Duration::from_secs(1) / 60;
    let lat = |q| {
        s.latency_ticks(q, tick)
            .map_or("-".to_owned(), |t| format!("{t:.2}"))
    };
    let waited_for: Vec<String> = s
        .waited_for
        .iter()
        .enumerate()
        .filter(|(_, d)| !d.is_zero())
        .map(|(z, d)| format!("{z}: {:.3} s", d.as_secs_f64()))
        .collect();
    println!(
        "{:<5} {:>7} {:>9.1} {:>10} {:>10.0} {:>8} {:>8} {:>9.3}  {}",
        run.zone,
        s.ticks,
        s.ticks as f64 / secs,
        s.handoffs_sent,
        s.handoffs_sent as f64 / secs,
        lat(0.5),
        lat(0.99),
        s.waited.as_secs_f64(),
        if waited_for.is_empty() {
            "-".to_owned()
        } else {
            waited_for.join(", ")
        }
    );
    if s.rejected() > 0 {
        println!(
            "      refused messages: {} (last: {:?})",
            s.rejected(),
            s.last_rejection
        );
    }
}
