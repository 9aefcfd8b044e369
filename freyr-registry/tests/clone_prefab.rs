//! Clones and prefabs: the registered types copied, the tree's relation remapped to the
//! copies, a type that is not cloneable named in an error with nothing spawned, a despawned
//! prefab refused, hooks seeing the copies, and the same world for every worker count.

use std::sync::{Arc, Mutex};

use freyr::Registry;
use freyr::hierarchy::CloneError;
use freyr_core::Entity;

#[derive(Clone, Debug, PartialEq)]
struct Name(String);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Hp(u32);
struct Socket;

impl freyr::StableHash for Name {
    fn stable_hash(&self, h: &mut freyr::hash::StableHasher) {
        self.0.stable_hash(h);
    }
}
impl freyr::StableHash for Hp {
    fn stable_hash(&self, h: &mut freyr::hash::StableHasher) {
        self.0.stable_hash(h);
    }
}

fn registry(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_cloneable::<Name>();
    r.register_cloneable::<Hp>();
    r.register_hashable::<Name>();
    r.register_hashable::<Hp>();
    r.register_hierarchy();
    r.register_disabled();
    r
}

/// A jet (Name, Hp) with a pilot and two missiles, the second with a warhead.
fn jet(r: &mut Registry) -> [Entity; 5] {
    let jet = r.spawn((Name("jet".into()), Hp(100)));
    let pilot = r.spawn_child(jet, (Name("pilot".into()),)).unwrap();
    let m1 = r.spawn_child(jet, (Name("m1".into()), Hp(5))).unwrap();
    let m2 = r.spawn_child(jet, (Name("m2".into()), Hp(6))).unwrap();
    let head = r.spawn_child(m2, (Hp(1),)).unwrap();
    [jet, pilot, m1, m2, head]
}

fn names(r: &Registry, es: &[Entity]) -> Vec<Option<String>> {
    es.iter()
        .map(|&e| r.get::<Name>(e).ok().map(|n| n.0.clone()))
        .collect()
}

#[test]
fn clone_entity_copies_the_components_not_the_relation() {
    let mut r = registry(1);
    let [jet, pilot, ..] = jet(&mut r);
    let copy = r.clone_entity(pilot).unwrap();
    assert_eq!(r.get::<Name>(copy), Ok(&Name("pilot".into())));
    assert_eq!(r.parent(copy), None);
    let copy = r.clone_entity(jet).unwrap();
    assert!(r.children(copy).is_empty());
    assert_eq!(r.get::<Hp>(copy), Ok(&Hp(100)));
    assert_eq!(r.children(jet).len(), 3);
    r.check_hierarchy();
}

#[test]
fn clone_tree_remaps_the_relation_to_the_copies() {
    let mut r = registry(1);
    let [jet, pilot, m1, m2, head] = jet(&mut r);
    let copy = r.clone_tree(jet).unwrap();
    let kids = r.children(copy).to_vec();
    assert_eq!(kids.len(), 3);
    assert!(!kids.contains(&pilot) && !kids.contains(&m1) && !kids.contains(&m2));
    assert_eq!(
        names(&r, &kids),
        names(&r, &[pilot, m1, m2]),
        "the children's order is kept"
    );
    let head2 = r.children(kids[2])[0];
    assert_ne!(head2, head);
    assert_eq!(r.get::<Hp>(head2), Ok(&Hp(1)));
    assert_eq!(r.ancestors(head2).collect::<Vec<_>>(), [kids[2], copy]);
    assert_eq!(r.parent(copy), None);
    r.check_hierarchy();
    // A subtree: the copy of m2 is a root.
    let m2_copy = r.clone_tree(m2).unwrap();
    assert_eq!(r.parent(m2_copy), None);
    assert_eq!(r.children(m2_copy).len(), 1);
    r.check_hierarchy();
}

#[test]
fn a_type_that_is_not_cloneable_is_named_and_nothing_is_spawned() {
    let mut r = registry(1);
    let [jet, _, m1, ..] = jet(&mut r);
    r.insert(m1, (Socket,)).unwrap();
    let hash = r.world_hash_all();
    let len = r.len();
    for result in [r.clone_tree(jet), r.instantiate(jet, 10).map(|v| v[0])] {
        let err = result.unwrap_err();
        assert!(
            matches!(err, CloneError::NotCloneable { entity, type_name } if entity == m1 && type_name.ends_with("Socket")),
            "{err:?}"
        );
        assert!(err.to_string().contains("Socket"), "{err}");
    }
    assert_eq!(r.len(), len);
    assert_eq!(r.world_hash_all(), hash);
    // The entity alone, without the socketed child, clones.
    assert!(r.clone_entity(jet).is_ok());
}

#[test]
fn a_despawned_prefab_is_refused() {
    let mut r = registry(1);
    let [jet, ..] = jet(&mut r);
    r.despawn(jet).unwrap();
    assert!(r.is_empty());
    assert_eq!(r.instantiate(jet, 3), Err(CloneError::NoSuchEntity(jet)));
    assert_eq!(r.clone_entity(jet), Err(CloneError::NoSuchEntity(jet)));
    assert!(r.is_empty());
}

