//! Deadline jobs' stall telemetry.

use std::time::Duration;

/// Stall telemetry of one [`collect`](crate::DeadlineScheduler::collect) or, summed,
/// of a scheduler's whole life ([`DeadlineScheduler::stats`](crate::DeadlineScheduler::stats)).
///
/// A *late* job is one that was not finished when its due tick was
/// collected; the collecting thread then helped the pool until it was.
/// `stall` is the wall time spent so; `helped_tasks` counts the pool tasks
/// the collecting thread ran meanwhile (read from the pool's counters for
/// threads that are not workers, so it also includes tasks other such
/// threads ran at the same time).
///
/// # Examples
///
/// ```
/// let stats = freyr::time::deadline::DeadlineStats::default();
/// assert_eq!((stats.requested, stats.applied, stats.late_jobs), (0, 0, 0));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeadlineStats {
    /// Jobs requested.
    pub requested: u64,
    /// Jobs delivered by `collect` (panicked ones included).
    pub applied: u64,
    /// Of those, jobs whose result was a panic.
    pub panicked: u64,
    /// Jobs not finished at their due tick.
    pub late_jobs: u64,
    /// Wall time spent waiting for late jobs.
    pub stall: Duration,
    /// The longest single stall.
    pub max_stall: Duration,
    /// Pool tasks run by the collecting thread while it waited.
    pub helped_tasks: u64,
}

impl DeadlineStats {
    /// Adds `other`'s counts and times to these (the longest stall is the
    /// longer of the two): sums the telemetry of several collects or
    /// schedulers.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr::time::deadline::DeadlineStats;
    /// let one = DeadlineStats { late_jobs: 1, stall: Duration::from_millis(3), max_stall: Duration::from_millis(3), ..Default::default() };
    /// let mut total = DeadlineStats::default();
    /// total.add(&one);
    /// total.add(&one);
    /// assert_eq!(total.late_jobs, 2);
    /// assert_eq!(total.stall, Duration::from_millis(6));
    /// assert_eq!(total.max_stall, Duration::from_millis(3));
    /// ```
    pub fn add(&mut self, other: &DeadlineStats) {
        self.requested += other.requested;
        self.applied += other.applied;
        self.panicked += other.panicked;
        self.late_jobs += other.late_jobs;
        self.stall += other.stall;
        self.max_stall = self.max_stall.max(other.max_stall);
        self.helped_tasks += other.helped_tasks;
    }
}
