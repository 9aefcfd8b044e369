//! Scoped task groups: tasks that borrow from the caller's stack.

use core::cell::UnsafeCell;
use core::fmt;
use core::marker::PhantomData;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicUsize, Ordering};
use std::panic::{self, AssertUnwindSafe};

use crate::group::TaskGroup;
use crate::job::run_body_batch;
use crate::pool::ThreadPool;
use crate::task::{RunIndex, Task};

/// A scope opened by [`ThreadPool::scope`]: tasks spawned into it may borrow
/// anything that outlives the scope (`'scope`), and may spawn more tasks into
/// it; `scope` returns only after all of them ran.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// let pool = freyr::ThreadPool::new(3);
/// let data = vec![1, 2, 3, 4];
/// let sum = AtomicUsize::new(0);
/// pool.scope(|s| {
///     for x in &data {
///         let sum = &sum;
///         s.spawn(move |s| {
///             sum.fetch_add(*x, Ordering::Relaxed);
///             // Tasks may spawn more tasks into the same scope.
///             s.spawn(move |_| {
///                 sum.fetch_add(10 * x, Ordering::Relaxed);
///             });
///         });
///     }
/// });
/// assert_eq!(sum.load(Ordering::Relaxed), 110);
/// ```
pub struct Scope<'scope, 'env: 'scope> {
    pool: &'scope ThreadPool,
    group: TaskGroup,
    /// Room for the first [`INLINE_SPAWNS`] spawned closures small enough to
    /// fit, so a scope of a few small spawns (a fork-join) allocates nothing.
    inline: [InlineSlot; INLINE_SPAWNS],
    /// Slots handed out so far (it may count past the last slot: a spawn
    /// that finds none left boxes its closure).
    inline_taken: AtomicUsize,
    /// Invariant in `'scope` and `'env`, like `std::thread::Scope`.
    scope: PhantomData<&'scope mut &'scope ()>,
    env: PhantomData<&'env mut &'env ()>,
}

// SAFETY: the only non-`Sync`/`Send` parts are the inline slots. Each slot
// is handed to one spawn (`inline_taken`'s fetch-add gives every index to
// one caller), which writes a `Send` closure into it before queueing the
// task that reads it: the queue's release/acquire hand-off orders the write
// before the read, and that task is the slot's only reader (it runs once).
// Nothing else touches a slot, so sharing or moving the scope between
// threads races on none.
unsafe impl Sync for Scope<'_, '_> {}
// SAFETY: as for `Sync`; a scope is moved only while no task borrows it,
// when its slots hold nothing live (every closure written was moved out by
// its task, which `ThreadPool::scope` waited for).
unsafe impl Send for Scope<'_, '_> {}

/// How many spawns per scope may keep their closure inside the scope.
const INLINE_SPAWNS: usize = 2;

/// Bytes of one inline slot: a closure of up to five pointer-sized
/// captures, with its scope pointer.
const INLINE_BYTES: usize = 48;

/// Storage for one spawned closure inside its scope.
#[repr(C, align(16))]
struct InlineSlot(UnsafeCell<MaybeUninit<[u8; INLINE_BYTES]>>);

impl InlineSlot {
    const fn new() -> Self {
        InlineSlot(UnsafeCell::new(MaybeUninit::uninit()))
    }
}

/// A spawned closure and the scope it runs in, stored together (in a scope
/// slot or a box) so a queued task needs one pointer.
struct Spawned<'scope, 'env, F> {
    scope: *const Scope<'scope, 'env>,
    f: F,
}

impl<F> Spawned<'_, '_, F> {
    /// Whether it fits an inline slot (size and alignment).
    const FITS_INLINE: bool =
        size_of::<Self>() <= INLINE_BYTES && align_of::<Self>() <= align_of::<InlineSlot>();
}

