//! The registry's profiler: wall time per label and per phase, tasks, steals, implicit sync
//! points, commands applied and skipped.
//!
//! Labels name a query's work (`Query::with_label`). A synchronous
//! call's wall time is measured around it; an `each_async` launch's wall time runs from the launch
//! to the moment its last task finished (stamped by that task), so overlap with other work on the
//! calling thread is not counted against it. Unlabelled work is not timed per label.

use core::cell::Cell;
use core::fmt;
use std::time::Duration;

use freyr_sched::{PoolMetrics, WorkerMetrics};
use freyr_time::DeadlineStats;
use hashbrown::HashMap;

use crate::phase::Phase;

/// Totals for one label.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelStats {
    /// The label.
    pub label: &'static str,
    /// Query calls with this label.
    pub calls: u64,
    /// Chunk tasks launched by `each_async` calls with this label (0 for synchronous calls).
    pub tasks: u64,
    /// Summed wall time of the calls.
    pub wall: Duration,
}

/// Totals for one phase of `Registry::update`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PhaseStats {
    /// Times the phase ran.
    pub runs: u64,
    /// Summed wall time: systems plus the sync point that ends the phase. A run of a phase
    /// that has no systems and whose sync point has nothing to wait for or apply is not timed
    /// (a clock read would cost more than the run): it adds zero, and its few nanoseconds count
    /// in the next phase.
    pub wall: Duration,
    /// The part of `wall` spent in the phase-end sync point (waiting, applying commands). A
    /// sync point with nothing in flight and nothing to apply adds zero.
    pub sync: Duration,
}

/// A snapshot of the profiler, from `Registry::profile`.
///
/// # Examples
///
/// ```
/// use freyr::Registry;
///
/// struct Pos(f32);
///
/// let mut registry = Registry::with_workers(2);
/// registry.spawn_batch((0..1000).map(|i| (Pos(i as f32),)));
/// registry
///     .query::<&mut Pos>()
///     .with_label("Shift")
///     .each_async(|_, p| p.0 += 1.0);
/// registry.execute_tasks();
/// let report = registry.profile();
/// let shift = report.label("Shift").unwrap();
/// assert_eq!(shift.calls, 1);
/// assert_eq!(shift.tasks, 2); // 1000 entities = 2 chunks of up to 512
/// assert_eq!(report.tasks, 2);
/// assert_eq!(report.sync_points, 1);
/// assert!(report.to_string().contains("Shift"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ProfileReport {
    /// Per-label totals, in order of first use.
    pub labels: Vec<LabelStats>,
    /// Per-phase totals, indexed by [`Phase::index`].
    pub phases: [PhaseStats; 3],
    /// `each_async` calls that launched tasks.
    pub launches: u64,
    /// Chunk tasks launched.
    pub tasks: u64,
    /// Explicit and phase-end sync points run.
    pub sync_points: u64,
    /// Operations that had to wait for conflicting in-flight work.
    pub implicit_syncs: u64,
    /// Time spent in those waits.
    pub implicit_sync_wait: Duration,
    /// Commands applied at sync points.
    pub commands_applied: u64,
    /// Commands skipped because their entity was stale.
    pub stale_commands: u64,
    /// Entities destroyed through `Registry::destroy_entity`.
    pub destroyed: u64,
    /// Callback panics caught in launches.
    pub panics: u64,
    /// Per-thread pool counters since the last reset: `workers[i]` is background worker `i`, the
    /// last entry the non-worker threads (the caller helping while it waits).
    pub workers: Vec<WorkerMetrics>,
    /// Ticks, frames, dropped and held ticks, and deadline-job stall telemetry.
    pub time: TimeStats,
}

impl ProfileReport {
    /// The totals of `label`, if it was used.
    pub fn label(&self, label: &str) -> Option<&LabelStats> {
        self.labels.iter().find(|l| l.label == label)
    }

