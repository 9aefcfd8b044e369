//! The thread pool: construction, the chunk-task path, metrics, and
//! shutdown. `parallel_for` builds on it in `parallel_for.rs`, scopes in
//! `scope.rs`, and `TaskGroup::wait` in `group_wait.rs`.

use core::fmt;
use core::mem;
use std::io;
use std::panic::{self, AssertUnwindSafe};

use crate::group::TaskGroup;
use crate::group_inner::GroupPanic;
use crate::job::{IndexedJob, for_each_index, run_body_batch, run_job_batch, run_whole};
use crate::metrics::{Counters, PoolMetrics};
use crate::shared::{Shared, close_episode, open_episode, worker_main};
use crate::worker_count::resolve_worker_count;
use freyr_sync::{self as sync, Arc, JoinHandle};

/// A work-stealing pool of `workers()` threads: the calling thread plus
/// `workers() - 1` background threads named `freyr-worker-{i}`.
///
/// Each background worker owns a bounded MPMC queue; submissions are spread
/// over the queues by a per-producer LCG, a full queue spills into an
/// overflow queue, idle workers steal, then spin briefly, then park. Threads
/// that wait for a [`TaskGroup`] help run queued tasks. A pool of one runs
/// everything inline on the calling thread.
///
/// Dropping the pool lets the workers drain every queued task, then joins
/// them all. A pool dropped from inside one of its own tasks (reached through
/// a `Mutex`, say) joins every other worker and detaches the one running that
/// task, which exits once the task returns.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// let pool = freyr::ThreadPool::new(4);
/// assert_eq!(pool.workers(), 4);
/// let hits = AtomicUsize::new(0);
/// pool.parallel_for(1000, 64, |_| {
///     hits.fetch_add(1, Ordering::Relaxed);
/// });
/// assert_eq!(hits.load(Ordering::Relaxed), 1000);
/// ```
pub struct ThreadPool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    workers: usize,
}

/// Configures and builds a [`ThreadPool`].
///
/// # Examples
///
/// ```
/// let pool = freyr::ThreadPool::builder()
///     .workers(3)
///     .thread_name("physics-")
///     .stack_size(1 << 20)
///     .pin_threads(false)
///     .build();
/// assert_eq!(pool.workers(), 3);
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct ThreadPoolBuilder {
    workers: usize,
    pin_threads: bool,
    stack_size: Option<usize>,
    thread_name: String,
}

impl Default for ThreadPoolBuilder {
    fn default() -> Self {
        ThreadPoolBuilder {
            workers: 0,
            pin_threads: false,
            stack_size: None,
            thread_name: String::from("freyr-worker-"),
        }
    }
}

impl ThreadPoolBuilder {
    /// A builder with the defaults: auto worker count, no pinning, the
    /// platform's stack size, threads named `freyr-worker-{i}`.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = freyr::sched::ThreadPoolBuilder::new().workers(1).build();
    /// assert_eq!(pool.workers(), 1);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Total parallelism including the calling thread; 0 = auto (the
    /// machine's available parallelism). Resolved by
    /// [`resolve_worker_count`](crate::resolve_worker_count).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = freyr::ThreadPool::builder().workers(2).build();
    /// assert_eq!(pool.workers(), 2);
    /// ```
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// Pin background worker `i` to core `(i + 1) % cores` with
    /// `core_affinity` (core 0 is left to the calling thread). Pinning is a
    /// best effort: a failure leaves the thread unpinned.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = freyr::ThreadPool::builder().workers(2).pin_threads(true).build();
    /// assert_eq!(pool.workers(), 2);
    /// ```
    pub fn pin_threads(mut self, pin: bool) -> Self {
        self.pin_threads = pin;
        self
    }

