//! A hostile pass over component hooks, part two: subtree despawns (order, panics, a parent
//! hook editing the subtree), restore and load, import, clone and instantiate, dropping the
//! registry, hierarchy commands recorded by hooks. Part one is `hooks_attack.rs`.

mod hooks_attack_support;

use hooks_attack_support::*;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use freyr::hierarchy::HierarchyCommands;
use freyr::{Entity, Registry};

#[test]
fn panicking_on_remove_in_a_subtree_despawn_keeps_the_order() {
    for path in 0..3 {
        let mut registry = Registry::with_workers(4);
        let gone = Arc::new(Mutex::new(Vec::new()));
        let g = gone.clone();
        registry.on_remove::<Part>(move |e, commands| {
            let n = {
                let mut g = g.lock().unwrap();
                g.push(e);
                g.len()
            };
            commands.spawn((A(e.index()),));
            // The ship's and the barrel's hooks panic.
            if n % 2 == 1 {
                panic!("hook {n}");
            }
        });
        let [s, turret, barrel, crew] = ship(&mut registry);
        let result = panic::catch_unwind(AssertUnwindSafe(|| despawn_by(&mut registry, s, path)));
        assert_eq!(message(result.unwrap_err()), "hook 1", "path {path}");
        assert_eq!(
            *gone.lock().unwrap(),
            [s, turret, crew, barrel],
            "path {path}"
        );
        assert_eq!(registry.query::<&Part>().count(), 0);
        // The two hooks that did not panic kept their commands.
        let mut kept: Vec<u32> = Vec::new();
        registry.query::<&A>().each(|_, a| kept.push(a.0));
        assert_eq!(kept, [turret.index(), barrel.index()], "path {path}");
        registry.check_hierarchy();
    }
}

/// The ship's `on_remove` hook edits the subtree being despawned: it spawns a child under the
/// turret and moves the crew to a dock. A direct despawn and a deferred one must leave the same
/// world, and a consistent relation.
#[test]
fn a_parent_hook_that_edits_its_subtree_while_it_goes() {
    let run = |path: u32| {
        let mut registry = Registry::with_workers(2);
        let dock = registry.spawn((Part("dock"),));
        let [s, turret, _, crew] = ship(&mut registry);
        registry.on_remove::<Part>(move |e, commands| {
            if e == s {
                commands.spawn_child(turret, (Part("late"),));
                commands.set_parent(crew, dock);
            }
        });
        despawn_by(&mut registry, s, path);
        registry.check_hierarchy();
        let mut left = Vec::new();
        registry.query::<&Part>().each(|e, p| left.push((e, p.0)));
        (left, registry.children(dock).to_vec())
    };
    let direct = run(0);
    assert_eq!(run(1), direct, "destroy_entity differs from despawn");
    assert_eq!(run(2), direct, "Commands::despawn differs from despawn");
}

#[test]
fn restore_and_load_fire_nothing() {
    let mut registry = Registry::with_workers(2);
    registry.register_snapshot_copy::<A>();
    registry.register_persistent::<A>("a", 1);
    registry.spawn_batch((0..100).map(|i| (A(i),)));
    let snapshot = registry.snapshot().unwrap();
    let bytes = registry.save_to_vec().unwrap();
    let fired = Log::default();
    log_hooks::<A>(&mut registry, "A", &fired);
    let first = with::<A>(&mut registry)[0];
    registry.despawn(first).unwrap();
    take(&fired);
    registry.restore(&snapshot).unwrap();
    registry.load_into(&bytes).unwrap();
    assert_eq!(take(&fired), Vec::<String>::new());
    assert_eq!(registry.query::<&A>().count(), 100);
}

#[test]
fn import_runs_the_hooks_and_matches_an_import_without_them() {
    let mut source = Registry::with_workers(1);
    source.register_persistent::<A>("a", 1);
    source.register_persistent::<B>("b", 1);
    let es: Vec<Entity> = (0..300u32)
        .map(|i| match i % 3 {
            0 => source.spawn((A(i),)),
            1 => source.spawn((A(i), B(i))),
            _ => source.spawn((B(i),)),
        })
        .collect();
    let bytes = source.export(&es).unwrap();
    let import = |hooked: bool| {
        let mut registry = Registry::with_workers(2);
        registry.register_persistent::<A>("a", 1);
        registry.register_persistent::<B>("b", 1);
        let log = Log::default();
        if hooked {
            log_hooks::<A>(&mut registry, "A", &log);
        }
        let map = registry.import(&bytes).unwrap();
        (map.pairs().to_vec(), hashes(&registry), take(&log))
    };
    let (plain_pairs, plain_hash, _) = import(false);
    let (pairs, hash, log) = import(true);
    assert_eq!((pairs, hash), (plain_pairs, plain_hash));
    let added = log.iter().filter(|l| l.starts_with("add A")).count();
    assert_eq!(added, 200, "every imported A arrived through on_add");
}

