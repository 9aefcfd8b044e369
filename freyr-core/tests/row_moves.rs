//! Row moves: `insert`, `remove` and the swap-remove behind them copy every value byte for byte,
//! whatever its size (the copy picks a fixed-size path per size class, so each class is covered).

use freyr_core::{CHUNK_CAPACITY, Entity, World};

/// A component of `N` bytes whose content depends on the entity and the type.
#[derive(Copy, Clone, Debug, PartialEq)]
struct Bytes<const N: usize>([u8; N]);

impl<const N: usize> Bytes<N> {
    fn of(i: usize) -> Self {
        Bytes(core::array::from_fn(|k| (i * 31 + k * 7 + N) as u8))
    }
}

/// A component of `N` 8-byte words (aligned for `u64`).
#[derive(Copy, Clone, Debug, PartialEq)]
struct Words<const N: usize>([u64; N]);

impl<const N: usize> Words<N> {
    fn of(i: usize) -> Self {
        Words(core::array::from_fn(|k| (i as u64) << 16 | k as u64))
    }
}

/// Rows: several chunks natively; under Miri a few dozen, enough to run every size class
/// through insert, remove and swap-remove.
const ROWS: usize = if cfg!(miri) {
    40
} else {
    3 * CHUNK_CAPACITY + 5
};

type Small = (Bytes<1>, Bytes<3>, Bytes<4>, Bytes<5>, Bytes<7>, Bytes<8>);
type Medium = (
    Bytes<9>,
    Bytes<12>,
    Bytes<15>,
    Bytes<16>,
    Bytes<17>,
    Words<3>,
);
type Large = (Bytes<31>, Words<4>, Bytes<33>, Words<8>, Bytes<100>);

fn small(i: usize) -> Small {
    (
        Bytes::of(i),
        Bytes::of(i),
        Bytes::of(i),
        Bytes::of(i),
        Bytes::of(i),
        Bytes::of(i),
    )
}

fn medium(i: usize) -> Medium {
    (
        Bytes::of(i),
        Bytes::of(i),
        Bytes::of(i),
        Bytes::of(i),
        Bytes::of(i),
        Words::of(i),
    )
}

fn large(i: usize) -> Large {
    (
        Bytes::of(i),
        Words::of(i),
        Bytes::of(i),
        Words::of(i),
        Bytes::of(i),
    )
}

/// Checks every component entity `i` should have.
fn check(world: &World, e: Entity, i: usize, has_medium: bool, has_large: bool) {
    let s = small(i);
    assert_eq!(world.get::<Bytes<1>>(e), Ok(&s.0));
    assert_eq!(world.get::<Bytes<3>>(e), Ok(&s.1));
    assert_eq!(world.get::<Bytes<4>>(e), Ok(&s.2));
    assert_eq!(world.get::<Bytes<5>>(e), Ok(&s.3));
    assert_eq!(world.get::<Bytes<7>>(e), Ok(&s.4));
    assert_eq!(world.get::<Bytes<8>>(e), Ok(&s.5));
    let m = medium(i);
    assert_eq!(world.get::<Bytes<9>>(e).ok(), has_medium.then_some(&m.0));
    assert_eq!(world.get::<Bytes<12>>(e).ok(), has_medium.then_some(&m.1));
    assert_eq!(world.get::<Bytes<15>>(e).ok(), has_medium.then_some(&m.2));
    assert_eq!(world.get::<Bytes<16>>(e).ok(), has_medium.then_some(&m.3));
    assert_eq!(world.get::<Bytes<17>>(e).ok(), has_medium.then_some(&m.4));
    assert_eq!(world.get::<Words<3>>(e).ok(), has_medium.then_some(&m.5));
    let l = large(i);
    assert_eq!(world.get::<Bytes<31>>(e).ok(), has_large.then_some(&l.0));
    assert_eq!(world.get::<Words<4>>(e).ok(), has_large.then_some(&l.1));
    assert_eq!(world.get::<Bytes<33>>(e).ok(), has_large.then_some(&l.2));
    assert_eq!(world.get::<Words<8>>(e).ok(), has_large.then_some(&l.3));
    assert_eq!(world.get::<Bytes<100>>(e).ok(), has_large.then_some(&l.4));
}