    /// Tasks run by all threads (pool counters).
    pub fn tasks_run(&self) -> u64 {
        self.workers.iter().map(|w| w.tasks_run).sum()
    }

    /// Tasks stolen from another worker's queue (pool counters).
    pub fn tasks_stolen(&self) -> u64 {
        self.workers.iter().map(|w| w.tasks_stolen).sum()
    }

    /// Per-thread busy time (pool counters, see [`WorkerMetrics::busy`]): `busy()[i]` is
    /// background worker `i`, the last entry the non-worker threads.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct Pos(f32);
    ///
    /// let mut registry = Registry::with_workers(2);
    /// registry.spawn_batch((0..5000).map(|i| (Pos(i as f32),)));
    /// registry.query::<&mut Pos>().each_async(|_, p| p.0 += 1.0);
    /// registry.execute_tasks();
    /// let busy = registry.profile().busy();
    /// assert_eq!(busy.len(), 2);
    /// assert!(busy.iter().any(|b| !b.is_zero()));
    /// ```
    pub fn busy(&self) -> Vec<Duration> {
        self.workers.iter().map(|w| w.busy).collect()
    }
}

impl fmt::Display for ProfileReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<24} {:>8} {:>10} {:>14}",
            "label", "calls", "tasks", "wall"
        )?;
        for l in &self.labels {
            writeln!(
                f,
                "{:<24} {:>8} {:>10} {:>14.3?}",
                l.label, l.calls, l.tasks, l.wall
            )?;
        }
        writeln!(
            f,
            "{:<24} {:>8} {:>14} {:>14}",
            "phase", "runs", "wall", "sync"
        )?;
        for phase in Phase::ALL {
            let p = &self.phases[phase.index()];
            writeln!(
                f,
                "{:<24} {:>8} {:>14.3?} {:>14.3?}",
                phase.name(),
                p.runs,
                p.wall,
                p.sync
            )?;
        }
        writeln!(
            f,
            "launches {}  tasks {}  run {}  stolen {}  sync points {}  implicit syncs {} ({:.3?})",
            self.launches,
            self.tasks,
            self.tasks_run(),
            self.tasks_stolen(),
            self.sync_points,
            self.implicit_syncs,
            self.implicit_sync_wait
        )?;
        writeln!(
            f,
            "commands applied {}  stale {}  destroyed {}  panics {}",
            self.commands_applied, self.stale_commands, self.destroyed, self.panics
        )?;
        let t = &self.time;
        writeln!(
            f,
            "ticks {}  frames {}  dropped {}  held {}  deadline jobs {} (late {}, stalled {:.3?}, \
             max {:.3?}, helped {} tasks, panicked {})",
            t.ticks,
            t.frames,
            t.dropped_ticks,
            t.held_ticks,
            t.deadlines.applied,
            t.deadlines.late_jobs,
            t.deadlines.stall,
            t.deadlines.max_stall,
            t.deadlines.helped_tasks,
            t.deadlines.panicked
        )?;
        write!(f, "busy per thread (workers, then callers):")?;
        for w in &self.workers {
            write!(f, " {:.3?}", w.busy)?;
        }
        Ok(())
    }
}

/// The registry's live counters.
#[derive(Default)]
pub struct Profiler {
    labels: Vec<LabelStats>,
    label_index: HashMap<&'static str, usize>,
    phases: [PhaseStats; 3],
    launches: u64,
    tasks: u64,
    sync_points: u64,
    implicit_syncs: Cell<u64>,
    implicit_sync_wait: Cell<Duration>,
    commands_applied: u64,
    stale_commands: u64,
    destroyed: u64,
    panics: u64,
    pool_base: PoolMetrics,
}

impl Profiler {
    pub fn new(pool: PoolMetrics) -> Self {
        Profiler {
            pool_base: pool,
            ..Profiler::default()
        }
    }

    pub fn record_implicit_sync(&self, waited: Duration) {
        self.implicit_syncs.set(self.implicit_syncs.get() + 1);
        self.implicit_sync_wait
            .set(self.implicit_sync_wait.get() + waited);
    }

