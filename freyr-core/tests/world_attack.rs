//! A hostile user of the `World` API against its documented contracts: forged, stale and
//! foreign handles; zero-sized, over-aligned and huge components; empty bundles and batches;
//! batch iterators that lie about their size or panic; panicking `Drop`s in every place a value
//! is dropped. After every caught panic the world must pass `check_invariants`, and every value
//! must be dropped exactly once (counted).

mod world_attack_support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use world_attack_support::{Counted, counter};

use freyr_core::{CHUNK_CAPACITY, CommandBuffer, ComponentError, Entity, NoSuchEntity, World};

/// Counts its drops; panics on drop when `armed`.
struct Bomb {
    armed: bool,
    drops: Arc<AtomicUsize>,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.armed {
            panic!("bomb in Drop");
        }
    }
}

fn bomb(drops: &Arc<AtomicUsize>, armed: bool) -> Bomb {
    Bomb {
        armed,
        drops: drops.clone(),
    }
}

fn load(c: &Arc<AtomicUsize>) -> usize {
    c.load(Ordering::SeqCst)
}

/// Zero-sized tags with drop glue, one drop counter per `N` (each test uses its own `N`).
static TAG_DROPS: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];

struct Tag<const N: usize>;

impl<const N: usize> Drop for Tag<N> {
    fn drop(&mut self) {
        TAG_DROPS[N].fetch_add(1, Ordering::SeqCst);
    }
}

fn tag_drops(n: usize) -> usize {
    TAG_DROPS[n].load(Ordering::SeqCst)
}

/// A zero-sized tag whose drop panics; counts into `TAG_DROPS[3]`.
struct ZeroBomb;

impl Drop for ZeroBomb {
    fn drop(&mut self) {
        TAG_DROPS[3].fetch_add(1, Ordering::SeqCst);
        panic!("zero-sized bomb");
    }
}

const N: usize = if cfg!(miri) { 70 } else { CHUNK_CAPACITY + 20 };

#[test]
fn forged_stale_and_foreign_handles_are_errors_that_change_nothing() {
    let mut world = World::new();
    let ids: Vec<Entity> = (0..10u32).map(|i| world.spawn((i,))).collect();
    world.despawn(ids[4]).unwrap();
    let reused = world.spawn((44u32,));
    assert_eq!(reused.index(), ids[4].index());
    let mut other = World::new();
    let foreign: Vec<Entity> = (0..20u32).map(|i| other.spawn((i, 1u8))).collect();

    assert_eq!(Entity::from_bits(0), None);
    assert_eq!(Entity::from_bits(u32::MAX as u64), None);
    let mut forged = vec![
        ids[4],
        Entity::from_bits(u64::MAX).unwrap(),
        Entity::from_bits(1 << 32 | u32::MAX as u64).unwrap(),
        // The live index with a generation from the future, and one with the pending bit.
        Entity::from_bits(u64::from(reused.generation() + 1) << 32 | u64::from(reused.index()))
            .unwrap(),
        Entity::from_bits(u64::from(reused.generation() | 1 << 31) << 32 | 3).unwrap(),
        Entity::from_bits(0x7FFF_FFFF << 32 | 2).unwrap(),
    ];
    // Another world's handles past this world's indices.
    forged.extend_from_slice(&foreign[10..]);
    let archetypes = world.archetypes().len();
    let before: Vec<_> = ids[..4].iter().map(|&e| world.entity_location(e)).collect();
    for &e in &forged {
        assert!(!world.contains(e), "{e:?}");
        assert_eq!(world.entity_location(e), None);
        assert_eq!(world.get::<u32>(e), Err(ComponentError::NoSuchEntity(e)));
        assert_eq!(
            world.get_mut::<u32>(e),
            Err(ComponentError::NoSuchEntity(e))
        );
        assert_eq!(world.insert(e, (1u16,)), Err(NoSuchEntity(e)));
        assert_eq!(world.insert(e, ()), Err(NoSuchEntity(e)));
        assert_eq!(
            world.remove::<(u32,)>(e),
            Err(ComponentError::NoSuchEntity(e))
        );
        assert_eq!(world.remove::<()>(e), Err(ComponentError::NoSuchEntity(e)));
        assert_eq!(world.despawn(e), Err(NoSuchEntity(e)));
    }
    let mut commands = CommandBuffer::new();
    for &e in &forged {
        commands.insert(e, (2u16,));
        commands.remove::<(u32,)>(e);
        commands.despawn(e);
    }
    let report = commands.apply(&mut world);
    assert_eq!(
        (report.applied, report.skipped_stale),
        (0, 3 * forged.len())
    );
    assert_eq!(world.len(), 10);
    assert_eq!(
        world.archetypes().len(),
        archetypes,
        "no archetype made for a stale target"
    );
    let after: Vec<_> = ids[..4].iter().map(|&e| world.entity_location(e)).collect();
    assert_eq!(before, after);
    assert_eq!(world.get::<u32>(reused), Ok(&44));
    world.check_invariants();
    other.check_invariants();
}

