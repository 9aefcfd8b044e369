//! More hostile use of the `World` API (see `world_attack.rs`): panicking `Drop`s of values held
//! by snapshots and by the world a restore replaces, zero-sized and over-aligned values through
//! snapshots and `spawn_columns`, the widest bundles, command buffers used wrongly, worlds built
//! from parts holding handles no world hands out, and reserved chunks through restores.

mod world_attack_support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use world_attack_support::{Counted, counter};

use freyr_core::parts::{ColumnValues, WorldParts};
use freyr_core::snapshot::{Sequential, SnapshotTypes, WorldSnapshot};
use freyr_core::{CHUNK_CAPACITY, CommandBuffer, Entity, SpareSlabs, World};

const N: usize = if cfg!(miri) { 70 } else { CHUNK_CAPACITY + 20 };

/// Counts drops and clones; panics on drop when `armed`. A clone of an armed value is armed
/// when `arm_clones` is set.
struct Bomb {
    armed: bool,
    arm_clones: bool,
    drops: Arc<AtomicUsize>,
}

impl Clone for Bomb {
    fn clone(&self) -> Self {
        Bomb {
            armed: self.armed && self.arm_clones,
            arm_clones: self.arm_clones,
            drops: self.drops.clone(),
        }
    }
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.armed {
            panic!("bomb in Drop");
        }
    }
}

fn load(c: &Arc<AtomicUsize>) -> usize {
    c.load(Ordering::SeqCst)
}

fn types() -> SnapshotTypes {
    let mut types = SnapshotTypes::new();
    types.register_clone::<Bomb>();
    types.register_clone::<Counted>();
    types.register_copy::<u32>();
    types
}

#[test]
fn a_snapshot_whose_values_panic_on_drop_drops_each_once_and_can_be_reused() {
    let (bombs, counted) = (counter(), counter());
    let mut world = World::new();
    for i in 0..N {
        let armed = i == 3;
        world.spawn((
            Bomb {
                armed,
                arm_clones: true,
                drops: bombs.clone(),
            },
            Counted(counted.clone()),
            i as u32,
        ));
    }
    let mut snapshot = world.snapshot(&types()).unwrap();
    assert_eq!((load(&bombs), load(&counted)), (0, 0));
    // Reusing it drops the held clones first: one of them panics.
    let r = catch_unwind(AssertUnwindSafe(|| {
        world.snapshot_into(&mut snapshot, &types(), &Sequential)
    }));
    assert!(r.is_err());
    assert_eq!((load(&bombs), load(&counted)), (N, N));
    assert!(!snapshot.is_complete());
    // Nothing left to drop twice; the next taking works.
    let r = catch_unwind(AssertUnwindSafe(|| World::restore_from(&snapshot)));
    assert!(r.is_err(), "an incomplete snapshot is not restored");
    drop(snapshot);
    assert_eq!((load(&bombs), load(&counted)), (N, N));
    let mut again = WorldSnapshot::new();
    world
        .snapshot_into(&mut again, &types(), &Sequential)
        .unwrap();
    assert!(catch_unwind(AssertUnwindSafe(move || drop(again))).is_err());
    assert_eq!((load(&bombs), load(&counted)), (2 * N, 2 * N));
    world.check_invariants();
    // Disarm the original so the world drops cleanly.
    let armed: Vec<Entity> = world
        .archetypes()
        .iter()
        .flat_map(|a| a.chunks().flat_map(|c| c.entities().to_vec()))
        .collect();
    for e in armed {
        world.get_mut::<Bomb>(e).unwrap().armed = false;
    }
    drop(world);
    assert_eq!((load(&bombs), load(&counted)), (3 * N, 3 * N));
}

