//! Attacks on the desync locator's promises ("diff a world exactly"): `Registry::digest`,
//! `diff`, `Divergence::with_rows`, `Registry::locate_divergence`, `row_digests`, and the world
//! hashes beside them. Pairs of registries that differ in exactly one thing (one value, one
//! entity, the row order, a despawn then respawn on the same index, an empty archetype, a
//! disabled entity, the parent relation, an excluded type, a resource) must be told apart (or
//! not, where the documentation says the digest does not cover it) and the report must name the
//! exact archetype, chunk, row, entity and component; equal worlds built on 1, 2, 8 and 16
//! workers must digest equal; a `StableHash` that panics must leave the registry usable.

mod digest_support;

use digest_support::*;

use freyr::hash::{ChunkAddress, DivergenceKind};
use freyr::storage::CHUNK_CAPACITY;
use freyr::{Entity, Registry};

/// One component value differs in one entity at a chunk boundary (row 0 of chunk 1, and the
/// last row of chunk 0): the report names that component, chunk, row and entity, and the
/// whole-world values and world hashes differ.
#[test]
fn one_value_is_named_to_its_entity_at_both_chunk_edges() {
    let n = 2 * CHUNK_CAPACITY as u32;
    for victim in [
        CHUNK_CAPACITY,
        CHUNK_CAPACITY - 1,
        0,
        2 * CHUNK_CAPACITY - 1,
    ] {
        let (a, _) = hp_world(n);
        let (mut b, ids) = hp_world(n);
        assert_eq!(a.locate_divergence(&b), Ok(None));
        b.get_mut::<Hp>(ids[victim]).unwrap().0 ^= 1 << 31;
        let (da, db) = (a.digest().unwrap(), b.digest().unwrap());
        assert_ne!(da.value(), db.value());
        assert_ne!(a.world_hash_all(), b.world_hash_all());
        let found = a.locate_divergence(&b).unwrap().unwrap();
        let (archetype, chunk, row) = address(&b, ids[victim]);
        assert_eq!(found.archetype, archetype);
        assert!(
            matches!(&found.kind, DivergenceKind::Component { index: 0, name } if name.ends_with("::Hp")),
            "{found:?}"
        );
        assert_eq!(
            (found.chunk, found.row, found.entity),
            (Some(chunk), Some(row), Some(ids[victim])),
            "victim {victim}"
        );
        assert_eq!(chunk * CHUNK_CAPACITY + row, victim);
    }
}

/// Two entities swap their values: the same multiset of values, so only a digest that keeps
/// values at their rows sees it; the first of the two rows is named.
#[test]
fn swapped_values_name_the_first_row() {
    let (a, _) = hp_world(10);
    let (mut b, ids) = hp_world(10);
    b.get_mut::<Hp>(ids[3]).unwrap().0 = 7;
    b.get_mut::<Hp>(ids[7]).unwrap().0 = 3;
    let found = a.locate_divergence(&b).unwrap().unwrap();
    assert!(matches!(
        found.kind,
        DivergenceKind::Component { index: 0, .. }
    ));
    assert_eq!((found.row, found.entity), (Some(3), Some(ids[3])));
}

/// Bit-exact floats: `0.0` against `-0.0`, and two NaNs with different payloads, differ.
#[test]
fn float_bits_are_told_apart() {
    for (x, y) in [
        (0.0f32, -0.0f32),
        (f32::from_bits(0x7fc0_0000), f32::from_bits(0x7fc0_0001)),
    ] {
        let build = |v: f32| {
            let mut r = registry(1);
            let ids =
                r.spawn_batch((0..5).map(|i| (Pos([i as f32, if i == 4 { v } else { 1.0 }]),)));
            (r, ids)
        };
        let ((a, _), (b, ids)) = (build(x), build(y));
        let found = a.locate_divergence(&b).unwrap().unwrap();
        assert_eq!((found.row, found.entity), (Some(4), Some(ids[4])));
    }
}

