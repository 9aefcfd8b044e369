//! What a deadline job is called by and delivered as: its due tick, its ticket, its status
//! and its delivery.

use std::time::Duration;

use crate::pool_job::JobPanic;

/// The tick a job requested at `requested_at` is applied on: `requested_at +
/// latency`, or `None` if that overflows `u64`.
///
/// # Examples
///
/// ```
/// use freyr::time::deadline::due_tick;
/// assert_eq!(due_tick(10, 3), Some(13));
/// assert_eq!(due_tick(u64::MAX - 1, 2), None);
/// ```
#[must_use]
pub const fn due_tick(requested_at: u64, latency: u64) -> Option<u64> {
    requested_at.checked_add(latency)
}

/// Names a requested job: its scheduler, its id (request order), the tick it
/// was requested on and the tick it is applied on.
///
/// # Examples
///
/// ```
/// use freyr::ThreadPool;
/// use freyr::time::deadline::DeadlineScheduler;
/// let pool = ThreadPool::new(1);
/// let mut jobs = DeadlineScheduler::new(3).unwrap();
/// let ticket = jobs.request(&pool, 5, (), |()| ()).unwrap();
/// assert_eq!((ticket.id(), ticket.requested_at(), ticket.due()), (0, 5, 8));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JobTicket {
    pub(super) scheduler: u64,
    pub(super) id: u64,
    pub(super) requested_at: u64,
    pub(super) due: u64,
}

impl JobTicket {
    /// The job's id: 0, 1, 2, … in request order, per scheduler.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(1);
    /// let mut jobs = DeadlineScheduler::new(1).unwrap();
    /// jobs.request(&pool, 0, (), |()| ()).unwrap();
    /// assert_eq!(jobs.request(&pool, 0, (), |()| ()).unwrap().id(), 1);
    /// ```
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The tick the job was requested on (T).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(1);
    /// let mut jobs = DeadlineScheduler::new(1).unwrap();
    /// assert_eq!(jobs.request(&pool, 4, (), |()| ()).unwrap().requested_at(), 4);
    /// ```
    #[must_use]
    pub fn requested_at(&self) -> u64 {
        self.requested_at
    }

    /// The tick the job is applied on (T + K).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(1);
    /// let mut jobs = DeadlineScheduler::new(2).unwrap();
    /// assert_eq!(jobs.request(&pool, 4, (), |()| ()).unwrap().due(), 6);
    /// ```
    #[must_use]
    pub fn due(&self) -> u64 {
        self.due
    }

    /// The id of the scheduler that issued it.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(1);
    /// let mut jobs = DeadlineScheduler::new(2).unwrap();
    /// assert_eq!(jobs.request(&pool, 0, (), |()| ()).unwrap().scheduler(), jobs.id());
    /// ```
    #[must_use]
    pub fn scheduler(&self) -> u64 {
        self.scheduler
    }
}

/// Where a requested job stands.
///
/// # Examples
///
/// ```
/// use freyr::ThreadPool;
/// use freyr::time::deadline::{DeadlineScheduler, JobStatus};
/// let pool = ThreadPool::new(1); // inline: the job runs at request time
/// let mut jobs = DeadlineScheduler::new(1).unwrap();
/// let ticket = jobs.request(&pool, 0, 2, |x: u32| x * 2).unwrap();
/// assert_eq!(jobs.status(&ticket), Ok(JobStatus::Finished));
/// jobs.collect(&pool, 1, |_| {}).unwrap();
/// assert_eq!(jobs.status(&ticket), Ok(JobStatus::Applied));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStatus {
    /// Queued or running on the pool.
    InFlight,
    /// Done, waiting for its due tick.
    Finished,
    /// Delivered by `collect` (or discarded by `settle`).
    Applied,
}

/// A job delivered by [`DeadlineScheduler::collect`](crate::DeadlineScheduler::collect) at its due tick.
///
/// # Examples
///
/// ```
/// use freyr::ThreadPool;
/// use freyr::time::deadline::DeadlineScheduler;
/// let pool = ThreadPool::new(2);
/// let mut jobs = DeadlineScheduler::new(1).unwrap();
/// jobs.request(&pool, 0, vec![3, 1, 2], |mut v: Vec<i32>| { v.sort(); v }).unwrap();
/// jobs.collect(&pool, 1, |done| {
///     assert_eq!(done.ticket.due(), 1);
///     assert_eq!(done.result, Ok(vec![1, 2, 3]));
/// })
/// .unwrap();
/// ```
#[derive(Debug)]
pub struct Delivered<R> {
    /// The job's ticket.
    pub ticket: JobTicket,
    /// Its result, or its panic.
    pub result: Result<R, JobPanic>,
    /// How long the collecting thread stalled for it (zero if it was done).
    pub stall: Duration,
}
