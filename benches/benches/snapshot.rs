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
//!   that reads them all;
//! - `snapshot_100k_x4_1t` / `snapshot_100k_x4_all`: [`Registry::snapshot_into`] of the same
//!   world (the four types registered with `register_snapshot_copy`), into a warm snapshot, on a
//!   registry of 1 worker and of one worker per CPU (target: ≤ 1.5x `memcpy_100k_x4`);
//! - `restore_100k_x4_1t` / `restore_100k_x4_all`: [`Registry::restore`] of that snapshot
//!   (target: ≤ 1.5x `memcpy_100k_x4`);
//! - with `--features compare`, `bevy_copy_100k_x4`: bevy_ecs's closest equivalent, copying the
//!   same four components of every entity into a second world (what a bevy rollback plugin
//!   does per frame, there into maps).
//!
//! - `memcpy_1m_pos_vel`: one copy of the 32 MB a save of 1M (Position, Velocity) holds (values
//!   and entity ids), the floor of a save or a load;
//! - `save_1m_pos_vel`, `save_1m_pos_vel_fresh`, `load_1m_pos_vel`,
//!   `load_1m_pos_vel_new_registry` (raw column path), `save_1m_pos_vel_serde`,
//!   `load_1m_pos_vel_serde` (serde path), `export_1k_x4`, `import_1k_x4`: persistence (see
//!   `persist_rows`); with `--features compare`, `save_1m_pos_vel_hecs` / `load_1m_pos_vel_hecs`,
//!   hecs's column serialisation with postcard on the same data.
//!
//! Run: `cargo bench -p freyr-benches --bench snapshot [--features compare]`.

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use freyr::persist::bytemuck::{Pod, Zeroable};
use freyr::snapshot::Snapshot;
use freyr::{Registry, StableHash};

#[derive(StableHash, Clone, Copy)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
struct A([u32; 4]);
#[derive(StableHash, Clone, Copy)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
struct B([f32; 4]);
#[derive(StableHash, Clone, Copy)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
struct C([u64; 2]);
#[derive(StableHash, Clone, Copy)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
struct D([i32; 4]);

const ENTITIES: u32 = 100_000;

fn row(i: u32) -> (A, B, C, D) {
    (
        A([i; 4]),
        B([i as f32; 4]),
        C([u64::from(i); 2]),
        D([i as i32; 4]),
    )
}

fn world() -> Registry {
    world_on(1)
}

/// The world on a registry of `workers` workers (0: one per CPU), registered for hashing and
/// for snapshots (plain copies).
fn world_on(workers: usize) -> Registry {
    let mut registry = if workers == 0 {
        Registry::new()
    } else {
        Registry::with_workers(workers)
    };
    registry.register_snapshot_copy::<A>();
    registry.register_snapshot_copy::<B>();
    registry.register_snapshot_copy::<C>();
    registry.register_snapshot_copy::<D>();
    registry.register_hashable::<A>();
    registry.register_hashable::<B>();
    registry.register_hashable::<C>();
    registry.register_hashable::<D>();
    registry.spawn_batch((0..ENTITIES).map(row));
    registry
}

/// Snapshot and restore of the world on `workers` workers, named `label`.
fn snapshot_restore(
    group: &mut criterion::BenchmarkGroup<'_, WallTime>,
    workers: usize,
    label: &str,
) {
    let mut registry = world_on(workers);
    let mut snapshot = Snapshot::new();
    registry
        .snapshot_into(&mut snapshot)
        .expect("every type is registered");
    group.bench_function(format!("snapshot_100k_x4_{label}"), |b| {
        b.iter(|| {
            registry
                .snapshot_into(&mut snapshot)
                .expect("every type is registered");
            black_box(&snapshot);
        });
    });
    group.bench_function(format!("restore_100k_x4_{label}"), |b| {
        b.iter(|| {
            registry
                .restore(black_box(&snapshot))
                .expect("a complete snapshot")
        });
    });
}

