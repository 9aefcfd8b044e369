//! Deadline jobs across a snapshot and its restore: [`JobsInFlight`] is every job a scheduler
//! has pending at the start of a tick, captured without waiting for any of them, and
//! [`restore`](DeadlineScheduler::restore) makes a scheduler (the same one, or another with the
//! same latency) deliver from that tick on exactly what the captured timeline delivered.

use core::fmt;
use std::collections::VecDeque;
use std::panic;
use std::sync::Arc;

use freyr_sched::ThreadPool;
use freyr_sched::keep_first;

use super::shared::{Payload, SharedJob};
use super::{DeadlineError, DeadlineScheduler, JobTicket, Pending};

/// The jobs a [`DeadlineScheduler`] had in flight at the start of tick
/// [`tick`](Self::tick), taken by [`capture`](DeadlineScheduler::capture): each job's ticket and
/// a shared handle to the job itself (capturing never waits for a job; its result is read
/// when it is delivered), the scheduler's latency and its next job id.
///
/// Every job requested before that tick is either delivered already (due before it) or in
/// here (due at or after it), so a capture plus the state of the world at that tick is the
/// whole timeline of the jobs. Dropping a capture lets go of its handles: a job no scheduler
/// holds any more is cancelled if it has not started, and its result is dropped once (a panic
/// of that `Drop` is caught and not re-raised; so is one when a scheduler is dropped).
///
/// # Examples
///
/// ```
/// use freyr::ThreadPool;
/// use freyr::time::deadline::DeadlineScheduler;
/// let pool = ThreadPool::new(2);
/// let mut jobs = DeadlineScheduler::new(2).unwrap();
/// jobs.collect(&pool, 0, |_| {}).unwrap();
/// jobs.request(&pool, 0, 4u64, |x| x * 10).unwrap();
/// let captured = jobs.capture(1).unwrap(); // the start of tick 1
/// assert_eq!((captured.tick(), captured.len(), captured.latency()), (1, 1, 2));
/// ```
pub struct JobsInFlight<R> {
    tick: u64,
    latency: u64,
    next_job: u64,
    /// In (due, id) order, as the scheduler held them.
    jobs: Vec<(JobTicket, Arc<SharedJob<R>>)>,
}

impl<R> JobsInFlight<R> {
    /// An empty capture, for [`capture_into`](DeadlineScheduler::capture_into) to fill.
    ///
    /// # Examples
    ///
    /// ```
    /// let captured = freyr::time::deadline::JobsInFlight::<u8>::new();
    /// assert!(captured.is_empty());
    /// ```
    #[must_use]
    pub fn new() -> Self {
        JobsInFlight {
            tick: 0,
            latency: 0,
            next_job: 0,
            jobs: Vec::new(),
        }
    }

    /// The tick whose start the capture is of: a restore's next collect is at this tick.
    ///
    /// # Examples
    ///
    /// ```
    /// let jobs = freyr::time::deadline::DeadlineScheduler::<u8>::new(1).unwrap();
    /// assert_eq!(jobs.capture(7).unwrap().tick(), 7);
    /// ```
    #[must_use]
    pub fn tick(&self) -> u64 {
        self.tick
    }

    /// The latency (K) of the scheduler it was taken from.
    ///
    /// # Examples
    ///
    /// ```
    /// let jobs = freyr::time::deadline::DeadlineScheduler::<u8>::new(4).unwrap();
    /// assert_eq!(jobs.capture(0).unwrap().latency(), 4);
    /// ```
    #[must_use]
    pub fn latency(&self) -> u64 {
        self.latency
    }

    /// The id the next request got in the captured timeline.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(1);
    /// let mut jobs = DeadlineScheduler::new(1).unwrap();
    /// jobs.request(&pool, 0, (), |()| ()).unwrap();
    /// assert_eq!(jobs.capture(0).unwrap().next_job(), 1);
    /// ```
    #[must_use]
    pub fn next_job(&self) -> u64 {
        self.next_job
    }

    /// How many jobs were in flight.
    ///
    /// # Examples
    ///
    /// ```
    /// let jobs = freyr::time::deadline::DeadlineScheduler::<u8>::new(1).unwrap();
    /// assert_eq!(jobs.capture(0).unwrap().len(), 0);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether no job was in flight.
    ///
    /// # Examples
    ///
    /// ```
    /// let jobs = freyr::time::deadline::DeadlineScheduler::<u8>::new(1).unwrap();
    /// assert!(jobs.capture(0).unwrap().is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// The tickets of the jobs in flight, in delivery order (they name the scheduler that
    /// issued them; a restore gives them the restoring scheduler's id).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(2);
    /// let mut jobs = DeadlineScheduler::new(3).unwrap();
    /// jobs.request(&pool, 0, (), |()| 1u8).unwrap();
    /// jobs.request(&pool, 1, (), |()| 2u8).unwrap();
    /// let dues: Vec<u64> = jobs.capture(2).unwrap().tickets().map(|t| t.due()).collect();
    /// assert_eq!(dues, [3, 4]);
    /// ```
    pub fn tickets(&self) -> impl Iterator<Item = JobTicket> + '_ {
        self.jobs.iter().map(|(ticket, _)| *ticket)
    }
}

