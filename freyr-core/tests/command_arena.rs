//! The bundles a command buffer holds are dropped exactly once whichever way they leave it:
//! applied, skipped (stale target), cleared, dropped with the buffer, or moved by `append`;
//! over-aligned and zero-sized bundles included. Sized for Miri.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr_core::{CommandBuffer, World};

const N: usize = if cfg!(miri) { 20 } else { 300 };

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Over-aligned: the arena must raise its alignment to hold it.
#[repr(align(64))]
struct Wide {
    value: u64,
    _counted: Counted,
}

/// Zero-sized, with a `Drop` that counts.
struct Tag;

static TAGS: AtomicUsize = AtomicUsize::new(0);

impl Drop for Tag {
    fn drop(&mut self) {
        TAGS.fetch_add(1, Ordering::SeqCst);
    }
}

/// Records `N` spawns of each bundle shape (counted values, strings, over-aligned, tags) and
/// as many inserts into the pending handles.
fn fill(commands: &mut CommandBuffer, dropped: &Arc<AtomicUsize>) {
    for i in 0..N {
        let e = commands.spawn((Counted(dropped.clone()), format!("entity {i}")));
        let wide = Wide {
            value: i as u64,
            _counted: Counted(dropped.clone()),
        };
        commands.insert(e, (wide,));
        commands.insert(e, (Tag,));
    }
}

#[test]
fn clear_and_drop_drop_every_recorded_bundle_once() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let tags = TAGS.load(Ordering::SeqCst);
    let mut commands = CommandBuffer::new();
    fill(&mut commands, &dropped);
    commands.clear();
    assert_eq!(dropped.load(Ordering::SeqCst), 2 * N);
    assert!(commands.is_empty());
    fill(&mut commands, &dropped);
    drop(commands);
    assert_eq!(dropped.load(Ordering::SeqCst), 4 * N);
    assert!(TAGS.load(Ordering::SeqCst) - tags >= 2 * N);
}

#[test]
fn applied_and_appended_bundles_arrive_intact_and_stale_ones_are_dropped() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let mut a = CommandBuffer::new();
    let mut b = CommandBuffer::new();
    a.spawn((7u8,)); // a 1-byte bundle first: b's 64-aligned ones must land aligned after it
    fill(&mut b, &dropped);
    let gone = world.spawn(());
    world.despawn(gone).unwrap();
    b.insert(gone, (Counted(dropped.clone()),)); // stale: dropped at apply
    a.append(&mut b);
    assert!(b.is_empty());
    drop(b);
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        0,
        "append moves, drops nothing"
    );
    let report = a.apply(&mut world);
    assert_eq!(report.spawned.len(), N + 1);
    assert_eq!(report.skipped_stale, 1);
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "only the stale insert's bundle"
    );
    for (i, &e) in report.spawned[1..].iter().enumerate() {
        assert_eq!(world.get::<String>(e), Ok(&format!("entity {i}")));
        let wide = world.get::<Wide>(e).unwrap();
        assert_eq!(wide.value, i as u64);
        assert_eq!(wide as *const Wide as usize % 64, 0);
        assert!(world.get::<Tag>(e).is_ok());
    }
    world.clear();
    assert_eq!(dropped.load(Ordering::SeqCst), 1 + 2 * N);
}
