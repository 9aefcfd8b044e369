//! The main job: a million entities ticked through `Registry::update`.
//!
//! ```text
//! cargo run --release --example million -- [--ticks N] [--workers N] [--entities N] [--churn N]
//! cargo run --release --example million -- --help
//! ```
//!
//! - `--ticks N`: ticks to run (default 300, at least 1);
//! - `--workers N`: pool size, the calling thread included (default 0 = one per CPU; more than
//!   `MAX_WORKERS` = 256 is clamped to 256, and the header says so);
//! - `--entities N`: starting population (default 1,000,000, from 10 to 100,000,000; 10% with
//!   an `Ai`);
//! - `--churn N`: expected spawns and despawns per tick (default 300, at most `--entities`).
//!
//! Flags take their value as `--ticks 50` or `--ticks=50`; digits may be grouped with `_`
//! (`1_000_000`). `--help` prints the flags on stdout and exits 0; an unknown flag, a missing or
//! malformed value, a flag given twice or a stray argument prints what is wrong on stderr and
//! exits 2.
//!
//! Each tick an `each_async` pass integrates every entity ("Integrate") while the AI pass
//! ("AI Think", `each_with`) runs on the calling thread, overlapping it; expired entities are
//! despawned and new ones spawned through commands. At the end it prints a table: tick times,
//! per-phase and per-label wall time, tasks run and stolen, busy time per thread (summarised as
//! min / median / max past 8 threads), implicit sync points, and the world hash — the same for
//! every `--workers` at the same `--ticks`, `--entities` and `--churn`.

#[path = "million/sim.rs"]
mod sim;

use std::process::ExitCode;
use std::time::Duration;

use freyr::Phase;
use freyr::sched::{MAX_WORKERS, resolve_worker_count};

const USAGE: &str = "usage: million [--ticks N] [--workers N] [--entities N] [--churn N]
  --ticks N     ticks to run (default 300, at least 1)
  --workers N   total parallelism incl. the calling thread (default 0 = one per CPU;
                at most 256: more is clamped to 256)
  --entities N  starting population, 10% with an Ai, 10..=100000000 (default 1000000)
  --churn N     expected spawns and despawns per tick, at most --entities (default 300)
  -h, --help    print this and exit
Values go as `--ticks 50` or `--ticks=50`; `_` may group digits (1_000_000).";

/// What the command line asks for.
#[derive(Debug)]
enum Command {
    /// Print [`USAGE`] on stdout and exit 0.
    Help,
    /// Run the simulation.
    Run(sim::Config),
}

/// The largest starting population.
const MAX_ENTITIES: usize = 100_000_000;

/// The flags that take a number.
const FLAGS: [&str; 4] = ["--ticks", "--workers", "--entities", "--churn"];

/// Parses `--name value` / `--name=value` pairs. Every problem is reported with the flag's name:
/// "unknown flag", "needs a value", "needs a whole number", "given twice", "at least".
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut config = sim::Config {
        entities: 1_000_000,
        ai_every: 10,
        churn: 300,
        workers: 0,
        ticks: 300,
    };
    let mut seen: Vec<&str> = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(Command::Help);
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let Some(&flag) = FLAGS.iter().find(|&&f| f == name) else {
            return Err(if name.starts_with('-') {
                format!("unknown flag {name}")
            } else {
                format!("unexpected argument {arg:?}: every value follows its flag")
            });
        };
        if seen.contains(&flag) {
            return Err(format!("{flag} given twice"));
        }
        seen.push(flag);
        let value = match inline {
            Some(v) => v,
            None => match args.next() {
                Some(v) if !v.starts_with("--") => v,
                _ => return Err(format!("{flag} needs a value")),
            },
        };
        if value.is_empty() {
            return Err(format!("{flag} needs a value"));
        }
        let number = value
            .replace('_', "")
            .parse::<usize>()
            .map_err(|_| format!("{flag} needs a whole number, not {value:?}"))?;
        match flag {
            "--ticks" => {
                config.ticks = u32::try_from(number)
                    .ok()
                    .filter(|&t| t >= 1)
                    .ok_or_else(|| format!("--ticks must be between 1 and {}", u32::MAX))?;
            }
            "--workers" => config.workers = number,
            "--entities" if (config.ai_every..=MAX_ENTITIES).contains(&number) => {
                config.entities = number;
            }
            "--entities" => {
                return Err(format!(
                    "--entities must be between {} and {MAX_ENTITIES}",
                    config.ai_every
                ));
            }
            _ => config.churn = number,
        }
    }
    if config.churn > config.entities {
        return Err(format!(
            "--churn {} is more than the {} entities; pass at most --entities",
            config.churn, config.entities
        ));
    }
    Ok(Command::Run(config))
}

