//! The state a pool shares with its workers: queues, overflow, sleep,
//! shutdown. Submit, find (pop / steal), run, wait and the worker loop live
//! here; the step numbers refer to `PROTOCOL.md`.

use core::cell::Cell;
use core::ptr;
use std::panic::{self, AssertUnwindSafe};
use std::time::Instant;

use crate::group_inner::GroupInner;
use crate::lcg::Lcg;
use crate::metrics::{BusyClock, CachePadded, Counters, PoolMetrics};
use crate::sleep::{Sleep, Sleeper, awake_cap};
use crate::spin::{Backoff, IdleMark, Spin};
use crate::task::{RunBatch, RunIndex, Task};
use freyr_sync::{
    self as sync, AtomicBool, Injector, Ordering, PIECES_PER_WORKER, QUEUE_CAPACITY, Queue,
    StartLatch,
};

/// Who the current thread is, as far as pools care.
#[derive(Clone, Copy)]
struct Context {
    /// The pool this thread is a worker of (null for other threads).
    pool: *const Shared,
    /// Its worker index in that pool.
    index: usize,
    /// This producer's LCG state (0 = not seeded yet).
    lcg: u64,
    /// A busy episode is open on this thread (see [`open_episode`]).
    busy: bool,
}

sync::thread_local! {
    // No `const { .. }` initialiser: loom's `thread_local!` does not take one.
    #[allow(clippy::missing_const_for_thread_local)]
    static CONTEXT: Cell<Context> = Cell::new(Context { pool: ptr::null(), index: 0, lcg: 0, busy: false });
}

/// The calling thread's index among its pool's background workers, or `None`
/// on a thread that is no pool's worker (a caller that submits, waits and
/// helps). The same numbering as [`PoolMetrics::workers`].
///
/// Profilers use it to say which thread ran a task; it reads one
/// thread-local and takes no lock.
///
/// # Examples
///
/// ```
/// use std::sync::Mutex;
/// assert_eq!(freyr::sched::current_worker_index(), None); // the test's own thread
/// let pool = freyr::ThreadPool::new(2);
/// let seen = Mutex::new(Vec::new());
/// pool.scope(|s| {
///     for _ in 0..64 {
///         s.spawn(|_| seen.lock().unwrap().push(freyr::sched::current_worker_index()));
///     }
/// });
/// // Each task ran on the pool's one background worker or, helping, on this thread.
/// let seen = seen.into_inner().unwrap();
/// assert_eq!(seen.len(), 64);
/// assert!(seen.iter().all(|w| matches!(w, None | Some(0))));
/// ```
#[must_use]
pub fn current_worker_index() -> Option<usize> {
    CONTEXT.with(|cell| {
        let context = cell.get();
        (!context.pool.is_null()).then_some(context.index)
    })
}

/// Runs `f` with this thread's producer LCG, seeding it on first use.
fn with_producer_lcg<R>(f: impl FnOnce(&mut Lcg) -> R) -> R {
    CONTEXT.with(|cell| {
        let mut context = cell.get();
        if context.lcg == 0 {
            context.lcg = sync::lcg_seed() | 1;
        }
        let mut lcg = Lcg::new(context.lcg);
        let result = f(&mut lcg);
        context.lcg = lcg.state();
        cell.set(context);
        result
    })
}

/// Opens a busy episode on this thread (the `busy` metric), unless one is
/// already open: a wait, inline batch or `parallel_for` nested inside a task
/// is part of that task's episode, and is not counted twice.
pub(crate) fn open_episode() -> Option<BusyClock> {
    open_episode_at(None)
}

/// [`open_episode`], dated `seen` (a clock reading taken moments ago, such
/// as a spin phase's last: no clock read between finding a task and running
/// it) or, for `None`, now.
fn open_episode_at(seen: Option<Instant>) -> Option<BusyClock> {
    CONTEXT.with(|cell| {
        let mut context = cell.get();
        if context.busy {
            return None;
        }
        context.busy = true;
        cell.set(context);
        Some(BusyClock::start_at(seen))
    })
}

/// Closes the episode `open_episode` opened (a no-op for `None`), adding its
/// length to `counters`.
pub(crate) fn close_episode(episode: Option<BusyClock>, counters: &Counters) {
    if let Some(clock) = episode {
        clock.stop(counters);
        CONTEXT.with(|cell| {
            let mut context = cell.get();
            context.busy = false;
            cell.set(context);
        });
    }
}