    /// Stack size of each background thread, in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = freyr::ThreadPool::builder().workers(2).stack_size(256 * 1024).build();
    /// assert_eq!(pool.workers(), 2);
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Thread name prefix; worker `i` is named `{prefix}{i}`
    /// (default `freyr-worker-`).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = freyr::ThreadPool::builder().workers(2).thread_name("io-").build();
    /// assert_eq!(pool.workers(), 2);
    /// ```
    pub fn thread_name(mut self, prefix: impl Into<String>) -> Self {
        self.thread_name = prefix.into();
        self
    }

    /// Builds the pool, spawning `workers - 1` threads.
    ///
    /// # Panics
    ///
    /// If the OS refuses to spawn a thread (see [`try_build`](Self::try_build)).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = freyr::ThreadPool::builder().workers(3).build();
    /// assert_eq!(pool.metrics().workers.len(), 3);
    /// ```
    pub fn build(self) -> ThreadPool {
        match self.try_build() {
            Ok(pool) => pool,
            Err(error) => panic!("freyr-sched: cannot spawn a worker thread: {error}"),
        }
    }

    /// Builds the pool; on a spawn failure the threads already started are
    /// shut down and joined before the error is returned.
    ///
    /// # Errors
    ///
    /// The OS error from spawning a thread.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = freyr::ThreadPool::builder().workers(2).try_build().unwrap();
    /// assert_eq!(pool.workers(), 2);
    /// ```
    pub fn try_build(self) -> io::Result<ThreadPool> {
        let workers = resolve_worker_count(self.workers, sync::available_parallelism());
        let mut pool = ThreadPool {
            shared: Arc::new(Shared::new(workers)),
            threads: Vec::with_capacity(workers - 1),
            workers,
        };
        for index in 0..workers - 1 {
            let shared = Arc::clone(&pool.shared);
            let pin = self.pin_threads;
            let name = format!("{}{index}", self.thread_name);
            // On error `pool` drops here, which shuts down and joins the
            // threads spawned so far.
            let handle = sync::spawn_worker(name, self.stack_size, move || {
                worker_main(shared, index, pin);
            })?;
            pool.threads.push(handle);
        }
        pool.shared.start_latch.wait_for(workers - 1);
        Ok(pool)
    }
}

/// A [`ThreadPool`]'s identity ([`ThreadPool::id`]): equal for the same live pool, different
/// for two live pools with workers of their own.
///
/// # Examples
///
/// ```
/// let pool = freyr::ThreadPool::new(2);
/// assert_ne!(pool.id(), freyr::sched::PoolId::INLINE);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PoolId(usize);

impl PoolId {
    /// The id every pool of one shares (it runs each job inline, so nothing waits on it).
    pub const INLINE: PoolId = PoolId(0);
}

impl ThreadPool {
    /// A pool of `workers` total threads including the caller (`workers - 1`
    /// background threads); 0 = auto, 1 = inline.
    ///
    /// # Panics
    ///
    /// If a thread cannot be spawned.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = freyr::ThreadPool::new(1);
    /// assert_eq!(pool.workers(), 1);
    /// let auto = freyr::ThreadPool::new(0);
    /// assert!(auto.workers() >= 1);
    /// ```
    #[must_use]
    pub fn new(workers: usize) -> ThreadPool {
        ThreadPoolBuilder::new().workers(workers).build()
    }

    /// A builder for a configured pool.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = freyr::ThreadPool::builder().workers(2).build();
    /// assert_eq!(pool.workers(), 2);
    /// ```
    pub fn builder() -> ThreadPoolBuilder {
        ThreadPoolBuilder::new()
    }

    /// Total parallelism including the calling thread.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(freyr::ThreadPool::new(3).workers(), 3);
    /// ```
    #[must_use]
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// This pool's identity, to check later that work is waited for on the pool it was
    /// submitted to (as the deadline scheduler and the async pump of `freyr::time` do).
    ///
    /// Two pools with workers of their own that are alive at the same time have different ids;
    /// an id may be reused after its pool is dropped (a dropped pool ran every task it was
    /// given, so nothing can still wait on it). Every pool of one shares [`PoolId::INLINE`]: it
    /// runs each job before the submitting call returns, so nothing ever waits on it either.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::sched::PoolId;
    /// let (a, b) = (ThreadPool::new(2), ThreadPool::new(2));
    /// assert_eq!(a.id(), a.id());
    /// assert_ne!(a.id(), b.id());
    /// assert_eq!(ThreadPool::new(1).id(), PoolId::INLINE);
    /// ```
    #[must_use]
    pub fn id(&self) -> PoolId {
        PoolId(
            self.shared()
                .map_or(0, |shared| core::ptr::from_ref(shared) as usize),
        )
    }

