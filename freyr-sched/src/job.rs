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
mod tests {
    use super::*;
    use std::panic::{self, AssertUnwindSafe};

    std::thread_local! {
        /// How many times this thread's `run_indices` clocks were read.
        static CLOCK_READS: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
        /// While set, what this thread's `run_indices` clocks read instead of the time.
        static FAKE_NANOS: core::cell::Cell<Option<u64>> = const { core::cell::Cell::new(None) };
    }

    /// Counts a read of a `run_indices` clock on this thread; the fake time, if one is set.
    pub(super) fn count_clock_read() -> Option<u64> {
        CLOCK_READS.with(|reads| reads.set(reads.get() + 1));
        FAKE_NANOS.with(core::cell::Cell::get)
    }

    fn clock_reads() -> usize {
        CLOCK_READS.with(core::cell::Cell::get)
    }

    #[test]
    fn the_clock_is_read_once_per_boundary() {
        let before = clock_reads();
        let mut clock = Clock::default();
        assert_eq!(clock.read(), 0, "the first read starts the clock");
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert_eq!(clock.read(), 0, "the same boundary: the same reading");
        assert_eq!(clock_reads() - before, 1);
        clock.next_boundary();
        let later = clock.read();
        assert!(later > 0 || cfg!(miri), "{later}");
        assert_eq!(clock.read(), later);
        assert_eq!(clock_reads() - before, 2);
    }

    #[test]
    fn the_pace_probe_and_the_batch_timer_share_a_boundary_s_read() {
        // A thread spins for work while a range of indices too fast to time (the clock stands
        // still) runs: the probe looks at doubling counts and never splits, the timer reads the
        // clock after every batch past the cap and grows the batches. Where both look at one
        // boundary, one read serves both.
        FAKE_NANOS.with(|fake| fake.set(Some(0)));
        let sleep = Sleep::new(1, 1);
        let _spinner = sleep.searching();
        let before = clock_reads();
        let mut next = 0;
        let mut lens = Vec::new();
        run_indices(&mut next, 20_000, &sleep, |next, stop| {
            lens.push(stop - *next);
            for_each_index(next, stop, |i| {
                std::hint::black_box(i);
            });
        });
        let reads = clock_reads() - before;
        FAKE_NANOS.with(|fake| fake.set(None));
        assert_eq!(next, 20_000);
        // The probe starts after the first index and times one more; then batches double to
        // the cap and grow eightfold at a standing clock, to the longest.
        assert_eq!(lens[..8], [1, 1, 2, 4, 8, 16, 128, 1_024], "{lens:?}");
        assert!(lens.contains(&MAX_FAST_BATCH), "{lens:?}");
        // One read per boundary between two batches: the first starts the probe (and the
        // clock) after the first index, every later one serves the look and the timer due there
        // (with a read for each, the same run read the clock 18 times).
        assert_eq!(reads, lens.len() - 1, "{lens:?}");
    }

    /// A batch function that runs `f` per index, as `IndexedJob::run_batch`'s default does.
    fn per_index(mut f: impl FnMut(usize)) -> impl FnMut(&mut usize, usize) {
        move |next, stop| for_each_index(next, stop, &mut f)
    }

    #[test]
    fn a_split_for_a_spinner_needs_a_trusted_pace_and_enough_work_left() {
        // 2 µs per index, 3 left: 6 µs of work, worth a hand-off.
        assert!(worth_splitting(2_000, 1, 3));
        // 2 µs per index, 1 left: 2 µs, not worth it.
        assert!(!worth_splitting(2_000, 1, 1));
        // 10 ns per index over 100 indices, 1,000 left: 10 µs, worth it.
        assert!(worth_splitting(1_000, 100, 1_000));
        // The same pace, 300 left: 3 µs, not worth it.
        assert!(!worth_splitting(1_000, 100, 300));
        // A pace timed over less than 1 µs decides nothing, however much is left.
        assert!(!worth_splitting(999, 1, 1_000_000));
        // No overflow on huge counts.
        assert!(worth_splitting(u64::MAX, usize::MAX, usize::MAX));
    }

