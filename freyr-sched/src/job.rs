//! Indexed jobs and the batch trampolines that run them.
//!
//! A queued [`Task`] names a *batch runner*: a function that runs indices
//! `*next..end` of its job in order and keeps `*next` one past the last
//! index it started, even when one of them unwinds. It looks for idle
//! threads between batches of up to [`MAX_BATCH`] indices (longer ones,
//! timed, when 16 take under a microsecond), not between indices, and
//! returns early when the range should be split (`PROTOCOL.md`, "Run").
//!
//! - [`IndexedJob`] jobs get a runner monomorphised for the job type that
//!   calls [`IndexedJob::run_batch`] per batch, inlined: no indirect call per
//!   index, and a job can share set-up across a batch's indices.
//! - `submit_indexed`'s `fn(&J, usize)` jobs and scoped spawns share one
//!   runner that calls the task's `body` function pointer per index.

use freyr_sync::Stopwatch;

use crate::sleep::Sleep;
use crate::task::Task;

/// A job whose indices run as allocation-free pool tasks, through
/// [`ThreadPool::submit_job`](crate::ThreadPool::submit_job).
///
/// Each index in `0..count` is run exactly once, on some pool thread, with a
/// shared `&self` (hence `Sync`), in batches of consecutive indices handed to
/// [`run_batch`](IndexedJob::run_batch). The call is monomorphised into the
/// scheduler's batch loop, so a cheap body costs about as much as a plain
/// loop iteration.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use freyr::ThreadPool;
/// use freyr::sched::{IndexedJob, TaskGroup};
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

    /// Runs the consecutive indices `*next..end` (`*next < end`), in order,
    /// each exactly once. The pool calls it once per batch of a range it
    /// owns, so a job whose neighbouring indices share set-up (the same
    /// buffer, the same pointers) can do that set-up once per batch.
    ///
    /// Contract: set `*next` to `i + 1` before running index `i`, so that
    /// after an unwind `*next` is one past the index that panicked; the pool
    /// records the panic and calls again from there, so the other indices
    /// still run. On return `*next` must be `end`. The default calls
    /// [`run`](Self::run) per index. A faulty override cannot make the pool
    /// run an index twice: the pool clamps `*next` into the batch, one past
    /// its first index when unwinding (so a panicking batch skips at least
    /// that index), `end` on return.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use freyr::ThreadPool;
    /// use freyr::sched::{IndexedJob, TaskGroup};
    ///
    /// // Counts how many batches ran; every index is still marked once.
    /// struct Marks { seen: Vec<AtomicUsize>, batches: AtomicUsize }
    /// impl IndexedJob for Marks {
    ///     fn run(&self, index: usize) {
    ///         self.seen[index].fetch_add(1, Ordering::Relaxed);
    ///     }
    ///     fn run_batch(&self, next: &mut usize, end: usize) {
    ///         self.batches.fetch_add(1, Ordering::Relaxed);
    ///         while *next < end {
    ///             let index = *next;
    ///             *next = index + 1;
    ///             self.run(index);
    ///         }
    ///     }
    /// }
    /// let pool = ThreadPool::new(2);
    /// let job = Marks { seen: (0..100).map(|_| AtomicUsize::new(0)).collect(), batches: AtomicUsize::new(0) };
    /// let group = TaskGroup::new();
    /// // SAFETY: `job` and `group` outlive the wait.
    /// unsafe { pool.submit_job(&group, &job, 100) };
    /// group.wait(&pool);
    /// assert!(job.seen.iter().all(|s| s.load(Ordering::Relaxed) == 1));
    /// let batches = job.batches.load(Ordering::Relaxed);
    /// assert!(batches >= 1 && batches < 100, "{batches} batches");
    /// ```
    #[inline]
    fn run_batch(&self, next: &mut usize, end: usize) {
        for_each_index(next, end, |index| self.run(index));
    }
}

/// Runs `f(index)` for `*next..end`, in order, leaving `*next` one past the
/// last index started: `end` on return, one past the index whose `f`
/// unwound otherwise. The counter lives in a register while the loop runs
/// and is written back once, on the way out (normal or unwinding), so a
/// cheap body pays no store per index; a `*next = index + 1` before each
/// call would have to reach memory whenever the body is opaque to the
/// compiler (a function pointer, an allocation, `black_box`).
#[inline(always)]
pub(crate) fn for_each_index(next: &mut usize, end: usize, mut f: impl FnMut(usize)) {
    let mut progress = Progress { at: *next, next };
    while progress.at < end {
        let index = progress.at;
        progress.at = index + 1;
        f(index);
    }
}

/// The most indices run between two looks for sleeping threads (run step
/// 2) until a batch has been timed. Batches start at one index and double, so
/// a range of heavy indices is offered for splitting after 1, 3, 7, 15
/// indices, then every 16 while a batch of 16 takes [`FAST_BATCH_NANOS`] or
/// more.
pub(crate) const MAX_BATCH: usize = 16;

