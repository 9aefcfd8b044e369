//! The parent relation: edits keep both sides consistent, every despawn path takes the subtree
//! in its defined order, bad input is a typed error with the world unchanged, deep trees do
//! not overflow the stack, and the relation survives snapshots, saves, export/import and the
//! world hash.

use std::sync::{Arc, Mutex};

use freyr::Registry;
use freyr::hierarchy::{ChildOf, Children, HierarchyError};
use freyr_core::Entity;

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Name(u32);

impl freyr::StableHash for Name {
    fn stable_hash(&self, h: &mut freyr::hash::StableHasher) {
        self.0.stable_hash(h);
    }
}

fn registry(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_hashable::<Name>();
    r.register_persistent::<Name>("test.name", 1);
    r.register_hierarchy();
    r
}

/// A small forest: a (b (d, e), c), f.
fn forest(r: &mut Registry) -> [Entity; 6] {
    let a = r.spawn((Name(0),));
    let b = r.spawn_child(a, (Name(1),)).unwrap();
    let c = r.spawn_child(a, (Name(2),)).unwrap();
    let d = r.spawn_child(b, (Name(3),)).unwrap();
    let e = r.spawn_child(b, (Name(4),)).unwrap();
    let f = r.spawn((Name(5),));
    [a, b, c, d, e, f]
}

#[test]
fn edits_keep_both_sides_and_the_order() {
    let mut r = registry(1);
    let [a, b, c, d, e, f] = forest(&mut r);
    r.check_hierarchy();
    assert_eq!(r.children(a), [b, c]);
    assert_eq!(r.children(b), [d, e]);
    assert_eq!(r.parent(d), Some(b));
    assert_eq!(r.parent(a), None);
    assert_eq!(r.ancestors(e).collect::<Vec<_>>(), [b, a]);
    assert_eq!(r.descendants(a), [b, c, d, e]);
    // Reparent: d leaves b, goes to the end of f's children.
    r.set_parent(d, f).unwrap();
    r.check_hierarchy();
    assert_eq!(r.children(b), [e]);
    assert_eq!(r.children(f), [d]);
    // Setting the same parent keeps the place.
    r.set_parent(b, a).unwrap();
    assert_eq!(r.children(a), [b, c]);
    // Moving a subtree moves its descendants with it.
    r.set_parent(b, c).unwrap();
    assert_eq!(r.descendants(a), [c, b, e]);
    assert_eq!(r.remove_parent(c), Ok(Some(a)));
    assert!(r.children(a).is_empty());
    assert_eq!(r.get::<Children>(a).unwrap().as_slice(), []);
    assert_eq!(r.get::<ChildOf>(b).unwrap().parent(), c);
    r.check_hierarchy();
}

#[test]
fn bad_edits_are_typed_errors_and_change_nothing() {
    let mut r = registry(1);
    let [a, b, _c, d, _e, f] = forest(&mut r);
    let dead = r.spawn(());
    r.despawn(dead).unwrap();
    let hash = r.world_hash_all().unwrap();
    let len = r.len();
    assert_eq!(
        r.set_parent(a, d),
        Err(HierarchyError::Cycle {
            child: a,
            parent: d
        })
    );
    assert_eq!(
        r.set_parent(b, b),
        Err(HierarchyError::Cycle {
            child: b,
            parent: b
        })
    );
    assert_eq!(
        r.set_parent(b, dead),
        Err(HierarchyError::NoSuchEntity(dead))
    );
    assert_eq!(
        r.set_parent(dead, b),
        Err(HierarchyError::NoSuchEntity(dead))
    );
    assert_eq!(
        r.remove_parent(dead),
        Err(HierarchyError::NoSuchEntity(dead))
    );
    assert_eq!(
        r.spawn_child(dead, (Name(9),)),
        Err(HierarchyError::NoSuchEntity(dead))
    );
    assert!(r.spawn_children(dead, [(Name(9),)]).is_err());
    // An entity of another registry: an index never handed out here.
    let mut other = Registry::with_workers(1);
    let foreign = (0..50).map(|_| other.spawn(())).last().unwrap();
    assert_eq!(
        r.set_parent(f, foreign),
        Err(HierarchyError::NoSuchEntity(foreign))
    );
    assert_eq!(r.len(), len);
    assert_eq!(r.world_hash_all().unwrap(), hash);
    r.check_hierarchy();
    let msg = HierarchyError::Cycle {
        child: a,
        parent: d,
    }
    .to_string();
    assert!(msg.contains("cycle"), "{msg}");
}

