//! A hostile user of the world digest (two registries that differ in exactly one value, one
//! entity, the order of children or the disabled flag: the divergence names it), and of events
//! sent by hooks across panics, restores and a snapshot ring's rollbacks.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use freyr::hash::DivergenceKind;
use freyr::snapshot::SnapshotRing;
use freyr::{EventCursor, Events, Registry, StableHash};

#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
struct PL(u64);
#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
struct PG(u64);

fn at_root(l: &PL) -> PG {
    PG(l.0 ^ 0x5555)
}

fn at_child(p: &PG, l: &PL) -> PG {
    PG(p.0.wrapping_mul(31).rotate_left(7) ^ l.0)
}

fn fresh(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_hashable::<PL>();
    r.register_hashable::<PG>();
    r.register_hierarchy();
    r.register_disabled();
    r
}

// ---- The digest names exactly what differs ----

/// Two registries built the same way, a forest with values from the pass; `tweak` then acts
/// on the second. Returns both, and the second's entities in spawn order.
fn twins(tweak: impl FnOnce(&mut Registry, &[freyr::Entity])) -> (Registry, Registry) {
    let build = || {
        let mut r = fresh(2);
        let mut ids = Vec::new();
        for i in 0..700u64 {
            // Past one chunk: divergences in the second chunk are located there.
            let e = if i % 10 == 0 {
                r.spawn((PL(i), PG(0)))
            } else {
                let p = ids[ids.len() - 1 - (i as usize % 3).min(ids.len() - 1)];
                r.spawn_child(p, (PL(i), PG(0))).unwrap()
            };
            ids.push(e);
        }
        r.propagate::<PL, PG>(at_root, at_child);
        (r, ids)
    };
    let (a, _) = build();
    let (mut b, ids) = build();
    assert_eq!(a.locate_divergence(&b), Ok(None));
    assert_eq!(a.digest().unwrap(), b.digest().unwrap());
    tweak(&mut b, &ids);
    (a, b)
}

/// One value of one entity, deep in a tree: the divergence names that component and entity,
/// both ways round.
#[test]
fn one_changed_value_is_named_to_the_entity() {
    let mut target = None;
    let (a, b) = twins(|b, ids| {
        let e = ids[653];
        b.get_mut::<PG>(e).unwrap().0 ^= 1 << 40;
        target = Some(e);
    });
    let e = target.unwrap();
    for (x, y) in [(&a, &b), (&b, &a)] {
        let found = x.locate_divergence(y).unwrap().expect("a divergence");
        assert!(
            matches!(&found.kind, DivergenceKind::Component { name, .. } if name.contains("PG")),
            "{found}"
        );
        assert_eq!(found.entity, Some(e), "{found}");
    }
    assert_ne!(a.world_hash_all(), b.world_hash_all());
}

/// One more entity, a root at the end of the roots' archetype: an entity-count divergence
/// naming it.
#[test]
fn one_extra_entity_is_named() {
    let mut extra = None;
    let (a, b) = twins(|b, _| {
        extra = Some(b.spawn((PL(1), PG(2))));
    });
    let found = a.locate_divergence(&b).unwrap().expect("a divergence");
    assert!(
        matches!(found.kind, DivergenceKind::Entities { a_len, b_len } if b_len == a_len + 1),
        "{found}"
    );
    assert_eq!(found.entity, extra, "{found}");
}

/// The same children in another order (no row moves: the other side's child went to a
/// temporary parent and back, as one of this side's did): the parent's `Children` differs, and
/// is named with the parent; the world hashes differ too.
#[test]
fn the_order_of_children_is_named_at_the_parent() {
    let reorder = |r: &mut Registry, ids: &[freyr::Entity], which: usize| {
        let (p, q) = (ids[0], ids[10]);
        let kids = r.children(p).to_vec();
        assert!(kids.len() >= 2);
        r.set_parent(kids[which], q).unwrap();
        r.set_parent(kids[which], p).unwrap();
    };
    let mut parent = None;
    let (mut a, b) = twins(|b, ids| {
        reorder(b, ids, 0); // [x, y, ..] becomes [y, .., x]
        parent = Some(ids[0]);
    });
    let ids: Vec<_> = {
        let mut v = Vec::new();
        a.query::<&PL>().each(|e, _| v.push(e));
        v.sort_by_key(|e| a.get::<PL>(*e).unwrap().0);
        v
    };
    let last = a.children(ids[0]).len() - 1;
    reorder(&mut a, &ids, last); // the same moves, the order kept
    assert_ne!(a.children(ids[0]), b.children(ids[0]));
    let found = a.locate_divergence(&b).unwrap().expect("a divergence");
    assert!(
        matches!(&found.kind, DivergenceKind::Component { name, .. } if name.contains("Children")),
        "{found}"
    );
    assert_eq!(found.entity, parent, "{found}");
    assert_ne!(a.world_hash_all(), b.world_hash_all());
}

/// The disabled flag: a disabled entity leaves its archetype (its row is filled by the last
/// one), named there with the entity; disabled and enabled again, it is back with the same
/// values (the world hash as it was) but in another row, and the digest names that row's
/// entity; either way the divergence names the entity whose flag changed.
#[test]
fn the_disabled_flag_is_a_named_difference() {
    for enable_again in [false, true] {
        let mut target = None;
        let (a, b) = twins(|b, ids| {
            b.disable(ids[35]).unwrap();
            if enable_again {
                b.enable(ids[35]).unwrap();
            }
            target = Some(ids[35]);
        });
        let found = a.locate_divergence(&b).unwrap().expect("a divergence");
        assert!(
            matches!(found.kind, DivergenceKind::Entities { a_len, b_len }
                if b_len + usize::from(!enable_again) == a_len),
            "{found}"
        );
        assert_eq!(found.entity, target, "{found}");
        assert_eq!(a.world_hash_all() == b.world_hash_all(), enable_again);
        assert_eq!(b.is_disabled(target.unwrap()), !enable_again);
    }
}

