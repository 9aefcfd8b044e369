//! `simple_iter` (ecs_bench_suite): 10k entities of (Transform, Position, Rotation, Velocity),
//! `pos += vel` on the calling thread.

use std::hint::black_box;

use freyr::Registry;
use freyr_benches::{Position, Rotation, Transform, Velocity, pos_vel};

use crate::Group;

const N: usize = 10_000;

fn four(i: usize) -> (Transform, Position, Rotation, Velocity) {
    let (p, v) = pos_vel(i);
    (Transform::IDENTITY, p, Rotation([1.0, 0.0, 0.0]), v)
}

#[inline(always)]
fn step(p: &mut Position, v: &Velocity) {
    p.0[0] += v.0[0];
    p.0[1] += v.0[1];
    p.0[2] += v.0[2];
}

struct Freyr(Registry);

impl Freyr {
    fn new() -> Self {
        let mut registry = Registry::with_workers(1);
        registry.spawn_batch((0..N).map(four));
        assert_eq!(registry.query::<(&mut Position, &Velocity)>().count(), N);
        Freyr(registry)
    }

    #[inline(never)]
    fn run(&mut self) {
        self.0
            .query::<(&mut Position, &Velocity)>()
            .each(|_, (p, v)| step(p, v));
        black_box(&mut self.0);
    }
}

#[cfg(feature = "compare")]
struct Hecs(hecs::World);

#[cfg(feature = "compare")]
impl Hecs {
    fn new() -> Self {
        let mut world = hecs::World::new();
        world.spawn_batch((0..N).map(four)).for_each(drop);
        Hecs(world)
    }

    #[inline(never)]
    fn run(&mut self) {
        for (p, v) in self.0.query_mut::<(&mut Position, &Velocity)>() {
            step(p, v);
        }
        black_box(&mut self.0);
    }
}

#[cfg(feature = "compare")]
struct Bevy(
    bevy_ecs::world::World,
    bevy_ecs::query::QueryState<(&'static mut Position, &'static Velocity)>,
);

#[cfg(feature = "compare")]
impl Bevy {
    fn new() -> Self {
        let mut world = bevy_ecs::world::World::new();
        world.spawn_batch((0..N).map(four)).for_each(drop);
        let query = world.query::<(&mut Position, &Velocity)>();
        Bevy(world, query)
    }

    #[inline(never)]
    fn run(&mut self) {
        for (mut p, v) in self.1.iter_mut(&mut self.0) {
            step(&mut p, v);
        }
        black_box(&mut self.0);
    }

    /// `contiguous_iter_mut`: the same over column slices.
    #[inline(never)]
    fn run_contiguous(&mut self) {
        let tables = self
            .1
            .contiguous_iter_mut(&mut self.0)
            .expect("table components: the query is dense");
        for (mut pos, vel) in tables {
            for (p, v) in pos.iter_mut().zip(vel) {
                step(p, v);
            }
        }
        black_box(&mut self.0);
    }
}

#[cfg(feature = "compare")]
struct Legion(
    legion::World,
    legion::query::Query<(
        legion::query::Write<Position>,
        legion::query::Read<Velocity>,
    )>,
);

#[cfg(feature = "compare")]
impl Legion {
    fn new() -> Self {
        use legion::query::{IntoQuery, Read, Write};
        let mut world = legion::World::default();
        world.extend((0..N).map(four).collect::<Vec<_>>());
        let query = <(Write<Position>, Read<Velocity>)>::query();
        Legion(world, query)
    }

    #[inline(never)]
    fn run(&mut self) {
        self.1.for_each_mut(&mut self.0, |(p, v)| step(p, v));
        black_box(&mut self.0);
    }
}

pub(crate) fn register(group: &mut Group<'_>) {
    let mut freyr = Freyr::new();
    group.bench_function("simple_iter/freyr", |b| b.iter(|| freyr.run()));
    #[cfg(feature = "compare")]
    {
        let mut hecs = Hecs::new();
        group.bench_function("simple_iter/hecs", |b| b.iter(|| hecs.run()));
        let mut bevy = Bevy::new();
        group.bench_function("simple_iter/bevy_ecs", |b| b.iter(|| bevy.run()));
        group.bench_function("simple_iter/bevy_ecs_contiguous", |b| {
            b.iter(|| bevy.run_contiguous())
        });
        let mut legion = Legion::new();
        group.bench_function("simple_iter/legion", |b| b.iter(|| legion.run()));
    }
}