#[test]
fn zero_sized_components_with_drop_glue_are_dropped_exactly_once() {
    const T: usize = 0;
    let mut world = World::new();
    let ids: Vec<Entity> = (0..N).map(|i| world.spawn((Tag::<T>, i))).collect();
    let batch = world.spawn_batch((0..N).map(|i| (Tag::<T>, i)));
    assert_eq!(tag_drops(T), 0);
    // Overwrite in place: the old tag is dropped, the new one kept.
    world.insert(ids[0], (Tag::<T>,)).unwrap();
    assert_eq!(tag_drops(T), 1);
    // Overwrite while moving to another archetype.
    world.insert(ids[1], (Tag::<T>, 1u8)).unwrap();
    assert_eq!(tag_drops(T), 2);
    // Removed: handed back, dropped by the caller.
    let (tag,) = world.remove::<(Tag<T>,)>(ids[2]).unwrap();
    assert_eq!(tag_drops(T), 2);
    drop(tag);
    assert_eq!(tag_drops(T), 3);
    assert!(world.get::<Tag<T>>(ids[2]).is_err());
    world.despawn(ids[3]).unwrap();
    assert_eq!(tag_drops(T), 4);
    // Moves of rows carrying tags (swap-remove fills the hole from the last row).
    for &e in &batch[..N / 2] {
        world.despawn(e).unwrap();
    }
    assert_eq!(tag_drops(T), 4 + N / 2);
    for &e in &ids[4..] {
        assert!(world.get::<Tag<T>>(e).is_ok());
    }
    world.check_invariants();
    let live_tags = 2 * N - 2 - N / 2;
    world.clear();
    assert_eq!(tag_drops(T), 4 + N / 2 + live_tags);
    let last = world.spawn((Tag::<T>,));
    drop(world);
    assert_eq!(tag_drops(T), 5 + N / 2 + live_tags);
    let _ = last;
}

