//! The queued unit of work: a small `Copy` value, never a heap allocation.

use crate::group_inner::GroupInner;
use crate::sleep::Sleep;

/// A batch runner: runs indices `*next..end` of `task`'s job in order,
/// leaving `*next` one past the last index it started (also on unwind); it
/// may return early, between batches, when `sleep` reports an idle thread
/// (then the scheduler splits and calls it again).
pub(crate) type RunBatch = unsafe fn(task: &Task, next: &mut usize, end: usize, sleep: &Sleep);

/// A per-index function: runs index `i` of the type-erased job.
pub(crate) type RunIndex = unsafe fn(job: *const (), index: usize);

/// A range of indices of one job, as it sits in a queue.
///
/// ```text
/// Task { run, job, body, start, end, group }     6 words, Copy
///         │    │    │     └──┬───┘    └── the TaskGroup counting these indices
///         │    │    │        └── indices start..end still to run (end > start)
///         │    │    └── per-index fn for `run_body_batch` (None for IndexedJob)
///         │    └── type-erased &Job (or a Box for a scoped spawn)
///         └── batch runner: monomorphised per IndexedJob type (run_batch inlined),
///             or `run_body_batch` (calls `body` per index)
/// ```
///
/// A batch of `count` indices is queued as a few such ranges; the thread
/// that runs a range calls `run`, which looks for sleeping threads between
/// batches (of up to `MAX_BATCH` indices, or about a microsecond's worth of
/// trivial ones) and returns early so that the
/// thread splits off the upper half (see `PROTOCOL.md`, "Run"). The group counter counts *indices*, so splitting
/// never touches it.
#[derive(Clone, Copy)]
pub(crate) struct Task {
    pub(crate) run: RunBatch,
    pub(crate) job: *const (),
    pub(crate) body: Option<RunIndex>,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) group: *const GroupInner,
}

// SAFETY: a `Task` is only created by `submit_range`/`submit_one` callers
// (`submit_job`, `submit_indexed`, `Scope::spawn`), which guarantee that `job`
// is `Sync`-shareable (`J: Sync`, or a boxed `Send` closure run exactly once)
// and that `job` and `group` outlive the task's completion. Moving the
// pointers to another thread is therefore fine.
unsafe impl Send for Task {}
