//! `heavy_compute` (ecs_bench_suite): 1k entities of (Transform, Position, Rotation, Velocity);
//! in parallel, each entity inverts its 4x4 matrix 100 times, then transforms its position.
//!
//! 1k entities are two chunks, so every implementation splits them into batches of 64 rows, as
//! ecs_bench_suite does (`par_for_each_mut(64)` / `into_iter_batched(64)`): Freyr with
//! `rows_per_task(64)`, hecs with `into_iter_batched(64)`; bevy_ecs and legion pick their own
//! batch sizes.

use std::hint::black_box;

use freyr::Registry;
use freyr_benches::heavy::{entity, work};
use freyr_benches::{Position, Transform};

use crate::Group;

const N: usize = 1_000;
/// Rows per parallel batch (ecs_bench_suite's choice).
const BATCH: usize = 64;

struct Freyr(Registry);

impl Freyr {
    fn new(workers: usize) -> Self {
        let mut registry = Registry::with_workers(workers);
        registry.spawn_batch((0..N).map(entity));
        assert_eq!(
            registry.query::<(&mut Transform, &mut Position)>().count(),
            N
        );
        Freyr(registry)
    }

    #[inline(never)]
    fn run(&mut self) {
        self.0
            .query::<(&mut Transform, &mut Position)>()
            .rows_per_task(BATCH)
            .each_async(|_, (t, p)| work(t, p));
        self.0.execute_tasks();
        black_box(&mut self.0);
    }
}

#[cfg(feature = "compare")]
mod peers {
    use super::*;
    use rayon::prelude::*;

    pub(super) struct Hecs(hecs::World);

    impl Hecs {
        pub(super) fn new() -> Self {
            let mut world = hecs::World::new();
            world.spawn_batch((0..N).map(entity)).for_each(drop);
            Hecs(world)
        }

        /// Batches of 64 (ecs_bench_suite's `par_iter(64)`) bridged to rayon (inside `install`).
        #[inline(never)]
        pub(super) fn run(&mut self) {
            self.0
                .query_mut::<(&mut Transform, &mut Position)>()
                .into_iter_batched(BATCH as u32)
                .par_bridge()
                .for_each(|batch| {
                    for (t, p) in batch {
                        work(t, p);
                    }
                });
            black_box(&mut self.0);
        }
    }

    pub(super) struct Bevy(
        bevy_ecs::world::World,
        bevy_ecs::query::QueryState<(&'static mut Transform, &'static mut Position)>,
    );

    impl Bevy {
        pub(super) fn new() -> Self {
            let mut world = bevy_ecs::world::World::new();
            world.spawn_batch((0..N).map(entity)).for_each(drop);
            let query = world.query::<(&mut Transform, &mut Position)>();
            Bevy(world, query)
        }

        #[inline(never)]
        pub(super) fn run(&mut self) {
            self.1
                .par_iter_mut(&mut self.0)
                .for_each(|(mut t, mut p)| work(&mut t, &mut p));
            black_box(&mut self.0);
        }

        /// `contiguous_par_iter_mut`: column slices per batch.
        #[inline(never)]
        pub(super) fn run_contiguous(&mut self) {
            self.1
                .contiguous_par_iter_mut(&mut self.0)
                .expect("table components: the query is dense")
                .for_each(|(mut ts, mut ps)| {
                    for (t, p) in ts.iter_mut().zip(ps.iter_mut()) {
                        work(t, p);
                    }
                });
            black_box(&mut self.0);
        }
    }

    pub(super) struct Legion(
        legion::World,
        legion::query::Query<(
            legion::query::Write<Transform>,
            legion::query::Write<Position>,
        )>,
    );

    impl Legion {
        pub(super) fn new() -> Self {
            use legion::query::{IntoQuery, Write};
            let mut world = legion::World::default();
            world.extend((0..N).map(entity).collect::<Vec<_>>());
            let query = <(Write<Transform>, Write<Position>)>::query();
            Legion(world, query)
        }

        /// `par_for_each_mut` (rayon underneath; call inside `install`). legion splits by
        /// archetype chunk, its own batch size.
        #[inline(never)]
        pub(super) fn run(&mut self) {
            self.1.par_for_each_mut(&mut self.0, |(t, p)| work(t, p));
            black_box(&mut self.0);
        }
    }
}

pub(crate) fn register(group: &mut Group<'_>, n: usize) {
    let mut freyr = Freyr::new(n);
    group.bench_function(format!("heavy_compute/freyr/w{n}"), |b| {
        b.iter(|| freyr.run())
    });
    #[cfg(feature = "compare")]
    {
        let mut hecs = peers::Hecs::new();
        let rayon = crate::rayon_pool(n);
        group.bench_function(format!("heavy_compute/hecs_rayon/w{n}"), |b| {
            rayon.install(|| b.iter(|| hecs.run()))
        });
        let mut bevy = peers::Bevy::new();
        group.bench_function(format!("heavy_compute/bevy_ecs/w{n}"), |b| {
            b.iter(|| bevy.run())
        });
        group.bench_function(format!("heavy_compute/bevy_ecs_contiguous/w{n}"), |b| {
            b.iter(|| bevy.run_contiguous())
        });
        let mut legion = peers::Legion::new();
        group.bench_function(format!("heavy_compute/legion/w{n}"), |b| {
            rayon.install(|| b.iter(|| legion.run()))
        });
    }
}
