//! `parallel_for`: chunks of an index range claimed from one shared atomic
//! cursor by the calling thread and a few helper tasks of the pool.

use core::any::Any;
use std::panic::{self, AssertUnwindSafe};

use freyr_sync::{AtomicUsize, Ordering};

use crate::group::TaskGroup;
use crate::job::IndexedJob;
use crate::metrics::CachePadded;
use crate::payload::{drop_payload, keep_first};
use crate::pool::ThreadPool;
use crate::shared::{close_episode, open_episode};

impl ThreadPool {
    /// Runs `f(i)` for every `i` in `0..count`, in chunks of `grain`
    /// consecutive indices (the last chunk may be shorter) claimed from a
    /// shared atomic cursor. The calling thread participates;
    /// `min(workers() - 1, chunks - 1)` helper tasks join it. Runs inline
    /// when `workers() == 1` or `count <= grain`. Allocation-free.
    ///
    /// A claim takes one or more *whole consecutive chunks* in one cursor
    /// RMW: a share of what is left (guided self-scheduling, about
    /// `left / (4 * threads)` chunks, never less than one), so a large count
    /// costs a few dozen cursor operations instead of one per chunk, and the
    /// last claims are single chunks, which keeps the threads balanced.
    ///
    /// # Panics
    ///
    /// - If `grain == 0` (it could never make progress).
    /// - If `f` panics: the panic is caught, every other index still runs
    ///   exactly once (the panicking thread resumes at the next index of its
    ///   claim), and once every helper has stopped the first panic caught on
    ///   the calling thread is re-raised (else the first one caught by a
    ///   helper). The others are dropped. The pool stays usable.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = freyr::ThreadPool::new(2);
    /// let tally: Vec<AtomicUsize> = (0..257).map(|_| AtomicUsize::new(0)).collect();
    /// pool.parallel_for(tally.len(), 16, |i| {
    ///     tally[i].fetch_add(1, Ordering::Relaxed);
    /// });
    /// assert!(tally.iter().all(|t| t.load(Ordering::Relaxed) == 1));
    /// ```
    ///
    /// ```should_panic
    /// let pool = freyr::ThreadPool::new(2);
    /// pool.parallel_for(10, 0, |_| {}); // panics: grain must be at least 1
    /// ```
    pub fn parallel_for<F: Fn(usize) + Sync>(&self, count: usize, grain: usize, f: F) {
        assert!(
            grain > 0,
            "freyr-sched: parallel_for grain must be at least 1 (got 0, which could never make progress)"
        );
        if self.is_inline() || count <= grain {
            if let Some(payload) = run_catching(0, count, &f) {
                panic::resume_unwind(payload);
            }
            return;
        }
        let chunks = count.div_ceil(grain);
        let helpers = (self.workers() - 1).min(chunks - 1);
        let job = ForJob {
            cursor: CachePadded(AtomicUsize::new(0)),
            count,
            grain,
            chunks,
            share_divisor: 4 * (helpers + 1),
            f: &f,
        };
        let group = TaskGroup::new();
        // SAFETY: `job` and `group` live on this stack frame until after the
        // wait below, which runs on every path (`run_chunks` catches the
        // caller's own panics); `ForJob` is Sync because `F: Sync`.
        unsafe { self.submit_job(&group, &job, helpers) };
        let counters = self.current_counters();
        let episode = open_episode();
        let mine = job.run_chunks();
        close_episode(episode, counters);
        let theirs = group.try_wait(self);
        if let Some(payload) = mine {
            // Dropped now, not while unwinding: a payload whose `Drop` panics would abort.
            if let Err(panic) = theirs {
                drop_payload(panic.into_payload());
            }
            panic::resume_unwind(payload);
        }
        if let Err(panic) = theirs {
            panic::resume_unwind(panic.into_payload());
        }
    }
}

