//! Chunk layout: over-aligned columns, zero-sized tags, the dense-chunk invariant, chunk reuse,
//! and deterministic entity ids.

use freyr_core::{CHUNK_CAPACITY, Entity, World};

#[repr(align(64))]
#[derive(Debug, PartialEq)]
struct Aligned64(u8);

#[derive(Debug, PartialEq)]
struct Tag;

/// Mirrors freyr-core's removal hysteresis floor (`archetype::SPARE_CHUNKS`).
const SPARE_CHUNKS: usize = 32;

const N: usize = if cfg!(miri) {
    CHUNK_CAPACITY + 3
} else {
    3 * CHUNK_CAPACITY + 17
};

#[test]
fn over_aligned_component_is_aligned_in_every_chunk_and_after_moves() {
    let mut world = World::new();
    let ids = world.spawn_batch((0..N).map(|i| (1u8, Aligned64(i as u8), 2u16)));
    world.insert(ids[5], (3u32,)).unwrap(); // moves a row to another archetype
    let id = world.component_id::<Aligned64>().unwrap();
    for archetype in world.archetypes().iter().filter(|a| a.has(id)) {
        for chunk in archetype.chunks() {
            let ptr = chunk.column_ptr(archetype.column_index(id).unwrap());
            assert_eq!(ptr.as_ptr() as usize % 64, 0);
            let column = chunk.column::<Aligned64>(id).unwrap();
            assert_eq!(column.len(), chunk.len());
        }
    }
    for (i, &e) in ids.iter().enumerate() {
        let value = world.get::<Aligned64>(e).unwrap();
        assert_eq!(value as *const Aligned64 as usize % 64, 0);
        assert_eq!(value.0, i as u8);
    }
}

#[test]
fn zero_sized_tags_are_stored_without_bytes() {
    let mut world = World::new();
    let ids = world.spawn_batch((0..N).map(|i| (Tag, i as u32)));
    let tag = world.component_id::<Tag>().unwrap();
    assert_eq!(world.component_info(tag).layout().size(), 0);
    let archetype = world.archetypes().iter().find(|a| a.has(tag)).unwrap();
    for chunk in archetype.chunks() {
        assert_eq!(chunk.column::<Tag>(tag).unwrap().len(), chunk.len());
    }
    assert_eq!(world.remove::<(Tag,)>(ids[0]), Ok((Tag,)));
    assert!(world.get::<Tag>(ids[0]).is_err());
    assert_eq!(world.get::<Tag>(ids[1]), Ok(&Tag));
    world.check_invariants();
}

#[test]
fn all_chunks_but_the_last_are_full_after_any_sequence() {
    let mut world = World::new();
    let mut ids = world.spawn_batch((0..N).map(|i| (i as u64,)));
    // Pseudo-random despawns, inserts and removes.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    for step in 0..N {
        let i = next(ids.len());
        match step % 4 {
            0 => {
                world.despawn(ids.swap_remove(i)).unwrap();
            }
            1 => world.insert(ids[i], (1u8,)).unwrap(),
            2 => {
                let _ = world.remove::<(u8,)>(ids[i]);
            }
            _ => ids.push(world.spawn((step as u64,))),
        }
        for archetype in world.archetypes() {
            let lens: Vec<usize> = archetype.chunks().map(|c| c.len()).collect();
            if let Some((last, full)) = lens.split_last() {
                assert!(full.iter().all(|&l| l == CHUNK_CAPACITY), "{lens:?}");
                assert!(*last >= 1);
            }
            assert_eq!(lens.iter().sum::<usize>(), archetype.len());
            assert!(archetype.allocated_chunks() >= archetype.chunk_count());
        }
    }
    world.check_invariants();
}

#[test]
fn chunks_no_longer_needed_are_reused_or_freed() {
    let mut world = World::new();
    let ids = world.spawn_batch((0..N).map(|i| (i as u32,)));
    let id = world.component_id::<u32>().unwrap();
    let arch = world.archetypes().iter().position(|a| a.has(id)).unwrap();
    assert_eq!(
        world.archetypes()[arch].allocated_chunks(),
        N.div_ceil(CHUNK_CAPACITY),
        "an exact batch reserves exactly"
    );
    for &e in &ids {
        world.despawn(e).unwrap();
    }
    assert_eq!(
        world.archetypes()[arch].allocated_slabs(),
        1,
        "the batch's slab is kept for reuse"
    );
    let spare = world.archetypes()[arch].allocated_chunks();
    world.spawn_batch((0..10u32).map(|i| (i,)));
    assert_eq!(world.archetypes()[arch].allocated_slabs(), 1);
    assert_eq!(
        world.archetypes()[arch].allocated_chunks(),
        spare,
        "the spare was reused"
    );
    world.clear();
    assert_eq!(world.archetypes()[arch].allocated_chunks(), 0);
    assert_eq!(world.archetypes()[arch].allocated_slabs(), 0);
}

