//! `CommandBuffer::apply` loses nothing when a command panics (a component's `Drop`): every
//! remaining command is applied, the first panic is re-raised afterwards, every value is dropped
//! exactly once. And a pending handle from an earlier use of a buffer, or from another buffer,
//! stays stale forever. Sized for Miri (`cargo +nightly miri test -p freyr-core --test
//! command_panics`).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr_core::{CommandBuffer, Entity, World};

const N: usize = if cfg!(miri) { 30 } else { 1000 };

/// Counts its drops; panics on drop when `armed`.
struct Bomb {
    armed: bool,
    dropped: Arc<AtomicUsize>,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.dropped.fetch_add(1, Ordering::SeqCst);
        if self.armed {
            panic!("bomb {}", self.dropped.load(Ordering::SeqCst));
        }
    }
}

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

#[test]
fn apply_runs_every_command_after_a_panicking_drop_and_reraises_the_first() {
    let (bombs, counted) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut world = World::new();
    let targets: Vec<Entity> = (0..N)
        .map(|i| {
            world.spawn((Bomb {
                armed: i % 3 == 1,
                dropped: bombs.clone(),
            },))
        })
        .collect();
    let keep = world.spawn((1u8,));
    let mut commands = CommandBuffer::new();
    for (i, &e) in targets.iter().enumerate() {
        commands.despawn(e);
        let pending = commands.spawn((i as u32,));
        commands.insert(pending, (Counted(counted.clone()),));
        commands.insert(keep, (Counted(counted.clone()),)); // replaces: drops the old value
    }
    let payload = catch_unwind(AssertUnwindSafe(|| commands.apply(&mut world))).unwrap_err();
    // Bomb 1 (the second despawned) panicked first.
    assert_eq!(message(&*payload), "bomb 2");
    assert!(commands.is_empty());
    assert!(
        targets.iter().all(|&e| !world.contains(e)),
        "every despawn applied"
    );
    assert_eq!(bombs.load(Ordering::SeqCst), N);
    assert_eq!(world.len(), N + 1, "every spawn applied");
    let mut spawned = 0;
    for archetype in world.archetypes() {
        let (Some(u), Some(_)) = (world.component_id::<u32>(), world.component_id::<Counted>())
        else {
            continue;
        };
        if archetype.has(u) {
            spawned += archetype.len();
        }
    }
    assert_eq!(spawned, N, "every insert into a pending handle applied");
    // N spawned values and 1 on `keep` live; the N - 1 replaced on `keep` were dropped.
    assert_eq!(counted.load(Ordering::SeqCst), N - 1);
    world.check_invariants();
    drop(world);
    assert_eq!(
        counted.load(Ordering::SeqCst),
        2 * N,
        "each value dropped exactly once"
    );
}

#[test]
fn try_apply_returns_the_first_panic_with_the_report() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let bombs: Vec<Entity> = (0..3)
        .map(|_| {
            world.spawn((Bomb {
                armed: true,
                dropped: dropped.clone(),
            },))
        })
        .collect();
    let mut commands = CommandBuffer::new();
    for &e in &bombs {
        commands.despawn(e);
    }
    commands.spawn((5u8,));
    let (report, panic) = commands.try_apply(&mut world);
    assert_eq!(message(&*panic.expect("the first bomb's panic")), "bomb 1");
    // The despawns took effect, but a command that panicked is counted in neither field.
    assert_eq!((report.applied, report.skipped_stale), (1, 0));
    assert_eq!(report.spawned.len(), 1);
    assert_eq!(world.len(), 1);
    assert_eq!(dropped.load(Ordering::SeqCst), 3);
}

#[test]
fn a_pending_handle_from_an_earlier_use_stays_stale() {
    let uses = if cfg!(miri) { 50 } else { 20_000 };
    let mut world = World::new();
    let mut commands = CommandBuffer::new();
    let old = commands.spawn((0u32,));
    let first = commands.apply(&mut world).spawned[0];
    let mut other = CommandBuffer::new();
    let foreign = other.spawn((0u32,));
    for i in 0..uses {
        // Each use spawns as many entities as the first, and targets the old handles.
        commands.spawn((i,));
        commands.insert(old, (1u8,));
        commands.despawn(foreign);
        let report = commands.apply(&mut world);
        assert_eq!((report.applied, report.skipped_stale), (1, 2), "use {i}");
    }
    assert!(world.get::<u8>(first).is_err());
    assert_eq!(world.len(), uses as usize + 1);
}

#[test]
fn appended_handles_resolve_only_through_the_receiving_buffer() {
    let mut world = World::new();
    let (mut a, mut b) = (CommandBuffer::new(), CommandBuffer::new());
    let mine = a.spawn((1u8,));
    let theirs: Vec<Entity> = (0..70).map(|i| b.spawn((i as u32,))).collect();
    for &e in &theirs {
        b.insert(e, (2u16,));
    }
    a.insert(mine, (3u16,));
    a.append(&mut b);
    assert!(b.is_empty());
    // Handles of `b` recorded *after* the append are stale in `a`.
    a.despawn(theirs[0]);
    let report = a.apply(&mut world);
    assert_eq!(report.spawned.len(), 71);
    assert_eq!((report.applied, report.skipped_stale), (71 + 71, 1));
    assert!(report.spawned.iter().all(|&e| world.get::<u16>(e).is_ok()));
}
