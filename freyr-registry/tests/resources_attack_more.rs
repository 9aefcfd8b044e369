//! Hostile uses of resources in snapshots and restores: resources whose `Clone` or `Drop`
//! panics at every point of a snapshot, a restore, a replacement and a registry's drop, restores
//! of snapshots taken before a resource existed and of another registry's.

mod resources_attack_support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use freyr::snapshot::SnapshotError;
use freyr::system::{Query, Res, ResMut};
use freyr::{Phase, Registry};

use resources_attack_support::*;

/// A resource whose `Clone` panics while a snapshot is taken: the panic comes out of
/// `snapshot`, the registry is unchanged, a reused snapshot is left incomplete (a restore of it
/// is refused), and every value made is dropped exactly once.
#[test]
fn a_panicking_resource_clone_fails_the_snapshot_and_changes_nothing() {
    let (one, two) = (Arc::new(Tally::default()), Arc::new(Tally::default()));
    for workers in [1, 4] {
        let mut r = tracked_registry(workers, &one, &two);
        let before = (hash(&r), r.tick(), value::<1>(&r), value::<2>(&r));
        two.clone_fails.store(true, Ordering::SeqCst);
        let err = catch_unwind(AssertUnwindSafe(|| r.snapshot())).unwrap_err();
        assert!(text(err).contains("Tracked<2>::clone fails"));
        // Into a snapshot that held a complete copy: left incomplete, and refused.
        two.clone_fails.store(false, Ordering::SeqCst);
        let mut kept = r.snapshot().unwrap();
        r.resource_mut::<Tracked<1>>().unwrap().value = 10;
        two.clone_fails.store(true, Ordering::SeqCst);
        assert!(catch_unwind(AssertUnwindSafe(|| r.snapshot_into(&mut kept))).is_err());
        two.clone_fails.store(false, Ordering::SeqCst);
        r.resource_mut::<Tracked<1>>().unwrap().value = 1;
        assert_eq!((hash(&r), r.tick(), value::<1>(&r), value::<2>(&r)), before);
        assert_eq!(r.restore(&kept), Err(SnapshotError::Incomplete));
        assert_eq!((hash(&r), r.tick(), value::<1>(&r), value::<2>(&r)), before);
        // A good snapshot afterwards, into the same buffers.
        r.snapshot_into(&mut kept).unwrap();
        r.update(0.0);
        r.insert_resource(Tracked::<1>::new(5, &one));
        r.restore(&kept).unwrap();
        assert_eq!((hash(&r), r.tick(), value::<1>(&r), value::<2>(&r)), before);
        drop(kept);
        drop(r);
    }
    assert!(one.balanced() && two.balanced());
}

/// A resource whose `Clone` panics while a restore copies it out of the snapshot: the registry
/// is unchanged (world, tick, every resource), the snapshot still restores once the `Clone`
/// works, and nothing leaks or drops twice.
#[test]
fn a_panicking_resource_clone_during_a_restore_changes_nothing() {
    let (one, two) = (Arc::new(Tally::default()), Arc::new(Tally::default()));
    for workers in [1, 4] {
        let mut r = tracked_registry(workers, &one, &two);
        let snapshot = r.snapshot().unwrap();
        let at_snapshot = (hash(&r), r.tick(), value::<1>(&r), value::<2>(&r));
        r.add_fn_system(Phase::Update, "move", |mut q: Query<&mut Pos>| {
            q.each(|_, p| p.0 += 3)
        })
        .unwrap();
        r.update(0.0);
        r.update(0.0);
        r.spawn((Pos(1),));
        r.insert_resource(Tracked::<1>::new(50, &one));
        r.insert_resource(Tracked::<2>::new(60, &two));
        let now = (hash(&r), r.tick(), value::<1>(&r), value::<2>(&r));
        for tally in [&one, &two] {
            tally.clone_fails.store(true, Ordering::SeqCst);
            let err = catch_unwind(AssertUnwindSafe(|| r.restore(&snapshot))).unwrap_err();
            assert!(text(err).contains("::clone fails"));
            tally.clone_fails.store(false, Ordering::SeqCst);
            assert_eq!((hash(&r), r.tick(), value::<1>(&r), value::<2>(&r)), now);
            assert_eq!(r.len(), 701);
        }
        r.restore(&snapshot).unwrap();
        assert_eq!(
            (hash(&r), r.tick(), value::<1>(&r), value::<2>(&r)),
            at_snapshot
        );
    }
    assert!(one.balanced() && two.balanced());
}

