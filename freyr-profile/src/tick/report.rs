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

use std::collections::VecDeque;
use std::time::Duration;

#[cfg(feature = "json")]
use serde::{Deserialize, Serialize};

use super::record::{
    TickRecord, WindowStats, counter_struct, label_names, phase_names, with_tick_counters,
};

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

with_tick_counters!(counter_struct! {
    /// The window's summary: the counters are summed over the window.
    #[derive(Clone, Debug, PartialEq)]
    #[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
    pub struct Summary {
        /// Tick wall time.
        pub wall_ms: WindowStats,
        /// Per phase.
        pub phases: Vec<PhaseSummary>,
        /// Per label.
        pub labels: Vec<LabelSummary>,
    } {
        /// The governor's load factor.
        pub load_factor: LoadFactorSummary,
    } report
});

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

with_tick_counters!(counter_struct! {
    /// One tick, as the report writes it (see [`TickRecord`]): times in milliseconds.
    #[derive(Clone, Debug, PartialEq)]
    #[cfg_attr(feature = "json", derive(Serialize, Deserialize))]
    pub struct TickJson {
        /// The tick's number.
        pub tick: u64,
        /// Its wall time.
        pub wall_ms: f64,
        /// Wall time per phase, in the order the phases began.
        pub phases: Vec<PhaseMs>,
        /// Per label, in order of first use.
        pub labels: Vec<LabelMs>,
    } {
        /// The governor's load factor.
        pub load_factor: f64,
    } report
});

/// The whole report, from [`TickProfile::report`](crate::TickProfile::report); serialises to the schema above.
///
/// # Examples
///
/// ```
/// use freyr::Registry;
/// use freyr::profile::{TickExtras, TickProfileConfig, TickReport};
///
/// let mut registry = Registry::with_workers(1);
/// registry.enable_tick_profile(TickProfileConfig::default());
/// registry.profile_tick_begin(0);
/// registry.profile_tick_phase("idle");
/// registry.profile_tick_end(TickExtras { load_factor: 0.5, ..Default::default() });
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

/// A count as the report writes it: unchanged.
fn count(v: u64) -> u64 {
    v
}

/// The [`TickJson`] literal for record `$r`: the named fields, then every counter converted.
macro_rules! tick_json {
    ($r:ident; $($field:ident: $value:expr),* ;
     [ $( $(#[$doc:meta])* $rec:ident: $rt:ty => $json:ident: $jt:ty = $conv:ident, )* ]) => {
        TickJson { $($field: $value,)* $( $json: $conv($r.$rec), )* }
    };
}

/// The [`Summary`] literal: the named fields, then every counter converted and summed over
/// `$records()` in window order.
macro_rules! summary {
    ($records:ident; $($field:ident: $value:expr),* ;
     [ $( $(#[$doc:meta])* $rec:ident: $rt:ty => $json:ident: $jt:ty = $conv:ident, )* ]) => {
        Summary { $($field: $value,)* $( $json: $records().map(|r| $conv(r.$rec)).sum(), )* }
    };
}

fn tick_json(r: &TickRecord) -> TickJson {
    let phases = r
        .phases
        .iter()
        .map(|(n, d)| PhaseMs {
            name: (*n).to_owned(),
            ms: ms(*d),
        })
        .collect();
    let labels = r
        .labels
        .iter()
        .map(|l| LabelMs {
            label: l.label.to_owned(),
            calls: l.calls,
            tasks: l.tasks,
            ms: ms(l.wall),
        })
        .collect();
    with_tick_counters!(tick_json! {
        r; tick: r.tick, wall_ms: ms(r.wall), phases: phases, labels: labels,
        load_factor: r.load_factor;
    })
}

impl TickReport {
    /// The report of a window of `window` ticks holding `records` (oldest first), after
    /// `ticks_recorded` ticks, whose tick wall time has statistics `wall`.
    pub(crate) fn build(
        window: usize,
        ticks_recorded: u64,
        wall: WindowStats,
        records: &VecDeque<TickRecord>,
    ) -> TickReport {
        let records = || records.iter();
        let phases = phase_names(records())
            .into_iter()
            .map(|name| PhaseSummary {
                name: name.to_owned(),
                ms: WindowStats::of(records().map(|r| r.phase(name))),
            })
            .collect();
        let labels = label_names(records())
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
        let load_factor = LoadFactorSummary {
            min: records().map(|r| r.load_factor).fold(1.0, f64::min),
            last: records().last().map_or(1.0, |r| r.load_factor),
        };
        let summary = with_tick_counters!(summary! {
            records; wall_ms: wall, phases: phases, labels: labels, load_factor: load_factor;
        });
        TickReport {
            schema: "freyr.tick_profile".to_owned(),
            version: 1,
            window,
            ticks_recorded,
            summary,
            ticks: records().map(tick_json).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tick::record::LabelTick;

    /// The JSON of one record, byte for byte: every key in the documented order (the counters
    /// are generated from one list, so this pins that list's order and names).
    #[test]
    fn the_json_keys_come_in_the_documented_order() {
        let record = TickRecord {
            tick: 7,
            wall: Duration::from_millis(2),
            phases: vec![("p", Duration::from_millis(1))],
            labels: vec![LabelTick {
                label: "L",
                calls: 1,
                tasks: 2,
                wall: Duration::from_micros(500),
            }],
            tasks: 3,
            steals: 4,
            parks: 5,
            implicit_syncs: 6,
            sync_points: 7,
            deadline_stalls: 8,
            deadline_stall: Duration::from_micros(1500),
            dropped_ticks: 9,
            load_factor: 0.25,
        };
        let report = TickReport::build(10, 1, WindowStats::default(), &VecDeque::from([record]));
        let json = serde_json::to_string(&report).unwrap();
        let stats = |v: &str| format!(r#"{{"ewma":0.0,"mean":{v},"p50":{v},"p99":{v},"max":{v}}}"#);
        let expected = format!(
            concat!(
                r#"{{"schema":"freyr.tick_profile","version":1,"window":10,"ticks_recorded":1,"#,
                r#""summary":{{"wall_ms":{zero},"phases":[{{"name":"p","ms":{one}}}],"#,
                r#""labels":[{{"label":"L","calls":1,"tasks":2,"ms":{half}}}],"tasks":3,"#,
                r#""steals":4,"parks":5,"implicit_syncs":6,"sync_points":7,"deadline_stalls":8,"#,
                r#""deadline_stall_ms":1.5,"dropped_ticks":9,"#,
                r#""load_factor":{{"min":0.25,"last":0.25}}}},"#,
                r#""ticks":[{{"tick":7,"wall_ms":2.0,"phases":[{{"name":"p","ms":1.0}}],"#,
                r#""labels":[{{"label":"L","calls":1,"tasks":2,"ms":0.5}}],"tasks":3,"steals":4,"#,
                r#""parks":5,"implicit_syncs":6,"sync_points":7,"deadline_stalls":8,"#,
                r#""deadline_stall_ms":1.5,"dropped_ticks":9,"load_factor":0.25}}]}}"#
            ),
            zero = r#"{"ewma":0.0,"mean":0.0,"p50":0.0,"p99":0.0,"max":0.0}"#,
            one = stats("1.0"),
            half = stats("0.5"),
        );
        assert_eq!(json, expected);
    }
}
