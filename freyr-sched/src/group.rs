//! Task groups: a pending counter, a sleeping-waiter bit and a panic slot.

use core::any::Any;
use core::fmt;
use std::panic;

use crate::payload::{drop_payload, panic_message};
use crate::pool::ThreadPool;
use crate::sync::{self, AtomicUsize, Mutex, Ordering};

/// Set while a waiter sleeps (or is about to) until the count reaches zero.
const SLEEPER: usize = 1 << (usize::BITS - 1);
/// The pending-index count.
const COUNT: usize = SLEEPER - 1;

/// The shared part of a [`TaskGroup`] that queued tasks point to.
pub(crate) struct GroupInner {
    /// ```text
    ///  63   62 ....................................... 0
    /// ┌───┬──────────────────────────────────────────────┐
    /// │ S │ pending: indices queued or running, not done │
    /// └───┴──────────────────────────────────────────────┘
    ///  S = SLEEPER: a waiter announced it will sleep until pending == 0.
    /// ```
    /// Both halves live in one word so that the thread finishing the last
    /// task learns from its own `fetch_sub` whether to wake anyone, and never
    /// has to touch the group again (the waiter may free it the moment the
    /// count reaches zero).
    state: AtomicUsize,
    /// The first panic payload and the number of panics, since the last wait.
    panics: Mutex<PanicSlot>,
}

struct PanicSlot {
    first: Option<Box<dyn Any + Send + 'static>>,
    count: usize,
}

impl GroupInner {
    fn new() -> Self {
        GroupInner {
            state: AtomicUsize::new(0),
            panics: Mutex::new(PanicSlot {
                first: None,
                count: 0,
            }),
        }
    }

    /// Counts `n` more pending indices. Called before the tasks are
    /// published, so no task can finish before it was counted.
    pub(crate) fn add(&self, n: usize) {
        // Relaxed: the tasks are published through a queue (release/acquire),
        // so this increment happens-before any of their decrements.
        let prev = self.state.fetch_add(n, Ordering::Relaxed);
        assert!(
            (prev & COUNT).checked_add(n).is_some_and(|c| c <= COUNT),
            "freyr-sched: task group counter overflow"
        );
    }

    pub(crate) fn is_done(&self) -> bool {
        // MUTANT `is_done_relaxed`: a waiter that sees zero does not acquire
        // the tasks' effects (model 1).
        #[cfg(not(freyr_mutant = "is_done_relaxed"))]
        let order = Ordering::Acquire;
        #[cfg(freyr_mutant = "is_done_relaxed")]
        let order = Ordering::Relaxed;
        self.state.load(order) & COUNT == 0
    }

    /// Marks `n` indices as finished. Returns whether this made the count
    /// zero while a waiter had announced it sleeps (then the caller must wake
    /// the pool's sleepers).
    ///
    /// # Safety
    ///
    /// `this` must point to a live group with at least `n` pending indices
    /// owned by the caller. After the decrement the group may be freed by its
    /// waiter at any moment, so this function touches nothing after it (the
    /// answer comes from the `fetch_sub`'s own return value).
    pub(crate) unsafe fn complete(this: *const Self, n: usize) -> bool {
        // AcqRel: release publishes the task's effects to the waiter that
        // acquires zero; the chain of decrements forms a release sequence.
        // MUTANT `decrement_relaxed`: the decrement publishes nothing, so the
        // waiter that acquires zero may not see the task's effects (model 1).
        #[cfg(not(freyr_mutant = "decrement_relaxed"))]
        let order = Ordering::AcqRel;
        #[cfg(freyr_mutant = "decrement_relaxed")]
        let order = Ordering::Relaxed;
        // SAFETY: the caller owns `n` pending indices, so the group cannot be
        // freed before this decrement (its waiter and its Drop wait for zero).
        let prev = unsafe { (*this).state.fetch_sub(n, order) };
        debug_assert!(
            prev & COUNT >= n,
            "freyr-sched: task group counter underflow"
        );
        prev == SLEEPER | n
    }

    /// Sets the sleeper bit before a waiter sleeps. Returns `false` (and
    /// sets nothing) if the group is already done.
    pub(crate) fn announce_sleeper(&self) -> bool {
        // Acquire: a waiter that learns here that the count is zero returns
        // without another load, so this RMW must acquire the tasks' effects.
        // MUTANT `announce_relaxed` drops that (model 6).
        #[cfg(not(freyr_mutant = "announce_relaxed"))]
        let order = Ordering::AcqRel;
        #[cfg(freyr_mutant = "announce_relaxed")]
        let order = Ordering::Relaxed;
        let prev = self.state.fetch_or(SLEEPER, order);
        if prev & COUNT == 0 {
            self.clear_sleeper();
            return false;
        }
        true
    }

