//! `each_1m`: `pos += vel * dt` over 1M (Position, Velocity) entities on the calling thread.

use std::hint::black_box;

use freyr::Registry;
use freyr_benches::{Position, Velocity, pos_vel};

use crate::{BIG, DT, Group};

/// The update every implementation runs per entity.
#[inline(always)]
pub(crate) fn integrate(p: &mut Position, v: &Velocity, dt: f32) {
    p.0[0] += v.0[0] * dt;
    p.0[1] += v.0[1] * dt;
    p.0[2] += v.0[2] * dt;
}

/// The baseline: two plain `Vec`s.
pub(crate) struct PlainVec {
    pos: Vec<Position>,
    vel: Vec<Velocity>,
}

impl PlainVec {
    pub(crate) fn new(n: usize) -> Self {
        let (pos, vel) = (0..n).map(pos_vel).unzip();
        PlainVec { pos, vel }
    }

    #[inline(never)]
    pub(crate) fn run(&mut self) {
        let dt = black_box(DT);
        for (p, v) in self.pos.iter_mut().zip(&self.vel) {
            integrate(p, v, dt);
        }
    }
}

/// Freyr: a registry and its cached query.
pub(crate) struct Freyr {
    registry: Registry,
}

impl Freyr {
    pub(crate) fn new(n: usize, workers: usize) -> Self {
        let mut registry = Registry::with_workers(workers);
        registry.spawn_batch((0..n).map(pos_vel));
        // Build the query state once, outside the measurement.
        assert_eq!(registry.query::<(&mut Position, &Velocity)>().count(), n);
        Freyr { registry }
    }

    /// `Query::each`.
    #[inline(never)]
    pub(crate) fn run_each(&mut self) {
        let dt = black_box(DT);
        self.registry
            .query::<(&mut Position, &Velocity)>()
            .each(|_, (p, v)| integrate(p, v, dt));
    }

    /// `Query::each_chunk`: the same with column slices.
    #[inline(never)]
    pub(crate) fn run_each_chunk(&mut self) {
        let dt = black_box(DT);
        self.registry
            .query::<(&mut Position, &Velocity)>()
            .each_chunk(|_, (pos, vel)| {
                for (p, v) in pos.iter_mut().zip(vel) {
                    integrate(p, v, dt);
                }
            });
    }

    /// `Query::each_async` on every worker, then the sync point.
    #[inline(never)]
    pub(crate) fn run_each_async(&mut self) {
        let dt = black_box(DT);
        self.registry
            .query::<(&mut Position, &Velocity)>()
            .each_async(move |_, (p, v)| integrate(p, v, dt));
        self.registry.execute_tasks();
    }
}

#[cfg(feature = "compare")]
pub(crate) mod hecs_peer {
    use super::*;

    pub(crate) struct Hecs {
        pub world: hecs::World,
    }

    impl Hecs {
        pub(crate) fn new(n: usize) -> Self {
            let mut world = hecs::World::new();
            world.spawn_batch((0..n).map(pos_vel)).for_each(drop);
            Hecs { world }
        }

        #[inline(never)]
        pub(crate) fn run(&mut self) {
            let dt = black_box(DT);
            for (p, v) in self.world.query_mut::<(&mut Position, &Velocity)>() {
                integrate(p, v, dt);
            }
        }
    }
}

#[cfg(feature = "compare")]
pub(crate) mod bevy_peer {
    use super::*;
    use bevy_ecs::query::QueryState;
    use bevy_ecs::world::World;

    pub(crate) struct Bevy {
        pub world: World,
        pub query: QueryState<(&'static mut Position, &'static Velocity)>,
    }

    impl Bevy {
        pub(crate) fn new(n: usize) -> Self {
            let mut world = World::new();
            world.spawn_batch((0..n).map(pos_vel)).for_each(drop);
            let query = world.query::<(&mut Position, &Velocity)>();
            Bevy { world, query }
        }

        #[inline(never)]
        pub(crate) fn run(&mut self) {
            let dt = black_box(DT);
            for (mut p, v) in self.query.iter_mut(&mut self.world) {
                integrate(&mut p, v, dt);
            }
        }

        /// `contiguous_iter_mut`: one pair of column slices per table, the loop over slices.
        #[inline(never)]
        pub(crate) fn run_contiguous(&mut self) {
            let dt = black_box(DT);
            let tables = self
                .query
                .contiguous_iter_mut(&mut self.world)
                .expect("(Position, Velocity) are table components: the query is dense");
            for (mut pos, vel) in tables {
                for (p, v) in pos.iter_mut().zip(vel) {
                    integrate(p, v, dt);
                }
            }
        }
    }
}

#[cfg(feature = "compare")]
pub(crate) mod legion_peer {
    use super::*;
    use legion::query::{IntoQuery, Query, Read, Write};

    pub(crate) type PosVel = (Write<Position>, Read<Velocity>);

    pub(crate) struct Legion {
        pub world: legion::World,
        pub query: Query<PosVel>,
    }

    impl Legion {
        pub(crate) fn new(n: usize) -> Self {
            let mut world = legion::World::default();
            world.extend((0..n).map(pos_vel).collect::<Vec<_>>());
            let mut query = PosVel::query();
            assert_eq!(query.iter_mut(&mut world).count(), n);
            Legion { world, query }
        }

        #[inline(never)]
        pub(crate) fn run(&mut self) {
            let dt = black_box(DT);
            self.query
                .for_each_mut(&mut self.world, |(p, v)| integrate(p, v, dt));
        }
    }
}

pub(crate) fn register(group: &mut Group<'_>) {
    let mut plain = PlainVec::new(BIG);
    group.bench_function("each_1m/plain_vec", |b| b.iter(|| plain.run()));
    drop(plain);
    let mut freyr = Freyr::new(BIG, 1);
    group.bench_function("each_1m/freyr_each", |b| b.iter(|| freyr.run_each()));
    group.bench_function("each_1m/freyr_each_chunk", |b| {
        b.iter(|| freyr.run_each_chunk())
    });
    drop(freyr);
    #[cfg(feature = "compare")]
    {
        let mut hecs = hecs_peer::Hecs::new(BIG);
        group.bench_function("each_1m/hecs", |b| b.iter(|| hecs.run()));
        drop(hecs);
        let mut bevy = bevy_peer::Bevy::new(BIG);
        group.bench_function("each_1m/bevy_ecs", |b| b.iter(|| bevy.run()));
        group.bench_function("each_1m/bevy_ecs_contiguous", |b| {
            b.iter(|| bevy.run_contiguous())
        });
        drop(bevy);
        let mut legion = legion_peer::Legion::new(BIG);
        group.bench_function("each_1m/legion", |b| b.iter(|| legion.run()));
    }
}
