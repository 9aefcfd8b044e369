//! A hostile user against the snapshot, save and export contracts, with the features combined:
//! a hierarchy with disabled entities and deadline jobs in flight carried by a snapshot into
//! another registry and by a save into one that registered its types in another order; forged
//! hierarchies (a cycle, a `ChildOf` its parent does not list) in a save and an export, which a
//! load and an import must refuse with the registry unchanged; a subtree exported with
//! references leaving it and imported twice; imports beside stale handles. `Drop`s that panic,
//! unknown types and save files are in `persist_attack_drops`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use freyr::hierarchy::{ChildOf, Children, Disabled};
use freyr::persist::{LoadError, SaveError};
use freyr::time::deadline::Delivered;
use freyr::{Entity, Phase, Registry, StableHash};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, StableHash, Serialize, Deserialize)]
struct Hp(u32);

/// Deadline latency of the tree registry.
const K: u64 = 3;
/// No job is requested on these ticks, so a save at `SAVE` has none in flight.
const QUIET: core::ops::Range<u64> = 15..20;
const SAVE: u64 = 19;
const END: u64 = 30;

/// The tree registry: a root whose tree grows, is re-parented, disabled and enabled every few
/// ticks, and whose root's `Hp` folds in deadline results (requested every tick outside
/// [`QUIET`]). `reversed` touches the types in another order (other component ids).
fn tree_registry(workers: usize, reversed: bool) -> (Registry, Entity) {
    let mut r = Registry::with_workers(workers);
    if reversed {
        r.register_disabled();
        r.register_persistent::<Hp>("attack.hp", 1);
        r.register_hierarchy();
        r.register_hashable::<Hp>();
    } else {
        r.register_hashable::<Hp>();
        r.register_hierarchy();
        r.register_persistent::<Hp>("attack.hp", 1);
        r.register_disabled();
    }
    let root = r.spawn((Hp(1),));
    r.add_deadline_jobs(K, move |r: &mut Registry, done: Delivered<u64>| {
        let v = done.result.unwrap();
        let hp = r.get_mut::<Hp>(root).unwrap();
        hp.0 = hp.0.wrapping_mul(31).wrapping_add(v as u32);
    })
    .unwrap();
    r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        let t = r.tick();
        if !QUIET.contains(&t) {
            r.request_job(t, |t: u64| t * 7 + 1).unwrap();
        }
        let mut kids = vec![root];
        kids.extend(r.descendants(root));
        let pick = |k: u64| kids[k as usize % kids.len()];
        if t.is_multiple_of(3) {
            r.spawn_child(pick(t), (Hp(t as u32),)).unwrap();
        }
        if kids.len() > 2 {
            let d = kids[1 + (t as usize / 4) % (kids.len() - 1)];
            match t % 4 {
                1 => r.disable(d).unwrap(),
                3 => r.enable(d).unwrap(),
                _ => {}
            }
        }
        if t.is_multiple_of(7) && kids.len() > 3 {
            // Refused (a cycle) now and then: that changes nothing either way.
            let _ = r.set_parent(kids[kids.len() - 1], pick(t / 7));
        }
        r.query::<&mut Hp>().each(|_, h| h.0 = h.0.wrapping_add(1));
    });
    (r, root)
}

fn run_to(r: &mut Registry, tick: u64) {
    while r.tick() < tick {
        r.update(0.1);
    }
}

/// Every entity of the tree: its parent, children and whether it is disabled, and its `Hp`.
type Tree = Vec<(Entity, Option<Entity>, Vec<Entity>, bool, u32)>;

fn tree(r: &Registry, root: Entity) -> Tree {
    core::iter::once(root)
        .chain(r.descendants(root))
        .map(|e| {
            let hp = r.get::<Hp>(e).unwrap().0;
            (e, r.parent(e), r.children(e).to_vec(), r.is_disabled(e), hp)
        })
        .collect()
}

/// The world hash over a fixed type order (`world_hash_all` follows each registry's own
/// registration order, which the reversed registries change on purpose).
fn hash(r: &Registry) -> u64 {
    r.world_hash::<(Hp, ChildOf, Children, Disabled)>()
}

