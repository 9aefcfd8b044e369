//! Hostile use of the hierarchy's edits: foreign and stale handles, cycles made directly and by
//! commands, the relation's types refused by plain inserts, hooks that edit a dying tree or the
//! copies of a clone, rollbacks, imports and disabled entities: the promises of the docs the
//! other hierarchy tests do not reach. Deep chains and counted clones are in
//! `hierarchy_attack`.

mod hierarchy_support;

use hierarchy_support::*;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use freyr::Registry;
use freyr::hierarchy::{CloneError, HierarchyCommands, HierarchyError};
use freyr_core::{Entity, NoSuchEntity};

/// Runs `f`, catching its panic.
fn catch(f: impl FnOnce()) -> std::thread::Result<()> {
    panic::catch_unwind(AssertUnwindSafe(f))
}

#[test]
fn foreign_entities_are_refused_by_every_call_and_change_nothing() {
    let mut r = registry(1);
    let p = r.spawn((Name(0),));
    let c = r.spawn_child(p, (Name(1),)).unwrap();
    let mut other = registry(1);
    let foreign = other.spawn_batch((0..100).map(|i| (Name(i),)))[50];
    let (len, hash) = (r.len(), r.world_hash_all().unwrap());
    let no = HierarchyError::NoSuchEntity(foreign);
    assert_eq!(r.set_parent(c, foreign), Err(no));
    assert_eq!(r.set_parent(foreign, p), Err(no));
    assert_eq!(r.remove_parent(foreign), Err(no));
    assert_eq!(r.spawn_child(foreign, (Name(7),)), Err(no));
    assert_eq!(
        r.spawn_children(foreign, (0..3).map(|i| (Name(i),))),
        Err(no)
    );
    assert_eq!(
        r.clone_entity(foreign),
        Err(CloneError::NoSuchEntity(foreign))
    );
    assert_eq!(
        r.clone_tree(foreign),
        Err(CloneError::NoSuchEntity(foreign))
    );
    assert_eq!(
        r.instantiate(foreign, 0),
        Err(CloneError::NoSuchEntity(foreign))
    );
    assert_eq!(r.disable(foreign), Err(NoSuchEntity(foreign)));
    assert_eq!(r.enable(foreign), Err(NoSuchEntity(foreign)));
    assert_eq!(r.despawn(foreign), Err(NoSuchEntity(foreign)));
    assert!(!r.is_disabled(foreign));
    assert_eq!(r.parent(foreign), None);
    assert!(r.children(foreign).is_empty());
    assert!(r.descendants(foreign).is_empty());
    assert_eq!(r.ancestors(foreign).count(), 0);
    // Recorded: skipped as stale.
    assert!(
        record(&mut r, move |cmds| {
            cmds.set_parent(c, foreign);
            cmds.set_parent(foreign, p);
            cmds.remove_parent(foreign);
        })
        .is_none()
    );
    assert_eq!(r.parent(c), Some(p));
    assert_eq!((r.len(), r.world_hash_all().unwrap()), (len, hash));
    r.check_hierarchy();
}

