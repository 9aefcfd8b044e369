//! Criterion bench group `query`: Freyr's queries against plain loops, rayon, and (feature
//! `compare`) hecs, bevy_ecs and legion 0.4, in one run so the ratios are like with like.
//!
//! Scenarios, one file each under `query/`:
//! - `each_1m`: `pos += vel * dt` over 1M (Position, Velocity) on one thread. Baseline: the same
//!   loop over two `Vec`s. Peers: hecs `query_mut`, bevy_ecs `QueryState::iter_mut` and
//!   `contiguous_iter_mut` (`bevy_ecs_contiguous`: column slices per table), legion
//!   `for_each_mut`.
//! - `stream_1m`: the memory floor — a STREAM-like in-place pass `a += b * s` over flat `f32`
//!   arrays holding the same bytes as the 1M (Position, Velocity) loop; sequential, and parallel
//!   split in 1,954 pieces (rayon `par_chunks_mut`, Freyr `parallel_for`).
//! - `each_async_1m`: the 1M loop on all workers. Freyr `each_async` + `execute_tasks`; peers:
//!   bevy_ecs `par_iter_mut` and `contiguous_par_iter_mut`, hecs `into_iter_batched(512)` bridged
//!   to rayon, legion `par_for_each_mut` (rayon).
//! - `simple_iter` / `frag_iter`: the ecs_bench_suite shapes (10k entities of (Transform,
//!   Position, Rotation, Velocity), `pos += vel`; 26 archetypes of 20 entities with `Data`,
//!   `data *= 2`), each peer in its plain and (bevy_ecs) contiguous form.
//! - `changed_50k`: a `Changed<Position>` query over 50k entities with one chunk written since
//!   the reader's tick (Freyr `filter_changed`, one comparison per unchanged chunk) against
//!   bevy_ecs's `Changed<Position>` on the same world (a tick check per row).
//! - `heavy_compute`: 1k entities, each inverting its 4x4 matrix 100 times, in parallel.
//! - `chunk_tasks_1954`: 1M entities, `each_async` with an empty callback (1,954 chunk tasks)
//!   against rayon `par_iter` over 1,954 items.
//!
//! Parallel scenarios run at the machine's worker count, or at each count of the comma list in
//! `FREYR_BENCH_THREADS`. Freyr's `n` workers include the calling thread; rayon pools of `n`
//! threads (hecs and legion run in them) are measured from inside `install`, so both use `n`
//! threads. bevy_ecs runs on its own `ComputeTaskPool` (one thread per CPU, plus the caller),
//! which this crate cannot resize.
//!
//! Setup happens outside the measured part; each measured part is an `#[inline(never)] run`.
//! Run: `cargo bench -p freyr-benches --bench query --features compare`, or the whole comparison
//! as a report: `cargo run --release -p freyr-benches --bin bench_report -- --run`.

use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};

#[path = "query/changed.rs"]
mod changed;
#[path = "query/dispatch.rs"]
mod dispatch;
#[path = "query/each_1m.rs"]
mod each_1m;
#[path = "query/each_async_1m.rs"]
mod each_async_1m;
#[path = "query/frag_iter.rs"]
mod frag_iter;
#[path = "query/heavy_compute.rs"]
mod heavy_compute;
#[path = "query/simple_iter.rs"]
mod simple_iter;
#[path = "query/stream.rs"]
mod stream;

/// Entities of the big scenarios.
pub const BIG: usize = 1_000_000;
/// Rows per Freyr chunk.
pub const CHUNK: usize = freyr_core::CHUNK_CAPACITY;
/// Chunk tasks of a 1M-entity query: `ceil(1_000_000 / 512)` = 1,954.
pub const CHUNK_TASKS: usize = BIG.div_ceil(CHUNK);
/// The integration step.
pub const DT: f32 = 1.0 / 60.0;

/// The group every scenario registers into.
pub type Group<'a> = BenchmarkGroup<'a, WallTime>;

/// Worker counts for the parallel scenarios: `FREYR_BENCH_THREADS` (comma list) or the machine's.
fn worker_counts() -> Vec<usize> {
    freyr_benches::bench_threads().unwrap_or_else(|| vec![freyr_benches::machine_threads()])
}

/// A rayon pool of `n` threads (measure from inside `install` so the caller is one of them).
pub fn rayon_pool(n: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("rayon-bench-{i}"))
        .build()
        .expect("rayon pool")
}

/// Starts bevy_ecs's `ComputeTaskPool` (its `par_iter` panics without one): running a
/// multi-threaded schedule initialises it with one thread per CPU.
#[cfg(feature = "compare")]
pub fn init_bevy_task_pool() {
    use bevy_ecs::schedule::{MultiThreadedExecutor, Schedule};
    let mut world = bevy_ecs::world::World::new();
    let mut schedule = Schedule::default();
    schedule.set_executor(MultiThreadedExecutor::new());
    schedule.add_systems(|| {});
    schedule.run(&mut world);
}

fn query(c: &mut Criterion) {
    #[cfg(feature = "compare")]
    init_bevy_task_pool();
    let mut group = c.benchmark_group("query");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    each_1m::register(&mut group);
    stream::register_seq(&mut group);
    simple_iter::register(&mut group);
    frag_iter::register(&mut group);
    changed::register(&mut group);
    for n in worker_counts() {
        stream::register_par(&mut group, n);
        each_async_1m::register(&mut group, n);
        heavy_compute::register(&mut group, n);
        dispatch::register(&mut group, n);
    }
    group.finish();
}

criterion_group!(benches, query);
criterion_main!(benches);