// ---- Events from tasks, across panics and a snapshot ring's rollback ----

#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
struct Mark(u64);
#[derive(Clone, Debug, PartialEq)]
struct Ev(u64);
/// The reader's cursor, kept in a snapshot resource as the events chapter advises.
#[derive(Clone, Default)]
struct Reader(EventCursor);

/// One tick of the script: from tick 4 on, tasks send an `Ev` for a few entities; with
/// `panicking`, a second launch sends an event per entity and its task of the second chunk
/// panics after sending. Returns what the reader read at this tick.
fn tick(r: &mut Registry, panicking: bool) -> Vec<u64> {
    let t = r.tick();
    if t >= 4 {
        r.query::<&Mark>().each_async_with(move |_, m, ctx| {
            if (m.0 + t).is_multiple_of(97) {
                ctx.send(Ev(m.0 * 100 + t));
            }
        });
    }
    if panicking {
        r.query::<&Mark>().each_async_with(|_, m, ctx| {
            ctx.send(Ev(1_000_000 + m.0));
            assert!(m.0 != 700, "a task of the second chunk");
        });
        let caught = catch_unwind(AssertUnwindSafe(|| r.execute_tasks()));
        assert!(caught.is_err(), "the task's panic is re-raised");
    }
    r.execute_tasks();
    let mut reader = r.resource::<Reader>().unwrap().clone();
    let read = r.read_events::<Ev>(&mut reader.0).map(|e| e.0).collect();
    r.insert_resource(reader);
    r.update(1.0);
    read
}

fn world(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_hashable::<Mark>();
    r.register_snapshot_copy::<Mark>();
    r.register_snapshot_resource::<Reader>();
    r.insert_resource(Reader::default());
    r.spawn_batch((0..1100).map(|i| (Mark(i),)));
    r
}

/// The event store is first made at tick 4, after the ring's snapshot of tick 3; the replaced
/// timeline has a task panic at tick 6 (its events are lost, the other tasks' kept). Rolled
/// back to tick 3 and re-simulated without the panic, the reader reads what the uninterrupted
/// run read, tick by tick, and the store ends the same.
#[test]
fn a_rollback_past_the_first_event_resimulates_the_same_reads() {
    for workers in [1, 2, 8] {
        let mut reference = world(workers);
        let expected: Vec<Vec<u64>> = (0..12).map(|_| tick(&mut reference, false)).collect();
        assert!(expected[4].len() + expected[5].len() > 5);
        assert!(expected[..4].iter().all(Vec::is_empty));

        let mut r = world(workers);
        let mut ring = SnapshotRing::new(16);
        let mut replaced = Vec::new();
        while r.tick() < 9 {
            ring.push(&r).unwrap();
            let panicking = r.tick() == 6;
            replaced.push(tick(&mut r, panicking));
        }
        // At tick 6: the first chunk's task events are there, the second chunk's are not.
        let sixth = &replaced[6];
        assert!(sixth.contains(&1_000_000) && sixth.contains(&1_000_511));
        assert!(
            !sixth.iter().any(|v| (1_000_512..1_001_024).contains(v)),
            "{workers}"
        );
        assert_eq!(replaced[..6], expected[..6]);

        ring.restore(&mut r, 3).unwrap();
        assert_eq!(r.tick(), 3);
        let resim: Vec<Vec<u64>> = (3..12).map(|_| tick(&mut r, false)).collect();
        assert_eq!(resim, expected[3..], "{workers} workers");
        let (x, y) = (
            r.resource::<Events<Ev>>().unwrap(),
            reference.resource::<Events<Ev>>().unwrap(),
        );
        assert_eq!((x.len(), x.sent()), (y.len(), y.sent()));
        assert_eq!(r.world_hash_all(), reference.world_hash_all());
    }
}

/// Component hooks across a restore and a panicking hook: a hook that records what it sees
/// fires for operations after the restore as before it, and a panic of one hook call loses
/// neither the operation nor the later hooks.
#[test]
fn hooks_keep_firing_after_a_restore_and_a_hook_panic() {
    let mut r = world(2);
    let log: Arc<Mutex<Vec<u64>>> = Arc::default();
    let l = log.clone();
    r.on_add::<PG>(move |e, _| {
        l.lock().unwrap().push(u64::from(e.index()));
        assert!(e.index() != 1101, "hook panics for one entity");
    });
    r.register_snapshot_copy::<PG>();
    let snapshot = r.snapshot().unwrap();
    let a = r.spawn((PG(1),)); // index 1100
    let caught = catch_unwind(AssertUnwindSafe(|| r.spawn((PG(2),)))); // 1101: the hook panics
    assert!(caught.is_err());
    assert_eq!(r.query::<&PG>().count(), 2, "the spawn itself happened");
    r.restore(&snapshot).unwrap();
    assert!(!r.contains(a));
    assert_eq!(r.query::<&PG>().count(), 0);
    let b = r.spawn((PG(3),));
    assert_eq!(b, a, "the same id again");
    assert_eq!(*log.lock().unwrap(), [1100, 1101, 1100]);
}
