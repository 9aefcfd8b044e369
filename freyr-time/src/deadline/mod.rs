//! Deadline jobs: requested at tick T on an owned snapshot of their inputs,
//! run on the pool, applied at exactly tick T + K in request order.
//!
//! "Apply when ready" lets the machine's speed into the simulation: a faster
//! machine applies a result a tick earlier. So does a time budget per tick.
//! A [`DeadlineScheduler`] fixes the latency in ticks instead: a job
//! requested at tick `T` is applied by [`collect`](DeadlineScheduler::collect)
//! at tick `T + K` on every machine, in request order. If the job is not done
//! by then, the collecting thread *helps the pool* (runs queued tasks) until
//! it is: a slow machine pays in wall time (a stall, recorded), never with a
//! different outcome. `K` is fixed at construction and never adapts.

mod error;
mod restore;
mod shared;
mod stats;
mod ticket;

use core::fmt;
use core::num::NonZeroU64;
use std::collections::VecDeque;
use std::panic;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::pool_job::JobPanic;
use freyr_sched::keep_first;
use freyr_sched::{PoolId, ThreadPool};

use self::shared::SharedJob;

pub use self::error::DeadlineError;
pub use self::restore::JobsInFlight;
pub use self::stats::DeadlineStats;
pub use self::ticket::{Delivered, JobStatus, JobTicket, due_tick};

/// A job requested and not yet delivered; its handle may be shared with captures
/// ([`JobsInFlight`]).
struct Pending<R> {
    ticket: JobTicket,
    job: Arc<SharedJob<R>>,
}

/// A job's result, or its panic.
type Outcome<R> = Result<R, JobPanic>;

/// Copies a captured job's result (`Clone::clone`, bound where `R: Clone` is known).
type Cloner<R> = fn(&Outcome<R>) -> Outcome<R>;

static NEXT_SCHEDULER: AtomicU64 = AtomicU64::new(1);

/// Deadline jobs with a fixed latency of `K` ticks.
///
/// - [`request`](Self::request)`(pool, T, inputs, job)` moves `inputs` (an
///   owned snapshot; the `'static` bound keeps references into live state
///   out) into `job`, queues it on `pool`, and returns its [`JobTicket`]
///   (due at `T + K`).
/// - [`collect`](Self::collect)`(pool, now, apply)`, called once per tick at
///   a fixed point of the tick (before the systems that read results),
///   hands every job due at `now` to `apply`, in request order. A job not
///   finished yet is waited for by helping the pool (never sleeping while
///   there is work), and recorded as late with its stall time. A job that
///   panicked is delivered as `Err(JobPanic)` in its place; the pool stays
///   usable.
/// - [`settle`](Self::settle) on shutdown waits for the jobs in flight and
///   discards them; later requests are refused.
/// - [`capture`](Self::capture) and [`restore`](Self::restore) take the jobs
///   in flight at the start of a tick and put them back (in this scheduler
///   or another of the same latency): a rollback, or a seek forward again.
///
/// All of a scheduler's calls must pass the same pool (checked).
///
/// # Examples
///
/// ```
/// use freyr::ThreadPool;
/// use freyr::time::deadline::DeadlineScheduler;
///
/// let pool = ThreadPool::new(4);
/// let mut jobs = DeadlineScheduler::new(2).unwrap(); // K = 2
/// let mut applied = Vec::new();
/// for tick in 0..6u64 {
///     jobs.collect(&pool, tick, |done| applied.push((tick, done.result.unwrap()))).unwrap();
///     if tick < 3 {
///         // A snapshot of the state the job needs, moved in.
///         let snapshot: Vec<u64> = (0..=tick).collect();
///         jobs.request(&pool, tick, snapshot, |v: Vec<u64>| v.iter().sum::<u64>()).unwrap();
///     }
/// }
/// // Requested at 0, 1, 2; applied at 2, 3, 4, whatever the pool's speed.
/// assert_eq!(applied, [(2, 0), (3, 1), (4, 3)]);
/// ```
pub struct DeadlineScheduler<R> {
    id: u64,
    latency: NonZeroU64,
    /// The pool the jobs run on ([`ThreadPool::id`]), bound on first use.
    pool: Option<PoolId>,
    pending: VecDeque<Pending<R>>,
    next_job: u64,
    collected: Option<u64>,
    settled: bool,
    stats: DeadlineStats,
    last: DeadlineStats,
}