/// One extra entity on one side: an `Entities` divergence with both counts, naming the extra
/// entity's row (past side `a`'s last row, so the entity is side `b`'s).
#[test]
fn one_extra_entity_is_named() {
    let (a, _) = hp_world(600);
    let (mut b, _) = hp_world(600);
    let extra = b.spawn((Hp(600),));
    let found = a.locate_divergence(&b).unwrap().unwrap();
    assert_eq!(
        found.kind,
        DivergenceKind::Entities {
            a_len: 600,
            b_len: 601
        }
    );
    assert_eq!(
        (found.chunk, found.row, found.entity),
        (Some(1), Some(600 - CHUNK_CAPACITY), Some(extra))
    );
    // And the other way round: side `a` has the extra row.
    let found = b.locate_divergence(&a).unwrap().unwrap();
    assert_eq!(found.entity, Some(extra));
}

/// The same entities with the same values in another row order: the world hashes agree (they
/// sort by id), the digests do not, and the first row whose entity differs is named.
#[test]
fn another_row_order_is_an_entities_divergence() {
    let build = |moved: usize| {
        let (mut r, ids) = hp_world(3);
        // Out of the archetype and back: swap-remove then append.
        r.insert(ids[moved], (Tag,)).unwrap();
        r.remove::<(Tag,)>(ids[moved]).unwrap();
        (r, ids)
    };
    // Moving the last row leaves the order [0, 1, 2]; moving row 0 gives [2, 1, 0].
    let ((a, ids), (b, _)) = (build(2), build(0));
    assert_eq!(a.world_hash_all(), b.world_hash_all());
    assert_ne!(a.digest().unwrap(), b.digest().unwrap());
    let found = a.locate_divergence(&b).unwrap().unwrap();
    assert_eq!(found.kind, DivergenceKind::Entities { a_len: 3, b_len: 3 });
    assert_eq!((found.row, found.entity), (Some(0), Some(ids[0])));
}

/// A despawn then a respawn that reuses the index with a new generation, with the same value:
/// the ids differ, so both the world hash and the digest differ, and the report names side `a`'s
/// entity, whose index side `b`'s new entity shares.
#[test]
fn a_respawn_on_the_same_index_is_a_different_entity() {
    let (a, ids) = hp_world(4);
    let (mut b, _) = hp_world(4);
    b.despawn(ids[2]).unwrap();
    let again = b.spawn((Hp(2),));
    assert_eq!(again.index(), ids[2].index(), "the index is reused");
    assert_ne!(again, ids[2]);
    // Put the respawned row back in its old place, so only the generation differs.
    b.insert(ids[3], (Tag,)).unwrap();
    b.remove::<(Tag,)>(ids[3]).unwrap();
    a.world_hash_all().unwrap();
    assert_ne!(a.world_hash_all(), b.world_hash_all());
    let found = a.locate_divergence(&b).unwrap().unwrap();
    assert!(matches!(
        found.kind,
        DivergenceKind::Entities { a_len: 4, b_len: 4 }
    ));
    assert_eq!(found.row, Some(2));
    assert_eq!(found.entity, Some(ids[2]));
    let at = ChunkAddress {
        archetype: found.archetype,
        chunk: found.chunk.unwrap(),
    };
    assert_eq!(b.row_digests(at).unwrap().entity(2), Some(again));
}

/// An archetype that was created and emptied on one side only: the world hashes agree, the
/// digests do not (empty archetypes are covered), and the report is an `Archetypes` divergence
/// naming the components of the side that has it.
#[test]
fn an_empty_archetype_on_one_side_is_an_archetypes_divergence() {
    let (mut a, _) = hp_world(3);
    let (b, _) = hp_world(3);
    let e = a.spawn((Hp(9), Tag));
    a.despawn(e).unwrap();
    assert_eq!(a.world_hash_all(), b.world_hash_all());
    let da = a.digest().unwrap();
    let empty = da.archetypes().last().unwrap();
    assert!(empty.is_empty());
    assert_ne!(da, b.digest().unwrap());
    let found = a.locate_divergence(&b).unwrap().unwrap();
    assert!(
        matches!(&found.kind, DivergenceKind::Archetypes { a: Some(names), b: None } if names.len() == 2),
        "{found:?}"
    );
    assert_eq!(found.archetype, da.archetypes().len() - 1);
    assert_eq!((found.chunk, found.row, found.entity), (None, None, None));
    assert_eq!(found.components, empty.components());
    assert!(
        found
            .to_string()
            .ends_with("the archetypes differ (side a: present, side b: absent)"),
        "{found}"
    );
}