#[test]
fn a_restore_over_a_world_with_a_panicking_drop_hands_it_back_whole() {
    let (bombs, counted) = (counter(), counter());
    let mut world = World::new();
    let ids: Vec<Entity> = (0..N)
        .map(|i| world.spawn((Counted(counted.clone()), i as u32)))
        .collect();
    let snapshot = world.snapshot(&types()).unwrap();
    // After the snapshot: a bomb, and more values.
    world.spawn((
        Bomb {
            armed: true,
            arm_clones: false,
            drops: bombs.clone(),
        },
        Counted(counted.clone()),
    ));
    world.spawn_batch((0..N).map(|_| (Counted(counted.clone()), 7u32)));
    let mut spare = SpareSlabs::new();
    let replaced = snapshot
        .restore_over(&mut world, &Sequential, &mut spare)
        .expect("the replaced world holds values to drop");
    assert_eq!(world.len(), N);
    assert_eq!(replaced.len(), 2 * N + 1);
    world.check_invariants();
    replaced.check_invariants();
    assert_eq!((load(&bombs), load(&counted)), (0, 0));
    assert!(catch_unwind(AssertUnwindSafe(move || drop(replaced))).is_err());
    assert_eq!((load(&bombs), load(&counted)), (1, 2 * N + 1));
    for (i, &e) in ids.iter().enumerate() {
        assert_eq!(world.get::<u32>(e), Ok(&(i as u32)));
    }
    // Restoring again into the restored world, over the recycled memory.
    let replaced = snapshot.restore_over(&mut world, &Sequential, &mut spare);
    drop(replaced);
    assert_eq!(load(&counted), 3 * N + 1);
    drop((world, snapshot));
    assert_eq!(load(&counted), 5 * N + 1);
}

#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(align(4096))]
struct Page(u64);

#[derive(Clone, Copy, Debug, PartialEq)]
struct Zst;

#[test]
fn zero_sized_and_page_aligned_values_round_trip_through_snapshots_and_columns() {
    let mut types = SnapshotTypes::new();
    types.register_copy::<Page>();
    types.register_copy::<Zst>();
    types.register_copy::<u32>();
    let mut world = World::new();
    let (page, zst) = (world.register::<Page>(), world.register::<Zst>());
    let ids = world.spawn_columns(
        N,
        vec![
            (page, ColumnValues::new((0..N as u64).map(Page).collect())),
            (zst, ColumnValues::new(vec![Zst; N])),
        ],
    );
    assert_eq!(ids.len(), N);
    let tagged = world.spawn_columns(3, vec![(zst, ColumnValues::new(vec![Zst; 3]))]);
    assert!(world.spawn_columns(0, vec![]).is_empty());
    let bare = world.spawn_columns(2, vec![]);
    for (i, &e) in ids.iter().enumerate() {
        let p = world.get::<Page>(e).unwrap();
        assert_eq!((p.0, p as *const Page as usize % 4096), (i as u64, 0));
    }
    world.insert(ids[1], (9u32,)).unwrap();
    world.despawn(ids[0]).unwrap();
    world.check_invariants();
    let snapshot = world.snapshot(&types).unwrap();
    let restored = World::restore_from(&snapshot);
    restored.check_invariants();
    assert_eq!(restored.len(), N - 1 + 5);
    for (i, &e) in ids.iter().enumerate().skip(1) {
        let p = restored.get::<Page>(e).unwrap();
        assert_eq!((p.0, p as *const Page as usize % 4096), (i as u64, 0));
        assert!(restored.get::<Zst>(e).is_ok());
    }
    assert_eq!(restored.get::<u32>(ids[1]), Ok(&9));
    assert!(tagged.iter().all(|&e| restored.get::<Zst>(e).is_ok()));
    assert!(bare.iter().all(|&e| restored.contains(e)));
}

#[derive(Debug, PartialEq)]
struct C<const K: usize>(u16);

type Wide = (
    C<0>,
    C<1>,
    C<2>,
    C<3>,
    C<4>,
    C<5>,
    C<6>,
    C<7>,
    C<8>,
    C<9>,
    C<10>,
    C<11>,
    C<12>,
    C<13>,
    C<14>,
    C<15>,
);

fn wide(v: u16) -> Wide {
    (
        C(v),
        C(v + 1),
        C(v + 2),
        C(v + 3),
        C(v + 4),
        C(v + 5),
        C(v + 6),
        C(v + 7),
        C(v + 8),
        C(v + 9),
        C(v + 10),
        C(v + 11),
        C(v + 12),
        C(v + 13),
        C(v + 14),
        C(v + 15),
    )
}