impl ThreadPool {
    /// Opens a scope, calls `f` with it, and returns `f`'s result after every
    /// task spawned into the scope (including tasks spawned by tasks) ran.
    /// The calling thread helps run queued tasks while it waits.
    ///
    /// # Panics
    ///
    /// If `f` panics, its panic is re-raised after all tasks finished;
    /// otherwise if a task panicked, the first task panic (original payload)
    /// is re-raised. Other task panics are discarded. The pool stays usable.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = freyr::ThreadPool::new(2);
    /// let mut halves = [0u64; 2];
    /// let (left, right) = halves.split_at_mut(1);
    /// let n = pool.scope(|s| {
    ///     s.spawn(|_| left[0] = (1..=50).sum());
    ///     s.spawn(|_| right[0] = (51..=100).sum());
    ///     7
    /// });
    /// assert_eq!(n, 7);
    /// assert_eq!(halves[0] + halves[1], 5050);
    /// ```
    ///
    /// ```
    /// let pool = freyr::ThreadPool::new(2);
    /// let caught = std::panic::catch_unwind(|| {
    ///     pool.scope(|s| {
    ///         s.spawn(|_| panic!("task failed"));
    ///     })
    /// });
    /// assert_eq!(caught.unwrap_err().downcast_ref::<&str>(), Some(&"task failed"));
    /// pool.scope(|s| s.spawn(|_| {})); // still usable
    /// ```
    pub fn scope<'env, R>(
        &self,
        f: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
    ) -> R {
        let scope = Scope {
            pool: self,
            group: TaskGroup::new(),
            inline: [const { InlineSlot::new() }; INLINE_SPAWNS],
            inline_taken: AtomicUsize::new(0),
            scope: PhantomData,
            env: PhantomData,
        };
        let result = panic::catch_unwind(AssertUnwindSafe(|| f(&scope)));
        let tasks = scope.group.try_wait(self);
        match (result, tasks) {
            (Err(payload), tasks) => {
                // Dropped now, not while unwinding: a payload whose `Drop` panics would abort.
                if let Err(panic) = tasks {
                    crate::drop_payload(panic.into_payload());
                }
                panic::resume_unwind(payload)
            }
            (Ok(_), Err(panic)) => panic::resume_unwind(panic.into_payload()),
            (Ok(value), Ok(())) => value,
        }
    }
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// Queues `f` to run on the pool (inline at once for a pool of one). `f`
    /// receives the scope, so it can spawn more tasks into it. The first two
    /// spawns of a scope whose closures capture at most five words or so are
    /// kept inside the scope; every other call allocates once (the boxed
    /// closure). Use [`spawn_indexed`](Self::spawn_indexed) for
    /// allocation-free batches.
    ///
    /// A panic in `f` is caught and re-raised by [`ThreadPool::scope`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = freyr::ThreadPool::new(2);
    /// let count = AtomicUsize::new(0);
    /// pool.scope(|s| {
    ///     for _ in 0..10 {
    ///         s.spawn(|_| {
    ///             count.fetch_add(1, Ordering::Relaxed);
    ///         });
    ///     }
    /// });
    /// assert_eq!(count.load(Ordering::Relaxed), 10);
    /// ```
    pub fn spawn<F>(&'scope self, f: F)
    where
        F: FnOnce(&'scope Scope<'scope, 'env>) + Send + 'scope,
    {
        let Some(shared) = self.pool.shared() else {
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| f(self)));
            if let Err(payload) = outcome {
                self.group.inner().record_panic(payload);
            }
            self.pool.current_counters().add_run(1);
            return;
        };
        let spawned = Spawned { scope: self, f };
        let slot = if Spawned::<F>::FITS_INLINE {
            // Relaxed: the claim only has to be unique; the task that reads the
            // slot is ordered after the write by the queue.
            self.inline
                .get(self.inline_taken.fetch_add(1, Ordering::Relaxed))
        } else {
            None
        };
        let (job, body): (*const (), RunIndex) = match slot {
            Some(slot) => {
                let job = slot.0.get().cast::<Spawned<'scope, 'env, F>>();
                // SAFETY: the slot was handed to this call alone (the fetch-add
                // above) and is never written again; it is large and aligned
                // enough for the closure (`FITS_INLINE`), and the scope that
                // holds it outlives the task (`ThreadPool::scope` waits).
                unsafe { job.write(spawned) };
                (job.cast_const().cast(), run_inline::<'scope, 'env, F>)
            }
            None => (
                Box::into_raw(Box::new(spawned)).cast_const().cast(),
                run_boxed::<'scope, 'env, F>,
            ),
        };
        let task = Task {
            run: run_body_batch,
            job,
            body: Some(body),
            start: 0,
            end: 1,
            group: self.group.inner(),
        };
        // SAFETY: `job` holds the closure (in a slot of this scope or a fresh
        // Box) and `body` is the trampoline that moves it out (and frees the
        // box) exactly once, the task having exactly one index; the closure
        // is `Send`; the scope (and with it the group and the slot) outlives
        // the task because `ThreadPool::scope` waits for the group before
        // returning, on every path.
        unsafe { shared.submit_one(self.group.inner(), task) };
    }

    /// Queues `count` allocation-free indexed tasks sharing `job`; task `i`
    /// calls `func(job, i)`. The safe, scoped form of
    /// [`ThreadPool::submit_indexed`]: the borrow of `job` outlives the scope.
    ///
    /// # Panics
    ///
    /// If the scope's pending indices would exceed `usize::MAX / 2` (only a
    /// `count` no pool could ever run gets there); nothing is queued then.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = freyr::ThreadPool::new(3);
    /// let tally: Vec<AtomicUsize> = (0..100).map(|_| AtomicUsize::new(0)).collect();
    /// pool.scope(|s| {
    ///     s.spawn_indexed(&tally, tally.len(), |tally, i| {
    ///         tally[i].fetch_add(1, Ordering::Relaxed);
    ///     });
    /// });
    /// assert!(tally.iter().all(|t| t.load(Ordering::Relaxed) == 1));
    /// ```
    pub fn spawn_indexed<J: Sync>(&self, job: &'scope J, count: usize, func: fn(&J, usize)) {
        // SAFETY: `job` is borrowed for `'scope`, and the group is the scope's,
        // which `ThreadPool::scope` waits for before `'scope` ends; the group
        // lives inside the scope, which does not move while borrowed.
        unsafe { self.pool.submit_indexed(&self.group, job, count, func) };
    }

    /// The pool this scope runs on.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = freyr::ThreadPool::new(2);
    /// pool.scope(|s| assert_eq!(s.pool().workers(), 2));
    /// ```
    #[must_use]
    pub fn pool(&self) -> &'scope ThreadPool {
        self.pool
    }
}

