//! Criterion bench group `core`: Freyr's storage against hecs, bevy_ecs and legion (feature
//! `compare`).
//!
//! Workloads, each with the shared component types of `freyr_benches`:
//! - `spawn_batch_1m`: one batch spawn of 1M (Position, Velocity) into an empty world;
//! - `simple_insert_10k`: one batch spawn of 10k (Transform, Position, Rotation, Velocity) into an
//!   empty world (ecs_bench_suite's `simple_insert`): `spawn_batch` of an iterator for Freyr,
//!   hecs and bevy_ecs; legion's `extend` of its fastest source, four column `Vec`s built
//!   before the timer starts (`into_soa`), so legion's row is the one to beat;
//! - `spawn_10k`: 10k `spawn` calls of (Transform, Position, Rotation, Velocity) into an empty world;
//! - `add_remove_10k`: insert `Extra` into 10k (Position, Velocity) entities, then remove it;
//! - `add_remove_ab_10k`: ecs_bench_suite's own `add_remove` shape: 10k entities of one `f32`
//!   component `A`; insert a second `f32` component `B` into all of them, then remove it (rows
//!   of 4 bytes, so the per-operation cost shows rather than the row copies);
//! - `despawn_1m`: despawn every entity of a 1M (Position, Velocity) world;
//! - `commands_10k` / `commands_100k` (Freyr only, `core/commands.rs`): recording deferred
//!   spawns and inserts in per-task command buffers, and applying them at a sync point.
//!
//! Setup (building the world) happens outside the measured part; the measured part is each
//! scenario's `#[inline(never)]` function. `simple_insert_10k` and the two add/remove rows, the rows
//! quoted against the fastest peer, count each iteration as the fastest of three runs, for every
//! implementation alike, so that a run another process interrupted does not decide a ratio.
//!
//! Run: `cargo bench -p freyr-benches --bench core` (`--features compare` for the peers). As a
//! dependent builds Freyr (generic x86-64, without this repository's `.cargo/config.toml`):
//! `RUSTFLAGS="-C target-cpu=x86-64" CARGO_TARGET_DIR=target/generic cargo bench ...`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, Criterion, criterion_group, criterion_main};
use freyr_benches::{A, B, Extra, Position, Rotation, Transform, Velocity, pos_vel};

#[path = "core/commands.rs"]
mod commands;

/// The group every scenario registers its rows in.
type Group<'a> = BenchmarkGroup<'a, WallTime>;

const BIG: usize = 1_000_000;
const SMALL: usize = 10_000;

fn four(i: usize) -> (Transform, Position, Rotation, Velocity) {
    let (p, v) = pos_vel(i);
    (Transform::IDENTITY, p, Rotation([0.0, i as f32, 0.0]), v)
}

mod freyr {
    use super::*;
    use freyr_core::{Entity, World};

    /// A world of `n` (Position, Velocity) entities and their ids.
    pub(crate) fn world(n: usize) -> (World, Vec<Entity>) {
        let mut world = World::new();
        let ids = world.spawn_batch((0..n).map(pos_vel));
        (world, ids)
    }

    #[inline(never)]
    pub(crate) fn spawn_batch(world: &mut World) -> Vec<Entity> {
        world.spawn_batch((0..BIG).map(pos_vel))
    }

    /// Nothing to prepare: the measured part spawns from an iterator.
    pub(crate) fn simple_insert_input() {}

    #[inline(never)]
    pub(crate) fn simple_insert(world: &mut World, _: ()) -> Vec<Entity> {
        world.spawn_batch((0..SMALL).map(four))
    }

    #[inline(never)]
    pub(crate) fn spawn_four(world: &mut World) {
        for i in 0..SMALL {
            black_box(world.spawn(four(i)));
        }
    }

    #[inline(never)]
    pub(crate) fn add_remove(world: &mut World, ids: &[Entity]) {
        for &e in ids {
            world.insert(e, (Extra(1.0),)).unwrap();
        }
        for &e in ids {
            black_box(world.remove::<(Extra,)>(e).unwrap());
        }
    }

    /// A world of `n` entities of `A` alone (ecs_bench_suite's `add_remove` setup).
    pub(crate) fn world_a(n: usize) -> (World, Vec<Entity>) {
        let mut world = World::new();
        let ids = world.spawn_batch((0..n).map(|_| (A(0.0),)));
        (world, ids)
    }

    #[inline(never)]
    pub(crate) fn add_remove_ab(world: &mut World, ids: &[Entity]) {
        for &e in ids {
            world.insert(e, (B(0.0),)).unwrap();
        }
        for &e in ids {
            black_box(world.remove::<(B,)>(e).unwrap());
        }
    }

    #[inline(never)]
    pub(crate) fn despawn(world: &mut World, ids: &[Entity]) {
        for &e in ids {
            world.despawn(e).unwrap();
        }
    }
}

