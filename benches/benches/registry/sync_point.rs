//! `sync_point`: what a tick costs besides the work. `empty_update`: three empty systems;
//! `commands_{10k,100k}`: one system records a spawn per source entity, applied at the sync point.

use std::hint::black_box;
use std::time::{Duration, Instant};

use freyr::{Phase, Registry};

use crate::Group;

/// The entities the commands scenarios read: one command is recorded per source.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
pub(crate) struct Source(pub u32);

/// The component of every spawned entity.
#[allow(
    dead_code,
    reason = "the payload sizes the spawned component; nothing reads it"
)]
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
pub(crate) struct Spawned(pub u32);

/// Command counts of the `commands_*` rows, with their row names.
const COMMANDS: [(usize, &str); 2] = [(10_000, "commands_10k"), (100_000, "commands_100k")];

/// Runs `tick` `iters` times and returns the time spent in it; `clean` runs after each tick,
/// untimed.
fn timed_ticks<S>(
    state: &mut S,
    iters: u64,
    mut tick: impl FnMut(&mut S),
    mut clean: impl FnMut(&mut S),
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        tick(state);
        total += start.elapsed();
        clean(state);
    }
    total
}

/// Freyr: `Registry::update` with three empty systems.
fn freyr_empty(workers: usize) -> Registry {
    let mut registry = Registry::with_workers(workers);
    for _ in 0..3 {
        registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
            black_box(r);
        });
    }
    registry
}

/// Freyr: `n` sources, one system recording a spawn per source from parallel chunk tasks.
fn freyr_commands(workers: usize, n: usize) -> Registry {
    let mut registry = Registry::with_workers(workers);
    registry.spawn_batch((0..n as u32).map(|i| (Source(i),)));
    registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        r.query::<&Source>().each_async_with(|_, s, ctx| {
            ctx.commands().spawn((Spawned(s.0),));
        });
    });
    registry
}

/// Despawns every `Spawned` entity (untimed clean-up), checking that `n` were spawned.
fn freyr_clean(registry: &mut Registry, n: usize) {
    let mut spawned = Vec::with_capacity(n);
    registry.query::<&Spawned>().each(|e, _| spawned.push(e));
    assert_eq!(spawned.len(), n, "every recorded spawn was applied");
    for e in spawned {
        registry.despawn(e).expect("just listed");
    }
}

#[cfg(feature = "compare")]
mod peers {
    use super::*;
    use bevy_ecs::system::{Commands, Query};

    fn empty() {}

    /// bevy_ecs: a schedule of three empty systems.
    pub(super) fn bevy_empty() -> (bevy_ecs::world::World, bevy_ecs::schedule::Schedule) {
        let mut schedule = crate::bevy_schedule();
        schedule.add_systems((empty, empty, empty));
        let mut world = bevy_ecs::world::World::new();
        schedule.run(&mut world);
        (world, schedule)
    }

    fn bevy_spawner(mut commands: Commands, sources: Query<&Source>) {
        for s in &sources {
            commands.spawn(Spawned(s.0));
        }
    }

    /// bevy_ecs: `n` sources, one system spawning through `Commands`.
    pub(super) fn bevy_commands(
        n: usize,
    ) -> (bevy_ecs::world::World, bevy_ecs::schedule::Schedule) {
        let mut world = bevy_ecs::world::World::new();
        world.spawn_batch((0..n as u32).map(Source)).for_each(drop);
        let mut schedule = crate::bevy_schedule();
        schedule.add_systems(bevy_spawner);
        (world, schedule)
    }

    pub(super) fn bevy_clean(world: &mut bevy_ecs::world::World, n: usize) {
        let spawned: Vec<_> = world
            .query_filtered::<bevy_ecs::entity::Entity, bevy_ecs::query::With<Spawned>>()
            .iter(world)
            .collect();
        assert_eq!(spawned.len(), n, "every recorded spawn was applied");
        for e in spawned {
            world.despawn(e);
        }
    }

    /// legion: a world, its resources, a schedule and the rayon pool it runs in.
    pub(super) struct Legion {
        pub world: legion::World,
        resources: legion::Resources,
        schedule: legion::Schedule,
        pool: rayon::ThreadPool,
    }

    impl Legion {
        /// Three empty systems.
        pub(super) fn empty(workers: usize) -> Self {
            use legion::systems::SystemBuilder;
            let mut builder = legion::Schedule::builder();
            for name in ["e1", "e2", "e3"] {
                builder.add_system(SystemBuilder::new(name).build(|_, _, _, _| {}));
            }
            Legion::with(legion::World::default(), builder.build(), workers)
        }

