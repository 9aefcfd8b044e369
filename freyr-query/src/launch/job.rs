//! The shared job of one `each_async` call: the task spans (one per matched archetype with
//! chunks), the callback ("kernel"), the views, one output slot per chunk and the task group.
//! The job is an [`IndexedJob`] queued by freyr-sched's `submit_job` (a few `Copy` range values,
//! `run_task` inlined into the pool's batch loop): no heap allocation per task.
//!
//! ```text
//!  Box<Job>  (one allocation per call; the slot vector is a second one unless `Slot` is `()`,
//!             and spans past the first a third)
//!  ┌────────────────────────────────────────────────────────────────┐
//!  │ group: TaskGroup            pending counter + first panic      │
//!  │ spans: first + [Span]       archetype pointer (into the        │
//!  │                             registry's boxed world), column    │
//!  │                             indices, first/last task index     │
//!  │ slots:  [UnsafeCell<Slot>; n]  () | CommandBuffer | Option<A>   │
//!  │ kernel: K                   the user's closure(s)              │
//!  │ views:  V::Fetch            world / resource pointers          │
//!  └────────────────────────────────────────────────────────────────┘
//!  task i: finds its span, resolves chunk i - span.start's column pointers through the
//!          archetype, runs it, writes slots[i] only  (each index runs exactly once)
//! ```
//!
//! Launching costs O(matched archetypes) on the calling thread; the per-chunk pointer lookup is
//! done by the task itself, in parallel.

use core::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use freyr_core::{CommandBuffer, Entity};
use freyr_sched::{IndexedJob, TaskGroup};

use crate::commands::Context;
use crate::fetch::{ColumnPtr, QueryData};
use crate::launch::Spans;
use crate::launch::callback::CallbackScope;
use crate::launch::reduce::ReduceSlot;
use crate::view::ViewSet;

/// One task's share of a launch: where its chunk's columns start, and its rows `start..end` of
/// that chunk (all of them unless the query splits chunks by rows).
pub(crate) struct ChunkTask<P> {
    pub(crate) ptrs: P,
    pub(crate) entities: ColumnPtr<Entity>,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl<P> ChunkTask<P> {
    /// The task's entities, paired with their row numbers in the chunk.
    ///
    /// # Safety
    ///
    /// `entities` points at the chunk's entity array of at least `end` rows, not written while
    /// the returned iterator is used.
    #[inline(always)]
    unsafe fn rows(&self) -> impl Iterator<Item = (usize, Entity)> + use<P> {
        let entities = self.entities;
        (self.start..self.end).map(move |row| {
            // SAFETY: `row < end`, within the chunk's initialised rows (caller contract).
            (row, unsafe { <Entity as QueryData>::item(entities, row) })
        })
    }
}

/// What a launch does with each chunk, and what it leaves behind per chunk.
pub(crate) trait Kernel<Q: QueryData, V: ViewSet>: Send + Sync + 'static {
    /// Per-chunk output. `Default` is also what an unwinding chunk leaves behind.
    type Slot: Default + Send;

    /// Runs the callback over the task's rows of `chunk`, in row order.
    ///
    /// # Safety
    ///
    /// `chunk` and `views` are valid for the call (the launch is registered and its access
    /// checked), and no other task runs the same chunk.
    unsafe fn run(&self, chunk: &ChunkTask<Q::Ptrs>, views: V::Fetch, slot: &mut Self::Slot);

    /// Consumes the per-chunk outputs in chunk order at retirement and returns the command
    /// buffers to apply, in chunk order.
    fn finish(self, slots: Vec<Self::Slot>) -> Vec<CommandBuffer>;
}

/// `each_async`: a plain per-row callback, no outputs.
pub(crate) struct Plain<F>(pub(crate) F);

impl<Q, V, F> Kernel<Q, V> for Plain<F>
where
    Q: QueryData,
    V: ViewSet,
    F: for<'w> Fn(Entity, Q::Item<'w>) + Send + Sync + 'static,
{
    type Slot = ();

    // Out of line on purpose: as its own function, with the chunk's column pointers arriving as
    // opaque arguments, the row loop is vectorised across rows (`pos += vel * dt` over `[f32; 3]`
    // runs at the memory floor); inlined into the pool's batch loop it stayed scalar, about 1.6x
    // slower. The price is that every task resolves its chunk's pointers and makes one call,
    // about 4 ns, even when the callback does nothing.
    #[inline(never)]
    unsafe fn run(&self, chunk: &ChunkTask<Q::Ptrs>, _views: V::Fetch, _slot: &mut ()) {
        // SAFETY: the chunk's entity array holds at least `end` entities and is not written
        // meanwhile.
        for (row, entity) in unsafe { chunk.rows() } {
            // SAFETY: `row < end <= len`; this task is the only one touching these rows, and the
            // launch's access was checked against all other work (caller contract).
            (self.0)(entity, unsafe { Q::item(chunk.ptrs, row) });
        }
    }

    fn finish(self, _slots: Vec<()>) -> Vec<CommandBuffer> {
        Vec::new()
    }
}

