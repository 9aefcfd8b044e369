//! `parallel_for(count, grain, f)` calls `f` exactly once for every index of `0..count`, for
//! counts on both sides of every multiple of the grain; runs inline on the caller when
//! `count <= grain`; and rejects `grain == 0` with a clear panic instead of hanging.

use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;

use freyr_sched::ThreadPool;

const OVERSUBSCRIBED: usize = 8;

fn tally(len: usize) -> Vec<AtomicU32> {
    (0..len).map(|_| AtomicU32::new(0)).collect()
}

#[track_caller]
fn assert_exactly_once(tally: &[AtomicU32], what: &str) {
    for (i, c) in tally.iter().enumerate() {
        let runs = c.load(Ordering::Relaxed);
        assert_eq!(runs, 1, "{what}: index {i} ran {runs} times");
    }
}

/// Counts that straddle the grain: 0, 1, around one, two and many grains.
fn straddling_counts(grain: usize) -> Vec<usize> {
    let mut counts = vec![0, 1, 2];
    for k in [1, 2, 3, 37] {
        counts.extend([k * grain - 1, k * grain, k * grain + 1]);
    }
    counts.sort_unstable();
    counts.dedup();
    counts
}

fn every_index_once(workers: usize) {
    let pool = ThreadPool::new(workers);
    for grain in [1, 2, 3, 7, 64, 512, 1000] {
        for count in straddling_counts(grain) {
            let t = tally(count);
            pool.parallel_for(count, grain, |i| {
                t[i].fetch_add(1, Ordering::Relaxed);
            });
            assert_exactly_once(
                &t,
                &format!("{workers} workers, count {count}, grain {grain}"),
            );
        }
    }
}

#[test]
fn counts_straddling_the_grain_oversubscribed() {
    every_index_once(OVERSUBSCRIBED);
}

#[test]
fn counts_straddling_the_grain_two_workers() {
    every_index_once(2);
}

#[test]
fn counts_straddling_the_grain_inline() {
    every_index_once(1);
}

#[test]
fn grain_larger_than_count_runs_inline_on_the_caller() {
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let caller = thread::current().id();
    for (count, grain) in [(1, 1), (100, 100), (100, 101), (5000, usize::MAX)] {
        let t = tally(count);
        pool.parallel_for(count, grain, |i| {
            assert_eq!(
                thread::current().id(),
                caller,
                "count {count} <= grain {grain}"
            );
            t[i].fetch_add(1, Ordering::Relaxed);
        });
        assert_exactly_once(&t, &format!("count {count}, grain {grain}"));
    }
}

#[test]
fn huge_grain_with_huge_count_does_not_overflow_the_cursor() {
    // Cursor arithmetic near usize::MAX: the claims must not wrap around to 0.
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let t = tally(10_000);
    pool.parallel_for(10_000, usize::MAX / 2, |i| {
        t[i].fetch_add(1, Ordering::Relaxed);
    });
    assert_exactly_once(&t, "grain usize::MAX / 2");
}

#[test]
#[should_panic(expected = "grain must be at least 1")]
fn grain_zero_panics_oversubscribed() {
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    pool.parallel_for(1000, 0, |_| {});
}

#[test]
#[should_panic(expected = "grain must be at least 1")]
fn grain_zero_panics_inline() {
    let pool = ThreadPool::new(1);
    pool.parallel_for(1000, 0, |_| {});
}

#[test]
#[should_panic(expected = "grain must be at least 1")]
fn grain_zero_panics_even_with_no_indices() {
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    pool.parallel_for(0, 0, |_| {});
}

#[test]
fn grain_zero_panics_before_running_anything() {
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let ran = AtomicU32::new(0);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.parallel_for(1000, 0, |_| {
            ran.fetch_add(1, Ordering::Relaxed);
        });
    }));
    assert!(result.is_err());
    assert_eq!(ran.load(Ordering::Relaxed), 0);
    // And the pool is still usable.
    let t = tally(1000);
    pool.parallel_for(1000, 10, |i| {
        t[i].fetch_add(1, Ordering::Relaxed);
    });
    assert_exactly_once(&t, "after the grain-0 panic");
}