    /// The tasks run so far in the calling thread's slot of this pool: its own slot if it is one
    /// of this pool's workers, else the slot that every thread outside the pool shares. The
    /// difference across a wait is how many tasks the waiting thread ran while it helped (as
    /// the deadline scheduler's stall telemetry reports); [`metrics`](Self::metrics) gives
    /// every slot at once, with an allocation.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::sched::TaskGroup;
    /// let pool = ThreadPool::new(1);
    /// let before = pool.tasks_run_here();
    /// let group = TaskGroup::new();
    /// fn nop(_: &(), _: usize) {}
    /// // SAFETY: static job; `group` outlives the wait.
    /// unsafe { pool.submit_indexed(&group, &(), 10, nop) };
    /// group.wait(&pool);
    /// // A pool of one runs every task on the calling thread.
    /// assert_eq!(pool.tasks_run_here() - before, 10);
    /// ```
    #[must_use]
    pub fn tasks_run_here(&self) -> u64 {
        self.current_counters()
            .tasks_run
            .load(core::sync::atomic::Ordering::Relaxed)
    }

    /// The protocol state, or `None` for an inline pool.
    pub(crate) fn shared(&self) -> Option<&Shared> {
        (self.workers > 1).then_some(&*self.shared)
    }

    pub(crate) fn is_inline(&self) -> bool {
        self.workers == 1
    }

    /// The allocation-free chunk-task path: queues `count` tasks; task `i`
    /// calls `func(job, i)` once. Tasks are queued as a few `Copy` range
    /// values `{fn, job, start..end, group}` (at most 4 per worker, split
    /// further while threads are idle), so dispatch costs no heap allocation
    /// and one group-counter increment per call.
    ///
    /// Returns at once. With `workers() == 1` the tasks run inline before it
    /// returns. Panics in tasks are caught and stored in `group`; the other
    /// tasks still run; [`TaskGroup::wait`] re-raises the first.
    ///
    /// `func` is called through a function pointer, once per index; for
    /// cheap tasks [`submit_job`](Self::submit_job) is faster (the body is
    /// inlined into the pool's batch loop).
    ///
    /// # Panics
    ///
    /// If `group`'s pending indices would exceed `usize::MAX / 2` (only a
    /// `count` no pool could ever run gets there); nothing is queued then.
    ///
    /// # Safety
    ///
    /// - `job` must point to a valid `J` that stays valid, and is not
    ///   mutated except through its own synchronisation, until
    ///   `group.wait(self)` has returned (or `group.is_done()` was observed
    ///   `true`); `J: Sync` makes the shared use from many threads sound.
    /// - `group` must not be moved or forgotten before that (dropping it is
    ///   fine: `TaskGroup`'s `Drop` blocks until its tasks finished).
    /// - `func(job, i)` must be sound to call for every `i < count`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use freyr::ThreadPool;
    /// use freyr::sched::TaskGroup;
    ///
    /// struct Job {
    ///     sums: Vec<AtomicU64>,
    /// }
    /// fn chunk(job: &Job, i: usize) {
    ///     job.sums[i].store(i as u64 * 2, Ordering::Relaxed);
    /// }
    /// let pool = ThreadPool::new(3);
    /// let job = Job { sums: (0..50).map(|_| AtomicU64::new(0)).collect() };
    /// let group = TaskGroup::new();
    /// // SAFETY: `job` and `group` live until after the wait.
    /// unsafe { pool.submit_indexed(&group, &job, 50, chunk) };
    /// group.wait(&pool);
    /// assert!(job.sums.iter().enumerate().all(|(i, s)| s.load(Ordering::Relaxed) == i as u64 * 2));
    /// ```
    #[inline]
    pub unsafe fn submit_indexed<J: Sync>(
        &self,
        group: &TaskGroup,
        job: *const J,
        count: usize,
        func: fn(&J, usize),
    ) {
        if count == 0 {
            return;
        }
        if self.is_inline() {
            // SAFETY: the caller guarantees `job` is valid until the wait.
            let job = unsafe { &*job };
            self.run_inline_batch(group, count, |next, stop| {
                for_each_index(next, stop, |index| func(job, index));
            });
            return;
        }
        // SAFETY: `fn(&J, usize)` and `unsafe fn(*const (), usize)` have the
        // same ABI: `&J` and `*const ()` are ABI-compatible pointer types (both
        // thin, `J: Sized`), and the call site passes the `job` pointer the
        // caller vouched for, so the `&J` the callee sees is valid.
        let erased = unsafe { mem::transmute::<fn(&J, usize), unsafe fn(*const (), usize)>(func) };
        // SAFETY: the caller's contract is exactly `submit_range`'s:
        // `run_body_batch` calls `erased(job, i)` = `func(&*job, i)` for
        // indices below `count` only.
        unsafe {
            self.shared.submit_range(
                group.inner(),
                run_body_batch,
                job.cast::<()>(),
                Some(erased),
                count,
            );
        }
    }