#[test]
fn a_tree_with_disabled_entities_and_jobs_in_flight_goes_on_after_a_restore_or_a_load() {
    let (mut straight, root) = tree_registry(2, false);
    let mut at_save = None;
    while straight.tick() < END {
        if straight.tick() == SAVE {
            at_save = Some((hash(&straight), tree(&straight, root)));
        }
        straight.update(0.1);
    }
    straight.check_hierarchy();
    let end = (hash(&straight), tree(&straight, root), straight.len());
    assert!(end.1.iter().any(|n| n.3), "some entity ends disabled");
    assert!(end.1.len() > 8, "the tree grew");

    // A snapshot with jobs in flight (ticks 9..12 requested, due later), restored into a
    // registry with another worker count and another registration order.
    for (workers, reversed) in [(1, true), (3, true), (8, false)] {
        let (mut a, _) = tree_registry(2, false);
        run_to(&mut a, 12);
        let snapshot = a.snapshot().unwrap();
        let (mut b, root_b) = tree_registry(workers, reversed);
        assert_eq!(root_b, root);
        run_to(&mut b, 4);
        b.restore(&snapshot).unwrap();
        b.check_hierarchy();
        run_to(&mut b, END);
        b.check_hierarchy();
        assert_eq!(
            (hash(&b), tree(&b, root), b.len()),
            end,
            "restored into {workers} workers, reversed {reversed}"
        );
    }

    // A save at a tick with no job in flight, loaded in another registration order.
    let (mut a, _) = tree_registry(2, false);
    run_to(&mut a, SAVE);
    assert_eq!(Some((hash(&a), tree(&a, root))), at_save);
    let bytes = a.save_to_vec().unwrap();
    for workers in [1, 3] {
        let (mut b, _) = tree_registry(workers, true);
        run_to(&mut b, 2);
        b.load_into(&bytes).unwrap();
        assert_eq!(Some((hash(&b), tree(&b, root))), at_save);
        b.check_hierarchy();
        run_to(&mut b, END);
        assert_eq!(
            (hash(&b), tree(&b, root), b.len()),
            end,
            "{workers} workers"
        );
    }

    // A save one tick earlier holds jobs in flight: refused, by name, nothing written.
    let (mut a, _) = tree_registry(1, false);
    run_to(&mut a, 14);
    let mut out = vec![7u8];
    match a.save_into(&mut out) {
        Err(SaveError::JobsInFlight { jobs }) => assert_eq!(jobs.len(), 1),
        other => panic!("a save with jobs in flight: {other:?}"),
    }
    assert_eq!(out, [7]);
}

/// A registry that knows the hierarchy and `Hp`, holding two entities of its own.
fn bystander() -> Registry {
    let mut r = Registry::with_workers(2);
    r.register_hierarchy();
    r.register_persistent::<Hp>("attack.hp", 1);
    r.register_hashable::<Hp>();
    let p = r.spawn((Hp(40),));
    r.spawn_child(p, (Hp(41),)).unwrap();
    r
}

fn state(r: &Registry) -> (u64, usize, u64, Vec<u8>) {
    (hash(r), r.len(), r.tick(), r.save_to_vec().unwrap())
}

/// A save and an export whose hierarchy `forge` broke (through `world_mut`, which bypasses the
/// relation: the bytes are well formed and their checksum holds) must be refused by a load and
/// an import with a typed error, the registry unchanged (an import cuts a reference that leaves
/// the exported set instead: a dead parent's child arrives as a root).
fn refused_everywhere(what: &str, forge: impl Fn(&mut Registry) -> Vec<Entity>) {
    let mut source = bystander();
    let exported = forge(&mut source);
    let check = catch_unwind(AssertUnwindSafe(|| source.check_hierarchy()));
    assert!(check.is_err(), "{what}: the forge broke the relation");
    let save = source.save_to_vec().unwrap();
    let export = source.export(&exported).unwrap();

    let mut target = bystander();
    run_to(&mut target, 3);
    let before = state(&target);
    match target.load_into(&save) {
        Err(LoadError::Corrupt { .. }) => {}
        other => panic!("{what}: a load of a broken hierarchy gave {other:?}"),
    }
    assert_eq!(
        state(&target),
        before,
        "{what}: a refused load changed nothing"
    );
    if what == "a child of a despawned parent" {
        // Among the exported entities the relation holds; the dead parent is a reference
        // leaving the set, cut by the import's rule: the child arrives as a root.
        let map = target.import(&export).unwrap();
        let c = map.get(exported[0]).unwrap();
        assert_eq!(target.parent(c), None);
        assert_eq!(target.children(c), [map.get(exported[1]).unwrap()]);
    } else {
        match target.import(&export) {
            Err(LoadError::Corrupt { .. }) => {}
            other => panic!("{what}: an import of a broken hierarchy gave {other:?}"),
        }
        assert_eq!(
            state(&target),
            before,
            "{what}: a refused import changed nothing"
        );
    }
    target.check_hierarchy();
}

