//! The tick profiler: one [`TickRecord`] per tick (wall time per phase and per label, tasks,
//! steals, parks, implicit syncs, deadline stalls, dropped ticks, the governor's load factor),
//! an EWMA and percentiles over a window of recent ticks, a JSON report and a Chrome trace of a
//! range of ticks.
//!
//! Files, each importing only from those listed before it:
//!
//! - [`record`]: one tick's record, the counter list it shares with the report, and the
//!   window statistics;
//! - [`trace`]: the trace events and the Chrome trace-event export;
//! - [`report`]: the JSON report (its schema is documented there), built from records;
//! - this file: the profiler itself, its window and the calls the registry makes.
//!
//! Off by default. While off, the registry's tick calls return at once: no clock is read and
//! nothing is allocated. While on, a tick costs a few clock reads, one snapshot of the pool's
//! counters at each end, and its record; a traced tick also stamps every batch of tasks.

pub mod record;
pub mod report;
pub mod trace;

use std::collections::VecDeque;
#[cfg(feature = "json")]
use std::io::{self, Write};
use std::time::{Duration, Instant};

use crate::profiler::ProfileReport;

pub use self::record::{LabelTick, TickRecord, WindowStats};
pub use self::report::{
    LabelMs, LabelSummary, LoadFactorSummary, PhaseMs, PhaseSummary, Summary, TickJson, TickReport,
};
pub use self::trace::{CALLER_ROW, TICK_ROW, TraceEvent, TraceKind};

use self::trace::TraceLog;

/// How the tick profiler records, for
/// `Registry::enable_tick_profile`.
///
/// The profiler keeps the records of the last `window` ticks in a ring: however long the run,
/// it holds at most `window` records, and the percentiles, means, maxima and summed counters
/// it reports are over those ticks. [`TickProfile::ticks_recorded`] and the EWMA cover every
/// tick since the profiler was enabled. The ring grows as it fills, so a window larger than
/// the run costs only the ticks recorded.
///
/// # Examples
///
/// ```
/// let config = freyr::profile::TickProfileConfig::default();
/// assert_eq!(config.window, freyr::profile::TickProfileConfig::DEFAULT_WINDOW);
/// assert_eq!(config.window, 3600); // one minute at 60 Hz
/// assert!(config.trace_ticks.is_empty());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TickProfileConfig {
    /// How many recent ticks are kept (for percentiles and the JSON report); at least 1.
    /// The default is [`DEFAULT_WINDOW`](Self::DEFAULT_WINDOW).
    pub window: usize,
    /// The EWMA's weight of the newest tick, in `(0, 1]`.
    pub ewma_alpha: f64,
    /// The ticks whose tasks, phases and sync points are traced (by tick number).
    pub trace_ticks: core::ops::Range<u64>,
}

impl TickProfileConfig {
    /// The default [`window`](Self::window): 3600 ticks, one minute at 60 Hz.
    pub const DEFAULT_WINDOW: usize = 3600;
}

impl Default for TickProfileConfig {
    fn default() -> Self {
        TickProfileConfig {
            window: Self::DEFAULT_WINDOW,
            ewma_alpha: 0.1,
            trace_ticks: 0..0,
        }
    }
}

/// What the caller knows about a tick that the registry does not, passed to
/// `Registry::profile_tick_end`: the load factor, and the dropped ticks and
/// deadline stalls of a loop or scheduler the registry does not own. Those of the registry's own
/// fixed step (`Registry::run_frame`) and deadline jobs are added
/// to the record by the registry itself.
///
/// # Examples
///
/// ```
/// let extras = freyr::profile::TickExtras { load_factor: 0.7, ..Default::default() };
/// assert_eq!(extras.dropped_ticks, 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TickExtras {
    /// Ticks the fixed-step loop's catch-up clamp dropped since the previous tick.
    pub dropped_ticks: u64,
    /// The overrun governor's load factor for this tick (1 = no degradation).
    pub load_factor: f64,
    /// Deadline jobs this tick had to wait for.
    pub deadline_stalls: u64,
    /// Time this tick spent waiting for late deadline jobs.
    pub deadline_stall: Duration,
}

