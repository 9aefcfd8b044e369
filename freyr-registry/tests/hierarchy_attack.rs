//! Hostile use of the hierarchy, clones and prefabs (deep and counted): 100,000-level chains
//! through every operation and panicking `Clone`s and remap hooks counted for leaks and double
//! drops; a sync point's expansion meeting dead entries; the relation's types registered for
//! saves by hand. Foreign and stale handles, cycles, hooks and the rest are in
//! `hierarchy_attack_edits`.

mod hierarchy_support;

use hierarchy_support::*;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use freyr::Registry;
use freyr::hierarchy::{HierarchyCommands, HierarchyError};
use freyr_core::Entity;

/// Deep enough to overflow any recursive walk's stack (a fifth under ThreadSanitizer, whose
/// frames are larger, as the propagate test does).
const DEPTH: usize = if cfg!(freyr_tsan) { 20_000 } else { 100_000 };

/// A chain `DEPTH` long: returns its root and its leaf.
fn chain(r: &mut Registry) -> (Entity, Entity) {
    let root = r.spawn((Name(0),));
    let mut leaf = root;
    for i in 1..DEPTH {
        leaf = r.spawn_child(leaf, (Name(i as u32),)).unwrap();
    }
    (root, leaf)
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_deep_chain_is_checked_hashed_saved_and_exported() {
    let mut r = registry(2);
    let (root, leaf) = chain(&mut r);
    // The invariant check walks every entity up to a root: it must stay linear, not
    // depth-squared (which would not finish) nor recursive.
    r.check_hierarchy();
    let hash = r.world_hash_all().unwrap();
    let digest = r.digest().unwrap();
    // A refused deep cycle changes nothing.
    assert_eq!(
        r.set_parent(root, leaf),
        Err(HierarchyError::Cycle {
            child: root,
            parent: leaf
        })
    );
    assert_eq!(r.world_hash_all().unwrap(), hash);
    // Save and load: the same ids, order and hash.
    let bytes = r.save_to_vec().unwrap();
    let mut loaded = registry(1);
    loaded.load_into(&bytes).unwrap();
    assert_eq!(loaded.world_hash_all().unwrap(), hash);
    assert_eq!(loaded.digest().unwrap(), digest);
    assert_eq!(loaded.ancestors(leaf).count(), DEPTH - 1);
    loaded.check_hierarchy();
    drop(loaded);
    // Export the whole chain but its root: it arrives as a chain one shorter, its top a root.
    let mut set = r.descendants(root);
    let top = set[0];
    let exported = r.export(&set).unwrap();
    let mut other = registry(1);
    other.spawn((Name(999),));
    let map = other.import(&exported).unwrap();
    assert_eq!(other.len(), DEPTH);
    assert_eq!(other.parent(map.get(top).unwrap()), None);
    assert_eq!(other.ancestors(map.get(leaf).unwrap()).count(), DEPTH - 2);
    assert_eq!(other.ancestors(map.get(leaf).unwrap()).last(), map.get(top));
    other.check_hierarchy();
    drop(other);
    // The whole chain, then despawned through the import's root by a command.
    set.insert(0, root);
    let mut other = registry(1);
    let map = other.import(&r.export(&set).unwrap()).unwrap();
    assert_eq!(other.len(), DEPTH);
    other.destroy_entity(map.get(root).unwrap());
    other.execute_tasks();
    assert!(other.is_empty());
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_deep_chain_is_cloned_instantiated_and_rolled_back() {
    for hooked in [false, true] {
        let mut r = registry(2);
        let added = Arc::new(AtomicUsize::new(0));
        if hooked {
            let n = added.clone();
            r.on_add::<Name>(move |_, _| {
                n.fetch_add(1, SeqCst);
            });
        }
        let (root, leaf) = chain(&mut r);
        let snapshot = r.snapshot().unwrap();
        let hash = r.world_hash_all().unwrap();
        let copy = r.clone_tree(root).unwrap();
        assert_eq!(r.len(), 2 * DEPTH);
        let copy_leaf = *r.descendants(copy).last().unwrap();
        assert_eq!(r.ancestors(copy_leaf).count(), DEPTH - 1);
        assert_eq!(r.get::<Name>(copy_leaf), Ok(&Name(DEPTH as u32 - 1)));
        r.disable(root).unwrap();
        let roots = r.instantiate(root, 2).unwrap();
        assert_eq!(r.len(), 4 * DEPTH);
        for &c in &roots {
            assert!(!r.is_disabled(c));
            assert_eq!(r.descendants(c).len(), DEPTH - 1);
        }
        r.check_hierarchy();
        if hooked {
            assert_eq!(added.load(SeqCst), 4 * DEPTH);
        }
        // Rollback over a world four chains deep, then the chain despawned directly.
        r.restore(&snapshot).unwrap();
        assert_eq!(r.len(), DEPTH);
        assert_eq!(r.world_hash_all().unwrap(), hash);
        assert!(!r.is_disabled(root));
        r.despawn(root).unwrap();
        assert!(!r.contains(leaf));
        assert!(r.is_empty());
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_deep_chain_goes_with_a_command_despawn_a_hook_despawn_and_a_drop() {
    // A command despawn of the root, recorded in a parallel callback.
    let mut r = registry(2);
    let (root, _) = chain(&mut r);
    let (_, other_leaf) = chain(&mut r);
    assert!(record(&mut r, move |c| c.despawn(root)).is_none());
    assert_eq!(r.len(), DEPTH);
    r.check_hierarchy();
    // A hook's despawn: removing a marker from the leaf despawns the other chain's root.
    struct Fuse;
    let other_root = r.ancestors(other_leaf).last().unwrap();
    r.on_remove::<Fuse>(move |_, cmds| cmds.despawn(other_root));
    r.insert(other_leaf, (Fuse,)).unwrap();
    r.remove::<(Fuse,)>(other_leaf).unwrap();
    assert!(r.is_empty());
    // Dropping a registry that holds deep chains (and a deep chain's snapshot).
    let (root, _) = chain(&mut r);
    let snapshot = r.snapshot().unwrap();
    let copy = r.clone_tree(root).unwrap();
    assert_eq!(r.descendants(copy).len(), DEPTH - 1);
    drop(r);
    drop(snapshot);
}

#[test]
#[cfg_attr(miri, ignore)]
fn disabling_a_deep_chain_hides_it_and_enabling_brings_it_back() {
    let mut r = registry(1);
    let (root, leaf) = chain(&mut r);
    let hash = r.world_hash_all().unwrap();
    let all = {
        let mut v = vec![root];
        v.extend(r.descendants(root));
        v
    };
    for &e in all.iter().rev() {
        r.disable(e).unwrap();
    }
    assert_eq!(r.query::<&Name>().count(), 0);
    assert_ne!(r.world_hash_all().unwrap(), hash);
    // By-id calls still reach every disabled entity, walks included.
    assert_eq!(r.ancestors(leaf).count(), DEPTH - 1);
    assert_eq!(r.get::<Name>(leaf), Ok(&Name(DEPTH as u32 - 1)));
    for &e in &all {
        r.enable(e).unwrap();
    }
    assert_eq!(r.query::<&Name>().count(), DEPTH);
    assert_eq!(r.world_hash_all().unwrap(), hash);
    r.check_hierarchy();
}

/// Live values of [`Counted`]: made by `new` or `clone`, minus those dropped.
static LIVE: AtomicIsize = AtomicIsize::new(0);
/// Clones left before a `Counted` clone panics.
static CLONES_LEFT: AtomicIsize = AtomicIsize::new(isize::MAX);
/// Serialises the tests that use the two counters above.
static COUNTED_LOCK: Mutex<()> = Mutex::new(());

#[derive(Debug)]
struct Counted(u32);

impl Counted {
    fn new(v: u32) -> Counted {
        LIVE.fetch_add(1, SeqCst);
        Counted(v)
    }
}

impl Clone for Counted {
    fn clone(&self) -> Self {
        if CLONES_LEFT.fetch_sub(1, SeqCst) <= 0 {
            panic!("counted clone");
        }
        Counted::new(self.0)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, SeqCst);
    }
}

impl freyr::StableHash for Counted {
    fn stable_hash(&self, h: &mut freyr::hash::StableHasher) {
        self.0.stable_hash(h);
    }
}

#[test]
fn a_panicking_clone_leaks_nothing_drops_nothing_twice_and_changes_no_hash() {
    let _guard = COUNTED_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    for hooked in [false, true] {
        LIVE.store(0, SeqCst);
        CLONES_LEFT.store(isize::MAX, SeqCst);
        let mut r = registry(2);
        r.register_cloneable::<Counted>();
        r.register_hashable::<Counted>();
        if hooked {
            r.on_insert::<Counted>(|_, _| {});
        }
        let root = r.spawn((Name(0), Counted::new(0)));
        let a = r.spawn_child(root, (Name(1), Counted::new(1))).unwrap();
        r.spawn_child(a, (Name(2), Counted::new(2))).unwrap();
        r.spawn_child(root, (Name(3), Counted::new(3))).unwrap();
        let (len, hash) = (r.len(), r.world_hash_all().unwrap());
        assert_eq!(LIVE.load(SeqCst), 4);
        // Every point of failure: the first clone, mid-way through a node's column, the
        // last clone of the last node.
        for (budget, count) in [(0, 1), (0, 5), (3, 5), (7, 5), (11, 3), (2, 1)] {
            CLONES_LEFT.store(budget, SeqCst);
            let caught = panic::catch_unwind(AssertUnwindSafe(|| {
                if count == 1 {
                    r.clone_tree(root).map(|e| vec![e])
                } else {
                    r.instantiate(root, count)
                }
            }));
            let payload = caught.expect_err("the clone's panic propagates");
            assert_eq!(message(&*payload), "counted clone");
            assert_eq!(LIVE.load(SeqCst), 4, "budget {budget}, count {count}");
            assert_eq!(r.len(), len);
            assert_eq!(r.world_hash_all().unwrap(), hash, "the world is unchanged");
            r.check_hierarchy();
        }
        CLONES_LEFT.store(isize::MAX, SeqCst);
        let copies = r.instantiate(root, 3).unwrap();
        assert_eq!(LIVE.load(SeqCst), 4 * 4);
        r.despawn(copies[1]).unwrap();
        assert_eq!(LIVE.load(SeqCst), 4 * 3);
        drop(r);
        assert_eq!(LIVE.load(SeqCst), 0, "every value dropped once");
    }
}

#[test]
fn a_panicking_remap_hook_leaks_nothing() {
    let _guard = COUNTED_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    #[derive(Clone)]
    struct Ref(Entity);
    static SEEN: AtomicUsize = AtomicUsize::new(0);
    LIVE.store(0, SeqCst);
    CLONES_LEFT.store(isize::MAX, SeqCst);
    let mut r = registry(1);
    r.register_cloneable::<Counted>();
    r.register_cloneable_with_remap::<Ref>(|v, map| {
        if SEEN.fetch_add(1, SeqCst) == 4 {
            panic!("remap");
        }
        v.0 = map.get(v.0).unwrap_or(v.0);
    });
    let root = r.spawn((Counted::new(0), Ref(Entity::from_bits(1 << 32).unwrap())));
    r.insert(root, (Ref(root),)).unwrap();
    r.spawn_child(root, (Counted::new(1), Ref(root))).unwrap();
    let len = r.len();
    let caught = panic::catch_unwind(AssertUnwindSafe(|| r.instantiate(root, 3)));
    assert_eq!(message(&*caught.unwrap_err()), "remap");
    assert_eq!(r.len(), len);
    assert_eq!(LIVE.load(SeqCst), 2);
    r.check_hierarchy();
    drop(r);
    assert_eq!(LIVE.load(SeqCst), 0);
}

#[derive(Clone)]
struct Loyal;

/// A hook moves a copy out of the tree being cloned (under `lord`). A clone is one operation
/// for the hooks, so a `Clone` that panics part-way panics before any hook saw a copy (none is
/// moved, none is announced gone); a registry hook that panics after the move makes the
/// clean-up despawn every copy with its subtree wherever the hook put it. Either way no parent
/// is left listing a dead child, and nothing leaks.
#[test]
fn a_panicking_clone_after_a_hook_moved_a_copy_leaves_no_dangling_child() {
    let _guard = COUNTED_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    LIVE.store(0, SeqCst);
    CLONES_LEFT.store(isize::MAX, SeqCst);
    let mut r = registry(2);
    r.register_cloneable::<Counted>();
    r.register_cloneable::<Loyal>();
    let lord = r.spawn((Name(100),));
    let moved = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&moved);
    r.on_add::<Loyal>(move |e, cmds| {
        seen.fetch_add(1, SeqCst);
        cmds.set_parent(e, lord);
    });
    let ship = r.spawn((Name(0), Counted::new(0)));
    let crew = r.spawn_child(ship, (Name(1), Counted::new(1))).unwrap();
    r.spawn_child(ship, (Name(2), Counted::new(2))).unwrap();
    r.spawn_child(crew, (Name(3), Counted::new(3))).unwrap();
    r.insert(crew, (Loyal,)).unwrap();
    r.set_parent(crew, ship).unwrap(); // the hook moved it; back under the ship
    let (len, live) = (r.len(), LIVE.load(SeqCst));
    assert_eq!(live, 4);
    let mut panicked = 0;
    for budget in 0..4 {
        moved.store(0, SeqCst);
        CLONES_LEFT.store(budget, SeqCst);
        let caught = panic::catch_unwind(AssertUnwindSafe(|| r.clone_tree(ship)));
        CLONES_LEFT.store(isize::MAX, SeqCst);
        let Err(payload) = caught else {
            continue;
        };
        panicked += 1;
        assert_eq!(message(&*payload), "counted clone");
        assert_eq!(moved.load(SeqCst), 0, "budget {budget}: no hook saw a copy");
        assert_eq!(LIVE.load(SeqCst), live, "budget {budget}: nothing leaked");
        assert_eq!(r.len(), len, "budget {budget}: every copy despawned");
        assert!(
            r.children(lord).is_empty(),
            "budget {budget}: no dangling child"
        );
        r.check_hierarchy();
    }
    assert_eq!(panicked, 4, "each budget runs out part-way");
    // A registry hook that panics once the `Loyal` hook moved the copy of `crew`.
    let fail = Arc::new(AtomicUsize::new(1));
    let armed = Arc::clone(&fail);
    r.on_insert::<Name>(move |_, _| {
        if armed.swap(0, SeqCst) == 1 {
            panic!("name hook");
        }
    });
    moved.store(0, SeqCst);
    let caught = panic::catch_unwind(AssertUnwindSafe(|| r.clone_tree(ship)));
    assert_eq!(message(&*caught.unwrap_err()), "name hook");
    assert_eq!(moved.load(SeqCst), 1, "the hooks ran, the move among them");
    assert_eq!(LIVE.load(SeqCst), live, "nothing leaked");
    assert_eq!(r.len(), len, "every copy despawned, the moved one too");
    assert!(r.children(lord).is_empty(), "no dangling child");
    r.check_hierarchy();
    drop(r);
    assert_eq!(LIVE.load(SeqCst), 0);
}

/// The walk's guard against a broken relation counts the lists it expands, not the entries it
/// meets: in one sync point a parent and its grandchildren despawned by commands leave dead
/// entries in the child's list while the parent's subtree is expanded, more entries than the
/// (tiny) world still holds, and the despawn must go through.
#[test]
fn dead_entries_met_by_a_sync_point_s_expansion_are_not_a_broken_relation() {
    for workers in [1, 4] {
        let mut r = registry(workers);
        let p = r.spawn((Name(0),));
        let c = r.spawn_child(p, (Name(1),)).unwrap();
        let gs: Vec<Entity> = (0..5)
            .map(|i| r.spawn_child(c, (Name(10 + i),)).unwrap())
            .collect();
        record(&mut r, |cmds| {
            cmds.despawn(p);
            for &g in &gs {
                cmds.despawn(g);
            }
        });
        assert_eq!(r.len(), 0, "{workers} workers");
        r.check_hierarchy();
    }
}

/// `ChildOf` and `Children` registered for saves by hand (without the remap an import needs)
/// would import the exporter's ids into the relation: refused with a message naming
/// `register_hierarchy`, the registration left as `register_hierarchy` made it.
#[test]
fn the_relation_s_types_are_registered_for_saves_only_by_register_hierarchy() {
    use freyr::hierarchy::{ChildOf, Children};
    let mut r = registry(1);
    let keep = |_: &mut ChildOf, _: &freyr::persist::EntityMap| {};
    for (what, attempt) in [
        (
            "plain",
            catch(|| r.register_persistent::<ChildOf>("freyr.child_of", 1)),
        ),
        (
            "remap",
            catch(|| r.register_persistent_with_remap::<ChildOf>("freyr.child_of", 1, keep)),
        ),
        (
            "children",
            catch(|| r.register_persistent::<Children>("my.children", 1)),
        ),
    ] {
        let msg = message(&*attempt.expect_err(what));
        assert!(msg.contains("register_hierarchy"), "{what}: {msg}");
    }
    // The import still remaps the relation into the new ids.
    let p = r.spawn((Name(0),));
    let c = r.spawn_child(p, (Name(1),)).unwrap();
    let export = r.export(&[p, c]).unwrap();
    let mut other = registry(1);
    other.spawn((Name(9),));
    let map = other.import(&export).unwrap();
    let (p2, c2) = (map.get(p).unwrap(), map.get(c).unwrap());
    assert_eq!(other.parent(c2), Some(p2));
    assert_eq!(other.children(p2), [c2]);
    other.check_hierarchy();
}

/// Runs `f`, catching its panic.
fn catch(f: impl FnOnce()) -> std::thread::Result<()> {
    panic::catch_unwind(AssertUnwindSafe(f))
}
