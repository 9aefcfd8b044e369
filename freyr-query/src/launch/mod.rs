//! `each_async`: one task per non-empty matching chunk, launched through freyr-sched's
//! allocation-free `submit_indexed` path, registered with the registry until a sync point
//! retires it.
//!
//! - [`job`]: the shared job (chunk table, callback, per-chunk slots) and the task body;
//! - [`inflight`]: the registry's in-flight list and the waiting rules (the soundness model);
//! - [`reduce`]: deterministic reductions;
//! - [`callback`]: the per-thread "inside a callback of registry N" marker.

pub(crate) mod callback;
pub(crate) mod inflight;
pub(crate) mod job;
pub(crate) mod reduce;

use core::ptr::NonNull;
use std::sync::Arc;

use freyr_core::{Entity, World};
use freyr_sched::ThreadPool;

use crate::access::Access;
use crate::fetch::QueryData;
use crate::filter::QueryFilter;
use crate::launch::inflight::{InFlight, Launch};
use crate::launch::job::{ChunkTask, ErasedJob, Job, Kernel};
use crate::profiler::Profiler;
use crate::state::QueryState;
use crate::view::ViewSet;

/// The chunk table of a launch: every non-empty chunk of every matched archetype, in
/// (archetype creation order, chunk index) order — the order its commands are applied in.
pub(crate) fn chunk_table<Q: QueryData, F: QueryFilter>(
    world: &World,
    state: &QueryState<Q, F>,
) -> Vec<ChunkTask<Q::Ptrs>> {
    let count = state
        .matched()
        .iter()
        .map(|m| world.archetype(m.id).chunk_count())
        .sum();
    let mut table = Vec::with_capacity(count);
    for matched in state.matched() {
        for chunk in world.archetype(matched.id).chunks() {
            table.push(ChunkTask {
                ptrs: Q::ptrs(matched.columns, chunk),
                entities: <Entity as QueryData>::ptrs((), chunk),
                len: chunk.len(),
            });
        }
    }
    table
}

/// Everything a launch needs from the registry, borrowed field by field.
pub(crate) struct LaunchCtx<'a> {
    pub(crate) registry_id: u64,
    pub(crate) pool: &'a ThreadPool,
    pub(crate) inflight: &'a mut InFlight,
    pub(crate) profiler: &'a mut Profiler,
    pub(crate) next_seq: &'a mut u64,
    pub(crate) label: Option<&'static str>,
}

/// Registers and submits a launch. Returns its launch number, or `None` (with the kernel already
/// finished on no chunks) when nothing matched.
///
/// # Safety
///
/// `chunks` and `views` were built from the registry's current world and resources after every
/// in-flight launch conflicting with `access` was waited for, and `access` covers everything the
/// kernel touches through them.
pub(crate) unsafe fn launch<Q, V, K>(
    ctx: LaunchCtx<'_>,
    access: Arc<Access>,
    chunks: Vec<ChunkTask<Q::Ptrs>>,
    views: V::Fetch,
    kernel: K,
) -> Option<u64>
where
    Q: QueryData,
    V: ViewSet,
    K: Kernel<Q, V>,
{
    if chunks.is_empty() {
        // Nothing to run: finish at once (a reduction yields `identity()`).
        let _ = kernel.finish(Vec::new());
        return None;
    }
    let tasks = chunks.len();
    let seq = *ctx.next_seq;
    *ctx.next_seq += 1;
    let job: &'static mut Job<Q, V, K> = Box::leak(Box::new(Job::new(
        ctx.registry_id,
        chunks,
        views,
        kernel,
        ctx.label.is_some(),
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
