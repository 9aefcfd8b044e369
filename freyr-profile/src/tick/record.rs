//! What one tick records: [`TickRecord`] with its per-label shares, the counter list it shares
//! with the JSON report, and [`WindowStats`], the statistics of one quantity over the window.
//! The bottom of the tick profiler: `report.rs` and `mod.rs` build on it.

use std::time::Duration;

#[cfg(feature = "json")]
use serde::{Deserialize, Serialize};

/// The per-tick counters, listed once for the three structs that carry them: [`TickRecord`]
/// and the JSON report's `TickJson` (one tick) and `Summary` (summed over the window). Calls
/// `$m!` with the arguments given, then the bracketed list of counters, each as
/// `docs record_name: RecordType => report_name: ReportType = conversion`, where `conversion`
/// (resolved where `$m!` expands) turns a record's value into the report's.
macro_rules! with_tick_counters {
    ($m:ident! { $($args:tt)* }) => {
        $m! { $($args)* [
            /// Chunk tasks launched.
            tasks: u64 => tasks: u64 = count,
            /// Queue entries stolen between workers.
            steals: u64 => steals: u64 = count,
            /// Times a worker parked.
            parks: u64 => parks: u64 = count,
            /// Operations that waited for conflicting in-flight work.
            implicit_syncs: u64 => implicit_syncs: u64 = count,
            /// Explicit and phase-end sync points.
            sync_points: u64 => sync_points: u64 = count,
            /// Deadline jobs that were late at their due tick: the registry's own, plus
            /// [`TickExtras::deadline_stalls`](crate::TickExtras::deadline_stalls).
            deadline_stalls: u64 => deadline_stalls: u64 = count,
            /// Time spent waiting for them (milliseconds in the report).
            deadline_stall: Duration => deadline_stall_ms: f64 = ms,
            /// Ticks dropped by the catch-up clamp: the registry's own fixed step's, plus
            /// [`TickExtras::dropped_ticks`](crate::TickExtras::dropped_ticks).
            dropped_ticks: u64 => dropped_ticks: u64 = count,
        ] }
    };
}
pub(crate) use with_tick_counters;

/// Defines a struct whose fields are `$pre`, then the tick counters (their record names and
/// types with `record`, their report names and types with `report`), then `$post`.
macro_rules! counter_struct {
    (
        $(#[$attr:meta])* pub struct $name:ident { $($pre:tt)* } { $($post:tt)* } $side:ident
        [ $( $(#[$doc:meta])* $rec:ident: $rt:ty => $json:ident: $jt:ty = $conv:ident, )* ]
    ) => {
        counter_struct!(@emit $side $(#[$attr])* $name { $($pre)* } { $($post)* }
            [ $( $(#[$doc])* ($rec: $rt) ($json: $jt) )* ]);
    };
    (@emit record $(#[$attr:meta])* $name:ident { $($pre:tt)* } { $($post:tt)* }
        [ $( $(#[$doc:meta])* ($rec:ident: $rt:ty) ($json:ident: $jt:ty) )* ]) => {
        $(#[$attr])* pub struct $name { $($pre)* $( $(#[$doc])* pub $rec: $rt, )* $($post)* }
    };
    (@emit report $(#[$attr:meta])* $name:ident { $($pre:tt)* } { $($post:tt)* }
        [ $( $(#[$doc:meta])* ($rec:ident: $rt:ty) ($json:ident: $jt:ty) )* ]) => {
        $(#[$attr])* pub struct $name { $($pre)* $( $(#[$doc])* pub $json: $jt, )* $($post)* }
    };
}
pub(crate) use counter_struct;

/// One label's share of one tick (see [`TickRecord::label`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelTick {
    /// The label.
    pub label: &'static str,
    /// Query calls with this label that finished (were retired) in the tick.
    pub calls: u64,
    /// Their chunk tasks.
    pub tasks: u64,
    /// Their summed wall time.
    pub wall: Duration,
}

with_tick_counters!(counter_struct! {
    /// Everything recorded about one tick (see the example of
    /// [`TickProfile`](crate::TickProfile)).
    #[derive(Clone, Debug, PartialEq)]
    pub struct TickRecord {
        /// The tick's number, as given to `Registry::profile_tick_begin`. The records keep
        /// the order they were recorded in, so after a `Registry::restore` or
        /// `Registry::load_into` (which do not rewind the profiler) the numbers go back, and a
        /// traced tick number that runs again is traced again.
        pub tick: u64,
        /// Wall time from `profile_tick_begin` to `profile_tick_end`.
        pub wall: Duration,
        /// Wall time per phase, in the order the phases began (see
        /// `Registry::profile_tick_phase`).
        pub phases: Vec<(&'static str, Duration)>,
        /// Per label, in order of first use.
        pub labels: Vec<LabelTick>,
    } {
        /// The governor's load factor
        /// ([`TickExtras::load_factor`](crate::TickExtras::load_factor)).
        pub load_factor: f64,
    } record
});

impl TickRecord {
    /// The wall time of phase `name` (zero if it did not run).
    pub fn phase(&self, name: &str) -> Duration {
        self.phases
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, d)| *d)
            .sum()
    }

    /// This tick's share of `label`, if it ran (see the example of [`TickProfile`](crate::TickProfile)).
    pub fn label(&self, label: &str) -> Option<&LabelTick> {
        self.labels.iter().find(|l| l.label == label)
    }
}

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

/// Phase names in `records`, in order of first appearance.
pub(crate) fn phase_names<'a>(records: impl Iterator<Item = &'a TickRecord>) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for r in records {
        for (n, _) in &r.phases {
            if !names.contains(n) {
                names.push(n);
            }
        }
    }
    names
}

/// Label names in `records`, in order of first appearance.
pub(crate) fn label_names<'a>(records: impl Iterator<Item = &'a TickRecord>) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for r in records {
        for l in &r.labels {
            if !names.contains(&l.label) {
                names.push(l.label);
            }
        }
    }
    names
}
