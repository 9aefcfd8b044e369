//! `Registry::world_hash_all`: hashing every registered type without listing them, and refusing
//! to hash a world with a component type that was neither registered nor excluded.

use freyr::hash::UnhashedComponents;
use freyr::{Registry, StableHash, World};

#[derive(Clone, Copy, StableHash)]
struct Pos(f32);
#[derive(Clone, Copy, StableHash)]
struct Vel(f32);
#[derive(StableHash)]
struct Frozen;
#[derive(Clone, Copy, StableHash)]
struct Secret(u32);
/// Never hashed: it has no `StableHash`, and the test excludes it.
struct Cache(#[allow(dead_code)] u64);

fn hashed(registry: &mut Registry) {
    registry.register_hashable::<Pos>();
    registry.register_hashable::<Vel>();
    registry.register_hashable::<Frozen>();
}

#[test]
fn equals_world_hash_of_the_registered_types_in_registration_order() {
    let mut registry = Registry::with_workers(2);
    hashed(&mut registry);
    registry.spawn_batch((0..700).map(|i| (Pos(i as f32), Vel(1.0))));
    registry.spawn_batch((0..5).map(|i| (Pos(i as f32), Frozen)));
    let all = registry.world_hash_all().unwrap();
    assert_eq!(all, registry.world_hash::<(Pos, Vel, Frozen)>());
    assert_ne!(all, registry.world_hash::<(Vel, Pos, Frozen)>());
    assert_eq!(registry.hashable_count(), 3);
    hashed(&mut registry); // again: nothing changes
    assert_eq!(registry.hashable_count(), 3);
    assert_eq!(registry.world_hash_all(), Ok(all));
}

#[test]
fn a_type_left_out_is_reported_instead_of_ignored() {
    let build = |secret: u32| {
        let mut registry = Registry::with_workers(1);
        hashed(&mut registry);
        registry.spawn((Pos(1.0), Secret(secret)));
        registry.spawn((Pos(2.0), Cache(9)));
        registry
    };
    let (mut a, mut b) = (build(1), build(2));
    // The hole `world_hash_all` closes: a hash over listed types cannot see `Secret`.
    assert_eq!(
        a.world_hash::<(Pos, Vel, Frozen)>(),
        b.world_hash::<(Pos, Vel, Frozen)>()
    );
    let err = a.world_hash_all().unwrap_err();
    assert_eq!(
        err,
        UnhashedComponents {
            type_names: vec![
                core::any::type_name::<Secret>(),
                core::any::type_name::<Cache>()
            ]
        }
    );
    assert!(err.to_string().contains("register_hashable"), "{err}");
    assert!(err.to_string().contains("exclude_from_hash"), "{err}");

    for registry in [&mut a, &mut b] {
        registry.register_hashable::<Secret>();
        registry.exclude_from_hash::<Cache>();
    }
    assert_ne!(a.world_hash_all().unwrap(), b.world_hash_all().unwrap());
}

#[test]
fn excluded_types_are_neither_reported_nor_hashed() {
    let build = |cache: u64| {
        let mut registry = Registry::with_workers(1);
        hashed(&mut registry);
        registry.exclude_from_hash::<Cache>();
        registry.exclude_from_hash::<Cache>(); // again: nothing changes
        registry.spawn((Pos(1.0), Cache(cache)));
        registry.world_hash_all().unwrap()
    };
    assert_eq!(build(1), build(2));
}

#[test]
fn only_types_of_live_entities_must_be_accounted_for() {
    let mut registry = Registry::with_workers(1);
    hashed(&mut registry);
    let e = registry.spawn((Pos(0.0), Secret(1)));
    assert!(registry.world_hash_all().is_err());
    registry.remove::<(Secret,)>(e).unwrap();
    // `Secret` is still a known component with an (empty) archetype, but no entity holds one.
    assert!(registry.world().component_id::<Secret>().is_some());
    assert_eq!(
        registry.world_hash_all(),
        Ok(registry.world_hash::<(Pos, Vel, Frozen)>())
    );
}

#[test]
#[should_panic(expected = "either hashed or excluded")]
fn excluding_a_hashed_type_panics() {
    let mut registry = Registry::with_workers(1);
    registry.register_hashable::<Pos>();
    registry.exclude_from_hash::<Pos>();
}

#[test]
#[should_panic(expected = "either hashed or excluded")]
fn hashing_an_excluded_type_panics() {
    let mut registry = Registry::with_workers(1);
    registry.exclude_from_hash::<Pos>();
    registry.register_hashable::<Pos>();
}

#[test]
fn identical_for_1_2_3_and_8_workers() {
    fn run(workers: usize) -> u64 {
        let mut registry = Registry::with_workers(workers);
        hashed(&mut registry);
        registry.exclude_from_hash::<Cache>();
        registry.spawn_batch((0..5000).map(|i| (Pos(i as f32), Vel((i % 13) as f32), Cache(0))));
        for _ in 0..5 {
            registry
                .query::<(&mut Pos, &Vel)>()
                .each_async_with(|e, (p, v), ctx| {
                    p.0 += v.0 * 0.5;
                    if v.0 == 0.0 && e.index() % 2 == 0 {
                        ctx.commands().insert(e, (Frozen,));
                        ctx.commands().spawn((Pos(p.0), Vel(1.0)));
                    }
                });
            registry.execute_tasks();
        }
        registry.world_hash_all().unwrap()
    }
    let one = run(1);
    for workers in [2, 3, 8, 16, 64] {
        assert_eq!(run(workers), one, "{workers} workers");
    }
}

#[test]
fn waits_for_writers_of_hashed_types_only() {
    let mut registry = Registry::with_workers(4);
    hashed(&mut registry);
    registry.exclude_from_hash::<Cache>();
    registry.spawn_batch((0..4000).map(|i| (Pos(0.0), Vel(i as f32), Cache(0))));
    let before = registry.world_hash_all().unwrap();

    registry.query::<&mut Cache>().each_async(|_, c| c.0 += 1);
    assert_eq!(registry.world_hash_all(), Ok(before));
    assert_eq!(registry.implicit_syncs(), 0, "a writer of an excluded type");

    registry
        .query::<(&mut Pos, &Vel)>()
        .each_async(|_, (p, v)| p.0 += v.0);
    let after = registry.world_hash_all().unwrap();
    assert_eq!(registry.implicit_syncs(), 1, "a writer of a hashed type");
    assert_ne!(after, before);
    registry.execute_tasks();
    assert_eq!(registry.world_hash_all(), Ok(after));
}

#[test]
fn a_replaced_world_is_hashed_by_type_not_by_stale_id() {
    // The registrations name types, never ids: a world whose types got other ids hashes the same
    // as one built the usual way.
    let mut fresh = Registry::with_workers(1);
    hashed(&mut fresh);
    fresh.spawn((Pos(1.0), Vel(2.0)));

    let mut replaced = Registry::with_workers(1);
    hashed(&mut replaced);
    replaced.spawn((Pos(5.0), Vel(6.0)));
    assert!(replaced.world_hash_all().is_ok());
    let mut world = World::new();
    world.register::<Frozen>();
    world.register::<Vel>(); // Vel takes the id Pos had
    world.spawn((Pos(1.0), Vel(2.0)));
    *replaced.world_mut() = world;

    assert_eq!(replaced.world_hash_all(), fresh.world_hash_all());
}