#[test]
fn a_save_or_an_export_with_a_cycle_of_parents_is_refused() {
    refused_everywhere("a two-cycle", |r| {
        // x ─ a ; b ─ c, then a names b as parent and b lists a: a ⇄ b.
        let (x, a, b) = (r.spawn((Hp(1),)), r.spawn((Hp(2),)), r.spawn((Hp(3),)));
        r.set_parent(a, x).unwrap();
        let c = r.spawn_child(b, (Hp(4),)).unwrap();
        r.set_parent(b, a).unwrap();
        let names_b = *r.get::<ChildOf>(c).unwrap();
        let lists_a = r.get::<Children>(x).unwrap().clone();
        let world = r.world_mut();
        world.insert(a, (names_b,)).unwrap();
        world.insert(b, (lists_a,)).unwrap();
        world.despawn(c).unwrap();
        world.despawn(x).unwrap();
        vec![a, b]
    });
    refused_everywhere("a self-parent", |r| {
        // s names itself as parent and lists itself as its only child.
        let (q, s) = (r.spawn((Hp(5),)), r.spawn((Hp(6),)));
        let c = r.spawn_child(s, (Hp(7),)).unwrap();
        r.set_parent(s, q).unwrap();
        let names_s = *r.get::<ChildOf>(c).unwrap();
        let lists_s = r.get::<Children>(q).unwrap().clone();
        let world = r.world_mut();
        world.insert(s, (names_s, lists_s)).unwrap();
        world.despawn(c).unwrap();
        world.despawn(q).unwrap();
        vec![s]
    });
}

#[test]
fn a_save_or_an_export_whose_child_is_not_listed_by_its_parent_is_refused() {
    refused_everywhere("an unlisted child", |r| {
        let p = r.spawn((Hp(1),));
        let c = r.spawn_child(p, (Hp(2),)).unwrap();
        r.world_mut().insert(p, (Children::default(),)).unwrap();
        vec![p, c]
    });
    refused_everywhere("a child of a despawned parent", |r| {
        let p = r.spawn((Hp(1),));
        let c = r.spawn_child(p, (Hp(2),)).unwrap();
        let q = r.spawn_child(c, (Hp(3),)).unwrap();
        r.world_mut().despawn(p).unwrap();
        // c still names p; the export holds c and q, and p's id is now stale.
        vec![c, q, r.spawn((Hp(4),))]
    });
    refused_everywhere("a child listed twice by its parent", |r| {
        // As many entries as `ChildOf`s (c and d), but c twice and d never.
        let p = r.spawn((Hp(1),));
        let c = r.spawn_child(p, (Hp(2),)).unwrap();
        r.spawn_child(p, (Hp(3),)).unwrap();
        let bits = c.to_bits();
        let twice: Children = serde_json::from_str(&format!("[{bits},{bits}]")).unwrap();
        r.world_mut().insert(p, (twice,)).unwrap();
        vec![p, c]
    });
    refused_everywhere("a child listed by a parent it does not name", |r| {
        // c names p, and q lists c too: c is listed twice in all.
        let p = r.spawn((Hp(1),));
        let c = r.spawn_child(p, (Hp(2),)).unwrap();
        let q = r.spawn((Hp(3),));
        let d = r.spawn_child(q, (Hp(4),)).unwrap();
        let lists_c = r.get::<Children>(p).unwrap().clone();
        r.world_mut().insert(q, (lists_c,)).unwrap();
        r.world_mut().despawn(d).unwrap();
        vec![p, c, q]
    });
    refused_everywhere("a listed child with no parent", |r| {
        let p = r.spawn((Hp(1),));
        let c = r.spawn_child(p, (Hp(2),)).unwrap();
        r.world_mut().remove::<(ChildOf,)>(c).unwrap();
        vec![p, c]
    });
}

/// An entity reference that leaves an export becomes `None` (the guide's remap pattern).
#[derive(Clone, Copy, Debug, PartialEq, StableHash, Serialize, Deserialize)]
struct Aim(Option<Entity>);

fn remap_aim(aim: &mut Aim, map: &freyr::persist::EntityMap) {
    aim.0 = aim.0.and_then(|e| map.get(e));
}

fn aiming(r: &mut Registry) {
    r.register_hierarchy();
    r.register_persistent::<Hp>("attack.hp", 1);
    r.register_persistent_with_remap::<Aim>("attack.aim", 1, remap_aim);
}