#[test]
fn a_stale_handle_never_touches_the_slots_new_occupant() {
    let mut r = registry(1);
    let p = r.spawn((Name(0),));
    let q = r.spawn((Name(1),));
    let old = r.spawn_child(p, (Name(2),)).unwrap();
    let grandchild = r.spawn_child(old, (Name(3),)).unwrap();
    r.despawn(old).unwrap();
    assert!(!r.contains(grandchild));
    // Reuse the slots until the stale handle's index has a new occupant.
    let mut fresh = Vec::new();
    let new = loop {
        let e = r.spawn((Name(9),));
        fresh.push(e);
        if e.index() == old.index() {
            break e;
        }
        assert!(fresh.len() < 10, "the slot is reused");
    };
    assert_ne!(new, old);
    r.set_parent(new, q).unwrap();
    let child_of_new = r.spawn_child(new, (Name(4),)).unwrap();
    r.disable(new).unwrap();
    let (len, hash) = (r.len(), r.world_hash_all().unwrap());
    let no = HierarchyError::NoSuchEntity(old);
    assert_eq!(r.set_parent(old, p), Err(no));
    assert_eq!(r.set_parent(p, old), Err(no));
    assert_eq!(r.remove_parent(old), Err(no));
    assert_eq!(r.spawn_child(old, (Name(5),)), Err(no));
    assert_eq!(r.parent(old), None);
    assert!(r.children(old).is_empty());
    assert!(r.descendants(old).is_empty());
    assert_eq!(r.ancestors(old).count(), 0);
    assert!(!r.is_disabled(old));
    assert_eq!(r.enable(old), Err(NoSuchEntity(old)));
    assert_eq!(r.disable(old), Err(NoSuchEntity(old)));
    assert_eq!(r.clone_tree(old), Err(CloneError::NoSuchEntity(old)));
    assert_eq!(r.instantiate(old, 4), Err(CloneError::NoSuchEntity(old)));
    assert_eq!(r.despawn(old), Err(NoSuchEntity(old)));
    assert!(
        record(&mut r, move |cmds| {
            cmds.set_parent(old, p);
            cmds.remove_parent(old);
            cmds.despawn(old);
            cmds.spawn_child(old, (Name(6),));
        })
        .is_none()
    );
    // The recorded spawn_child made a root (its parent was stale); nothing else changed.
    assert_eq!(r.len(), len + 1);
    let orphan: Vec<Entity> = {
        let mut v = Vec::new();
        r.query::<&Name>().each(|e, n| {
            if n.0 == 6 {
                v.push(e);
            }
        });
        v
    };
    assert_eq!(orphan.len(), 1);
    assert_eq!(r.parent(orphan[0]), None);
    r.despawn(orphan[0]).unwrap();
    assert_eq!((r.len(), r.world_hash_all().unwrap()), (len, hash));
    assert_eq!(r.parent(new), Some(q));
    assert_eq!(r.children(new), [child_of_new]);
    assert!(r.is_disabled(new));
    r.check_hierarchy();
}

#[test]
fn cycles_are_refused_directly_and_by_commands_with_the_world_unchanged() {
    let mut r = registry(2);
    let a = r.spawn((Name(0),));
    let b = r.spawn_child(a, (Name(1),)).unwrap();
    let c = r.spawn_child(b, (Name(2),)).unwrap();
    let x = r.spawn((Name(3),));
    let hash = r.world_hash_all().unwrap();
    for (child, parent) in [(a, a), (a, c), (b, c), (c, c)] {
        assert_eq!(
            r.set_parent(child, parent),
            Err(HierarchyError::Cycle { child, parent })
        );
        assert_eq!(r.world_hash_all().unwrap(), hash);
    }
    // Recorded: a self-parent, then a cycle closed by two edits of one buffer (the second
    // is refused), and a cycle through a pending child; the other edits apply.
    let panic = record(&mut r, move |cmds| {
        cmds.set_parent(x, x);
        cmds.set_parent(x, c); // applied: x under c
        cmds.set_parent(a, x); // a cycle now: refused
        let pending = cmds.spawn_child(x, (Name(4),));
        cmds.set_parent(x, pending); // a cycle through the pending child: refused
    })
    .expect("a refused cycle panics at the sync point");
    let msg = message(&*panic);
    assert!(msg.contains("cycle"), "{msg}");
    assert_eq!(r.parent(x), Some(c));
    assert_eq!(r.parent(a), None);
    assert_eq!(r.children(x).len(), 1);
    assert_eq!(
        r.ancestors(r.children(x)[0]).collect::<Vec<_>>(),
        [x, c, b, a]
    );
    r.check_hierarchy();
    // The registry stays usable after the refused commands.
    r.despawn(a).unwrap();
    assert!(r.is_empty());
}