/// "Equal for worlds with the same archetypes, rows and values": the history of how many chunks
/// an archetype once had does not count. An archetype emptied from 2 chunks against one emptied
/// from 1, and one shrunk from 2 chunks to 300 rows against one that only ever had 300 rows.
#[test]
fn chunk_history_does_not_change_the_digest() {
    let emptied = |n: u32| {
        let mut r = registry(1);
        let ids = r.spawn_batch((0..n).map(|i| (Hp(i), Tag)));
        for e in ids.into_iter().rev() {
            r.despawn(e).unwrap();
        }
        r
    };
    let (a, b) = (emptied(1), emptied(2 * CHUNK_CAPACITY as u32));
    assert_eq!(a.locate_divergence(&b), Ok(None));
    assert_eq!(a.digest().unwrap(), b.digest().unwrap());

    let (mut shrunk, ids) = hp_world(700);
    for &e in ids[300..].iter().rev() {
        shrunk.despawn(e).unwrap();
    }
    let (small, _) = hp_world(300);
    assert_eq!(shrunk.world_hash_all(), small.world_hash_all());
    assert_eq!(shrunk.locate_divergence(&small), Ok(None));
}

/// A disabled entity on one side: the digests differ and the report names it; disabling then
/// enabling again gives back an equal world hash against a world that disabled the same entity
/// and enabled it, on any worker count.
#[test]
fn a_disabled_entity_is_named() {
    let (mut a, ids) = hp_world(5);
    let (mut b, _) = hp_world(5);
    // Register `Disabled` on both sides so the hashed types agree.
    a.register_disabled();
    b.register_disabled();
    b.disable(ids[4]).unwrap();
    assert_ne!(a.world_hash_all(), b.world_hash_all());
    let found = a.locate_divergence(&b).unwrap().unwrap();
    assert_eq!(found.kind, DivergenceKind::Entities { a_len: 5, b_len: 4 });
    assert_eq!((found.row, found.entity), (Some(4), Some(ids[4])));

    b.enable(ids[4]).unwrap();
    assert_eq!(a.world_hash_all(), b.world_hash_all());
    // `b` now has the (empty) `Disabled` archetype: an archetype divergence, not a value one.
    let found = a.locate_divergence(&b).unwrap().unwrap();
    assert!(matches!(
        found.kind,
        DivergenceKind::Archetypes {
            a: None,
            b: Some(_)
        }
    ));
    a.disable(ids[4]).unwrap();
    a.enable(ids[4]).unwrap();
    assert_eq!(a.locate_divergence(&b), Ok(None));
}

/// A child under another parent, with no row moving: the first divergence in the fixed order is
/// the `ChildOf` of the child or the `Children` of the first parent, whichever archetype was
/// created first, and the report names that entity.
#[test]
fn another_parent_is_named_to_the_child_or_the_parent() {
    let build = |second: bool| {
        let mut r = registry(2);
        let p1 = r.spawn((Hp(1),));
        let p2 = r.spawn((Hp(2),));
        r.spawn_child(p1, (Hp(10),)).unwrap();
        r.spawn_child(p2, (Hp(20),)).unwrap();
        let c = r
            .spawn_child(if second { p2 } else { p1 }, (Hp(30),))
            .unwrap();
        (r, p1, c)
    };
    let ((a, p1, c), (b, _, _)) = (build(false), build(true));
    hierarchy_hashable(&a);
    hierarchy_hashable(&b);
    assert_ne!(a.world_hash_all(), b.world_hash_all());
    let found = a.locate_divergence(&b).unwrap().unwrap();
    let (child_archetype, ..) = address(&a, c);
    let (parent_archetype, ..) = address(&a, p1);
    let DivergenceKind::Component { name, .. } = &found.kind else {
        panic!("not a value divergence: {found:?}");
    };
    if child_archetype < parent_archetype {
        assert!(name.ends_with("ChildOf"), "{found}");
        assert_eq!(found.entity, Some(c));
    } else {
        assert!(name.ends_with("Children"), "{found}");
        assert_eq!(found.entity, Some(p1));
    }
    assert_eq!(found.archetype, child_archetype.min(parent_archetype));
}