#[test]
fn a_subtree_exported_child_first_with_references_out_of_it_imports_twice_as_two_trees() {
    let mut a = Registry::with_workers(1);
    aiming(&mut a);
    let root = a.spawn((Hp(0), Aim(None)));
    let mid = a.spawn_child(root, (Hp(1), Aim(Some(root)))).unwrap();
    let sibling = a.spawn_child(root, (Hp(2),)).unwrap();
    let leaf = a.spawn_child(mid, (Hp(3), Aim(Some(sibling)))).unwrap();
    let other = a.spawn_child(mid, (Hp(4), Aim(Some(mid)))).unwrap();
    a.spawn_child(leaf, (Hp(5),)).unwrap(); // not exported: leaf's list loses it
    // Children before their parent, and the subtree's parent (root) left out.
    let bytes = a.export(&[other, leaf, mid]).unwrap();

    let mut b = Registry::with_workers(2);
    aiming(&mut b);
    let keep = b.spawn((Hp(9), Aim(None)));
    let kept_child = b.spawn_child(keep, (Hp(10),)).unwrap();
    let first = b.import(&bytes).unwrap();
    let second = b.import(&bytes).unwrap();
    b.check_hierarchy();
    assert_eq!(b.len(), 2 + 6);
    assert_eq!(
        b.children(keep),
        [kept_child],
        "the target's tree is untouched"
    );
    let mut seen = Vec::new();
    for map in [&first, &second] {
        let (o, l, m) = (
            map.get(other).unwrap(),
            map.get(leaf).unwrap(),
            map.get(mid).unwrap(),
        );
        seen.extend([o, l, m]);
        assert_eq!(b.parent(m), None, "mid's parent was not exported: a root");
        assert_eq!(b.children(m), [l, o], "mid keeps its children's order");
        assert_eq!((b.parent(l), b.parent(o)), (Some(m), Some(m)));
        assert!(b.children(l).is_empty(), "leaf's child was not exported");
        assert_eq!(b.get::<Aim>(m).unwrap().0, None, "root was not exported");
        assert_eq!(b.get::<Aim>(l).unwrap().0, None, "sibling was not exported");
        assert_eq!(b.get::<Aim>(o).unwrap().0, Some(m));
        assert_eq!(b.descendants(m), [l, o]);
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 6, "two imports give six distinct entities");
    // Editing one copy leaves the other alone.
    let (m1, m2) = (first.get(mid).unwrap(), second.get(mid).unwrap());
    b.despawn(m1).unwrap();
    b.check_hierarchy();
    assert_eq!(b.len(), 2 + 3);
    assert_eq!(b.descendants(m2).len(), 2);
}

#[test]
fn an_import_beside_stale_handles_never_revives_them() {
    let mut a = Registry::with_workers(1);
    aiming(&mut a);
    let p = a.spawn((Hp(1),));
    let c = a.spawn_child(p, (Hp(2), Aim(Some(p)))).unwrap();
    let bytes = a.export(&[p, c]).unwrap();

    let mut b = Registry::with_workers(1);
    aiming(&mut b);
    let stale: Vec<Entity> = (0..4).map(|i| b.spawn((Hp(100 + i),))).collect();
    let live = b.spawn((Hp(7),));
    for &e in &stale {
        b.despawn(e).unwrap();
    }
    for _ in 0..3 {
        let map = b.import(&bytes).unwrap();
        let (p2, c2) = (map.get(p).unwrap(), map.get(c).unwrap());
        for &s in &stale {
            assert!(
                !b.contains(s),
                "{s:?} was despawned: a stale handle stays dead"
            );
            assert!(b.get::<Hp>(s).is_err());
            assert_ne!(p2, s);
            assert_ne!(c2, s);
        }
        assert_eq!(b.parent(c2), Some(p2));
        assert_eq!(b.get::<Aim>(c2).unwrap().0, Some(p2));
        assert_eq!(b.get::<Hp>(live).unwrap().0, 7);
    }
    assert_eq!(b.len(), 1 + 6);
    b.check_hierarchy();
}

/// An export names only the types its entities have: a registry that never registered the
/// exporter's other types (here `Disabled`, the relation and `u64`) imports it.
#[test]
fn an_export_names_only_the_types_its_entities_have() {
    let mut a = Registry::with_workers(1);
    a.register_persistent::<Hp>("attack.hp", 1);
    a.register_persistent::<u64>("attack.extra", 1);
    let p = a.spawn((Hp(1), 7u64));
    let c = a.spawn_child(p, (Hp(2),)).unwrap();
    a.disable(c).unwrap();
    let loose = [a.spawn((Hp(3),)), a.spawn((Hp(4),))];
    let bytes = a.export(&loose).unwrap();
    let mut b = Registry::with_workers(1);
    b.register_persistent::<Hp>("attack.hp", 1);
    let map = b.import(&bytes).unwrap();
    let got: Vec<u32> = loose
        .iter()
        .map(|&e| b.get::<Hp>(map.get(e).unwrap()).unwrap().0)
        .collect();
    assert_eq!(got, [3, 4]);
    // With a type the importer does not know among the exported entities: refused by name.
    let bytes = a.export(&[loose[0], p]).unwrap();
    let before = b.len();
    match b.import(&bytes) {
        Err(LoadError::UnknownType { name }) => assert!(
            name.starts_with("attack.extra") || name.starts_with("freyr."),
            "{name}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(b.len(), before);
}