#[test]
fn hooks_that_edit_a_dying_tree_leave_a_whole_relation() {
    for workers in [1, 4] {
        let mut r = registry(workers);
        let order = Arc::new(Mutex::new(Vec::new()));
        let log = order.clone();
        let p = r.spawn((Name(0),));
        let kids = r.spawn_children(p, (1..4).map(|i| (Name(i),))).unwrap();
        let grandkid = r.spawn_child(kids[1], (Name(10),)).unwrap();
        let bystander = r.spawn((Name(20),));
        // When the parent goes, its hook adopts a bystander under the dead parent and spawns a
        // child of it: both name a dead parent at apply time (stale, the spawn a root).
        r.on_remove::<Name>(move |e, cmds| {
            log.lock().unwrap().push(e);
            if e == p {
                cmds.set_parent(bystander, p);
                cmds.spawn_child(p, (Name(30),));
            }
        });
        r.destroy_entity(p);
        r.execute_tasks();
        let mut expected = vec![p];
        expected.extend(&kids);
        expected.push(grandkid);
        assert_eq!(*order.lock().unwrap(), expected, "workers {workers}");
        assert_eq!(r.len(), 2);
        assert_eq!(r.parent(bystander), None);
        r.check_hierarchy();
    }
}

#[test]
fn a_refused_clone_spawns_nothing_even_for_zero_copies() {
    struct Socket;
    let mut r = registry(1);
    let p = r.spawn((Name(0),));
    let deep = r.spawn_child(p, (Name(1),)).unwrap();
    let deeper = r.spawn_child(deep, (Name(2), Socket)).unwrap();
    let len = r.len();
    let err = r.instantiate(p, 0).unwrap_err();
    assert_eq!(
        err,
        CloneError::NotCloneable {
            entity: deeper,
            type_name: std::any::type_name::<Socket>()
        }
    );
    // A clone of the entity alone does not look at its children.
    let lone = r.clone_entity(p).unwrap();
    assert!(r.children(lone).is_empty());
    assert_eq!(r.parent(lone), None);
    r.despawn(lone).unwrap();
    assert_eq!(r.clone_tree(deep), Err(err));
    assert_eq!(r.len(), len);
    assert_eq!(r.instantiate(deeper, 0).unwrap_err(), err);
    r.despawn(p).unwrap();
    assert_eq!(r.instantiate(p, 0), Err(CloneError::NoSuchEntity(p)));
}

#[test]
fn the_linear_check_still_finds_a_cycle_made_by_hand() {
    use freyr::hierarchy::{ChildOf, Children};
    let mut r = registry(1);
    let p = r.spawn((Name(0),));
    let a = r.spawn_child(p, (Name(1),)).unwrap();
    let b = r.spawn_child(a, (Name(2),)).unwrap();
    let c = r.spawn_child(b, (Name(3),)).unwrap();
    // Long chains first, so the check has entities known to reach a root when it meets the
    // cycle.
    let mut leaf = p;
    for i in 0..50 {
        leaf = r.spawn_child(leaf, (Name(100 + i),)).unwrap();
    }
    r.check_hierarchy();
    // Bypassing the relation (copies of its values inserted by hand): a names b, b lists a.
    let b_is_parent = *r.get::<ChildOf>(c).unwrap();
    let lists_a: Children = r.get::<Children>(p).unwrap().clone();
    assert_eq!(lists_a.as_slice()[0], a);
    r.despawn(c).unwrap();
    // The registry's own `insert` refuses both types, before anything changes.
    let (hash, len) = (r.world_hash_all().unwrap(), r.len());
    for attempt in [
        catch(|| r.insert(a, (b_is_parent,)).unwrap()),
        catch(|| r.insert(b, (lists_a.clone(),)).unwrap()),
        catch(|| {
            r.spawn((b_is_parent, Name(9)));
        }),
        catch(|| drop(r.spawn_batch([(lists_a.clone(),)]))),
        catch(|| {
            let _ = r.remove::<(ChildOf,)>(a);
        }),
        catch(|| {
            let _ = r.spawn_child(p, (lists_a.clone(),));
        }),
        catch(|| {
            let _ = r.spawn_children(p, [(Name(8), b_is_parent)]);
        }),
    ] {
        let msg = message(&*attempt.expect_err("refused"));
        assert!(
            msg.contains("cannot add, remove or overwrite `ChildOf` or `Children`"),
            "{msg}"
        );
    }
    assert_eq!((r.world_hash_all().unwrap(), r.len()), (hash, len));
    r.check_hierarchy();
    // `world_mut` is not checked.
    r.world_mut().insert(a, (b_is_parent,)).unwrap();
    r.world_mut().insert(b, (lists_a,)).unwrap();
    let caught = panic::catch_unwind(AssertUnwindSafe(|| r.check_hierarchy()));
    let msg = message(&*caught.expect_err("a broken relation is reported"));
    assert!(msg.contains("hierarchy broken: a cycle above"), "{msg}");
    // The walks stop at the cycle with a message, where they would grow without end.
    let x = r.spawn((Name(7),));
    let (len, hash) = (r.len(), r.world_hash_all().unwrap());
    for (what, walk) in [
        ("descendants", catch(|| drop(r.descendants(p)))),
        ("ancestors", catch(|| assert!(r.ancestors(a).count() > 0))),
        ("set_parent", catch(|| r.set_parent(x, a).unwrap())),
    ] {
        let msg = message(&*walk.expect_err(what));
        assert!(
            msg.contains("freyr: hierarchy broken: the "),
            "{what}: {msg}"
        );
        assert!(msg.contains("check_hierarchy"), "{what}: {msg}");
    }
    assert_eq!((r.len(), r.world_hash_all().unwrap()), (len, hash));
}