/// `each_async_with`: a per-row callback with a [`Context`] (views + per-chunk commands).
pub(crate) struct WithContext<F>(pub(crate) F);

impl<Q, V, F> Kernel<Q, V> for WithContext<F>
where
    Q: QueryData,
    V: ViewSet,
    F: for<'w> Fn(Entity, Q::Item<'w>, &mut Context<'w, V>) + Send + Sync + 'static,
{
    type Slot = CommandBuffer;

    #[inline]
    unsafe fn run(&self, chunk: &ChunkTask<Q::Ptrs>, views: V::Fetch, slot: &mut CommandBuffer) {
        // SAFETY: views are valid while the launch is registered (caller contract).
        let views = unsafe { V::item(views) };
        let mut ctx = Context::new(views, slot);
        // SAFETY: as in `Plain::run`.
        for (row, entity) in unsafe { chunk.rows() } {
            // SAFETY: as in `Plain::run`.
            (self.0)(entity, unsafe { Q::item(chunk.ptrs, row) }, &mut ctx);
        }
    }

    fn finish(self, slots: Vec<CommandBuffer>) -> Vec<CommandBuffer> {
        slots
    }
}

/// `each_async_reduce`: fold each chunk from `identity`, combine the chunk results in chunk order
/// at retirement.
pub(crate) struct Reduce<A, I, Fo, C> {
    pub(crate) identity: I,
    pub(crate) fold: Fo,
    pub(crate) combine: C,
    pub(crate) out: std::sync::Arc<ReduceSlot<A>>,
}

impl<Q, V, A, I, Fo, C> Kernel<Q, V> for Reduce<A, I, Fo, C>
where
    Q: QueryData,
    V: ViewSet,
    A: Send + 'static,
    I: Fn() -> A + Send + Sync + 'static,
    Fo: for<'w> Fn(A, Entity, Q::Item<'w>) -> A + Send + Sync + 'static,
    C: Fn(A, A) -> A + Send + Sync + 'static,
{
    type Slot = Option<A>;

    #[inline]
    unsafe fn run(&self, chunk: &ChunkTask<Q::Ptrs>, _views: V::Fetch, slot: &mut Option<A>) {
        let mut acc = (self.identity)();
        // SAFETY: as in `Plain::run`.
        for (row, entity) in unsafe { chunk.rows() } {
            // SAFETY: as in `Plain::run`.
            acc = (self.fold)(acc, entity, unsafe { Q::item(chunk.ptrs, row) });
        }
        *slot = Some(acc);
    }

    fn finish(self, slots: Vec<Option<A>>) -> Vec<CommandBuffer> {
        let mut acc: Option<A> = None;
        let mut complete = true;
        for value in slots {
            match value {
                Some(v) => {
                    acc = Some(match acc {
                        None => v,
                        Some(a) => (self.combine)(a, v),
                    })
                }
                None => complete = false,
            }
        }
        let result = if complete {
            Some(acc.unwrap_or_else(|| (self.identity)()))
        } else {
            None
        };
        self.out.set(result);
        Vec::new()
    }
}

/// Wall time of a labelled launch: the last task to finish stamps the end.
pub(crate) struct Timing {
    start: Instant,
    remaining: AtomicUsize,
    end_nanos: AtomicU64,
}

impl Timing {
    pub(crate) fn new(tasks: usize) -> Self {
        Timing {
            start: Instant::now(),
            remaining: AtomicUsize::new(tasks),
            end_nanos: AtomicU64::new(0),
        }
    }

    fn task_done(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            let nanos = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.end_nanos.store(nanos.max(1), Ordering::Release);
        }
    }

    /// Launch-to-last-task time, or launch-to-now when a task panicked before stamping.
    pub(crate) fn wall(&self) -> Duration {
        match self.end_nanos.load(Ordering::Acquire) {
            0 => self.start.elapsed(),
            n => Duration::from_nanos(n),
        }
    }
}

/// The shared job of one launch. Tasks only ever get `&Job`.
pub(crate) struct Job<Q: QueryData, V: ViewSet, K: Kernel<Q, V>> {
    pub(crate) group: TaskGroup,
    registry_id: u64,
    /// Per matched archetype: where it lives in the registry's world (tasks only create shared
    /// references from it), its column indices and its task range.
    spans: Spans<Q::Columns>,
    /// `slots[i]` is written only by task `i` (each index runs exactly once), and read only at
    /// retirement after the group has completed.
    slots: Vec<UnsafeCell<K::Slot>>,
    views: V::Fetch,
    kernel: K,
    timing: Option<Timing>,
}