impl<R: Send + 'static> DeadlineScheduler<R> {
    /// A scheduler whose jobs are applied `latency` ticks after their request.
    ///
    /// # Errors
    ///
    /// [`DeadlineError::ZeroLatency`] if `latency` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let jobs = freyr::time::deadline::DeadlineScheduler::<u32>::new(3).unwrap();
    /// assert_eq!(jobs.latency(), 3);
    /// ```
    pub fn new(latency: u64) -> Result<Self, DeadlineError> {
        let latency = NonZeroU64::new(latency).ok_or(DeadlineError::ZeroLatency)?;
        Ok(DeadlineScheduler {
            id: NEXT_SCHEDULER.fetch_add(1, Ordering::Relaxed),
            latency,
            pool: None,
            pending: VecDeque::new(),
            next_job: 0,
            collected: None,
            settled: false,
            stats: DeadlineStats::default(),
            last: DeadlineStats::default(),
        })
    }

    /// Requests `job(inputs)` at tick `now`, to be applied at `now + K`.
    /// `inputs` is moved in: the job reads only what it owns.
    ///
    /// # Errors
    ///
    /// - [`DeadlineError::Settled`] after [`settle`](Self::settle).
    /// - [`DeadlineError::ForeignPool`] if `pool` is not the scheduler's pool.
    /// - [`DeadlineError::TickInPast`] if `now` is before a collected tick.
    /// - [`DeadlineError::TickOverflow`] if `now + K` overflows.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::{DeadlineError, DeadlineScheduler};
    /// let pool = ThreadPool::new(2);
    /// let mut jobs = DeadlineScheduler::new(1).unwrap();
    /// let ticket = jobs.request(&pool, 0, String::from("abc"), |s: String| s.len()).unwrap();
    /// assert_eq!(ticket.due(), 1);
    /// let other = ThreadPool::new(2);
    /// assert_eq!(jobs.request(&other, 0, (), |()| 0).unwrap_err(), DeadlineError::ForeignPool);
    /// ```
    pub fn request<I, F>(
        &mut self,
        pool: &ThreadPool,
        now: u64,
        inputs: I,
        job: F,
    ) -> Result<JobTicket, DeadlineError>
    where
        I: Send + 'static,
        F: FnOnce(I) -> R + Send + 'static,
    {
        if self.settled {
            return Err(DeadlineError::Settled);
        }
        self.bind(pool)?;
        if let Some(collected) = self.collected
            && now < collected
        {
            return Err(DeadlineError::TickInPast { now, collected });
        }
        let due = due_tick(now, self.latency.get()).ok_or(DeadlineError::TickOverflow)?;
        let ticket = JobTicket {
            scheduler: self.id,
            id: self.next_job,
            requested_at: now,
            due,
        };
        self.next_job += 1;
        let job = SharedJob::spawn(pool, move || job(inputs));
        // Due ticks are non-decreasing in request order (`now` never goes
        // back past a collected tick, and K is fixed), so the queue stays
        // sorted by (due, id).
        let at = self.pending.partition_point(|p| p.ticket.due <= due);
        self.pending.insert(at, Pending { ticket, job });
        self.stats.requested += 1;
        Ok(ticket)
    }

    /// Applies, in request order, every job due at tick `now`: each is
    /// handed to `apply` as a [`Delivered`]. A job not finished yet is
    /// waited for by running the pool's queued tasks on this thread; it is
    /// counted late and its stall recorded. Returns this call's telemetry
    /// (also added to [`stats`](Self::stats)).
    ///
    /// Call it once per tick, at the same point of every tick. Calling it
    /// again for the same tick does nothing more.
    ///
    /// # Errors
    ///
    /// Nothing is applied when it fails:
    /// - [`DeadlineError::ForeignPool`] if `pool` is not the scheduler's pool.
    /// - [`DeadlineError::TickInPast`] if `now` is before a collected tick.
    /// - [`DeadlineError::MissedDueTick`] if a job was due before `now`
    ///   (a tick was not collected).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(2);
    /// let mut jobs = DeadlineScheduler::new(1).unwrap();
    /// jobs.request(&pool, 0, (), |()| std::thread::sleep(Duration::from_millis(20))).unwrap();
    /// let report = jobs.collect(&pool, 1, |done| assert!(done.result.is_ok())).unwrap();
    /// assert_eq!(report.applied, 1);
    /// // Each collect's telemetry is summed into the scheduler's stats.
    /// assert_eq!(jobs.stats().late_jobs, report.late_jobs);
    /// assert_eq!(jobs.stats().applied, 1);
    /// ```
    pub fn collect(
        &mut self,
        pool: &ThreadPool,
        now: u64,
        mut apply: impl FnMut(Delivered<R>),
    ) -> Result<DeadlineStats, DeadlineError> {
        self.bind(pool)?;
        if let Some(collected) = self.collected
            && now < collected
        {
            return Err(DeadlineError::TickInPast { now, collected });
        }
        if let Some(front) = self.pending.front()
            && front.ticket.due < now
        {
            return Err(DeadlineError::MissedDueTick {
                job: front.ticket.id,
                due: front.ticket.due,
                now,
            });
        }
        if self.collected == Some(now) {
            self.last = DeadlineStats::default();
            return Ok(self.last);
        }
        self.collected = Some(now);
        let mut report = DeadlineStats::default();
        while self.pending.front().is_some_and(|p| p.ticket.due == now) {
            let Some(Pending { ticket, job }) = self.pending.pop_front() else {
                break;
            };
            let stall = if job.is_done() {
                Duration::ZERO
            } else {
                let tasks_before = pool.tasks_run_here();
                let start = Instant::now();
                job.wait(pool);
                let stall = start.elapsed();
                let helped = pool.tasks_run_here() - tasks_before;
                report.late_jobs += 1;
                report.stall += stall;
                report.max_stall = report.max_stall.max(stall);
                report.helped_tasks += helped;
                stall
            };
            // Moved out, or copied if a capture still holds the job.
            let result = SharedJob::into_result(job);
            report.applied += 1;
            report.panicked += u64::from(result.is_err());
            apply(Delivered {
                ticket,
                result,
                stall,
            });
        }
        self.stats.add(&report);
        self.last = report;
        Ok(report)
    }

    /// Shutdown: waits (helping the pool) for every job still in flight,
    /// discards all pending results, and refuses later requests. Returns how
    /// many were discarded.
    ///
    /// The results are dropped one at a time, in request order, each behind
    /// its own panic guard: a result whose `Drop` panics does not stop the
    /// others from being dropped (nor abort the process with a panic while
    /// panicking).
    ///
    /// # Errors
    ///
    /// [`DeadlineError::ForeignPool`] if `pool` is not the scheduler's pool.
    ///
    /// # Panics
    ///
    /// Re-raises the first panic of a result's `Drop`, once every pending
    /// result was dropped (each exactly once) and the scheduler is settled; a
    /// later panic is dropped with [`drop_payload`](freyr_sched::drop_payload).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::{DeadlineError, DeadlineScheduler};
    /// let pool = ThreadPool::new(2);
    /// let mut jobs = DeadlineScheduler::new(4).unwrap();
    /// jobs.request(&pool, 0, (), |()| 1).unwrap();
    /// assert_eq!(jobs.settle(&pool), Ok(1));
    /// assert_eq!(jobs.request(&pool, 1, (), |()| 2).unwrap_err(), DeadlineError::Settled);
    /// ```
    pub fn settle(&mut self, pool: &ThreadPool) -> Result<usize, DeadlineError> {
        if !self.pending.is_empty() {
            self.bind(pool)?;
        }
        self.settled = true;
        let discarded = self.pending.len();
        let mut first_panic = None;
        while let Some(pending) = self.pending.pop_front() {
            // Left to a capture that still holds it; otherwise run to the end and dropped.
            if let Some(payload) = SharedJob::discard(pending.job, pool, false) {
                keep_first(&mut first_panic, payload);
            }
        }
        if let Some(payload) = first_panic {
            panic::resume_unwind(payload);
        }
        Ok(discarded)
    }

    /// Where the job `ticket` stands.
    ///
    /// # Errors
    ///
    /// [`DeadlineError::ForeignTicket`] if another scheduler issued it.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::{DeadlineError, DeadlineScheduler};
    /// let pool = ThreadPool::new(1);
    /// let mut a = DeadlineScheduler::new(1).unwrap();
    /// let b = DeadlineScheduler::<()>::new(1).unwrap();
    /// let ticket = a.request(&pool, 0, (), |()| ()).unwrap();
    /// assert!(matches!(b.status(&ticket), Err(DeadlineError::ForeignTicket { .. })));
    /// ```
    pub fn status(&self, ticket: &JobTicket) -> Result<JobStatus, DeadlineError> {
        if ticket.scheduler != self.id {
            return Err(DeadlineError::ForeignTicket {
                ticket_scheduler: ticket.scheduler,
                scheduler: self.id,
            });
        }
        Ok(
            match self.pending.iter().find(|p| p.ticket.id == ticket.id) {
                None => JobStatus::Applied,
                Some(p) if p.job.is_done() => JobStatus::Finished,
                Some(_) => JobStatus::InFlight,
            },
        )
    }

    fn bind(&mut self, pool: &ThreadPool) -> Result<(), DeadlineError> {
        let id = pool.id();
        match self.pool {
            None => {
                self.pool = Some(id);
                Ok(())
            }
            Some(bound) if bound == id => Ok(()),
            Some(_) => Err(DeadlineError::ForeignPool),
        }
    }
}