/// A batch of at least [`MAX_BATCH`] indices that ran in less than this is
/// followed by one as long as its pace fits in this time (at most eight
/// times as long, at most [`MAX_FAST_BATCH`]), one that took more than twice
/// this by one half as long (down to `MAX_BATCH`): so a
/// thread that goes idle waits about a microsecond for the busy one's next
/// look, while a range of trivial indices calls its batch function a few
/// times instead of once per 16 indices. That call is what a batch costs an
/// `IndexedJob` (`each_async` finds the slab and column pointers of the
/// batch's first index there, about as long as a few dozen trivial indices),
/// and a range of 1,954 empty chunk tasks split between two threads made
/// about 70 calls on each.
const FAST_BATCH_NANOS: u64 = 1_000;

/// The longest batch (in indices), however fast: one clock read per batch
/// past [`MAX_BATCH`] costs a few percent of a batch this long even when its
/// indices do nothing.
const MAX_FAST_BATCH: usize = 4_096;

/// Keeps a batch loop's counter in a register; writes it back on the way
/// out (normal or unwinding).
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

/// Runs batch `at..stop` through `f`; on unwind leaves `at` within
/// `first + 1..=stop` (`first` its first index), on return at `stop`,
/// whatever `f` did with it.
#[inline(always)]
fn clamped_batch(progress: &mut Progress<'_>, stop: usize, f: &mut impl FnMut(&mut usize, usize)) {
    struct Clamp<'a> {
        at: &'a mut usize,
        first: usize,
        stop: usize,
    }
    impl Drop for Clamp<'_> {
        #[inline]
        fn drop(&mut self) {
            // Reached only when `f` unwinds: the index that panicked is
            // not run again, nor is anything outside the batch.
            *self.at = (*self.at).clamp(self.first + 1, self.stop);
        }
    }
    let first = progress.at;
    let clamp = Clamp {
        at: &mut progress.at,
        first,
        stop,
    };
    f(&mut *clamp.at, stop);
    core::mem::forget(clamp);
    progress.at = stop;
}

/// Runs indices `*next..end` as one batch, `f(&mut at, end)`, with
/// [`run_indices`]'s guarantees on `*next` (one past the last index
/// started, clamped into the batch and past its first index when `f`
/// unwinds) but without looking for sleeping threads: for a pool that has
/// no other thread to hand indices to.
#[inline]
pub(crate) fn run_whole(next: &mut usize, end: usize, mut f: impl FnMut(&mut usize, usize)) {
    let mut progress = Progress { at: *next, next };
    if progress.at < end {
        clamped_batch(&mut progress, end, &mut f);
    }
}

/// Runs indices `*next..end`, in order, by calling `f(&mut at, stop)` for
/// batches `at..stop` of 1, 2, 4, ... up to [`MAX_BATCH`] indices, then of
/// the length [`next_batch`] gives after timing each (`f` runs its batch as
/// [`IndexedJob::run_batch`] does). Between batches, if two or
/// more indices remain, it returns early so the scheduler can split the rest
/// of the range when `sleep` reports a thread blocked without a wake-up, or a
/// thread spinning for work while the rest would take at least 4 µs at the
/// pace of the indices run since the spinner was seen (timed over a batch of
/// one index, then read again each time that count has doubled: [`next_look`]).
/// `*next` is left one past the last index started, also when `f` unwinds (a
/// drop guard writes it back, clamped into the batch and past its first
/// index), so the caller can resume after a panicking index.
#[inline]
pub(crate) fn run_indices(
    next: &mut usize,
    end: usize,
    sleep: &Sleep,
    mut f: impl FnMut(&mut usize, usize),
) {
    let mut progress = Progress { at: *next, next };
    let mut batch = 1;
    // One clock for the pace probe and the batch timer, read at most once between two batches.
    let mut clock = Clock::default();
    // Since a spinning thread was first seen: the clock's reading then, the index reached then,
    // and the index at which the pace is judged next.
    let mut probe: Option<(u64, usize, usize)> = None;
    // Batches of `MAX_BATCH` or more are timed, to size the next one: the clock's reading when
    // the current one started.
    let mut timed_from: Option<u64> = None;
    loop {
        let stop = end.min(progress.at.saturating_add(batch));
        if batch >= MAX_BATCH && timed_from.is_none() {
            timed_from = Some(clock.read());
        }
        if progress.at < stop {
            clamped_batch(&mut progress, stop, &mut f);
        }
        clock.next_boundary();
        if end - progress.at < 2 {
            // The last index (if any) runs without another look.
            if progress.at < end {
                clamped_batch(&mut progress, end, &mut f);
            }
            return;
        }
        if sleep.has_sleepers() {
            return;
        }
        if sleep.has_searchers() {
            match &mut probe {
                None => {
                    // Time one small batch before deciding.
                    probe = Some((clock.read(), progress.at, progress.at + 1));
                    batch = 1;
                    timed_from = None;
                    continue;
                }
                Some((since, from, look)) => {
                    if progress.at >= *look {
                        let done = progress.at - *from;
                        let nanos = clock.read().saturating_sub(*since);
                        if worth_splitting(nanos, done, end - progress.at) {
                            return;
                        }
                        *look = next_look(*from, progress.at);
                    }
                }
            }
        }
        let nanos = timed_from.as_mut().map(|from| {
            let now = clock.read();
            now.saturating_sub(core::mem::replace(from, now))
        });
        batch = next_batch(batch, nanos);
    }
}

