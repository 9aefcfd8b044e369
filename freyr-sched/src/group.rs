//! Task groups: the public handle around a group's shared counter
//! ([`GroupInner`]). Waiting for a group needs its pool, so `wait` and
//! `try_wait` live above the pool, in `group_wait.rs`.

use core::fmt;

use crate::group_inner::GroupInner;

/// A set of tasks that can be waited for as one.
///
/// A group has its own pending counter, so waiting for it never waits for
/// another group's work. Tasks are added with
/// [`ThreadPool::submit_indexed`](crate::ThreadPool::submit_indexed) (or, scoped, through
/// [`ThreadPool::scope`](crate::ThreadPool::scope)); [`wait`](Self::wait) runs queued tasks on the
/// calling thread until this group's counter is zero, then re-raises the
/// first panic of its tasks, if any. A group is reusable after every wait.
///
/// Dropping a group whose tasks are still pending blocks (spinning, yielding,
/// then sleeping in short steps) until they finished, so no task can touch
/// a freed group; a panic stored at that point is discarded (with
/// [`drop_payload`](crate::drop_payload): nothing unwinds out of the drop).
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use freyr::ThreadPool;
/// use freyr::sched::TaskGroup;
///
/// fn add(sum: &AtomicUsize, i: usize) {
///     sum.fetch_add(i, Ordering::Relaxed);
/// }
/// let pool = ThreadPool::new(3);
/// let group = TaskGroup::new();
/// let sum = AtomicUsize::new(0);
/// // SAFETY: `sum` and `group` outlive the wait below.
/// unsafe { pool.submit_indexed(&group, &sum, 100, add) };
/// group.wait(&pool);
/// assert!(group.is_done());
/// assert_eq!(sum.load(Ordering::Relaxed), 4950);
/// ```
pub struct TaskGroup {
    inner: GroupInner,
}

impl TaskGroup {
    /// Creates an empty group.
    ///
    /// # Examples
    ///
    /// ```
    /// let group = freyr::sched::TaskGroup::new();
    /// assert!(group.is_done());
    /// assert_eq!(group.panicked(), 0);
    /// ```
    #[must_use]
    pub fn new() -> Self {
        TaskGroup {
            inner: GroupInner::new(),
        }
    }

    pub(crate) fn inner(&self) -> &GroupInner {
        &self.inner
    }

    /// Whether every task submitted to this group has finished. `true`
    /// (with an `Acquire` load) means the tasks' effects are visible.
    ///
    /// # Examples
    ///
    /// ```
    /// let group = freyr::sched::TaskGroup::new();
    /// assert!(group.is_done());
    /// ```
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.inner.is_done()
    }

    /// The number of this group's tasks that panicked since the last wait
    /// (the first one plus the others).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::sched::TaskGroup;
    /// fn boom(_: &(), _: usize) {
    ///     panic!("boom");
    /// }
    /// let pool = ThreadPool::new(1); // inline: done when submit returns
    /// let group = TaskGroup::new();
    /// // SAFETY: static job; `group` outlives the wait.
    /// unsafe { pool.submit_indexed(&group, &(), 3, boom) };
    /// assert_eq!(group.panicked(), 3);
    /// assert!(group.try_wait(&pool).is_err());
    /// assert_eq!(group.panicked(), 0);
    /// ```
    #[must_use]
    pub fn panicked(&self) -> usize {
        self.inner.panicked()
    }
}

impl Default for TaskGroup {
    fn default() -> Self {
        TaskGroup::new()
    }
}

impl fmt::Debug for TaskGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskGroup")
            .field("done", &self.is_done())
            .field("panicked", &self.panicked())
            .finish()
    }
}

impl Drop for TaskGroup {
    fn drop(&mut self) {
        // Queued tasks hold a pointer to `inner`: never free it under them.
        self.inner.block_until_done();
        // A panic nobody waited for is discarded without unwinding out of
        // this drop: a payload whose own `Drop` panics would otherwise escape
        // (and abort the process if this drop runs during an unwind).
        if let Some(panic) = self.inner.take_panic() {
            crate::drop_payload(panic.into_payload());
        }
    }
}
