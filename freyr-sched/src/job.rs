//! Indexed jobs and the batch trampolines that run them.
//!
//! A queued [`Task`] names a *batch runner*: a function that runs indices
//! `*next..end` of its job in order and keeps `*next` one past the last
//! index it started, even when one of them unwinds. It looks for idle
//! threads between batches of up to [`MAX_BATCH`] indices, not between
//! indices, and returns early when the range should be split
//! (`PROTOCOL.md`, "Run").
//!
//! - [`IndexedJob`] jobs get a runner monomorphised for the job type, so the
//!   per-index body is inlined into the loop: no indirect call per index.
//! - `submit_indexed`'s `fn(&J, usize)` jobs and scoped spawns share one
//!   runner that calls the task's `body` function pointer per index.

use crate::sleep::Sleep;
use crate::task::Task;

/// A job whose indices run as allocation-free pool tasks, through
/// [`ThreadPool::submit_job`](crate::ThreadPool::submit_job).
///
/// Each index in `0..count` is run exactly once, on some pool thread, with a
/// shared `&self` (hence `Sync`). The call is monomorphised into the
/// scheduler's batch loop, so a cheap body costs about as much as a plain
/// loop iteration.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use freyr_sched::{IndexedJob, TaskGroup, ThreadPool};
///
/// struct Squares(Vec<AtomicUsize>);
/// impl IndexedJob for Squares {
///     fn run(&self, index: usize) {
///         self.0[index].store(index * index, Ordering::Relaxed);
///     }
/// }
/// let pool = ThreadPool::new(2);
/// let job = Squares((0..64).map(|_| AtomicUsize::new(0)).collect());
/// let group = TaskGroup::new();
/// // SAFETY: `job` and `group` outlive the wait.
/// unsafe { pool.submit_job(&group, &job, 64) };
/// group.wait(&pool);
/// assert!(job.0.iter().enumerate().all(|(i, v)| v.load(Ordering::Relaxed) == i * i));
/// ```
pub trait IndexedJob: Sync {
    /// Runs index `index` of the job. A panic is caught by the pool and
    /// stored in the task group; the job's other indices still run.
    fn run(&self, index: usize);
}

/// The most indices run between two looks for sleeping threads (run step
/// 2). Batches start at one index and double, so a range of heavy indices is
/// offered for splitting after 1, 3, 7, 15 indices, then every 16; a range
/// of trivial indices pays one relaxed load per 16.
pub(crate) const MAX_BATCH: usize = 16;

/// Runs `f(i)` for `i` in `*next..end`, in order, in batches of 1, 2, 4, ...
/// up to [`MAX_BATCH`] indices. Between batches, if two or more indices
/// remain and `sleep` reports a thread blocked without a wake-up, it returns
/// early so the scheduler can split the rest of the range. `*next` is left
/// one past the last index started, also when `f` unwinds (a drop guard
/// writes it back), so the caller can resume after a panicking index.
#[inline]
pub(crate) fn run_indices(next: &mut usize, end: usize, sleep: &Sleep, mut f: impl FnMut(usize)) {
    /// Keeps the loop counter in a register; writes it back on the way out
    /// (normal or unwinding).
    struct Progress<'a> {
        next: &'a mut usize,
        at: usize,
    }
    impl Drop for Progress<'_> {
        #[inline]
        fn drop(&mut self) {
            *self.next = self.at;
        }
    }
    let mut progress = Progress { at: *next, next };
    let mut batch = 1;
    loop {
        let stop = end.min(progress.at.saturating_add(batch));
        while progress.at < stop {
            let index = progress.at;
            progress.at = index + 1;
            f(index);
        }
        if end - progress.at < 2 {
            // The last index (if any) runs without another look.
            if progress.at < end {
                let index = progress.at;
                progress.at = index + 1;
                f(index);
            }
            return;
        }
        if sleep.has_sleepers() {
            return;
        }
        batch = (batch * 2).min(MAX_BATCH);
    }
}

/// The batch runner of an [`IndexedJob`] task: `J::run` inlined per index.
///
/// # Safety
///
/// `task.job` must point to a live `J`, and every index in `*next..end` must
/// be one the submitter allowed (below the submitted count) and owned by the
/// caller (not run by anyone else).
pub(crate) unsafe fn run_job_batch<J: IndexedJob>(
    task: &Task,
    next: &mut usize,
    end: usize,
    sleep: &Sleep,
) {
    // SAFETY: per the contract, `task.job` points to a live `J`; `J: Sync`
    // makes the shared reference sound on this thread.
    let job = unsafe { &*task.job.cast::<J>() };
    run_indices(next, end, sleep, |index| job.run(index));
}

/// The batch runner of tasks that carry a per-index `body` function
/// (`submit_indexed`, scoped spawns).
///
/// # Safety
///
/// `task.body` must be `Some(f)` where `f(task.job, i)` is sound for every
/// `i` in `*next..end`, and those indices must be owned by the caller.
pub(crate) unsafe fn run_body_batch(task: &Task, next: &mut usize, end: usize, sleep: &Sleep) {
    let Some(body) = task.body else {
        unreachable!("freyr-sched: a body-batch task always carries its body");
    };
    // SAFETY: per the contract, `body(job, i)` is sound for these indices.
    run_indices(next, end, sleep, |index| unsafe { body(task.job, index) });
}

#[cfg(all(test, not(freyr_loom)))]
mod tests {
    use super::*;
    use std::panic::{self, AssertUnwindSafe};

    #[test]
    fn progress_is_written_back_on_completion_and_on_unwind() {
        let sleep = Sleep::new();
        let mut next = 2;
        let mut seen = Vec::new();
        run_indices(&mut next, 40, &sleep, |i| seen.push(i));
        assert_eq!(next, 40);
        assert_eq!(seen, (2..40).collect::<Vec<_>>());

        let mut next = 0;
        let mut ran = Vec::new();
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            run_indices(&mut next, 5, &sleep, |i| {
                ran.push(i);
                assert_ne!(i, 2, "index 2 fails");
            });
        }));
        assert!(outcome.is_err());
        assert_eq!(next, 3, "resume after the index that panicked");
        assert_eq!(ran, [0, 1, 2]);
    }
}