/// Replaced resources whose `Drop` panics during a restore: the restore re-raises the first
/// panic with the registry fully restored (world, tick, every resource), and every replaced
/// value is dropped exactly once, also when several panic (a second panic must not abort).
#[test]
fn panicking_resource_drops_during_a_restore_leave_it_complete() {
    for both in [false, true] {
        let (one, two) = (Arc::new(Tally::default()), Arc::new(Tally::default()));
        let mut r = tracked_registry(2, &one, &two);
        let snapshot = r.snapshot().unwrap();
        let at_snapshot = (hash(&r), r.tick(), value::<1>(&r), value::<2>(&r));
        r.update(0.0);
        r.spawn((Pos(9),));
        r.insert_resource(Tracked::<1>::new(10, &one));
        r.insert_resource(Tracked::<2>::new(20, &two));
        let drops = (
            one.drops.load(Ordering::SeqCst),
            two.drops.load(Ordering::SeqCst),
        );
        one.drop_fails.store(true, Ordering::SeqCst);
        two.drop_fails.store(both, Ordering::SeqCst);
        let err = catch_unwind(AssertUnwindSafe(|| r.restore(&snapshot))).unwrap_err();
        one.drop_fails.store(false, Ordering::SeqCst);
        two.drop_fails.store(false, Ordering::SeqCst);
        assert!(text(err).contains("::drop fails"));
        assert_eq!(
            (
                one.drops.load(Ordering::SeqCst),
                two.drops.load(Ordering::SeqCst)
            ),
            (drops.0 + 1, drops.1 + 1),
            "each replaced value dropped once"
        );
        assert_eq!(
            (hash(&r), r.tick(), value::<1>(&r), value::<2>(&r)),
            at_snapshot
        );
        // Usable: another round trip.
        r.update(0.0);
        r.restore(&snapshot).unwrap();
        assert_eq!(r.tick(), 0);
        drop(snapshot);
        drop(r);
        assert!(one.balanced() && two.balanced(), "both = {both}");
    }
}

/// A replaced or removed resource is handed back: its panicking `Drop` runs in the caller's
/// hands, not the registry's. A registry dropped with a resource whose `Drop` panics raises it,
/// after dropping its world's values once. (Only one resource is left at the drop: the
/// resource map stops dropping at a panic, so a second one could leak.)
#[test]
fn panicking_resource_drops_on_replace_remove_and_registry_drop() {
    let (one, two) = (Arc::new(Tally::default()), Arc::new(Tally::default()));
    let mut r = tracked_registry(2, &one, &two);
    one.drop_fails.store(true, Ordering::SeqCst);
    let old = r.insert_resource(Tracked::<1>::new(3, &one));
    assert!(catch_unwind(AssertUnwindSafe(|| drop(old))).is_err());
    let old = r.remove_resource::<Tracked<1>>();
    assert!(catch_unwind(AssertUnwindSafe(|| drop(old))).is_err());
    one.drop_fails.store(false, Ordering::SeqCst);
    assert_eq!(value::<1>(&r), None);
    r.insert_resource(Tracked::<1>::new(4, &one));
    r.update(0.0);
    assert!(r.snapshot().is_ok());
    let alive = one.made.load(Ordering::SeqCst) - one.drops.load(Ordering::SeqCst);
    assert_eq!(alive, 1, "only the stored value is alive");

    // Dropping the registry: both resources' `Drop`s panic. Each is dropped on its own (the
    // map's own drop stopped at the first panic and leaked the rest; a second panic within it
    // aborted), along with plain resources the map may hold after them; one panic is re-raised.
    let three = Arc::new(Tally::default());
    r.spawn_batch((0..600).map(|i| (Tracked::<3>::new(i, &three),)));
    let plain = Arc::new(Tally::default());
    r.insert_resource(Tracked::<4>::new(1, &plain));
    r.insert_resource(Tracked::<5>::new(2, &plain));
    r.insert_resource(Tracked::<6>::new(3, &plain));
    one.drop_fails.store(true, Ordering::SeqCst);
    two.drop_fails.store(true, Ordering::SeqCst);
    let err = catch_unwind(AssertUnwindSafe(|| drop(r))).unwrap_err();
    one.drop_fails.store(false, Ordering::SeqCst);
    two.drop_fails.store(false, Ordering::SeqCst);
    assert!(text(err).contains("::drop fails"));
    assert!(one.balanced() && two.balanced() && three.balanced() && plain.balanced());
}