    /// Clears the sleeper bit if the group is done (a later batch then does
    /// not wake the pool for nobody). Never clears it while work is pending:
    /// another waiter may be asleep on it.
    pub(crate) fn clear_sleeper(&self) {
        let _ = self
            .state
            .compare_exchange(SLEEPER, 0, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Stores a task's panic: the first payload is kept, later ones counted.
    ///
    /// A later payload is dropped after the lock is released, with [`drop_payload`]: a payload
    /// whose own `Drop` panics must neither poison the slot nor unwind out of the worker that
    /// is completing the task (its group would never finish).
    pub(crate) fn record_panic(&self, payload: Box<dyn Any + Send + 'static>) {
        let extra = {
            let mut slot = sync::lock(&self.panics);
            slot.count += 1;
            if slot.first.is_none() {
                slot.first = Some(payload);
                None
            } else {
                Some(payload)
            }
        };
        if let Some(payload) = extra {
            drop_payload(payload);
        }
    }

    fn panicked(&self) -> usize {
        sync::lock(&self.panics).count
    }

    /// Takes the panic state, resetting it for the next round.
    fn take_panic(&self) -> Option<GroupPanic> {
        let mut slot = sync::lock(&self.panics);
        let count = core::mem::replace(&mut slot.count, 0);
        slot.first.take().map(|payload| GroupPanic {
            payload,
            others: count - 1,
        })
    }

    /// Blocks without a pool (no helping) until the count is zero.
    fn block_until_done(&self) {
        let mut step = 0u32;
        while !self.is_done() {
            sync::backoff(step);
            step = step.saturating_add(1);
        }
    }
}

/// A set of tasks that can be waited for as one.
///
/// A group has its own pending counter, so waiting for it never waits for
/// another group's work. Tasks are added with
/// [`ThreadPool::submit_indexed`] (or, scoped, through
/// [`ThreadPool::scope`]); [`wait`](Self::wait) runs queued tasks on the
/// calling thread until this group's counter is zero, then re-raises the
/// first panic of its tasks, if any. A group is reusable after every wait.
///
/// Dropping a group whose tasks are still pending blocks (spinning, yielding,
/// then sleeping in short steps) until they finished, so no task can touch
/// a freed group; a panic stored at that point is discarded.
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
    /// `pool` must be the pool the tasks were submitted to.
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
        if !self.inner.is_done() {
            match pool.shared() {
                Some(shared) => shared.wait_until_done(&self.inner),
                None => self.inner.block_until_done(),
            }
        }
        match self.inner.take_panic() {
            Some(panic) => Err(panic),
            None => Ok(()),
        }
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
    }
}

/// The panics of a group, as returned by [`TaskGroup::try_wait`]: the
/// first payload, and how many other tasks panicked.
///
/// It is a [`std::error::Error`]: `Display` prints the first panic's message
/// (the text of a `&str` or `String` payload, `(a panic payload that is not a
/// string)` for any other payload) and how many other tasks panicked. It is
/// `Send` but not `Sync` (the payload is `dyn Any + Send`), so `?` converts it
/// into a `Box<dyn Error>`, not a `Box<dyn Error + Send + Sync>`.
///
/// # Examples
///
/// ```
/// use freyr::ThreadPool;
/// use freyr::sched::TaskGroup;
/// fn fail(_: &(), _: usize) {
///     std::panic::panic_any(7_u32);
/// }
/// let pool = ThreadPool::new(2);
/// let group = TaskGroup::new();
/// // SAFETY: static job; `group` outlives the wait.
/// unsafe { pool.submit_indexed(&group, &(), 2, fail) };
/// let panic = group.try_wait(&pool).unwrap_err();
/// assert_eq!(panic.others(), 1);
/// assert_eq!(
///     panic.to_string(),
///     "a task of the group panicked: (a panic payload that is not a string) \
///      (and 1 other task panicked)"
/// );
/// assert_eq!(panic.into_payload().downcast::<u32>().ok().map(|b| *b), Some(7));
///
/// // As an error value:
/// fn no_route(_: &(), _: usize) {
///     panic!("no route");
/// }
/// fn run(pool: &ThreadPool) -> Result<(), Box<dyn std::error::Error>> {
///     let group = TaskGroup::new();
///     // SAFETY: static job; `group` outlives the wait.
///     unsafe { pool.submit_indexed(&group, &(), 1, no_route) };
///     group.try_wait(pool)?;
///     Ok(())
/// }
/// let error = run(&pool).unwrap_err();
/// assert_eq!(error.to_string(), "a task of the group panicked: no route");
/// ```
pub struct GroupPanic {
    payload: Box<dyn Any + Send + 'static>,
    others: usize,
}

impl GroupPanic {
    /// The first panic's payload.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::sched::TaskGroup;
    /// fn fail(_: &(), _: usize) {
    ///     panic!("x");
    /// }
    /// let pool = ThreadPool::new(1);
    /// let group = TaskGroup::new();
    /// // SAFETY: static job; `group` outlives the wait.
    /// unsafe { pool.submit_indexed(&group, &(), 1, fail) };
    /// let panic = group.try_wait(&pool).unwrap_err();
    /// assert_eq!(panic.payload().downcast_ref::<&str>(), Some(&"x"));
    /// ```
    #[must_use]
    pub fn payload(&self) -> &(dyn Any + Send + 'static) {
        &*self.payload
    }

