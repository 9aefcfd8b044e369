//! Criterion bench group `snapshot`: the desync locator's cost next to what it replaces and what
//! bounds it, in one run so the ratios are like with like. The world: 100k entities in one
//! archetype of four 16-byte components (`[u32; 4]`, `[f32; 4]`, `[u64; 2]`, `[i32; 4]`), all
//! `#[derive(StableHash)]` and registered as hashable.
//!
//! - `digest_100k_x4`: [`Registry::digest`], the per-(archetype, chunk, component) digest and
//!   its whole-world fold (target: ≤ 0.5 ms, so a server can check every tick);
//! - `world_hash_100k_x4`: [`Registry::world_hash_all`] of the same world (FNV-1a, one byte at a
//!   time, one `get` per entity per type), for comparison;
//! - `memcpy_100k_x4`: a plain copy of the same 6.4 MB of component bytes, the floor of anything
//!   that reads them all.
//!
//! Run: `cargo bench -p freyr-benches --bench snapshot`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use freyr::{Registry, StableHash};

#[derive(StableHash, Clone, Copy)]
struct A([u32; 4]);
#[derive(StableHash, Clone, Copy)]
struct B([f32; 4]);
#[derive(StableHash, Clone, Copy)]
struct C([u64; 2]);
#[derive(StableHash, Clone, Copy)]
struct D([i32; 4]);

const ENTITIES: u32 = 100_000;

fn world() -> Registry {
    let mut registry = Registry::with_workers(1);
    registry.register_hashable::<A>();
    registry.register_hashable::<B>();
    registry.register_hashable::<C>();
    registry.register_hashable::<D>();
    registry.spawn_batch((0..ENTITIES).map(|i| {
        (
            A([i; 4]),
            B([i as f32; 4]),
            C([u64::from(i); 2]),
            D([i as i32; 4]),
        )
    }));
    registry
}

fn snapshot(c: &mut Criterion) {
    let mut group = c.benchmark_group("snapshot");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    let registry = world();
    group.bench_function("digest_100k_x4", |b| {
        b.iter(|| black_box(registry.digest().expect("every type is registered").value()));
    });
    group.bench_function("world_hash_100k_x4", |b| {
        b.iter(|| black_box(registry.world_hash_all().expect("every type is registered")));
    });
    let bytes = ENTITIES as usize * 4 * 16;
    let source: Vec<u8> = (0..bytes).map(|i| i as u8).collect();
    let mut target = vec![0u8; bytes];
    group.bench_function("memcpy_100k_x4", |b| {
        b.iter(|| {
            target.copy_from_slice(black_box(&source));
            black_box(&mut target);
        });
    });
    group.finish();
}

criterion_group!(benches, snapshot);
criterion_main!(benches);