#[test]
fn a_zero_sized_panicking_drop_on_despawn_and_overwrite_leaves_the_world_valid() {
    const T: usize = 1;
    let drops = counter();
    let mut world = World::new();
    let ids: Vec<Entity> = (0..N)
        .map(|i| world.spawn((Tag::<T>, Counted(drops.clone()), i)))
        .collect();
    let target = world.spawn((ZeroBomb, Tag::<T>, Counted(drops.clone()), 7usize));
    assert!(catch_unwind(AssertUnwindSafe(|| world.despawn(target))).is_err());
    assert_eq!((tag_drops(3), tag_drops(T), load(&drops)), (1, 1, 1));
    assert!(!world.contains(target));
    world.check_invariants();
    // An overwriting insert of a panicking zero-sized value: the insert completes.
    let e = world.spawn((ZeroBomb, 3u8));
    let result = catch_unwind(AssertUnwindSafe(|| {
        world.insert(e, (Tag::<T>, ZeroBomb, 4u8))
    }));
    assert!(result.is_err());
    assert_eq!(tag_drops(3), 2, "the old ZeroBomb dropped once");
    assert_eq!(world.get::<u8>(e), Ok(&4));
    assert!(world.get::<Tag<T>>(e).is_ok());
    world.check_invariants();
    // The new ZeroBomb lives in `e`; take it out and forget it so the world drops cleanly.
    let (zero,) = world.remove::<(ZeroBomb,)>(e).unwrap();
    core::mem::forget(zero);
    for (i, &id) in ids.iter().enumerate() {
        assert_eq!(world.get::<usize>(id), Ok(&i));
    }
    drop(world);
    assert_eq!(tag_drops(T), N + 2);
    assert_eq!(load(&drops), N + 1);
}

#[repr(C, align(4096))]
struct Page(u64, Counted);

#[repr(align(4096))]
struct PageTag;

#[test]
fn page_aligned_values_stay_aligned_and_intact_through_every_move() {
    let drops = counter();
    let mut world = World::new();
    let page = |i: usize| Page(i as u64 * 3, Counted(drops.clone()));
    let ids: Vec<Entity> = (0..N).map(|i| world.spawn((page(i), i as u32))).collect();
    let aligned = |world: &World, e: Entity| {
        let p = world.get::<Page>(e).unwrap();
        assert_eq!(p as *const Page as usize % 4096, 0);
        let t = world
            .get::<PageTag>(e)
            .map(|t| t as *const PageTag as usize % 4096);
        assert!(t.is_err() || t == Ok(0));
        p.0
    };
    // Rows move between archetypes of different layouts, across slabs of several chunks.
    for round in 0..3 {
        for (i, &e) in ids.iter().enumerate() {
            if (i + round) % 2 == 0 {
                world.insert(e, (PageTag, 1u8)).unwrap();
            } else if world.get::<PageTag>(e).is_ok() {
                world.remove::<(PageTag, u8)>(e).unwrap();
            }
        }
        for (i, &e) in ids.iter().enumerate() {
            assert_eq!(aligned(&world, e), i as u64 * 3);
        }
        world.check_invariants();
    }
    // A swap-remove from a page-aligned archetype, and an overwrite of a page-aligned value.
    world.despawn(ids[0]).unwrap();
    world.insert(ids[1], (page(1000),)).unwrap();
    assert_eq!(load(&drops), 2);
    assert_eq!(aligned(&world, ids[1]), 3000);
    let (taken,) = world.remove::<(Page,)>(ids[2]).unwrap();
    assert_eq!((taken.0, &taken as *const Page as usize % 4096), (6, 0));
    drop(taken);
    for (i, &e) in ids.iter().enumerate().skip(3) {
        assert_eq!(aligned(&world, e), i as u64 * 3);
    }
    world.check_invariants();
    drop(world);
    assert_eq!(load(&drops), N + 1);
}

/// 64 KiB: a one-chunk slab of it is 32 MiB, over the 16 MiB slab cap (4 MiB under Miri).
struct Huge([u64; 8192]);

#[test]
fn huge_components_get_one_chunk_per_slab_and_survive_moves() {
    let count = CHUNK_CAPACITY + 2;
    let mut world = World::new();
    let ids: Vec<Entity> = (0..count)
        .map(|i| world.spawn((Huge([i as u64; 8192]), i as u16)))
        .collect();
    let (arch, _, _) = world.entity_location(ids[0]).unwrap();
    let archetype = world.archetype(arch);
    assert_eq!(archetype.chunk_count(), 2);
    if !cfg!(miri) {
        // A one-chunk slab is past the slab size cap: no slab holds two chunks.
        assert_eq!(archetype.allocated_slabs(), archetype.allocated_chunks());
    }
    let check = |world: &World, e: Entity, i: usize| {
        let h = world.get::<Huge>(e).unwrap();
        assert!(h.0[0] == i as u64 && h.0[8191] == i as u64);
    };
    world.insert(ids[5], (1u8,)).unwrap();
    world.despawn(ids[0]).unwrap();
    let (moved,) = world.remove::<(Huge,)>(ids[1]).unwrap();
    assert_eq!((moved.0[0], moved.0[8191]), (1, 1));
    for (i, &e) in ids.iter().enumerate().skip(2) {
        check(&world, e, i);
    }
    world.check_invariants();
}

