//! The shared job of one `each_async` call: the task spans (one per matched archetype with
//! chunks), the callback ("kernel"), the views, one output slot per task and the task group.
//! The job is an [`IndexedJob`] queued by freyr-sched's `submit_job` (a few `Copy` range values,
//! `run_batch` inlined into the pool's batch loop): no heap allocation per task.
//!
//! ```text
//!  Box<Job>  (one allocation per call; the slot vector is a second one unless `Slot` is `()`,
//!             and spans past the first a third)
//!  ┌────────────────────────────────────────────────────────────────┐
//!  │ group: TaskGroup            pending counter + first panic      │
//!  │ spans: first + [Span]       archetype pointer (into the        │
//!  │                             registry's boxed world), column    │
//!  │                             indices, first/last task index     │
//!  │ slots:  TaskSlots<Slot> (n)  () | TaskOutput | Option<A>       │
//!  │ kernel: K                   the user's closure(s)              │
//!  │ views:  V::Fetch            world / resource pointers          │
//!  └────────────────────────────────────────────────────────────────┘
//!  batch *next..end (tasks a pool thread owns): per slab run of consecutive chunks, find the
//!          span, resolve the run's column pointers through the archetype once, then one
//!          kernel call runs the batch's tasks in that run in order, task i writing slots[i]
//!          only  (each index runs exactly once)
//! ```
//!
//! Launching costs O(matched archetypes) on the calling thread; the pointer lookup is done by
//! the tasks, in parallel, once per batch and slab.

use std::time::{Duration, Instant};

use freyr_core::Entity;
use freyr_sched::{IndexedJob, TaskGroup};

use crate::commands::EachContext;
use crate::events::buffer::TaskOutput;
use crate::fetch::{ColumnPtr, QueryData};
use crate::iter::rows::fold_rows;
use crate::launch::callback::CallbackScope;
use crate::launch::handoff::{Countdown, TaskSlots};
use crate::launch::reduce::ReduceSlot;
use crate::launch::spans::{Spans, TaskRun};
use crate::row_path::row_loop;
use crate::view::ViewSet;
use freyr_profile::tick::trace::{TaskSpan, nanos_since, row_of};

/// What a task run's kernel gets: the run's column pointers and its entity ids, at its row 0.
pub(crate) type RunPtrs<Q> = (<Q as QueryData>::Ptrs, ColumnPtr<Entity>);

/// The entities of rows `start..end` of a run.
///
/// # Safety
///
/// `entities` points at an entity array of at least `end` initialised rows, not written while
/// the returned slice lives.
#[inline(always)]
unsafe fn task_entities<'a>(
    entities: ColumnPtr<Entity>,
    (start, end): (usize, usize),
) -> &'a [Entity] {
    // SAFETY: the first `end` rows are initialised and not written meanwhile (caller contract).
    unsafe { &<Entity as QueryData>::slice(entities, end)[start..] }
}

/// What a launch does with each task, and what it leaves behind per task.
pub trait Kernel<Q: QueryData, V: ViewSet>: Send + Sync + 'static {
    /// Per-task output. `Default` is also what an unwinding task leaves behind.
    type Slot: Default + Send;

    /// Runs tasks `*next..stop` of `run` in index order, each over its rows in row order. Sets
    /// `*next` to `i + 1` before starting task `i` (so an unwind leaves it one past the task
    /// that panicked), and writes only `slots[i]` for task `i`, resetting it to its default if
    /// the task unwinds.
    ///
    /// # Safety
    ///
    /// `run` and `views` are valid for the call (the launch is registered and its access
    /// checked), `run.first <= *next < stop <= run.end()`, and no other thread runs these tasks
    /// or touches their slots.
    unsafe fn run_tasks(
        &self,
        run: &TaskRun<RunPtrs<Q>>,
        views: V::Fetch,
        slots: &TaskSlots<Self::Slot>,
        next: &mut usize,
        stop: usize,
    );

    /// Consumes the per-task outputs in task order at retirement and returns the command
    /// buffers to apply, in task order.
    fn finish(self, slots: Vec<Self::Slot>) -> Vec<TaskOutput>;
}

