//! `heavy_compute` (ecs_bench_suite): 1k entities of (Transform, Position, Rotation, Velocity);
//! in parallel, each entity inverts its 4x4 matrix 100 times, then transforms its position.
//!
//! 1k entities are two chunks, so every implementation splits them into batches of 64 rows, as
//! ecs_bench_suite does (`par_for_each_mut(64)` / `into_iter_batched(64)`): Freyr with
//! `rows_per_task(64)`, hecs with `into_iter_batched(64)`; bevy_ecs picks its own batch size.

use std::hint::black_box;

use freyr_benches::{Position, Rotation, Transform, Velocity};
use freyr_query::Registry;

use crate::Group;

const N: usize = 1_000;
const INVERSIONS: usize = 100;
/// Rows per parallel batch (ecs_bench_suite's choice).
const BATCH: usize = 64;

type Mat4 = [[f32; 4]; 4];

/// The inverse of `m` by cofactors (as glam / cgmath compute it).
#[inline]
pub fn inverse(m: &Mat4) -> Mat4 {
    let a = m;
    let s0 = a[0][0] * a[1][1] - a[1][0] * a[0][1];
    let s1 = a[0][0] * a[1][2] - a[1][0] * a[0][2];
    let s2 = a[0][0] * a[1][3] - a[1][0] * a[0][3];
    let s3 = a[0][1] * a[1][2] - a[1][1] * a[0][2];
    let s4 = a[0][1] * a[1][3] - a[1][1] * a[0][3];
    let s5 = a[0][2] * a[1][3] - a[1][2] * a[0][3];
    let c5 = a[2][2] * a[3][3] - a[3][2] * a[2][3];
    let c4 = a[2][1] * a[3][3] - a[3][1] * a[2][3];
    let c3 = a[2][1] * a[3][2] - a[3][1] * a[2][2];
    let c2 = a[2][0] * a[3][3] - a[3][0] * a[2][3];
    let c1 = a[2][0] * a[3][2] - a[3][0] * a[2][2];
    let c0 = a[2][0] * a[3][1] - a[3][0] * a[2][1];
    let det = s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0;
    let inv = 1.0 / det;
    [
        [
            (a[1][1] * c5 - a[1][2] * c4 + a[1][3] * c3) * inv,
            (-a[0][1] * c5 + a[0][2] * c4 - a[0][3] * c3) * inv,
            (a[3][1] * s5 - a[3][2] * s4 + a[3][3] * s3) * inv,
            (-a[2][1] * s5 + a[2][2] * s4 - a[2][3] * s3) * inv,
        ],
        [
            (-a[1][0] * c5 + a[1][2] * c2 - a[1][3] * c1) * inv,
            (a[0][0] * c5 - a[0][2] * c2 + a[0][3] * c1) * inv,
            (-a[3][0] * s5 + a[3][2] * s2 - a[3][3] * s1) * inv,
            (a[2][0] * s5 - a[2][2] * s2 + a[2][3] * s1) * inv,
        ],
        [
            (a[1][0] * c4 - a[1][1] * c2 + a[1][3] * c0) * inv,
            (-a[0][0] * c4 + a[0][1] * c2 - a[0][3] * c0) * inv,
            (a[3][0] * s4 - a[3][1] * s2 + a[3][3] * s0) * inv,
            (-a[2][0] * s4 + a[2][1] * s2 - a[2][3] * s0) * inv,
        ],
        [
            (-a[1][0] * c3 + a[1][1] * c1 - a[1][2] * c0) * inv,
            (a[0][0] * c3 - a[0][1] * c1 + a[0][2] * c0) * inv,
            (-a[3][0] * s3 + a[3][1] * s1 - a[3][2] * s0) * inv,
            (a[2][0] * s3 - a[2][1] * s1 + a[2][2] * s0) * inv,
        ],
    ]
}

/// The per-entity work: 100 inversions, then `pos = M * pos` (as a direction).
#[inline(always)]
fn work(t: &mut Transform, p: &mut Position) {
    for _ in 0..INVERSIONS {
        t.0 = inverse(&t.0);
    }
    let m = &t.0;
    let v = p.0;
    p.0 = [
        m[0][0] * v[0] + m[1][0] * v[1] + m[2][0] * v[2],
        m[0][1] * v[0] + m[1][1] * v[1] + m[2][1] * v[2],
        m[0][2] * v[0] + m[1][2] * v[1] + m[2][2] * v[2],
    ];
}

/// A rotation of 1.2 rad about x (ecs_bench_suite's matrix): well conditioned under inversion.
fn entity(_i: usize) -> (Transform, Position, Rotation, Velocity) {
    let (s, c) = 1.2f32.sin_cos();
    let m = [
        [1.0, 0.0, 0.0, 0.0],
        [0.0, c, s, 0.0],
        [0.0, -s, c, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ];
    (
        Transform(m),
        Position([1.0, 0.0, 0.0]),
        Rotation([1.0, 0.0, 0.0]),
        Velocity([1.0, 0.0, 0.0]),
    )
}

/// Checks `inverse` once: `M * inverse(M)` is the identity.
fn check_inverse() {
    let m: Mat4 = [
        [2.0, 0.5, 0.0, 1.0],
        [0.0, 1.0, 3.0, 0.0],
        [1.0, 0.0, 1.0, 0.5],
        [0.0, 2.0, 0.0, 1.0],
    ];
    let inv = inverse(&m);
    for (i, row) in m.iter().enumerate() {
        for (j, want) in (0..4).map(|j| (j, if i == j { 1.0 } else { 0.0 })) {
            let dot: f32 = row.iter().zip(&inv).map(|(a, col)| a * col[j]).sum();
            assert!(
                (dot - want).abs() < 1e-5,
                "inverse is wrong at ({i}, {j}): {dot}"
            );
        }
    }
}

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

    pub struct Hecs(hecs::World);

    impl Hecs {
        pub fn new() -> Self {
            let mut world = hecs::World::new();
            world.spawn_batch((0..N).map(entity)).for_each(drop);
            Hecs(world)
        }

        /// Batches of 64 (ecs_bench_suite's `par_iter(64)`) bridged to rayon (inside `install`).
        #[inline(never)]
        pub fn run(&mut self) {
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

    pub struct Bevy(
        bevy_ecs::world::World,
        bevy_ecs::query::QueryState<(&'static mut Transform, &'static mut Position)>,
    );

    impl Bevy {
        pub fn new() -> Self {
            let mut world = bevy_ecs::world::World::new();
            world.spawn_batch((0..N).map(entity)).for_each(drop);
            let query = world.query::<(&mut Transform, &mut Position)>();
            Bevy(world, query)
        }

        #[inline(never)]
        pub fn run(&mut self) {
            self.1
                .par_iter_mut(&mut self.0)
                .for_each(|(mut t, mut p)| work(&mut t, &mut p));
            black_box(&mut self.0);
        }
    }
}

pub fn register(group: &mut Group<'_>, n: usize) {
    check_inverse();
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
    }
}
