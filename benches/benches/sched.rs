//! Criterion bench group `sched`: Freyr's per-task dispatch against rayon's, in the same run.
//!
//! Scenarios (each at 1, 2 and the machine's worker count; override with
//! `FREYR_BENCH_THREADS=1,4,16`):
//! - `chunk_tasks_1954`: 1,954 empty tasks, one per 512-entity chunk of a million entities.
//!   Freyr: the allocation-free chunk path (`submit_indexed` + `TaskGroup::wait`), the same
//!   through `submit_job` (an `IndexedJob`, body inlined into the pool's batch loop), and a scope
//!   with one spawn per task. Rayon: `par_iter().for_each` over 1,954 items (rayon splits the
//!   range adaptively, so it runs fewer tasks), the same with `with_max_len(1)` (one task per
//!   item, like Freyr), and `rayon::scope` spawning 1,954 tasks.
//! - `parallel_for_1m`: one million trivial indices. Freyr: `parallel_for` with grain 1,024
//!   (chunks of exactly 1,024 indices, several claimed per cursor RMW early on). Rayon:
//!   `par_iter().with_min_len(1024).for_each` (what a rayon user writes for "grain": pieces of
//!   at least 1,024, split adaptively, so in practice far larger), and `with_max_len(1024)`
//!   (rayon held to Freyr's chunk shape: pieces of at most 1,024).
//!
//! Equal parallelism: a Freyr pool of `n` workers is `n - 1` threads plus the calling thread,
//! which takes part; a rayon pool of `n` threads does not count its caller, so the rayon side
//! measures from inside `install` (the measuring thread is one of the `n` pool threads and takes
//! part too). Both sides therefore run the scenario with `n` threads and no cross-pool hand-off.
//! Pools are built outside the measured part; only the dispatch-and-wait is timed.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use freyr_sched::{IndexedJob, TaskGroup, ThreadPool};
use rayon::prelude::*;

/// Chunks of 512 entities in a million: `ceil(1_000_000 / 512)`.
const CHUNK_TASKS: usize = 1_954;
const INDICES: usize = 1_000_000;
const GRAIN: usize = 1_024;

/// Worker counts to measure: `FREYR_BENCH_THREADS` (comma list) or 1, 2 and the machine's.
fn worker_counts() -> Vec<usize> {
    freyr_benches::bench_threads().unwrap_or_else(|| {
        let mut counts = vec![1, 2, freyr_benches::machine_threads()];
        counts.sort_unstable();
        counts.dedup();
        counts
    })
}

/// A Freyr pool and a rayon pool of the same total parallelism.
struct Pools {
    freyr: ThreadPool,
    rayon: rayon::ThreadPool,
}

impl Pools {
    fn new(workers: usize) -> Pools {
        let freyr = ThreadPool::new(workers);
        assert_eq!(freyr.workers(), workers);
        let rayon = rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .thread_name(|i| format!("rayon-bench-{i}"))
            .build()
            .expect("rayon pool");
        Pools { freyr, rayon }
    }
}

/// 1,954 empty chunk tasks through Freyr's allocation-free chunk path.
struct FreyrChunkTasks<'p> {
    pool: &'p ThreadPool,
    group: TaskGroup,
}

fn empty_chunk_task(_job: &(), index: usize) {
    black_box(index);
}

impl<'p> FreyrChunkTasks<'p> {
    fn new(pool: &'p ThreadPool) -> Self {
        FreyrChunkTasks {
            pool,
            group: TaskGroup::new(),
        }
    }

    #[inline(never)]
    fn run(&self) {
        let job = ();
        // SAFETY: `job` and `self.group` outlive `self.group.wait` below.
        unsafe {
            self.pool
                .submit_indexed(&self.group, &job, CHUNK_TASKS, empty_chunk_task);
        }
        self.group.wait(self.pool);
    }
}

/// The same 1,954 empty tasks as an [`IndexedJob`]: the body is inlined into the batch loop.
struct EmptyChunkJob;

impl IndexedJob for EmptyChunkJob {
    #[inline]
    fn run(&self, index: usize) {
        black_box(index);
    }
}

