//! A world taken apart (`World::allocator_view`, `Archetype::slab_sizes` / `chunk_ids`, the
//! chunks' columns) and built again (`World::from_parts`) is the same world; bad parts are a
//! typed error that drops every value once; `World::spawn_columns` places values as a batch
//! spawn would and refuses misuse before anything changes. Small sizes under Miri.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr_core::SpareSlabs;
use freyr_core::parts::{
    AllocatorParts, ArchetypeParts, ColumnValues, InvalidParts, WorldParts, append_entity_bits,
    component_info,
};
use freyr_core::{Archetype, CHUNK_CAPACITY, ComponentId, Entity, World};

const N: usize = if cfg!(miri) { 40 } else { 3000 };

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(u64, u32);
#[derive(Clone, Debug, PartialEq)]
struct Name(String);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tag;
/// Plain data with no padding: any two bytes are a value.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Late(u16);

/// Counts drops of one test's values.
struct Counted(&'static AtomicUsize);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A world with several archetypes, holes in its free list and an emptied archetype.
fn build() -> (World, Vec<Entity>) {
    let mut world = World::new();
    let ids = world.spawn_batch((0..N).map(|i| (Pos(i as u64, 1), Name(format!("e{i}")))));
    for (k, &e) in ids.iter().enumerate() {
        match k % 7 {
            0 => world.despawn(e).unwrap(),
            3 => world.insert(e, (Tag, Late(k as u16))).unwrap(),
            5 => drop(world.remove::<(Name,)>(e).unwrap()),
            _ => {}
        }
    }
    let gone = world.spawn((Tag, 0u8));
    world.despawn(gone).unwrap(); // leaves an empty archetype (Tag, u8)
    (world, ids)
}

/// The values of component `id` (a `T`) of every row of `archetype`, cloned, in row order.
fn column<T: Clone + Send + Sync + 'static>(archetype: &Archetype, id: ComponentId) -> Vec<T> {
    let chunks = archetype.chunks();
    chunks
        .flat_map(|c| c.column::<T>(id).unwrap().to_vec())
        .collect()
}

/// `world` taken apart: owned copies of every column, the entities' bytes kept in `entities`.
fn take_apart<'a>(world: &World, entities: &'a mut Vec<Vec<u8>>) -> WorldParts<'a> {
    let view = world.allocator_view();
    let allocator = AllocatorParts {
        slots: view.slots.to_vec(),
        free: view.free.to_vec(),
        len: view.len,
        chunk_ids: view.chunk_ids,
        free_chunks: view.free_chunks.to_vec(),
    };
    let infos = world.component_infos();
    let components = infos
        .iter()
        .map(|info| match info.name() {
            n if n.ends_with("Pos") => component_info::<Pos>(info.id().index()),
            n if n.ends_with("Name") => component_info::<Name>(info.id().index()),
            n if n.ends_with("Tag") => component_info::<Tag>(info.id().index()),
            n if n.ends_with("Late") => component_info::<Late>(info.id().index()),
            "u8" => component_info::<u8>(info.id().index()),
            other => panic!("unexpected type {other}"),
        })
        .collect();
    entities.clear();
    for archetype in world.archetypes() {
        let mut bits = Vec::new();
        for chunk in archetype.chunks() {
            append_entity_bits(chunk.entities(), &mut bits);
        }
        entities.push(bits);
    }
    let entities: &'a Vec<Vec<u8>> = entities;
    let mut archetypes = Vec::new();
    for (archetype, bits) in world.archetypes().iter().zip(entities.iter()) {
        let columns = archetype
            .components()
            .iter()
            .map(|&id| match world.component_info(id).name() {
                n if n.ends_with("Pos") => ColumnValues::new(column::<Pos>(archetype, id)),
                n if n.ends_with("Name") => ColumnValues::new(column::<Name>(archetype, id)),
                n if n.ends_with("Tag") => ColumnValues::new(column::<Tag>(archetype, id)),
                n if n.ends_with("Late") => ColumnValues::new(column::<Late>(archetype, id)),
                _ => ColumnValues::new(column::<u8>(archetype, id)),
            })
            .collect();
        archetypes.push(ArchetypeParts {
            components: archetype.components().to_vec(),
            slabs: archetype.slab_sizes().collect(),
            chunk_ids: archetype.chunk_ids().collect(),
            entities: bits,
            columns,
        });
    }
    WorldParts {
        components,
        allocator,
        archetypes,
    }
}