#[cfg(feature = "compare")]
mod bevy_peer {
    use super::*;
    use bevy_ecs::world::World;

    /// Two worlds of the same entities: the live one and the copy.
    pub(crate) fn worlds() -> (World, World) {
        let mut live = World::new();
        live.spawn_batch((0..ENTITIES).map(row));
        let mut copy = World::new();
        copy.spawn_batch((0..ENTITIES).map(|_| row(0)));
        (live, copy)
    }

    /// Copies the four components of every entity of `live` into `copy`, row by row.
    #[inline(never)]
    pub(crate) fn copy_into(live: &mut World, copy: &mut World) {
        let mut from = live.query::<(&A, &B, &C, &D)>();
        let mut to = copy.query::<(&mut A, &mut B, &mut C, &mut D)>();
        for ((a, b, c, d), (mut a2, mut b2, mut c2, mut d2)) in
            from.iter(live).zip(to.iter_mut(copy))
        {
            *a2 = *a;
            *b2 = *b;
            *c2 = *c;
            *d2 = *d;
        }
    }
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
    snapshot_restore(&mut group, 1, "1t");
    snapshot_restore(&mut group, 0, "all");
    #[cfg(feature = "compare")]
    {
        let (mut live, mut copy) = bevy_peer::worlds();
        group.bench_function("bevy_copy_100k_x4", |b| {
            b.iter(|| bevy_peer::copy_into(&mut live, &mut copy));
        });
    }
    persist_rows(&mut group);
    group.finish();
}

/// Plain data: saved by the raw column path (`register_persistent_pod`), or through serde in
/// the `_serde` rows.
#[derive(Clone, Copy, serde::Serialize, serde::Deserialize, Pod, Zeroable)]
#[bytemuck(crate = "freyr::persist::bytemuck")]
#[repr(C)]
struct Position([f32; 3]);
#[derive(Clone, Copy, serde::Serialize, serde::Deserialize, Pod, Zeroable)]
#[bytemuck(crate = "freyr::persist::bytemuck")]
#[repr(C)]
struct Velocity([f32; 3]);
#[derive(Clone, Copy, serde::Serialize, serde::Deserialize, Pod, Zeroable)]
#[bytemuck(crate = "freyr::persist::bytemuck")]
#[repr(C)]
struct Health(u32);
/// Not `Copy`: always through serde.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Tag(u64);

/// The plain types by the raw path, `Tag` through serde.
fn persistent(registry: &mut Registry) {
    registry.register_persistent_pod::<Position>("bench.position", 1);
    registry.register_persistent_pod::<Velocity>("bench.velocity", 1);
    registry.register_persistent_pod::<Health>("bench.health", 1);
    registry.register_persistent::<Tag>("bench.tag", 1);
}

/// Every type through serde and postcard.
fn persistent_serde(registry: &mut Registry) {
    registry.register_persistent::<Position>("bench.position", 1);
    registry.register_persistent::<Velocity>("bench.velocity", 1);
}