    /// The fast chunk-task path: like [`submit_indexed`](Self::submit_indexed),
    /// but the job is an [`IndexedJob`] whose `run_batch` is monomorphised
    /// into the scheduler's batch loop: no indirect call per index, so a
    /// batch of cheap tasks costs about a plain loop plus the per-batch
    /// dispatch, and a job can share set-up across a batch. Queues `count`
    /// indices (each run once, through `run_batch`, whose default calls
    /// `job.run(i)`) as a few `Copy` range values; no heap allocation.
    ///
    /// Returns at once. With `workers() == 1` the tasks run inline before it
    /// returns. A panic in index `i` is caught and stored in `group`; the
    /// job's other indices still run; [`TaskGroup::wait`] re-raises the first.
    ///
    /// # Safety
    ///
    /// - `job` must point to a valid `J` that stays valid, and is not
    ///   mutated except through its own synchronisation, until
    ///   `group.wait(self)` has returned (or `group.is_done()` was observed
    ///   `true`); `J: Sync` (a supertrait of [`IndexedJob`]) makes the shared
    ///   use from many threads sound.
    /// - `group` must not be moved or forgotten before that (dropping it is
    ///   fine: `TaskGroup`'s `Drop` blocks until its tasks finished).
    /// - `job.run(i)` must be sound to call for every `i < count`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use freyr::ThreadPool;
    /// use freyr::sched::{IndexedJob, TaskGroup};
    ///
    /// struct Tally(Vec<AtomicUsize>);
    /// impl IndexedJob for Tally {
    ///     fn run(&self, i: usize) {
    ///         self.0[i].fetch_add(1, Ordering::Relaxed);
    ///     }
    /// }
    /// let pool = ThreadPool::new(3);
    /// let job = Tally((0..1954).map(|_| AtomicUsize::new(0)).collect());
    /// let group = TaskGroup::new();
    /// // SAFETY: `job` and `group` live until after the wait.
    /// unsafe { pool.submit_job(&group, &job, 1954) };
    /// group.wait(&pool);
    /// assert!(job.0.iter().all(|t| t.load(Ordering::Relaxed) == 1));
    /// assert_eq!(pool.metrics().total().tasks_run, 1954);
    /// ```
    #[inline]
    pub unsafe fn submit_job<J: IndexedJob>(&self, group: &TaskGroup, job: *const J, count: usize) {
        if count == 0 {
            return;
        }
        if self.is_inline() {
            // SAFETY: the caller guarantees `job` is valid until the wait.
            let job = unsafe { &*job };
            self.run_inline_batch(group, count, |next, stop| job.run_batch(next, stop));
            return;
        }
        // SAFETY: the caller's contract is exactly `submit_range`'s:
        // `run_job_batch::<J>` reads `job` as the `J` it was created from and
        // runs indices below `count` only.
        unsafe {
            self.shared.submit_range(
                group.inner(),
                run_job_batch::<J>,
                job.cast::<()>(),
                None,
                count,
            );
        }
    }

