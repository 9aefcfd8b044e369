//! `scaling`: how Freyr's tick speeds up with workers. For each workload (see `workloads.rs`) and
//! each worker count 1, 2, 4, … up to `--max-workers` (default: this machine's threads), it
//! builds it, runs warm-up ticks, then times `--ticks` ticks (`Registry::update`, or the
//! `server_tick` example's own tick; in rounds that visit every worker count in turn, a fresh
//! build each visit) and reports the median tick, the speedup over 1 worker, the parallel
//! efficiency (speedup / workers) and the tasks stolen per tick (the registry profiler's pool
//! counters).
//!
//! It prints a markdown table and writes `scaling.csv`, `speedup.svg` and `speedup.png` (the
//! speedup curves against the ideal line) into `--out` (default `target/scaling/`). It is one
//! self-contained binary (the plots' font is compiled in): build it here and copy it to a
//! many-core machine to run `scaling --max-workers 16` there.
//!
//! `cargo run --release -p freyr-benches --bin scaling -- --max-workers 16`

mod plot;
mod workloads;

// The `server_tick` workload compiles the example's own modules, so it measures exactly the code
// the example runs; the parts of them only the example's command line uses are unused here.
#[allow(dead_code)]
#[path = "../../../../examples/server_tick/ai.rs"]
mod ai;
#[allow(dead_code)]
#[path = "../../../../examples/server_tick/grid.rs"]
mod grid;
#[allow(dead_code)]
#[path = "../../../../examples/server_tick/levers.rs"]
mod levers;
#[allow(dead_code)]
#[path = "../../../../examples/server_tick/peer.rs"]
mod peer;
#[allow(dead_code)]
#[path = "../../../../examples/server_tick/physics.rs"]
mod physics;
#[allow(dead_code)]
#[path = "../../../../examples/server_tick/server.rs"]
mod server;
#[allow(dead_code)]
#[path = "../../../../examples/server_tick/snapshot.rs"]
mod snapshot;
#[allow(dead_code)]
#[path = "../../../../examples/server_tick/wire.rs"]
mod wire;
#[allow(dead_code)]
#[path = "../../../../examples/server_tick/world.rs"]
mod world;

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use std::{env, fs};

use freyr::sched::MAX_WORKERS;
use workloads::{Size, WORKLOADS, Workload};

const HELP: &str = "\
scaling: Freyr's tick time, speedup and steals for 1, 2, 4, ... workers.

USAGE: scaling [OPTIONS]   (cargo run --release -p freyr-benches --bin scaling -- [OPTIONS])

OPTIONS:
  --max-workers N   sweep up to N workers, 1..=256 (default: this machine's hardware
                    threads, at most 256; more than it has runs oversubscribed)
  --ticks N         timed ticks per point, 1..=1000000 (default 50)
  --warmup N        untimed ticks before each round's timed ones, 0..=1000000 (default 5)
  --workload NAME   only this workload; repeatable (heavy_compute, million_iter,
                    server_tick)
  --out DIR         where scaling.csv, speedup.svg and speedup.png go (default target/scaling)
  -h, --help        this text";

/// The most timed (and warm-up) ticks per point: every timed tick is kept until the median.
const MAX_TICKS: usize = 1_000_000;

