//! Trace events of the traced ticks, and their export in Chrome's trace-event format (which
//! Perfetto and `chrome://tracing` open).
//!
//! Per thread, the trace shows which label's tasks ran when (one event per batch of
//! consecutive tasks a thread ran in one go, naming the task range), the sync points, the
//! phases of each tick and any stalls the caller reports.
//!
//! ```text
//! tid 0   "tick"       tick 41 ████████████████████████████████████  phases under it
//! tid 1   "caller"     Integrate 0..4 ██  sync ██                     the thread that drives
//! tid 2.. "worker i"   Integrate 4..20 ████ AI 16..32 ███             the registry helps too
//! ```

#[cfg(feature = "json")]
use std::io::{self, Write};
use std::time::Instant;

#[cfg(feature = "json")]
#[cfg(feature = "json")]
use serde::Serialize;

/// What a [`TraceEvent`] shows.
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "json")] {
/// let json = serde_json::to_string(&freyr::profile::TraceKind::Sync).unwrap();
/// assert_eq!(json, "\"sync\""); // the `cat` of a Chrome trace event (feature `json`)
/// # }
/// assert_ne!(freyr::profile::TraceKind::Sync, freyr::profile::TraceKind::Tick);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "json", derive(Serialize))]
#[cfg_attr(feature = "json", serde(rename_all = "snake_case"))]
pub enum TraceKind {
    /// A whole tick.
    Tick,
    /// A phase of a tick (`Registry::profile_tick_phase`).
    Phase,
    /// A batch of tasks run in one go by one thread.
    Task,
    /// A sync point (waiting for launches, applying their commands).
    Sync,
    /// A stall the caller reported (e.g. waiting for a late deadline job).
    Stall,
}

/// The thread row of the tick and phase events.
pub const TICK_ROW: u32 = 0;
/// The thread row of the calling thread (and any thread that is not a pool worker).
pub const CALLER_ROW: u32 = 1;

/// The row of a thread: [`CALLER_ROW`] for a non-worker, `2 + i` for worker `i`.
pub fn row_of(worker: Option<usize>) -> u32 {
    worker.map_or(CALLER_ROW, |w| 2 + u32::try_from(w).unwrap_or(u32::MAX - 2))
}

/// One span on one thread.
///
/// # Examples
///
/// ```
/// use freyr::Registry;
/// use freyr::profile::{TickProfileConfig, TraceKind};
///
/// struct Pos(f32);
///
/// let mut registry = Registry::with_workers(1);
/// registry.spawn_batch((0..1000).map(|i| (Pos(i as f32),)));
/// registry.enable_tick_profile(TickProfileConfig { trace_ticks: 0..1, ..Default::default() });
/// registry.profile_tick_begin(0);
/// registry.query::<&mut Pos>().with_label("Shift").each_async(|_, p| p.0 += 1.0);
/// registry.execute_tasks();
/// registry.profile_tick_end(Default::default());
/// let events = registry.tick_profile().unwrap().trace_events();
/// let tasks: Vec<_> = events.iter().filter(|e| e.kind == TraceKind::Task).collect();
/// // One inline worker ran both chunk tasks, in one or two batches, on the caller's row.
/// assert!(tasks.iter().all(|e| e.name == "Shift" && e.row == 1));
/// assert_eq!(tasks.iter().map(|e| e.tasks.unwrap().2 - e.tasks.unwrap().1).sum::<u32>(), 2);
/// assert!(events.iter().any(|e| e.kind == TraceKind::Sync));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// The tick it belongs to.
    pub tick: u64,
    /// What it shows.
    pub kind: TraceKind,
    /// The label, phase or stall name ("tick" for a tick, "sync" for a sync point).
    pub name: &'static str,
    /// The thread row: 0 for the tick and its phases, 1 for the calling thread (and any thread
    /// that is not a pool worker), `2 + i` for pool worker `i`.
    pub row: u32,
    /// Start, in nanoseconds since the profiler was enabled.
    pub start_ns: u64,
    /// Length in nanoseconds.
    pub dur_ns: u64,
    /// For tasks: the launch's number and the task indices `first..end` of the batch.
    pub tasks: Option<(u64, u32, u32)>,
}

/// A batch of tasks as a job stamps it: written by the thread that ran the batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskSpan {
    /// One past the batch's last task (0: no batch started at this index).
    pub end: u32,
    pub row: u32,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The events of the traced ticks.
pub struct TraceLog {
    epoch: Instant,
    events: Vec<TraceEvent>,
}

/// Nanoseconds from `epoch` to `t` (0 if `t` is earlier).
pub fn nanos_since(epoch: Instant, t: Instant) -> u64 {
    u64::try_from(t.saturating_duration_since(epoch).as_nanos()).unwrap_or(u64::MAX)
}