#[test]
fn slabs_grow_geometrically_and_trailing_empty_ones_are_freed() {
    let mut world = World::new();
    // One at a time: slabs of 1, 2 and 4 chunks; the fifth chunk is in use.
    let ids: Vec<_> = (0..4 * CHUNK_CAPACITY + 1)
        .map(|i| world.spawn((i as u32,)))
        .collect();
    let id = world.component_id::<u32>().unwrap();
    let arch = world.archetypes().iter().position(|a| a.has(id)).unwrap();
    assert_eq!(world.archetypes()[arch].allocated_slabs(), 3);
    assert_eq!(world.archetypes()[arch].allocated_chunks(), 7);
    assert_eq!(world.archetypes()[arch].chunk_count(), 5);
    // Down to one row: all three slabs start below the spare floor, so they stay for reuse.
    for &e in &ids[1..] {
        world.despawn(e).unwrap();
    }
    assert_eq!(world.archetypes()[arch].allocated_slabs(), 3);
    assert_eq!(world.archetypes()[arch].empty_slabs(), 2);
    // Refilling reuses them: no new slab.
    let refill: Vec<_> = (0..4 * CHUNK_CAPACITY)
        .map(|i| world.spawn((i as u32,)))
        .collect();
    assert_eq!(world.archetypes()[arch].allocated_slabs(), 3);
    assert_eq!(*world.get::<u32>(ids[0]).unwrap(), 0);
    for &e in &refill {
        world.despawn(e).unwrap();
    }
    world.check_invariants();
}

#[test]
fn empty_slabs_beyond_the_spare_floor_are_freed() {
    // Two exact batches: one slab of SPARE_CHUNKS + 8 chunks, then one more after it.
    let chunks = SPARE_CHUNKS + 8;
    let mut world = World::new();
    let first = world.spawn_batch((0..chunks * CHUNK_CAPACITY).map(|i| (i as u8,)));
    let second = world.spawn_batch((0..chunks * CHUNK_CAPACITY).map(|i| (i as u8,)));
    let id = world.component_id::<u8>().unwrap();
    let arch = world.archetypes().iter().position(|a| a.has(id)).unwrap();
    assert_eq!(world.archetypes()[arch].allocated_slabs(), 2);
    for &e in second.iter().chain(&first) {
        world.despawn(e).unwrap();
    }
    // The second slab starts at chunk SPARE_CHUNKS + 8, past the floor: freed. The first stays.
    assert_eq!(world.archetypes()[arch].allocated_slabs(), 1);
    assert_eq!(world.archetypes()[arch].allocated_chunks(), chunks);
    world.clear();
    assert_eq!(world.archetypes()[arch].allocated_slabs(), 0);
}

#[test]
fn consecutive_chunks_of_a_slab_are_contiguous_per_column() {
    let mut world = World::new();
    world.spawn_batch((0..3 * CHUNK_CAPACITY).map(|i| (i as u64, i as u16)));
    let id = world.component_id::<u16>().unwrap();
    let arch = world.archetypes().iter().find(|a| a.has(id)).unwrap();
    assert_eq!(arch.allocated_slabs(), 1);
    let column = arch.column_index(id).unwrap();
    let bases: Vec<usize> = arch
        .chunks()
        .map(|c| c.column_ptr(column).as_ptr() as usize)
        .collect();
    assert_eq!(bases[1] - bases[0], 2 * CHUNK_CAPACITY);
    assert_eq!(bases[2] - bases[1], 2 * CHUNK_CAPACITY);
    let ents: Vec<usize> = arch
        .chunks()
        .map(|c| c.entities().as_ptr() as usize)
        .collect();
    assert_eq!(ents[1] - ents[0], 8 * CHUNK_CAPACITY);
    for (c, chunk) in arch.chunks().enumerate() {
        let values = chunk.column::<u16>(id).unwrap();
        assert!(
            values
                .iter()
                .enumerate()
                .all(|(r, &v)| v as usize == c * 512 + r)
        );
    }
}

#[test]
fn entity_ids_are_a_pure_function_of_the_operations() {
    fn run() -> Vec<u64> {
        let mut world = World::new();
        let mut out = Vec::new();
        let a = world.spawn_batch((0..40u8).map(|i| (i,)));
        for &e in a.iter().step_by(3) {
            world.despawn(e).unwrap();
        }
        out.extend(
            world
                .spawn_batch((0..20u16).map(|i| (i,)))
                .iter()
                .map(|e| e.to_bits()),
        );
        out.extend((0..5).map(|_| world.spawn(()).to_bits()));
        out
    }
    let first = run();
    assert_eq!(first, run());
    // Freed indices are reused last-freed first, with the next generation.
    assert_eq!(first[0], (2u64 << 32) | 39);
}

#[test]
fn spawn_batch_matches_repeated_spawn_ids() {
    let mut batch = World::new();
    let mut single = World::new();
    for world in [&mut batch, &mut single] {
        let ids = world.spawn_batch((0..10u8).map(|i| (i,)));
        world.despawn(ids[2]).unwrap();
        world.despawn(ids[7]).unwrap();
    }
    let from_batch = batch.spawn_batch((0..5u8).map(|i| (i,)));
    let from_single: Vec<_> = (0..5u8).map(|i| single.spawn((i,))).collect();
    assert_eq!(from_batch, from_single);
}

