//! Command-line flags of `server_tick`.

use std::path::PathBuf;
use std::time::Duration;

use crate::run::{LeverSource, Pace};
use crate::server::Settings;

/// The usage text.
pub const USAGE: &str = "usage: server_tick [flags]
  --ticks N                 ticks to run (default 600)
  --workers N               total parallelism incl. the calling thread (default 0 = one per CPU)
  --entities N              aircraft (default 20000)
  --peers N                 peers (default 256)
  --cell-size M             spatial grid cell size in metres (default 2000)
  --interest-radius M       a peer's base interest radius in metres (default 4000)
  --budget-ms MS            the tick budget the governor holds to (default 16.667)
  --raise-budget-at TICK    raise the budget to 16.667 ms at this tick (watch the governor recover)
  --governor on|off         let the overrun governor shed work (default on)
  --force-load-factor X     freeze the levers at load factor X in (0, 1] for the whole run
  --pace realtime|free      60 Hz wall clock with catch-up clamp, or back to back (default realtime)
  --kill-every N            shoot down and replace some aircraft every N ticks (default 60, 0 = never)
  --churn-every N           one peer leaves and one joins every N ticks (default 90, 0 = never)
  --json FILE               write the tick profiler's JSON report
  --trace FILE              write a Chrome trace (Perfetto, chrome://tracing) of --trace-ticks
  --trace-ticks A..B        ticks to trace (default: the two in the middle of the run)
  --timeline-svg FILE       draw the first traced tick as a per-thread timeline";

/// Everything the flags set.
#[derive(Clone, Debug, PartialEq)]
pub struct Args {
    /// The world.
    pub settings: Settings,
    /// Ticks to run.
    pub ticks: u64,
    /// Pool size.
    pub workers: usize,
    /// The governor's budget.
    pub budget: Duration,
    /// Raise the budget to 1/60 s at this tick.
    pub raise_budget_at: Option<u64>,
    /// Where the levers come from.
    pub levers: LeverSource,
    /// How the loop keeps time.
    pub pace: Pace,
    /// `--json`.
    pub json: Option<PathBuf>,
    /// `--trace`.
    pub trace: Option<PathBuf>,
    /// `--trace-ticks`.
    pub trace_ticks: Option<core::ops::Range<u64>>,
    /// `--timeline-svg`.
    pub timeline_svg: Option<PathBuf>,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            settings: Settings::default(),
            ticks: 600,
            workers: 0,
            budget: Duration::from_secs(1) / 60,
            raise_budget_at: None,
            levers: LeverSource::Governor { enabled: true },
            pace: Pace::RealTime,
            json: None,
            trace: None,
            trace_ticks: None,
            timeline_svg: None,
        }
    }
}

fn number<T: core::str::FromStr>(name: &str, value: &str) -> Result<T, String>
where
    T::Err: core::fmt::Display,
{
    value
        .replace('_', "")
        .parse::<T>()
        .map_err(|e| format!("{name} {value}: {e}"))
}