#[test]
fn instantiate_makes_enabled_copies_of_a_disabled_template() {
    let mut r = registry(2);
    let template = jet(&mut r);
    for &e in &template {
        r.disable(e).unwrap();
    }
    assert_eq!(r.query::<&Hp>().count(), 0);
    let jets = r.instantiate(template[0], 1000).unwrap();
    assert_eq!(jets.len(), 1000);
    assert_eq!(r.query::<&Hp>().count(), 1000 * 4);
    assert_eq!(r.query::<&Name>().count(), 1000 * 4);
    for &j in &jets[..3] {
        assert_eq!(r.children(j).len(), 3);
        assert!(!r.is_disabled(j));
    }
    assert_eq!(r.instantiate(template[0], 0), Ok(Vec::new()));
    r.check_hierarchy();
    // Despawning an instance takes its subtree and leaves the template and the others.
    let before = r.len();
    r.despawn(jets[7]).unwrap();
    assert_eq!(r.len(), before - 5);
    r.check_hierarchy();
}

#[test]
fn hooks_see_every_copied_component() {
    let added = Arc::new(Mutex::new(0usize));
    let mut r = registry(1);
    let a = added.clone();
    r.on_add::<Hp>(move |_, _| *a.lock().unwrap() += 1);
    let [jet, ..] = jet(&mut r);
    *added.lock().unwrap() = 0;
    let copies = r.instantiate(jet, 4).unwrap();
    assert_eq!(*added.lock().unwrap(), 4 * 4);
    assert_eq!(r.children(copies[3]).len(), 3);
    r.check_hierarchy();
}

#[test]
fn the_same_world_for_every_worker_count() {
    let mut hashes = Vec::new();
    for workers in [1, 2, 3, 8, 16] {
        let mut r = registry(workers);
        let [jet, ..] = jet(&mut r);
        let jets = r.instantiate(jet, 300).unwrap();
        r.query::<&mut Hp>()
            .each_async(|e, hp| hp.0 += e.index() % 7);
        r.execute_tasks();
        for &j in jets.iter().step_by(3) {
            r.destroy_entity(j);
        }
        r.execute_tasks();
        r.check_hierarchy();
        hashes.push(r.world_hash_all().unwrap());
    }
    assert!(hashes.iter().all(|&h| h == hashes[0]), "{hashes:?}");
}

/// A reference to another entity, remapped on clone: inside the cloned set it follows the
/// copy, outside it stays.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Target(Entity);
/// A reference cleared when it leaves the cloned set.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Link(Option<Entity>);

fn remapping(workers: usize) -> Registry {
    let mut r = registry(workers);
    r.register_cloneable_with_remap::<Target>(|t, map| t.0 = map.get(t.0).unwrap_or(t.0));
    r.register_cloneable_with_remap::<Link>(|l, map| l.0 = l.0.and_then(|e| map.get(e)));
    r
}

/// The jet with references: the pilot aims at the second missile (inside the tree) and links
/// to `base` (outside); the warhead aims at `base`.
fn armed_jet(r: &mut Registry) -> ([Entity; 5], Entity) {
    let base = r.spawn((Name("base".into()),));
    let parts = jet(r);
    let [_, pilot, _, m2, head] = parts;
    r.insert(pilot, (Target(m2), Link(Some(base)))).unwrap();
    r.insert(head, (Target(base), Link(Some(parts[0]))))
        .unwrap();
    (parts, base)
}

/// Checks each copy's references: inside the tree they name the same instance's copies.
fn check_references(r: &Registry, roots: &[Entity], base: Entity) {
    for &root in roots {
        let [pilot, _, m2] = *r.children(root) else {
            panic!("three children")
        };
        let head = r.children(m2)[0];
        assert_eq!(r.get::<Target>(pilot), Ok(&Target(m2)));
        assert_eq!(r.get::<Link>(pilot), Ok(&Link(None)));
        assert_eq!(r.get::<Target>(head), Ok(&Target(base)));
        assert_eq!(r.get::<Link>(head), Ok(&Link(Some(root))));
    }
}

#[test]
fn remap_hooks_point_references_inside_the_tree_at_the_copies() {
    let mut r = remapping(2);
    let ([jet, pilot, _, m2, _], base) = armed_jet(&mut r);
    let jets = r.instantiate(jet, 5).unwrap();
    check_references(&r, &jets, base);
    let copy = r.clone_tree(jet).unwrap();
    check_references(&r, &[copy], base);
    // The template keeps its own references.
    assert_eq!(r.get::<Target>(pilot), Ok(&Target(m2)));
    assert_eq!(r.get::<Link>(pilot), Ok(&Link(Some(base))));
    r.check_hierarchy();
}

