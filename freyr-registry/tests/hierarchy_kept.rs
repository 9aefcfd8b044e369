//! Every door that writes a component by type refuses `ChildOf` and `Children`, which the
//! registry keeps: `get_mut`, `&mut` queries, function systems whose parameters
//! write them, and the commands that insert, spawn and remove. Each refusal is checked to change
//! nothing (world hash, entity count, the relation's invariants), and reading both types still
//! works everywhere. `world_mut`, the raw door, stays open (tested in `hierarchy_attack_edits`).

mod hierarchy_support;

use hierarchy_support::*;
use std::panic::{self, AssertUnwindSafe};

use freyr::hierarchy::{ChildOf, Children, HierarchyCommands};
use freyr::system::{Query, ScheduleError};
use freyr::{Commands, Phase, QueryError, Registry, Without};

/// A parent with two children and a grandchild, all named.
fn family(workers: usize) -> (Registry, [freyr::Entity; 4]) {
    let mut r = registry(workers);
    let p = r.spawn((Name(0),));
    let a = r.spawn_child(p, (Name(1),)).unwrap();
    let b = r.spawn_child(p, (Name(2),)).unwrap();
    let g = r.spawn_child(a, (Name(3),)).unwrap();
    (r, [p, a, b, g])
}

/// The registry's state that a refused call must leave as it was.
fn state(r: &mut Registry) -> (usize, u64) {
    r.check_hierarchy();
    (r.len(), r.world_hash_all().unwrap())
}

fn refused(f: impl FnOnce()) -> String {
    let caught = panic::catch_unwind(AssertUnwindSafe(f)).expect_err("the call was refused");
    message(&*caught)
}

#[test]
fn get_mut_refuses_both_types_and_changes_nothing() {
    let (mut r, [p, a, b, _]) = family(2);
    let before = state(&mut r);
    // The attacks a `&mut` allows: copy one child's parent over another's, empty a list.
    let msg = refused(|| {
        let other = *r.get::<ChildOf>(a).unwrap();
        *r.get_mut::<ChildOf>(b).unwrap() = other;
    });
    assert!(msg.contains("Registry::get_mut"), "{msg}");
    assert!(msg.contains("set_parent"), "{msg}");
    let msg = refused(|| drop(std::mem::take(r.get_mut::<Children>(p).unwrap())));
    assert!(msg.contains("`ChildOf` or `Children`"), "{msg}");
    assert_eq!(state(&mut r), before);
    // Refused before the lookup: a stale handle or an entity without the type panics the same.
    r.despawn(b).unwrap();
    let after = state(&mut r);
    refused(|| drop(r.get_mut::<ChildOf>(b)));
    refused(|| drop(r.get_mut::<Children>(b)));
    assert_eq!(state(&mut r), after);
    // Reads and other components' writes are untouched.
    assert_eq!(r.get::<ChildOf>(a).unwrap().parent(), p);
    assert_eq!(r.get::<Children>(p).unwrap().as_slice(), [a]);
    r.get_mut::<Name>(a).unwrap().0 = 9;
    assert_eq!(r.get::<Name>(a), Ok(&Name(9)));
}