/// Runs a boxed scoped closure: a trampoline behind [`Scope::spawn`].
///
/// # Safety
///
/// `job` must come from `Box::into_raw(Box<Spawned<'scope, 'env, F>>)` in
/// `Scope::spawn`, and this must be its only call; the scope must be alive.
unsafe fn run_boxed<'scope, 'env: 'scope, F>(job: *const (), _index: usize)
where
    F: FnOnce(&'scope Scope<'scope, 'env>) + Send + 'scope,
{
    // SAFETY: per the contract, `job` is the unique owner of the box.
    let spawned = unsafe { Box::from_raw(job.cast_mut().cast::<Spawned<'scope, 'env, F>>()) };
    let Spawned { scope, f } = *spawned;
    // SAFETY: the scope outlives its tasks (`ThreadPool::scope` waits).
    f(unsafe { &*scope });
}

/// Runs a scoped closure kept in its scope's inline slot: a trampoline
/// behind [`Scope::spawn`].
///
/// # Safety
///
/// `job` must point to the slot `Scope::spawn` wrote a
/// `Spawned<'scope, 'env, F>` into, and this must be its only call; the scope
/// must be alive.
unsafe fn run_inline<'scope, 'env: 'scope, F>(job: *const (), _index: usize)
where
    F: FnOnce(&'scope Scope<'scope, 'env>) + Send + 'scope,
{
    // SAFETY: per the contract, the slot holds an initialised closure that
    // nothing else reads or writes; moving it out leaves the slot unused for
    // good (it is never handed out again).
    let Spawned { scope, f } = unsafe { job.cast::<Spawned<'scope, 'env, F>>().read() };
    // SAFETY: the scope outlives its tasks (`ThreadPool::scope` waits).
    f(unsafe { &*scope });
}

impl fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("workers", &self.pool.workers())
            .field("group", &self.group)
            .finish()
    }
}