/// A turret: its `on_add` hook gives every turret a muzzle child, as game code would.
#[derive(Clone)]
struct Turret;
#[derive(Clone)]
struct Muzzle;

#[test]
fn a_hook_that_gives_each_copy_a_child_keeps_the_relation_whole() {
    let mut r = registry(2);
    r.register_cloneable::<Turret>();
    r.register_cloneable::<Muzzle>();
    r.on_add::<Turret>(|e, cmds| {
        cmds.spawn_child(e, (Muzzle,));
    });
    let ship = r.spawn((Name(0),));
    let turret = r.spawn_child(ship, (Name(1), Turret)).unwrap();
    let barrel = r.spawn_child(turret, (Name(2),)).unwrap();
    assert_eq!(
        r.children(turret).len(),
        2,
        "the template's muzzle and barrel"
    );
    assert_eq!(r.get::<Name>(r.children(turret)[1]), Ok(&Name(2)));
    let _ = barrel;
    let copies = r.instantiate(ship, 3).unwrap();
    r.check_hierarchy();
    for copy in copies {
        let [t] = r.children(copy) else {
            panic!("one turret")
        };
        // The copies of the template's muzzle and barrel, and the hook's own muzzle.
        let kids = r.children(*t).to_vec();
        assert_eq!(kids.len(), 3);
        assert_eq!(
            kids.iter().filter(|&&k| r.get::<Muzzle>(k).is_ok()).count(),
            2
        );
        assert_eq!(
            kids.iter().filter(|&&k| r.get::<Name>(k).is_ok()).count(),
            1
        );
    }
    assert_eq!(r.len(), 4 + 3 * 5);
}

#[derive(Clone)]
struct Loyal;

#[test]
fn a_hook_that_moves_a_copy_elsewhere_keeps_the_relation_whole() {
    let mut r = registry(1);
    r.register_cloneable::<Loyal>();
    let lord = r.spawn((Name(100),));
    r.on_add::<Loyal>(move |e, cmds| cmds.set_parent(e, lord));
    let ship = r.spawn((Name(0),));
    let crew = r.spawn_child(ship, (Name(1),)).unwrap();
    r.insert(crew, (Loyal,)).unwrap();
    assert_eq!(
        r.parent(crew),
        Some(lord),
        "the hook moved the template's crew"
    );
    r.set_parent(crew, ship).unwrap();
    let copy = r.clone_tree(ship).unwrap();
    r.check_hierarchy();
    assert_eq!(r.len(), 5);
    // The copy of the crew was linked under the ship's copy, then the hook moved it.
    assert!(r.children(copy).is_empty());
    let [moved] = r.children(lord) else {
        panic!("the hook moved the copy under the lord")
    };
    assert_ne!(*moved, crew);
    assert_eq!(r.get::<Name>(*moved), Ok(&Name(1)));
    assert_eq!(r.parent(*moved), Some(lord));
}