/// A snapshot taken before a resource was inserted, restored: a registered resource is
/// removed (it was absent then), an excluded one keeps its value, and one neither registered
/// nor excluded is left as it is (a restore copies only what snapshots copy), after which the
/// next snapshot names it.
#[test]
fn a_restore_to_before_a_resource_existed() {
    struct Excluded(u32);
    struct Forgotten(u32);
    let (one, two) = (Arc::new(Tally::default()), Arc::new(Tally::default()));
    let mut r = Registry::with_workers(2);
    r.register_snapshot_resource::<Tracked<1>>();
    r.exclude_resource_from_snapshot::<Excluded>();
    r.add_fn_system(
        Phase::Update,
        "uses",
        |t: Option<Res<Tracked<1>>>, mut c: ResMut<Count>| {
            c.0 += t.map_or(1, |t| t.value);
        },
    )
    .unwrap();
    r.insert_resource(Count(0));
    r.register_snapshot_resource::<Count>();
    let snapshot = r.snapshot().unwrap();
    r.insert_resource(Tracked::<1>::new(100, &one));
    r.insert_resource(Excluded(5));
    r.insert_resource(Forgotten(6));
    r.update(0.0);
    assert_eq!(r.resource::<Count>(), Some(&Count(100)));
    r.restore(&snapshot).unwrap();
    assert_eq!(value::<1>(&r), None, "registered: absent at the snapshot");
    assert_eq!(r.resource::<Excluded>().map(|e| e.0), Some(5));
    assert_eq!(r.resource::<Forgotten>().map(|e| e.0), Some(6));
    assert_eq!(r.resource::<Count>(), Some(&Count(0)));
    // The resimulated tick runs without it, as the first run before it was inserted would.
    r.update(0.0);
    assert_eq!(r.resource::<Count>(), Some(&Count(1)));
    let Err(SnapshotError::MissingTypes { resources, .. }) = r.snapshot() else {
        panic!("the forgotten resource is named")
    };
    assert_eq!(resources.len(), 1);
    assert!(resources[0].contains("Forgotten"));
    drop(r);
    assert!(one.balanced() && two.balanced());
}