/// Runs `body(rows, slot)` for tasks `*next..stop` of `run`, in order, with `slots[i]` for task
/// `i`: the per-task loop of every kernel.
///
/// # Safety
///
/// As for [`Kernel::run_tasks`]: `*next..stop` lies in the run, and this thread alone runs these
/// tasks and touches their slots.
#[inline(always)]
unsafe fn for_each_task<P, S: Default>(
    run: &TaskRun<P>,
    slots: &TaskSlots<S>,
    next: &mut usize,
    stop: usize,
    mut body: impl FnMut((usize, usize), &mut S),
) {
    while *next < stop {
        let index = *next;
        *next = index + 1;
        // SAFETY: task `index` runs exactly once, on this thread (caller contract), so this is
        // the only access to `slots[index]` until retirement, which happens after the group
        // completed.
        unsafe {
            slots.with_mut(index, |slot| {
                let guard = ResetOnUnwind { slot };
                body(run.task_rows(index), &mut *guard.slot);
                core::mem::forget(guard);
            });
        }
    }
}

/// `each_async`: a plain per-row callback, no outputs.
pub struct Plain<F>(pub F);

impl<Q, V, F> Kernel<Q, V> for Plain<F>
where
    Q: QueryData,
    V: ViewSet,
    F: for<'w> Fn(Entity, Q::Item<'w>) + Send + Sync + 'static,
{
    type Slot = ();

    #[inline]
    unsafe fn run_tasks(
        &self,
        run: &TaskRun<RunPtrs<Q>>,
        _views: V::Fetch,
        slots: &TaskSlots<()>,
        next: &mut usize,
        stop: usize,
    ) {
        // SAFETY: forwarded caller contract.
        unsafe { plain_tasks::<Q, F>(&self.0, run, slots, next, stop) }
    }

    fn finish(self, _slots: Vec<()>) -> Vec<TaskOutput> {
        Vec::new()
    }
}

/// `each_async_with`: a per-row callback with a [`EachContext`] (views + per-task commands).
pub struct WithContext<F>(pub F);

impl<Q, V, F> Kernel<Q, V> for WithContext<F>
where
    Q: QueryData,
    V: ViewSet,
    F: for<'w> Fn(Entity, Q::Item<'w>, &mut EachContext<'w, V>) + Send + Sync + 'static,
{
    type Slot = TaskOutput;

    #[inline]
    unsafe fn run_tasks(
        &self,
        run: &TaskRun<RunPtrs<Q>>,
        views: V::Fetch,
        slots: &TaskSlots<TaskOutput>,
        next: &mut usize,
        stop: usize,
    ) {
        // SAFETY: forwarded caller contract.
        unsafe { context_tasks::<Q, V, F>(&self.0, run, views, slots, next, stop) }
    }

    fn finish(self, slots: Vec<TaskOutput>) -> Vec<TaskOutput> {
        slots
    }
}

/// `each_async_reduce`: fold each task from `identity`, combine the task results in task order
/// at retirement.
pub struct Reduce<A, I, Fo, C> {
    pub identity: I,
    pub fold: Fo,
    pub combine: C,
    pub out: std::sync::Arc<ReduceSlot<A>>,
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
    unsafe fn run_tasks(
        &self,
        run: &TaskRun<RunPtrs<Q>>,
        _views: V::Fetch,
        slots: &TaskSlots<Option<A>>,
        next: &mut usize,
        stop: usize,
    ) {
        // SAFETY: forwarded caller contract.
        unsafe { reduce_tasks::<Q, A, I, Fo>(&self.identity, &self.fold, run, slots, next, stop) }
    }

    fn finish(self, slots: Vec<Option<A>>) -> Vec<TaskOutput> {
        // `combine` (or `identity`) may panic: then the result is lost, and the slot says so
        // before the panic goes on (the values not combined yet drop with `slots`).
        let lost = LostOnUnwind(&self.out);
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
        core::mem::forget(lost);
        self.out.set(result);
        Vec::new()
    }
}