impl Default for TickExtras {
    fn default() -> Self {
        TickExtras {
            dropped_ticks: 0,
            load_factor: 1.0,
            deadline_stalls: 0,
            deadline_stall: Duration::ZERO,
        }
    }
}

/// The tick in progress.
struct OpenTick {
    tick: u64,
    start: Instant,
    phase: Option<(&'static str, Instant)>,
    phases: Vec<(&'static str, Duration)>,
    base: ProfileReport,
    traced: bool,
}

/// The tick profiler's state: the window of records, the running statistics and the trace.
///
/// Read it through `Registry::tick_profile`.
///
/// # Examples
///
/// ```
/// use freyr::Registry;
/// use freyr::profile::{TickExtras, TickProfileConfig};
///
/// struct Pos(f32);
///
/// let mut registry = Registry::with_workers(2);
/// registry.spawn_batch((0..2000).map(|i| (Pos(i as f32),)));
/// registry.enable_tick_profile(TickProfileConfig::default());
/// for tick in 0..5 {
///     registry.profile_tick_begin(tick);
///     registry.profile_tick_phase("move");
///     registry.query::<&mut Pos>().with_label("Move").each_async(|_, p| p.0 += 1.0);
///     registry.execute_tasks();
///     registry.profile_tick_end(TickExtras::default());
/// }
/// let profile = registry.tick_profile().unwrap();
/// assert_eq!(profile.ticks_recorded(), 5);
/// let last = profile.last().unwrap();
/// assert_eq!(last.tick, 4);
/// assert_eq!(last.tasks, 4); // 2000 entities = 4 chunks
/// assert_eq!(last.label("Move").unwrap().tasks, 4);
/// assert!(last.phase("move") <= last.wall);
/// assert!(profile.wall_stats().p99_ms >= profile.wall_stats().p50_ms);
/// ```
pub struct TickProfile {
    config: TickProfileConfig,
    records: VecDeque<TickRecord>,
    ticks_recorded: u64,
    ewma_ms: Option<f64>,
    open: Option<OpenTick>,
    /// The registry's dropped-tick count the last record accounted for: drops counted between
    /// two ticks (a frame counts them before its first tick runs) go to the next tick.
    seen_dropped: u64,
    pub trace: TraceLog,
}

impl TickProfile {
    /// A profiler for a registry whose dropped-tick count is `dropped` now.
    pub fn new(config: TickProfileConfig, dropped: u64) -> Self {
        assert!(
            config.window >= 1,
            "freyr: TickProfileConfig::window must be at least 1 tick (got 0); the default is {}",
            TickProfileConfig::DEFAULT_WINDOW
        );
        assert!(
            config.ewma_alpha > 0.0 && config.ewma_alpha <= 1.0,
            "freyr: TickProfileConfig::ewma_alpha must lie in (0, 1] (got {}); the default is 0.1",
            config.ewma_alpha
        );
        TickProfile {
            // Grown as ticks arrive (see `end`), never sized to the window up front: a window
            // larger than the run costs only what is recorded.
            records: VecDeque::new(),
            config,
            ticks_recorded: 0,
            ewma_ms: None,
            open: None,
            seen_dropped: dropped,
            trace: TraceLog::new(),
        }
    }

    /// The configuration it was enabled with.
    pub fn config(&self) -> &TickProfileConfig {
        &self.config
    }

    /// Ticks recorded since it was enabled, exact however long the run (the window keeps the
    /// last `window` of them).
    pub fn ticks_recorded(&self) -> u64 {
        self.ticks_recorded
    }

    /// The records in the window, oldest first: the last
    /// [`window`](TickProfileConfig::window) ticks, or every tick while fewer were recorded.
    pub fn records(&self) -> impl ExactSizeIterator<Item = &TickRecord> {
        self.records.iter()
    }

    /// The newest record.
    pub fn last(&self) -> Option<&TickRecord> {
        self.records.back()
    }

    /// The EWMA of tick wall time in milliseconds, over every tick recorded.
    pub fn ewma_ms(&self) -> Option<f64> {
        self.ewma_ms
    }

    /// Mean, p50, p99 and max of the tick wall time over the window, with the EWMA.
    pub fn wall_stats(&self) -> WindowStats {
        let mut stats = WindowStats::of(self.records.iter().map(|r| r.wall));
        stats.ewma_ms = self.ewma_ms.unwrap_or(0.0);
        stats
    }

    /// The same statistics for phase `name` (ticks where it did not run count as zero).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.enable_tick_profile(Default::default());
    /// for tick in 0..4 {
    ///     registry.profile_tick_begin(tick);
    ///     registry.profile_tick_phase(if tick % 2 == 0 { "even" } else { "odd" });
    ///     registry.profile_tick_end(Default::default());
    /// }
    /// let profile = registry.tick_profile().unwrap();
    /// assert_eq!(profile.phase_names(), ["even", "odd"]);
    /// assert_eq!(profile.phase_stats("missing").max_ms, 0.0);
    /// assert!(profile.phase_stats("even").max_ms <= profile.wall_stats().max_ms);
    /// ```
    pub fn phase_stats(&self, name: &str) -> WindowStats {
        WindowStats::of(self.records.iter().map(|r| r.phase(name)))
    }

    /// Phase names in the window, in order of first appearance.
    pub fn phase_names(&self) -> Vec<&'static str> {
        record::phase_names(self.records.iter())
    }

    /// Label names in the window, in order of first appearance.
    pub fn label_names(&self) -> Vec<&'static str> {
        record::label_names(self.records.iter())
    }