#[test]
fn an_import_hook_that_despawns_an_imported_entity() {
    let mut source = Registry::with_workers(1);
    source.register_persistent::<A>("a", 1);
    source.register_persistent::<B>("b", 1);
    let es: Vec<Entity> = (0..10u32).map(|i| source.spawn((A(i), B(i)))).collect();
    let bytes = source.export(&es).unwrap();
    let mut registry = Registry::with_workers(1);
    registry.register_persistent::<A>("a", 1);
    registry.register_persistent::<B>("b", 1);
    // A user rule: an entity that arrives with an `A` of an odd index dies at once.
    registry.on_add::<A>(|e, commands| {
        if e.index() % 2 == 1 {
            commands.despawn(e);
        }
    });
    let result = panic::catch_unwind(AssertUnwindSafe(|| registry.import(&bytes)));
    let map = result
        .expect("a hook's despawn is a legal edit, not a broken import")
        .unwrap();
    assert_eq!(map.pairs().len(), 10);
    assert_eq!(registry.len(), 5);
}

#[test]
fn clone_and_instantiate_run_the_hooks_and_a_panicking_one_leaves_no_copy() {
    let mut registry = Registry::with_workers(2);
    registry.register_cloneable::<A>();
    registry.register_cloneable::<B>();
    let prefab = registry.spawn((A(1), B(1)));
    let child = registry.spawn_child(prefab, (A(2),)).unwrap();
    let log = Log::default();
    log_hooks::<A>(&mut registry, "A", &log);
    let copy = registry.clone_entity(child).unwrap();
    assert_eq!(
        take(&log),
        [
            format!("add A {}", copy.index()),
            format!("insert A {}", copy.index())
        ]
    );
    let copies = registry.instantiate(prefab, 3).unwrap();
    assert_eq!(
        take(&log).iter().filter(|l| l.starts_with("add A")).count(),
        6
    );
    assert_eq!(copies.len(), 3);
    let before = (registry.len(), hashes(&registry));
    let n = Arc::new(AtomicUsize::new(0));
    let c = n.clone();
    registry.on_insert::<B>(move |_, _| {
        if c.fetch_add(1, Ordering::Relaxed) == 2 {
            panic!("third B");
        }
    });
    let result = panic::catch_unwind(AssertUnwindSafe(|| registry.instantiate(prefab, 10)));
    assert_eq!(message(result.unwrap_err()), "third B");
    assert_eq!((registry.len(), hashes(&registry)), before);
    registry.check_hierarchy();
}

#[test]
fn dropping_the_registry_fires_no_hook_and_drops_every_value_once() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    struct Counted;
    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::Relaxed);
        }
    }
    let fired = Arc::new(AtomicUsize::new(0));
    {
        let mut registry = Registry::with_workers(4);
        let f = fired.clone();
        registry.on_remove::<A>(move |_, _| {
            f.fetch_add(1, Ordering::Relaxed);
        });
        let f = fired.clone();
        registry.on_add::<Counted>(move |_, _| {
            f.fetch_add(1, Ordering::Relaxed);
        });
        registry.spawn_batch((0..1000).map(|i| (A(i),)));
        // Commands still waiting for a sync point when the registry goes.
        registry.query::<&A>().each_async_with(|e, _, ctx| {
            ctx.commands().insert(e, (Counted,));
            ctx.commands().despawn(e);
        });
    }
    assert_eq!(fired.load(Ordering::Relaxed), 0);
    assert_eq!(DROPS.load(Ordering::Relaxed), 1000);
}

#[test]
fn hook_commands_spawn_children_through_hierarchy_commands() {
    let run = |workers: usize| {
        let mut registry = Registry::with_workers(workers);
        let log = Log::default();
        log_hooks::<B>(&mut registry, "B", &log);
        // Each A gets two children with a B; each B child gets a C grandchild.
        registry.on_add::<A>(|e, commands| {
            let first = commands.spawn_child(e, (B(0),));
            commands.spawn_child(e, (B(1),));
            commands.spawn_child(first, (C(7),));
        });
        let roots = registry.spawn_batch((0..3).map(|i| (A(i),)));
        registry.query::<&A>().each_async_with(|e, _, ctx| {
            if e.index() == 1 {
                ctx.commands().despawn(e);
            }
            let x = ctx.commands().spawn((C(0),));
            ctx.commands().insert(x, (A(9),));
        });
        registry.execute_tasks();
        registry.check_hierarchy();
        for &r in &roots {
            if registry.contains(r) {
                assert_eq!(registry.children(r).len(), 2);
                assert_eq!(registry.descendants(r).len(), 3);
            }
        }
        (take(&log), hashes(&registry), registry.len())
    };
    let one = run(1);
    // 3 + 3 roots with two B children and a C grandchild each, one root's tree despawned.
    assert_eq!(one.2, 5 * 4);
    for workers in [2, 8, 16] {
        assert!(run(workers) == one, "{workers} workers");
    }
}