    #[test]
    fn batches_past_the_cap_follow_their_time() {
        // Batches below the cap double whatever their time.
        assert_eq!(next_batch(1, None), 2);
        assert_eq!(next_batch(4, Some(u64::MAX)), 8);
        assert_eq!(next_batch(8, None), MAX_BATCH);
        assert_eq!(next_batch(MAX_BATCH, None), MAX_BATCH);
        // A fast one is followed by as many indices as fit in the target at its pace, at most
        // eight times as many, at most the longest batch.
        assert_eq!(
            next_batch(MAX_BATCH, Some(FAST_BATCH_NANOS / 2)),
            2 * MAX_BATCH
        );
        assert_eq!(next_batch(MAX_BATCH, Some(1)), 8 * MAX_BATCH);
        assert_eq!(next_batch(MAX_BATCH, Some(0)), 8 * MAX_BATCH);
        assert_eq!(next_batch(1_024, Some(10)), MAX_FAST_BATCH);
        assert_eq!(next_batch(MAX_FAST_BATCH, Some(0)), MAX_FAST_BATCH);
        // A batch near the target keeps its length; a slow one halves, down to the cap.
        assert_eq!(next_batch(256, Some(FAST_BATCH_NANOS)), 256);
        assert_eq!(next_batch(256, Some(2 * FAST_BATCH_NANOS)), 256);
        assert_eq!(next_batch(256, Some(2 * FAST_BATCH_NANOS + 1)), 128);
        assert_eq!(next_batch(MAX_BATCH, Some(u64::MAX)), MAX_BATCH);
        // From the cap to the longest batch in three steps of trivial indices.
        let mut batch = MAX_BATCH;
        let mut steps = 0;
        while batch < MAX_FAST_BATCH {
            batch = next_batch(batch, Some(1));
            steps += 1;
        }
        assert_eq!((batch, steps), (MAX_FAST_BATCH, 3));
    }

    #[test]
    #[cfg_attr(miri, ignore = "times real sleeps")]
    fn a_range_of_slow_indices_stays_in_batches_of_the_cap() {
        let sleep = Sleep::new(1, 1);
        let mut next = 0;
        let mut lens = Vec::new();
        run_indices(&mut next, 80, &sleep, |next, stop| {
            lens.push(stop - *next);
            for_each_index(next, stop, |_| {
                std::thread::sleep(std::time::Duration::from_micros(20));
            });
        });
        assert_eq!(next, 80);
        assert!(lens.iter().all(|&n| n <= MAX_BATCH), "{lens:?}");
    }

    #[test]
    fn the_pace_is_read_again_once_the_indices_run_have_doubled() {
        // Seen at index 10: looks after 1, 2, 4, 8, ... indices.
        let mut looks = vec![11];
        while looks.len() < 6 {
            looks.push(next_look(10, *looks.last().unwrap()));
        }
        assert_eq!(looks, [11, 12, 14, 18, 26, 42]);
        // Over 1,954 trivial indices from index 0: a dozen reads, not one per batch of 16.
        let mut at = 1;
        let mut reads = 1;
        while at < 1954 {
            at = next_look(0, at);
            reads += 1;
        }
        assert_eq!(reads, 12);
        // No overflow near the top of the index space.
        assert_eq!(next_look(0, usize::MAX - 1), usize::MAX);
    }

    #[test]
    // Timed indices: Miri's clock is virtual, so the pace means nothing there.
    #[cfg_attr(miri, ignore = "times real sleeps")]
    fn with_a_spinning_thread_a_range_of_slow_indices_returns_early() {
        let sleep = Sleep::new(1, 1);
        let _spinner = sleep.searching();
        // Slow indices: returns early after a few, leaving the rest to split.
        let mut next = 0;
        run_indices(
            &mut next,
            100,
            &sleep,
            per_index(|_| {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }),
        );
        assert!((1..100).contains(&next), "stopped at {next}");
        // What a range of trivial indices does is the pace rule's (tested above): timed here
        // it would depend on the machine's load.
    }

    #[test]
    #[cfg_attr(miri, ignore = "times real sleeps")]
    fn without_an_idle_thread_a_range_of_slow_indices_runs_to_the_end() {
        let sleep = Sleep::new(1, 1);
        let mut next = 0;
        run_indices(
            &mut next,
            20,
            &sleep,
            per_index(|_| {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }),
        );
        assert_eq!(next, 20);
    }