/// Parsed command line.
#[derive(Debug, PartialEq)]
struct Args {
    max_workers: usize,
    ticks: usize,
    warmup: usize,
    workloads: Vec<String>,
    out: PathBuf,
    help: bool,
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        max_workers: freyr_benches::machine_threads().min(MAX_WORKERS),
        ticks: 50,
        warmup: 5,
        workloads: Vec::new(),
        out: PathBuf::from("target/scaling"),
        help: false,
    };
    let mut seen: Vec<String> = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or(format!("{flag} needs a value"));
        let count = |flag: &str, v: String, lo: usize, hi: usize| match v.parse::<usize>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(n),
            _ => Err(format!(
                "{flag} {v}: expected a whole number in {lo}..={hi}"
            )),
        };
        if ["--max-workers", "--ticks", "--warmup", "--out"].contains(&arg.as_str()) {
            if seen.contains(&arg) {
                return Err(format!("{arg} given twice; pass it once"));
            }
            seen.push(arg.clone());
        }
        match arg.as_str() {
            "--max-workers" => parsed.max_workers = count(&arg, value(&arg)?, 1, MAX_WORKERS)?,
            "--ticks" => parsed.ticks = count(&arg, value(&arg)?, 1, MAX_TICKS)?,
            "--warmup" => parsed.warmup = count(&arg, value(&arg)?, 0, MAX_TICKS)?,
            "--workload" => {
                let name = value(&arg)?;
                if !WORKLOADS.iter().any(|w| w.name == name) {
                    let names: Vec<&str> = WORKLOADS.iter().map(|w| w.name).collect();
                    return Err(format!(
                        "--workload {name}: not one of {}",
                        names.join(", ")
                    ));
                }
                parsed.workloads.push(name);
            }
            "--out" => match value(&arg)? {
                v if v.is_empty() => {
                    return Err("--out needs a directory (got an empty name)".into());
                }
                v => parsed.out = v.into(),
            },
            "-h" | "--help" => parsed.help = true,
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    Ok(parsed)
}

/// 1, 2, 4, … below `max`, then `max`.
fn worker_counts(max: usize) -> Vec<usize> {
    let mut counts: Vec<usize> = std::iter::successors(Some(1usize), |n| n.checked_mul(2))
        .take_while(|&n| n < max)
        .collect();
    counts.push(max);
    counts
}

/// One measured point of the sweep.
#[derive(Clone, Debug)]
pub struct Point {
    /// The workload's name.
    pub workload: &'static str,
    /// Workers of the registry (the calling thread included).
    pub workers: usize,
    /// The median tick.
    pub median: Duration,
    /// The 1-worker median over this one.
    pub speedup: f64,
    /// `speedup / workers`.
    pub efficiency: f64,
    /// Tasks stolen from another worker's queue, per tick.
    pub steals_per_tick: f64,
    /// Tasks launched, per tick.
    pub tasks_per_tick: f64,
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

/// Shows where the sweep is: one rewritten line on a terminal, a line per point otherwise.
struct Progress {
    /// Workloads in the sweep.
    total: usize,
    /// Workloads measured so far.
    done: usize,
    terminal: bool,
}

impl Progress {
    fn show(&self, workload: &str, workers: usize, tick: usize, ticks: usize) {
        let line = format!(
            "[{}/{}] {workload}: {workers} workers, tick {tick}/{ticks}",
            self.done + 1,
            self.total
        );
        if self.terminal {
            eprint!("\r{line:<79}");
            let _ = std::io::stderr().flush();
        } else if tick == 0 {
            eprintln!("{line}");
        }
    }