// SAFETY: tasks on several threads share `&Job`:
// - `spans`, `views`, `kernel` are only read (`K: Sync`, `Q::Columns` and the pointer types are
//   `Sync`); the archetype pointers in `spans` are only turned into `&Archetype` (`Archetype` is
//   `Sync`, being part of the `Sync` `World`);
// - `slots[i]` is accessed mutably by exactly one task (index `i` runs once), and by the
//   retiring thread only after `group` reports completion (acquire), so no two threads touch one
//   slot at once; moving slot values between threads needs `K::Slot: Send`.
unsafe impl<Q: QueryData, V: ViewSet, K: Kernel<Q, V>> Sync for Job<Q, V, K> {}
// SAFETY: every field is `Send` (`UnsafeCell<T>: Send` for `T: Send`; pointers are wrapped in
// `Send` types) except the archetype pointers in `spans`, which are shared pointers to `Sync`
// values (`&Archetype: Send`); the job owns no thread-bound state.
unsafe impl<Q: QueryData, V: ViewSet, K: Kernel<Q, V>> Send for Job<Q, V, K> {}

impl<Q: QueryData, V: ViewSet, K: Kernel<Q, V>> Job<Q, V, K> {
    pub(crate) fn new(
        registry_id: u64,
        spans: Spans<Q::Columns>,
        views: V::Fetch,
        kernel: K,
        timed: bool,
    ) -> Self {
        let n = spans.tasks();
        let slots = (0..n)
            .map(|_| UnsafeCell::new(K::Slot::default()))
            .collect();
        Job {
            group: TaskGroup::new(),
            registry_id,
            spans,
            slots,
            views,
            kernel,
            timing: timed.then(|| Timing::new(n)),
        }
    }

    /// The task body: runs chunk `index` (the pool calls it once per chunk index, through
    /// [`IndexedJob::run`], monomorphised into its batch loop). Resolves the chunk's column
    /// pointers here, on the worker, so launching does not cost O(chunks).
    #[inline]
    pub(crate) fn run_task(job: &Self, index: usize) {
        let _scope = CallbackScope::enter(job.registry_id);
        let span = job.spans.find(index);
        // SAFETY: `span.archetype` points into the registry's boxed world, taken from `&World`
        // when the launch was built. The launch is registered in the registry's in-flight list
        // until retired, and retirement waits for this task; every registry path that creates
        // `&mut World` (structural changes, `world_mut`, applying commands) and the registry's
        // `Drop` first wait for all in-flight launches (`OpAccess::Exclusive`,
        // launch/inflight.rs). So the world is alive, not reallocated and only shared while this
        // reference lives, and the archetype still has the chunks the span counted.
        let archetype = unsafe { span.archetype.as_ref() };
        let (chunk, part) = job.spans.locate(span, index);
        let chunk = archetype.chunk(chunk);
        let (start, end) = job.spans.part_rows(part, chunk.len());
        let chunk = &ChunkTask {
            ptrs: Q::ptrs(span.columns, chunk),
            entities: <Entity as QueryData>::ptrs((), chunk),
            start,
            end,
        };
        // SAFETY: task `index` runs exactly once, so this is the only reference to `slots[index]`
        // until retirement, which happens after the group completed.
        let slot = unsafe { &mut *job.slots[index].get() };
        let guard = ResetOnUnwind { slot };
        // SAFETY: the launch is registered until retired, and retirement waits for this task;
        // its access was checked against every other piece of work when it was launched.
        unsafe { job.kernel.run(chunk, job.views, &mut *guard.slot) };
        core::mem::forget(guard);
        if let Some(timing) = &job.timing {
            timing.task_done();
        }
    }
}

impl<Q: QueryData, V: ViewSet, K: Kernel<Q, V>> IndexedJob for Job<Q, V, K> {
    #[inline]
    fn run(&self, index: usize) {
        Job::run_task(self, index);
    }
}

/// Resets a chunk's slot if its callback unwinds: its commands are discarded and a reduction
/// sees the chunk as missing.
struct ResetOnUnwind<'a, S: Default> {
    slot: &'a mut S,
}

impl<S: Default> Drop for ResetOnUnwind<'_, S> {
    fn drop(&mut self) {
        // Only reached while unwinding: the normal path forgets the guard.
        *self.slot = S::default();
    }
}

/// A launch's job with its types erased, as stored in the registry's in-flight list.
pub(crate) trait ErasedJob: Send {
    /// The launch's task group.
    fn group(&self) -> &TaskGroup;
    /// Wall time from launch to the last task, if labelled.
    fn wall(&self) -> Option<Duration>;
    /// Consumes the job after its group completed; returns its command buffers in chunk order.
    fn finish(self: Box<Self>) -> Vec<CommandBuffer>;
}

impl<Q: QueryData, V: ViewSet, K: Kernel<Q, V>> ErasedJob for Job<Q, V, K> {
    fn group(&self) -> &TaskGroup {
        &self.group
    }

    fn wall(&self) -> Option<Duration> {
        self.timing.as_ref().map(Timing::wall)
    }

    fn finish(self: Box<Self>) -> Vec<CommandBuffer> {
        let job = *self;
        let slots = job.slots.into_iter().map(UnsafeCell::into_inner).collect();
        job.kernel.finish(slots)
    }
}