#[test]
fn a_rollback_to_before_the_relation_was_used_brings_back_roots() {
    let mut r = Registry::with_workers(2);
    r.register_hashable::<Name>();
    r.register_snapshot_copy::<Name>();
    let (a, b) = (r.spawn((Name(0),)), r.spawn((Name(1),)));
    let snapshot = r.snapshot().unwrap();
    // The relation and the marker are registered after the snapshot was taken.
    r.set_parent(b, a).unwrap();
    r.disable(a).unwrap();
    r.restore(&snapshot).unwrap();
    assert_eq!(r.parent(b), None);
    assert!(r.children(a).is_empty());
    assert!(!r.is_disabled(a));
    assert_eq!(r.query::<&Name>().count(), 2);
    r.check_hierarchy();
    // The relation still works, and despawns still take subtrees.
    r.set_parent(b, a).unwrap();
    r.despawn(a).unwrap();
    assert!(r.is_empty());
}

#[test]
fn an_import_refused_for_an_unknown_relation_changes_nothing() {
    let mut r = registry(1);
    let p = r.spawn((Name(0),));
    let c = r.spawn_child(p, (Name(1),)).unwrap();
    let bytes = r.export(&[p, c]).unwrap();
    let mut bare = Registry::with_workers(1);
    bare.register_hashable::<Name>();
    bare.register_persistent::<Name>("test.name", 1);
    bare.spawn((Name(7),));
    let hash = bare.world_hash_all().unwrap();
    assert!(bare.import(&bytes).is_err());
    assert_eq!((bare.len(), bare.world_hash_all().unwrap()), (1, hash));
    // Registered: it arrives whole.
    bare.register_hierarchy();
    bare.register_disabled();
    let map = bare.import(&bytes).unwrap();
    assert_eq!(bare.children(map.get(p).unwrap()), [map.get(c).unwrap()]);
    bare.check_hierarchy();
}

#[test]
fn an_export_with_a_hole_in_the_middle_cuts_both_sides() {
    let mut r = registry(1);
    let a = r.spawn((Name(0),));
    let b = r.spawn_child(a, (Name(1),)).unwrap();
    let d = r.spawn_child(b, (Name(2),)).unwrap();
    let e = r.spawn_child(d, (Name(3),)).unwrap();
    let c = r.spawn_child(a, (Name(4),)).unwrap();
    // b is left out: a keeps only c, d arrives as a root with its child e.
    let bytes = r.export(&[a, d, e, c]).unwrap();
    let mut other = registry(1);
    let map = other.import(&bytes).unwrap();
    let m = |x| map.get(x).unwrap();
    assert_eq!(other.children(m(a)), [m(c)]);
    assert_eq!(other.parent(m(d)), None);
    assert_eq!(other.children(m(d)), [m(e)]);
    other.check_hierarchy();
    // The detached placeholder never leaks out: every ChildOf names a live entity.
    let mut parents = Vec::new();
    other
        .query::<&freyr::hierarchy::ChildOf>()
        .each(|_, c| parents.push(c.parent()));
    assert!(parents.iter().all(|&p| other.contains(p)));
    assert_eq!(parents.len(), 2);
}

#[test]
fn setting_the_same_parent_again_runs_no_hook_and_stamps_nothing() {
    let mut r = registry(1);
    let p = r.spawn((Name(0),));
    let kids = r.spawn_children(p, (1..4).map(|i| (Name(i),))).unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let (s1, s2) = (seen.clone(), seen.clone());
    r.on_insert::<freyr::hierarchy::ChildOf>(move |_, _| {
        s1.fetch_add(1, SeqCst);
    });
    r.on_insert::<freyr::hierarchy::Children>(move |_, _| {
        s2.fetch_add(1, SeqCst);
    });
    r.update(0.0);
    r.update(0.0);
    let since = r.tick() - 1;
    let hash = r.world_hash_all().unwrap();
    r.set_parent(kids[0], p).unwrap();
    assert_eq!(r.remove_parent(p), Ok(None));
    assert!(
        record(&mut r, {
            let kids = kids.clone();
            move |cmds| {
                cmds.set_parent(kids[1], p);
                cmds.remove_parent(p);
            }
        })
        .is_none()
    );
    assert_eq!(r.children(p), kids, "the place among the siblings is kept");
    assert_eq!(seen.load(SeqCst), 0);
    assert_eq!(r.world_hash_all().unwrap(), hash);
    let mut changed = 0;
    r.query::<&freyr::hierarchy::Children>()
        .filter_changed::<freyr::hierarchy::Children>(since)
        .each(|_, _| changed += 1);
    assert_eq!(changed, 0, "no Children was written");
}