/// One observation of [`observe`]: data compared with `==` (formatted only when an assertion
/// fails, which keeps the comparison cheap under Miri).
#[derive(Debug, PartialEq)]
enum Seen {
    Allocator(Vec<u32>, Vec<u32>, usize, usize, Vec<u32>),
    Archetype(Vec<ComponentId>, Vec<u32>, Vec<u32>),
    Row(usize, Entity, Option<Pos>, Option<String>, Option<Late>),
}

/// Everything observable of `world`, as comparable data.
fn observe(world: &World) -> Vec<Seen> {
    let view = world.allocator_view();
    let mut out = vec![Seen::Allocator(
        view.slots.to_vec(),
        view.free.to_vec(),
        view.len,
        view.chunk_ids,
        view.free_chunks.to_vec(),
    )];
    for archetype in world.archetypes() {
        out.push(Seen::Archetype(
            archetype.components().to_vec(),
            archetype.slab_sizes().collect(),
            archetype.chunk_ids().collect(),
        ));
        for chunk in archetype.chunks() {
            for (row, e) in chunk.entities().iter().enumerate() {
                let pos = world.get::<Pos>(*e).ok().copied();
                let name = world.get::<Name>(*e).ok().map(|n| n.0.clone());
                let late = world.get::<Late>(*e).ok().copied();
                out.push(Seen::Row(row, *e, pos, name, late));
            }
        }
    }
    out
}

#[test]
fn a_world_built_from_its_parts_is_the_same_world_and_goes_on_the_same() {
    let (mut world, ids) = build();
    let mut bits = Vec::new();
    let mut built = World::from_parts(take_apart(&world, &mut bits)).unwrap();
    built.check_invariants();
    assert_ne!(built.id(), world.id());
    assert_eq!(observe(&built), observe(&world));
    assert_eq!(built.next_spawn_ids(N), world.next_spawn_ids(N));
    // The same operations afterwards give the same ids and the same world.
    for w in [&mut world, &mut built] {
        for &e in ids.iter().step_by(5) {
            if w.contains(e) {
                w.insert(e, (Late(9),)).unwrap();
            }
        }
        w.spawn_batch((0..N / 3).map(|i| (Pos(i as u64, 2), Name(format!("n{i}")))));
    }
    built.check_invariants();
    assert_eq!(observe(&built), observe(&world));
}

/// A world built into the slabs another world of the same shape gave back is the same world
/// as one built into fresh memory (the old bytes are never read as values), takes every slab it
/// can from the spare set, and leaves the rest there.
#[test]
fn a_world_built_into_recycled_slabs_is_the_same_world() {
    let (world, _) = build();
    let mut spare = SpareSlabs::new();
    build().0.recycle_into(&mut spare);
    let mut other = World::new();
    other.spawn_batch((0..3 * CHUNK_CAPACITY).map(|i| (i as u16, 0u8)));
    other.recycle_into(&mut spare);
    let held = spare.bytes();
    let mut bits = Vec::new();
    let mut seen = 0;
    let built = World::from_parts_reading(
        take_apart(&world, &mut bits),
        &mut |b| seen += b.len(),
        &mut spare,
    )
    .unwrap();
    built.check_invariants();
    assert_eq!(observe(&built), observe(&world));
    assert_eq!(seen, world.len() * 8, "every entity's bytes were read");
    assert!(spare.bytes() < held, "slabs of the same layout were reused");
    assert!(
        spare.bytes() > 0,
        "the other world's slabs, of other layouts, stay"
    );
    spare.clear();
    assert_eq!(spare.bytes(), 0);
}

/// A `Drop` that panics when its flag is set.
struct Bomb(bool, &'static AtomicUsize);
impl Drop for Bomb {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::Relaxed);
        if self.0 {
            panic!("bomb");
        }
    }
}