impl<R> DeadlineScheduler<R> {
    /// K: ticks between a request and its application.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(freyr::time::deadline::DeadlineScheduler::<()>::new(5).unwrap().latency(), 5);
    /// ```
    #[must_use]
    pub fn latency(&self) -> u64 {
        self.latency.get()
    }

    /// This scheduler's id, carried by its tickets.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let a = DeadlineScheduler::<()>::new(1).unwrap();
    /// let b = DeadlineScheduler::<()>::new(1).unwrap();
    /// assert_ne!(a.id(), b.id());
    /// ```
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Jobs requested and not yet applied.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(1);
    /// let mut jobs = DeadlineScheduler::new(2).unwrap();
    /// jobs.request(&pool, 0, (), |()| ()).unwrap();
    /// assert_eq!(jobs.pending(), 1);
    /// ```
    #[must_use]
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Whether [`settle`](Self::settle) ran.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut jobs = freyr::time::deadline::DeadlineScheduler::<()>::new(2).unwrap();
    /// assert!(!jobs.is_settled());
    /// jobs.settle(&freyr::ThreadPool::new(1)).unwrap();
    /// assert!(jobs.is_settled());
    /// ```
    #[must_use]
    pub fn is_settled(&self) -> bool {
        self.settled
    }

    /// Telemetry summed over the scheduler's life: requests, applications,
    /// panics, late jobs, stall time, tasks helped. A profiler reads it.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(1);
    /// let mut jobs = DeadlineScheduler::new(1).unwrap();
    /// jobs.request(&pool, 0, (), |()| ()).unwrap();
    /// jobs.collect(&pool, 1, |_| {}).unwrap();
    /// let stats = jobs.stats();
    /// assert_eq!((stats.requested, stats.applied, stats.late_jobs), (1, 1, 0));
    /// ```
    #[must_use]
    pub fn stats(&self) -> DeadlineStats {
        self.stats
    }

    /// The telemetry of the last [`collect`](Self::collect) (`requested` is
    /// always 0 there).
    ///
    /// # Examples
    ///
    /// ```
    /// let jobs = freyr::time::deadline::DeadlineScheduler::<()>::new(1).unwrap();
    /// assert_eq!(jobs.last_collect().applied, 0);
    /// ```
    #[must_use]
    pub fn last_collect(&self) -> DeadlineStats {
        self.last
    }
}

impl<R> fmt::Debug for DeadlineScheduler<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadlineScheduler")
            .field("id", &self.id)
            .field("latency", &self.latency)
            .field("pending", &self.pending.len())
            .field("collected", &self.collected)
            .field("settled", &self.settled)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(freyr_loom)))]
mod tests;