/// Save and load of 1M (Position, Velocity) entities, registered by `register`, as rows
/// `save_1m_pos_vel{suffix}` (`Registry::save_into` a kept buffer, as a server saving
/// periodically does) and `load_1m_pos_vel{suffix}`; for the raw path also
/// `save_1m_pos_vel_fresh` (`Registry::save_to_vec`, a new buffer each time: its time is
/// mostly the kernel handing out fresh pages) and `load_1m_pos_vel_new_registry` (a load into
/// a new registry each time, which has no replaced world's chunk memory to copy into).
fn save_load_rows(
    group: &mut criterion::BenchmarkGroup<'_, WallTime>,
    register: fn(&mut Registry),
    suffix: &str,
) {
    let mut big = Registry::with_workers(1);
    register(&mut big);
    big.spawn_batch((0..1_000_000u32).map(|i| (Position([i as f32; 3]), Velocity([1.0; 3]))));
    let mut buffer = Vec::new();
    group.bench_function(format!("save_1m_pos_vel{suffix}"), |b| {
        b.iter(|| {
            big.save_into(&mut buffer)
                .expect("every type is persistent");
            black_box(&buffer);
        });
    });
    if suffix.is_empty() {
        group.bench_function("save_1m_pos_vel_fresh", |b| {
            b.iter(|| black_box(big.save_to_vec().expect("every type is persistent")));
        });
    }
    let save = big.save_to_vec().expect("every type is persistent");
    let mut loaded = Registry::with_workers(1);
    register(&mut loaded);
    group.bench_function(format!("load_1m_pos_vel{suffix}"), |b| {
        b.iter(|| loaded.load_into(black_box(&save)).expect("a valid save"));
    });
    if suffix.is_empty() {
        // A load into a new registry each time, which holds no spare chunk memory of its own
        // (the registry is dropped outside the timing; the allocator may hand the next load
        // the pages it freed).
        group.bench_function("load_1m_pos_vel_new_registry", |b| {
            b.iter_batched(
                || {
                    let mut fresh = Registry::with_workers(1);
                    register(&mut fresh);
                    fresh
                },
                |mut fresh| {
                    fresh.load_into(black_box(&save)).expect("a valid save");
                    fresh
                },
                BatchSize::PerIteration,
            );
        });
    }
}

/// Saves and loads: `save_1m_pos_vel` / `load_1m_pos_vel` (`Registry::save_to_vec` and
/// `Registry::load_into` of 1M (Position, Velocity) entities, 24 MB of values, by the raw
/// column path), the same through serde (`_serde`), and with `--features compare` hecs's
/// column serialisation with postcard (`_hecs`); `export_1k_x4` / `import_1k_x4` (1,000
/// entities with four components each, three plain and one through serde).
fn persist_rows(group: &mut criterion::BenchmarkGroup<'_, WallTime>) {
    // The floor of a save into memory: one copy of the bytes it must hold (the values and the
    // entity ids of 1M rows, 32 MB) into a kept buffer.
    let source = vec![7u8; 1_000_000 * (2 * size_of::<Position>() + 8)];
    let mut copy = vec![0u8; source.len()];
    group.bench_function("memcpy_1m_pos_vel", |b| {
        b.iter(|| {
            copy.copy_from_slice(black_box(&source));
            black_box(&copy);
        });
    });
    save_load_rows(group, persistent, "");
    save_load_rows(group, persistent_serde, "_serde");
    #[cfg(feature = "compare")]
    hecs_peer::rows(group);
    let mut small = Registry::with_workers(1);
    persistent(&mut small);
    let entities: Vec<_> = (0..1000u32)
        .map(|i| {
            small.spawn((
                Position([0.0; 3]),
                Velocity([1.0; 3]),
                Health(i),
                Tag(u64::from(i)),
            ))
        })
        .collect();
    group.bench_function("export_1k_x4", |b| {
        b.iter(|| black_box(small.export(black_box(&entities)).expect("a quiet point")));
    });
    let bytes = small.export(&entities).expect("a quiet point");
    let mut target = Registry::with_workers(1);
    persistent(&mut target);
    group.bench_function("import_1k_x4", |b| {
        b.iter(|| {
            let map = target.import(black_box(&bytes)).expect("a valid export");
            for &(_, new) in map.pairs() {
                target.despawn(new).expect("just imported");
            }
        });
    });
}

/// hecs's serde path on the same data: `hecs::serialize::column` (one block per archetype,
/// each component type's values contiguous) with postcard, as its docs show.
#[cfg(feature = "compare")]
mod hecs_peer {
    use super::*;
    use hecs::serialize::column::{
        DeserializeContext, SerializeContext, deserialize, deserialize_column, serialize,
        try_serialize, try_serialize_id,
    };
    use hecs::{Archetype, ColumnBatchBuilder, ColumnBatchType};
    use serde::ser::SerializeTuple;
    use std::any::TypeId;

