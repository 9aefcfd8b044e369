//! Hierarchy edits recorded as commands (`HierarchyCommands`): they apply at the sync point in
//! command order with the other commands; a parent despawned in the same sync point takes the
//! children it has once the commands ran; a refused edit is a panic at the sync point that
//! changes nothing and stops no other command; hooks see a consistent relation; the result is
//! the same for every worker count; and a relation made only by commands is in snapshots.

use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use freyr::hierarchy::{ChildOf, HierarchyCommands};
use freyr::{Commands, Phase, Registry};
use freyr_core::Entity;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Name(u32);

impl freyr::StableHash for Name {
    fn stable_hash(&self, h: &mut freyr::hash::StableHasher) {
        self.0.stable_hash(h);
    }
}

fn registry(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_hashable::<Name>();
    r.register_snapshot_copy::<Name>();
    r
}

/// Records `f` from one synchronous callback (one buffer, in record order) and runs the sync
/// point.
fn record(r: &mut Registry, f: impl Fn(&mut Commands<'_>) + Send + Sync) {
    let anchor = r.spawn((Anchor,));
    r.query::<&Anchor>()
        .each_with(|_, _, ctx| f(ctx.commands()));
    r.execute_tasks();
    r.despawn(anchor).unwrap();
}

struct Anchor;

#[test]
fn recorded_edits_apply_in_order_like_the_direct_ones() {
    let mut direct = registry(1);
    let mut recorded = registry(1);
    for r in [&mut direct, &mut recorded] {
        for i in 0..4 {
            r.spawn((Name(i),));
        }
    }
    let e: Vec<Entity> = {
        let mut v: Vec<(Entity, u32)> = Vec::new();
        recorded.query::<&Name>().each(|e, n| v.push((e, n.0)));
        v.sort_by_key(|&(_, n)| n);
        v.into_iter().map(|(e, _)| e).collect()
    };
    let (a, b, c, d) = (e[0], e[1], e[2], e[3]);
    direct.set_parent(b, a).unwrap();
    direct.set_parent(c, a).unwrap();
    direct.set_parent(d, b).unwrap();
    direct.set_parent(c, b).unwrap();
    direct.remove_parent(b).unwrap();
    record(&mut recorded, |cmds| {
        cmds.set_parent(b, a);
        cmds.set_parent(c, a);
        cmds.set_parent(d, b);
        cmds.set_parent(c, b);
        cmds.remove_parent(b);
    });
    recorded.check_hierarchy();
    assert_eq!(recorded.children(a), direct.children(a));
    assert_eq!(recorded.children(b), [d, c]);
    assert_eq!(recorded.parent(b), None);
    assert_eq!(
        recorded.world_hash_all().unwrap(),
        direct.world_hash_all().unwrap()
    );
}

#[test]
fn a_child_of_a_pending_parent_and_a_pending_child() {
    let mut r = registry(2);
    let root = r.spawn((Name(0),));
    record(&mut r, |cmds| {
        let ship = cmds.spawn_child(root, (Name(1),));
        let turret = cmds.spawn_child(ship, (Name(2),));
        cmds.spawn_child(turret, (Name(3),));
        let loose = cmds.spawn((Name(4),));
        cmds.set_parent(loose, ship);
    });
    r.check_hierarchy();
    let names = |list: Vec<Entity>| -> Vec<u32> {
        list.iter().map(|&e| r.get::<Name>(e).unwrap().0).collect()
    };
    assert_eq!(names(r.descendants(root)), [1, 2, 4, 3]);
    // The relation made only by commands is registered: snapshots and the hash carry it.
    let snap = r.snapshot().unwrap();
    let hash = r.world_hash_all().unwrap();
    let ship = r.children(root)[0];
    r.remove_parent(ship).unwrap();
    assert_ne!(r.world_hash_all().unwrap(), hash);
    r.restore(&snap).unwrap();
    assert_eq!(r.world_hash_all().unwrap(), hash);
    assert_eq!(r.parent(ship), Some(root));
}

#[test]
fn a_parent_despawned_later_in_the_sync_point_takes_the_children_attached_before() {
    let mut r = registry(1);
    let p = r.spawn((Name(0),));
    let c = r.spawn((Name(1),));
    let g = r.spawn_child(c, (Name(2),)).unwrap();
    record(&mut r, |cmds| {
        cmds.set_parent(c, p);
        cmds.despawn(p);
    });
    r.check_hierarchy();
    assert!(!r.contains(p) && !r.contains(c) && !r.contains(g));
    assert_eq!(r.len(), 0);
}

#[test]
fn a_parent_spawned_and_despawned_in_one_buffer_takes_its_children() {
    let mut r = registry(1);
    let c = r.spawn((Name(1),));
    record(&mut r, |cmds| {
        let p = cmds.spawn((Name(0),));
        cmds.set_parent(c, p);
        cmds.despawn(p);
    });
    r.check_hierarchy();
    assert!(!r.contains(c));
    assert_eq!(r.len(), 0);
}

#[test]
fn an_edit_after_the_despawn_of_its_parent_is_stale_and_the_child_lives() {
    let mut r = registry(1);
    let p = r.spawn((Name(0),));
    let c = r.spawn((Name(1),));
    record(&mut r, |cmds| {
        cmds.despawn(p);
        cmds.set_parent(c, p);
    });
    r.check_hierarchy();
    assert!(r.contains(c));
    assert_eq!(r.parent(c), None);
    assert_eq!(r.profile().stale_commands, 1);
}

#[test]
fn a_child_moved_away_before_or_after_its_parent_dies_follows_the_final_relation() {
    // Moved before the despawn: it lives under its new parent.
    let mut r = registry(1);
    let p = r.spawn((Name(0),));
    let q = r.spawn((Name(1),));
    let c = r.spawn_child(p, (Name(2),)).unwrap();
    let stays = r.spawn_child(p, (Name(3),)).unwrap();
    record(&mut r, |cmds| {
        cmds.set_parent(c, q);
        cmds.despawn(p);
    });
    r.check_hierarchy();
    assert_eq!(r.parent(c), Some(q));
    assert!(!r.contains(stays));
    // Moved after the despawn (the parent is gone, the child not yet): its parent at the end
    // of the commands is the new one, so it lives there.
    let p2 = r.spawn((Name(4),));
    let c2 = r.spawn_child(p2, (Name(5),)).unwrap();
    record(&mut r, |cmds| {
        cmds.despawn(p2);
        cmds.set_parent(c2, q);
    });
    r.check_hierarchy();
    assert_eq!(r.parent(c2), Some(q));
    assert_eq!(r.children(q), [c, c2]);
    // A despawned child that had been reparented leaves its new parent's list.
    let c3 = r.spawn((Name(6),));
    record(&mut r, |cmds| {
        cmds.set_parent(c3, q);
        cmds.despawn(c3);
    });
    r.check_hierarchy();
    assert_eq!(r.children(q), [c, c2]);
}

#[test]
fn a_recorded_cycle_panics_at_the_sync_point_and_changes_nothing_else() {
    let mut r = registry(2);
    let a = r.spawn((Name(0),));
    let b = r.spawn_child(a, (Name(1),)).unwrap();
    let x = r.spawn((Name(2),));
    let hash_of_relation = |r: &Registry| (r.parent(a), r.parent(b), r.children(a).to_vec());
    let before = hash_of_relation(&r);
    let anchor = r.spawn((Anchor,));
    r.query::<&Anchor>().each_with(|_, _, ctx| {
        let cmds = ctx.commands();
        cmds.set_parent(a, b); // a cycle: refused
        cmds.set_parent(x, b); // still applied
    });
    let err = panic::catch_unwind(AssertUnwindSafe(|| r.execute_tasks())).unwrap_err();
    let msg = err.downcast_ref::<String>().expect("the refusal's message");
    assert!(msg.contains("would make a cycle"), "{msg}");
    assert!(msg.contains("recorded as a command"), "{msg}");
    r.despawn(anchor).unwrap();
    r.check_hierarchy();
    assert_eq!(hash_of_relation(&r), before);
    assert_eq!(r.parent(x), Some(b));
}

/// A recorded edit runs the same hooks as the direct one, in the same order: `on_add` of
/// `ChildOf` for the child, then `on_add` of `Children` for a parent's first child.
#[test]
fn recorded_and_direct_edits_run_the_same_hooks() {
    let run = |recorded: bool| -> Vec<(&'static str, u32)> {
        let mut r = registry(1);
        r.register_hierarchy();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (a, b) = (seen.clone(), seen.clone());
        r.on_add::<ChildOf>(move |child, _| a.lock().unwrap().push(("child", child)));
        r.on_add::<freyr::hierarchy::Children>(move |parent, _| {
            b.lock().unwrap().push(("parent", parent))
        });
        let p = r.spawn((Name(0),));
        let c = r.spawn((Name(1),));
        let d = r.spawn((Name(2),));
        if recorded {
            record(&mut r, |cmds| {
                cmds.set_parent(c, p);
                cmds.set_parent(d, p);
            });
        } else {
            r.set_parent(c, p).unwrap();
            r.set_parent(d, p).unwrap();
        }
        seen.lock()
            .unwrap()
            .iter()
            .map(|&(k, e)| (k, r.get::<Name>(e).unwrap().0))
            .collect()
    };
    let direct = run(false);
    assert_eq!(direct, [("child", 1), ("parent", 0), ("child", 2)]);
    assert_eq!(run(true), direct);
}

#[test]
fn a_hook_that_despawns_a_parent_takes_its_subtree() {
    struct Doom;
    let mut r = registry(1);
    r.register_hierarchy();
    r.on_add::<Doom>(|e, cmds| cmds.despawn(e));
    let p = r.spawn((Name(0),));
    let c = r.spawn_child(p, (Name(1),)).unwrap();
    let g = r.spawn_child(c, (Name(2),)).unwrap();
    r.insert(p, (Doom,)).unwrap();
    r.check_hierarchy();
    assert!(!r.contains(p) && !r.contains(c) && !r.contains(g));
}

#[test]
fn a_hook_can_record_hierarchy_edits() {
    struct Crew;
    let mut r = registry(1);
    let ship = r.spawn((Name(0),));
    r.on_add::<Crew>(move |e, cmds| cmds.set_parent(e, ship));
    let pilot = r.spawn((Name(1), Crew));
    r.check_hierarchy();
    assert_eq!(r.children(ship), [pilot]);
    r.despawn(ship).unwrap();
    assert!(!r.contains(pilot));
}

/// Many parallel systems and chunked callbacks record edits; the world hash is the same for
/// every worker count.
#[test]
fn recorded_edits_give_the_same_world_for_every_worker_count() {
    let run = |workers: usize| -> u64 {
        let mut r = registry(workers);
        let roots: Vec<Entity> = (0..8).map(|i| r.spawn((Name(1000 + i),))).collect();
        for i in 0..2000u32 {
            r.spawn((Name(i),));
        }
        let roots_a = roots.clone();
        r.add_fn_system(
            Phase::Update,
            "adopt",
            move |mut q: freyr::system::Query<&Name>, mut cmds: Commands| {
                q.each(|e, n| {
                    if n.0 < 1000 && n.0 % 3 == 0 {
                        cmds.set_parent(e, roots_a[(n.0 / 3) as usize % roots_a.len()]);
                    }
                });
                cmds.spawn_child(roots_a[0], (Name(5000),));
            },
        )
        .unwrap();
        r.update(0.1);
        r.query::<&Name>().each_async_with(|e, n, ctx| {
            if n.0 < 1000 && n.0 % 7 == 0 {
                ctx.commands().remove_parent(e);
            }
            if n.0 < 1000 && n.0 % 11 == 1 {
                ctx.commands().despawn(e);
            }
        });
        r.execute_tasks();
        r.check_hierarchy();
        r.despawn(roots[3]).unwrap();
        r.check_hierarchy();
        r.world_hash_all().unwrap()
    };
    let hashes: Vec<u64> = [1, 2, 3, 8, 16].iter().map(|&w| run(w)).collect();
    assert!(hashes.iter().all(|&h| h == hashes[0]), "{hashes:?}");
}
