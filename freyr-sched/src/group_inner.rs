//! The shared part of a task group: the pending counter with its
//! sleeping-waiter bit (the counter protocol of `PROTOCOL.md`, "Groups"), the
//! panic slot, and [`GroupPanic`], what a wait hands back. Queued tasks point
//! here; the pool, the tasks and [`TaskGroup`](crate::TaskGroup) build on it.

use core::any::Any;
use core::fmt;

use freyr_sync::{self as sync, AtomicUsize, Mutex, Ordering};

use crate::payload::{drop_payload, panic_message};

/// Set while a waiter sleeps (or is about to) until the count reaches zero.
const SLEEPER: usize = 1 << (usize::BITS - 1);
/// The pending-index count.
const COUNT: usize = SLEEPER - 1;
/// Adds of more indices than this read the count first and refuse an overflow before it
/// happens (see [`GroupInner::add`]); every add does on a target narrower than 64 bits, where
/// small adds could reach `COUNT` in a few million submissions.
#[cfg(not(freyr_loom))]
const CHECKED_FROM: usize = if usize::BITS >= 64 { 1 << 20 } else { 0 };

/// The shared part of a [`TaskGroup`](crate::TaskGroup) that queued tasks point to.
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
    /// Which pool the tasks were submitted to: see [`GroupInner::note_pool`]. Not part of the
    /// protocol (a relaxed word that only picks how a wait waits), so the loom build leaves it
    /// out.
    #[cfg(not(freyr_loom))]
    pool: core::sync::atomic::AtomicUsize,
}

/// [`GroupInner::pool`] of a group whose tasks went to more than one pool.
#[cfg(not(freyr_loom))]
const MANY_POOLS: usize = usize::MAX;

struct PanicSlot {
    first: Option<Box<dyn Any + Send + 'static>>,
    count: usize,
}

impl GroupInner {
    pub(crate) fn new() -> Self {
        GroupInner {
            state: AtomicUsize::new(0),
            panics: Mutex::new(PanicSlot {
                first: None,
                count: 0,
            }),
            #[cfg(not(freyr_loom))]
            pool: core::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Records that tasks are being submitted to the pool identified by `pool` (nonzero; the
    /// address of its shared state). A wait helps its own pool and sleeps on that pool's
    /// wake-ups, which the thread finishing the group's last task sends to the pool *it* belongs
    /// to; a waiter on another pool would sleep on. [`waits_on`](Self::waits_on) tells the wait
    /// when that could happen, and it then waits without sleeping on its pool. One relaxed load
    /// of a word beside the counter the submit is about to increment: the store happens only on
    /// a group's first submit, or when it changes pools.
    #[cfg(not(freyr_loom))]
    pub(crate) fn note_pool(&self, pool: usize) {
        use core::sync::atomic::Ordering::Relaxed;
        let seen = self.pool.load(Relaxed);
        if seen == pool || seen == MANY_POOLS {
            return;
        }
        if seen != 0
            || self
                .pool
                .compare_exchange(0, pool, Relaxed, Relaxed)
                .is_err()
        {
            self.pool.store(MANY_POOLS, Relaxed);
        }
    }

    /// Whether waiting through the pool identified by `pool` is sure to be woken when this
    /// group completes: every task was submitted to that pool (or none was). Called by the
    /// waiting thread, which submitted the tasks or was handed the group after (a submit by
    /// another thread during the wait is seen only if it came first).
    #[cfg(not(freyr_loom))]
    pub(crate) fn waits_on(&self, pool: usize) -> bool {
        let seen = self.pool.load(core::sync::atomic::Ordering::Relaxed);
        seen == 0 || seen == pool
    }

    /// Counts `n` more pending indices. Called before the tasks are
    /// published, so no task can finish before it was counted.
    pub(crate) fn add(&self, n: usize) {
        // A large add is refused *before* it happens: one that overflows
        // `COUNT` carries into the `SLEEPER` bit or wraps, and a wrapped count
        // can read zero while tasks are pending (a scope would return under
        // its running tasks). The read is a second trip for the counter's
        // line, which workers are decrementing (it cost the 1,954-task
        // dispatch 12% when every add made it), so adds up to `CHECKED_FROM`
        // skip it: on a 64-bit target, pending indices near `COUNT` built of
        // such adds take 2^43 submissions, and the check after the add still
        // reports them. Not part of the protocol: a relaxed read that only
        // decides whether to panic (so the loom models, whose counts are
        // small, leave it out rather than explore its interleavings).
        #[cfg(not(freyr_loom))]
        if n > CHECKED_FROM {
            let pending = self.state.load(Ordering::Relaxed) & COUNT;
            assert!(
                pending.checked_add(n).is_some_and(|c| c <= COUNT),
                "freyr-sched: task group counter overflow ({pending} pending + {n} more indices)"
            );
        }
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
        let order = Ordering::Acquire;
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
        let order = Ordering::AcqRel;
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
        let order = Ordering::AcqRel;
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

    pub(crate) fn panicked(&self) -> usize {
        sync::lock(&self.panics).count
    }

    /// Takes the panic state, resetting it for the next round.
    pub(crate) fn take_panic(&self) -> Option<GroupPanic> {
        let mut slot = sync::lock(&self.panics);
        let count = core::mem::replace(&mut slot.count, 0);
        slot.first.take().map(|payload| GroupPanic {
            payload,
            others: count - 1,
        })
    }

    /// Blocks without a pool (no helping) until the count is zero.
    pub(crate) fn block_until_done(&self) {
        let mut step = 0u32;
        while !self.is_done() {
            sync::backoff(step);
            step = step.saturating_add(1);
        }
    }
}

/// The panics of a group, as returned by [`TaskGroup::try_wait`](crate::TaskGroup::try_wait): the
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
    #[should_panic(expected = "task group counter overflow")]
    fn counter_overflow_is_caught() {
        let group = GroupInner::new();
        group.add(COUNT);
        group.add(1);
    }
}
