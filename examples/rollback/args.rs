//! The command line, checked up front: every flag against its range.

use crate::session::Config;

/// The flags, their ranges and defaults, as `--help` prints them.
pub(crate) const USAGE: &str = "\
usage: rollback [--ticks N] [--players N] [--delay N] [--workers N] [--entities N]
  --ticks N     ticks to run, 1..=100000 (default 600)
  --players N   simulated players, 2..=8 (default 2)
  --delay N     ticks a remote player's input arrives late, 0..=15 (default 4)
  --workers N   pool workers, 1..=256 (default 4)
  --entities N  scenery entities besides the players, 0..=1000000 (default 10000)";

/// The flags [`parse`] knows.
const FLAGS: [&str; 5] = ["--ticks", "--players", "--delay", "--workers", "--entities"];

/// Parses `args` (without the program name). `Ok(None)`: `--help`.
///
/// # Errors
///
/// A message naming the flag and what was wrong.
pub(crate) fn parse(args: &[String]) -> Result<Option<Config>, String> {
    let mut config = Config {
        ticks: 600,
        players: 2,
        delay: 4,
        workers: 4,
        entities: 10_000,
    };
    let mut seen: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Ok(None);
        }
        if !flag.starts_with('-') {
            return Err(format!(
                "unexpected argument {flag:?}: every value follows its flag (see --help)"
            ));
        }
        if !FLAGS.contains(&flag.as_str()) {
            return Err(format!("unknown flag {flag} (see --help)"));
        }
        if seen.contains(&flag.as_str()) {
            return Err(format!("{flag} given twice"));
        }
        seen.push(flag);
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--ticks" => config.ticks = number(flag, value, 1, 100_000)?,
            "--players" => config.players = number(flag, value, 2, 8)? as u8,
            "--delay" => config.delay = number(flag, value, 0, 15)?,
            "--workers" => config.workers = number(flag, value, 1, 256)? as usize,
            "--entities" => config.entities = number(flag, value, 0, 1_000_000)? as u32,
            _ => unreachable!("every name in FLAGS has an arm"),
        }
    }
    Ok(Some(config))
}

fn number(flag: &str, value: &str, min: u64, max: u64) -> Result<u64, String> {
    let n: u64 = value
        .parse()
        .map_err(|_| format!("{flag} takes a whole number, got {value:?}"))?;
    if (min..=max).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{flag} must be in {min}..={max}, got {n}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn flags_are_read_and_checked_against_their_ranges() {
        let config = parse(&args(
            "--ticks 10 --players 3 --delay 0 --workers 2 --entities 5",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(
            config,
            Config {
                ticks: 10,
                players: 3,
                delay: 0,
                workers: 2,
                entities: 5
            }
        );
        assert_eq!(parse(&args("--help")), Ok(None));
        for (line, why) in [
            ("--ticks 0", "1..=100000"),
            ("--players 1", "2..=8"),
            ("--delay 16", "0..=15"),
            ("--workers x", "whole number"),
            ("--entities", "needs a value"),
            ("--speed 3", "unknown flag"),
        ] {
            let error = parse(&args(line)).unwrap_err();
            assert!(error.contains(why), "{line}: {error}");
        }
    }
}