/// Recycling a world drops every value exactly once, as dropping it does, also when a `Drop`
/// panics: the panic continues after the archetype's other values are dropped, the memory
/// given so far stays usable, and the rest is freed.
#[test]
fn recycling_drops_every_value_once_even_when_a_drop_panics() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let mut world = World::new();
    world.spawn_batch((0..N).map(|i| (Counted(&DROPS), i as u32)));
    world.spawn_batch((0..N).map(|i| (Bomb(i == N / 2, &DROPS),)));
    world.spawn_batch((0..N).map(|_| (Counted(&DROPS), 1u8)));
    let mut spare = SpareSlabs::new();
    let result = catch_unwind(AssertUnwindSafe(|| world.recycle_into(&mut spare)));
    assert!(result.is_err(), "the panic continues");
    assert_eq!(
        DROPS.load(Ordering::Relaxed),
        3 * N,
        "every value dropped once"
    );
    assert!(
        spare.bytes() > 0,
        "the archetypes before the panic gave their slabs"
    );
    let mut again = World::new();
    again.spawn_batch((0..N).map(|i| (i as u64,)));
    again.recycle_into(&mut spare);
    drop(spare);
}

#[test]
fn plain_bytes_enter_a_built_world_as_values() {
    let mut world = World::new();
    let ids = world.spawn_batch((0..N as u16).map(|i| (Late(i),)));
    let late: Vec<u8> = (0..N as u16).flat_map(|i| (i * 3).to_ne_bytes()).collect();
    let mut bits = Vec::new();
    let mut parts = take_apart(&world, &mut bits);
    let archetype = parts.archetypes.iter_mut().find(|a| !a.entities.is_empty());
    // SAFETY: any two bytes are a valid `Late`.
    let values = unsafe { ColumnValues::from_bytes::<Late>(&late, N) }.unwrap();
    archetype.unwrap().columns = vec![values];
    let built = World::from_parts(parts).unwrap();
    built.check_invariants();
    for (i, &e) in ids.iter().enumerate() {
        assert_eq!(built.get::<Late>(e), Ok(&Late(i as u16 * 3)));
    }
}

/// A one-archetype world of `n` rows, taken apart (its values are made by [`counted_parts`]).
#[derive(Clone)]
struct CountedSource {
    bits: Vec<u8>,
    allocator: AllocatorParts,
    components: Vec<ComponentId>,
    slabs: Vec<u32>,
    chunk_ids: Vec<u32>,
}

fn counted_source(n: usize) -> CountedSource {
    let mut world = World::new();
    let ids = world.spawn_batch((0..n).map(|_| (7u32,)));
    let mut bits = Vec::new();
    append_entity_bits(&ids, &mut bits);
    let archetype = world.archetypes().iter().find(|a| a.len() == n).unwrap();
    let view = world.allocator_view();
    CountedSource {
        bits,
        allocator: AllocatorParts {
            slots: view.slots.to_vec(),
            free: view.free.to_vec(),
            len: view.len,
            chunk_ids: view.chunk_ids,
            free_chunks: view.free_chunks.to_vec(),
        },
        components: archetype.components().to_vec(),
        slabs: archetype.slab_sizes().collect(),
        chunk_ids: archetype.chunk_ids().collect(),
    }
}

/// The parts of `source` with one `Counted` value per row, whose drops `drops` counts.
fn counted_parts<'a>(source: &'a CountedSource, drops: &'static AtomicUsize) -> WorldParts<'a> {
    let n = source.bits.len() / 8;
    WorldParts {
        components: vec![component_info::<Counted>(0)],
        allocator: source.allocator.clone(),
        archetypes: vec![
            ArchetypeParts {
                components: Vec::new(),
                slabs: Vec::new(),
                chunk_ids: Vec::new(),
                entities: &[],
                columns: Vec::new(),
            },
            ArchetypeParts {
                components: source.components.clone(),
                slabs: source.slabs.clone(),
                chunk_ids: source.chunk_ids.clone(),
                entities: &source.bits,
                columns: vec![ColumnValues::new(
                    (0..n).map(|_| Counted(drops)).collect::<Vec<_>>(),
                )],
            },
        ],
    }
}

#[test]
fn counted_parts_build_and_every_value_is_dropped_once_with_the_world() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let source = counted_source(N);
    let world = World::from_parts(counted_parts(&source, &DROPS)).unwrap();
    world.check_invariants();
    assert_eq!(DROPS.load(Ordering::Relaxed), 0, "moved in, not dropped");
    drop(world);
    assert_eq!(DROPS.load(Ordering::Relaxed), N);
}