#[test]
fn empty_bundles_and_empty_batches_are_harmless() {
    let mut world = World::new();
    assert!(world.spawn_batch(std::iter::empty::<(u8,)>()).is_empty());
    assert!(world.spawn_batch(Vec::<()>::new()).is_empty());
    assert!(world.is_empty());
    let empty = world.spawn(());
    let tags = world.spawn_batch((0..N).map(|_| ()));
    assert_eq!(world.len(), N + 1);
    let e = world.spawn((5u8,));
    let at = world.entity_location(e);
    world.insert(e, ()).unwrap();
    assert_eq!(world.remove::<()>(e), Ok(()));
    assert_eq!(
        world.entity_location(e),
        at,
        "an empty bundle moves nothing"
    );
    world.insert(empty, (1u8,)).unwrap();
    assert_eq!(world.remove::<(u8,)>(empty), Ok((1,)));
    assert_eq!(world.entity_location(empty).unwrap().0.index(), 0);
    for &t in &tags {
        world.despawn(t).unwrap();
    }
    world.reserve::<()>(0);
    world.reserve::<(u8,)>(0);
    assert_eq!(world.len(), 2);
    world.check_invariants();
}

/// An iterator that reports `hint` as its size but yields `len` items.
struct Liar {
    next: usize,
    len: usize,
    hint: (usize, Option<usize>),
    drops: Arc<AtomicUsize>,
}

impl Iterator for Liar {
    type Item = (Counted, usize);
    fn next(&mut self) -> Option<Self::Item> {
        (self.next < self.len).then(|| {
            self.next += 1;
            (Counted(self.drops.clone()), self.next - 1)
        })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.hint
    }
}

#[test]
fn batches_whose_size_hint_lies_spawn_exactly_what_they_yield() {
    let drops = counter();
    let mut world = World::new();
    let mut spawned = Vec::new();
    let lies = [
        (3, (2 * CHUNK_CAPACITY, Some(2 * CHUNK_CAPACITY))),
        (CHUNK_CAPACITY + 5, (0, Some(0))),
        (CHUNK_CAPACITY, (1, Some(1))),
        (7, (10, Some(2))),
        (0, (5, Some(5))),
        (9, (1000, None)),
    ];
    for (len, hint) in lies {
        let next = world.next_spawn_ids(len);
        let ids = world.spawn_batch(Liar {
            next: 0,
            len,
            hint,
            drops: drops.clone(),
        });
        assert_eq!(ids, next, "ids as repeated spawns give, for {hint:?}");
        for (i, &e) in ids.iter().enumerate() {
            assert_eq!(world.get::<usize>(e), Ok(&i));
        }
        world.check_invariants();
        spawned.extend(ids);
    }
    assert_eq!(world.len(), spawned.len());
    assert_eq!(load(&drops), 0);
    for &e in spawned.iter().step_by(2) {
        world.despawn(e).unwrap();
    }
    world.check_invariants();
    let despawned = spawned.len().div_ceil(2);
    assert_eq!(load(&drops), despawned);
    drop(world);
    assert_eq!(load(&drops), spawned.len());
}