#[test]
fn batch_ending_on_a_chunk_boundary_allocates_no_extra_chunk() {
    let mut world = World::new();
    world.spawn_batch(
        (0..2 * CHUNK_CAPACITY)
            .map(|i| (i as u16,))
            .filter(|_| true),
    );
    world.spawn_batch((0..CHUNK_CAPACITY).map(|i| (i as u16,)));
    let id = world.component_id::<u16>().unwrap();
    let arch = world.archetypes().iter().find(|a| a.has(id)).unwrap();
    assert_eq!(arch.allocated_chunks(), 3);
    assert_eq!(arch.chunk_count(), 3);
}

#[test]
fn runs_cover_the_chunks_in_order_one_per_slab() {
    // One-by-one spawns grow slabs of 1, 2, 4, 8 chunks: 11 chunks hold 5,000 rows.
    let mut world = World::new();
    let ids: Vec<_> = (0..5_000u32).map(|i| world.spawn((i, i as u16))).collect();
    // Despawning from the front moves rows from the end: the runs must follow.
    for &e in ids.iter().take(700) {
        world.despawn(e).unwrap();
    }
    let id32 = world.component_id::<u32>().unwrap();
    let id16 = world.component_id::<u16>().unwrap();
    let arch = world.archetypes().iter().find(|a| a.has(id32)).unwrap();
    // Every row of the given views, in order: (u32, u16, entity).
    let rows = |views: Vec<freyr_core::ChunkRef<'_>>| -> Vec<(u32, u16, Entity)> {
        views
            .iter()
            .flat_map(|c| {
                let (a, b) = (
                    c.column::<u32>(id32).unwrap(),
                    c.column::<u16>(id16).unwrap(),
                );
                (0..c.len()).map(move |r| (a[r], b[r], c.entities()[r]))
            })
            .collect()
    };
    let runs: Vec<_> = arch.runs().collect();
    let by_chunk = rows(arch.chunks().collect());
    let by_run = rows(runs.clone());
    assert_eq!(by_run, by_chunk);
    assert_eq!(by_run.len(), 4_300);
    // 4,300 rows = 9 chunks: slabs of 1, 2, 4 chunks full, then 2 of the 8-chunk slab.
    let lens: Vec<usize> = runs.iter().map(|r| r.len()).collect();
    assert_eq!(lens, [512, 1024, 2048, 4_300 - 3584]);
    assert_eq!(arch.allocated_slabs(), 4);
    // `run_at(c)`: from chunk `c`'s first row to the end of its run, for every chunk.
    let run_starts = [0, 1, 3, 7];
    for c in 0..arch.chunk_count() {
        let run = arch.run_at(c);
        let start = run_starts.iter().rposition(|&s| s <= c).unwrap();
        let run_rows = runs[start].len() - (c - run_starts[start]) * CHUNK_CAPACITY;
        assert_eq!(run.len(), run_rows, "chunk {c}");
        let from = c * CHUNK_CAPACITY;
        assert_eq!(
            rows(vec![run]),
            by_chunk[from..from + run_rows],
            "chunk {c}"
        );
    }
}

#[test]
#[should_panic(expected = "chunk 2 out of range (2 chunks)")]
fn run_at_rejects_a_chunk_past_the_last() {
    let mut world = World::new();
    world.spawn_batch((0..600u32).map(|i| (i,)));
    let id = world.component_id::<u32>().unwrap();
    let arch = world.archetypes().iter().find(|a| a.has(id)).unwrap();
    let _ = arch.run_at(2);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "about 60k rows; the proptest model covers the same at small size"
)]
fn row_moves_after_slabs_are_freed_and_grown_again_see_the_new_slabs() {
    // Row moves cache the archetype's tail chunk. Move a row out of the last chunk, free the
    // slabs (`clear`; despawning everything frees those past the spare floor), grow the
    // archetype to the same size again (new slabs under the same chunk indices) and move a row
    // out of the same last chunk: it must be read from the new slab.
    let n = (SPARE_CHUNKS + 8) * CHUNK_CAPACITY + 3;
    let mut world = World::new();
    for round in 0..3u32 {
        let ids: Vec<_> = (0..n as u32).map(|i| world.spawn((i + round,))).collect();
        for &e in ids.iter().rev().take(3) {
            world.insert(e, (7u16,)).unwrap();
        }
        world.insert(ids[0], (7u16,)).unwrap();
        for (i, &e) in ids.iter().enumerate() {
            assert_eq!(
                *world.get::<u32>(e).unwrap(),
                i as u32 + round,
                "round {round}"
            );
        }
        if round == 0 {
            world.clear();
        } else {
            for &e in &ids {
                world.despawn(e).unwrap();
            }
        }
        world.check_invariants();
    }
}