    fn finish(&self) {
        if self.terminal {
            eprint!("\r{:79}\r", "");
        }
    }
}

/// Rounds the timed ticks of each worker count are split into.
const ROUNDS: usize = 5;

/// Times one workload at every worker count, in [`ROUNDS`] rounds: each round visits every
/// count in turn, building it afresh, running the warm-up ticks and then its share of the
/// timed ticks, and dropping it (which joins its workers) before the next count, so no idle pool
/// competes with the one being measured, and a slow spell of a shared machine lands on all counts
/// alike instead of bending one point of the curve. Speedup and efficiency are filled in later by
/// [`relate`].
fn measure(w: &Workload, counts: &[usize], args: &Args, progress: &mut Progress) -> Vec<Point> {
    let mut times = vec![Vec::with_capacity(args.ticks); counts.len()];
    let mut workers = counts.to_vec();
    let mut stolen = vec![0u64; counts.len()];
    let mut tasks = vec![0u64; counts.len()];
    let per_round = args.ticks.div_ceil(ROUNDS);
    let mut done = 0;
    while done < args.ticks {
        let batch = per_round.min(args.ticks - done);
        for (i, &n) in counts.iter().enumerate() {
            progress.show(w.name, n, done, args.ticks);
            let mut run = (w.build)(n, Size::Full);
            for _ in 0..args.warmup {
                run.tick();
            }
            run.registry().reset_profile();
            for _ in 0..batch {
                let start = Instant::now();
                run.tick();
                times[i].push(start.elapsed());
            }
            let profile = run.registry().profile();
            workers[i] = run.registry().workers();
            stolen[i] += profile.tasks_stolen();
            tasks[i] += profile.tasks;
        }
        done += batch;
    }
    progress.done += 1;
    let ticks = args.ticks as f64;
    (0..counts.len())
        .map(|i| Point {
            workload: w.name,
            workers: workers[i],
            median: median(std::mem::take(&mut times[i])),
            speedup: 1.0,
            efficiency: 1.0,
            steals_per_tick: stolen[i] as f64 / ticks,
            tasks_per_tick: tasks[i] as f64 / ticks,
        })
        .collect()
}

/// Fills in speedup and efficiency against each workload's 1-worker point.
fn relate(points: &mut [Point]) {
    let base: Vec<(&'static str, Duration)> = points
        .iter()
        .filter(|p| p.workers == 1)
        .map(|p| (p.workload, p.median))
        .collect();
    for p in points {
        let one = base
            .iter()
            .find(|(w, _)| *w == p.workload)
            .map_or(p.median, |b| b.1);
        p.speedup = one.as_secs_f64() / p.median.as_secs_f64();
        p.efficiency = p.speedup / p.workers as f64;
    }
}

fn table(points: &[Point]) -> String {
    let mut out = String::from(
        "| workload | workers | median tick | speedup | efficiency | stolen / tick | tasks / tick |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for p in points {
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} µs | {:.2}x | {:.0}% | {:.1} | {:.0} |",
            p.workload,
            p.workers,
            p.median.as_secs_f64() * 1e6,
            p.speedup,
            p.efficiency * 100.0,
            p.steals_per_tick,
            p.tasks_per_tick
        );
    }
    out
}

fn csv(points: &[Point]) -> String {
    let mut out = String::from(
        "workload,workers,median_us,speedup,efficiency,steals_per_tick,tasks_per_tick\n",
    );
    for p in points {
        let _ = writeln!(
            out,
            "{},{},{:.3},{:.4},{:.4},{:.2},{:.2}",
            p.workload,
            p.workers,
            p.median.as_secs_f64() * 1e6,
            p.speedup,
            p.efficiency,
            p.steals_per_tick,
            p.tasks_per_tick
        );
    }
    out
}