#[test]
fn queries_that_write_either_type_are_refused_with_a_typed_error() {
    let (mut r, [p, a, b, g]) = family(2);
    let before = state(&mut r);
    for err in [
        r.try_query::<&mut ChildOf>().err(),
        r.try_query::<(&Name, &mut Children)>().err(),
        r.try_query_filtered::<&mut ChildOf, Without<Children>>()
            .err(),
        r.try_query::<(Option<&mut ChildOf>,)>().err(),
    ] {
        let err = err.expect("refused");
        assert!(
            matches!(err, QueryError::KeptComponent { type_name } if type_name.contains("ChildOf") || type_name.contains("Children")),
            "{err:?}"
        );
        assert!(err.to_string().contains("set_parent"), "{err}");
    }
    // The panicking form names the same reason and runs nothing.
    let msg = refused(|| r.query::<&mut ChildOf>().each(|_, _| unreachable!()));
    assert!(msg.contains("cannot write"), "{msg}");
    let msg = refused(|| {
        r.query::<&mut Children>()
            .each_async(|_, list| std::mem::take(list).len().to_string().clear());
        r.execute_tasks();
    });
    assert!(msg.contains("cannot write"), "{msg}");
    assert_eq!(state(&mut r), before);
    // Reading both, and writing other types beside them, still works.
    let mut parents = Vec::new();
    r.query::<(&ChildOf, &mut Name)>().each(|e, (c, n)| {
        n.0 += 10;
        parents.push((e, c.parent()));
    });
    parents.sort();
    let mut expected = vec![(a, p), (b, p), (g, a)];
    expected.sort();
    assert_eq!(parents, expected);
    assert_eq!(r.query::<&Children>().count(), 2);
}

#[test]
fn function_systems_that_write_either_type_are_refused_at_registration() {
    let (mut r, [p, a, ..]) = family(2);
    let before = state(&mut r);
    let err = r
        .add_fn_system(Phase::Update, "steal", |_: Query<&mut ChildOf>| {})
        .unwrap_err();
    assert_eq!(
        err,
        ScheduleError::KeptComponent {
            system: "steal".into(),
            type_name: core::any::type_name::<ChildOf>(),
        }
    );
    assert!(err.to_string().contains("HierarchyCommands"), "{err}");
    let err = r
        .add_fn_system(
            Phase::Update,
            "empty",
            |_: Query<&Name>, _: Query<(&ChildOf, &mut Children)>| {},
        )
        .unwrap_err();
    assert!(
        matches!(err, ScheduleError::KeptComponent { .. }),
        "{err:?}"
    );
    assert_eq!(r.system_count(Phase::Update), 0);
    r.update(0.0);
    assert_eq!(state(&mut r).1, before.1);
    // Reading them in a system, and moving a child with the hierarchy's commands, is the way.
    r.add_fn_system(
        Phase::Update,
        "adopt",
        move |mut q: Query<(&ChildOf, &Name)>, mut c: Commands| {
            let mut deep = Vec::new();
            q.each(|e, (parent, _)| {
                if parent.parent() != p {
                    deep.push(e);
                }
            });
            for e in deep {
                c.set_parent(e, p);
            }
        },
    )
    .unwrap();
    r.update(0.0);
    r.check_hierarchy();
    assert_eq!(r.get::<Children>(p).unwrap().len(), 3);
    assert_eq!(r.get::<Children>(a).unwrap().len(), 0);
}

#[test]
fn commands_that_insert_spawn_or_remove_either_type_panic_and_apply_nothing() {
    type Attack = fn(&mut Commands, [freyr::Entity; 4], ChildOf);
    let attacks: [(&str, Attack); 4] = [
        ("Commands::insert", |c, [_, _, b, _], copy| {
            c.insert(b, (copy,))
        }),
        ("Commands::spawn", |c, _, copy| {
            let _ = c.spawn((Name(7), copy));
        }),
        ("Commands::remove", |c, [_, a, ..], _| {
            c.remove::<(ChildOf,)>(a)
        }),
        ("Commands::remove", |c, [p, ..], _| {
            c.remove::<(Name, Children)>(p)
        }),
    ];
    for workers in [1, 2, 8] {
        for (call, attack) in attacks {
            let (mut r, family) = family(workers);
            let before = state(&mut r);
            let copy = *r.get::<ChildOf>(family[3]).unwrap();
            // From a launch's callback: the chunk's other commands are discarded with it.
            let msg = refused(|| {
                r.query::<&Name>().each_async_with(move |_, _, ctx| {
                    let c = ctx.commands();
                    c.insert(family[0], (Name(99),));
                    attack(c, family, copy);
                });
                r.execute_tasks();
            });
            assert!(msg.contains(call), "{workers} workers, {call}: {msg}");
            assert_eq!(state(&mut r), before, "{workers} workers, {call}");
            // From a function system: its commands are discarded whole.
            r.add_fn_system(Phase::Update, "attack", move |mut c: Commands| {
                c.insert(family[0], (Name(99),));
                attack(&mut c, family, copy);
            })
            .unwrap();
            let msg = refused(|| r.update(0.0));
            assert!(msg.contains(call), "{workers} workers, {call}: {msg}");
            assert_eq!(state(&mut r).1, before.1, "{workers} workers, {call}");
            assert_eq!(r.get::<Name>(family[0]), Ok(&Name(0)));
        }
    }
}