#[cfg(feature = "compare")]
mod hecs_peer {
    use super::*;
    use hecs::{Entity, World};

    pub(crate) fn world(n: usize) -> (World, Vec<Entity>) {
        let mut world = World::new();
        let ids = world.spawn_batch((0..n).map(pos_vel)).collect();
        (world, ids)
    }

    #[inline(never)]
    pub(crate) fn spawn_batch(world: &mut World) -> Vec<Entity> {
        world.spawn_batch((0..BIG).map(pos_vel)).collect()
    }

    /// Nothing to prepare: the measured part spawns from an iterator.
    pub(crate) fn simple_insert_input() {}

    #[inline(never)]
    pub(crate) fn simple_insert(world: &mut World, _: ()) -> Vec<Entity> {
        world.spawn_batch((0..SMALL).map(four)).collect()
    }

    #[inline(never)]
    pub(crate) fn spawn_four(world: &mut World) {
        for i in 0..SMALL {
            black_box(world.spawn(four(i)));
        }
    }

    #[inline(never)]
    pub(crate) fn add_remove(world: &mut World, ids: &[Entity]) {
        for &e in ids {
            world.insert_one(e, Extra(1.0)).unwrap();
        }
        for &e in ids {
            black_box(world.remove_one::<Extra>(e).unwrap());
        }
    }

    pub(crate) fn world_a(n: usize) -> (World, Vec<Entity>) {
        let mut world = World::new();
        let ids = world.spawn_batch((0..n).map(|_| (A(0.0),))).collect();
        (world, ids)
    }

    #[inline(never)]
    pub(crate) fn add_remove_ab(world: &mut World, ids: &[Entity]) {
        for &e in ids {
            world.insert_one(e, B(0.0)).unwrap();
        }
        for &e in ids {
            black_box(world.remove_one::<B>(e).unwrap());
        }
    }

    #[inline(never)]
    pub(crate) fn despawn(world: &mut World, ids: &[Entity]) {
        for &e in ids {
            world.despawn(e).unwrap();
        }
    }
}

#[cfg(feature = "compare")]
mod bevy_peer {
    use super::*;
    use bevy_ecs::entity::Entity;
    use bevy_ecs::world::World;

    pub(crate) fn world(n: usize) -> (World, Vec<Entity>) {
        let mut world = World::new();
        let ids = world.spawn_batch((0..n).map(pos_vel)).collect();
        (world, ids)
    }

    #[inline(never)]
    pub(crate) fn spawn_batch(world: &mut World) -> Vec<Entity> {
        world.spawn_batch((0..BIG).map(pos_vel)).collect()
    }

    /// Nothing to prepare: the measured part spawns from an iterator.
    pub(crate) fn simple_insert_input() {}

    #[inline(never)]
    pub(crate) fn simple_insert(world: &mut World, _: ()) -> Vec<Entity> {
        world.spawn_batch((0..SMALL).map(four)).collect()
    }

    #[inline(never)]
    pub(crate) fn spawn_four(world: &mut World) {
        for i in 0..SMALL {
            black_box(world.spawn(four(i)).id());
        }
    }

    #[inline(never)]
    pub(crate) fn add_remove(world: &mut World, ids: &[Entity]) {
        for &e in ids {
            world.entity_mut(e).insert(Extra(1.0));
        }
        for &e in ids {
            world.entity_mut(e).remove::<Extra>();
        }
    }

    pub(crate) fn world_a(n: usize) -> (World, Vec<Entity>) {
        let mut world = World::new();
        let ids = world.spawn_batch((0..n).map(|_| (A(0.0),))).collect();
        (world, ids)
    }

    #[inline(never)]
    pub(crate) fn add_remove_ab(world: &mut World, ids: &[Entity]) {
        for &e in ids {
            world.entity_mut(e).insert(B(0.0));
        }
        for &e in ids {
            world.entity_mut(e).remove::<B>();
        }
    }

    #[inline(never)]
    pub(crate) fn despawn(world: &mut World, ids: &[Entity]) {
        for &e in ids {
            assert!(world.despawn(e));
        }
    }
}

#[cfg(feature = "compare")]
mod legion_peer {
    use super::*;
    use legion::{Entity, IntoSoa, World};

    type Columns = (Vec<Transform>, Vec<Position>, Vec<Rotation>, Vec<Velocity>);

    pub(crate) fn world(n: usize) -> (World, Vec<Entity>) {
        let mut world = World::default();
        let ids = world.extend((0..n).map(pos_vel)).to_vec();
        (world, ids)
    }

    #[inline(never)]
    pub(crate) fn spawn_batch(world: &mut World) -> Vec<Entity> {
        world.extend((0..BIG).map(pos_vel)).to_vec()
    }

    #[inline(never)]
    /// The four component columns, built outside the measured part.
    pub(crate) fn simple_insert_input() -> Columns {
        (
            (0..SMALL).map(|i| four(i).0).collect(),
            (0..SMALL).map(|i| four(i).1).collect(),
            (0..SMALL).map(|i| four(i).2).collect(),
            (0..SMALL).map(|i| four(i).3).collect(),
        )
    }

