//! The tick profiler's JSON report: stable, versioned, documented here field by field.
//!
//! ```text
//! {
//!   "schema": "freyr.tick_profile", "version": 1,
//!   "window": 3600,                ticks kept (TickProfileConfig::window)
//!   "ticks_recorded": 1800,        ticks recorded since the profiler was enabled
//!   "summary": {
//!     "wall_ms": {ewma, mean, p50, p99, max},          tick wall time over the window
//!     "phases": [{"name", "ms": {ewma, mean, p50, p99, max}}],   ewma is 0 for phases
//!     "labels": [{"label", "calls", "tasks", "ms": {…}}],        calls and tasks summed
//!     "tasks", "steals", "parks", "implicit_syncs", "sync_points",
//!     "deadline_stalls", "dropped_ticks",                       summed over the window
//!     "deadline_stall_ms",                                       summed over the window
//!     "load_factor": {"min", "last"}
//!   },
//!   "ticks": [{"tick", "wall_ms", "phases": [{"name", "ms"}], "labels": [{"label", "calls",
//!              "tasks", "ms"}], "tasks", "steals", "parks", "implicit_syncs", "sync_points",
//!              "deadline_stalls", "deadline_stall_ms", "dropped_ticks", "load_factor"}]
//! }
//! ```
//!
//! `ticks` holds at most `window` records (the last ticks recorded), and every statistic and sum
//! in `summary` is over those; only `ticks_recorded` counts every tick since the profiler was
//! enabled. Times are milliseconds as numbers; percentiles are nearest-rank over the window. Fields are
//! only ever added (and `version` raised); none is renamed or removed.

#[cfg(feature = "json")]
use std::io::{self, Write};
use std::time::Duration;

#[cfg(feature = "json")]
use serde::{Deserialize, Serialize};

use super::{TickProfile, TickRecord};

/// Statistics of one quantity over the window, in milliseconds.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let stats = freyr::profile::WindowStats::of((1..=100).map(Duration::from_millis));
/// assert_eq!(stats.p50_ms, 50.0);
/// assert_eq!(stats.p99_ms, 99.0);
/// assert_eq!(stats.max_ms, 100.0);
/// assert_eq!(stats.mean_ms, 50.5);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
pub struct WindowStats {
    /// The EWMA (tick wall time only; 0 elsewhere).
    #[cfg_attr(feature = "json", serde(rename = "ewma"))]
    pub ewma_ms: f64,
    /// The mean.
    #[cfg_attr(feature = "json", serde(rename = "mean"))]
    pub mean_ms: f64,
    /// The median (nearest rank).
    #[cfg_attr(feature = "json", serde(rename = "p50"))]
    pub p50_ms: f64,
    /// The 99th percentile (nearest rank).
    #[cfg_attr(feature = "json", serde(rename = "p99"))]
    pub p99_ms: f64,
    /// The largest value.
    #[cfg_attr(feature = "json", serde(rename = "max"))]
    pub max_ms: f64,
}

