//! `commands_{10k,100k}`: the cost of deferred structural changes, as a tick makes them. Tasks
//! record commands into one `CommandBuffer` each (512 commands per buffer, as one chunk task
//! per 512 entities would), half of them spawns of (Position, Velocity) and half inserts of
//! `Extra` into existing entities; the sync point then applies every buffer in task order.
//!
//! Two rows per size: `record` (filling the buffers, which tasks do in parallel) and
//! `sync_point` (applying them, which the sync point does on one thread).

use std::hint::black_box;

use std::time::Instant;

use freyr_benches::{Extra, pos_vel};
use freyr_core::{CommandBuffer, Entity, World};

use crate::{Group, best_of};

/// Commands per buffer: one buffer per 512-entity chunk task.
const PER_TASK: usize = 512;

/// A world holding the `n / 2` entities the inserts target.
fn world(n: usize) -> (World, Vec<Entity>) {
    let mut world = World::new();
    let targets = world.spawn_batch((0..n / 2).map(pos_vel));
    (world, targets)
}

#[inline(never)]
fn record(n: usize, targets: &[Entity]) -> Vec<CommandBuffer> {
    let mut buffers: Vec<CommandBuffer> = (0..n.div_ceil(PER_TASK))
        .map(|_| CommandBuffer::new())
        .collect();
    for i in 0..n {
        let buffer = &mut buffers[i / PER_TASK];
        if i % 2 == 0 {
            black_box(buffer.spawn(pos_vel(i)));
        } else {
            buffer.insert(targets[i / 2], (Extra(i as f32),));
        }
    }
    buffers
}

#[inline(never)]
fn sync_point(world: &mut World, buffers: &mut [CommandBuffer]) {
    for buffer in buffers {
        black_box(buffer.apply(world));
    }
}

/// Registers the `record` and `sync_point` rows for `n` commands. Each iteration is the fastest
/// of a few runs, as for the rows quoted against peers (see `best_of`); dropping what a run
/// built falls outside its measured part.
pub(crate) fn bench(group: &mut Group, n: usize, label: &str) {
    group.bench_function(format!("commands_{label}/record"), |b| {
        let (_world, targets) = world(n);
        b.iter_custom(|iters| {
            best_of(iters, || {
                let start = Instant::now();
                let buffers = record(n, &targets);
                let time = start.elapsed();
                drop(buffers);
                time
            })
        })
    });
    group.bench_function(format!("commands_{label}/sync_point"), |b| {
        b.iter_custom(|iters| {
            best_of(iters, || {
                let (mut world, targets) = world(n);
                let mut buffers = record(n, &targets);
                let start = Instant::now();
                sync_point(&mut world, &mut buffers);
                let time = start.elapsed();
                drop((world, buffers));
                time
            })
        })
    });
}
