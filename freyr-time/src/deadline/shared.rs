//! A deadline job in flight, held by its scheduler and by every capture
//! ([`JobsInFlight`](super::JobsInFlight)) taken while it was pending.
//!
//! The handle is an `Arc`: capturing a job clones the `Arc` and never waits
//! for the job. Whoever delivers it reads the result once the job finished:
//! the last holder moves it out, any other holder copies it (`Clone`, which
//! a capture requires and records here). The last holder to let go of a job
//! nobody delivered cancels it, so a job no timeline needs any more skips its
//! work if it has not started.

use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use freyr_sched::keep_first;
use freyr_sched::{PoolId, ThreadPool};

use super::{Cloner, Outcome};
use crate::pool_job::{JobPanic, PoolJob};

/// A panic payload caught from a result's `Drop`.
pub(super) type Payload = Box<dyn core::any::Any + Send>;

/// One job in flight and, once it was captured, how to copy its result.
pub(super) struct SharedJob<R> {
    job: PoolJob<R>,
    /// The pool it runs on ([`ThreadPool::id`]): a scheduler that took it over from a capture of
    /// another pool's scheduler cannot help that pool to finish it.
    pool: PoolId,
    /// Set by the first capture: a job whose handle is shared was captured.
    cloner: OnceLock<Cloner<R>>,
}

impl<R: Send + 'static> SharedJob<R> {
    /// Queues `work` on `pool`.
    pub(super) fn spawn(pool: &ThreadPool, work: impl FnOnce() -> R + Send + 'static) -> Arc<Self> {
        Arc::new(SharedJob {
            job: PoolJob::spawn(pool, work),
            pool: pool.id(),
            cloner: OnceLock::new(),
        })
    }
}

impl<R: Clone> SharedJob<R> {
    /// A second handle, for a capture: from now on a holder that is not the last copies the
    /// result instead of taking it.
    pub(super) fn share(this: &Arc<Self>) -> Arc<Self> {
        this.cloner.get_or_init(|| Clone::clone);
        Arc::clone(this)
    }
}

impl<R> SharedJob<R> {
    /// Whether the job finished.
    pub(super) fn is_done(&self) -> bool {
        self.job.is_done()
    }

    /// Waits until the job finished: running queued tasks of `pool` if the job runs on it,
    /// otherwise without helping (a pool's completion wakes only its own waiters, so helping
    /// another pool could sleep through it).
    pub(super) fn wait(&self, pool: &ThreadPool) {
        if pool.id() == self.pool {
            self.job.wait(pool);
        } else {
            self.job.block_until_done();
        }
    }

    /// The result of a finished job, for its delivery: moved out by the last holder, copied
    /// by any other. A job cancelled before it started (only its last holder cancels it, so
    /// never one still to be delivered) is delivered as a `JobPanic` saying so, and so is a
    /// copy whose `Clone` panicked (the panic is caught: the tick's other jobs are delivered).
    pub(super) fn into_result(this: Arc<Self>) -> Outcome<R> {
        let result = match Arc::try_unwrap(this) {
            Ok(job) => job.job.take_result(),
            Err(shared) => {
                let cloner = *shared
                    .cloner
                    .get()
                    .expect("a job with several holders was captured, which set its cloner");
                // A `Clone` that panics must not unwind out of the delivery (the other jobs
                // of the tick would be stranded): the copy is delivered as a panic instead.
                let copy = panic::catch_unwind(AssertUnwindSafe(|| shared.job.copy_result(cloner)))
                    .unwrap_or_else(|payload| {
                        let message = crate::pool_job::panic_message(&*payload);
                        freyr_sched::drop_payload(payload);
                        Some(Err(JobPanic::new(format!(
                            "cloning the result for its delivery panicked: {message}"
                        ))))
                    });
                // A holder that let go meanwhile may leave this handle the last one: its
                // result is then dropped here, and a panicking `Drop` must not stop the
                // delivery.
                crate::pool_job::drop_quietly(shared);
                copy
            }
        };
        result.unwrap_or_else(|| {
            Err(JobPanic::new(
                "the job produced no result (it was cancelled)",
            ))
        })
    }

    /// Lets go of a job that will not be delivered by this holder. The last holder cancels
    /// it if `cancel` (it then skips its work if not started), waits for it (helping `pool`)
    /// and drops its result; a panic of that `Drop` is caught and returned, the job's memory
    /// freed all the same.
    pub(super) fn discard(this: Arc<Self>, pool: &ThreadPool, cancel: bool) -> Option<Payload> {
        let job = Arc::try_unwrap(this).ok()?;
        if cancel {
            job.job.cancel();
        }
        job.wait(pool);
        let result = job.job.take_result();
        let mut first = panic::catch_unwind(AssertUnwindSafe(move || drop(result))).err();
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(move || drop(job))) {
            keep_first(&mut first, payload);
        }
        first
    }
}

impl<R> Drop for SharedJob<R> {
    /// The last holder lets go: a job nobody will deliver skips its work if it has not
    /// started (the `PoolJob` then waits for its task to finish).
    fn drop(&mut self) {
        self.job.cancel();
    }
}