#[test]
fn despawn_takes_the_subtree_in_order_and_hooks_see_it() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut r = registry(1);
    let s = seen.clone();
    r.on_remove::<Name>(move |e, _| s.lock().unwrap().push(e));
    let [a, b, c, d, e, f] = forest(&mut r);
    let g = r.spawn_child(c, (Name(6),)).unwrap();
    r.despawn(b).unwrap();
    assert_eq!(*seen.lock().unwrap(), [b, d, e]);
    assert_eq!(r.children(a), [c]);
    r.check_hierarchy();
    seen.lock().unwrap().clear();
    r.despawn(a).unwrap();
    assert_eq!(*seen.lock().unwrap(), [a, c, g]);
    assert!(r.contains(f));
    assert_eq!(r.len(), 1);
    r.check_hierarchy();
}

#[test]
fn deferred_despawns_run_hooks_in_descendants_order() {
    for deferred_by_command in [false, true] {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut r = registry(2);
        let s = seen.clone();
        r.on_remove::<Name>(move |e, _| s.lock().unwrap().push(e));
        let [a, b, c, d, e, _f] = forest(&mut r);
        let g = r.spawn_child(c, (Name(6),)).unwrap();
        if deferred_by_command {
            r.query::<&Name>().each_async_with(|e, n, ctx| {
                if n.0 == 0 {
                    ctx.commands().despawn(e);
                }
            });
        } else {
            r.destroy_entity(a);
        }
        r.execute_tasks();
        assert_eq!(*seen.lock().unwrap(), [a, b, c, d, e, g]);
        assert_eq!(r.descendants(a), []);
        r.check_hierarchy();
    }
}

#[test]
fn deferred_despawns_take_the_subtree() {
    for workers in [1, 2, 3, 8, 16] {
        let mut r = registry(workers);
        let [a, b, c, d, e, f] = forest(&mut r);
        // destroy_entity: at the next sync point.
        r.destroy_entity(b);
        assert!(r.contains(d));
        r.execute_tasks();
        assert!(!r.contains(b) && !r.contains(d) && !r.contains(e));
        assert_eq!(r.children(a), [c]);
        r.check_hierarchy();
        // A command recorded in a callback.
        let x = r.spawn_child(c, (Name(7),)).unwrap();
        r.set_parent(f, x).unwrap();
        r.query::<&Name>().each_async_with(move |e, n, ctx| {
            if n.0 == 2 {
                ctx.commands().despawn(e);
            }
        });
        r.execute_tasks();
        assert!(!r.contains(c) && !r.contains(x) && !r.contains(f));
        assert!(r.children(a).is_empty());
        assert_eq!(r.len(), 1, "{workers} workers");
        r.check_hierarchy();
        // A queued entity and its queued descendant: each destroyed once.
        let p = r.spawn_child(a, (Name(8),)).unwrap();
        let q = r.spawn_child(p, (Name(9),)).unwrap();
        r.destroy_entity(p);
        r.destroy_entity(q);
        r.execute_tasks();
        assert_eq!(r.len(), 1);
        r.check_hierarchy();
    }
}

#[test]
fn a_hundred_thousand_levels_do_not_overflow_the_stack() {
    const DEPTH: usize = 100_000;
    let mut r = Registry::with_workers(1);
    let root = r.spawn((0u32,));
    let mut leaf = root;
    for i in 1..DEPTH {
        leaf = r.spawn_child(leaf, (i as u32,)).unwrap();
    }
    assert_eq!(r.ancestors(leaf).count(), DEPTH - 1);
    assert_eq!(r.descendants(root).len(), DEPTH - 1);
    assert_eq!(
        r.set_parent(root, leaf),
        Err(HierarchyError::Cycle {
            child: root,
            parent: leaf
        })
    );
    let snapshot = {
        r.register_snapshot_copy::<u32>();
        r.snapshot().unwrap()
    };
    r.despawn(root).unwrap();
    assert!(r.is_empty());
    r.restore(&snapshot).unwrap();
    assert_eq!(r.len(), DEPTH);
    r.destroy_entity(root);
    r.execute_tasks();
    assert!(r.is_empty());
}