fn main() -> ExitCode {
    let args = match parse(env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("scaling: {e}");
            return ExitCode::from(2);
        }
    };
    if args.help {
        println!("{HELP}");
        return ExitCode::SUCCESS;
    }
    // The results are written after the sweep: a directory they cannot go to fails now.
    let probe = args.out.join("scaling.csv.probe");
    if let Err(e) = fs::create_dir_all(&args.out)
        .and_then(|()| fs::write(&probe, ""))
        .and_then(|()| fs::remove_file(&probe))
    {
        eprintln!(
            "scaling: --out {}: cannot write there ({e}); pass a writable directory",
            args.out.display()
        );
        return ExitCode::from(2);
    }
    let chosen: Vec<&Workload> = WORKLOADS
        .iter()
        .filter(|w| args.workloads.is_empty() || args.workloads.iter().any(|n| n == w.name))
        .collect();
    let counts = worker_counts(args.max_workers);
    let threads = freyr_benches::machine_threads();
    let machine = format!(
        "{}, {threads} hardware threads, {} build",
        freyr_benches::cpu_name(),
        freyr_benches::build_name()
    );
    println!("# Freyr scaling\n\n- Machine: {machine}");
    println!(
        "- Ticks: {} timed after {} warm-up, median reported",
        args.ticks, args.warmup
    );
    for w in &chosen {
        println!("- `{}`: {}", w.name, w.about);
    }
    if args.max_workers > threads {
        println!(
            "- Note: up to {} workers on {threads} hardware threads: counts above {threads} are \
             oversubscribed and cannot speed up",
            args.max_workers
        );
    }
    println!();
    let mut progress = Progress {
        total: chosen.len(),
        done: 0,
        terminal: std::io::stderr().is_terminal(),
    };
    let mut points = Vec::new();
    for w in &chosen {
        points.extend(measure(w, &counts, &args, &mut progress));
    }
    progress.finish();
    relate(&mut points);
    print!("{}", table(&points));
    if let Err(e) = fs::create_dir_all(&args.out) {
        eprintln!("scaling: creating {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    let csv_path = args.out.join("scaling.csv");
    if let Err(e) = fs::write(&csv_path, csv(&points)) {
        eprintln!("scaling: writing {}: {e}", csv_path.display());
        return ExitCode::FAILURE;
    }
    plot::register_font();
    let (svg, png) = (args.out.join("speedup.svg"), args.out.join("speedup.png"));
    let caption = format!("Freyr speedup: {machine}");
    if let Err(e) = plot::speedup_plots(&points, args.max_workers, &caption, &svg, &png) {
        eprintln!("scaling: drawing {e}");
        return ExitCode::FAILURE;
    }
    println!(
        "\nWrote {}, {} and {}.",
        csv_path.display(),
        svg.display(),
        png.display()
    );
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Args, String> {
        parse(list.iter().map(|s| s.to_string()))
    }

    #[test]
    fn worker_counts_double_up_to_the_maximum() {
        assert_eq!(worker_counts(1), [1]);
        assert_eq!(worker_counts(2), [1, 2]);
        assert_eq!(worker_counts(16), [1, 2, 4, 8, 16]);
        assert_eq!(worker_counts(12), [1, 2, 4, 8, 12]);
    }

    #[test]
    fn flags_are_validated_and_unknown_ones_named() {
        let parsed = args(&["--max-workers", "16", "--ticks", "7", "--out", "d"]).unwrap();
        assert_eq!((parsed.max_workers, parsed.ticks), (16, 7));
        assert_eq!(parsed.out, PathBuf::from("d"));
        assert!(
            args(&["--max-workers", "0"])
                .unwrap_err()
                .contains("1..=256")
        );
        assert_eq!(
            args(&["--fast"]).unwrap_err(),
            "unknown argument \"--fast\" (see --help)"
        );
        assert_eq!(args(&["--ticks"]).unwrap_err(), "--ticks needs a value");
        assert!(
            args(&["--workload", "nope"])
                .unwrap_err()
                .contains("not one of")
        );
    }

    #[test]
    fn speedup_and_efficiency_are_relative_to_one_worker() {
        let point = |workers, micros| Point {
            workload: "w",
            workers,
            median: Duration::from_micros(micros),
            speedup: 0.0,
            efficiency: 0.0,
            steals_per_tick: 0.0,
            tasks_per_tick: 0.0,
        };
        let mut points = [point(1, 800), point(2, 400), point(4, 400)];
        relate(&mut points);
        assert_eq!(points[1].speedup, 2.0);
        assert_eq!(points[1].efficiency, 1.0);
        assert_eq!(points[2].efficiency, 0.5);
        assert!(table(&points).contains("| w | 4 | 400.0 µs | 2.00x | 50% |"));
        assert!(csv(&points).contains("w,2,400.000,2.0000,1.0000,"));
    }

    #[test]
    fn plots_are_written_with_the_bundled_font() {
        plot::register_font();
        let dir = env::temp_dir().join(format!("freyr-scaling-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let mk = |workers, speedup| Point {
            workload: "million_iter",
            workers,
            median: Duration::from_micros(100),
            speedup,
            efficiency: speedup / workers as f64,
            steals_per_tick: 0.0,
            tasks_per_tick: 0.0,
        };
        let (svg, png) = (dir.join("s.svg"), dir.join("s.png"));
        plot::speedup_plots(&[mk(1, 1.0), mk(2, 1.8)], 2, "test", &svg, &png).unwrap();
        let svg_text = fs::read_to_string(&svg).unwrap();
        assert!(svg_text.contains("million_iter") && svg_text.contains("speedup over 1 worker"));
        assert_eq!(&fs::read(&png).unwrap()[1..4], b"PNG");
        fs::remove_dir_all(&dir).unwrap();
    }
}