    /// The first panic's payload, owned (for `resume_unwind`).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::sched::TaskGroup;
    /// fn fail(_: &(), _: usize) {
    ///     panic!("x");
    /// }
    /// let pool = ThreadPool::new(1);
    /// let group = TaskGroup::new();
    /// // SAFETY: static job; `group` outlives the wait.
    /// unsafe { pool.submit_indexed(&group, &(), 1, fail) };
    /// let payload = group.try_wait(&pool).unwrap_err().into_payload();
    /// assert!(payload.is::<&str>());
    /// ```
    #[must_use]
    pub fn into_payload(self) -> Box<dyn Any + Send + 'static> {
        self.payload
    }

    /// How many tasks panicked after the first (their payloads are dropped).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::sched::TaskGroup;
    /// fn fail(_: &(), _: usize) {
    ///     panic!("x");
    /// }
    /// let pool = ThreadPool::new(1);
    /// let group = TaskGroup::new();
    /// // SAFETY: static job; `group` outlives the wait.
    /// unsafe { pool.submit_indexed(&group, &(), 4, fail) };
    /// assert_eq!(group.try_wait(&pool).unwrap_err().others(), 3);
    /// ```
    #[must_use]
    pub fn others(&self) -> usize {
        self.others
    }
}

impl fmt::Display for GroupPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a task of the group panicked: {}",
            panic_message(&*self.payload)
        )?;
        match self.others {
            0 => Ok(()),
            1 => f.write_str(" (and 1 other task panicked)"),
            n => write!(f, " (and {n} other tasks panicked)"),
        }
    }
}

impl std::error::Error for GroupPanic {}

impl fmt::Debug for GroupPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupPanic")
            .field("others", &self.others)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(freyr_loom)))]
mod tests {
    use super::*;

    #[test]
    fn completing_the_last_index_reports_a_sleeping_waiter() {
        let group = GroupInner::new();
        group.add(2);
        assert!(group.announce_sleeper());
        // SAFETY: two indices are pending and owned by this test.
        assert!(!unsafe { GroupInner::complete(&group, 1) });
        // SAFETY: one index is pending.
        assert!(unsafe { GroupInner::complete(&group, 1) });
        assert!(group.is_done());
        group.clear_sleeper();
        assert_eq!(group.state.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn completing_without_a_sleeper_reports_nothing() {
        let group = GroupInner::new();
        group.add(3);
        // SAFETY: three indices are pending.
        assert!(!unsafe { GroupInner::complete(&group, 3) });
        assert!(group.is_done());
    }

    #[test]
    fn announcing_on_a_done_group_sets_no_bit() {
        let group = GroupInner::new();
        assert!(!group.announce_sleeper());
        assert_eq!(group.state.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn clearing_never_drops_the_bit_while_work_is_pending() {
        let group = GroupInner::new();
        group.add(1);
        assert!(group.announce_sleeper());
        group.clear_sleeper();
        assert_eq!(group.state.load(Ordering::Relaxed), SLEEPER | 1);
    }

    #[test]
    fn the_first_panic_is_kept_and_the_others_counted() {
        let group = GroupInner::new();
        group.record_panic(Box::new("first"));
        group.record_panic(Box::new("second"));
        group.record_panic(Box::new("third"));
        assert_eq!(group.panicked(), 3);
        let panic = group.take_panic().expect("a panic was recorded");
        assert_eq!(panic.others(), 2);
        assert_eq!(panic.payload().downcast_ref::<&str>(), Some(&"first"));
        assert_eq!(group.panicked(), 0);
        assert!(group.take_panic().is_none());
    }

    #[test]
    fn group_panic_is_an_error_that_prints_the_first_message() {
        fn as_error(panic: GroupPanic) -> Box<dyn std::error::Error + Send> {
            Box::new(panic)
        }
        let group = GroupInner::new();
        group.record_panic(Box::new("first"));
        let one = as_error(group.take_panic().expect("a panic was recorded"));
        assert_eq!(one.to_string(), "a task of the group panicked: first");
        group.record_panic(Box::new(String::from("owned 7")));
        group.record_panic(Box::new(3_u8));
        group.record_panic(Box::new("third"));
        let three = as_error(group.take_panic().expect("a panic was recorded"));
        assert_eq!(
            three.to_string(),
            "a task of the group panicked: owned 7 (and 2 other tasks panicked)"
        );
        group.record_panic(Box::new(3_u8));
        group.record_panic(Box::new("second"));
        assert_eq!(
            group
                .take_panic()
                .expect("a panic was recorded")
                .to_string(),
            "a task of the group panicked: (a panic payload that is not a string) \
             (and 1 other task panicked)"
        );
    }

    #[test]
    #[should_panic(expected = "task group counter overflow")]
    fn counter_overflow_is_caught() {
        let group = GroupInner::new();
        group.add(COUNT);
        group.add(1);
    }
}
