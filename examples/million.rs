//! The main job: a million entities ticked through `Registry::update`.
//!
//! ```text
//! cargo run --release --example million -- [--ticks N] [--workers N] [--entities N] [--churn N]
//! ```
//!
//! - `--ticks N`: ticks to run (default 300);
//! - `--workers N`: pool size, the calling thread included (default 0 = one per CPU);
//! - `--entities N`: starting population (default 1,000,000; 10% with an `Ai`);
//! - `--churn N`: expected spawns and despawns per tick (default 300).
//!
//! Each tick an `each_async` pass integrates every entity ("Integrate") while the AI pass
//! ("AI Think", `each_with`) runs on the calling thread, overlapping it; expired entities are
//! despawned and new ones spawned through commands. At the end it prints a table: tick times,
//! per-phase and per-label wall time, tasks run and stolen, implicit sync points, and the world
//! hash — the same for every `--workers` at the same `--ticks`.

#[path = "million/sim.rs"]
mod sim;

use std::process::ExitCode;
use std::time::Duration;

use freyr_query::Phase;

const USAGE: &str = "usage: million [--ticks N] [--workers N] [--entities N] [--churn N]
  --ticks N     ticks to run (default 300)
  --workers N   total parallelism incl. the calling thread (default 0 = one per CPU)
  --entities N  starting population, 10% with an Ai (default 1000000)
  --churn N     expected spawns and despawns per tick (default 300)";

/// Parses `--name value` / `--name=value` pairs into a [`sim::Config`].
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<sim::Config, String> {
    let mut config = sim::Config {
        entities: 1_000_000,
        ai_every: 10,
        churn: 300,
        workers: 0,
        ticks: 300,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Err(String::new());
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let value = match inline {
            Some(v) => v,
            None => args.next().ok_or_else(|| format!("{name} needs a value"))?,
        };
        let number = value
            .replace('_', "")
            .parse::<usize>()
            .map_err(|e| format!("{name} {value}: {e}"))?;
        match name.as_str() {
            "--ticks" => {
                config.ticks = u32::try_from(number).map_err(|_| "--ticks is too large")?;
            }
            "--workers" => config.workers = number,
            "--entities" if number >= config.ai_every => config.entities = number,
            "--entities" => return Err(format!("--entities must be at least {}", config.ai_every)),
            "--churn" => config.churn = number,
            _ => return Err(format!("unknown argument {name}")),
        }
    }
    Ok(config)
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
            "busy per thread".into(),
            // Background workers first, then the calling thread(s).
            p.busy()
                .iter()
                .map(|&d| ms(d))
                .collect::<Vec<_>>()
                .join(", "),
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
        Ok(c) => c,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("million: {e}");
            }
            eprintln!("{USAGE}");
            return if e.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            };
        }
    };
    println!(
        "freyr million: {} entities, {} ticks, workers {} (0 = auto), churn {}/tick",
        config.entities, config.ticks, config.workers, config.churn
    );
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

    #[test]
    fn defaults_are_a_million_entities_for_300_ticks_on_all_cpus() {
        let c = parse_args(args("")).unwrap();
        assert_eq!(
            (c.entities, c.ticks, c.workers, c.churn),
            (1_000_000, 300, 0, 300)
        );
    }

    #[test]
    fn flags_parse_in_both_spellings_and_reject_garbage() {
        let c = parse_args(args("--ticks 50 --workers=3 --entities 1_000")).unwrap();
        assert_eq!((c.entities, c.ticks, c.workers), (1000, 50, 3));
        assert!(parse_args(args("--ticks")).is_err());
        assert!(parse_args(args("--ticks x")).is_err());
        assert!(parse_args(args("--frobnicate 1")).is_err());
        assert!(parse_args(args("--entities 3")).is_err());
    }
}