/// A snapshot of one registry restored into another with other resources: the types both
/// register take the snapshot's values, a type only the target registers is removed, a type
/// only the source registered is inserted and registered, one the target excludes is left
/// alone; function systems of the target then run on the restored resources alike at every
/// worker count.
#[test]
fn a_restore_into_another_registry_with_other_resources() {
    #[derive(Clone, Debug, PartialEq)]
    struct OnlySource(u32);
    #[derive(Clone, Debug, PartialEq)]
    struct OnlyTarget(u32);
    struct Local(u32);
    let mut a = Registry::with_workers(1);
    a.register_snapshot_copy::<Pos>();
    a.register_snapshot_resource::<Count>();
    a.register_snapshot_resource::<OnlySource>();
    a.insert_resource(Count(7));
    a.insert_resource(OnlySource(8));
    a.spawn((Pos(1),));
    let snapshot = a.snapshot().unwrap();
    drop(a);

    let mut results = Vec::new();
    for workers in [1, 3, 8] {
        let mut b = Registry::with_workers(workers);
        b.register_hashable::<Pos>();
        b.register_snapshot_copy::<Pos>();
        b.register_snapshot_resource::<Count>();
        b.register_snapshot_resource::<OnlyTarget>();
        b.exclude_resource_from_snapshot::<Local>();
        b.insert_resource(Count(0));
        b.insert_resource(OnlyTarget(1));
        b.insert_resource(Local(2));
        b.add_fn_system(
            Phase::Update,
            "sum",
            |mut c: ResMut<Count>, s: Option<Res<OnlySource>>, t: Option<Res<OnlyTarget>>| {
                c.0 += s.map_or(0, |s| u64::from(s.0)) + t.map_or(1000, |t| u64::from(t.0));
            },
        )
        .unwrap();
        b.restore(&snapshot).unwrap();
        assert_eq!(b.resource::<Count>(), Some(&Count(7)));
        assert_eq!(b.resource::<OnlySource>(), Some(&OnlySource(8)));
        assert_eq!(b.resource::<OnlyTarget>(), None);
        assert_eq!(b.resource::<Local>().map(|l| l.0), Some(2));
        b.update(0.0);
        assert_eq!(b.resource::<Count>(), Some(&Count(7 + 8 + 1000)));
        // OnlySource is registered here now: the next snapshot copies it.
        let again = b.snapshot().unwrap();
        b.remove_resource::<OnlySource>();
        b.restore(&again).unwrap();
        assert_eq!(b.resource::<OnlySource>(), Some(&OnlySource(8)));
        results.push((hash(&b), b.resource::<Count>().unwrap().0));
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]), "{results:?}");
}

/// A resource the snapshot's registry excluded is one the snapshot says nothing of: restored
/// into a registry that copies that type, the target's value is kept, not removed as if the
/// resource had been absent at the snapshot. A type the source neither held nor excluded is
/// still removed (absent there).
#[test]
fn a_resource_the_source_excluded_is_kept_by_a_target_that_copies_it() {
    #[derive(Clone, Debug, PartialEq)]
    struct Config(u32);
    #[derive(Clone, Debug, PartialEq)]
    struct Later(u32);
    let mut a = Registry::with_workers(2);
    a.register_snapshot_copy::<Pos>();
    a.exclude_resource_from_snapshot::<Config>();
    a.insert_resource(Config(1));
    a.spawn((Pos(1),));
    let snapshot = a.snapshot().unwrap();

    let mut b = Registry::with_workers(2);
    b.register_snapshot_copy::<Pos>();
    b.register_snapshot_resource::<Config>();
    b.register_snapshot_resource::<Later>();
    b.insert_resource(Config(42));
    b.insert_resource(Later(3));
    b.restore(&snapshot).unwrap();
    assert_eq!(
        b.resource::<Config>(),
        Some(&Config(42)),
        "the source excluded it"
    );
    assert_eq!(b.resource::<Later>(), None, "absent at the snapshot");
    assert_eq!(b.query::<&Pos>().count(), 1);

    // The same snapshot reused for a taking of a registry that excludes nothing: the list of
    // excluded types is the new taking's, so the value is removed again as absent.
    let mut reused = snapshot;
    let mut c = Registry::with_workers(1);
    c.register_snapshot_copy::<Pos>();
    c.snapshot_into(&mut reused).unwrap();
    b.restore(&reused).unwrap();
    assert_eq!(b.resource::<Config>(), None, "absent at the second taking");
}