    #[test]
    fn progress_is_written_back_on_completion_and_on_unwind() {
        let sleep = Sleep::new(1, 1);
        let mut next = 2;
        let mut seen = Vec::new();
        run_indices(&mut next, 40, &sleep, per_index(|i| seen.push(i)));
        assert_eq!(next, 40);
        assert_eq!(seen, (2..40).collect::<Vec<_>>());

        let mut next = 0;
        let mut ran = Vec::new();
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            run_indices(
                &mut next,
                5,
                &sleep,
                per_index(|i| {
                    ran.push(i);
                    assert_ne!(i, 2, "index 2 fails");
                }),
            );
        }));
        assert!(outcome.is_err());
        assert_eq!(next, 3, "resume after the index that panicked");
        assert_eq!(ran, [0, 1, 2]);
    }

    #[test]
    fn for_each_index_writes_the_cursor_back_on_return_and_on_unwind() {
        let mut next = 3;
        let mut seen = Vec::new();
        for_each_index(&mut next, 9, |i| seen.push(i));
        assert_eq!((next, seen), (9, (3..9).collect::<Vec<_>>()));
        // An empty range runs nothing and leaves the cursor.
        let mut next = 5;
        for_each_index(&mut next, 5, |i| panic!("ran {i}"));
        assert_eq!(next, 5);
        let mut next = 0;
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            for_each_index(&mut next, 10, |i| assert_ne!(i, 6, "index 6 fails"));
        }));
        assert!(outcome.is_err());
        assert_eq!(next, 7, "one past the index that unwound");
    }

    #[test]
    fn run_whole_is_one_clamped_batch() {
        let mut next = 2;
        let mut batches = Vec::new();
        run_whole(&mut next, 100, |next, stop| {
            batches.push((*next, stop));
            for_each_index(next, stop, |_| {});
        });
        assert_eq!((next, batches), (100, vec![(2, 100)]));
        // Nothing to run: the batch function is not called.
        run_whole(&mut next, 100, |_, _| panic!("called for an empty range"));
        assert_eq!(next, 100);
        // Returns without advancing: the batch still counts as done.
        let mut next = 0;
        run_whole(&mut next, 10, |_, _| {});
        assert_eq!(next, 10);
        // Unwinds without advancing: resume one past the batch's first index.
        let mut next = 4;
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            run_whole(&mut next, 10, |_, _| panic!("before advancing"));
        }));
        assert!(outcome.is_err());
        assert_eq!(next, 5);
        // Unwinds after running past its batch: clamped to the range's end.
        let mut next = 0;
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            run_whole(&mut next, 10, |next, _| {
                *next = 1_000;
                panic!("overran");
            });
        }));
        assert!(outcome.is_err());
        assert_eq!(next, 10);
    }

    #[test]
    fn batches_double_up_to_the_cap() {
        let sleep = Sleep::new(1, 1);
        let mut next = 0;
        let mut batches = Vec::new();
        run_indices(&mut next, 100, &sleep, |next, stop| {
            batches.push((*next, stop));
            *next = stop;
        });
        assert_eq!(next, 100);
        let lens: Vec<usize> = batches.iter().map(|(a, b)| b - a).collect();
        assert_eq!(lens[..5], [1, 2, 4, 8, MAX_BATCH]);
        // Past the cap the length follows each batch's time (`next_batch`, tested below): how
        // fast these empty batches ran depends on the machine (and on Miri's clock).
        assert!(
            lens.iter().all(|&n| (1..=MAX_FAST_BATCH).contains(&n)),
            "{lens:?}"
        );
        assert!(batches.windows(2).all(|w| w[0].1 == w[1].0), "{batches:?}");
        assert_eq!(lens.iter().sum::<usize>(), 100);
    }

    #[test]
    fn a_faulty_batch_cannot_make_an_index_run_twice() {
        let sleep = Sleep::new(1, 1);
        // Returns without advancing: the batch still counts as done.
        let mut next = 0;
        let mut calls = 0;
        run_indices(&mut next, 10, &sleep, |_, _| calls += 1);
        assert_eq!(next, 10);
        assert!(calls < 10);
        // Unwinds without advancing: resume one past the batch's first index.
        let mut next = 4;
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            run_indices(&mut next, 10, &sleep, |_, _| panic!("before advancing"));
        }));
        assert!(outcome.is_err());
        assert_eq!(next, 5);
        // Unwinds after running past its batch: clamped to the batch's end.
        let mut next = 0;
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            run_indices(&mut next, 10, &sleep, |next, _| {
                *next = 1_000;
                panic!("overran");
            });
        }));
        assert!(outcome.is_err());
        assert_eq!(next, 1, "the first batch is index 0 alone");
    }
}
