//! Command-line flags of `server_tick`: every flag is checked against its documented range
//! before anything runs (the ranges are in [`USAGE`] and in the chapter's flag table).

use core::fmt;
use core::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use freyr::profile::TickProfileConfig;
use freyr::sched::MAX_WORKERS;
use freyr::time::GovernorParams;

use crate::grid::{cells_per_side, min_cell_size};
use crate::run::{LeverSource, Pace};
use crate::server::Settings;

/// The most ticks a run may ask for: about 2.1 years at 60 Hz (peer ids, one per join, stay
/// within `u32` even with a peer leaving and joining every tick).
pub(crate) const MAX_TICKS: u64 = 4_000_000_000;
/// The most aircraft.
pub(crate) const MAX_ENTITIES: usize = 10_000_000;
/// The most peers.
pub(crate) const MAX_PEERS: usize = 65_536;
/// The shortest and the longest tick budget, in milliseconds.
pub(crate) const BUDGET_MS: (f64, f64) = (0.001, 60_000.0);
/// The largest cell size and interest radius, in metres.
pub(crate) const MAX_METRES: f32 = 1_000_000.0;
/// The most ticks one `--trace-ticks` range may hold (a trace is kept in memory until written).
pub(crate) const MAX_TRACE_TICKS: u64 = 600;
/// The largest tick profiler window, in ticks: one hour at 60 Hz.
pub(crate) const MAX_PROFILE_WINDOW: usize = 216_000;

/// The usage text.
pub(crate) const USAGE: &str = "usage: server_tick [flags]
  --ticks N                 ticks to run, 1..=4000000000 (default 600)
  --workers N               total parallelism incl. the calling thread, 0..=256
                            (default 0 = one per CPU)
  --entities N              aircraft, 1..=10000000 (default 20000); the map grows with them at
                            12.5 aircraft per km^2 (40 km a side at 20000)
  --peers N                 peers, 0..=65536 (default 256)
  --cell-size M             spatial grid cell size in metres, at most 1000000 and at least the
                            map side / 4096 (default 2000)
  --interest-radius M       a peer's base interest radius in metres, (0, 1000000] (default 4000)
  --budget-ms MS            the tick budget the governor holds to, 0.001..=60000 (default 16.667)
  --raise-budget-at TICK    raise the budget to 16.667 ms at this tick, 0..ticks (watch the
                            governor recover; needs the governor on)
  --governor on|off         let the overrun governor shed work (default on)
  --force-load-factor X     freeze the levers at load factor X in [0.25, 1] for the whole run
                            (0.25 is the governor's floor; not with --governor off)
  --pace realtime|free      60 Hz wall clock with catch-up clamp, or back to back (default realtime)
  --kill-every N            shoot down and replace some aircraft every N ticks, any N
                            (default 60, 0 = never)
  --churn-every N           one peer leaves and one joins every N ticks, any N
                            (default 90, 0 = never)
  --profile-window N        ticks the tick profiler keeps for its statistics and --json,
                            1..=216000 (default 3600 = one minute at 60 Hz)
  --json FILE               write the tick profiler's JSON report
  --trace FILE              write a Chrome trace (Perfetto, chrome://tracing) of --trace-ticks
  --trace-ticks A..B        ticks to trace, A < B <= ticks, at most 600 of them
                            (default: the two in the middle of the run)
  --timeline-svg FILE       draw the first traced tick as a per-thread timeline
Output files are created before the first tick; each must name a different file.
Each flag may be given once. Bad input exits with status 2 before anything runs.";

/// Everything the flags set.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Args {
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
    /// `--profile-window`.
    pub profile_window: usize,
    /// `--json`.
    pub json: Option<PathBuf>,
    /// `--trace`.
    pub trace: Option<PathBuf>,
    /// `--trace-ticks`.
    pub trace_ticks: Option<Range<u64>>,
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
            profile_window: TickProfileConfig::DEFAULT_WINDOW,
            json: None,
            trace: None,
            trace_ticks: None,
            timeline_svg: None,
        }
    }
}

/// Why the flags were not taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ArgsError {
    /// `-h` or `--help`: print [`USAGE`] and exit 0.
    Help,
    /// A flag or value that is not accepted; the message names it and its range.
    Invalid(String),
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgsError::Help => f.write_str("help requested"),
            ArgsError::Invalid(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for ArgsError {}

fn invalid<T>(msg: String) -> Result<T, ArgsError> {
    Err(ArgsError::Invalid(msg))
}

/// A whole number in `lo..=hi` (`_` separators allowed).
fn whole(name: &str, value: &str, lo: u64, hi: u64) -> Result<u64, ArgsError> {
    match value.replace('_', "").parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => invalid(format!(
            "{name} takes a whole number in {lo}..={hi} (got {value})"
        )),
    }
}

/// A finite number in `[lo, hi]` (`lo` excluded when `open_lo`).
fn real(name: &str, value: &str, lo: f64, hi: f64, open_lo: bool) -> Result<f64, ArgsError> {
    let x: f64 = value.replace('_', "").parse().unwrap_or(f64::NAN);
    let above = if open_lo { x > lo } else { x >= lo };
    if above && x <= hi {
        Ok(x)
    } else {
        let left = if open_lo { '(' } else { '[' };
        invalid(format!(
            "{name} takes a number in {left}{lo}, {hi}] (got {value})"
        ))
    }
}