#[test]
fn a_registry_with_hooks_imports_a_tree() {
    let mut source = Registry::with_workers(1);
    source.register_hierarchy();
    source.register_persistent::<A>("a", 1);
    let p = source.spawn((A(0),));
    let c = source.spawn_child(p, (A(1),)).unwrap();
    let g = source.spawn_child(c, (A(2),)).unwrap();
    let bytes = source.export(&[p, c, g]).unwrap();
    let import = |hooked: bool| {
        let mut registry = Registry::with_workers(1);
        registry.register_hierarchy();
        registry.register_persistent::<A>("a", 1);
        let log = Log::default();
        if hooked {
            log_hooks::<A>(&mut registry, "A", &log);
        }
        let map = registry.import(&bytes).unwrap();
        registry.check_hierarchy();
        let (p, c, g) = (
            map.get(p).unwrap(),
            map.get(c).unwrap(),
            map.get(g).unwrap(),
        );
        assert_eq!(
            (registry.children(p), registry.children(c)),
            (&[c][..], &[g][..])
        );
        (hashes(&registry), take(&log).len())
    };
    let (plain, _) = import(false);
    assert_eq!(import(true), (plain, 6));
}

#[test]
fn an_import_hook_that_despawns_an_imported_parent_keeps_the_relation() {
    let mut source = Registry::with_workers(1);
    source.register_hierarchy();
    source.register_persistent::<A>("a", 1);
    let p = source.spawn((A(0),));
    let c = source.spawn_child(p, (A(1),)).unwrap();
    let g = source.spawn_child(c, (A(2),)).unwrap();
    let bytes = source.export(&[p, c, g]).unwrap();
    for victim in 0..3u32 {
        let mut registry = Registry::with_workers(1);
        registry.register_hierarchy();
        registry.register_persistent::<A>("a", 1);
        registry.on_add::<A>(move |e, commands| {
            if e.index() == victim {
                commands.despawn(e);
            }
        });
        registry.import(&bytes).unwrap();
        registry.check_hierarchy();
        // The victim's subtree went with it.
        assert_eq!(registry.len(), victim as usize, "victim {victim}");
    }
}

/// A clone is one operation for the hooks: a hook that despawns a copy as it arrives (a
/// "despawn on arrival" rule), or removes a component from the template, meets a whole clone.
/// It used to run in the middle of the making: the next step found its copy gone and panicked
/// with the clone half made (or read the template's removed value and panicked).
#[test]
fn a_hook_that_despawns_copies_as_they_arrive() {
    for workers in [1, 2, 8] {
        let mut registry = Registry::with_workers(workers);
        registry.register_cloneable::<A>();
        registry.register_cloneable::<B>();
        let prefab = registry.spawn((A(1), B(1)));
        let child = registry.spawn_child(prefab, (A(2), B(2))).unwrap();
        registry.spawn_child(child, (A(3),)).unwrap();
        let template = [prefab, child];
        // The copies of the middle entity (an `A` of 2) go as soon as they arrive, taking
        // their subtrees; and every arrival strips the template's `B` (a hostile hook).
        registry.on_add::<A>(move |e, commands| {
            let _ = e;
            commands.remove::<(B,)>(template[1]);
        });
        registry.on_insert::<B>(move |e, commands| {
            if e != template[0] && e != template[1] {
                commands.despawn(e);
            }
        });
        let roots = registry.instantiate(prefab, 5).unwrap();
        assert_eq!(roots.len(), 5);
        // Every copy with a `B` went (the roots and the middle copies with their subtrees);
        // the template stays, less the `B` the hooks removed.
        for &root in &roots {
            assert!(!registry.contains(root));
        }
        assert_eq!(registry.len(), 3);
        assert!(registry.get::<B>(child).is_err());
        registry.check_hierarchy();

        // Without `B` on the middle entity now, its copies stay: a clone_tree's hooks give the
        // copy of the leaf's parent a new child, which the relation keeps.
        let mut registry2 = Registry::with_workers(workers);
        registry2.register_cloneable::<A>();
        let root = registry2.spawn((A(1),));
        registry2.spawn_child(root, (A(2),)).unwrap();
        registry2.on_add::<A>(|e, commands| {
            commands.spawn_child(e, (C(9),));
        });
        let before = registry2.len();
        let copy = registry2.clone_tree(root).unwrap();
        // Two copies, each given a child by the hook (which itself has no `A`).
        assert_eq!(registry2.len(), before + 4);
        let kids = registry2.children(copy).to_vec();
        assert_eq!(kids.len(), 2, "the copied child, then the hook's");
        assert_eq!(registry2.get::<A>(kids[0]), Ok(&A(2)));
        assert_eq!(registry2.get::<C>(kids[1]), Ok(&C(9)));
        registry2.check_hierarchy();
    }
}
