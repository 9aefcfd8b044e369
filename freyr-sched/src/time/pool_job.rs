//! One owned closure run as a pool task, its result kept until collected.
//!
//! Deadline jobs and pump launches move their inputs into a `'static`
//! closure; [`PoolJob`] boxes it next to a [`TaskGroup`] of its own, queues
//! it with [`ThreadPool::submit_job`], and hands the result (or the panic's
//! message) back once the task ran. The caller can wait for it *helping the
//! pool* ([`TaskGroup::try_wait`]) and can cancel it before it starts.

use core::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::group::TaskGroup;
use crate::job::IndexedJob;
use crate::pool::ThreadPool;

/// A job that panicked: the panic's message, delivered in place of its
/// result.
///
/// # Examples
///
/// ```
/// use freyr_sched::{DeadlineScheduler, ThreadPool};
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

    /// The panic message (`&str` or `String` payloads), or a placeholder
    /// for other payload types.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_sched::{DeadlineScheduler, ThreadPool};
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
                drop_quietly(payload);
                Err(JobPanic::new(message))
            }
        };
        *lock(&self.result) = Some(outcome);
    }
}

/// An owned closure queued on a pool, and its result once it ran.
///
/// Invariant: the pool task points into `cell` and completes `group`; both
/// are boxed (so moving a `PoolJob` never moves them) and freed only after
/// the task finished (see the field order).
pub(crate) struct PoolJob<R> {
    /// Declared first, so dropped first: `TaskGroup`'s `Drop` blocks until
    /// the task finished, so `cell` is never freed while the task can still
    /// touch it. (A forgotten `PoolJob` leaks both, which is sound.)
    group: Box<TaskGroup>,
    cell: Box<JobCell<R>>,
}

impl<R: Send + 'static> PoolJob<R> {
    /// Queues `work` on `pool` (a pool of one runs it before returning).
    pub(crate) fn spawn(pool: &ThreadPool, work: impl FnOnce() -> R + Send + 'static) -> Self {
        let job = PoolJob {
            group: Box::new(TaskGroup::new()),
            cell: Box::new(JobCell {
                work: Mutex::new(Some(Box::new(work))),
                result: Mutex::new(None),
                cancelled: AtomicBool::new(false),
            }),
        };
        let cell: *const JobCell<R> = &*job.cell;
        // SAFETY:
        // - `cell` points into a box owned by `job`; the box never moves and
        //   is freed only after `job.group` is done (its `Drop` waits), and
        //   nothing mutates it except through its mutexes and atomic.
        // - `job.group` is boxed, so it is not moved before the wait; a
        //   forgotten `PoolJob` leaks it, never frees it.
        // - `run(0)` is sound for the single index queued.
        unsafe { pool.submit_job(&job.group, cell, 1) };
        job
    }
}

impl<R> PoolJob<R> {
    /// Whether the task has finished (its result, if any, is visible).
    pub(crate) fn is_done(&self) -> bool {
        self.group.is_done()
    }

    /// Runs queued tasks of `pool` on this thread until this job is done.
    /// `pool` must be the pool it was spawned on.
    pub(crate) fn wait(&self, pool: &ThreadPool) {
        // The job body catches its own panics; a group panic can only come
        // from a panic payload whose `Drop` panicked, already reported.
        if let Err(panic) = self.group.try_wait(pool) {
            std::mem::forget(panic);
        }
    }

    /// Asks the task to skip the work if it has not started yet.
    pub(crate) fn cancel(&self) {
        self.cell.cancelled.store(true, Ordering::Release);
    }

    /// Takes the result of a finished job: `None` if it was cancelled
    /// before it started (or is not finished).
    pub(crate) fn take_result(&self) -> Option<Result<R, JobPanic>> {
        if !self.is_done() {
            return None;
        }
        lock(&self.cell.result).take()
    }
}

impl<R> fmt::Debug for PoolJob<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolJob")
            .field("done", &self.is_done())
            .finish_non_exhaustive()
    }
}

/// A pool's identity: a multi-threaded pool is named by its shared state's
/// address, unique while it lives (a dropped pool ran all its tasks, so a
/// later pool reusing the address cannot strand a waiter). Every pool of one
/// is 0: it runs each job before `spawn` returns, so nothing waits on it.
pub(crate) fn pool_id(pool: &ThreadPool) -> usize {
    pool.shared()
        .map_or(0, |shared| core::ptr::from_ref(shared) as usize)
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn core::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        String::from("(a panic payload that is not a string)")
    }
}

/// Drops `value`; if its `Drop` panics, that panic's payload is leaked
/// rather than dropped (so a second faulty `Drop` cannot unwind further).
fn drop_quietly<T>(value: T) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(move || drop(value))) {
        std::mem::forget(payload);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
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