#[test]
fn each_broken_invariant_is_named_and_every_value_is_dropped_once() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    // The entity case damages the source's bytes (below); the others the parts.
    type Break = fn(&mut WorldParts<'_>);
    let cases: [(&str, Break); 6] = [
        ("an entity id is invalid", |_| {}),
        ("an entity's slot does not locate its row", |p| {
            p.allocator.slots.swap(0, 1)
        }),
        ("a column's length differs from the rows'", |p| {
            p.archetypes[1].columns = vec![ColumnValues::new(Vec::<Counted>::new())]
        }),
        ("a column's type differs from its component", |p| {
            p.archetypes[1].columns = vec![ColumnValues::new(vec![0u64; 4])]
        }),
        ("slabs and chunk ids disagree", |p| {
            p.archetypes[1].slabs.push(1)
        }),
        ("a chunk id is used twice", |p| {
            p.allocator.free_chunks.push(0)
        }),
    ];
    for (what, damage) in cases {
        DROPS.store(0, Ordering::Relaxed);
        let mut source = counted_source(4);
        if what == "an entity id is invalid" {
            source.bits[4..8].fill(0); // entity 0's generation half
        }
        let mut parts = counted_parts(&source, &DROPS);
        damage(&mut parts);
        let err = World::from_parts(parts).unwrap_err();
        assert_eq!(err, InvalidParts(what));
        assert_eq!(
            DROPS.load(Ordering::Relaxed),
            4,
            "{what}: every value dropped once"
        );
    }
}

/// The free list is checked against the slots: a repeated index, one past the slots and one
/// whose slot is live are each named, on a world whose free list has holes; and a world with
/// no free list (the usual save of a world never churned) builds.
#[test]
fn a_damaged_free_list_is_named_and_an_empty_one_builds() {
    let (world, _) = build();
    assert!(
        world.allocator_view().free.len() > 1,
        "the test world has a free list"
    );
    type Break = fn(&mut WorldParts<'_>);
    let cases: [(&str, Break); 3] = [
        ("a free index repeats", |p| {
            let first = p.allocator.free[0];
            p.allocator.free.push(first)
        }),
        ("a free index is out of range", |p| {
            let past = p.allocator.slots.len() as u32;
            p.allocator.free.push(past)
        }),
        ("a free index's slot is not free", |p| {
            let located = p.allocator.slots.iter().position(|&s| s & (1 << 31) == 0);
            p.allocator.free.push(located.unwrap() as u32)
        }),
    ];
    for (what, damage) in cases {
        let mut bits = Vec::new();
        let mut parts = take_apart(&world, &mut bits);
        damage(&mut parts);
        assert_eq!(World::from_parts(parts).unwrap_err(), InvalidParts(what));
    }
    let mut fresh = World::new();
    let ids = fresh.spawn_batch((0..N).map(|i| (Pos(i as u64, 3), Name(format!("f{i}")))));
    assert!(fresh.allocator_view().free.is_empty());
    let mut bits = Vec::new();
    let built = World::from_parts(take_apart(&fresh, &mut bits)).unwrap();
    built.check_invariants();
    assert_eq!(observe(&built), observe(&fresh));
    assert_eq!(built.get::<Pos>(ids[N - 1]), Ok(&Pos(N as u64 - 1, 3)));
}

/// Entity rows are checked one way when they hold consecutive indices (their slots one run) and
/// another when not: damage on either way is named, and a world whose rows are out of order
/// still builds.
#[test]
fn rows_that_their_slots_do_not_locate_are_named_whichever_way_they_are_checked() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let located = InvalidParts("an entity's slot does not locate its row");
    let index = |bits: &mut [u8], row: usize, index: u32| {
        bits[row * 8..row * 8 + 4].copy_from_slice(&index.to_le_bytes());
    };
    // Consecutive indices, one slot pointing elsewhere (another row of the chunk).
    let source = counted_source(4);
    let mut parts = counted_parts(&source, &DROPS);
    parts.allocator.slots[2] = parts.allocator.slots[3];
    assert_eq!(World::from_parts(parts).unwrap_err(), located);
    // Two rows swapped: no longer consecutive, each row looks its slot up.
    let mut source = counted_source(4);
    source.bits[..16].rotate_left(8);
    assert_eq!(
        World::from_parts(counted_parts(&source, &DROPS)).unwrap_err(),
        located
    );
    // Consecutive indices past the end of the slots.
    let mut source = counted_source(4);
    for row in 0..4 {
        index(&mut source.bits, row, 100 + row as u32);
    }
    assert_eq!(
        World::from_parts(counted_parts(&source, &DROPS)).unwrap_err(),
        located
    );
    // Rows out of index order whose slots say so: a valid world.
    let mut source = counted_source(4);
    source.bits[..16].rotate_left(8);
    let (a, b) = (source.allocator.slots[0], source.allocator.slots[1]);
    source.allocator.slots[0] = b;
    source.allocator.slots[1] = a;
    let world = World::from_parts(counted_parts(&source, &DROPS)).unwrap();
    world.check_invariants();
    drop(world);
}