fn usize_of(n: u64) -> usize {
    usize::try_from(n).expect("every range checked here fits usize")
}

/// Parses `--name value` / `--name=value` pairs and checks every value against its range and
/// the others (see [`USAGE`]).
///
/// # Errors
///
/// [`ArgsError::Help`] for `-h` / `--help`; otherwise [`ArgsError::Invalid`] naming the flag,
/// the value and what it takes.
pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, ArgsError> {
    let mut out = Args::default();
    let mut force: Option<f64> = None;
    let mut governor_on = true;
    let mut cell_size: Option<(f64, String)> = None;
    let floor = GovernorParams::default().floor();
    let mut seen: Vec<String> = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Err(ArgsError::Help);
        }
        if !arg.starts_with("--") || arg == "--" {
            return invalid(format!(
                "unexpected argument '{arg}'; every setting is a --flag, see --help"
            ));
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        if !KNOWN.contains(&name.as_str()) {
            return invalid(format!("unknown flag {name}; see --help"));
        }
        if seen.contains(&name) {
            return invalid(format!("{name} given twice; pass each flag once"));
        }
        seen.push(name.clone());
        let value = match inline {
            Some(v) => v,
            None => match args.next() {
                Some(v) if !v.starts_with("--") => v,
                _ => return invalid(format!("{name} needs a value; see --help")),
            },
        };
        let v = value.as_str();
        let n = name.as_str();
        match n {
            "--ticks" => out.ticks = whole(n, v, 1, MAX_TICKS)?,
            "--workers" => out.workers = usize_of(whole(n, v, 0, MAX_WORKERS as u64)?),
            "--entities" => out.settings.entities = usize_of(whole(n, v, 1, MAX_ENTITIES as u64)?),
            "--peers" => out.settings.peers = usize_of(whole(n, v, 0, MAX_PEERS as u64)?),
            "--cell-size" => {
                let m = real(n, v, 0.0, f64::from(MAX_METRES), true)?;
                cell_size = Some((m, value.clone()));
            }
            "--interest-radius" => {
                out.settings.interest_radius = real(n, v, 0.0, f64::from(MAX_METRES), true)? as f32;
                if out.settings.interest_radius <= 0.0 {
                    return invalid(format!("{n} takes a number in (0, {MAX_METRES}] (got {v})"));
                }
            }
            "--kill-every" => out.settings.kill_every = whole(n, v, 0, u64::MAX)?,
            "--churn-every" => out.settings.churn_every = whole(n, v, 0, u64::MAX)?,
            "--budget-ms" => {
                let ms = real(n, v, BUDGET_MS.0, BUDGET_MS.1, false)?;
                out.budget = Duration::from_secs_f64(ms / 1e3);
            }
            "--raise-budget-at" => out.raise_budget_at = Some(whole(n, v, 0, MAX_TICKS - 1)?),
            "--governor" => {
                governor_on = match v {
                    "on" => true,
                    "off" => false,
                    _ => return invalid(format!("--governor takes on or off (got {v})")),
                }
            }
            "--force-load-factor" => {
                let lf = real(n, v, 0.0, 1.0, true)?;
                if lf < floor {
                    return invalid(format!(
                        "--force-load-factor {v} is below the governor's floor {floor} (15 Hz \
                         snapshots of 60); pass a load factor in [{floor}, 1]"
                    ));
                }
                force = Some(lf);
            }
            "--pace" => {
                out.pace = match v {
                    "realtime" => Pace::RealTime,
                    "free" => Pace::Free,
                    _ => return invalid(format!("--pace takes realtime or free (got {v})")),
                }
            }
            "--profile-window" => {
                out.profile_window = usize_of(whole(n, v, 1, MAX_PROFILE_WINDOW as u64)?);
            }
            "--json" => out.json = Some(path(n, v)?),
            "--trace" => out.trace = Some(path(n, v)?),
            "--timeline-svg" => out.timeline_svg = Some(path(n, v)?),
            "--trace-ticks" => {
                let (a, b) = v.split_once("..").ok_or_else(|| {
                    ArgsError::Invalid(format!("--trace-ticks takes A..B (got {v})"))
                })?;
                let a = whole(n, a, 0, MAX_TICKS - 1)?;
                let b = whole(n, b, 1, MAX_TICKS)?;
                if a >= b {
                    return invalid(format!("--trace-ticks {v} is empty; try {a}..{}", a + 1));
                }
                out.trace_ticks = Some(a..b);
            }
            _ => unreachable!("every name in KNOWN has an arm"),
        }
    }
    check(&mut out, cell_size, force, governor_on)?;
    Ok(out)
}