/// `parallel_for`'s shared state: a chunk cursor and the body.
struct ForJob<'f, F> {
    /// The next chunk to claim, on its own cache line: every claim writes
    /// it, and the read-only fields below must not bounce with it.
    cursor: CachePadded<AtomicUsize>,
    count: usize,
    grain: usize,
    chunks: usize,
    /// A claim takes `left / share_divisor` chunks (at least one).
    share_divisor: usize,
    f: &'f F,
}

impl<F: Fn(usize) + Sync> ForJob<'_, F> {
    /// Claims the next whole chunks `first..stop` (empty when the cursor ran
    /// past the end, cut short at `chunks`). Every chunk index is returned by
    /// exactly one RMW. Overshoot: past `chunks` the cursor grows only by the
    /// claim that crosses it and by one failing claim per thread, each at
    /// most `chunks / share_divisor + 1`, so it stays below
    /// `2 * chunks + 2 * MAX_WORKERS` and cannot wrap while
    /// `chunks <= usize::MAX / 4` (beyond that every claim is one chunk).
    fn claim(&self) -> (usize, usize) {
        let left = self
            .chunks
            .saturating_sub(self.cursor.0.load(Ordering::Relaxed));
        let want = if self.chunks <= usize::MAX / 4 {
            (left / self.share_divisor).max(1)
        } else {
            1
        };
        // MUTANT `cursor_load_store`: a load and a store instead of one RMW;
        // two threads can claim the same chunk.
        let first = self.cursor.0.fetch_add(want, Ordering::Relaxed);
        (first, first.saturating_add(want).min(self.chunks))
    }

    /// Claims and runs chunks until none are left. A panic in `f(i)` is
    /// caught and the run resumes at `i + 1`, so every claimed index runs;
    /// returns the first panic this thread caught.
    fn run_chunks(&self) -> Option<Box<dyn Any + Send + 'static>> {
        let mut first_panic = None;
        loop {
            let (first, stop) = self.claim();
            if first >= stop {
                return first_panic;
            }
            let start = first * self.grain;
            let end = stop.saturating_mul(self.grain).min(self.count);
            if let Some(payload) = run_catching(start, end, self.f) {
                keep_first(&mut first_panic, payload);
            }
        }
    }
}

/// Runs `f(i)` for `i` in `start..end` in order. A panic in `f(i)` is caught
/// and the run resumes at `i + 1`; returns the first panic caught.
#[inline]
fn run_catching<F: Fn(usize)>(
    start: usize,
    end: usize,
    f: &F,
) -> Option<Box<dyn Any + Send + 'static>> {
    let mut first_panic = None;
    let mut next = start;
    while next < end {
        // The landing pad costs nothing until a panic; `next` is already past
        // the panicking index when the unwind arrives here.
        let run = panic::catch_unwind(AssertUnwindSafe(|| {
            while next < end {
                let index = next;
                next += 1;
                f(index);
            }
        }));
        if let Err(payload) = run {
            keep_first(&mut first_panic, payload);
        }
    }
    first_panic
}

/// The helper task body (its index is irrelevant). A panic caught while
/// running chunks is re-raised once this helper has no chunk left, so its
/// group records it.
impl<F: Fn(usize) + Sync> IndexedJob for ForJob<'_, F> {
    fn run(&self, _helper: usize) {
        if let Some(payload) = self.run_chunks() {
            panic::resume_unwind(payload);
        }
    }
}

#[cfg(all(test, not(freyr_loom)))]
mod tests {
    use std::panic::{self, AssertUnwindSafe};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::ThreadPool;

    #[test]
    #[should_panic(expected = "grain must be at least 1")]
    fn grain_zero_panics_on_an_inline_pool_too() {
        ThreadPool::new(1).parallel_for(0, 0, |_| {});
    }

    #[test]
    fn parallel_for_re_raises_and_the_pool_stays_usable() {
        let pool = ThreadPool::new(3);
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.parallel_for(100, 7, |i| assert_ne!(i, 50, "index 50 fails"));
        }));
        assert!(caught.is_err());
        let hits = AtomicUsize::new(0);
        pool.parallel_for(100, 7, |_| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(hits.load(Ordering::Relaxed), 100);
    }
}