#[test]
fn the_hierarchy_commands_still_edit_the_relation() {
    let (mut r, [p, a, b, g]) = family(2);
    r.query::<&Name>().each_async_with(move |e, n, ctx| {
        if n.0 == 3 {
            let c = ctx.commands();
            c.set_parent(e, b);
            c.spawn_child(b, (Name(4),));
        }
    });
    r.execute_tasks();
    r.check_hierarchy();
    assert_eq!(r.parent(g), Some(b));
    assert_eq!(r.get::<Children>(b).unwrap().len(), 2);
    assert_eq!(r.get::<Children>(a).unwrap().len(), 0);
    assert_eq!(r.parent(b), Some(p));
}

/// Registering one side of the relation on its own (for snapshots, or excluded from them)
/// would make `register_hierarchy` skip both and leave the other unregistered: a snapshot of a
/// world with a parent then failed with `MissingTypes` naming `Children`. Each is refused,
/// naming `register_hierarchy`, before it registers anything.
#[test]
fn registering_one_side_of_the_relation_alone_is_refused() {
    type Register = fn(&mut Registry);
    let calls: [(&str, Register); 5] = [
        ("copy ChildOf", |r| r.register_snapshot_copy::<ChildOf>()),
        ("clone ChildOf", |r| r.register_snapshot_clone::<ChildOf>()),
        ("clone Children", |r| {
            r.register_snapshot_clone::<Children>()
        }),
        ("exclude ChildOf", |r| r.exclude_from_snapshot::<ChildOf>()),
        ("exclude Children", |r| {
            r.exclude_from_snapshot::<Children>()
        }),
    ];
    for (what, call) in calls {
        let mut r = Registry::with_workers(1);
        let msg = refused(|| call(&mut r));
        assert!(msg.contains("register_hierarchy"), "{what}: {msg}");
        // Nothing was registered: the hierarchy registers both sides, and snapshots work.
        let p = r.spawn(());
        let c = r.spawn_child(p, ()).unwrap();
        let snapshot = r.snapshot().unwrap_or_else(|e| panic!("{what}: {e:?}"));
        r.remove_parent(c).unwrap();
        r.restore(&snapshot).unwrap();
        r.check_hierarchy();
        assert_eq!(r.parent(c), Some(p), "{what}");
    }
}

/// `propagate` writes its `G` on every entity of every tree: with `G = Children` it would
/// overwrite each parent's list (a root's `Children` emptied, its children no longer listed).
/// Refused before anything runs; reading the relation's types as the pass's `L` is fine.
#[test]
fn propagate_refuses_to_write_the_relation() {
    let (mut r, [p, a, ..]) = family(2);
    let before = state(&mut r);
    let msg = refused(|| {
        r.propagate::<Name, Children>(|_| Children::default(), |_, _| Children::default());
    });
    assert!(msg.contains("Registry::propagate"), "{msg}");
    let msg = refused(|| {
        let stolen = *r.get::<ChildOf>(a).unwrap();
        r.propagate::<Name, ChildOf>(|_| stolen, |_, _| stolen);
    });
    assert!(msg.contains("`ChildOf` or `Children`"), "{msg}");
    assert_eq!(state(&mut r), before);
    assert_eq!(r.get::<Children>(p).unwrap().len(), 2);
}