/// The sixteen values of a `Wide` (tuples that long have no `PartialEq`).
fn values(w: Wide) -> [u16; 16] {
    [
        w.0.0, w.1.0, w.2.0, w.3.0, w.4.0, w.5.0, w.6.0, w.7.0, w.8.0, w.9.0, w.10.0, w.11.0,
        w.12.0, w.13.0, w.14.0, w.15.0,
    ]
}

#[test]
fn sixteen_component_bundles_spawn_insert_remove_and_overwrite() {
    let mut world = World::new();
    let a = world.spawn(wide(0));
    let batch = world.spawn_batch((0..N as u16).map(wide));
    let b = world.spawn((1u8,));
    world.insert(b, wide(100)).unwrap();
    assert_eq!(world.get::<C<15>>(b), Ok(&C(115)));
    // Overwrite all sixteen in place, then take them out again.
    world.insert(a, wide(200)).unwrap();
    assert_eq!(values(world.remove::<Wide>(a).unwrap()), values(wide(200)));
    assert!(world.contains(a));
    assert_eq!(values(world.remove::<Wide>(b).unwrap()), values(wide(100)));
    assert_eq!(world.get::<u8>(b), Ok(&1));
    for (i, &e) in batch.iter().enumerate() {
        assert_eq!(world.get::<C<7>>(e), Ok(&C(i as u16 + 7)));
    }
    let mut commands = CommandBuffer::new();
    let p = commands.spawn(wide(300));
    commands.remove::<Wide>(p);
    commands.insert(p, wide(400));
    let report = commands.apply(&mut world);
    assert_eq!(report.applied, 3);
    assert_eq!(world.get::<C<0>>(report.spawned[0]), Ok(&C(400)));
    world.check_invariants();
}

#[test]
fn command_buffers_misused_drop_every_recorded_value_once() {
    let drops = counter();
    let c = || Counted(drops.clone());
    let mut world = World::new();
    let e = world.spawn((c(), 1u8));
    let mut commands = CommandBuffer::new();
    let p = commands.spawn((c(),));
    // The pending entity is despawned before the insert and the remove that name it.
    commands.despawn(p);
    commands.insert(p, (c(), 2u16));
    commands.remove::<(Counted,)>(p);
    // The real entity: despawned twice, written after.
    commands.despawn(e);
    commands.despawn(e);
    commands.insert(e, (c(),));
    commands.remove::<(u8,)>(e);
    let report = commands.apply(&mut world);
    assert_eq!((report.applied, report.skipped_stale), (3, 5));
    assert_eq!(
        load(&drops),
        4,
        "spawned+despawned, refused insert x2, e's value"
    );
    assert!(world.is_empty());
    // Applied twice: the second apply does nothing, and the old pending handle stays stale.
    let report = commands.apply(&mut world);
    assert_eq!(report, Default::default());
    let live = world.spawn((c(),));
    let mut reused = CommandBuffer::new();
    reused.insert(p, (c(),));
    reused.despawn(p);
    let report = reused.apply(&mut world);
    assert_eq!((report.applied, report.skipped_stale), (0, 2));
    assert!(world.contains(live));
    assert_eq!(load(&drops), 5);
    // Dropped unapplied, one recorded value panicking on drop: the others still drop once.
    let bombs = counter();
    let mut dropped = CommandBuffer::new();
    for i in 0..N {
        dropped.insert(
            live,
            (Bomb {
                armed: i == 2,
                arm_clones: false,
                drops: bombs.clone(),
            },),
        );
        dropped.spawn((c(),));
    }
    assert!(catch_unwind(AssertUnwindSafe(move || drop(dropped))).is_err());
    assert_eq!((load(&bombs), load(&drops)), (N, 5 + N));
    world.check_invariants();
    drop(world);
    assert_eq!(load(&drops), 6 + N);
}