/// The first line of the output. `detected` is the machine's parallelism; the worker count is
/// the pool's real size, and how it was derived from `--workers` when they differ.
fn header(config: &sim::Config, detected: usize) -> String {
    let workers = resolve_worker_count(config.workers, detected);
    let how = if config.workers == 0 {
        format!(" (auto: one per CPU, {detected} detected)")
    } else if workers != config.workers {
        format!(
            " (--workers {} clamped to MAX_WORKERS = {MAX_WORKERS})",
            config.workers
        )
    } else {
        String::new()
    };
    format!(
        "freyr million: {} entities, {} ticks, {workers} workers{how}, churn {}/tick",
        config.entities, config.ticks, config.churn
    )
}

/// The "busy per thread" cell: every thread up to 8, else min / median / max with the threads
/// they belong to, so the row stays one line at 256 workers.
fn busy_summary(busy: &[Duration]) -> String {
    const LISTED: usize = 8;
    if busy.len() <= LISTED {
        return busy.iter().map(|&d| ms(d)).collect::<Vec<_>>().join(", ");
    }
    let mut order: Vec<usize> = (0..busy.len()).collect();
    order.sort_by_key(|&i| (busy[i], i));
    let at = |rank: usize| {
        let i = order[rank];
        format!("{} (#{i})", ms(busy[i]))
    };
    let total: Duration = busy.iter().sum();
    format!(
        "{} threads: min {}, median {}, max {}, sum {}",
        busy.len(),
        at(0),
        at((busy.len() - 1) / 2),
        at(busy.len() - 1),
        ms(total)
    )
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn print_table(config: &sim::Config, out: &sim::Outcome) {
    let p = &out.profile;
    let total: Duration = out.tick_times.iter().sum();
    let mut rows: Vec<(String, String)> = vec![
        (
            "entities (start -> end)".into(),
            format!("{} -> {}", config.entities, out.entities),
        ),
        (
            "  with Ai (start -> end)".into(),
            format!(
                "{} -> {}",
                config.entities / config.ai_every,
                out.ai_entities
            ),
        ),
        ("workers".into(), out.workers.to_string()),
        ("ticks".into(), out.tick_times.len().to_string()),
        ("setup".into(), ms(out.setup)),
        ("total tick time".into(), ms(total)),
        ("median tick".into(), ms(out.tick_quantile(0.5))),
        ("p99 tick".into(), ms(out.tick_quantile(0.99))),
    ];
    for phase in Phase::ALL {
        let s = &p.phases[phase.index()];
        rows.push((
            format!("phase {}", phase.name()),
            format!("{} (sync {}) over {} runs", ms(s.wall), ms(s.sync), s.runs),
        ));
    }
    for label in &p.labels {
        rows.push((
            format!("label {}", label.label),
            format!(
                "{} over {} calls, {} tasks",
                ms(label.wall),
                label.calls,
                label.tasks
            ),
        ));
    }
    rows.extend([
        ("tasks launched".into(), p.tasks.to_string()),
        ("tasks run".into(), p.tasks_run().to_string()),
        ("tasks stolen".into(), p.tasks_stolen().to_string()),
        (
            // Background workers first (#0 is freyr-worker-0), then the calling thread(s).
            "busy per thread".into(),
            busy_summary(&p.busy()),
        ),
        ("sync points".into(), p.sync_points.to_string()),
        (
            "implicit syncs".into(),
            format!("{} ({})", p.implicit_syncs, ms(p.implicit_sync_wait)),
        ),
        (
            "commands applied (stale)".into(),
            format!("{} ({})", p.commands_applied, p.stale_commands),
        ),
        ("world hash".into(), format!("{:#018x}", out.hash)),
    ]);
    let left = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let right = rows.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    let rule = format!("+-{}-+-{}-+", "-".repeat(left), "-".repeat(right));
    println!("{rule}");
    for (k, v) in rows {
        println!("| {k:<left$} | {v:<right$} |");
    }
    println!("{rule}");
}

fn main() -> ExitCode {
    let config = match parse_args(std::env::args().skip(1)) {
        Ok(Command::Run(c)) => c,
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("million: {e}");
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let detected = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("{}", header(&config, detected));
    let outcome = sim::run(&config);
    print_table(&config, &outcome);
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    fn run(s: &str) -> sim::Config {
        match parse_args(args(s)) {
            Ok(Command::Run(c)) => c,
            other => panic!("{s:?} gave {other:?}"),
        }
    }

    fn error(s: &str) -> String {
        match parse_args(args(s)) {
            Err(e) => e,
            other => panic!("{s:?} gave {other:?}, not an error"),
        }
    }

    #[test]
    fn defaults_are_a_million_entities_for_300_ticks_on_all_cpus() {
        let c = run("");
        assert_eq!(
            (c.entities, c.ticks, c.workers, c.churn),
            (1_000_000, 300, 0, 300)
        );
    }

    #[test]
    fn flags_parse_in_both_spellings() {
        let c = run("--ticks 50 --workers=3 --entities 1_000 --churn=7");
        assert_eq!((c.entities, c.ticks, c.workers, c.churn), (1000, 50, 3, 7));
    }

    #[test]
    fn help_is_a_command_not_an_error() {
        assert!(matches!(parse_args(args("--help")), Ok(Command::Help)));
        assert!(matches!(parse_args(args("-h")), Ok(Command::Help)));
        assert!(matches!(
            parse_args(args("--ticks 5 --help")),
            Ok(Command::Help)
        ));
        for flag in FLAGS {
            assert!(USAGE.contains(flag), "usage lacks {flag}");
        }
    }

    #[test]
    fn each_mistake_is_named() {
        assert_eq!(error("--frobnicate"), "unknown flag --frobnicate");
        assert_eq!(error("--frobnicate 1"), "unknown flag --frobnicate");
        assert_eq!(error("--frob=1"), "unknown flag --frob");
        assert_eq!(error("-t 5"), "unknown flag -t");
        assert!(error("50").starts_with("unexpected argument \"50\""));
        assert_eq!(error("--ticks"), "--ticks needs a value");
        assert_eq!(error("--ticks="), "--ticks needs a value");
        assert_eq!(error("--ticks --workers 2"), "--ticks needs a value");
        assert_eq!(
            error("--ticks x"),
            "--ticks needs a whole number, not \"x\""
        );
        assert_eq!(
            error("--workers -1"),
            "--workers needs a whole number, not \"-1\""
        );
        assert_eq!(error("--ticks 1 --ticks=2"), "--ticks given twice");
        assert_eq!(
            error("--entities 3"),
            "--entities must be between 10 and 100000000"
        );
        assert!(error("--ticks 0").starts_with("--ticks must be between 1 and"));
        assert!(error("--ticks 5000000000").starts_with("--ticks must be between 1 and"));
    }

    #[test]
    fn the_header_names_the_real_worker_count_and_why() {
        let mut c = run("--workers 1000");
        assert_eq!(
            header(&c, 2),
            "freyr million: 1000000 entities, 300 ticks, 256 workers \
             (--workers 1000 clamped to MAX_WORKERS = 256), churn 300/tick"
        );
        c.workers = 0;
        assert!(header(&c, 16).contains(", 16 workers (auto: one per CPU, 16 detected),"));
        c.workers = 3;
        assert!(header(&c, 16).contains(", 3 workers, churn"));
    }

    #[test]
    fn busy_row_lists_up_to_8_threads_and_summarises_more() {
        let ms_ = |n: u64| Duration::from_millis(n);
        assert_eq!(busy_summary(&[ms_(1), ms_(2)]), "1.000 ms, 2.000 ms");
        let many: Vec<Duration> = (0..256).map(|i| ms_((i * 7) % 256)).collect();
        let row = busy_summary(&many);
        assert!(row.len() < 120, "{} characters: {row}", row.len());
        assert!(row.starts_with("256 threads: min 0.000 ms (#0), "), "{row}");
        assert!(row.contains("max 255.000 ms (#"), "{row}");
        assert!(row.contains("median 127.000 ms"), "{row}");
    }
}