#[test]
fn spawn_columns_places_values_as_a_batch_spawn_does() {
    let (mut world, _) = build();
    let mut twin = {
        let mut bits = Vec::new();
        World::from_parts(take_apart(&world, &mut bits)).unwrap()
    };
    let n = N / 2;
    let expected = world.next_spawn_ids(n);
    let batch = twin.spawn_batch((0..n).map(|i| (Late(i as u16), Name(format!("s{i}")))));
    let (late, name) = (world.register::<Late>(), world.register::<Name>());
    let names = (0..n).map(|i| Name(format!("s{i}"))).collect::<Vec<_>>();
    let lates = (0..n).map(|i| Late(i as u16)).collect::<Vec<_>>();
    let spawned = world.spawn_columns(
        n,
        vec![
            (name, ColumnValues::new(names)),
            (late, ColumnValues::new(lates)),
        ],
    );
    assert_eq!(spawned, expected);
    assert_eq!(spawned, batch);
    world.check_invariants();
    assert_eq!(observe(&world), observe(&twin));
    // No columns: empty entities.
    let empty = world.spawn_columns(3, Vec::new());
    assert_eq!(empty, twin.spawn_batch((0..3).map(|_| ())));
    assert_eq!(observe(&world), observe(&twin));
}

#[test]
fn spawn_columns_refuses_misuse_before_anything_changes_and_drops_the_values_once() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let mut world = World::new();
    world.spawn((1u32,));
    let (counted, number) = (world.register::<Counted>(), world.register::<u32>());
    let before = world.allocator_view().slots.to_vec();
    let counted_values = |n: usize| ColumnValues::new((0..n).map(|_| Counted(&DROPS)).collect());
    type Misuse = Vec<(ComponentId, ColumnValues<'static>)>;
    let cases: [(&str, Misuse); 3] = [
        ("not registered", vec![(number, counted_values(2))]),
        ("values for", vec![(counted, counted_values(3))]),
        (
            "listed twice",
            vec![(counted, counted_values(2)), (counted, counted_values(2))],
        ),
    ];
    for (what, columns) in cases {
        DROPS.store(0, Ordering::Relaxed);
        let made: usize = columns.iter().map(|(_, v)| v.len()).sum();
        let err = catch_unwind(AssertUnwindSafe(|| world.spawn_columns(2, columns))).unwrap_err();
        let message = err.downcast_ref::<String>().unwrap();
        assert!(message.contains(what), "{message}");
        assert_eq!(DROPS.load(Ordering::Relaxed), made, "{what}");
        assert_eq!(world.len(), 1);
        assert_eq!(world.allocator_view().slots, before);
        world.check_invariants();
    }
}

#[test]
fn next_spawn_ids_and_archetype_with_predict_what_spawns_do() {
    let (mut world, _) = build();
    let next = world.next_spawn_ids(N);
    assert_eq!(world.spawn_batch((0..N).map(|i| (Pos(i as u64, 3),))), next);
    let count = world.archetypes().len();
    let (late, tag) = (world.register::<Late>(), world.register::<Tag>());
    let pos = world.component_id::<Pos>().unwrap();
    let made = world.archetype_with(&[pos, late]);
    assert_eq!(made.index(), count, "a new archetype comes last");
    assert_eq!(
        world.archetype_with(&[late, pos]),
        made,
        "any order, found again"
    );
    let e = world.spawn((Late(1), Pos(1, 1)));
    assert_eq!(world.entity_location(e).unwrap().0, made);
    let err = catch_unwind(AssertUnwindSafe(|| world.archetype_with(&[tag, tag]))).unwrap_err();
    assert!(err.downcast_ref::<String>().unwrap().contains("twice"));
    world.check_invariants();
}
