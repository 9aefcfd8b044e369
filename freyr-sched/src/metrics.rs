//! Per-worker statistics: relaxed counters, one cache line per worker.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Aligns its content to 128 bytes (two cache lines on x86 with the adjacent
/// line prefetcher), so one worker's counters never share a line with
/// another's.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct CachePadded<T>(pub(crate) T);

/// One worker's live counters (std atomics even under loom: statistics only).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) tasks_run: AtomicU64,
    pub(crate) tasks_stolen: AtomicU64,
    pub(crate) parks: AtomicU64,
    pub(crate) wakeups: AtomicU64,
    pub(crate) busy_nanos: AtomicU64,
}

impl Counters {
    #[inline]
    pub(crate) fn add_run(&self, n: usize) {
        self.tasks_run.fetch_add(n as u64, Relaxed);
    }
    #[inline]
    pub(crate) fn add_stolen(&self) {
        self.tasks_stolen.fetch_add(1, Relaxed);
    }
    pub(crate) fn add_park(&self) {
        self.parks.fetch_add(1, Relaxed);
    }
    pub(crate) fn add_wakeup(&self) {
        self.wakeups.fetch_add(1, Relaxed);
    }
    #[inline]
    pub(crate) fn add_busy(&self, busy: Duration) {
        let nanos = u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX);
        self.busy_nanos.fetch_add(nanos, Relaxed);
    }
    pub(crate) fn snapshot(&self) -> WorkerMetrics {
        WorkerMetrics {
            tasks_run: self.tasks_run.load(Relaxed),
            tasks_stolen: self.tasks_stolen.load(Relaxed),
            parks: self.parks.load(Relaxed),
            wakeups: self.wakeups.load(Relaxed),
            busy: Duration::from_nanos(self.busy_nanos.load(Relaxed)),
        }
    }
}

/// Measures one busy episode: started when a thread finds work after being
/// idle (or starts an inline batch), stopped when it next finds nothing.
/// At most two clock reads per episode, never per task: an episode that
/// starts with work a spinning thread found takes its start from the spin's
/// last reading instead ([`start_at`](Self::start_at)).
#[must_use]
pub(crate) struct BusyClock(Instant);

impl BusyClock {
    /// Starts the episode at `seen` (a reading taken moments ago), or now.
    #[inline]
    pub(crate) fn start_at(seen: Option<Instant>) -> Self {
        BusyClock(seen.unwrap_or_else(Instant::now))
    }
    /// Adds the episode's length to `counters`.
    #[inline]
    pub(crate) fn stop(self, counters: &Counters) {
        counters.add_busy(self.0.elapsed());
    }
}

/// One thread's counters at the moment of a [`PoolMetrics`] snapshot.
///
/// - `tasks_run`: task indices executed (one per `submit_indexed` index, one
///   per scoped `spawn`).
/// - `tasks_stolen`: queue entries taken from *another* worker's queue.
/// - `parks`: times the thread went to sleep after finding no work.
/// - `wakeups`: times it came back from such a sleep.
/// - `busy`: wall time spent in *busy episodes*: an episode starts when the
///   thread finds a task after having found none (or starts an inline batch,
///   or its own share of a `parallel_for`) and ends the next time it finds
///   nothing. It covers running tasks and the queue operations between
///   back-to-back tasks; it excludes searching in vain, spinning and
///   sleeping. Measured with at most two clock reads per episode, not per
///   task (an episode that starts with a spinning thread's find is dated
///   from the spin's last reading, at most one search round early). A
///   task still running at snapshot time is not counted yet.
///
/// # Examples
///
/// ```
/// let m = freyr::sched::WorkerMetrics::default();
/// assert_eq!(m.tasks_run + m.tasks_stolen + m.parks + m.wakeups, 0);
/// assert_eq!(m.busy, std::time::Duration::ZERO);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerMetrics {
    /// Task indices executed by this thread.
    pub tasks_run: u64,
    /// Queue entries this thread stole from other workers' queues.
    pub tasks_stolen: u64,
    /// Times this thread parked.
    pub parks: u64,
    /// Times this thread woke from a park.
    pub wakeups: u64,
    /// Wall time this thread spent in busy episodes (see above).
    pub busy: Duration,
}

/// A snapshot of a pool's per-worker counters, from
/// [`ThreadPool::metrics`](crate::ThreadPool::metrics).
///
/// `workers[i]` for `i < workers() - 1` is background thread
/// `freyr-worker-{i}`; the last entry aggregates every thread that is not a
/// worker of the pool (the calling thread(s) that submit, wait and help).
/// The counters are read one by one with relaxed loads, so a snapshot taken
/// while work runs is approximate; one taken while the pool is quiet is exact.
///
/// # Examples
///
/// ```
/// let pool = freyr::ThreadPool::new(2);
/// pool.parallel_for(100, 10, |_| {});
/// let m = pool.metrics();
/// assert_eq!(m.workers.len(), 2);
/// // parallel_for runs one helper task per background worker; the
/// // indices themselves are claimed from a cursor, not queued.
/// assert_eq!(m.total().tasks_run, 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolMetrics {
    /// Per-thread counters; the last entry is the non-worker threads.
    pub workers: Vec<WorkerMetrics>,
}

impl PoolMetrics {
    /// The sum over all entries.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::sched::{PoolMetrics, WorkerMetrics};
    /// use std::time::Duration;
    /// let one = WorkerMetrics {
    ///     tasks_run: 2,
    ///     tasks_stolen: 1,
    ///     parks: 0,
    ///     wakeups: 0,
    ///     busy: Duration::from_micros(5),
    /// };
    /// let m = PoolMetrics { workers: vec![one, one] };
    /// assert_eq!(m.total().tasks_run, 4);
    /// assert_eq!(m.total().tasks_stolen, 2);
    /// assert_eq!(m.total().busy, Duration::from_micros(10));
    /// ```
    #[must_use]
    pub fn total(&self) -> WorkerMetrics {
        self.workers
            .iter()
            .fold(WorkerMetrics::default(), |acc, w| WorkerMetrics {
                tasks_run: acc.tasks_run + w.tasks_run,
                tasks_stolen: acc.tasks_stolen + w.tasks_stolen,
                parks: acc.parks + w.parks,
                wakeups: acc.wakeups + w.wakeups,
                busy: acc.busy + w.busy,
            })
    }
}
