//! One owned closure run as a pool task, its result kept until collected.
//!
//! Deadline jobs and pump launches move their inputs into a `'static`
//! closure; [`PoolJob`] boxes it next to a [`TaskGroup`] of its own, queues
//! it with [`ThreadPool::submit_job`], and hands the result (or the panic's
//! message) back once the task ran. The caller can wait for it *helping the
//! pool* ([`TaskGroup::try_wait`]) and can cancel it before it starts.

use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use freyr_sched::IndexedJob;
use freyr_sched::TaskGroup;
use freyr_sched::ThreadPool;
use freyr_sched::drop_payload;
use freyr_sync as sync;
use freyr_sync::lock_std as lock;

/// A job that panicked: the panic's message, delivered in place of its
/// result.
///
/// # Examples
///
/// ```
/// use freyr::ThreadPool;
/// use freyr::time::deadline::DeadlineScheduler;
/// let pool = ThreadPool::new(2);
/// let mut jobs = DeadlineScheduler::new(1).unwrap();
/// jobs.request(&pool, 0, (), |()| -> u32 { panic!("no path") }).unwrap();
/// jobs.collect(&pool, 1, |done| {
///     let err = done.result.unwrap_err();
///     assert_eq!(err.message(), "no path");
/// })
/// .unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobPanic {
    message: String,
}

impl JobPanic {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        JobPanic {
            message: message.into(),
        }
    }

    /// The panic message: the text of a `&str` or `String` payload, and
    /// `"(a panic payload that is not a string)"` for any other payload type.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(1);
    /// let mut jobs = DeadlineScheduler::new(2).unwrap();
    /// jobs.request(&pool, 0, 7, |n: i32| -> i32 { panic!("bad input {n}") }).unwrap();
    /// jobs.collect(&pool, 1, |_| unreachable!("due at tick 2")).unwrap();
    /// jobs.collect(&pool, 2, |done| assert_eq!(done.result.unwrap_err().message(), "bad input 7"))
    ///     .unwrap();
    /// ```
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for JobPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job panicked: {}", self.message)
    }
}

impl std::error::Error for JobPanic {}

type Work<R> = Box<dyn FnOnce() -> R + Send + 'static>;

/// The shared part the pool task points to.
struct JobCell<R> {
    work: Mutex<Option<Work<R>>>,
    result: Mutex<Option<Result<R, JobPanic>>>,
    cancelled: AtomicBool,
}

impl<R: Send> IndexedJob for JobCell<R> {
    fn run(&self, _index: usize) {
        let work = lock(&self.work).take();
        let Some(work) = work else { return };
        if self.cancelled.load(Ordering::Acquire) {
            drop_quietly(work);
            return;
        }
        let outcome = match panic::catch_unwind(AssertUnwindSafe(work)) {
            Ok(value) => Ok(value),
            Err(payload) => {
                let message = panic_message(&*payload);
                drop_payload(payload);
                Err(JobPanic::new(message))
            }
        };
        *lock(&self.result) = Some(outcome);
    }
}

/// An owned closure queued on a pool, and its result once it ran.
///
/// The pool task points into `cell` and completes `group`. Both live in heap
/// allocations owned through raw pointers, not `Box` fields: moving a `Box`
/// asserts that it is the only pointer to its allocation, which the queued
/// task's pointer contradicts (the reason the registry owns its world the
/// same way). Both are freed only in `Drop`, after the task finished, which
/// `Drop` waits for through a shared reference (never a `&mut TaskGroup`
/// while the task may still decrement its counter).
pub(crate) struct PoolJob<R> {
    /// From `Box::into_raw`; freed in `Drop` (its `Drop` blocks until the
    /// task finished).
    group: NonNull<TaskGroup>,
    /// From `Box::into_raw`; freed in `Drop`, after `group`.
    cell: NonNull<JobCell<R>>,
    /// Owns a `TaskGroup` and a `JobCell<R>` (for drop check and variance).
    _owns: PhantomData<(Box<TaskGroup>, Box<JobCell<R>>)>,
}