row_loop! {
    /// The tasks of `each_async`: out of line on purpose, and in two copies picked at run time
    /// ([`RowPath`](crate::RowPath)). As its own function, with the run's column pointers
    /// arriving as opaque arguments, the row loop is vectorised across rows (`pos += vel * dt`
    /// over `[f32; 3]` runs at the memory floor); inlined into the pool's batch loop it stayed
    /// scalar, about 1.6x slower. One call covers a whole batch of tasks in one slab, so an
    /// empty callback costs a few instructions per task.
    ///
    /// # Safety
    ///
    /// As for [`Kernel::run_tasks`].
    unsafe fn plain_tasks / plain_tasks_baseline / plain_tasks_avx2 <Q, F>(
        f: &F,
        run: &TaskRun<RunPtrs<Q>>,
        slots: &TaskSlots<()>,
        next: &mut usize,
        stop: usize,
    ) where {
        Q: QueryData,
        F: for<'w> Fn(Entity, Q::Item<'w>),
    } units(run.rows_of(*next, stop)) {
        let (ptrs, entities) = run.ptrs;
        // SAFETY: `*next..stop` lies in the run and is this thread's alone (caller contract).
        unsafe {
            for_each_task(run, slots, next, stop, |task, _| {
                // SAFETY: the run's entity array holds its `len` rows, not written meanwhile;
                // this task is the only one touching its rows, and the launch's access was
                // checked against all other work (caller contract).
                let entities = task_entities(entities, task);
                fold_rows::<Q, ()>(ptrs, task.0, entities, (), |(), entity, item| f(entity, item));
            });
        }
    }
}

row_loop! {
    /// The tasks of `each_async_with`, out of line and in two copies like [`plain_tasks`].
    ///
    /// # Safety
    ///
    /// As for [`Kernel::run_tasks`].
    unsafe fn context_tasks / context_tasks_baseline / context_tasks_avx2 <Q, V, F>(
        f: &F,
        run: &TaskRun<RunPtrs<Q>>,
        views: V::Fetch,
        slots: &TaskSlots<TaskOutput>,
        next: &mut usize,
        stop: usize,
    ) where {
        Q: QueryData,
        V: ViewSet,
        F: for<'w> Fn(Entity, Q::Item<'w>, &mut EachContext<'w, V>),
    } units(run.rows_of(*next, stop)) {
        let (ptrs, entities) = run.ptrs;
        // SAFETY: as in `plain_tasks`.
        unsafe {
            for_each_task(run, slots, next, stop, |task, slot| {
                // SAFETY: views are valid while the launch is registered (caller contract).
                let mut ctx = EachContext::new(V::item(views), slot);
                // SAFETY: as in `plain_tasks`.
                let entities = task_entities(entities, task);
                fold_rows::<Q, ()>(ptrs, task.0, entities, (), |(), entity, item| {
                    f(entity, item, &mut ctx)
                });
            });
        }
    }
}

row_loop! {
    /// The tasks of `each_async_reduce`: each folds its rows in order from `identity()`. Out of
    /// line and in two copies like [`plain_tasks`].
    ///
    /// # Safety
    ///
    /// As for [`Kernel::run_tasks`].
    unsafe fn reduce_tasks / reduce_tasks_baseline / reduce_tasks_avx2 <Q, A, I, Fo>(
        identity: &I,
        fold: &Fo,
        run: &TaskRun<RunPtrs<Q>>,
        slots: &TaskSlots<Option<A>>,
        next: &mut usize,
        stop: usize,
    ) where {
        Q: QueryData,
        I: Fn() -> A,
        Fo: for<'w> Fn(A, Entity, Q::Item<'w>) -> A,
    } units(run.rows_of(*next, stop)) {
        let (ptrs, entities) = run.ptrs;
        // SAFETY: as in `plain_tasks`.
        unsafe {
            for_each_task(run, slots, next, stop, |task, slot| {
                // SAFETY: as in `plain_tasks`.
                let entities = task_entities(entities, task);
                *slot = Some(fold_rows::<Q, A>(ptrs, task.0, entities, identity(), fold));
            });
        }
    }
}

/// Marks a reduction's result as lost if combining unwinds.
struct LostOnUnwind<'a, A>(&'a ReduceSlot<A>);

impl<A> Drop for LostOnUnwind<'_, A> {
    fn drop(&mut self) {
        // Only reached while unwinding: the normal path forgets the guard.
        self.0.set(None);
    }
}

/// Wall time of a labelled launch: the last task to finish stamps the end ([`Countdown`]).
pub(crate) struct Timing {
    start: Instant,
    countdown: Countdown,
}

impl Timing {
    pub(crate) fn new(tasks: usize) -> Self {
        Timing {
            start: Instant::now(),
            countdown: Countdown::new(tasks),
        }
    }

    fn tasks_done(&self, n: usize) {
        self.countdown.finish(n, || {
            u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
        });
    }

