//! Waiting for a [`TaskGroup`]: the one part of a group that needs its pool.
//! The pool submits into groups and waiting helps the pool, so this lives
//! above both `group.rs` and `pool.rs`, and imports point one way.

use std::panic;

use crate::group::TaskGroup;
use crate::group_inner::GroupPanic;
use crate::pool::ThreadPool;

impl TaskGroup {
    /// Runs queued tasks of `pool` on the calling thread until this group's
    /// counter reaches zero; then, if any of its tasks panicked, resets the
    /// panic state (the group is reusable) and re-raises the **original
    /// payload** of the first panic with [`std::panic::resume_unwind`]. The
    /// number of further panics is lost on this path; use
    /// [`try_wait`](Self::try_wait) to observe it.
    ///
    /// The helping thread may run tasks of other groups too (it runs what it
    /// finds); it returns as soon as *this* group is done, after finishing the
    /// task in hand. With nothing to run it spins briefly, then sleeps until
    /// new work is queued or this group completes.
    ///
    /// `pool` should be the pool the tasks were submitted to: that is the wait that helps run
    /// them and sleeps until the last one ends. Waiting through another pool (or for tasks
    /// submitted to several pools) still returns when the group is done, but cannot help and
    /// polls instead of sleeping (a yield, then every 50 µs): the thread finishing the last task
    /// wakes its own pool's sleepers, not another's.
    ///
    /// # Panics
    ///
    /// Re-raises the first panic of this group's tasks since the last wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::sched::TaskGroup;
    /// fn boom(_: &(), i: usize) {
    ///     if i == 3 {
    ///         panic!("task 3 failed");
    ///     }
    /// }
    /// let pool = ThreadPool::new(2);
    /// let group = TaskGroup::new();
    /// // SAFETY: the job is a static unit value; `group` outlives the wait.
    /// unsafe { pool.submit_indexed(&group, &(), 10, boom) };
    /// let err = std::panic::catch_unwind(|| group.wait(&pool)).unwrap_err();
    /// assert_eq!(err.downcast_ref::<&str>(), Some(&"task 3 failed"));
    /// assert!(group.is_done());
    /// assert_eq!(group.panicked(), 0); // reset: the group is reusable
    /// ```
    pub fn wait(&self, pool: &ThreadPool) {
        if let Err(panic) = self.try_wait(pool) {
            panic::resume_unwind(panic.into_payload());
        }
    }

    /// Like [`wait`](Self::wait), but hands the panic back instead of
    /// unwinding: `Err` carries the first payload and how many other tasks
    /// panicked. The group is reset either way.
    ///
    /// # Errors
    ///
    /// [`GroupPanic`] if at least one task of the group panicked since the
    /// last wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::sched::TaskGroup;
    /// fn boom(_: &(), i: usize) {
    ///     if i % 2 == 0 {
    ///         panic!("even");
    ///     }
    /// }
    /// let pool = ThreadPool::new(2);
    /// let group = TaskGroup::new();
    /// // SAFETY: static job; `group` outlives the wait.
    /// unsafe { pool.submit_indexed(&group, &(), 6, boom) };
    /// let panic = group.try_wait(&pool).unwrap_err();
    /// assert_eq!(panic.others(), 2);
    /// assert_eq!(panic.payload().downcast_ref::<&str>(), Some(&"even"));
    /// assert!(group.try_wait(&pool).is_ok());
    /// ```
    pub fn try_wait(&self, pool: &ThreadPool) -> Result<(), GroupPanic> {
        pool.wait_group(self)
    }
}
