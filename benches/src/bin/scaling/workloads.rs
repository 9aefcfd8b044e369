//! The workloads the sweep measures, one entry each: a name and a function that builds it for a
//! worker count, ready to tick.
//!
//! Adding one is one more entry in [`WORKLOADS`]: build its world (a [`Registry`] with its
//! systems, or anything else that implements [`Ticking`]), and the sweep, table, CSV and plots
//! pick it up.

use freyr::{Phase, Registry};
use freyr_benches::heavy::{self, work};
use freyr_benches::{Position, Transform, Velocity, pos_vel};

use crate::server::{Server, Settings};

/// The step passed to `update`.
const DT: f32 = 1.0 / 60.0;

/// A workload built for one worker count: what one tick does, and the registry whose profiler
/// counts the tick's tasks and steals.
pub(crate) trait Ticking {
    /// Runs one tick.
    fn tick(&mut self);
    /// The registry the tick runs on.
    fn registry(&mut self) -> &mut Registry;
}

/// A registry's tick is `Registry::update`.
impl Ticking for Registry {
    fn tick(&mut self) {
        self.update(DT);
    }

    fn registry(&mut self) -> &mut Registry {
        self
    }
}

/// How big a workload is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Size {
    /// The size the sweep measures (the one [`Workload::about`] describes).
    Full,
    /// A small world of the same shape, for tests.
    #[cfg_attr(not(test), allow(dead_code))]
    Tiny,
}

/// A measured workload.
pub(crate) struct Workload {
    /// Its name in the table, CSV and plots.
    pub name: &'static str,
    /// One line on what a tick does.
    pub about: &'static str,
    /// The workload with `workers` workers, its entities spawned and its systems added.
    pub build: fn(workers: usize, size: Size) -> Box<dyn Ticking>,
}

/// Every workload, in sweep order.
pub(crate) const WORKLOADS: &[Workload] = &[
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
    Workload {
        name: "server_tick",
        about: "the server_tick example's tick: 20k aircraft, 256 peers (grid, AI, integrate, \
                gather, per-peer snapshots, flush, tail), governor off, levers at load factor 1",
        build: server_tick,
    },
];

/// Entities of `heavy_compute` (ecs_bench_suite's count).
const HEAVY_ENTITIES: usize = 1_000;
/// Rows per task of `heavy_compute` (ecs_bench_suite's batch).
const HEAVY_BATCH: usize = 64;
/// Entities of `million_iter`.
const MILLION: usize = 1_000_000;

fn heavy_compute(workers: usize, size: Size) -> Box<dyn Ticking> {
    let entities = match size {
        Size::Full => HEAVY_ENTITIES,
        Size::Tiny => 4 * HEAVY_BATCH,
    };
    let mut registry = Registry::with_workers(workers);
    registry.spawn_batch((0..entities).map(heavy::entity));
    registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        r.query::<(&mut Transform, &mut Position)>()
            .rows_per_task(HEAVY_BATCH)
            .each_async(|_, (t, p)| work(t, p));
    });
    Box::new(registry)
}

fn million_iter(workers: usize, size: Size) -> Box<dyn Ticking> {
    let entities = match size {
        Size::Full => MILLION,
        Size::Tiny => 20_000,
    };
    let mut registry = Registry::with_workers(workers);
    registry.spawn_batch((0..entities).map(pos_vel));
    registry.add_system(Phase::Update, |r: &mut Registry, dt: f32| {
        r.query::<(&mut Position, &Velocity)>()
            .each_async(move |_, (p, v)| {
                p.0[0] += v.0[0] * dt;
                p.0[1] += v.0[1] * dt;
                p.0[2] += v.0[2] * dt;
            });
    });
    Box::new(registry)
}

/// The `server_tick` example's server (its own modules, compiled in), ticked on the registry's
/// loop from tick 0 under the same (unloaded) levers every tick: no governor reacts to this
/// machine's timing, so every worker count does the same work, tick for tick (the example
/// proves the per-peer streams and the world byte-identical across worker counts).
pub(crate) struct ServerTick {
    server: Server,
    next: u64,
}

impl ServerTick {
    /// A server of `settings` with `workers` workers, before its first tick.
    pub(crate) fn new(settings: Settings, workers: usize) -> Self {
        ServerTick {
            server: Server::new(settings, workers),
            next: 0,
        }
    }
}

impl Ticking for ServerTick {
    fn tick(&mut self) {
        self.server.tick();
        self.next += 1;
    }

    fn registry(&mut self) -> &mut Registry {
        &mut self.server.registry
    }
}

fn server_tick(workers: usize, size: Size) -> Box<dyn Ticking> {
    let settings = match size {
        // The example's defaults: 20,000 aircraft, 256 peers.
        Size::Full => Settings::default(),
        Size::Tiny => Settings {
            entities: 2_000,
            peers: 16,
            ..Settings::default()
        },
    };
    Box::new(ServerTick::new(settings, workers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_launches_tasks_and_names_are_unique() {
        for (i, w) in WORKLOADS.iter().enumerate() {
            let mut run = (w.build)(2, Size::Tiny);
            run.tick();
            assert!(
                run.registry().profile().tasks > 0,
                "{} launched no task",
                w.name
            );
            assert!(
                WORKLOADS[..i].iter().all(|o| o.name != w.name),
                "{} is listed twice",
                w.name
            );
        }
    }

    #[test]
    fn server_tick_does_the_same_work_at_every_worker_count() {
        let tiny = || Settings {
            entities: 2_000,
            peers: 16,
            // Kills and churn inside the run, so the tail's work is compared too.
            kill_every: 4,
            churn_every: 6,
            ..Settings::default()
        };
        let outcome = |workers| {
            let mut run = ServerTick::new(tiny(), workers);
            for _ in 0..12 {
                run.tick();
            }
            assert_eq!(run.next, 12);
            assert!(run.server.killed() > 0, "no aircraft was shot down");
            (
                run.server.world_hash(),
                run.server.stream_digest(),
                run.server.bytes_sent(),
            )
        };
        let one = outcome(1);
        assert!(one.2 > 0, "no snapshot was sent");
        for workers in [2, 3] {
            assert_eq!(
                outcome(workers),
                one,
                "{workers} workers did different work"
            );
        }
    }
}