/// A one-entity world's parts whose entity row holds `bits`, located by slot `bits as u32`.
fn one_entity_parts(bits: u64, bytes: &mut Vec<u8>) -> WorldParts<'_> {
    use freyr_core::parts::{AllocatorParts, ArchetypeParts};
    let index = bits as u32 as usize;
    // Every other index is free but off the free stack (retired), so only `index` is live.
    let mut slots = vec![1 << 31 | 1; index + 1];
    slots[index] = 0; // chunk 0, row 0
    bytes.clear();
    bytes.extend_from_slice(&bits.to_le_bytes());
    WorldParts {
        components: Vec::new(),
        allocator: AllocatorParts {
            slots,
            free: Vec::new(),
            len: 1,
            chunk_ids: 1,
            free_chunks: Vec::new(),
        },
        archetypes: vec![ArchetypeParts {
            components: Vec::new(),
            slabs: vec![1],
            chunk_ids: vec![0],
            entities: bytes,
            columns: Vec::new(),
        }],
    }
}

#[test]
fn built_worlds_refuse_handles_no_world_hands_out() {
    let mut bytes = Vec::new();
    // Generations a world hands out: 1 ..= 2^31 - 1.
    for generation in [1u64, 0x7FFF_FFFF] {
        let world = World::from_parts(one_entity_parts(generation << 32 | 3, &mut bytes)).unwrap();
        let e = Entity::from_bits(generation << 32 | 3).unwrap();
        assert!(world.contains(e));
        world.check_invariants();
    }
    // Generation 0, and generations with the bit that marks a command buffer's pending handles:
    // such an entity would be mistaken for (or resolve to) a buffer's pending spawn.
    for generation in [0u64, 1 << 31, u32::MAX as u64] {
        let parts = one_entity_parts(generation << 32 | 3, &mut bytes);
        assert!(
            World::from_parts(parts).is_err(),
            "generation {generation:#x} accepted"
        );
    }
    // One such bit pattern is a live buffer's pending handle: as a real entity, a despawn of it
    // recorded in that buffer would despawn the buffer's spawn instead.
    let mut commands = CommandBuffer::new();
    let pending = commands.spawn((1u8,));
    assert!(World::from_parts(one_entity_parts(pending.to_bits(), &mut bytes)).is_err());
}

#[test]
fn reserved_and_emptied_chunks_survive_snapshots_restores_and_clears() {
    let counted = counter();
    let mut world = World::new();
    world.reserve::<(Counted, u32)>(3 * CHUNK_CAPACITY);
    let ids = world.spawn_batch((0..5u32).map(|i| (Counted(counted.clone()), i)));
    world.reserve::<(u32,)>(2 * CHUNK_CAPACITY + 1);
    let emptied = world.spawn_batch((0..CHUNK_CAPACITY as u32 + 1).map(|i| (i,)));
    for &e in &emptied {
        world.despawn(e).unwrap();
    }
    world.set_change_tick(u64::MAX);
    for archetype in world.archetypes() {
        for column in 0..archetype.components().len() {
            archetype.mark_all_changed(column, u64::MAX);
        }
    }
    world.check_invariants();
    let snapshot = world.snapshot(&types()).unwrap();
    let mut restored = World::restore_from(&snapshot);
    restored.check_invariants();
    for (i, &e) in ids.iter().enumerate() {
        assert_eq!(restored.get::<u32>(e), Ok(&(i as u32)));
    }
    let more = restored.spawn_batch((0..2 * CHUNK_CAPACITY as u32).map(|i| (i,)));
    restored.check_invariants();
    assert_eq!(restored.len(), 5 + more.len());
    let mut spare = SpareSlabs::new();
    drop(snapshot.restore_over(&mut restored, &Sequential, &mut spare));
    restored.check_invariants();
    assert_eq!(restored.len(), 5);
    restored.clear();
    restored.check_invariants();
    world.clear();
    world.check_invariants();
    assert!(world.archetypes().iter().all(|a| a.allocated_chunks() == 0));
    drop((world, restored, snapshot));
    // The originals, the snapshot's clones, and those of two restores.
    assert_eq!(load(&counted), 5 * 4);
}