        /// `n` sources, one system pushing a spawn per source into its `CommandBuffer`.
        pub(super) fn commands(workers: usize, n: usize) -> Self {
            use legion::query::{IntoQuery, Read};
            use legion::systems::SystemBuilder;
            let mut world = legion::World::default();
            world.extend((0..n as u32).map(|i| (Source(i),)).collect::<Vec<_>>());
            let schedule = legion::Schedule::builder()
                .add_system(
                    SystemBuilder::new("spawner")
                        .with_query(Read::<Source>::query())
                        .build(|cmd, world, _, q| {
                            for s in q.iter(world) {
                                cmd.push((Spawned(s.0),));
                            }
                        }),
                )
                .build();
            Legion::with(world, schedule, workers)
        }

        fn with(world: legion::World, schedule: legion::Schedule, workers: usize) -> Self {
            Legion {
                world,
                resources: legion::Resources::default(),
                schedule,
                pool: crate::rayon_pool(workers),
            }
        }

        #[inline(never)]
        pub(super) fn run(&mut self) {
            self.schedule
                .execute_in_thread_pool(&mut self.world, &mut self.resources, &self.pool);
        }

        pub(super) fn clean(&mut self, n: usize) {
            use legion::query::{IntoQuery, Read};
            let spawned: Vec<legion::Entity> = <(legion::Entity, Read<Spawned>)>::query()
                .iter(&self.world)
                .map(|(e, _)| *e)
                .collect();
            assert_eq!(spawned.len(), n, "every recorded spawn was applied");
            for e in spawned {
                self.world.remove(e);
            }
        }
    }

    /// hecs: `n` sources; a `CommandBuffer` filled from a query, then `run_on`.
    pub(super) struct Hecs(pub hecs::World, hecs::CommandBuffer);

    impl Hecs {
        pub(super) fn new(n: usize) -> Self {
            let mut world = hecs::World::new();
            world
                .spawn_batch((0..n as u32).map(|i| (Source(i),)))
                .for_each(drop);
            Hecs(world, hecs::CommandBuffer::new())
        }

        #[inline(never)]
        pub(super) fn run(&mut self) {
            for s in self.0.query::<&Source>().iter() {
                self.1.spawn((Spawned(s.0),));
            }
            self.1.run_on(&mut self.0);
        }

        pub(super) fn clean(&mut self, n: usize) {
            let spawned: Vec<hecs::Entity> = self
                .0
                .query::<(hecs::Entity, &Spawned)>()
                .iter()
                .map(|(e, _)| e)
                .collect();
            assert_eq!(spawned.len(), n, "every recorded spawn was applied");
            for e in spawned {
                self.0.despawn(e).expect("just listed");
            }
        }
    }
}

pub(crate) fn register(group: &mut Group<'_>, n: usize) {
    let mut freyr = freyr_empty(n);
    group.bench_function(format!("sync_point/empty_update/freyr/w{n}"), |b| {
        b.iter(|| freyr.update(black_box(1.0 / 60.0)))
    });
    drop(freyr);
    #[cfg(feature = "compare")]
    {
        let (mut world, mut schedule) = peers::bevy_empty();
        group.bench_function(format!("sync_point/empty_update/bevy_ecs/w{n}"), |b| {
            b.iter(|| schedule.run(&mut world))
        });
        let mut legion = peers::Legion::empty(n);
        group.bench_function(format!("sync_point/empty_update/legion/w{n}"), |b| {
            b.iter(|| legion.run())
        });
    }
    for (count, row) in COMMANDS {
        let mut freyr = freyr_commands(n, count);
        group.bench_function(format!("sync_point/{row}/freyr/w{n}"), |b| {
            b.iter_custom(|iters| {
                timed_ticks(
                    &mut freyr,
                    iters,
                    |r| r.update(black_box(1.0 / 60.0)),
                    |r| freyr_clean(r, count),
                )
            })
        });
        drop(freyr);
        #[cfg(feature = "compare")]
        {
            let mut hecs = peers::Hecs::new(count);
            group.bench_function(format!("sync_point/{row}/hecs/w{n}"), |b| {
                b.iter_custom(|iters| {
                    timed_ticks(&mut hecs, iters, |h| h.run(), |h| h.clean(count))
                })
            });
            drop(hecs);
            let mut bevy = peers::bevy_commands(count);
            group.bench_function(format!("sync_point/{row}/bevy_ecs/w{n}"), |b| {
                b.iter_custom(|iters| {
                    timed_ticks(
                        &mut bevy,
                        iters,
                        |(world, schedule)| schedule.run(world),
                        |(world, _)| peers::bevy_clean(world, count),
                    )
                })
            });
            drop(bevy);
            let mut legion = peers::Legion::commands(n, count);
            group.bench_function(format!("sync_point/{row}/legion/w{n}"), |b| {
                b.iter_custom(|iters| {
                    timed_ticks(&mut legion, iters, |l| l.run(), |l| l.clean(count))
                })
            });
        }
    }
}
