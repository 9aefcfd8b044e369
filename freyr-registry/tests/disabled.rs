//! Disabled entities: skipped by queries unless they name `Disabled`, reachable by id, kept by
//! snapshots, saves and the hash; what disabling does to change detection.

use freyr::Registry;
use freyr::With;
use freyr::Without;
use freyr::hierarchy::Disabled;

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Hp(u32);

impl freyr::StableHash for Hp {
    fn stable_hash(&self, h: &mut freyr::hash::StableHasher) {
        self.0.stable_hash(h);
    }
}

fn sum(r: &mut Registry) -> u32 {
    let mut total = 0;
    r.query::<&Hp>().each(|_, hp| total += hp.0);
    total
}

#[test]
fn queries_skip_disabled_entities_unless_they_ask() {
    for workers in [1, 2, 3, 8, 16] {
        let mut r = Registry::with_workers(workers);
        // A query state built before `Disabled` exists picks it up later too.
        assert_eq!(r.query::<&Hp>().count(), 0);
        let ids = r.spawn_batch((1..=100).map(|i| (Hp(i),)));
        r.disable(ids[0]).unwrap();
        r.disable(ids[9]).unwrap();
        r.disable(ids[9]).unwrap(); // twice changes nothing
        assert_eq!(r.query::<&Hp>().count(), 98);
        assert_eq!(sum(&mut r), 5050 - 1 - 10);
        r.query::<&mut Hp>().each_async(|_, hp| hp.0 += 1);
        r.execute_tasks();
        assert_eq!(sum(&mut r), 5050 - 1 - 10 + 98);
        assert_eq!(
            r.get::<Hp>(ids[9]),
            Ok(&Hp(10)),
            "reachable by id, not written"
        );
        assert_eq!(r.query_filtered::<&Hp, With<Disabled>>().count(), 2);
        assert_eq!(r.query_filtered::<&Hp, Without<Disabled>>().count(), 98);
        assert_eq!(r.query::<(&Hp, Option<&Disabled>)>().count(), 100);
        r.enable(ids[9]).unwrap();
        r.enable(ids[9]).unwrap();
        assert_eq!(r.query::<&Hp>().count(), 99);
        assert!(r.is_disabled(ids[0]) && !r.is_disabled(ids[9]));
    }
}

#[test]
fn bad_handles_are_typed_errors() {
    let mut r = Registry::with_workers(1);
    let e = r.spawn((Hp(1),));
    r.despawn(e).unwrap();
    assert_eq!(r.disable(e), Err(freyr::NoSuchEntity(e)));
    assert_eq!(r.enable(e), Err(freyr::NoSuchEntity(e)));
    assert!(!r.is_disabled(e));
    assert!(r.is_empty());
}

#[test]
fn snapshots_saves_and_the_hash_keep_the_flag() {
    let mut r = Registry::with_workers(2);
    r.register_persistent::<Hp>("test.hp", 1);
    r.register_hashable::<Hp>();
    r.register_disabled();
    let ids = r.spawn_batch((0..10).map(|i| (Hp(i),)));
    let enabled = r.world_hash_all().unwrap();
    r.disable(ids[3]).unwrap();
    let disabled = r.world_hash_all().unwrap();
    assert_ne!(enabled, disabled, "the hash sees the flag");
    r.get_mut::<Hp>(ids[3]).unwrap().0 = 99;
    assert_ne!(
        r.world_hash_all().unwrap(),
        disabled,
        "a disabled entity is hashed"
    );
    r.get_mut::<Hp>(ids[3]).unwrap().0 = 3;
    let snapshot = r.snapshot().unwrap();
    let bytes = r.save_to_vec().unwrap();
    r.enable(ids[3]).unwrap();
    assert_eq!(r.world_hash_all().unwrap(), enabled);
    r.restore(&snapshot).unwrap();
    assert!(r.is_disabled(ids[3]));
    assert_eq!(r.world_hash_all().unwrap(), disabled);
    let mut loaded = Registry::with_workers(1);
    loaded.register_persistent::<Hp>("test.hp", 1);
    loaded.register_hashable::<Hp>();
    loaded.register_disabled();
    loaded.load_into(&bytes).unwrap();
    assert!(loaded.is_disabled(ids[3]));
    assert_eq!(loaded.query::<&Hp>().count(), 9);
    assert_eq!(loaded.world_hash_all().unwrap(), disabled);
}

#[test]
fn enabling_stamps_the_landing_chunk_as_any_row_move_does() {
    let mut r = Registry::with_workers(1);
    let ids = r.spawn_batch((0..10).map(|i| (Hp(i),)));
    r.disable(ids[4]).unwrap();
    r.update(0.0);
    r.update(0.0);
    let since = r.tick() - 1;
    let changed = |r: &mut Registry| {
        let mut seen = Vec::new();
        r.query::<&Hp>()
            .filter_changed::<Hp>(since)
            .each(|e, _| seen.push(e));
        seen
    };
    assert!(changed(&mut r).is_empty());
    r.enable(ids[4]).unwrap();
    let seen = changed(&mut r);
    assert!(
        seen.contains(&ids[4]),
        "the re-enabled entity reads as changed"
    );
    // Disabled entities are not visited by change queries either.
    r.update(0.0);
    r.disable(ids[4]).unwrap();
    r.get_mut::<Hp>(ids[4]).unwrap().0 = 77;
    assert!(!changed(&mut r).contains(&ids[4]));
}

#[test]
fn hooks_see_disable_and_enable() {
    use std::sync::{Arc, Mutex};
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut r = Registry::with_workers(1);
    let (a, b) = (seen.clone(), seen.clone());
    r.on_add::<Disabled>(move |e, _| a.lock().unwrap().push(("off", e)));
    r.on_remove::<Disabled>(move |e, _| b.lock().unwrap().push(("on", e)));
    let e = r.spawn((Hp(1),));
    r.disable(e).unwrap();
    r.enable(e).unwrap();
    assert_eq!(*seen.lock().unwrap(), [("off", e), ("on", e)]);
}