#[cfg(all(test, not(freyr_loom)))]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::ThreadPool;

    fn fan_out<'scope>(
        s: &'scope super::Scope<'scope, '_>,
        depth: u32,
        leaves: &'scope AtomicUsize,
    ) {
        if depth == 0 {
            leaves.fetch_add(1, Ordering::Relaxed);
            return;
        }
        s.spawn(move |s| fan_out(s, depth - 1, leaves));
        s.spawn(move |s| fan_out(s, depth - 1, leaves));
    }

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn scopes_are_send_and_sync() {
        assert_send_sync::<super::Scope<'_, '_>>();
    }

    #[test]
    fn nested_spawns_are_all_waited_for() {
        // Under Miri a tree of 64 leaves (127 spawns a pool) takes the same paths.
        let depth = if cfg!(miri) { 6 } else { 8 };
        for workers in [1, 2, 4] {
            let pool = ThreadPool::new(workers);
            let leaves = AtomicUsize::new(0);
            pool.scope(|s| fan_out(s, depth, &leaves));
            assert_eq!(
                leaves.load(Ordering::Relaxed),
                1 << depth,
                "workers = {workers}"
            );
        }
    }

    #[test]
    fn a_scope_inside_a_task_helps_instead_of_deadlocking() {
        let pool = ThreadPool::new(2);
        let inner = AtomicUsize::new(0);
        pool.scope(|s| {
            for _ in 0..4 {
                s.spawn(|_| {
                    pool.scope(|t| {
                        for _ in 0..4 {
                            t.spawn(|_| {
                                inner.fetch_add(1, Ordering::Relaxed);
                            });
                        }
                    });
                });
            }
        });
        assert_eq!(inner.load(Ordering::Relaxed), 16);
    }

    /// Counts its drops.
    struct Tally<'a>(&'a AtomicUsize);

    impl Drop for Tally<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A value whose alignment no inline slot has.
    #[repr(align(64))]
    struct Aligned(u8);

    #[test]
    fn closures_kept_in_the_scope_or_boxed_each_run_and_drop_once() {
        const { assert!(super::Spawned::<[usize; 2]>::FITS_INLINE) };
        const { assert!(!super::Spawned::<[usize; 16]>::FITS_INLINE) };
        const { assert!(!super::Spawned::<Aligned>::FITS_INLINE) };
        for workers in [1, 2, 4] {
            let pool = ThreadPool::new(workers);
            let (runs, drops) = (AtomicUsize::new(0), AtomicUsize::new(0));
            let (runs, drops) = (&runs, &drops);
            // Small closures (more than there are slots), large ones and over-aligned ones,
            // spawned from the caller and from tasks, some of them panicking: each runs once,
            // and every value it captured is dropped once.
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pool.scope(|s| {
                    for i in 0..6 {
                        let tally = Tally(drops);
                        s.spawn(move |s| {
                            let _tally = tally;
                            runs.fetch_add(1, Ordering::Relaxed);
                            let tally = Tally(drops);
                            s.spawn(move |_| {
                                let _tally = tally;
                                runs.fetch_add(1, Ordering::Relaxed);
                            });
                            assert!(i != 3, "task 3 fails");
                        });
                        let (big, tally) = ([i; 16], Tally(drops));
                        s.spawn(move |_| {
                            let _tally = tally;
                            runs.fetch_add(big[0] - i + 1, Ordering::Relaxed);
                        });
                        let (aligned, tally) = (Aligned(1), Tally(drops));
                        s.spawn(move |_| {
                            let _tally = tally;
                            runs.fetch_add(usize::from(aligned.0), Ordering::Relaxed);
                        });
                    }
                });
            }));
            let payload = caught.unwrap_err();
            assert_eq!(payload.downcast_ref::<&str>(), Some(&"task 3 fails"));
            assert_eq!(runs.load(Ordering::Relaxed), 6 * 4, "workers = {workers}");
            assert_eq!(drops.load(Ordering::Relaxed), 6 * 4, "workers = {workers}");
        }
    }

    #[test]
    fn the_callers_own_panic_wins_after_tasks_finish() {
        let pool = ThreadPool::new(2);
        let ran = AtomicUsize::new(0);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.scope(|s| {
                s.spawn(|_| {
                    ran.fetch_add(1, Ordering::Relaxed);
                });
                panic!("caller");
            })
        }));
        assert_eq!(caught.unwrap_err().downcast_ref::<&str>(), Some(&"caller"));
        assert_eq!(ran.load(Ordering::Relaxed), 1);
    }
}