// SAFETY: a `PoolJob` owns its `TaskGroup` (`Send + Sync`) and its
// `JobCell<R>`, whose shared state sits behind mutexes and an atomic and
// holds `R` and a `Send` closure: sending it to another thread is sound when
// `R: Send`, as for a `Box<JobCell<R>>`.
unsafe impl<R: Send> Send for PoolJob<R> {}
// SAFETY: `&PoolJob` only reaches `&TaskGroup` (`Sync`) and `&JobCell<R>`,
// whose fields are `Mutex`es of `Send` data and an atomic: `Sync` when
// `R: Send`, as for a `Box<JobCell<R>>`.
unsafe impl<R: Send> Sync for PoolJob<R> {}

impl<R: Send + 'static> PoolJob<R> {
    /// Queues `work` on `pool` (a pool of one runs it before returning).
    pub(crate) fn spawn(pool: &ThreadPool, work: impl FnOnce() -> R + Send + 'static) -> Self {
        let job = PoolJob {
            group: NonNull::from(Box::leak(Box::new(TaskGroup::new()))),
            cell: NonNull::from(Box::leak(Box::new(JobCell {
                work: Mutex::new(Some(Box::new(work))),
                result: Mutex::new(None),
                cancelled: AtomicBool::new(false),
            }))),
            _owns: PhantomData,
        };
        // SAFETY:
        // - `job.cell` points to a live `JobCell<R>` that is freed only in
        //   `PoolJob::drop`, after the group's `Drop` waited for the task;
        //   moving `job` moves the pointer, not the allocation; nothing
        //   mutates the cell except through its mutexes and atomic.
        // - the group is never moved (it sits in its own allocation) and is
        //   freed only in `PoolJob::drop`, whose `TaskGroup::drop` blocks
        //   until the task finished; a forgotten `PoolJob` leaks both.
        // - `run(0)` is sound for the single index queued.
        unsafe { pool.submit_job(job.group(), job.cell.as_ptr().cast_const(), 1) };
        job
    }
}

impl<R> PoolJob<R> {
    fn group(&self) -> &TaskGroup {
        // SAFETY: `group` is live until `Drop` and only ever shared.
        unsafe { self.group.as_ref() }
    }

    fn cell(&self) -> &JobCell<R> {
        // SAFETY: `cell` is live until `Drop` and only ever shared.
        unsafe { self.cell.as_ref() }
    }

    /// Whether the task has finished (its result, if any, is visible).
    pub(crate) fn is_done(&self) -> bool {
        self.group().is_done()
    }

    /// Runs queued tasks of `pool` on this thread until this job is done.
    /// `pool` must be the pool it was spawned on.
    pub(crate) fn wait(&self, pool: &ThreadPool) {
        // The job body catches its own panics; a group panic can only come
        // from a panic payload whose `Drop` panicked, already reported.
        if let Err(panic) = self.group().try_wait(pool) {
            std::mem::forget(panic);
        }
    }

    /// Blocks until this job is done without helping any pool (yielding, then sleeping in
    /// short steps): for a job of a pool the caller cannot help, which finishes it on its own
    /// (its workers, or its `Drop`, run every queued task).
    pub(crate) fn block_until_done(&self) {
        let mut step = 0u32;
        while !self.group().is_done() {
            sync::backoff(step);
            step = step.saturating_add(1);
        }
    }

    /// Asks the task to skip the work if it has not started yet.
    pub(crate) fn cancel(&self) {
        self.cell().cancelled.store(true, Ordering::Release);
    }

    /// Takes the result of a finished job: `None` if it was cancelled
    /// before it started (or is not finished).
    pub(crate) fn take_result(&self) -> Option<Result<R, JobPanic>> {
        if !self.is_done() {
            return None;
        }
        lock(&self.cell().result).take()
    }

    /// A copy (made by `copy`) of the result of a finished job, which stays in place for the
    /// job's other holders: `None` if it was cancelled before it started, its result was
    /// taken, or it is not finished.
    pub(crate) fn copy_result(
        &self,
        copy: impl FnOnce(&Result<R, JobPanic>) -> Result<R, JobPanic>,
    ) -> Option<Result<R, JobPanic>> {
        if !self.is_done() {
            return None;
        }
        lock(&self.cell().result).as_ref().map(copy)
    }
}

