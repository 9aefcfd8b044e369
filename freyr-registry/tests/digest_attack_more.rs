//! More attacks on the desync locator (see `digest_attack.rs`): saves, parallel commands,
//! coverage, refusals, the report's text, worker counts, in-flight writes, panicking
//! `StableHash` impls, rebuilt digests and digests sent over the wire.

mod digest_support;

use digest_support::*;
use std::panic::{self, AssertUnwindSafe};

use freyr::hash::{
    ArchetypeDigest, ChunkAddress, DivergenceKind, RowDigests, StableHasher, WorldDigest, diff,
};
use freyr::storage::CHUNK_CAPACITY;
use freyr::{Registry, StableHash};

/// A world loaded from a save of another digests equal to it: archetype order, row order, ids
/// and values come back exactly.
#[test]
fn a_loaded_save_digests_equal_to_its_source() {
    #[derive(StableHash, Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Sp(u32);
    #[derive(StableHash, Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Sq(u32);
    let setup = || {
        let mut r = Registry::with_workers(2);
        r.register_persistent::<Sp>("digest_attack.sp", 1);
        r.register_persistent::<Sq>("digest_attack.sq", 1);
        r.register_hashable::<Sp>();
        r.register_hashable::<Sq>();
        r
    };
    let mut a = setup();
    let ids = a.spawn_batch((0..700).map(|i| (Sq(i), Sp(i))));
    a.spawn_batch((0..5).map(|i| (Sq(i),)));
    a.despawn(ids[3]).unwrap();
    a.despawn(ids[600]).unwrap();
    let mut b = setup();
    b.load_into(&a.save_to_vec().unwrap()).unwrap();
    assert_eq!(a.world_hash_all(), b.world_hash_all());
    assert_eq!(a.locate_divergence(&b), Ok(None));
    b.get_mut::<Sp>(ids[650]).unwrap().0 += 1;
    let found = a.locate_divergence(&b).unwrap().unwrap();
    assert_eq!(found.entity, Some(ids[650]));
}

/// Commands recorded by parallel work (spawns of new types, inserts, despawns) are applied in an
/// order that does not depend on the worker count: equal digests for 1, 2, 8 and 16 workers,
/// archetype creation order and row order included.
#[test]
fn commands_from_parallel_work_digest_equal_on_any_worker_count() {
    let run = |workers: usize| {
        let mut r = registry(workers);
        r.spawn_batch((0..3000u32).map(|i| (Hp(i),)));
        r.query::<&Hp>().each_async_with(|e, hp, ctx| {
            let cmds = ctx.commands();
            match hp.0 % 5 {
                0 => drop(cmds.spawn((Pos([hp.0 as f32, 0.0]),))),
                1 => cmds.insert(e, (Tag,)),
                2 => cmds.despawn(e),
                3 => cmds.insert(e, (Name(format!("{}", hp.0)),)),
                _ => {}
            }
        });
        r.execute_tasks();
        r
    };
    let one = run(1);
    for workers in [2, 8, 16] {
        let other = run(workers);
        assert_eq!(one.locate_divergence(&other), Ok(None), "{workers} workers");
    }
}

/// The same type registered on one side and excluded on the other: the archetype is the same,
/// but what is hashed is not, so it is an `Archetypes` divergence, never an equal digest.
#[test]
fn hashed_against_excluded_is_an_archetypes_divergence() {
    #[derive(StableHash, Clone, Copy)]
    struct Flip(u8);
    let mut a = Registry::with_workers(1);
    a.register_hashable::<Flip>();
    a.spawn((Flip(1),));
    let mut b = Registry::with_workers(1);
    b.exclude_from_hash::<Flip>();
    b.spawn((Flip(1),));
    let found = a.locate_divergence(&b).unwrap().unwrap();
    assert!(
        matches!(&found.kind, DivergenceKind::Archetypes { a: Some(x), b: Some(y) } if x == y),
        "{found:?}"
    );
}

