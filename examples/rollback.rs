//! Rollback netcode on Freyr, the GGRS way: inputs of remote players arrive late, the local
//! side predicts them (the last input, repeated), and when a real input differs from its
//! prediction for tick T it restores the snapshot of T from a [`SnapshotRing`] and
//! re-simulates up to the present.
//!
//! ```text
//! cargo run --release --example rollback -- [--ticks N] [--players N] [--delay N]
//!     [--workers N] [--entities N]
//! ```
//!
//! Every flag is checked against its range (`--help` lists them); a command line that is not
//! accepted exits with status 2. It prints the rollbacks, the ticks re-simulated, the time
//! spent taking snapshots and restoring, and the final world hash, which is the hash of the
//! same run with every input on time (`--delay 0`) for any `--workers`.
//!
//! The game (`rollback/game.rs`) spawns bullets and despawns them through `each_async`
//! commands, raises shields (an archetype and a component type first seen inside rolled-back
//! ticks) and scores the field with deadline jobs that are in flight across the ticks a
//! rollback goes back to.
//!
//! [`SnapshotRing`]: freyr::snapshot::SnapshotRing

#[path = "rollback/args.rs"]
mod args;
#[path = "rollback/game.rs"]
mod game;
#[path = "rollback/session.rs"]
mod session;

#[cfg(test)]
#[path = "rollback/tests.rs"]
mod tests;

use std::process::ExitCode;

/// The exit status of a command line that was not accepted (nothing ran).
const USAGE_ERROR: u8 = 2;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let config = match args::parse(&argv) {
        Ok(Some(config)) => config,
        Ok(None) => {
            println!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("rollback: {message}\n{}", args::USAGE);
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let report = session::run(config);
    println!(
        "{} ticks, {} players, delay {}, {} workers, {} entities",
        config.ticks, config.players, config.delay, config.workers, config.entities
    );
    println!("rollbacks:          {}", report.rollbacks);
    println!("ticks re-simulated: {}", report.resimulated);
    let per = |total: std::time::Duration, n: u64| total.as_secs_f64() * 1e6 / n.max(1) as f64;
    println!(
        "snapshot time:      {:.3} ms total, {:.1} us per snapshot",
        report.snapshot_time.as_secs_f64() * 1e3,
        per(report.snapshot_time, config.ticks + report.resimulated)
    );
    println!(
        "restore time:       {:.3} ms total, {:.1} us per restore",
        report.restore_time.as_secs_f64() * 1e3,
        per(report.restore_time, report.rollbacks)
    );
    println!("final world hash:   {:#018x}", report.final_hash);
    ExitCode::SUCCESS
}