    /// An inline pool's batch: runs every index on this thread, counting the
    /// tasks and the busy time in this thread's slot.
    #[inline]
    fn run_inline_batch(&self, group: &TaskGroup, count: usize, f: impl FnMut(&mut usize, usize)) {
        let counters = self.shared.current_counters();
        let episode = open_episode();
        run_inline(group, count, f);
        close_episode(episode, counters);
        counters.add_run(count);
    }

    /// A cheap snapshot of the per-worker counters.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::sched::TaskGroup;
    /// let pool = ThreadPool::new(2);
    /// let group = TaskGroup::new();
    /// fn nop(_: &(), _: usize) {}
    /// // SAFETY: static job; `group` outlives the wait.
    /// unsafe { pool.submit_indexed(&group, &(), 40, nop) };
    /// group.wait(&pool);
    /// assert_eq!(pool.metrics().total().tasks_run, 40);
    /// ```
    #[must_use]
    pub fn metrics(&self) -> PoolMetrics {
        self.shared.metrics()
    }

    /// The body of [`TaskGroup::try_wait`]: helps (or, inline, blocks) until
    /// `group` is done, then takes its panic state.
    pub(crate) fn wait_group(&self, group: &TaskGroup) -> Result<(), GroupPanic> {
        let inner = group.inner();
        if !inner.is_done() {
            match self.shared() {
                #[cfg(not(freyr_loom))]
                Some(shared) if !inner.waits_on(shared.id()) => inner.block_until_done(),
                Some(shared) => shared.wait_until_done(inner),
                None => inner.block_until_done(),
            }
        }
        match inner.take_panic() {
            Some(panic) => Err(panic),
            None => Ok(()),
        }
    }

    /// The counters of the calling thread's slot.
    pub(crate) fn current_counters(&self) -> &Counters {
        self.shared.current_counters()
    }
}

/// Runs indices `0..count` on this thread through the batch function `f`
/// (as [`run_whole`] calls it: the rest of the range as one batch, since no
/// other thread could take a part of it), catching each panic into `group`
/// and carrying on with the next index.
#[inline]
pub(crate) fn run_inline(group: &TaskGroup, count: usize, mut f: impl FnMut(&mut usize, usize)) {
    let mut next = 0;
    while next < count {
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            // `run_whole` leaves `next` one past the last index it started.
            run_whole(&mut next, count, &mut f);
        }));
        match outcome {
            Ok(()) => break,
            Err(payload) => group.inner().record_panic(payload),
        }
    }
}

impl fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPool")
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

// A panic that unwinds out of a pool method (a re-raised task panic) leaves
// the pool consistent: all shared state is atomics and poison-ignoring locks,
// and panics are re-raised only after the group completed.
impl std::panic::UnwindSafe for ThreadPool {}
impl std::panic::RefUnwindSafe for ThreadPool {}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        self.shared.shut_down();
        // Dropped by one of its own tasks (the pool reached through a
        // `Mutex`, say): that worker cannot join itself (the OS refuses, and
        // `join` panics). Its handle is detached instead; the worker exits on
        // its own once its task returns, as every worker does at shutdown.
        let me = self.shared.current_worker();
        for (index, handle) in self.threads.drain(..).enumerate() {
            if Some(index) == me {
                continue;
            }
            // A worker never unwinds (tasks' panics are caught), so an error
            // here would only repeat a panic already reported; ignore it.
            let _ = handle.join();
        }
    }
}

#[cfg(all(test, not(freyr_loom)))]
mod tests;