/// Resources are outside what the digest covers (archetypes, entity ids, registered types'
/// values): two worlds that differ only in a resource digest equal.
#[test]
fn a_resource_is_not_covered() {
    let (mut a, _) = hp_world(4);
    let (mut b, _) = hp_world(4);
    a.insert_resource(Hp(1));
    b.insert_resource(Hp(2));
    assert_eq!(a.digest().unwrap(), b.digest().unwrap());
    assert_eq!(a.world_hash_all(), b.world_hash_all());
}

/// A live entity with a type neither registered nor excluded: `digest`, `row_digests` and
/// `locate_divergence` (from either side) refuse, naming it; an empty archetype with such a
/// type is not refused.
#[test]
fn unaccounted_types_are_refused_everywhere() {
    struct Secret(#[allow(dead_code)] u8);
    let (mut a, _) = hp_world(2);
    let (b, _) = hp_world(2);
    let e = a.spawn((Hp(0), Secret(1)));
    let named = |err: freyr::hash::UnhashedComponents| {
        assert_eq!(err.type_names.len(), 1);
        assert!(err.type_names[0].ends_with("Secret"));
    };
    named(a.digest().unwrap_err());
    named(a.locate_divergence(&b).unwrap_err());
    named(b.locate_divergence(&a).unwrap_err());
    let at = ChunkAddress {
        archetype: 0,
        chunk: 0,
    };
    named(a.row_digests(at).unwrap_err());
    a.despawn(e).unwrap();
    assert!(a.digest().is_ok());
}

/// `row_digests` of an address that does not exist has no rows; `with_rows` given row digests
/// that show no difference of that kind changes nothing.
#[test]
fn rows_of_nowhere_and_of_the_wrong_chunk_change_nothing() {
    let n = 2 * CHUNK_CAPACITY as u32;
    let (a, _) = hp_world(n);
    let (mut b, ids) = hp_world(n);
    b.get_mut::<Hp>(ids[CHUNK_CAPACITY + 5]).unwrap().0 += 1;
    let found = diff(&a.digest().unwrap(), &b.digest().unwrap()).unwrap();
    assert_eq!(
        (found.chunk, found.row, found.entity),
        (Some(1), None, None)
    );
    let wrong = ChunkAddress {
        archetype: found.archetype,
        chunk: 0,
    };
    let same = found.clone().with_rows(
        &a.row_digests(wrong).unwrap(),
        &b.row_digests(wrong).unwrap(),
    );
    assert_eq!(same, found);
    for at in [
        ChunkAddress {
            archetype: 99,
            chunk: 0,
        },
        ChunkAddress {
            archetype: found.archetype,
            chunk: 99,
        },
    ] {
        let rows = a.row_digests(at).unwrap();
        assert!(rows.is_empty());
        assert_eq!((rows.entity(0), rows.value(0, 0)), (None, None));
        assert_eq!(rows.address(), at);
        assert_eq!(found.clone().with_rows(&rows, &rows), found);
    }
    let at = ChunkAddress {
        archetype: found.archetype,
        chunk: 1,
    };
    let rows = |r: &Registry| -> RowDigests { r.row_digests(at).unwrap() };
    let named = found.with_rows(&rows(&a), &rows(&b));
    assert_eq!(
        (named.row, named.entity),
        (Some(5), Some(ids[CHUNK_CAPACITY + 5]))
    );
}

/// The `Display` line has the documented shape: ``archetype N (`…`): component `…` differs in
/// chunk C, row R, entity E``.
#[test]
fn the_report_line_is_as_documented() {
    let (a, _) = hp_world(3);
    let (mut b, ids) = hp_world(3);
    b.get_mut::<Hp>(ids[1]).unwrap().0 = 99;
    let found = a.locate_divergence(&b).unwrap().unwrap();
    let hp = core::any::type_name::<Hp>();
    assert_eq!(
        found.to_string(),
        format!(
            "archetype {} (`{hp}`): component `{hp}` differs in chunk 0, row 1, entity {}",
            found.archetype, ids[1]
        )
    );
}

/// The same simulation (spawns, parallel writes, despawns, respawns, a hierarchy, a disabled
/// entity, inserts and removes) on 1, 2, 8 and 16 workers: equal digests, values and world
/// hashes, and no divergence.
#[test]
fn digests_are_equal_for_1_2_8_and_16_workers() {
    let run = |workers: usize| {
        let mut r = registry(workers);
        let ids = r.spawn_batch((0..1500u32).map(|i| (Hp(i), Pos([i as f32, 0.5]))));
        r.spawn_batch((0..700u32).map(|i| (Hp(i), Name(format!("n{i}")), Cache(u64::from(i)))));
        for round in 0..3u32 {
            r.query::<(&mut Hp, &mut Pos)>()
                .each_async(move |_, (hp, pos)| {
                    hp.0 = hp.0.wrapping_mul(2_654_435_761).wrapping_add(round);
                    pos.0[0] += pos.0[1] * hp.0 as f32;
                });
            r.query::<(&Hp, &mut Name)>()
                .each_async(|_, (hp, name)| name.0.push(char::from(b'a' + (hp.0 % 26) as u8)));
            r.execute_tasks();
        }
        for &e in ids.iter().step_by(7) {
            r.despawn(e).unwrap();
        }
        r.spawn_batch((0..200u32).map(|i| (Hp(i), Pos([0.0; 2]))));
        let p = r.spawn((Hp(1),));
        r.spawn_children(p, (0..5).map(|i| (Hp(i), Tag))).unwrap();
        r.disable(ids[1]).unwrap();
        r.insert(ids[2], (Tag,)).unwrap();
        r.remove::<(Pos,)>(ids[3]).unwrap();
        r
    };
    let one = run(1);
    let want = one.digest().unwrap();
    for workers in [2, 8, 16] {
        let other = run(workers);
        assert_eq!(one.locate_divergence(&other), Ok(None), "{workers} workers");
        let got = other.digest().unwrap();
        assert_eq!(got.value(), want.value(), "{workers} workers");
        assert_eq!(got, want, "{workers} workers");
        assert_eq!(
            other.world_hash_all(),
            one.world_hash_all(),
            "{workers} workers"
        );
    }
}

/// A digest taken while parallel work that writes a hashed type is in flight waits for it: it
/// equals the digest taken after an explicit sync point, on 8 workers.
#[test]
fn a_digest_waits_for_in_flight_writes() {
    let build = |sync: bool| {
        let mut r = registry(8);
        r.spawn_batch((0..3000u32).map(|i| (Hp(i),)));
        r.query::<&mut Hp>().each_async(|_, hp| hp.0 = hp.0 * 3 + 1);
        if sync {
            r.execute_tasks();
        }
        r.digest().unwrap()
    };
    assert_eq!(build(false), build(true));
}

/// A component whose `stable_hash` panics on one value: `digest`, `row_digests`,
/// `world_hash_all` and `locate_divergence` panic, and afterwards the registry is usable and
/// uncorrupted: spawns, queries and writes work, and once the value is fixed the digest equals
/// that of a registry that never panicked.
#[test]
fn a_panicking_stable_hash_leaves_the_registry_usable() {
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Bomb(u32);
    impl StableHash for Bomb {
        fn stable_hash(&self, h: &mut StableHasher) {
            assert!(self.0 != 13, "bomb 13 went off");
            self.0.stable_hash(h);
        }
    }
    let build = |armed: bool| {
        let mut r = registry(4);
        r.register_hashable::<Bomb>();
        let ids = r.spawn_batch((0..1000u32).map(|i| (Hp(i), Bomb(i % 10))));
        if armed {
            r.query::<&mut Bomb>()
                .each_async(|e, b| b.0 = if e.index() == 600 { 13 } else { b.0 });
        }
        (r, ids)
    };
    let (clean, _) = build(false);
    let (mut r, ids) = build(true);
    let goes_off = |f: &mut dyn FnMut()| {
        let caught = panic::catch_unwind(AssertUnwindSafe(f)).expect_err("it panicked");
        assert!(
            panic_message(&*caught).contains("bomb 13"),
            "{}",
            panic_message(&*caught)
        );
    };
    goes_off(&mut || drop(r.digest()));
    goes_off(&mut || drop(r.world_hash_all()));
    goes_off(&mut || drop(clean.locate_divergence(&r)));
    let (archetype, chunk, _) = address(&r, ids[600]);
    goes_off(&mut || drop(r.row_digests(ChunkAddress { archetype, chunk })));

    // Still usable: reads, writes, structural changes, parallel work.
    assert_eq!(r.len(), 1000);
    assert_eq!(*r.get::<Bomb>(ids[600]).unwrap(), Bomb(13));
    assert_eq!(r.query::<&Bomb>().count(), 1000);
    let extra = r.spawn((Hp(0), Bomb(0)));
    r.despawn(extra).unwrap();
    r.get_mut::<Bomb>(ids[600]).unwrap().0 = 0;
    r.query::<&mut Hp>().each_async(|_, hp| hp.0 += 1);
    r.execute_tasks();
    r.query::<&mut Hp>().each_async(|_, hp| hp.0 -= 1);

    let (mut fixed, _) = build(false);
    let extra = fixed.spawn((Hp(0), Bomb(0)));
    fixed.despawn(extra).unwrap();
    assert_eq!(fixed.locate_divergence(&r), Ok(None));
    assert_eq!(fixed.digest().unwrap(), r.digest().unwrap());
    assert_eq!(fixed.world_hash_all(), r.world_hash_all());
    assert_eq!(clean.world_hash_all(), r.world_hash_all());
}

/// `diff` of a digest against itself, against an empty world's, and of two empty worlds; and a
/// digest rebuilt from its parts is equal to the original (the value is a function of the
/// parts).
#[test]
fn diff_edge_cases_and_rebuilt_digests() {
    let (a, _) = hp_world(600);
    let empty = Registry::with_workers(1);
    let (da, de) = (a.digest().unwrap(), empty.digest().unwrap());
    assert_eq!(diff(&da, &da), None);
    assert_eq!(diff(&de, &de), None);
    let found = diff(&de, &da).unwrap();
    assert!(matches!(
        found.kind,
        DivergenceKind::Archetypes {
            a: None,
            b: Some(_)
        }
    ));
    assert_eq!(
        found.components,
        da.archetypes()[found.archetype].components()
    );

    let rebuilt = WorldDigest::new(
        da.archetypes()
            .iter()
            .map(|x| {
                let hashed: Vec<bool> = (0..x.components().len()).map(|k| x.is_hashed(k)).collect();
                let entities: Vec<u64> = (0..x.chunk_count())
                    .map(|c| x.entities(c).unwrap())
                    .collect();
                let columns: Vec<u64> = (0..x.chunk_count())
                    .flat_map(|c| {
                        (0..x.components().len()).map(move |k| x.column(c, k).unwrap_or(0))
                    })
                    .collect();
                ArchetypeDigest::new(x.components().to_vec(), hashed, x.len(), entities, columns)
            })
            .collect(),
    );
    assert_eq!(rebuilt, da);
    assert_eq!(rebuilt.value(), da.value());
}

/// "A column digest is the hash of the column stream; a row digest is the hash of that row's
/// part of it": for a one-row chunk the two are the same hash, for a plain type (`Hp`), a
/// per-value one (`Name`) and a tag; and the two rows of a two-row chunk are told apart.
#[test]
fn a_one_row_column_digest_is_its_row_digest() {
    let mut r = registry(1);
    let e = r.spawn((Hp(7), Name("seven".into()), Tag));
    let (archetype, chunk, row) = address(&r, e);
    assert_eq!((chunk, row), (0, 0));
    let digest = r.digest().unwrap();
    let arch = &digest.archetypes()[archetype];
    let rows = r.row_digests(ChunkAddress { archetype, chunk }).unwrap();
    assert_eq!(rows.components(), arch.components());
    assert_eq!(arch.components().len(), 3);
    for k in 0..3 {
        assert!(arch.is_hashed(k));
        assert_eq!(arch.column(0, k), rows.value(0, k), "component {k}");
    }
    let mut two = registry(1);
    two.spawn_batch((0..2).map(|i| (Hp(i), Name(format!("{i}")))));
    let digest = two.digest().unwrap();
    let archetype = digest.archetypes().len() - 1;
    let rows = two
        .row_digests(ChunkAddress {
            archetype,
            chunk: 0,
        })
        .unwrap();
    assert_eq!(rows.len(), 2);
    for k in 0..2 {
        assert_ne!(rows.value(0, k), rows.value(1, k), "component {k}");
    }
}

/// An excluded type before the hashed one in the archetype's order: the component index counts
/// it, and `with_rows` reads the hashed component's row digests at that index, so the report
/// still names the right row and entity.
#[test]
fn an_excluded_column_before_a_hashed_one_keeps_the_index_straight() {
    let build = || {
        let mut r = registry(1);
        r.spawn((Cache(0),)); // `Cache` gets the first id
        let ids = r.spawn_batch((0..20).map(|i| (Cache(u64::from(i)), Hp(i))));
        (r, ids)
    };
    let ((a, _), (mut b, ids)) = (build(), build());
    b.get_mut::<Cache>(ids[2]).unwrap().0 = 999; // not hashed: no divergence
    assert_eq!(a.locate_divergence(&b), Ok(None));
    b.get_mut::<Hp>(ids[5]).unwrap().0 = 999;
    let found = a.locate_divergence(&b).unwrap().unwrap();
    assert!(
        matches!(&found.kind, DivergenceKind::Component { index: 1, name } if name.ends_with("::Hp")),
        "{found:?}"
    );
    assert_eq!((found.row, found.entity), (Some(5), Some(ids[5])));
}

/// Across machines only digests cross: a digest and a chunk's row digests sent through JSON come
/// back equal, and the report built from the received ones is the one built in process.
#[test]
fn digests_survive_the_wire() {
    let (a, _) = hp_world(1000);
    let (mut b, ids) = hp_world(1000);
    b.get_mut::<Hp>(ids[777]).unwrap().0 = 0;
    let wire = |d: &WorldDigest| -> WorldDigest {
        serde_json::from_str(&serde_json::to_string(d).unwrap()).unwrap()
    };
    let (da, db) = (a.digest().unwrap(), wire(&b.digest().unwrap()));
    assert_eq!(db, b.digest().unwrap());
    let found = diff(&da, &db).unwrap();
    let at = ChunkAddress {
        archetype: found.archetype,
        chunk: found.chunk.unwrap(),
    };
    let rows_b: RowDigests =
        serde_json::from_str(&serde_json::to_string(&b.row_digests(at).unwrap()).unwrap()).unwrap();
    let found = found.with_rows(&a.row_digests(at).unwrap(), &rows_b);
    assert_eq!(Some(found), a.locate_divergence(&b).unwrap());
}

/// `world_hash_all` is `world_hash` over the registered types in registration order, the types
/// the registry registers itself (`Disabled`, then `ChildOf` and `Children`) included; another
/// order is another hash.
#[test]
fn world_hash_all_is_the_listed_hash_with_the_kept_types() {
    use freyr::hierarchy::{ChildOf, Children, Disabled};
    let (mut r, ids) = hp_world(10);
    r.disable(ids[1]).unwrap();
    r.spawn_child(ids[0], (Hp(100),)).unwrap();
    assert_eq!(
        r.world_hash_all(),
        Ok(r.world_hash::<(Hp, Pos, Tag, Name, Disabled, ChildOf, Children)>())
    );
    assert_ne!(
        r.world_hash_all(),
        Ok(r.world_hash::<(Hp, Pos, Tag, Name, ChildOf, Children, Disabled)>())
    );
}