impl FreyrChunkTasks<'_> {
    #[inline(never)]
    fn run_job(&self) {
        let job = EmptyChunkJob;
        // SAFETY: `job` and `self.group` outlive `self.group.wait` below.
        unsafe { self.pool.submit_job(&self.group, &job, CHUNK_TASKS) };
        self.group.wait(self.pool);
    }
}

/// 1,954 empty tasks spawned into a Freyr scope.
#[inline(never)]
fn freyr_scope_spawn(pool: &ThreadPool) {
    pool.scope(|s| {
        for i in 0..CHUNK_TASKS {
            s.spawn(move |_| {
                black_box(i);
            });
        }
    });
}

/// Rayon `par_iter` over 1,954 items, rayon's own (adaptive) splitting.
#[inline(never)]
fn rayon_par_iter(max_len: Option<usize>) {
    let iter = (0..CHUNK_TASKS).into_par_iter();
    match max_len {
        None => iter.for_each(|i| {
            black_box(i);
        }),
        Some(len) => iter.with_max_len(len).for_each(|i| {
            black_box(i);
        }),
    }
}

/// 1,954 empty tasks spawned into a `rayon::scope`.
#[inline(never)]
fn rayon_scope_spawn() {
    rayon::scope(|s| {
        for i in 0..CHUNK_TASKS {
            s.spawn(move |_| {
                black_box(i);
            });
        }
    });
}

#[inline(never)]
fn freyr_parallel_for(pool: &ThreadPool) {
    pool.parallel_for(INDICES, GRAIN, |i| {
        black_box(i);
    });
}

#[inline(never)]
fn rayon_parallel_for() {
    (0..INDICES)
        .into_par_iter()
        .with_min_len(GRAIN)
        .for_each(|i| {
            black_box(i);
        });
}

/// Rayon held to Freyr's chunk shape: pieces of at most `GRAIN` indices.
#[inline(never)]
fn rayon_parallel_for_max_len() {
    (0..INDICES)
        .into_par_iter()
        .with_max_len(GRAIN)
        .for_each(|i| {
            black_box(i);
        });
}

fn bench(c: &mut Criterion) {
    let counts = worker_counts();
    let pools: Vec<(usize, Pools)> = counts.iter().map(|&n| (n, Pools::new(n))).collect();

    let mut group = c.benchmark_group("sched");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    group.throughput(Throughput::Elements(CHUNK_TASKS as u64));
    for (n, pools) in &pools {
        let chunk_tasks = FreyrChunkTasks::new(&pools.freyr);
        group.bench_function(
            BenchmarkId::new("chunk_tasks_1954/freyr_submit_indexed", n),
            |b| {
                b.iter(|| chunk_tasks.run());
            },
        );
        group.bench_function(
            BenchmarkId::new("chunk_tasks_1954/freyr_submit_job", n),
            |b| {
                b.iter(|| chunk_tasks.run_job());
            },
        );
        group.bench_function(
            BenchmarkId::new("chunk_tasks_1954/freyr_scope_spawn", n),
            |b| {
                b.iter(|| freyr_scope_spawn(&pools.freyr));
            },
        );
        group.bench_function(
            BenchmarkId::new("chunk_tasks_1954/rayon_par_iter", n),
            |b| {
                pools.rayon.install(|| b.iter(|| rayon_par_iter(None)));
            },
        );
        group.bench_function(
            BenchmarkId::new("chunk_tasks_1954/rayon_par_iter_max_len_1", n),
            |b| pools.rayon.install(|| b.iter(|| rayon_par_iter(Some(1)))),
        );
        group.bench_function(
            BenchmarkId::new("chunk_tasks_1954/rayon_scope_spawn", n),
            |b| {
                pools.rayon.install(|| b.iter(rayon_scope_spawn));
            },
        );
    }

    group.throughput(Throughput::Elements(INDICES as u64));
    for (n, pools) in &pools {
        group.bench_function(BenchmarkId::new("parallel_for_1m/freyr", n), |b| {
            b.iter(|| freyr_parallel_for(&pools.freyr));
        });
        group.bench_function(BenchmarkId::new("parallel_for_1m/rayon", n), |b| {
            pools.rayon.install(|| b.iter(rayon_parallel_for));
        });
        group.bench_function(BenchmarkId::new("parallel_for_1m/rayon_max_len", n), |b| {
            pools.rayon.install(|| b.iter(rayon_parallel_for_max_len));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