    #[inline(never)]
    pub(crate) fn simple_insert(world: &mut World, columns: Columns) -> Vec<Entity> {
        world.extend(columns.into_soa()).to_vec()
    }

    #[inline(never)]
    pub(crate) fn spawn_four(world: &mut World) {
        for i in 0..SMALL {
            black_box(world.push(four(i)));
        }
    }

    #[inline(never)]
    pub(crate) fn add_remove(world: &mut World, ids: &[Entity]) {
        for &e in ids {
            world.entry(e).unwrap().add_component(Extra(1.0));
        }
        for &e in ids {
            world.entry(e).unwrap().remove_component::<Extra>();
        }
    }

    pub(crate) fn world_a(n: usize) -> (World, Vec<Entity>) {
        let mut world = World::default();
        let ids = world.extend((0..n).map(|_| (A(0.0),))).to_vec();
        (world, ids)
    }

    #[inline(never)]
    pub(crate) fn add_remove_ab(world: &mut World, ids: &[Entity]) {
        for &e in ids {
            world.entry(e).unwrap().add_component(B(0.0));
        }
        for &e in ids {
            world.entry(e).unwrap().remove_component::<B>();
        }
    }

    #[inline(never)]
    pub(crate) fn despawn(world: &mut World, ids: &[Entity]) {
        for &e in ids {
            assert!(world.remove(e));
        }
    }
}

/// Runs of a workload per measured iteration of `simple_insert_10k` and the two add/remove
/// rows; the iteration counts the fastest.
const BEST_OF: usize = 3;

/// The summed time of `iters` iterations, each the fastest of [`BEST_OF`] runs of `run` (which
/// times its own measured part). On a shared machine a run that another process interrupted
/// then does not count; every implementation is measured the same way, so the ratios stay
/// like with like.
fn best_of(iters: u64, mut run: impl FnMut() -> Duration) -> Duration {
    (0..iters)
        .map(|_| (0..BEST_OF).map(|_| run()).min().expect("BEST_OF > 0"))
        .sum()
}

/// Registers the workloads for one implementation module.
macro_rules! workloads {
    ($group:expr, $name:literal, $m:ident) => {
        $group.bench_function(concat!("spawn_batch_1m/", $name), |b| {
            b.iter_batched_ref(
                || $m::world(0).0,
                |world| $m::spawn_batch(world),
                BatchSize::PerIteration,
            )
        });
        $group.bench_function(concat!("simple_insert_10k/", $name), |b| {
            b.iter_custom(|iters| {
                best_of(iters, || {
                    let (mut world, input) = ($m::world(0).0, $m::simple_insert_input());
                    let start = Instant::now();
                    let ids = $m::simple_insert(&mut world, input);
                    let time = start.elapsed();
                    // Dropping the world falls outside the measured part.
                    drop((world, ids));
                    time
                })
            })
        });
        $group.bench_function(concat!("spawn_10k/", $name), |b| {
            b.iter_batched_ref(
                || $m::world(0).0,
                |world| $m::spawn_four(world),
                BatchSize::PerIteration,
            )
        });
        $group.bench_function(concat!("add_remove_10k/", $name), |b| {
            // The workload returns the world to its starting state, so one world serves all
            // iterations (the first ones also build the archetypes and edges: warm-up).
            let (mut world, ids) = $m::world(SMALL);
            b.iter_custom(|iters| {
                best_of(iters, || {
                    let start = Instant::now();
                    $m::add_remove(&mut world, &ids);
                    start.elapsed()
                })
            })
        });
        $group.bench_function(concat!("add_remove_ab_10k/", $name), |b| {
            // As `add_remove_10k`: one world, returned to its starting state by each run.
            let (mut world, ids) = $m::world_a(SMALL);
            b.iter_custom(|iters| {
                best_of(iters, || {
                    let start = Instant::now();
                    $m::add_remove_ab(&mut world, &ids);
                    start.elapsed()
                })
            })
        });
        $group.bench_function(concat!("despawn_1m/", $name), |b| {
            b.iter_batched_ref(
                || $m::world(BIG),
                |(world, ids)| $m::despawn(world, ids),
                BatchSize::PerIteration,
            )
        });
    };
}

fn core(c: &mut Criterion) {
    let mut group = c.benchmark_group("core");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    workloads!(group, "freyr", freyr);
    commands::bench(&mut group, SMALL, "10k");
    commands::bench(&mut group, 10 * SMALL, "100k");
    #[cfg(feature = "compare")]
    {
        workloads!(group, "hecs", hecs_peer);
        workloads!(group, "bevy_ecs", bevy_peer);
        workloads!(group, "legion", legion_peer);
    }
    group.finish();
}

criterion_group!(benches, core);
criterion_main!(benches);