impl<R> Default for JobsInFlight<R> {
    fn default() -> Self {
        JobsInFlight::new()
    }
}

impl<R> fmt::Debug for JobsInFlight<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobsInFlight")
            .field("tick", &self.tick)
            .field("latency", &self.latency)
            .field("next_job", &self.next_job)
            .field("jobs", &self.jobs.len())
            .finish()
    }
}

impl<R: Clone + Send + 'static> DeadlineScheduler<R> {
    /// Captures the jobs in flight at the start of tick `now` (before its
    /// [`collect`](Self::collect)): see [`JobsInFlight`]. Never waits for a job. A job
    /// delivered while a capture still holds it is copied (`Clone`) for the delivery (a
    /// `Clone` that panics is delivered as `Err(JobPanic)` in its place); the last holder
    /// moves it.
    ///
    /// # Errors
    ///
    /// - [`DeadlineError::TickCollected`] if tick `now` (or a later one) was collected
    ///   already (its deliveries would be missing);
    /// - [`DeadlineError::MissedDueTick`] if a job was due before `now` and is still pending.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(2);
    /// let mut jobs = DeadlineScheduler::new(1).unwrap();
    /// jobs.request(&pool, 0, 3u32, |x| x + 1).unwrap();
    /// let captured = jobs.capture(1).unwrap();
    /// let mut seen = Vec::new();
    /// jobs.collect(&pool, 1, |d| seen.push(d.result.unwrap())).unwrap();
    /// // Back to the start of tick 1: the job is delivered again, with its result.
    /// jobs.restore(&pool, &captured).unwrap();
    /// jobs.collect(&pool, 1, |d| seen.push(d.result.unwrap())).unwrap();
    /// assert_eq!(seen, [4, 4]);
    /// ```
    pub fn capture(&self, now: u64) -> Result<JobsInFlight<R>, DeadlineError> {
        let mut captured = JobsInFlight::new();
        self.capture_into(now, &mut captured)?;
        Ok(captured)
    }

    /// As [`capture`](Self::capture), into `captured` (its handles let go of, its buffer
    /// reused: nothing is allocated once it held as many jobs). On an error `captured` is
    /// unchanged.
    ///
    /// # Errors
    ///
    /// As [`capture`](Self::capture).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::time::deadline::{DeadlineScheduler, JobsInFlight};
    /// let jobs = DeadlineScheduler::<u8>::new(1).unwrap();
    /// let mut captured = JobsInFlight::new();
    /// jobs.capture_into(4, &mut captured).unwrap();
    /// assert_eq!(captured.tick(), 4);
    /// ```
    pub fn capture_into(
        &self,
        now: u64,
        captured: &mut JobsInFlight<R>,
    ) -> Result<(), DeadlineError> {
        if self.collected.is_some_and(|collected| now <= collected) {
            return Err(DeadlineError::TickCollected { tick: now });
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
        captured.tick = now;
        captured.latency = self.latency.get();
        captured.next_job = self.next_job;
        captured.jobs.clear();
        captured.jobs.extend(
            self.pending
                .iter()
                .map(|p| (p.ticket, SharedJob::share(&p.job))),
        );
        Ok(())
    }
}