#[test]
fn disabled_parents_and_children_still_go_together() {
    let mut r = registry(2);
    let p = r.spawn((Name(0),));
    let kids = r.spawn_children(p, (1..4).map(|i| (Name(i),))).unwrap();
    let grandkid = r.spawn_child(kids[1], (Name(10),)).unwrap();
    r.disable(p).unwrap();
    r.disable(grandkid).unwrap();
    // Not inherited: the enabled children are still seen.
    assert_eq!(r.query::<&Name>().count(), 3);
    // Disabling moves rows but never the relation.
    assert_eq!(r.children(p), kids);
    assert_eq!(r.parent(grandkid), Some(kids[1]));
    // A template with a disabled descendant makes enabled copies of it.
    let copy = r.clone_tree(kids[1]).unwrap();
    assert_eq!(r.parent(copy), None, "a clone of a child is a root");
    assert_eq!(r.children(kids[1]), [grandkid], "the template is untouched");
    assert!(!r.is_disabled(r.children(copy)[0]));
    r.despawn(copy).unwrap();
    // A recorded despawn of the disabled parent takes every child, disabled or not.
    assert!(record(&mut r, move |cmds| cmds.despawn(p)).is_none());
    assert!(r.is_empty());
}

#[test]
fn instantiating_a_child_template_makes_roots_and_leaves_the_template() {
    let mut r = registry(3);
    let ship = r.spawn((Name(0),));
    let jet = r.spawn_child(ship, (Name(1),)).unwrap();
    let pilot = r.spawn_child(jet, (Name(2),)).unwrap();
    let hash = r.world_hash_all().unwrap();
    let jets = r.instantiate(jet, 4).unwrap();
    assert_eq!(r.children(ship), [jet]);
    assert_eq!(r.children(jet), [pilot]);
    for &j in &jets {
        assert_eq!(r.parent(j), None);
        let [p] = r.children(j) else { panic!() };
        assert_eq!(r.parent(*p), Some(j));
        assert_eq!(r.get::<Name>(*p), Ok(&Name(2)));
    }
    for j in jets {
        r.despawn(j).unwrap();
    }
    assert_eq!(r.world_hash_all().unwrap(), hash);
    r.check_hierarchy();
}

#[test]
fn a_refused_call_on_a_fresh_registry_leaves_even_the_hash_unchanged() {
    let mut r = Registry::with_workers(1);
    r.register_hashable::<Name>();
    let alive = r.spawn((Name(0),));
    let dead = r.spawn((Name(1),));
    r.despawn(dead).unwrap();
    let (hash, count) = (r.world_hash_all().unwrap(), r.hashable_count());
    let no = HierarchyError::NoSuchEntity(dead);
    assert_eq!(r.set_parent(alive, dead), Err(no));
    assert_eq!(r.set_parent(dead, alive), Err(no));
    assert_eq!(
        r.set_parent(alive, alive),
        Err(HierarchyError::Cycle {
            child: alive,
            parent: alive
        })
    );
    assert_eq!(r.remove_parent(dead), Err(no));
    assert_eq!(r.spawn_child(dead, (Name(2),)), Err(no));
    assert_eq!(r.spawn_children(dead, [(Name(3),)]), Err(no));
    assert_eq!(r.disable(dead), Err(NoSuchEntity(dead)));
    assert_eq!(r.enable(dead), Err(NoSuchEntity(dead)));
    assert_eq!(r.clone_tree(dead), Err(CloneError::NoSuchEntity(dead)));
    assert_eq!(
        (r.world_hash_all().unwrap(), r.hashable_count()),
        (hash, count)
    );
    // An edit that succeeds registers the relation.
    let child = r.spawn_child(alive, (Name(4),)).unwrap();
    assert_eq!(r.hashable_count(), count + 2);
    assert_eq!(r.parent(child), Some(alive));
}