    /// Launch-to-last-task time, or launch-to-now when a task panicked before stamping.
    pub(crate) fn wall(&self) -> Duration {
        match self.countdown.end() {
            None => self.start.elapsed(),
            Some(n) => Duration::from_nanos(n),
        }
    }
}

/// A traced launch's batch stamps: `spans[i]` describes the batch of tasks that started at
/// task `i` (each task index starts at most one batch), written only by the thread that ran
/// that batch and read only at retirement, after the group completed.
pub(crate) struct TaskTrace {
    epoch: Instant,
    spans: TaskSlots<TaskSpan>,
}

impl TaskTrace {
    fn new(epoch: Instant, tasks: usize) -> Self {
        TaskTrace {
            epoch,
            spans: TaskSlots::new(tasks),
        }
    }

    /// Stamps the batch `first..end` that this thread ran from `start` to now.
    ///
    /// # Safety
    ///
    /// The calling thread ran task `first` (so no other thread stamps `spans[first]`), and the
    /// spans are not read before the launch's group completes.
    unsafe fn stamp(&self, first: usize, end: usize, start: Instant) {
        let span = TaskSpan {
            end: u32::try_from(end).unwrap_or(u32::MAX),
            row: row_of(freyr_sched::current_worker_index()),
            start_ns: nanos_since(self.epoch, start),
            end_ns: nanos_since(self.epoch, Instant::now()),
        };
        // SAFETY: task `first` runs exactly once, on this thread (caller contract), so this is
        // the only access to `spans[first]` until retirement reads it after the group completed.
        unsafe { self.spans.with_mut(first, |slot| *slot = span) };
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
    slots: TaskSlots<K::Slot>,
    views: V::Fetch,
    kernel: K,
    timing: Option<Timing>,
    /// Batch stamps, when the launch is traced (`None`: no clock read, nothing allocated).
    trace: Option<TaskTrace>,
    /// The launch's `tracing` span, the parent of its batches' `tasks` spans (feature
    /// `tracing`); closed when the job is dropped at retirement.
    #[cfg(feature = "tracing")]
    span: LaunchSpan,
}

/// What a batch's `tasks` span names (feature `tracing`): its launch's span, label and number.
#[cfg(feature = "tracing")]
pub struct LaunchSpan {
    /// The `launch` span.
    pub span: freyr_profile::spans::Span,
    /// The launch's label (`with_label`), if any.
    pub label: Option<&'static str>,
    /// The launch's number.
    pub seq: u64,
}

// SAFETY: tasks on several threads share `&Job`:
// - `spans`, `views`, `kernel` are only read (`K: Sync`, `Q::Columns` and the pointer types are
//   `Sync`); the archetype pointers in `spans` are only turned into `&Archetype` (`Archetype` is
//   `Sync`, being part of the `Sync` `World`);
// - `slots[i]` is accessed mutably by exactly one task (index `i` runs once), and by the
//   retiring thread only after `group` reports completion (acquire), so no two threads touch one
//   slot at once; moving slot values between threads needs `K::Slot: Send`;
// - `trace.spans[i]` follows the same rule as `slots[i]`: written only by the thread that ran
//   task `i` (when a batch starts there), read only after the group completed;
// - `span` (feature `tracing`) is `Sync` itself and tasks only read it.
unsafe impl<Q: QueryData, V: ViewSet, K: Kernel<Q, V>> Sync for Job<Q, V, K> {}
// SAFETY: every field is `Send` (`TaskSlots<T>` holds `T`s, `Send` for `T: Send`; pointers are
// wrapped in `Send` types) except the archetype pointers in `spans`, which are shared pointers to `Sync`
// values (`&Archetype: Send`); the job owns no thread-bound state.
unsafe impl<Q: QueryData, V: ViewSet, K: Kernel<Q, V>> Send for Job<Q, V, K> {}

impl<Q: QueryData, V: ViewSet, K: Kernel<Q, V>> Job<Q, V, K> {
    pub(crate) fn new(
        registry_id: u64,
        spans: Spans<Q::Columns>,
        views: V::Fetch,
        kernel: K,
        timed: bool,
        trace: Option<Instant>,
        #[cfg(feature = "tracing")] span: LaunchSpan,
    ) -> Self {
        let n = spans.tasks();
        Job {
            group: TaskGroup::new(),
            registry_id,
            spans,
            slots: TaskSlots::new(n),
            views,
            kernel,
            timing: timed.then(|| Timing::new(n)),
            trace: trace.map(|epoch| TaskTrace::new(epoch, n)),
            #[cfg(feature = "tracing")]
            span,
        }
    }

