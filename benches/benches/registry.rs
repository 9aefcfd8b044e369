//! Criterion bench group `registry`: whole ticks through the scheduler side of each ECS, against
//! hecs, bevy_ecs and legion (feature `compare`), in one run so the ratios are like with like.
//!
//! Scenarios, one file each under `registry/`:
//! - `schedule` (ecs_bench_suite): 4 archetypes × 10k entities of `A`..`E`, three systems
//!   swapping two floats (`ab`, `cd`, `ce`). Freyr registers three systems in `Phase::Update`;
//!   each launches `each_async` over its query (one task per 512-entity chunk) and returns, so
//!   `ab` overlaps `cd`, and `ce` (which conflicts with `cd` on `C`) waits for `cd` first (an
//!   implicit sync point); `freyr_each` runs the same three systems with the sequential `each`.
//!   bevy_ecs and legion run three systems through their parallel schedulers; hecs has no
//!   scheduler and runs the three loops in order.
//! - `sync_point`: the fixed cost of a tick. `empty_update`: `Registry::update` with three empty
//!   systems (three phases, three sync points), against a bevy_ecs / legion schedule of three
//!   empty systems. `commands_10k` / `commands_100k`: one system records a spawn per source entity
//!   from parallel tasks (`each_async_with`), applied at the phase's sync point; peers record the
//!   same through bevy_ecs `Commands`, legion's `CommandBuffer` and hecs's `CommandBuffer`. Only
//!   the tick is timed; despawning the spawned entities afterwards is not.
//! - `fn_systems` (function systems, `registry/fn_systems.rs`): `seq_64x256` (64 systems with
//!   sequential bodies on their own components), `empty_1000` (1,000 empty systems) and
//!   `schedule/freyr_fn` (the `schedule` scenario as function systems), beside bevy_ecs.
//! - `events`: `send_read_1m`: one event per entity (1M) sent from parallel tasks
//!   (`each_async_with`) and read by a later system with a cursor, against bevy_ecs's buffered
//!   messages (`MessageWriter` / `MessageReader`).
//!
//! Parallel scenarios run at the machine's worker count, or at each count of the comma list in
//! `FREYR_BENCH_THREADS`; legion runs in a rayon pool of that size, bevy_ecs on its own
//! `ComputeTaskPool` (one thread per CPU).
//!
//! Run: `cargo bench -p freyr-benches --bench registry --features compare`.

use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};

#[path = "registry/events.rs"]
mod events;
#[path = "registry/fn_systems.rs"]
mod fn_systems;
#[path = "registry/schedule.rs"]
mod schedule;
#[path = "registry/sync_point.rs"]
mod sync_point;

/// The group every scenario registers into.
pub type Group<'a> = BenchmarkGroup<'a, WallTime>;

/// Worker counts for the parallel scenarios: `FREYR_BENCH_THREADS` (comma list) or the machine's.
fn worker_counts() -> Vec<usize> {
    freyr_benches::bench_threads().unwrap_or_else(|| vec![freyr_benches::machine_threads()])
}

/// A rayon pool of `n` threads, for legion's schedule.
#[cfg(feature = "compare")]
pub fn rayon_pool(n: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("rayon-bench-{i}"))
        .build()
        .expect("rayon pool")
}

/// A bevy_ecs schedule on the multi-threaded executor.
#[cfg(feature = "compare")]
pub fn bevy_schedule() -> bevy_ecs::schedule::Schedule {
    use bevy_ecs::schedule::{MultiThreadedExecutor, Schedule};
    let mut schedule = Schedule::default();
    schedule.set_executor(MultiThreadedExecutor::new());
    schedule
}

fn registry(c: &mut Criterion) {
    let mut group = c.benchmark_group("registry");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    for n in worker_counts() {
        schedule::register(&mut group, n);
        sync_point::register(&mut group, n);
        events::register(&mut group, n);
        fn_systems::register(&mut group, n);
    }
    group.finish();
}

criterion_group!(benches, registry);
criterion_main!(benches);