impl<R: Send + 'static> DeadlineScheduler<R> {
    /// Whether [`restore`](Self::restore) would accept `captured` (the pool aside).
    ///
    /// # Errors
    ///
    /// - [`DeadlineError::LatencyMismatch`] if `captured` holds jobs and was taken from a
    ///   scheduler of another latency (their due ticks would not be this scheduler's);
    /// - [`DeadlineError::Settled`] if `captured` holds jobs and this scheduler was settled.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::{DeadlineError, DeadlineScheduler};
    /// let pool = ThreadPool::new(1);
    /// let mut a = DeadlineScheduler::new(2).unwrap();
    /// a.request(&pool, 0, (), |()| 1u8).unwrap();
    /// let captured = a.capture(0).unwrap();
    /// let b = DeadlineScheduler::<u8>::new(3).unwrap();
    /// assert_eq!(
    ///     b.check_restore(&captured),
    ///     Err(DeadlineError::LatencyMismatch { captured: 2, latency: 3 })
    /// );
    /// ```
    pub fn check_restore(&self, captured: &JobsInFlight<R>) -> Result<(), DeadlineError> {
        if captured.is_empty() {
            return Ok(());
        }
        if captured.latency != self.latency.get() {
            return Err(DeadlineError::LatencyMismatch {
                captured: captured.latency,
                latency: self.latency.get(),
            });
        }
        if self.settled {
            return Err(DeadlineError::Settled);
        }
        Ok(())
    }

    /// Goes to the start of tick [`captured.tick()`](JobsInFlight::tick), backward or forward,
    /// as a restore of a snapshot taken there does: every job this scheduler has pending is
    /// discarded, and the captured jobs become its pending jobs, so from that tick on it
    /// delivers exactly what the captured timeline delivered (the same ticket ids, results
    /// and ticks; tickets carry this scheduler's id). Job ids go on from the captured next
    /// id. The next [`collect`](Self::collect) may be at the captured tick. Returns how many
    /// jobs were discarded.
    ///
    /// The captured jobs keep running where they were requested: a scheduler on another pool
    /// waits for one still running there without helping that pool (yielding, then sleeping
    /// in short steps). A discarded job still held by a capture is left to it; one held by
    /// nobody else is cancelled (it skips its work if not started), waited for and its result
    /// dropped, one at a time, each behind its own panic guard.
    ///
    /// # Errors
    ///
    /// [`DeadlineError::ForeignPool`] if `pool` is not the scheduler's pool; as
    /// [`check_restore`](Self::check_restore). Nothing changed on an error.
    ///
    /// # Panics
    ///
    /// Re-raises the first panic of a discarded result's `Drop`, once every discarded job was
    /// dropped (each exactly once) and the scheduler is restored.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(2);
    /// let mut a = DeadlineScheduler::new(2).unwrap();
    /// a.request(&pool, 0, 5u64, |x| x * 2).unwrap();
    /// let captured = a.capture(1).unwrap();
    /// // Another scheduler with the same latency takes over the timeline.
    /// let mut b = DeadlineScheduler::new(2).unwrap();
    /// assert_eq!(b.restore(&pool, &captured), Ok(0));
    /// let mut seen = Vec::new();
    /// for tick in 1..3 {
    ///     b.collect(&pool, tick, |d| seen.push((tick, d.ticket.id(), d.result.unwrap()))).unwrap();
    /// }
    /// assert_eq!(seen, [(2, 0, 10)]);
    /// ```
    pub fn restore(
        &mut self,
        pool: &ThreadPool,
        captured: &JobsInFlight<R>,
    ) -> Result<usize, DeadlineError> {
        self.check_restore(captured)?;
        if !self.pending.is_empty() || !captured.is_empty() {
            self.bind(pool)?;
        }
        let id = self.id;
        let installed: VecDeque<Pending<R>> = captured
            .jobs
            .iter()
            .map(|(ticket, job)| Pending {
                ticket: JobTicket {
                    scheduler: id,
                    ..*ticket
                },
                job: Arc::clone(job),
            })
            .collect();
        let old = core::mem::replace(&mut self.pending, installed);
        self.next_job = captured.next_job;
        self.collected = captured.tick.checked_sub(1);
        Ok(Self::discard(pool, old))
    }

    /// Goes to the start of tick `tick` with no job in flight, as a load of a save taken
    /// there does (a save holds no job): every pending job is discarded as by
    /// [`restore`](Self::restore); job ids go on from this scheduler's own next id. Returns
    /// how many were discarded.
    ///
    /// # Errors
    ///
    /// [`DeadlineError::ForeignPool`] if `pool` is not the scheduler's pool. Nothing changed.
    ///
    /// # Panics
    ///
    /// As [`restore`](Self::restore).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(2);
    /// let mut jobs = DeadlineScheduler::new(3).unwrap();
    /// jobs.request(&pool, 0, (), |()| 1u8).unwrap();
    /// assert_eq!(jobs.restart(&pool, 20), Ok(1));
    /// assert_eq!(jobs.request(&pool, 20, (), |()| 2u8).unwrap().id(), 1);
    /// ```
    pub fn restart(&mut self, pool: &ThreadPool, tick: u64) -> Result<usize, DeadlineError> {
        if !self.pending.is_empty() {
            self.bind(pool)?;
        }
        let old = core::mem::take(&mut self.pending);
        self.collected = tick.checked_sub(1);
        Ok(Self::discard(pool, old))
    }

    /// Lets go of `old`, one job at a time (see [`SharedJob::discard`]); re-raises the first
    /// panic of a result's `Drop` once all are dropped.
    fn discard(pool: &ThreadPool, old: VecDeque<Pending<R>>) -> usize {
        let discarded = old.len();
        let mut first_panic: Option<Payload> = None;
        for pending in old {
            if let Some(payload) = SharedJob::discard(pending.job, pool, true) {
                keep_first(&mut first_panic, payload);
            }
        }
        if let Some(payload) = first_panic {
            panic::resume_unwind(payload);
        }
        discarded
    }
}