    /// The stable component ids of the file.
    #[derive(Clone, Copy, serde::Serialize, serde::Deserialize)]
    enum Id {
        Position,
        Velocity,
    }

    #[derive(Default)]
    struct Context {
        components: Vec<Id>,
    }

    impl SerializeContext for Context {
        fn component_count(&self, archetype: &Archetype) -> usize {
            archetype
                .component_types()
                .filter(|&t| t == TypeId::of::<Position>() || t == TypeId::of::<Velocity>())
                .count()
        }

        fn serialize_component_ids<S: SerializeTuple>(
            &mut self,
            archetype: &Archetype,
            mut out: S,
        ) -> Result<S::Ok, S::Error> {
            try_serialize_id::<Position, _, _>(archetype, &Id::Position, &mut out)?;
            try_serialize_id::<Velocity, _, _>(archetype, &Id::Velocity, &mut out)?;
            out.end()
        }

        fn serialize_components<S: SerializeTuple>(
            &mut self,
            archetype: &Archetype,
            mut out: S,
        ) -> Result<S::Ok, S::Error> {
            try_serialize::<Position, _>(archetype, &mut out)?;
            try_serialize::<Velocity, _>(archetype, &mut out)?;
            out.end()
        }
    }

    impl DeserializeContext for Context {
        fn deserialize_component_ids<'de, A>(
            &mut self,
            mut seq: A,
        ) -> Result<ColumnBatchType, A::Error>
        where
            A: serde::de::SeqAccess<'de>,
        {
            self.components.clear();
            let mut batch = ColumnBatchType::new();
            while let Some(id) = seq.next_element()? {
                match id {
                    Id::Position => batch.add::<Position>(),
                    Id::Velocity => batch.add::<Velocity>(),
                };
                self.components.push(id);
            }
            Ok(batch)
        }

        fn deserialize_components<'de, A>(
            &mut self,
            entity_count: u32,
            mut seq: A,
            batch: &mut ColumnBatchBuilder,
        ) -> Result<(), A::Error>
        where
            A: serde::de::SeqAccess<'de>,
        {
            for component in &self.components {
                match component {
                    Id::Position => {
                        deserialize_column::<Position, _>(entity_count, &mut seq, batch)?
                    }
                    Id::Velocity => {
                        deserialize_column::<Velocity, _>(entity_count, &mut seq, batch)?
                    }
                }
            }
            Ok(())
        }
    }

    /// A hecs world as a `Serialize` value, for `postcard::to_allocvec`.
    struct Save<'a>(&'a hecs::World);

    impl serde::Serialize for Save<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            serialize(self.0, &mut Context::default(), s)
        }
    }

    fn load(bytes: &[u8]) -> hecs::World {
        let mut de = postcard::Deserializer::from_bytes(bytes);
        deserialize(&mut Context::default(), &mut de).expect("a valid hecs save")
    }

    pub(crate) fn rows(group: &mut criterion::BenchmarkGroup<'_, WallTime>) {
        let mut world = hecs::World::new();
        world.spawn_batch((0..1_000_000u32).map(|i| (Position([i as f32; 3]), Velocity([1.0; 3]))));
        group.bench_function("save_1m_pos_vel_hecs", |b| {
            b.iter(|| black_box(postcard::to_allocvec(&Save(&world)).expect("postcard writes")));
        });
        let bytes = postcard::to_allocvec(&Save(&world)).expect("postcard writes");
        assert_eq!(load(&bytes).len(), 1_000_000);
        group.bench_function("load_1m_pos_vel_hecs", |b| {
            b.iter(|| black_box(load(black_box(&bytes))));
        });
    }
}

criterion_group!(benches, snapshot);
criterion_main!(benches);