pub(crate) struct Shared {
    /// One bounded MPMC queue per background worker.
    queues: Box<[CachePadded<Queue<Task>>]>,
    /// Where a task goes when its queue is full. Nothing is ever dropped.
    overflow: Injector<Task>,
    sleep: Sleep,
    /// How long idle threads search before they park.
    spin: Spin,
    shutdown: AtomicBool,
    /// `counters[i]` for worker `i`; the last one for non-worker threads.
    counters: Box<[CachePadded<Counters>]>,
    /// Counts workers that started running `worker_main`.
    pub(crate) start_latch: StartLatch,
}

impl Shared {
    /// State for a pool of `workers` (>= 1) total threads: `workers - 1`
    /// queues.
    pub(crate) fn new(workers: usize) -> Self {
        let cores = sync::available_parallelism();
        Shared {
            queues: (1..workers)
                .map(|_| CachePadded(Queue::new(QUEUE_CAPACITY)))
                .collect(),
            overflow: Injector::new(),
            sleep: Sleep::new(workers - 1, awake_cap(workers, cores)),
            spin: Spin::new(workers, cores),
            shutdown: AtomicBool::new(false),
            counters: (0..workers).map(|_| CachePadded::default()).collect(),
            start_latch: StartLatch::new(),
        }
    }

    /// The worker index of the current thread, if it is a worker of this pool.
    pub(crate) fn current_worker(&self) -> Option<usize> {
        CONTEXT.with(|cell| {
            let context = cell.get();
            ptr::eq(context.pool, self).then_some(context.index)
        })
    }

    fn external_slot(&self) -> usize {
        self.counters.len() - 1
    }

    /// The counters of the current thread's slot (inline pools: slot 0).
    pub(crate) fn current_counters(&self) -> &Counters {
        let slot = self.current_worker().unwrap_or(self.external_slot());
        &self.counters[slot].0
    }

    pub(crate) fn metrics(&self) -> PoolMetrics {
        PoolMetrics {
            workers: self.counters.iter().map(|c| c.0.snapshot()).collect(),
        }
    }

    /// Submit step 2: puts `task` in the queue the producer's LCG picks, or
    /// in the overflow queue when that one is full. Does not wake anyone.
    fn enqueue(&self, task: Task, lcg: &mut Lcg) {
        let queue = &self.queues[lcg.below(self.queues.len())].0;
        if let Err(task) = queue.push(task) {
            // MUTANT `overflow_drop`: a full queue silently loses the task.
            self.overflow.push(task);
        }
    }

    /// Submits one task (`start..end` must be `0..1`) to `group`.
    ///
    /// # Safety
    ///
    /// `task.job` must stay valid for `task.run` until the task ran, and
    /// `group` (= `task.group`) must stay alive until its count is zero.
    pub(crate) unsafe fn submit_one(&self, group: &GroupInner, task: Task) {
        #[cfg(not(freyr_loom))]
        group.note_pool(self.id());
        // Counted before the push, so a worker that finds the task sees it.
        self.spin.submitted();
        // Submit step 1 (count before publishing). MUTANT
        // `increment_after_publish` counts after the push: the task can run
        // and decrement first, and a waiter sees zero too early.
        group.add(1);
        with_producer_lcg(|lcg| self.enqueue(task, lcg));
        self.sleep.new_work(1);
    }

    /// Submits indices `0..count` (`count >= 1`) of `job` to `group` as at
    /// most `workers * PIECES_PER_WORKER` range tasks.
    ///
    /// # Safety
    ///
    /// As for [`submit_one`](Self::submit_one); `run` must be sound to call
    /// (with a task carrying `job` and `body`) from any thread for every batch
    /// of indices below `count`.
    pub(crate) unsafe fn submit_range(
        &self,
        group: &GroupInner,
        run: RunBatch,
        job: *const (),
        body: Option<RunIndex>,
        count: usize,
    ) {
        #[cfg(not(freyr_loom))]
        group.note_pool(self.id());
        // Counted before the pushes, so a worker that finds a piece sees it.
        self.spin.submitted();
        group.add(count);
        // One batch, a few ranges per background worker; the waiting caller
        // steals its share, and idle threads split ranges further.
        let pieces = count.min(self.queues.len() * PIECES_PER_WORKER);
        let (base, extra) = (count / pieces, count % pieces);
        with_producer_lcg(|lcg| {
            let mut start = 0;
            for piece in 0..pieces {
                let len = base + usize::from(piece < extra);
                let end = start + len;
                let task = Task {
                    run,
                    job,
                    body,
                    start,
                    end,
                    group,
                };
                self.enqueue(task, lcg);
                start = end;
            }
        });
        self.sleep.new_work(pieces);
    }