    pub fn record_label(&mut self, label: &'static str, tasks: usize, wall: Duration) {
        let index = *self.label_index.entry(label).or_insert_with(|| {
            self.labels.push(LabelStats {
                label,
                ..LabelStats::default()
            });
            self.labels.len() - 1
        });
        let stats = &mut self.labels[index];
        stats.calls += 1;
        stats.tasks += tasks as u64;
        stats.wall += wall;
    }

    pub fn record_launch(&mut self, tasks: usize) {
        self.launches += 1;
        self.tasks += tasks as u64;
    }

    pub fn record_phase(&mut self, phase: Phase, wall: Duration, sync: Duration) {
        let p = &mut self.phases[phase.index()];
        p.runs += 1;
        p.wall += wall;
        p.sync += sync;
    }

    pub fn record_sync_point(&mut self) {
        self.sync_points += 1;
    }

    pub fn record_commands(&mut self, applied: usize, stale: usize) {
        self.commands_applied += applied as u64;
        self.stale_commands += stale as u64;
    }

    pub fn record_destroyed(&mut self, destroyed: usize, stale: usize) {
        self.destroyed += destroyed as u64;
        self.stale_commands += stale as u64;
    }

    pub fn record_panic(&mut self) {
        self.panics += 1;
    }

    pub fn implicit_syncs(&self) -> u64 {
        self.implicit_syncs.get()
    }

    pub fn report(&self, pool: &PoolMetrics) -> ProfileReport {
        let workers = pool
            .workers
            .iter()
            .enumerate()
            .map(|(i, now)| {
                let base = self.pool_base.workers.get(i).copied().unwrap_or_default();
                WorkerMetrics {
                    tasks_run: now.tasks_run.saturating_sub(base.tasks_run),
                    tasks_stolen: now.tasks_stolen.saturating_sub(base.tasks_stolen),
                    parks: now.parks.saturating_sub(base.parks),
                    wakeups: now.wakeups.saturating_sub(base.wakeups),
                    busy: now.busy.saturating_sub(base.busy),
                }
            })
            .collect();
        ProfileReport {
            labels: self.labels.clone(),
            phases: self.phases,
            launches: self.launches,
            tasks: self.tasks,
            sync_points: self.sync_points,
            implicit_syncs: self.implicit_syncs.get(),
            implicit_sync_wait: self.implicit_sync_wait.get(),
            commands_applied: self.commands_applied,
            stale_commands: self.stale_commands,
            destroyed: self.destroyed,
            panics: self.panics,
            workers,
            time: TimeStats::default(),
        }
    }
}

/// Time telemetry of a registry, in [`ProfileReport::time`](crate::ProfileReport::time): ticks
/// and frames run, ticks dropped by the catch-up clamp, gate refusals, and the deadline jobs'
/// stall telemetry (late jobs, stall time, tasks the collecting thread helped with).
///
/// # Examples
///
/// ```
/// let mut registry = freyr::Registry::with_workers(1);
/// registry.update(0.016);
/// let time = registry.profile().time;
/// assert_eq!(time.ticks, 1);
/// assert_eq!(time.deadlines.late_jobs, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeStats {
    /// Ticks run (`Registry::update` calls, from `Registry::run_frame` or direct).
    pub ticks: u64,
    /// Frames run by `Registry::run_frame`.
    pub frames: u64,
    /// Ticks the catch-up clamp dropped.
    pub dropped_ticks: u64,
    /// Gate refusals: frames that a gate ended by holding the next tick (at most one per
    /// frame). Despite the name, not a number of ticks: a frame that owed 5 ticks and was held
    /// at the first counts 1, and a tick held across 3 frames counts 3.
    pub held_ticks: u64,
    /// Deadline jobs: applied, panicked, late, stall time, tasks helped while late.
    pub deadlines: DeadlineStats,
}