impl WindowStats {
    /// The statistics of `values` (all zero when there are none).
    pub fn of(values: impl Iterator<Item = Duration>) -> Self {
        let mut ms: Vec<f64> = values.map(|d| d.as_secs_f64() * 1e3).collect();
        if ms.is_empty() {
            return WindowStats::default();
        }
        ms.sort_unstable_by(f64::total_cmp);
        let rank = |p: f64| ms[((p * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1];
        WindowStats {
            ewma_ms: 0.0,
            mean_ms: ms.iter().sum::<f64>() / ms.len() as f64,
            p50_ms: rank(0.50),
            p99_ms: rank(0.99),
            max_ms: ms[ms.len() - 1],
        }
    }
}

/// A named phase's statistics.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
pub struct PhaseSummary {
    /// The phase.
    pub name: String,
    /// Its wall time over the window.
    pub ms: WindowStats,
}

/// A label's statistics.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
pub struct LabelSummary {
    /// The label.
    pub label: String,
    /// Calls over the window.
    pub calls: u64,
    /// Tasks over the window.
    pub tasks: u64,
    /// Its per-tick wall time over the window.
    pub ms: WindowStats,
}

/// The lowest and the latest load factor.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
pub struct LoadFactorSummary {
    /// The lowest over the window.
    pub min: f64,
    /// The newest tick's.
    pub last: f64,
}

/// The window's summary.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
pub struct Summary {
    /// Tick wall time.
    pub wall_ms: WindowStats,
    /// Per phase.
    pub phases: Vec<PhaseSummary>,
    /// Per label.
    pub labels: Vec<LabelSummary>,
    /// Chunk tasks launched.
    pub tasks: u64,
    /// Steals.
    pub steals: u64,
    /// Parks.
    pub parks: u64,
    /// Implicit sync points.
    pub implicit_syncs: u64,
    /// Explicit and phase-end sync points.
    pub sync_points: u64,
    /// Deadline jobs waited for.
    pub deadline_stalls: u64,
    /// Time waited for them.
    pub deadline_stall_ms: f64,
    /// Ticks dropped by the catch-up clamp.
    pub dropped_ticks: u64,
    /// The governor's load factor.
    pub load_factor: LoadFactorSummary,
}

/// A phase's share of one tick.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
pub struct PhaseMs {
    /// The phase.
    pub name: String,
    /// Its wall time.
    pub ms: f64,
}

/// A label's share of one tick.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
pub struct LabelMs {
    /// The label.
    pub label: String,
    /// Calls.
    pub calls: u64,
    /// Tasks.
    pub tasks: u64,
    /// Wall time.
    pub ms: f64,
}

/// One tick, as the report writes it (see [`TickRecord`](super::TickRecord)).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
#[allow(missing_docs)] // each field is its TickRecord namesake, in milliseconds where timed
pub struct TickJson {
    pub tick: u64,
    pub wall_ms: f64,
    pub phases: Vec<PhaseMs>,
    pub labels: Vec<LabelMs>,
    pub tasks: u64,
    pub steals: u64,
    pub parks: u64,
    pub implicit_syncs: u64,
    pub sync_points: u64,
    pub deadline_stalls: u64,
    pub deadline_stall_ms: f64,
    pub dropped_ticks: u64,
    pub load_factor: f64,
}

/// The whole report, from [`TickProfile::report`]; serialises to the schema above.
///
/// # Examples
///
/// ```
/// use freyr::Registry;
/// use freyr::profile::{TickExtras, TickProfileConfig, TickReport};
///
/// let mut registry = Registry::with_workers(1);
/// registry.enable_tick_profile(TickProfileConfig::default());
/// registry.begin_tick(0);
/// registry.tick_phase("idle");
/// registry.end_tick(TickExtras { load_factor: 0.5, ..Default::default() });
/// let report = registry.tick_profile().unwrap().report();
/// let json = serde_json::to_string(&report).unwrap();
/// let back: TickReport = serde_json::from_str(&json).unwrap();
/// assert_eq!(back, report);
/// assert_eq!(back.schema, "freyr.tick_profile");
/// assert_eq!(back.ticks[0].phases[0].name, "idle");
/// assert_eq!(back.summary.load_factor.min, 0.5);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
pub struct TickReport {
    /// Always `"freyr.tick_profile"`.
    pub schema: String,
    /// The schema version (1).
    pub version: u32,
    /// Ticks the window keeps.
    pub window: usize,
    /// Ticks recorded since the profiler was enabled.
    pub ticks_recorded: u64,
    /// Statistics over the window.
    pub summary: Summary,
    /// The window's ticks, oldest first.
    pub ticks: Vec<TickJson>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn tick_json(r: &TickRecord) -> TickJson {
    TickJson {
        tick: r.tick,
        wall_ms: ms(r.wall),
        phases: r
            .phases
            .iter()
            .map(|(n, d)| PhaseMs {
                name: (*n).to_owned(),
                ms: ms(*d),
            })
            .collect(),
        labels: r
            .labels
            .iter()
            .map(|l| LabelMs {
                label: l.label.to_owned(),
                calls: l.calls,
                tasks: l.tasks,
                ms: ms(l.wall),
            })
            .collect(),
        tasks: r.tasks,
        steals: r.steals,
        parks: r.parks,
        implicit_syncs: r.implicit_syncs,
        sync_points: r.sync_points,
        deadline_stalls: r.deadline_stalls,
        deadline_stall_ms: ms(r.deadline_stall),
        dropped_ticks: r.dropped_ticks,
        load_factor: r.load_factor,
    }
}

impl TickProfile {
    /// The report of the current window.
    pub fn report(&self) -> TickReport {
        let records = || self.records();
        let sum = |f: fn(&TickRecord) -> u64| records().map(f).sum::<u64>();
        let phases = self
            .phase_names()
            .into_iter()
            .map(|name| PhaseSummary {
                name: name.to_owned(),
                ms: self.phase_stats(name),
            })
            .collect();
        let labels = self
            .label_names()
            .into_iter()
            .map(|label| {
                let of = |r: &TickRecord| r.label(label).cloned();
                LabelSummary {
                    label: label.to_owned(),
                    calls: records().filter_map(of).map(|l| l.calls).sum(),
                    tasks: records().filter_map(of).map(|l| l.tasks).sum(),
                    ms: WindowStats::of(
                        records().map(|r| of(r).map_or(Duration::ZERO, |l| l.wall)),
                    ),
                }
            })
            .collect();
        let summary = Summary {
            wall_ms: self.wall_stats(),
            phases,
            labels,
            tasks: sum(|r| r.tasks),
            steals: sum(|r| r.steals),
            parks: sum(|r| r.parks),
            implicit_syncs: sum(|r| r.implicit_syncs),
            sync_points: sum(|r| r.sync_points),
            deadline_stalls: sum(|r| r.deadline_stalls),
            deadline_stall_ms: records().map(|r| ms(r.deadline_stall)).sum(),
            dropped_ticks: sum(|r| r.dropped_ticks),
            load_factor: LoadFactorSummary {
                min: records().map(|r| r.load_factor).fold(1.0, f64::min),
                last: self.last().map_or(1.0, |r| r.load_factor),
            },
        };
        TickReport {
            schema: "freyr.tick_profile".to_owned(),
            version: 1,
            window: self.config.window,
            ticks_recorded: self.ticks_recorded,
            summary,
            ticks: records().map(tick_json).collect(),
        }
    }

    /// Writes [`report`](Self::report) as pretty-printed JSON. Needs the `json` feature (of
    /// `freyr`, or of `freyr-query`), which is off by default.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.enable_tick_profile(Default::default());
    /// registry.begin_tick(9);
    /// registry.end_tick(Default::default());
    /// let mut out = Vec::new();
    /// registry.tick_profile().unwrap().write_json(&mut out).unwrap();
    /// let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
    /// assert_eq!(report["ticks"][0]["tick"], 9);
    /// ```
    ///
    /// # Errors
    ///
    /// Any error of `out`.
    #[cfg(feature = "json")]
    #[doc(alias = "serde")]
    pub fn write_json(&self, out: impl Write) -> io::Result<()> {
        serde_json::to_writer_pretty(out, &self.report()).map_err(io::Error::other)
    }

    /// Writes the traced ticks as a Chrome trace-event file (open it in Perfetto or
    /// `chrome://tracing`): a JSON object whose `traceEvents` hold one thread-name record per
    /// thread row and one complete (`"ph": "X"`) event per span, `ts` and `dur` in
    /// microseconds, `cat` the [`TraceKind`](super::TraceKind), and in `args` the tick and, for
    /// tasks, the launch and the task range `first_task..end_task`. Needs the `json` feature.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    /// use freyr::profile::TickProfileConfig;
    ///
    /// let mut registry = Registry::with_workers(2);
    /// registry.enable_tick_profile(TickProfileConfig { trace_ticks: 0..1, ..Default::default() });
    /// registry.begin_tick(0);
    /// registry.tick_phase("only");
    /// registry.end_tick(Default::default());
    /// let mut out = Vec::new();
    /// registry.tick_profile().unwrap().write_chrome_trace(&mut out).unwrap();
    /// let trace: serde_json::Value = serde_json::from_slice(&out).unwrap();
    /// let names: Vec<_> = trace["traceEvents"]
    ///     .as_array()
    ///     .unwrap()
    ///     .iter()
    ///     .filter(|e| e["ph"] == "X")
    ///     .map(|e| e["name"].as_str().unwrap())
    ///     .collect();
    /// assert_eq!(names, ["only", "tick"]);
    /// ```
    ///
    /// # Errors
    ///
    /// Any error of `out`.
    #[cfg(feature = "json")]
    pub fn write_chrome_trace(&self, out: impl Write) -> io::Result<()> {
        self.trace.write_chrome(out)
    }
}