    /// Find: own queue first, then the overflow queue, then the other
    /// workers' queues starting at a pseudo-random victim.
    fn find_task(&self, me: Option<usize>, slot: usize, lcg: &mut Lcg) -> Option<Task> {
        if let Some(own) = me
            && let Some(task) = self.queues[own].0.pop()
        {
            return Some(task);
        }
        if let Some(task) = self.overflow.pop() {
            return Some(task);
        }
        let n = self.queues.len();
        let first = lcg.below(n);
        for k in 0..n {
            let victim = (first + k) % n;
            if Some(victim) == me {
                continue;
            }
            if let Some(task) = self.queues[victim].0.pop() {
                self.counters[slot].0.add_stolen();
                return Some(task);
            }
        }
        None
    }

    /// Whether any queue holds a task (park step 4's re-check).
    fn has_work(&self) -> bool {
        !self.overflow.is_empty() || self.queues.iter().any(|q| !q.0.is_empty())
    }

    /// Run: executes `task`'s indices, catching panics into its group, then
    /// completes them. Splits off the upper half of the range while other
    /// threads sleep.
    fn run(&self, task: Task, slot: usize, lcg: &mut Lcg) {
        let mut next = task.start;
        let mut end = task.end;
        // MUTANT `decrement_before_run`: completes the indices before they ran.
        loop {
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                self.run_range(&task, &mut next, &mut end, lcg)
            }));
            match outcome {
                Ok(()) => break,
                Err(payload) => {
                    // SAFETY: the indices `next..end` (at least the one that
                    // panicked) are still pending, so the group is alive.
                    unsafe { (*task.group).record_panic(payload) };
                    // MUTANT `no_decrement_on_panic`: a panicking task never
                    // completes; its group's wait hangs.
                }
            }
        }
        self.counters[slot].0.add_run(end - task.start);
        // SAFETY: this thread owns the indices `task.start..end`: they were
        // counted at submission and are completed exactly once, here.
        unsafe {
            self.complete(task.group, end - task.start);
        }
    }

    /// Runs `*next..*end`; the batch runner returns early when some thread
    /// sleeps without a wake-up, and then the upper half is split off (run
    /// step 2).
    fn run_range(&self, task: &Task, next: &mut usize, end: &mut usize, lcg: &mut Lcg) {
        // Before the first call, split only for a blocked thread; after it, the
        // range is unfinished only when the runner returned early to split.
        let mut returned_early = false;
        while *next < *end {
            if *end - *next > 1 && (returned_early || self.sleep.has_sleepers()) {
                self.split(task, *next, end, lcg);
            }
            returned_early = true;
            // SAFETY: the submitter guaranteed `run` is sound for every batch
            // of the submitted range, until the group is done; the group is
            // not done while this task's indices are pending, and this thread
            // owns `*next..*end` (split hands out only `mid..end`).
            unsafe { (task.run)(task, next, *end, &self.sleep) };
        }
    }

    /// Split: hands `mid..end` to other threads, keeping `next..mid`.
    #[cold]
    fn split(&self, task: &Task, next: usize, end: &mut usize, lcg: &mut Lcg) {
        let mid = next + (*end - next) / 2;
        // MUTANT `split_overlap`: the upper half starts one index early, so
        // index `mid - 1` runs twice.
        let upper_start = mid;
        let upper = Task {
            start: upper_start,
            end: *end,
            ..*task
        };
        *end = mid;
        self.enqueue(upper, lcg);
        self.sleep.new_work(1);
    }

    /// Group completion: decrements and, when a sleeping waiter was
    /// announced and the count hit zero, wakes the sleepers.
    ///
    /// # Safety
    ///
    /// As for [`GroupInner::complete`].
    unsafe fn complete(&self, group: *const GroupInner, n: usize) {
        // SAFETY: forwarded to the caller.
        let wake = unsafe { GroupInner::complete(group, n) };
        // MUTANT `no_wake_on_group_done`: the sleeping waiter is never told.
        if wake {
            self.sleep.wake_group_waiters();
        }
    }

    /// Runs `task`, opening a busy episode first if none is open (dated
    /// `seen`, or now: see [`open_episode_at`]).
    #[inline]
    fn run_in_episode(
        &self,
        task: Task,
        slot: usize,
        lcg: &mut Lcg,
        episode: &mut Option<BusyClock>,
        seen: Option<Instant>,
    ) {
        if episode.is_none() {
            *episode = open_episode_at(seen);
        }
        self.run(task, slot, lcg);
    }

    /// This pool's identity for [`GroupInner::note_pool`]: the address of its shared state
    /// (nonzero, and no other live pool's).
    #[cfg(not(freyr_loom))]
    pub(crate) fn id(&self) -> usize {
        core::ptr::from_ref(self) as usize
    }

    /// Wait: helps until `group` is done.
    pub(crate) fn wait_until_done(&self, group: &GroupInner) {
        let me = self.current_worker();
        let slot = me.unwrap_or(self.external_slot());
        let mut lcg = with_producer_lcg(|lcg| *lcg);
        let counters = &self.counters[slot].0;
        let mut episode = None;
        'help: while !group.is_done() {
            if let Some(task) = self.find_task(me, slot, &mut lcg) {
                self.run_in_episode(task, slot, &mut lcg, &mut episode, None);
                continue;
            }
            close_episode(episode.take(), counters);
            let spun = self.spin.spin(Sleeper::GroupWaiter, &self.sleep, None, || {
                if group.is_done() {
                    return Some(None);
                }
                self.find_task(me, slot, &mut lcg).map(Some)
            });
            match spun {
                Some((Some(task), seen)) => {
                    self.run_in_episode(task, slot, &mut lcg, &mut episode, seen);
                    continue 'help;
                }
                Some((None, _)) => break 'help,
                None => {}
            }
            if !group.announce_sleeper() {
                break;
            }
            self.sleep.sleep(Sleeper::GroupWaiter, counters, || {
                !group.is_done() && !self.has_work()
            });
        }
        close_episode(episode, counters);
        group.clear_sleeper();
        // Hand-off: a wake-up meant for a worker may have landed on this
        // thread, which now leaves without searching again. Pass it on.
        if self.sleep.has_sleepers() && self.has_work() {
            self.sleep.new_work(1);
        }
        CONTEXT.with(|cell| {
            let mut context = cell.get();
            context.lcg = lcg.state();
            cell.set(context);
        });
    }

    /// Shutdown: workers drain the queues, then exit. Called once, by the
    /// pool's `Drop`, before joining.
    pub(crate) fn shut_down(&self) {
        // MUTANT `shutdown_flag_after_notify`: wakes first, then sets the
        // flag: a worker that re-checks in between sleeps forever.
        self.shutdown.store(true, Ordering::SeqCst);
        self.sleep.wake_all();
    }

    fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }
}