    /// The report of the current window (its JSON schema is in the `report` module).
    pub fn report(&self) -> TickReport {
        TickReport::build(
            self.config.window,
            self.ticks_recorded,
            self.wall_stats(),
            &self.records,
        )
    }

    /// Writes [`report`](Self::report) as pretty-printed JSON.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.enable_tick_profile(Default::default());
    /// registry.profile_tick_begin(9);
    /// registry.profile_tick_end(Default::default());
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
    pub fn write_json(&self, out: impl Write) -> io::Result<()> {
        serde_json::to_writer_pretty(out, &self.report()).map_err(io::Error::other)
    }

    /// Writes the traced ticks as a Chrome trace-event file (open it in Perfetto or
    /// `chrome://tracing`): a JSON object whose `traceEvents` hold one thread-name record per
    /// thread row and one complete (`"ph": "X"`) event per span, `ts` and `dur` in
    /// microseconds, `cat` the [`TraceKind`], and in `args` the tick and, for
    /// tasks, the launch and the task range `first_task..end_task`.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    /// use freyr::profile::TickProfileConfig;
    ///
    /// let mut registry = Registry::with_workers(2);
    /// registry.enable_tick_profile(TickProfileConfig { trace_ticks: 0..1, ..Default::default() });
    /// registry.profile_tick_begin(0);
    /// registry.profile_tick_phase("only");
    /// registry.profile_tick_end(Default::default());
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

    /// The trace events recorded so far (ticks in [`TickProfileConfig::trace_ticks`]).
    pub fn trace_events(&self) -> &[TraceEvent] {
        self.trace.events()
    }

    pub fn tracing(&self) -> Option<Instant> {
        match &self.open {
            Some(open) if open.traced => Some(self.trace.epoch()),
            _ => None,
        }
    }

    pub fn open_tick(&self) -> Option<u64> {
        self.open.as_ref().map(|o| o.tick)
    }

    /// Counts the open tick's counters, and the next record's dropped ticks, from `base`: the
    /// registry's counters were just reset (`Registry::reset_profile`), and a difference with
    /// the counters of before the reset would underflow.
    pub fn rebase(&mut self, base: ProfileReport) {
        self.seen_dropped = base.time.dropped_ticks;
        if let Some(open) = &mut self.open {
            open.base = base;
        }
    }