impl<R> Drop for PoolJob<R> {
    fn drop(&mut self) {
        // Wait through a shared reference until the task finished: the
        // task's last access to the group is its completing decrement, made
        // through a pointer of its own, which must not overlap a unique
        // (`Box` or `&mut`) borrow of the group. No pool is at hand here, so
        // this blocks without helping (yielding, then sleeping in short steps).
        self.block_until_done();
        // SAFETY: `group` came from `Box::leak` and is reclaimed once, here;
        // its task finished (above) and never touches it again.
        drop(unsafe { Box::from_raw(self.group.as_ptr()) });
        // SAFETY: `cell` came from `Box::leak` and is reclaimed once, here;
        // the task that pointed into it finished (above).
        let cell = unsafe { Box::from_raw(self.cell.as_ptr()) };
        // A result nobody took (the job's last holder let go of it: a registry or a
        // snapshot dropped with jobs in flight) is dropped here, behind a panic guard: a
        // `Drop` that panics must not unwind out of this one, where the next such result
        // dropped during that unwinding would abort the process. Its memory is freed all the
        // same; whoever needs the panic takes the result first (`take_result`).
        drop_quietly(cell);
    }
}

impl<R> fmt::Debug for PoolJob<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolJob")
            .field("done", &self.is_done())
            .finish_non_exhaustive()
    }
}

/// The text of a panic payload, owned (the rule of [`freyr_sched::panic_message`]).
pub(crate) fn panic_message(payload: &(dyn core::any::Any + Send)) -> String {
    freyr_sched::panic_message(payload).to_owned()
}

/// Drops `value` (a cancelled job's closure and its inputs); a panic from
/// its `Drop` is caught and its payload dropped with [`drop_payload`], so
/// nothing unwinds into the worker.
pub(crate) fn drop_quietly<T>(value: T) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(move || drop(value))) {
        drop_payload(payload);
    }
}

#[cfg(all(test, not(freyr_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_job_runs_once_and_its_result_is_taken_once() {
        let pool = ThreadPool::new(3);
        let job = PoolJob::spawn(&pool, || 6 * 7);
        job.wait(&pool);
        assert_eq!(job.take_result(), Some(Ok(42)));
        assert_eq!(job.take_result(), None);
    }

    #[test]
    fn a_panic_becomes_its_message() {
        let pool = ThreadPool::new(2);
        let job = PoolJob::spawn(&pool, || -> u8 { panic!("at {}", 3) });
        job.wait(&pool);
        assert_eq!(job.take_result(), Some(Err(JobPanic::new("at 3"))));
        let again = PoolJob::spawn(&pool, || 1u8);
        again.wait(&pool);
        assert_eq!(again.take_result(), Some(Ok(1)), "the pool stays usable");
    }

    #[test]
    fn dropping_an_unwaited_job_waits_for_it() {
        use std::sync::Arc;
        use std::sync::atomic::AtomicUsize;
        let pool = ThreadPool::new(2);
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..50 {
            let ran = Arc::clone(&ran);
            drop(PoolJob::spawn(&pool, move || {
                ran.fetch_add(1, Ordering::Relaxed);
            }));
        }
        assert_eq!(ran.load(Ordering::Relaxed), 50);
    }

    #[test]
    fn a_cancelled_job_skips_its_work_and_drops_its_inputs() {
        use std::sync::Arc;
        let inputs = Arc::new(());
        let pool = ThreadPool::new(2);
        // Keep the only worker busy so the second job is still queued.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let blocker = PoolJob::spawn(&pool, move || rx.recv().ok());
        let held = Arc::clone(&inputs);
        let job = PoolJob::spawn(&pool, move || {
            let _held = held;
            panic!("must not run");
        });
        job.cancel();
        tx.send(()).unwrap();
        blocker.wait(&pool);
        job.wait(&pool);
        if job.take_result().is_some() {
            // The waiting thread may have started the job before `cancel`:
            // impossible here, as `cancel` ran before anyone could help.
            panic!("a job cancelled before it started produced a result");
        }
        assert_eq!(Arc::strong_count(&inputs), 1, "the closure was dropped");
    }
}