#[test]
fn clone_entity_remaps_a_reference_to_itself_only() {
    let mut r = remapping(1);
    let other = r.spawn(());
    let e = r.spawn((Link(None), Target(other)));
    r.insert(e, (Link(Some(e)),)).unwrap();
    let c = r.clone_entity(e).unwrap();
    assert_eq!(r.get::<Link>(c), Ok(&Link(Some(c))));
    assert_eq!(r.get::<Target>(c), Ok(&Target(other)));
}

#[test]
fn the_hooked_path_remaps_as_the_batch_path_does() {
    // The same prefab instantiated with and without a hook (which fills the copies through
    // `insert`): the same ids and the same references.
    let run = |hooked: bool| {
        let added = Arc::new(Mutex::new(0usize));
        let mut r = remapping(1);
        if hooked {
            let a = added.clone();
            r.on_add::<Target>(move |_, _| *a.lock().unwrap() += 1);
        }
        let ([jet, ..], base) = armed_jet(&mut r);
        *added.lock().unwrap() = 0;
        let jets = r.instantiate(jet, 4).unwrap();
        check_references(&r, &jets, base);
        r.check_hierarchy();
        let all: Vec<Entity> = jets.iter().flat_map(|&j| r.descendants(j)).collect();
        let refs: Vec<_> = all
            .iter()
            .map(|&e| {
                (
                    r.get::<Target>(e).ok().copied(),
                    r.get::<Link>(e).ok().copied(),
                )
            })
            .collect();
        let added = *added.lock().unwrap();
        (jets, all, refs, added)
    };
    let (plain, hooked) = (run(false), run(true));
    assert_eq!(plain.3, 0);
    assert_eq!(hooked.3, 2 * 4, "the hook saw every copied Target");
    assert_eq!((plain.0, plain.1, plain.2), (hooked.0, hooked.1, hooked.2));
}

/// A reference whose remap hook panics on the third value it sees.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Fragile(Entity);
static FRAGILE_SEEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A value whose `Clone` panics once `CLONES_LEFT` is spent.
#[derive(Debug)]
struct Brittle;
static CLONES_LEFT: std::sync::atomic::AtomicIsize = std::sync::atomic::AtomicIsize::new(0);
impl Clone for Brittle {
    fn clone(&self) -> Self {
        if CLONES_LEFT.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) <= 0 {
            panic!("brittle clone");
        }
        Brittle
    }
}

/// Runs `f` expecting it to panic with `message`; the registry holds the same number of
/// entities after, and its relation is whole.
fn assert_panics_and_nothing_is_left(
    r: &mut Registry,
    message: &str,
    f: impl FnOnce(&mut Registry),
) {
    let before = r.len();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(r)));
    let payload = caught.expect_err("the callback's panic propagates");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&message));
    assert_eq!(
        r.len(),
        before,
        "every copy made before the panic was despawned"
    );
    r.check_hierarchy();
}

#[test]
fn a_panicking_remap_hook_or_clone_leaves_no_copy() {
    use std::sync::atomic::Ordering::SeqCst;
    for hooked in [false, true] {
        let mut r = remapping(2);
        r.register_cloneable_with_remap::<Fragile>(|f, map| {
            if FRAGILE_SEEN.fetch_add(1, SeqCst) == 2 {
                panic!("remap failed");
            }
            f.0 = map.get(f.0).unwrap_or(f.0);
        });
        r.register_cloneable::<Brittle>();
        let removed = Arc::new(Mutex::new(0usize));
        let added = Arc::new(Mutex::new(0usize));
        if hooked {
            let n = removed.clone();
            r.on_remove::<Hp>(move |_, _| *n.lock().unwrap() += 1);
            let n = added.clone();
            r.on_add::<Hp>(move |_, _| *n.lock().unwrap() += 1);
        }
        let ([jet, _, m1, _, head], _) = armed_jet(&mut r);
        r.insert(m1, (Fragile(jet),)).unwrap();
        FRAGILE_SEEN.store(0, SeqCst);
        *added.lock().unwrap() = 0; // the template's own spawns
        assert_panics_and_nothing_is_left(&mut r, "remap failed", |r| {
            r.instantiate(jet, 4).unwrap();
        });
        if hooked {
            // The clone is one operation for the hooks, and it failed before they ran: no
            // hook saw a copy arrive, and none sees the copies go.
            assert_eq!((*added.lock().unwrap(), *removed.lock().unwrap()), (0, 0));
        }
        // A `Clone` panicking part-way: the warhead's copies are the last node made.
        r.insert(head, (Brittle,)).unwrap();
        CLONES_LEFT.store(2, SeqCst);
        FRAGILE_SEEN.store(100, SeqCst);
        assert_panics_and_nothing_is_left(&mut r, "brittle clone", |r| {
            r.instantiate(jet, 3).unwrap();
        });
        // With enough clones and a quiet hook, the same call succeeds.
        CLONES_LEFT.store(1000, SeqCst);
        let jets = r.instantiate(jet, 3).unwrap();
        assert_eq!(
            r.get::<Fragile>(r.children(jets[2])[1]),
            Ok(&Fragile(jets[2]))
        );
        r.check_hierarchy();
    }
}