/// The clock of one [`run_indices`] call: started at its first read, and read at most once
/// between two batches, where the pace probe and the batch timer may both want it (a read costs
/// tens of nanoseconds on a VM, many trivial indices' worth).
#[derive(Default)]
struct Clock {
    watch: Option<Stopwatch>,
    /// This boundary's reading, once taken.
    reading: Option<u64>,
}

impl Clock {
    /// Nanoseconds since the first read (0 at the first): the clock is read once per boundary,
    /// later calls in the same boundary return the same value.
    #[inline]
    fn read(&mut self) -> u64 {
        let Clock { watch, reading } = self;
        *reading.get_or_insert_with(|| {
            #[cfg(all(test, not(freyr_loom)))]
            if let Some(nanos) = tests::count_clock_read() {
                return nanos;
            }
            match watch {
                Some(watch) => watch.elapsed_nanos(),
                None => {
                    *watch = Some(Stopwatch::start());
                    0
                }
            }
        })
    }

    /// A batch ran: the next read reads the clock again.
    #[inline]
    fn next_boundary(&mut self) {
        self.reading = None;
    }
}

/// The length of the batch after one of `batch` indices that took `nanos` (timed from the first
/// batch of [`MAX_BATCH`] on): doubling up to `MAX_BATCH` whatever the time; then, after a batch
/// under [`FAST_BATCH_NANOS`], as many indices as that pace fits in it, at most eight times as
/// many and at most [`MAX_FAST_BATCH`]; after one over twice that time, half as many (not below
/// `MAX_BATCH`); else as many.
#[inline]
fn next_batch(batch: usize, nanos: Option<u64>) -> usize {
    match nanos {
        _ if batch < MAX_BATCH => (batch * 2).min(MAX_BATCH),
        None => MAX_BATCH.min(batch),
        Some(ns) if ns < FAST_BATCH_NANOS => {
            let fits = (batch as u64).saturating_mul(FAST_BATCH_NANOS) / ns.max(1);
            usize::try_from(fits)
                .unwrap_or(usize::MAX)
                .min(batch.saturating_mul(8))
                .min(MAX_FAST_BATCH)
                .max(batch)
        }
        Some(ns) if ns > 2 * FAST_BATCH_NANOS => (batch / 2).max(MAX_BATCH),
        Some(_) => batch,
    }
}

/// Whether the `left` indices of a range, at the pace of the last `done` (at least one) in
/// `nanos`, take long enough that half of them is worth handing to a spinning thread: at least
/// [`SPLIT_FOR_SPINNER_NANOS`]. Below that the hand-off (a queue push and pop, a fence, the
/// other thread's search round) costs about what it saves, and ranges of trivial indices would
/// split again and again at the end of every batch. A pace timed over less than
/// [`MIN_PACE_NANOS`] is not trusted (the clock reads would dominate it): no split yet.
#[inline]
fn worth_splitting(nanos: u64, done: usize, left: usize) -> bool {
    let left = u64::try_from(left).unwrap_or(u64::MAX);
    let done = u64::try_from(done.max(1)).unwrap_or(u64::MAX);
    nanos >= MIN_PACE_NANOS
        && nanos.saturating_mul(left) >= SPLIT_FOR_SPINNER_NANOS.saturating_mul(done)
}

/// Where a range that started timing its pace at index `from`, and at index `at` found no split
/// worth making, reads the clock next: once the indices run since `from` have doubled. The looks
/// come after 1, 2, 4, 8, ... indices, so a range of heavy indices is judged as soon as its pace
/// can be trusted, while a range of trivial ones reads the clock a few times, not once per batch
/// (a read costs tens of nanoseconds on a VM, many trivial indices' worth). At an even pace a
/// later look finds less work left, so a range judged too short to split stays so; a range
/// whose indices grow heavier is judged again once as many indices as before have run.
#[inline]
fn next_look(from: usize, at: usize) -> usize {
    at.saturating_add((at - from).max(1))
}

/// The least time a range's remaining indices must take for a split for a spinning thread:
/// 4 µs (a hand-off to a spinning thread takes about 1 µs).
const SPLIT_FOR_SPINNER_NANOS: u64 = 4_000;

/// The least time over which a range's pace is measured before it decides a split for a
/// spinning thread: 1 µs, about 30 clock reads.
const MIN_PACE_NANOS: u64 = 1_000;

/// The batch runner of an [`IndexedJob`] task: `J::run_batch` inlined per
/// batch.
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
    run_indices(next, end, sleep, |next, stop| job.run_batch(next, stop));
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
    run_indices(next, end, sleep, |next, stop| {
        // SAFETY: `index` is in the batch the caller owns, for which
        // `body(job, index)` is sound (contract).
        for_each_index(next, stop, |index| unsafe { body(task.job, index) });
    });
}

#[cfg(all(test, not(freyr_loom)))]
mod tests;
