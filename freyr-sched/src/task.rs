//! The queued unit of work: a small `Copy` value, never a heap allocation.

use crate::group::GroupInner;

/// A range of indices of one job, as it sits in a queue.
///
/// ```text
/// Task { func, job, start, end, group }      5 words, Copy
///          │     │     └──┬──┘     └── the TaskGroup counting these indices
///          │     │        └── indices start..end still to run (end > start)
///          │     └── type-erased &Job (or a Box for a scoped spawn)
///          └── monomorphised trampoline: func(job, i) runs index i
/// ```
///
/// A batch of `count` indices is queued as a few such ranges; a thread that
/// runs a range of two or more indices while others sleep splits off the
/// upper half (see `PROTOCOL.md`, "Run"). The group counter counts
/// *indices*, so splitting never touches it.
#[derive(Clone, Copy)]
pub(crate) struct Task {
    /// Runs index `i` of `job`.
    pub(crate) func: unsafe fn(*const (), usize),
    pub(crate) job: *const (),
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) group: *const GroupInner,
}

// SAFETY: a `Task` is only created by `submit_range`/`submit_one`, whose
// callers guarantee that `job` is `Sync`-shareable (`J: Sync`, or a boxed
// `Send` closure run exactly once) and that `job` and `group` outlive the
// task's completion. Moving the pointers to another thread is therefore fine.
unsafe impl Send for Task {}
