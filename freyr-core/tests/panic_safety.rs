//! A panic in a component's `Drop` or in a `spawn_batch` iterator, or a bundle with a repeated
//! component type, leaves the world valid: no double drop, no leaked slot, `len` right.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr_core::{CHUNK_CAPACITY, CommandBuffer, World};

/// Counts its drops; panics on drop when `bomb` is set.
struct Tracked {
    drops: Arc<AtomicUsize>,
    bomb: bool,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.bomb {
            panic!("bomb in Drop");
        }
    }
}

/// A second tracked type, to have several droppable columns.
struct Other(Arc<AtomicUsize>);
impl Drop for Other {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

fn tracked(drops: &Arc<AtomicUsize>, bomb: bool) -> Tracked {
    Tracked {
        drops: drops.clone(),
        bomb,
    }
}

const N: usize = if cfg!(miri) { 20 } else { CHUNK_CAPACITY + 20 };

#[test]
fn panicking_drop_on_despawn_still_removes_the_entity() {
    let (drops, others) = (counter(), counter());
    let mut world = World::new();
    let ids: Vec<_> = (0..N)
        .map(|i| world.spawn((tracked(&drops, i == 3), Other(others.clone()), i)))
        .collect();
    let result = catch_unwind(AssertUnwindSafe(|| world.despawn(ids[3])));
    assert!(result.is_err());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(
        others.load(Ordering::SeqCst),
        1,
        "the other column was still dropped"
    );
    assert!(!world.contains(ids[3]));
    assert_eq!(world.len(), N - 1);
    world.check_invariants();
    // The last entity moved into the hole and is intact.
    assert_eq!(world.get::<usize>(ids[N - 1]), Ok(&(N - 1)));
    drop(world);
    assert_eq!(drops.load(Ordering::SeqCst), N);
    assert_eq!(others.load(Ordering::SeqCst), N);
}

#[test]
fn panicking_drop_on_overwrite_completes_the_insert() {
    let drops = counter();
    let others = counter();
    let mut world = World::new();
    let e = world.spawn((tracked(&drops, true), 1u8));
    let result = catch_unwind(AssertUnwindSafe(|| {
        world.insert(e, (tracked(&drops, false), Other(others.clone())))
    }));
    assert!(result.is_err());
    assert_eq!(drops.load(Ordering::SeqCst), 1, "old value dropped once");
    assert!(world.get::<Tracked>(e).is_ok_and(|t| !t.bomb));
    assert!(world.get::<Other>(e).is_ok());
    assert_eq!(world.get::<u8>(e), Ok(&1));
    world.check_invariants();
    // Same archetype (pure overwrite) path.
    let f = world.spawn((tracked(&drops, true),));
    let result = catch_unwind(AssertUnwindSafe(|| {
        world.insert(f, (tracked(&drops, false),))
    }));
    assert!(result.is_err());
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    world.check_invariants();
    drop(world);
    assert_eq!(drops.load(Ordering::SeqCst), 4);
    assert_eq!(others.load(Ordering::SeqCst), 1);
}

#[test]
fn panicking_drop_on_clear_empties_the_archetype() {
    let (drops, others) = (counter(), counter());
    let mut world = World::new();
    let ids: Vec<_> = (0..N)
        .map(|i| world.spawn((tracked(&drops, i == 1), Other(others.clone()))))
        .collect();
    let result = catch_unwind(AssertUnwindSafe(|| world.clear()));
    assert!(result.is_err());
    assert_eq!(drops.load(Ordering::SeqCst), N);
    assert_eq!(others.load(Ordering::SeqCst), N);
    assert!(world.is_empty());
    assert!(ids.iter().all(|&e| !world.contains(e)));
    world.check_invariants();
    let again = world.spawn((tracked(&drops, false), Other(others.clone())));
    assert!(world.contains(again));
}

#[test]
fn panicking_drop_on_world_drop_drops_everything_else() {
    let (drops, others) = (counter(), counter());
    let mut world = World::new();
    for i in 0..N {
        world.spawn((tracked(&drops, i == 0), Other(others.clone())));
    }
    world.spawn((Other(others.clone()),));
    assert!(catch_unwind(AssertUnwindSafe(move || drop(world))).is_err());
    assert_eq!(drops.load(Ordering::SeqCst), N);
    assert_eq!(others.load(Ordering::SeqCst), N + 1);
}

#[test]
fn panicking_drop_during_command_apply_applies_the_rest_and_leaves_world_and_buffer_valid() {
    let (drops, others) = (counter(), counter());
    let mut world = World::new();
    let e = world.spawn((tracked(&drops, true),));
    let mut commands = CommandBuffer::new();
    commands.remove::<(Tracked,)>(e);
    commands.spawn((Other(others.clone()),));
    assert!(catch_unwind(AssertUnwindSafe(|| commands.apply(&mut world))).is_err());
    assert!(commands.is_empty());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(
        world.len(),
        2,
        "the spawn after the panicking removal was applied"
    );
    assert_eq!(
        others.load(Ordering::SeqCst),
        0,
        "its value lives in the world"
    );
    world.check_invariants();
    drop(world);
    assert_eq!(others.load(Ordering::SeqCst), 1);
}

#[test]
fn panicking_batch_iterator_keeps_the_spawned_prefix() {
    let drops = counter();
    let mut world = World::new();
    let before = world.spawn((tracked(&drops, false),));
    let stop = if cfg!(miri) { 10 } else { CHUNK_CAPACITY + 10 };
    let d = drops.clone();
    let result = catch_unwind(AssertUnwindSafe(|| {
        world.spawn_batch((0..stop + 5).map(|i| {
            assert!(i != stop, "iterator panics");
            (tracked(&d, false),)
        }))
    }));
    assert!(result.is_err());
    assert_eq!(world.len(), stop + 1);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    world.check_invariants();
    assert!(world.contains(before));
    let more = world.spawn_batch((0..3).map(|_| (tracked(&drops, false),)));
    assert_eq!(world.len(), stop + 4);
    assert!(more.iter().all(|&e| world.contains(e)));
    drop(world);
    assert_eq!(drops.load(Ordering::SeqCst), stop + 4);
}

#[test]
fn repeated_component_type_panics_before_any_change() {
    let mut world = World::new();
    let e = world.spawn((1u8,));
    let check = |world: &World| {
        assert_eq!(world.len(), 1);
        assert_eq!(world.archetypes().len(), 2);
        assert_eq!(world.component_id::<u16>(), None);
        world.check_invariants();
    };
    let message = |r: std::thread::Result<()>| -> String {
        let payload = r.unwrap_err();
        payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default()
    };
    let m = message(catch_unwind(AssertUnwindSafe(|| {
        world.spawn((2u16, 3u16));
    })));
    assert!(
        m.contains("contains component type `u16` more than once"),
        "{m}"
    );
    check(&world);
    let m = message(catch_unwind(AssertUnwindSafe(|| {
        let _ = world.insert(e, (2u16, 1u8, 3u16));
    })));
    assert!(m.contains("`u16` more than once"), "{m}");
    check(&world);
    let m = message(catch_unwind(AssertUnwindSafe(|| {
        let _ = world.remove::<(u16, u16)>(e);
    })));
    assert!(m.contains("`u16` more than once"), "{m}");
    check(&world);
    let m = message(catch_unwind(AssertUnwindSafe(|| {
        world.spawn_batch([(1u16, 2u16)]);
    })));
    assert!(m.contains("`u16` more than once"), "{m}");
    check(&world);
    let mut commands = CommandBuffer::new();
    let m = message(catch_unwind(AssertUnwindSafe(|| {
        commands.spawn((1u16, 2u16));
    })));
    assert!(m.contains("`u16` more than once"), "{m}");
    assert!(commands.is_empty());
    check(&world);
}