#[test]
fn a_batch_iterator_panicking_first_or_on_a_chunk_boundary_leaves_no_chunk_behind() {
    let drops = counter();
    for stop in [0, CHUNK_CAPACITY] {
        let mut world = World::new();
        let d = drops.clone();
        let result = catch_unwind(AssertUnwindSafe(|| {
            // Lower bound 0 (a lower bound past the index space panics before spawning).
            world.spawn_batch((0usize..).take_while(|_| true).map(|i| {
                assert!(i != stop, "iterator panics");
                (Counted(d.clone()), i)
            }))
        }));
        let payload = result.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"iterator panics"));
        assert_eq!(world.len(), stop);
        assert_eq!(load(&drops), 0);
        world.check_invariants();
        let arch = world.archetypes().last().unwrap();
        assert_eq!(arch.len(), stop);
        assert_eq!(
            arch.allocated_chunks(),
            stop / CHUNK_CAPACITY,
            "no empty chunk made for an item that never came"
        );
        let more = world.spawn((Counted(drops.clone()), 1usize));
        assert_eq!(world.get::<usize>(more), Ok(&1));
        drop(world);
        assert_eq!(load(&drops), stop + 1);
        drops.store(0, Ordering::SeqCst);
    }
}

#[test]
fn repeated_types_drop_the_refused_values_once_and_leave_the_world_valid() {
    let drops = counter();
    let mut world = World::new();
    let e = world.spawn((1u8,));
    let count = world.archetypes().len();
    let c = || Counted(drops.clone());
    assert!(catch_unwind(AssertUnwindSafe(|| world.spawn((c(), 1u8, c())))).is_err());
    assert_eq!(load(&drops), 2);
    assert!(catch_unwind(AssertUnwindSafe(|| world.insert(e, (c(), c())))).is_err());
    assert_eq!(load(&drops), 4);
    let items = vec![(c(), c()), (c(), c())];
    assert!(catch_unwind(AssertUnwindSafe(|| world.spawn_batch(items))).is_err());
    assert_eq!(load(&drops), 8, "the batch's unread items are dropped");
    assert!(catch_unwind(AssertUnwindSafe(|| world.reserve::<(u8, u16, u8)>(10))).is_err());
    assert_eq!((world.len(), world.archetypes().len()), (1, count));
    assert_eq!(world.get::<u8>(e), Ok(&1));
    world.check_invariants();
}

#[test]
fn toggling_components_thousands_of_times_keeps_archetypes_and_chunks_bounded() {
    let rounds = if cfg!(miri) { 50 } else { 3000 };
    let mut world = World::new();
    let ids: Vec<Entity> = (0..N as u32).map(|i| world.spawn((i,))).collect();
    let mut archetypes = 0;
    for round in 0..rounds {
        let e = ids[round % ids.len()];
        world.insert(e, (round as u64, 1u8)).unwrap();
        world.insert(e, (2u16,)).unwrap();
        assert_eq!(world.remove::<(u64, u8)>(e), Ok((round as u64, 1)));
        world.remove::<(u16,)>(e).unwrap();
        if round == 1 {
            archetypes = world.archetypes().len();
        }
    }
    assert_eq!(world.archetypes().len(), archetypes);
    for (i, &e) in ids.iter().enumerate() {
        assert_eq!(world.get::<u32>(e), Ok(&(i as u32)));
    }
    let chunks: usize = world
        .archetypes()
        .iter()
        .map(|a| a.allocated_chunks())
        .sum();
    assert!(chunks <= archetypes * 32 + 2, "{chunks} chunks kept");
    world.check_invariants();
}