    pub fn begin(&mut self, tick: u64, base: ProfileReport) {
        let traced = self.config.trace_ticks.contains(&tick);
        self.open = Some(OpenTick {
            tick,
            start: Instant::now(),
            phase: None,
            phases: Vec::new(),
            base,
            traced,
        });
    }

    pub fn phase(&mut self, name: &'static str) {
        let Some(open) = &mut self.open else {
            panic!(
                "freyr: Registry::profile_tick_phase(\"{name}\") outside a tick; call profile_tick_begin first"
            )
        };
        let now = Instant::now();
        close_phase(open, now, &mut self.trace);
        open.phase = Some((name, now));
    }

    pub fn end(&mut self, now: ProfileReport, extras: TickExtras) {
        let Some(mut open) = self.open.take() else {
            panic!(
                "freyr: Registry::profile_tick_end without profile_tick_begin; call profile_tick_begin at the tick's start"
            )
        };
        let end = Instant::now();
        close_phase(&mut open, end, &mut self.trace);
        let wall = end - open.start;
        let base = &open.base;
        let labels = now
            .labels
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                let (calls, tasks, wall) = match base.labels.get(i) {
                    Some(b) => (
                        l.calls - b.calls,
                        l.tasks - b.tasks,
                        l.wall.saturating_sub(b.wall),
                    ),
                    None => (l.calls, l.tasks, l.wall),
                };
                (calls > 0).then_some(LabelTick {
                    label: l.label,
                    calls,
                    tasks,
                    wall,
                })
            })
            .collect();
        let sum = |r: &ProfileReport, f: fn(&freyr_sched::WorkerMetrics) -> u64| -> u64 {
            r.workers.iter().map(f).sum()
        };
        let record = TickRecord {
            tick: open.tick,
            wall,
            phases: open.phases,
            labels,
            tasks: now.tasks - base.tasks,
            steals: sum(&now, |w| w.tasks_stolen).saturating_sub(sum(base, |w| w.tasks_stolen)),
            parks: sum(&now, |w| w.parks).saturating_sub(sum(base, |w| w.parks)),
            implicit_syncs: now.implicit_syncs - base.implicit_syncs,
            sync_points: now.sync_points - base.sync_points,
            deadline_stalls: extras.deadline_stalls
                + (now.time.deadlines.late_jobs - base.time.deadlines.late_jobs),
            deadline_stall: extras.deadline_stall
                + now
                    .time
                    .deadlines
                    .stall
                    .saturating_sub(base.time.deadlines.stall),
            dropped_ticks: extras.dropped_ticks
                + now.time.dropped_ticks.saturating_sub(self.seen_dropped),
            load_factor: extras.load_factor,
        };
        self.seen_dropped = now.time.dropped_ticks;
        let ms = wall.as_secs_f64() * 1e3;
        self.ewma_ms = Some(match self.ewma_ms {
            None => ms,
            Some(e) => e + self.config.ewma_alpha * (ms - e),
        });
        if open.traced {
            self.trace.tick_span(open.tick, open.start, end);
        }
        if self.records.len() == self.config.window {
            self.records.pop_front();
        } else if self.records.len() == self.records.capacity() {
            // Grow geometrically, but never past the window: the ring holds at most `window`.
            let len = self.records.len();
            self.records
                .reserve_exact(len.max(16).min(self.config.window - len));
        }
        self.records.push_back(record);
        self.ticks_recorded += 1;
    }
}

/// Ends the open tick's current phase at `now`, if one is running.
fn close_phase(open: &mut OpenTick, now: Instant, trace: &mut TraceLog) {
    if let Some((name, start)) = open.phase.take() {
        open.phases.push((name, now - start));
        if open.traced {
            trace.phase_span(open.tick, name, start, now);
        }
    }
}