/// The worker loop: find and run; spin (bounded, see `spin.rs`); exit on
/// shutdown once nothing is left; otherwise park.
pub(crate) fn worker_main(shared: sync::Arc<Shared>, index: usize, pin: bool) {
    if pin {
        // Core 0 is left to the calling thread.
        let _pinned = sync::pin_current_thread(index + 1);
    }
    let mut lcg = Lcg::new(sync::lcg_seed() | 1);
    CONTEXT.with(|cell| {
        cell.set(Context {
            pool: &*shared,
            index,
            lcg: lcg.state(),
            busy: false,
        });
    });
    shared.start_latch.started();
    let counters = &shared.counters[index].0;
    let mut episode = None;
    // How long this worker spins, and since when it is idle (`spin.rs`).
    let mut backoff = Backoff::default();
    let mut idle: Option<IdleMark> = None;
    loop {
        if let Some(task) = shared.find_task(Some(index), index, &mut lcg) {
            if let Some(mark) = idle.take() {
                backoff.found_work(&shared.spin, &mark);
            }
            shared.run_in_episode(task, index, &mut lcg, &mut episode, None);
            continue;
        }
        close_episode(episode.take(), counters);
        if idle.is_none() {
            idle = Some(shared.spin.idle_mark());
        }
        let spun = shared
            .spin
            .spin(Sleeper::Worker, &shared.sleep, Some(&mut backoff), || {
                shared.find_task(Some(index), index, &mut lcg)
            });
        if let Some((task, seen)) = spun {
            if let Some(mark) = idle.take() {
                backoff.found_work(&shared.spin, &mark);
            }
            shared.run_in_episode(task, index, &mut lcg, &mut episode, seen);
            continue;
        }
        if shared.is_shut_down() {
            // Shutdown step 2: the flag was set after every submission, so
            // this search sees whatever was queued before it; exit only
            // when it finds nothing.
            if let Some(task) = shared.find_task(Some(index), index, &mut lcg) {
                shared.run_in_episode(task, index, &mut lcg, &mut episode, None);
                continue;
            }
            break;
        }
        shared.sleep.sleep(Sleeper::Worker, counters, || {
            !shared.has_work() && !shared.is_shut_down()
        });
    }
    shared.sleep.worker_exited();
    CONTEXT.with(|cell| {
        cell.set(Context {
            pool: ptr::null(),
            index: 0,
            lcg: 0,
            busy: false,
        });
    });
}