#[test]
fn an_overwrite_whose_first_old_value_panics_still_drops_the_second() {
    let (bombs, counted) = (counter(), counter());
    let mut world = World::new();
    let same = world.spawn((bomb(&bombs, true), Counted(counted.clone())));
    let moving = world.spawn((bomb(&bombs, true), Counted(counted.clone()), 1u8));
    let new = |armed| (bomb(&bombs, armed), Counted(counted.clone()));
    // In place.
    assert!(catch_unwind(AssertUnwindSafe(|| world.insert(same, new(false)))).is_err());
    assert_eq!((load(&bombs), load(&counted)), (1, 1));
    // Moving to another archetype (a new component joins).
    let (b, c) = new(false);
    let r = catch_unwind(AssertUnwindSafe(|| world.insert(moving, (b, c, 2u16))));
    assert!(r.is_err());
    assert_eq!((load(&bombs), load(&counted)), (2, 2));
    assert_eq!(world.get::<u16>(moving), Ok(&2));
    assert_eq!(world.get::<u8>(moving), Ok(&1));
    assert!(world.get::<Bomb>(same).is_ok_and(|b| !b.armed));
    world.check_invariants();
    drop(world);
    assert_eq!((load(&bombs), load(&counted)), (4, 4));
}

#[test]
fn clear_stops_at_a_panicking_archetype_and_a_second_clear_finishes() {
    let (bombs, counted) = (counter(), counter());
    let mut world = World::new();
    let first: Vec<Entity> = (0..N)
        .map(|_| world.spawn((Counted(counted.clone()),)))
        .collect();
    let bombs_at: Vec<Entity> = (0..N)
        .map(|i| world.spawn((bomb(&bombs, i == N / 2), 0u8)))
        .collect();
    let last: Vec<Entity> = (0..N)
        .map(|_| world.spawn((Counted(counted.clone()), 0u16)))
        .collect();
    assert!(catch_unwind(AssertUnwindSafe(|| world.clear())).is_err());
    assert_eq!((load(&bombs), load(&counted)), (N, N));
    assert!(first.iter().chain(&bombs_at).all(|&e| !world.contains(e)));
    assert!(last.iter().all(|&e| world.contains(e)), "not reached yet");
    assert_eq!(world.len(), N);
    world.check_invariants();
    let again = world.spawn((bomb(&bombs, false), 1u8));
    assert_eq!(world.get::<u8>(again), Ok(&1));
    world.clear();
    assert_eq!((load(&bombs), load(&counted)), (N + 1, 2 * N));
    assert!(world.is_empty());
    world.check_invariants();
}

/// Yields `len` items; panics in `size_hint` or in its own `Drop` as told.
struct Grumpy {
    left: usize,
    panic_in_hint: bool,
    panic_in_drop: bool,
    drops: Arc<AtomicUsize>,
}

impl Iterator for Grumpy {
    type Item = (Counted, u64);
    fn next(&mut self) -> Option<Self::Item> {
        self.left = self.left.checked_sub(1)?;
        Some((Counted(self.drops.clone()), self.left as u64))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        assert!(!self.panic_in_hint, "size_hint panics");
        (self.left, Some(self.left))
    }
}

impl Drop for Grumpy {
    fn drop(&mut self) {
        assert!(!self.panic_in_drop, "iterator drop panics");
    }
}

#[test]
fn a_batch_iterator_panicking_in_size_hint_or_in_its_drop_leaves_the_world_valid() {
    let drops = counter();
    let mut world = World::new();
    let grumpy = |panic_in_hint, panic_in_drop| Grumpy {
        left: N,
        panic_in_hint,
        panic_in_drop,
        drops: drops.clone(),
    };
    let r = catch_unwind(AssertUnwindSafe(|| world.spawn_batch(grumpy(true, false))));
    assert!(r.is_err());
    assert!(world.is_empty());
    world.check_invariants();
    // Every item is spawned before the iterator is dropped: they stay.
    let r = catch_unwind(AssertUnwindSafe(|| world.spawn_batch(grumpy(false, true))));
    assert!(r.is_err());
    assert_eq!(world.len(), N);
    world.check_invariants();
    let ids = world.next_spawn_ids(1);
    assert_eq!(world.spawn((Counted(drops.clone()), 5u64)), ids[0]);
    assert_eq!(load(&drops), 0);
    drop(world);
    assert_eq!(load(&drops), N + 1);
}
