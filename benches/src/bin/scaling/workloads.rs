//! The workloads the sweep measures, one entry each: a name and a function that builds a
//! registry (entities and systems) for a worker count. A tick is `Registry::update`.
//!
//! Adding one (the `server_tick` example's tick, when it exists) is one more entry in
//! [`WORKLOADS`]: build its registry with its systems, and the sweep, table, CSV and plots pick
//! it up.

use freyr_benches::heavy::{self, work};
use freyr_benches::{Position, Transform, Velocity, pos_vel};
use freyr_query::{Phase, Registry};

/// A measured workload.
pub struct Workload {
    /// Its name in the table, CSV and plots.
    pub name: &'static str,
    /// One line on what a tick does.
    pub about: &'static str,
    /// A registry with `workers` workers, its entities spawned and its systems added.
    pub build: fn(workers: usize) -> Registry,
}

/// Every workload, in sweep order.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        name: "heavy_compute",
        about: "1k entities invert a 4x4 matrix 100 times each; tasks of 64 rows",
        build: heavy_compute,
    },
    Workload {
        name: "million_iter",
        about: "pos += vel * dt over 1M entities with each_async (1,954 chunk tasks)",
        build: million_iter,
    },
];

/// Entities of `heavy_compute` (ecs_bench_suite's count).
const HEAVY_ENTITIES: usize = 1_000;
/// Rows per task of `heavy_compute` (ecs_bench_suite's batch).
const HEAVY_BATCH: usize = 64;
/// Entities of `million_iter`.
const MILLION: usize = 1_000_000;

fn heavy_compute(workers: usize) -> Registry {
    let mut registry = Registry::with_workers(workers);
    registry.spawn_batch((0..HEAVY_ENTITIES).map(heavy::entity));
    registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        r.query::<(&mut Transform, &mut Position)>()
            .rows_per_task(HEAVY_BATCH)
            .each_async(|_, (t, p)| work(t, p));
    });
    registry
}

fn million_iter(workers: usize) -> Registry {
    let mut registry = Registry::with_workers(workers);
    registry.spawn_batch((0..MILLION).map(pos_vel));
    registry.add_system(Phase::Update, |r: &mut Registry, dt: f32| {
        r.query::<(&mut Position, &Velocity)>()
            .each_async(move |_, (p, v)| {
                p.0[0] += v.0[0] * dt;
                p.0[1] += v.0[1] * dt;
                p.0[2] += v.0[2] * dt;
            });
    });
    registry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_launches_tasks_and_names_are_unique() {
        for (i, w) in WORKLOADS.iter().enumerate() {
            let mut registry = (w.build)(2);
            registry.update(1.0 / 60.0);
            assert!(registry.profile().tasks > 0, "{} launched no task", w.name);
            assert!(
                WORKLOADS[..i].iter().all(|o| o.name != w.name),
                "{} is listed twice",
                w.name
            );
        }
    }
}