/// The flags [`parse`] knows.
const KNOWN: [&str; 18] = [
    "--ticks",
    "--workers",
    "--entities",
    "--peers",
    "--cell-size",
    "--interest-radius",
    "--kill-every",
    "--churn-every",
    "--budget-ms",
    "--raise-budget-at",
    "--governor",
    "--force-load-factor",
    "--pace",
    "--profile-window",
    "--json",
    "--trace",
    "--timeline-svg",
    "--trace-ticks",
];

fn path(name: &str, value: &str) -> Result<PathBuf, ArgsError> {
    if value.is_empty() {
        return invalid(format!("{name} needs a file name (got an empty one)"));
    }
    Ok(PathBuf::from(value))
}

/// The checks that involve more than one flag.
fn check(
    out: &mut Args,
    cell_size: Option<(f64, String)>,
    force: Option<f64>,
    governor_on: bool,
) -> Result<(), ArgsError> {
    let side = out.settings.map_side();
    if let Some((m, text)) = cell_size {
        out.settings.cell_size = m as f32;
        if out.settings.cell_size <= 0.0 || cells_per_side(out.settings.cell_size, side).is_none() {
            return invalid(format!(
                "--cell-size {text} is too small for the {side} m map of {} aircraft (at most \
                 4096 cells a side); pass at least {}",
                out.settings.entities,
                min_cell_size(side)
            ));
        }
    } else if cells_per_side(out.settings.cell_size, side).is_none() {
        return invalid(format!(
            "the default 2000 m cell is too small for the {side} m map of {} aircraft; pass \
             --cell-size of at least {}",
            out.settings.entities,
            min_cell_size(side)
        ));
    }
    if let Some(at) = out.raise_budget_at {
        if at >= out.ticks {
            return invalid(format!(
                "--raise-budget-at {at} is outside the run of {} ticks; pass a tick in 0..{}",
                out.ticks, out.ticks
            ));
        }
        if force.is_some() || !governor_on {
            return invalid(
                "--raise-budget-at needs the governor on; drop --force-load-factor or \
                 --governor off"
                    .into(),
            );
        }
    }
    out.levers = match (force, governor_on) {
        (Some(_), false) => {
            return invalid(
                "--force-load-factor and --governor off both fix the levers; pass one of them"
                    .into(),
            );
        }
        (Some(lf), true) => LeverSource::Forced(vec![(0, lf)]),
        (None, enabled) => LeverSource::Governor { enabled },
    };
    if let Some(r) = &out.trace_ticks {
        if r.end > out.ticks {
            return invalid(format!(
                "--trace-ticks {}..{} is outside the run of {} ticks (ticks 0..{}); pass a range \
                 within it",
                r.start, r.end, out.ticks, out.ticks
            ));
        }
        if r.end - r.start > MAX_TRACE_TICKS {
            return invalid(format!(
                "--trace-ticks {}..{} holds {} ticks, more than {MAX_TRACE_TICKS}; trace a \
                 shorter range (the trace is kept in memory until written)",
                r.start,
                r.end,
                r.end - r.start
            ));
        }
        if out.trace.is_none() && out.timeline_svg.is_none() {
            return invalid(
                "--trace-ticks without --trace or --timeline-svg traces ticks nothing writes; \
                 add one of them"
                    .into(),
            );
        }
    }
    let outputs = [
        ("--json", &out.json),
        ("--trace", &out.trace),
        ("--timeline-svg", &out.timeline_svg),
    ];
    for (i, (a, pa)) in outputs.iter().enumerate() {
        for (b, pb) in &outputs[i + 1..] {
            if let (Some(pa), Some(pb)) = (pa, pb)
                && pa == pb
            {
                return invalid(format!(
                    "{a} and {b} both name {}; give each output its own file",
                    pa.display()
                ));
            }
        }
    }
    Ok(())
}

impl Args {
    /// The ticks to trace: `--trace-ticks`, else the two in the middle of the run (or the only
    /// tick of a one-tick run) when a trace or timeline is asked for.
    #[must_use]
    pub(crate) fn traced_ticks(&self) -> Range<u64> {
        match (
            &self.trace_ticks,
            self.trace.is_some() || self.timeline_svg.is_some(),
        ) {
            (Some(r), _) => r.clone(),
            (None, true) => self.ticks / 2..(self.ticks / 2 + 2).min(self.ticks),
            (None, false) => 0..0,
        }
    }

    /// The tick profiler's configuration: the `--profile-window` ring (never sized to the run)
    /// and the traced ticks.
    #[must_use]
    pub(crate) fn profile_config(&self) -> TickProfileConfig {
        TickProfileConfig {
            window: self.profile_window,
            trace_ticks: self.traced_ticks(),
            ..TickProfileConfig::default()
        }
    }

    /// The governor's parameters: the defaults with `--budget-ms`.
    #[must_use]
    pub(crate) fn governor_params(&self) -> GovernorParams {
        GovernorParams {
            budget: self.budget,
            ..GovernorParams::default()
        }
    }

    /// The pace as the flag spells it.
    #[must_use]
    pub(crate) fn pace_name(&self) -> &'static str {
        match self.pace {
            Pace::RealTime => "realtime",
            Pace::Free => "free",
        }
    }
}

#[cfg(test)]
#[path = "args/tests.rs"]
mod tests;