// The Chrome trace-event file, as `write_chrome` serialises it.

#[cfg(feature = "json")]
#[derive(Serialize)]
struct Args {
    tick: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    launch: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_task: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_task: Option<u32>,
}
#[cfg(feature = "json")]
#[derive(Serialize)]
struct Event<'a> {
    name: &'a str,
    cat: TraceKind,
    ph: &'static str,
    ts: f64,
    dur: f64,
    pid: u32,
    tid: u32,
    args: Args,
}
#[cfg(feature = "json")]
#[derive(Serialize)]
struct NameArgs {
    name: String,
}
#[cfg(feature = "json")]
#[derive(Serialize)]
struct Meta {
    name: &'static str,
    ph: &'static str,
    pid: u32,
    tid: u32,
    args: NameArgs,
}
#[cfg(feature = "json")]
#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Event(Event<'a>),
    Meta(Meta),
}
#[cfg(feature = "json")]
#[derive(Serialize)]
struct File<'a> {
    #[serde(rename = "traceEvents")]
    trace_events: Vec<Item<'a>>,
    #[serde(rename = "displayTimeUnit")]
    display_time_unit: &'static str,
}

impl Default for TraceLog {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceLog {
    pub fn new() -> Self {
        TraceLog {
            epoch: Instant::now(),
            events: Vec::new(),
        }
    }

    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    pub(crate) fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    fn span(
        &mut self,
        tick: u64,
        kind: TraceKind,
        name: &'static str,
        row: u32,
        start: Instant,
        end: Instant,
    ) {
        let start_ns = nanos_since(self.epoch, start);
        self.events.push(TraceEvent {
            tick,
            kind,
            name,
            row,
            start_ns,
            dur_ns: nanos_since(self.epoch, end).saturating_sub(start_ns),
            tasks: None,
        });
    }

    pub fn tick_span(&mut self, tick: u64, start: Instant, end: Instant) {
        self.span(tick, TraceKind::Tick, "tick", TICK_ROW, start, end);
    }

    pub fn phase_span(&mut self, tick: u64, name: &'static str, start: Instant, end: Instant) {
        self.span(tick, TraceKind::Phase, name, TICK_ROW, start, end);
    }

    pub fn sync_span(&mut self, tick: u64, start: Instant, end: Instant) {
        self.span(tick, TraceKind::Sync, "sync", CALLER_ROW, start, end);
    }

    pub fn user_span(
        &mut self,
        tick: u64,
        kind: TraceKind,
        name: &'static str,
        worker: Option<usize>,
        start: Instant,
        end: Instant,
    ) {
        self.span(tick, kind, name, row_of(worker), start, end);
    }

    /// Adds the batches a retired launch stamped (`spans[i]` describes the batch that started
    /// at task `i`, if any).
    pub fn launch(&mut self, tick: u64, label: &'static str, seq: u64, spans: &[TaskSpan]) {
        for (first, span) in spans.iter().enumerate() {
            if span.end == 0 {
                continue;
            }
            self.events.push(TraceEvent {
                tick,
                kind: TraceKind::Task,
                name: label,
                row: span.row,
                start_ns: span.start_ns,
                dur_ns: span.end_ns.saturating_sub(span.start_ns),
                tasks: Some((seq, first as u32, span.end)),
            });
        }
    }

    /// Writes the events as a Chrome trace-event JSON object.
    #[cfg(feature = "json")]
    #[cfg(feature = "json")]
    pub(crate) fn write_chrome(&self, out: impl Write) -> io::Result<()> {
        let mut rows: Vec<u32> = self.events.iter().map(|e| e.row).collect();
        rows.sort_unstable();
        rows.dedup();
        let mut items: Vec<Item<'_>> = rows
            .iter()
            .map(|&row| {
                let name = match row {
                    TICK_ROW => "tick".to_owned(),
                    CALLER_ROW => "caller".to_owned(),
                    w => format!("worker {}", w - 2),
                };
                Item::Meta(Meta {
                    name: "thread_name",
                    ph: "M",
                    pid: 1,
                    tid: row,
                    args: NameArgs { name },
                })
            })
            .collect();
        items.extend(self.events.iter().map(|e| {
            Item::Event(Event {
                name: e.name,
                cat: e.kind,
                ph: "X",
                ts: e.start_ns as f64 / 1e3,
                dur: e.dur_ns as f64 / 1e3,
                pid: 1,
                tid: e.row,
                args: Args {
                    tick: e.tick,
                    launch: e.tasks.map(|t| t.0),
                    first_task: e.tasks.map(|t| t.1),
                    end_task: e.tasks.map(|t| t.2),
                },
            })
        }));
        let file = File {
            trace_events: items,
            display_time_unit: "ms",
        };
        serde_json::to_writer(out, &file).map_err(io::Error::other)
    }
}