/// Parses `--name value` / `--name=value` pairs. `Err("")` asks for the usage text.
///
/// # Errors
///
/// A message naming the flag that was wrong.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut out = Args::default();
    let mut force: Option<f64> = None;
    let mut governor_on = true;
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
        let v = value.as_str();
        match name.as_str() {
            "--ticks" => out.ticks = number(&name, v)?,
            "--workers" => out.workers = number(&name, v)?,
            "--entities" => out.settings.entities = number(&name, v)?,
            "--peers" => out.settings.peers = number(&name, v)?,
            "--cell-size" => out.settings.cell_size = number(&name, v)?,
            "--interest-radius" => out.settings.interest_radius = number(&name, v)?,
            "--kill-every" => out.settings.kill_every = number(&name, v)?,
            "--churn-every" => out.settings.churn_every = number(&name, v)?,
            "--budget-ms" => {
                let ms: f64 = number(&name, v)?;
                if !(ms > 0.0 && ms.is_finite()) {
                    return Err(format!(
                        "--budget-ms must be a positive number of milliseconds (got {v})"
                    ));
                }
                out.budget = Duration::from_secs_f64(ms / 1e3);
            }
            "--raise-budget-at" => out.raise_budget_at = Some(number(&name, v)?),
            "--governor" => {
                governor_on = match v {
                    "on" => true,
                    "off" => false,
                    _ => return Err(format!("--governor takes on or off (got {v})")),
                }
            }
            "--force-load-factor" => {
                let lf: f64 = number(&name, v)?;
                if !(lf > 0.0 && lf <= 1.0) {
                    return Err(format!("--force-load-factor must lie in (0, 1] (got {v})"));
                }
                force = Some(lf);
            }
            "--pace" => {
                out.pace = match v {
                    "realtime" => Pace::RealTime,
                    "free" => Pace::Free,
                    _ => return Err(format!("--pace takes realtime or free (got {v})")),
                }
            }
            "--json" => out.json = Some(PathBuf::from(v)),
            "--trace" => out.trace = Some(PathBuf::from(v)),
            "--timeline-svg" => out.timeline_svg = Some(PathBuf::from(v)),
            "--trace-ticks" => {
                let (a, b) = v
                    .split_once("..")
                    .ok_or_else(|| format!("--trace-ticks takes A..B (got {v})"))?;
                let (a, b): (u64, u64) = (number(&name, a)?, number(&name, b)?);
                if a >= b {
                    return Err(format!("--trace-ticks {v} is empty; try {a}..{}", a + 1));
                }
                out.trace_ticks = Some(a..b);
            }
            _ => return Err(format!("unknown flag {name}")),
        }
    }
    if out.ticks == 0 {
        return Err("--ticks must be at least 1".into());
    }
    let positive = |v: f32| v.is_finite() && v > 0.0;
    if !positive(out.settings.cell_size) || !positive(out.settings.interest_radius) {
        return Err("--cell-size and --interest-radius must be positive".into());
    }
    out.levers = match force {
        Some(lf) => LeverSource::Forced(vec![(0, lf)]),
        None => LeverSource::Governor {
            enabled: governor_on,
        },
    };
    Ok(out)
}

impl Args {
    /// The ticks to trace: `--trace-ticks`, else the two in the middle of the run when a trace
    /// or timeline is asked for.
    #[must_use]
    pub fn traced_ticks(&self) -> core::ops::Range<u64> {
        match (
            &self.trace_ticks,
            self.trace.is_some() || self.timeline_svg.is_some(),
        ) {
            (Some(r), _) => r.clone(),
            (None, true) => self.ticks / 2..self.ticks / 2 + 2,
            (None, false) => 0..0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Args, String> {
        parse(s.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn defaults_match_the_usage_text() {
        let args = parse_str("").unwrap();
        assert_eq!(args, Args::default());
        assert_eq!(
            (args.ticks, args.settings.entities, args.settings.peers),
            (600, 20_000, 256)
        );
        assert_eq!(args.levers, LeverSource::Governor { enabled: true });
        assert_eq!(args.traced_ticks(), 0..0);
    }

    #[test]
    fn every_flag_is_read() {
        let args = parse_str(
            "--ticks 100 --workers=3 --entities 2_000 --peers 16 --budget-ms 2.5 --governor off \
             --pace free --json a.json --trace t.json --timeline-svg t.svg --cell-size 1000 \
             --interest-radius 3000 --kill-every 10 --churn-every 20 --raise-budget-at 50",
        )
        .unwrap();
        assert_eq!((args.ticks, args.workers), (100, 3));
        assert_eq!((args.settings.entities, args.settings.peers), (2000, 16));
        assert_eq!(args.budget, Duration::from_micros(2500));
        assert_eq!(args.levers, LeverSource::Governor { enabled: false });
        assert_eq!(args.pace, Pace::Free);
        assert_eq!(args.traced_ticks(), 50..52);
        assert_eq!(
            (args.settings.kill_every, args.settings.churn_every),
            (10, 20)
        );
        assert_eq!(args.raise_budget_at, Some(50));
        let forced = parse_str("--force-load-factor 0.5 --trace-ticks 3..9").unwrap();
        assert_eq!(forced.levers, LeverSource::Forced(vec![(0, 0.5)]));
        assert_eq!(forced.traced_ticks(), 3..9);
    }

    #[test]
    fn bad_input_names_the_flag() {
        for (bad, word) in [
            ("--ticks x", "--ticks"),
            ("--governor maybe", "--governor"),
            ("--force-load-factor 0", "--force-load-factor"),
            ("--budget-ms -1", "--budget-ms"),
            ("--trace-ticks 5..5", "--trace-ticks"),
            ("--frobnicate 1", "--frobnicate"),
            ("--ticks", "--ticks"),
        ] {
            let err = parse_str(bad).unwrap_err();
            assert!(err.contains(word), "{bad}: {err}");
        }
        assert_eq!(parse_str("--help").unwrap_err(), "");
    }
}
