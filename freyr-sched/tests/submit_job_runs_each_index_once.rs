//! `submit_job`, the monomorphised chunk-task path: every index of an [`IndexedJob`] runs
//! exactly once on every pool size, also when indices in the middle of a batch panic (the rest
//! of the batch still runs, the first panic is re-raised, the others counted).

use std::sync::atomic::{AtomicUsize, Ordering};

use freyr_sched::{IndexedJob, TaskGroup, ThreadPool};

struct Tally {
    runs: Vec<AtomicUsize>,
    /// Indices divisible by this panic after being counted (0 = none).
    panic_every: usize,
}

impl Tally {
    fn new(n: usize, panic_every: usize) -> Self {
        Tally {
            runs: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            panic_every,
        }
    }
}

impl IndexedJob for Tally {
    fn run(&self, index: usize) {
        self.runs[index].fetch_add(1, Ordering::Relaxed);
        if self.panic_every != 0 && index.is_multiple_of(self.panic_every) {
            panic!("index {index} fails");
        }
    }
}

/// Pool sizes. ThreadSanitizer (`--cfg freyr_tsan`) checks the pools with threads to race (one
/// worker runs every index on the caller).
const WORKERS: &[usize] = if cfg!(freyr_tsan) {
    &[2, 3, 8]
} else {
    &[1, 2, 3, 8]
};

#[test]
fn every_index_runs_exactly_once_on_every_pool_size() {
    for &workers in WORKERS {
        let pool = ThreadPool::new(workers);
        let group = TaskGroup::new();
        for count in [
            1,
            2,
            17,
            1954,
            if cfg!(freyr_tsan) { 4_000 } else { 20_000 },
        ] {
            let job = Tally::new(count, 0);
            let before = pool.metrics().total().tasks_run;
            // SAFETY: `job` and `group` outlive the wait.
            unsafe { pool.submit_job(&group, &job, count) };
            group.wait(&pool);
            let runs: Vec<usize> = job.runs.iter().map(|r| r.load(Ordering::Relaxed)).collect();
            assert!(
                runs.iter().all(|&r| r == 1),
                "{workers} workers, {count} indices: {:?}",
                runs.iter().enumerate().find(|(_, r)| **r != 1)
            );
            assert_eq!(
                pool.metrics().total().tasks_run - before,
                count as u64,
                "{workers} workers, {count} indices"
            );
        }
    }
}

#[test]
fn a_panic_mid_batch_lets_the_rest_of_the_batch_run() {
    for &workers in WORKERS {
        let pool = ThreadPool::new(workers);
        let group = TaskGroup::new();
        // Panics at 0, 7, 14, ...: most fall inside a batch of 2..16 indices.
        let job = Tally::new(1000, 7);
        // SAFETY: `job` and `group` outlive the wait.
        unsafe { pool.submit_job(&group, &job, 1000) };
        let panic = group
            .try_wait(&pool)
            .expect_err("the panics must be reported");
        assert_eq!(
            panic.others(),
            1000usize.div_ceil(7) - 1,
            "{workers} workers"
        );
        let message = panic.payload().downcast_ref::<String>().cloned();
        assert!(
            message.as_deref().is_some_and(|m| m.ends_with(" fails")),
            "{message:?}"
        );
        assert!(
            job.runs.iter().all(|r| r.load(Ordering::Relaxed) == 1),
            "{workers} workers: an index was skipped or repeated after a panic"
        );
        assert!(group.is_done());
        // The pool and the group stay usable.
        let again = Tally::new(100, 0);
        // SAFETY: `again` and `group` outlive the wait.
        unsafe { pool.submit_job(&group, &again, 100) };
        group.wait(&pool);
        assert!(again.runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
    }
}

/// An [`IndexedJob`] that overrides `run_batch`: it records every batch it is handed, and runs
/// the batch's indices itself (advancing `next` before each, as the contract asks).
struct Batches {
    tally: Tally,
    batches: std::sync::Mutex<Vec<(usize, usize)>>,
}

impl IndexedJob for Batches {
    fn run(&self, index: usize) {
        self.tally.run(index);
    }

    fn run_batch(&self, next: &mut usize, end: usize) {
        self.batches.lock().unwrap().push((*next, end));
        while *next < end {
            let index = *next;
            *next = index + 1;
            self.tally.run(index);
        }
    }
}

#[test]
fn run_batch_overrides_get_disjoint_batches_and_resume_after_a_panic() {
    for &workers in WORKERS {
        let pool = ThreadPool::new(workers);
        let group = TaskGroup::new();
        for (count, panic_every) in [(1954, 0), (1000, 7)] {
            let job = Batches {
                tally: Tally::new(count, panic_every),
                batches: std::sync::Mutex::new(Vec::new()),
            };
            // SAFETY: `job` and `group` outlive the wait.
            unsafe { pool.submit_job(&group, &job, count) };
            let outcome = group.try_wait(&pool);
            assert_eq!(outcome.is_err(), panic_every != 0, "{workers} workers");
            assert!(
                job.tally
                    .runs
                    .iter()
                    .all(|r| r.load(Ordering::Relaxed) == 1),
                "{workers} workers, {count} indices: an index was skipped or repeated"
            );
            // Batches never overlap, and a panicking batch is resumed one past the index that
            // panicked (a new batch starts there).
            let mut batches = job.batches.into_inner().unwrap();
            batches.sort_unstable();
            assert!(
                batches.windows(2).all(|w| w[0].0 < w[1].0),
                "{workers} workers: {batches:?}"
            );
            assert!(batches.len() < count, "batches of one index only");
            if workers == 1 {
                // The inline pool hands its whole range over at once, and the rest of it again
                // after each index that panicked.
                let resumed = (0..count - 1)
                    .filter(|p| panic_every != 0 && p % panic_every == 0)
                    .map(|p| (p + 1, count));
                let expected: Vec<_> = core::iter::once((0, count)).chain(resumed).collect();
                assert_eq!(batches, expected, "the inline pool's batches");
            }
            if panic_every != 0 {
                for p in (panic_every..count - 1).step_by(panic_every) {
                    assert!(
                        batches.iter().any(|b| b.0 == p + 1),
                        "{workers} workers: no batch resumed after index {p}"
                    );
                }
            }
        }
    }
}