#[cfg(all(test, not(freyr_loom)))]
mod tests {
    use super::*;
    use crate::job::run_body_batch;
    use std::sync::atomic::AtomicUsize;

    fn bump(counter: &AtomicUsize, _index: usize) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn erased(body: fn(&AtomicUsize, usize)) -> unsafe fn(*const (), usize) {
        // SAFETY: `fn(&AtomicUsize, usize)` and `unsafe fn(*const (), usize)`
        // are ABI-compatible (thin pointer types), as in `submit_indexed`.
        unsafe {
            core::mem::transmute::<fn(&AtomicUsize, usize), unsafe fn(*const (), usize)>(body)
        }
    }

    /// A pool state with no threads: the test thread is the only helper.
    #[test]
    fn a_full_queue_spills_to_overflow_and_loses_nothing() {
        let shared = Shared::new(2); // one queue, no worker threads here
        let counter = AtomicUsize::new(0);
        let group = GroupInner::new();
        let tasks = QUEUE_CAPACITY + 10;
        for _ in 0..tasks {
            // SAFETY: `counter` and `group` outlive the wait below.
            unsafe {
                shared.submit_one(
                    &group,
                    Task {
                        run: run_body_batch,
                        job: (&raw const counter).cast(),
                        body: Some(erased(bump)),
                        start: 0,
                        end: 1,
                        group: &group,
                    },
                );
            }
        }
        assert!(
            !shared.overflow.is_empty(),
            "the queue must have overflowed"
        );
        shared.wait_until_done(&group);
        assert_eq!(counter.load(Ordering::Relaxed), tasks);
        assert!(!shared.has_work());
        assert_eq!(shared.metrics().total().tasks_run, tasks as u64);
    }

    #[test]
    fn a_batch_is_a_few_ranges_covering_every_index_once() {
        let shared = Shared::new(3); // two queues
        let counter = AtomicUsize::new(0);
        let group = GroupInner::new();
        // SAFETY: `counter` and `group` outlive the wait below.
        unsafe {
            shared.submit_range(
                &group,
                run_body_batch,
                (&raw const counter).cast(),
                Some(erased(bump)),
                1000,
            );
        };
        let mut lcg = Lcg::new(3);
        let mut ranges = Vec::new();
        while let Some(task) = shared.find_task(None, 2, &mut lcg) {
            ranges.push((task.start, task.end));
            // SAFETY: the indices were counted by `submit_range`.
            unsafe { shared.complete(task.group, task.end - task.start) };
        }
        ranges.sort_unstable();
        assert_eq!(ranges.len(), 2 * PIECES_PER_WORKER);
        assert_eq!(ranges.first().map(|r| r.0), Some(0));
        assert!(ranges.windows(2).all(|w| w[0].1 == w[1].0), "{ranges:?}");
        assert_eq!(ranges.last().map(|r| r.1), Some(1000));
        assert!(group.is_done());
    }

    fn slow_bump(counter: &AtomicUsize, _index: usize) {
        std::thread::sleep(std::time::Duration::from_micros(200));
        counter.fetch_add(1, Ordering::Relaxed);
    }

    #[test]
    // Timed indices: Miri's clock is virtual, so the pace means nothing there.
    #[cfg_attr(miri, ignore = "times real sleeps")]
    fn a_range_of_slow_indices_is_split_for_a_spinning_thread() {
        let shared = Shared::new(2); // one queue, no worker threads here
        let counter = AtomicUsize::new(0);
        let group = GroupInner::new();
        group.add(20);
        let task = Task {
            run: run_body_batch,
            job: (&raw const counter).cast(),
            body: Some(erased(slow_bump)),
            start: 0,
            end: 20,
            group: &group,
        };
        let mut lcg = Lcg::new(5);
        let spinner = shared.sleep.searching();
        // Before the first index nobody is blocked, so nothing is split yet; once the pace is
        // timed, the rest of the range is worth handing over, and halves go to the queue.
        shared.run(task, shared.external_slot(), &mut lcg);
        let ran = counter.load(Ordering::Relaxed);
        assert!((1..20).contains(&ran), "ran {ran} of 20 before returning");
        assert!(shared.has_work(), "the upper halves wait in the queue");
        drop(spinner);
        shared.wait_until_done(&group);
        assert_eq!(counter.load(Ordering::Relaxed), 20);
        assert!(!shared.has_work());
    }
}