#[test]
fn values_of_every_size_survive_insert_remove_and_swap_remove() {
    let mut world = World::new();
    let ids = world.spawn_batch((0..ROWS).map(small));
    // Insert in an order that leaves the source's rows shuffled by swap-removes.
    for (i, &e) in ids.iter().enumerate().rev().step_by(2) {
        world.insert(e, medium(i)).unwrap();
    }
    for (i, &e) in ids.iter().enumerate().step_by(3) {
        world.insert(e, large(i)).unwrap();
    }
    world.check_invariants();
    for (i, &e) in ids.iter().enumerate() {
        let has_medium = (ROWS - 1 - i).is_multiple_of(2);
        check(&world, e, i, has_medium, i.is_multiple_of(3));
    }
    // Remove hands the values back and moves the rest of the row.
    for (i, &e) in ids.iter().enumerate().step_by(3) {
        assert_eq!(world.remove::<Large>(e), Ok(large(i)));
    }
    for (i, &e) in ids.iter().enumerate().rev().step_by(2) {
        assert_eq!(world.remove::<Medium>(e), Ok(medium(i)));
    }
    world.check_invariants();
    for (i, &e) in ids.iter().enumerate() {
        check(&world, e, i, false, false);
    }
    // Despawning from the front swap-moves the last rows of every size into the holes.
    for &e in ids.iter().take(ROWS / 2) {
        world.despawn(e).unwrap();
    }
    world.check_invariants();
    for (i, &e) in ids.iter().enumerate().skip(ROWS / 2) {
        check(&world, e, i, false, false);
    }
}

#[test]
fn inserting_an_empty_bundle_or_only_present_components_keeps_the_row() {
    let mut world = World::new();
    let e = world.spawn((Bytes::<12>::of(1), Bytes::<4>::of(2)));
    let before = world.entity_location(e);
    world.insert(e, ()).unwrap();
    assert_eq!(world.entity_location(e), before);
    world.insert(e, (Bytes::<4>::of(9),)).unwrap();
    assert_eq!(world.entity_location(e), before);
    assert_eq!(world.get::<Bytes<4>>(e), Ok(&Bytes::of(9)));
    assert_eq!(world.get::<Bytes<12>>(e), Ok(&Bytes::of(1)));
    // A bundle with one present and one new component moves the row and overwrites in place.
    world
        .insert(e, (Bytes::<12>::of(5), Bytes::<9>::of(6)))
        .unwrap();
    assert_ne!(world.entity_location(e), before);
    assert_eq!(world.get::<Bytes<12>>(e), Ok(&Bytes::of(5)));
    assert_eq!(world.get::<Bytes<9>>(e), Ok(&Bytes::of(6)));
    assert_eq!(world.get::<Bytes<4>>(e), Ok(&Bytes::of(9)));
    assert_eq!(world.remove::<()>(e), Ok(()));
    world.check_invariants();
}

/// A row that arrives in a chunk stamps it added and changed at the world's tick, also when an
/// earlier arrival in the same tick was followed by other stamps (a manual mark, a `get_mut`,
/// a tick set back): a repeated arrival is not skipped on the strength of the first.
#[test]
fn every_arrival_stamps_its_chunk_even_after_other_stamps_in_the_same_tick() {
    let mut world = World::new();
    world.set_change_tick(3);
    let first = world.spawn((1u32, 1u8));
    let second = world.spawn((2u32,));
    let third = world.spawn((3u32,));
    let (arch, chunk, _) = world.entity_location(first).unwrap();
    let stamps = |world: &World| {
        let a = world.archetype(arch);
        (
            a.changed_tick(chunk, 0),
            a.changed_tick(chunk, 1),
            a.added_tick(chunk, 1),
        )
    };
    // A move into the chunk (insert), after a manual mark at another tick.
    world.archetype(arch).mark_changed(chunk, 0, 9);
    world.insert(second, (2u8,)).unwrap();
    assert_eq!(stamps(&world), (3, 3, 3));
    // A swap-remove into the hole (remove from a row that is not the last), after a mark of
    // every chunk.
    world.archetype(arch).mark_all_changed(1, 9);
    world.remove::<(u8,)>(first).unwrap();
    assert_eq!(stamps(&world), (3, 3, 3));
    // Write access at a later tick, then the tick set back and another row arriving.
    world.set_change_tick(7);
    *world.get_mut::<u32>(second).unwrap() += 1;
    world.set_change_tick(3);
    world.insert(third, (3u8,)).unwrap();
    assert_eq!(stamps(&world), (3, 3, 3));
}