/// The hierarchy methods registered `ChildOf` and `Children` for the hash.
fn hierarchy_hashable(r: &Registry) {
    assert!(
        r.world_hash_all().is_ok(),
        "the hierarchy types are registered"
    );
}

/// The order of a parent's children is state: two worlds whose only difference is the order in
/// which the same children were attached differ, and the hash sees it too.
#[test]
fn the_order_of_children_is_seen() {
    let build = |reversed: bool| {
        let mut r = registry(1);
        let p = r.spawn((Hp(0),));
        let kids: Vec<Entity> = (1..=3).map(|i| r.spawn((Hp(i), Tag))).collect();
        let order: Vec<Entity> = if reversed {
            kids.iter().rev().copied().collect()
        } else {
            kids.clone()
        };
        for k in order {
            r.set_parent(k, p).unwrap();
        }
        (r, p)
    };
    let ((a, p), (b, _)) = (build(false), build(true));
    assert_ne!(a.world_hash_all(), b.world_hash_all());
    let found = a.locate_divergence(&b).unwrap().unwrap();
    // Either the children's rows are in another order, or the parent's list differs.
    match &found.kind {
        DivergenceKind::Entities { a_len: 3, b_len: 3 } => assert!(found.entity.is_some()),
        DivergenceKind::Component { name, .. } if name.ends_with("Children") => {
            assert_eq!(found.entity, Some(p))
        }
        other => panic!("unexpected {other:?}: {found}"),
    }
}

/// An excluded type: its values are not hashed (different values, equal digests and hashes),
/// its presence is (it is part of its archetype), and its column reads `None`.
#[test]
fn an_excluded_type_is_named_but_not_hashed() {
    let build = |cache: u64| {
        let mut r = registry(1);
        r.spawn_batch((0..10).map(|i| (Hp(i), Cache(cache + u64::from(i)))));
        r
    };
    let (a, b) = (build(0), build(1000));
    assert_eq!(a.digest().unwrap(), b.digest().unwrap());
    assert_eq!(a.world_hash_all(), b.world_hash_all());
    assert_eq!(a.locate_divergence(&b), Ok(None));
    let d = a.digest().unwrap();
    let arch = d.archetypes().iter().find(|x| x.len() == 10).unwrap();
    let k = arch
        .components()
        .iter()
        .position(|n| n.ends_with("::Cache"))
        .unwrap();
    assert!(!arch.is_hashed(k));
    assert_eq!(arch.column(0, k), None);

    // Presence counts: an eleventh entity with `Cache` on one side, without it on the other.
    // The `(Hp, Cache)` archetype comes first, so its extra row is the first divergence.
    let mut c = build(0);
    c.spawn((Hp(10),));
    let mut d = build(0);
    let extra = d.spawn((Hp(10), Cache(0)));
    let found = c.locate_divergence(&d).unwrap().unwrap();
    assert_eq!(
        found.kind,
        DivergenceKind::Entities {
            a_len: 10,
            b_len: 11
        }
    );
    assert_eq!((found.row, found.entity), (Some(10), Some(extra)));
}

/// The same bundle written in another field order on the first spawn: the world hashes agree,
/// but the component ids (and so the archetype's component order) follow the order in which the
/// types were first seen, and the digest reports it as an `Archetypes` divergence whose two
/// name lists are the same types in another order, never as equal digests or a value
/// divergence (see the audit report: two programs that differ only in bundle field order do not
/// digest equal).
#[test]
fn bundle_field_order_is_an_archetype_order_difference() {
    let mut a = registry(1);
    a.spawn((Hp(1), Pos([1.0, 2.0])));
    let mut b = registry(1);
    b.spawn((Pos([1.0, 2.0]), Hp(1)));
    assert_eq!(a.world_hash_all(), b.world_hash_all());
    let found = a.locate_divergence(&b).unwrap().unwrap();
    let DivergenceKind::Archetypes {
        a: Some(x),
        b: Some(y),
    } = &found.kind
    else {
        panic!("not an archetype divergence: {found:?}");
    };
    assert_ne!(x, y);
    let (mut xs, mut ys) = (x.clone(), y.clone());
    xs.sort();
    ys.sort();
    assert_eq!(xs, ys, "the same types");
    assert!(found.to_string().contains("side b has"), "{found}");
}