    /// The batch body: runs tasks `*next..end` (the pool calls it per batch of a range it owns,
    /// through [`IndexedJob::run_batch`], monomorphised into its batch loop). Resolves the column
    /// pointers here, on the worker, once per slab run of consecutive chunks rather than once
    /// per task, so launching does not cost O(chunks) and a batch of cheap tasks costs about one
    /// kernel call.
    #[inline]
    pub(crate) fn run_tasks(job: &Self, next: &mut usize, end: usize) {
        let _scope = CallbackScope::enter(job.registry_id);
        while *next < end {
            let index = *next;
            let span = job.spans.find(index);
            // SAFETY: `span.archetype` points into the registry's boxed world, taken from
            // `&World` when the launch was built. The launch is registered in the registry's
            // in-flight list until retired, and retirement waits for this task; every registry
            // path that creates `&mut World` (structural changes, `world_mut`, applying commands)
            // and the registry's `Drop` first wait for all in-flight launches
            // (`OpAccess::Exclusive`, launch/inflight.rs). So the world is alive, not
            // reallocated and only shared while this reference lives, and the archetype still
            // has the chunks the span counted.
            let archetype = unsafe { span.archetype.as_ref() };
            let chunk = job.spans.chunk_of(span, index);
            let rows = archetype.run_at(chunk);
            let run = job.spans.task_run(
                span,
                chunk,
                rows.len(),
                (
                    Q::ptrs(span.columns, rows),
                    <Entity as QueryData>::ptrs((), rows),
                ),
            );
            // A span ends where its chunks stop passing a change filter, which may be before
            // the slab run does.
            let stop = end.min(run.end()).min(span.end);
            let traced = job.trace.as_ref().map(|t| (t, Instant::now()));
            // Exited when the batch ends, or while unwinding from a panicking callback.
            #[cfg(feature = "tracing")]
            let _batch = {
                let launch = &job.span;
                freyr_profile::spans::tasks(&launch.span, launch.label, launch.seq, index, stop)
                    .entered()
            };
            // SAFETY: `run.first <= index < stop <= run.end()`; this thread owns the indices
            // `index..stop` (each runs exactly once); the launch is registered until retired, and
            // retirement waits for these tasks; its access was checked against every other piece
            // of work when it was launched.
            unsafe {
                job.kernel
                    .run_tasks(&run, job.views, &job.slots, next, stop);
            }
            if let Some((trace, start)) = traced {
                // SAFETY: this thread ran task `index` (it owns `index..stop`); the spans are
                // read only at retirement, after the group completed.
                unsafe { trace.stamp(index, stop, start) };
            }
            if let Some(timing) = &job.timing {
                timing.tasks_done(stop - index);
            }
        }
    }
}

impl<Q: QueryData, V: ViewSet, K: Kernel<Q, V>> IndexedJob for Job<Q, V, K> {
    #[inline]
    fn run(&self, index: usize) {
        let mut next = index;
        Job::run_tasks(self, &mut next, index + 1);
    }

    #[inline]
    fn run_batch(&self, next: &mut usize, end: usize) {
        Job::run_tasks(self, next, end);
    }
}

/// Resets a task's slot if its callback unwinds: its commands are discarded and a reduction
/// sees the task's piece as missing.
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
    /// The batch stamps of a traced launch (empty when not traced). Call only after the group
    /// completed.
    fn take_trace(&mut self) -> Vec<TaskSpan>;
    /// Consumes the job after its group completed; returns its task outputs (commands and events) in chunk order.
    fn finish(self: Box<Self>) -> Vec<TaskOutput>;
}

impl<Q: QueryData, V: ViewSet, K: Kernel<Q, V>> ErasedJob for Job<Q, V, K> {
    fn group(&self) -> &TaskGroup {
        &self.group
    }

    fn wall(&self) -> Option<Duration> {
        self.timing.as_ref().map(Timing::wall)
    }

    fn take_trace(&mut self) -> Vec<TaskSpan> {
        self.trace
            .take()
            .map_or_else(Vec::new, |t| t.spans.into_vec())
    }

    fn finish(self: Box<Self>) -> Vec<TaskOutput> {
        let job = *self;
        job.kernel.finish(job.slots.into_vec())
    }
}