#[test]
fn snapshots_and_rollback_keep_the_relation() {
    let mut r = registry(2);
    let [a, b, c, d, _e, f] = forest(&mut r);
    let before = r.world_hash_all().unwrap();
    let snapshot = r.snapshot().unwrap();
    r.set_parent(d, f).unwrap();
    r.despawn(a).unwrap();
    assert_ne!(r.world_hash_all().unwrap(), before);
    r.restore(&snapshot).unwrap();
    assert_eq!(r.world_hash_all().unwrap(), before);
    assert_eq!(r.children(a), [b, c]);
    assert_eq!(r.parent(d), Some(b));
    r.check_hierarchy();
}

#[test]
fn the_hash_sees_the_order_of_children() {
    let mut one = registry(1);
    let mut two = registry(1);
    for (r, swap) in [(&mut one, false), (&mut two, true)] {
        let p = r.spawn((Name(0),));
        let x = r.spawn((Name(1),));
        let y = r.spawn((Name(2),));
        let (first, second) = if swap { (y, x) } else { (x, y) };
        r.set_parent(first, p).unwrap();
        r.set_parent(second, p).unwrap();
    }
    assert_ne!(one.world_hash_all().unwrap(), two.world_hash_all().unwrap());
}

#[test]
fn saves_keep_the_relation_and_its_order() {
    let mut r = registry(1);
    let [a, b, c, d, e, _f] = forest(&mut r);
    r.set_parent(b, c).unwrap();
    let bytes = r.save_to_vec().unwrap();
    let mut loaded = registry(1);
    loaded.load_into(&bytes).unwrap();
    assert_eq!(loaded.children(a), [c]);
    assert_eq!(loaded.children(c), [b]);
    assert_eq!(loaded.children(b), [d, e]);
    assert_eq!(
        loaded.world_hash_all().unwrap(),
        r.world_hash_all().unwrap()
    );
    loaded.check_hierarchy();
    // A registry that did not register the relation refuses the file with a typed error.
    let mut bare = Registry::with_workers(1);
    bare.register_persistent::<Name>("test.name", 1);
    assert!(bare.load_into(&bytes).is_err());
}

#[test]
fn export_remaps_inside_the_set_and_cuts_references_out_of_it() {
    let mut r = registry(1);
    let [a, b, c, d, e, _f] = forest(&mut r);
    // Exported: b, d (b's parent a and b's child e are left out).
    let bytes = r.export(&[b, d]).unwrap();
    let mut other = registry(1);
    for _ in 0..3 {
        other.spawn((Name(100),)); // other ids than the exporter's
    }
    let map = other.import(&bytes).unwrap();
    let (b2, d2) = (map.get(b).unwrap(), map.get(d).unwrap());
    assert_eq!(
        other.parent(b2),
        None,
        "b's parent was not exported: b is a root"
    );
    assert_eq!(other.children(b2), [d2], "e was not exported: only d stays");
    assert_eq!(other.parent(d2), Some(b2));
    other.check_hierarchy();
    // The whole tree: everything remapped, the order kept.
    let bytes = r.export(&[a, b, c, d, e]).unwrap();
    let map = other.import(&bytes).unwrap();
    let m = |x| map.get(x).unwrap();
    assert_eq!(other.children(m(a)), [m(b), m(c)]);
    assert_eq!(other.children(m(b)), [m(d), m(e)]);
    other.check_hierarchy();
}

#[test]
fn spawn_children_appends_in_order() {
    let mut r = registry(1);
    let p = r.spawn((Name(0),));
    let first = r.spawn_child(p, (Name(1),)).unwrap();
    let rest = r.spawn_children(p, (2..6).map(|i| (Name(i),))).unwrap();
    let mut all = vec![first];
    all.extend(&rest);
    assert_eq!(r.children(p), all);
    r.check_hierarchy();
}

#[test]
fn a_panicking_drop_in_a_subtree_stops_no_despawn() {
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("bomb");
        }
    }
    let mut r = registry(1);
    let a = r.spawn((Name(0),));
    let b = r.spawn_child(a, (Bomb,)).unwrap();
    let c = r.spawn_child(a, (Name(2),)).unwrap();
    let d = r.spawn_child(b, (Name(3),)).unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.despawn(a)));
    assert!(outcome.is_err());
    for e in [a, b, c, d] {
        assert!(!r.contains(e));
    }
    assert!(r.is_empty());
}
