//! `each_async`: one task per non-empty matching chunk (or per piece of one with
//! `rows_per_task`), launched through freyr-sched's allocation-free `submit_job` path,
//! registered with the registry until a sync point retires it.
//!
//! - [`spans`]: which rows each task of a launch covers;
//! - [`job`]: the shared job (task spans, callback, per-task slots) and the batch body, which
//!   resolves the column pointers of a batch's slab run on the worker;
//! - [`inflight`]: the registry's in-flight list and the waiting rules (the soundness model);
//! - [`reduce`]: deterministic reductions;
//! - [`callback`]: the per-thread "inside a callback of registry N" marker;
//! - this file: `launch`, which builds a job and registers it; it imports from the files
//!   above, and none of them imports from it.

pub mod callback;
pub mod handoff;
pub mod inflight;
pub mod job;
pub mod reduce;
pub mod spans;

use core::ptr::NonNull;
use std::sync::Arc;

use freyr_sched::ThreadPool;

use crate::access::Access;
use crate::fetch::QueryData;
use crate::launch::inflight::{InFlight, Launch};
use crate::launch::job::{ErasedJob, Job, Kernel};
use crate::launch::spans::Spans;
use crate::view::ViewSet;
use freyr_profile::profiler::Profiler;

/// Everything a launch needs from the registry, borrowed field by field.
pub(crate) struct LaunchCtx<'a> {
    pub(crate) registry_id: u64,
    pub(crate) pool: &'a ThreadPool,
    pub(crate) inflight: &'a mut InFlight,
    pub(crate) profiler: &'a mut Profiler,
    pub(crate) next_seq: &'a mut u64,
    pub(crate) label: Option<&'static str>,
    /// The tick trace's epoch when the launch is traced.
    pub(crate) trace: Option<std::time::Instant>,
}

/// Registers and submits a launch. Returns its launch number, or `None` (with the kernel already
/// finished on no chunks) when nothing matched.
///
/// # Safety
///
/// - `spans` was built from the registry's world (its boxed, address-stable `World`) and
///   `views` from it and the registry's resources, after every in-flight launch conflicting
///   with `access` was waited for; `access` covers everything the kernel touches.
/// - The world stays alive and is not structurally modified (no `&mut World` is created) until
///   the launch is retired: the caller registers it in `ctx.inflight`, and every registry path
///   that mutates the world waits for all in-flight launches first (`OpAccess::Exclusive`, see
///   [`inflight`]), as does the registry's `Drop` before the world is freed.
pub(crate) unsafe fn launch<Q, V, K>(
    ctx: LaunchCtx<'_>,
    access: Arc<Access>,
    spans: Option<Spans<Q::Columns>>,
    views: V::Fetch,
    kernel: K,
) -> Option<u64>
where
    Q: QueryData,
    V: ViewSet,
    K: Kernel<Q, V>,
{
    let Some(spans) = spans else {
        // Nothing to run: finish at once (a reduction yields `identity()`).
        let _ = kernel.finish(Vec::new());
        return None;
    };
    let tasks = spans.tasks();
    let seq = *ctx.next_seq;
    *ctx.next_seq += 1;
    // Entered while the launch is submitted; the job keeps it open until retirement.
    #[cfg(feature = "tracing")]
    let span = freyr_profile::spans::launch(ctx.label, seq, tasks);
    #[cfg(feature = "tracing")]
    let _entered = span.enter();
    let job: &'static mut Job<Q, V, K> = Box::leak(Box::new(Job::new(
        ctx.registry_id,
        spans,
        views,
        kernel,
        ctx.label.is_some(),
        ctx.trace,
        #[cfg(feature = "tracing")]
        job::LaunchSpan {
            span: span.clone(),
            label: ctx.label,
            seq,
        },
    )));
    let job = NonNull::from(job);
    let erased: NonNull<dyn ErasedJob> = job;
    // SAFETY: `erased` comes from `Box::leak`; the launch takes ownership.
    let record = unsafe { Launch::new(seq, access, erased, tasks, ctx.label) };
    // Register before submitting: from here on every registry operation (and the registry's
    // Drop) knows about the tasks.
    ctx.inflight.push(record);
    let job_ptr: *const Job<Q, V, K> = job.as_ptr();
    // SAFETY:
    // - the job (and the group inside it) stays at this address until the launch is retired,
    //   and retirement (or the registry's Drop) waits for the group first;
    // - `Job` is `Sync`: tasks share it read-only except for their own slot.
    unsafe {
        ctx.pool.submit_job(&(*job_ptr).group, job_ptr, tasks);
    }
    ctx.profiler.record_launch(tasks);
    Some(seq)
}
