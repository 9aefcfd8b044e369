//! The raw column path (`register_persistent_pod`): plain-data columns saved as their bytes
//! load back to the same world beside serde-encoded ones, whatever order the loading program
//! touched its types in; the file records each type's encoding, so loading with the other one
//! registered is a typed error with the registry unchanged; an import into a registry with
//! hooks (through `Registry::insert`) and one without (straight into the world) give the same
//! ids, values and order. Small sizes under Miri.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr::persist::bytemuck::{Pod, Zeroable};
use freyr::persist::{ColumnEncoding, LoadError};
use freyr::{Entity, Registry, StableHash};
use serde::{Deserialize, Serialize};

const N: u32 = if cfg!(miri) { 40 } else { 5000 };

#[derive(Clone, Copy, Debug, PartialEq, StableHash, Pod, Zeroable, Serialize, Deserialize)]
#[bytemuck(crate = "freyr::persist::bytemuck")]
#[repr(C)]
struct Position([f32; 3]);

#[derive(Clone, Copy, Debug, PartialEq, StableHash, Pod, Zeroable)]
#[bytemuck(crate = "freyr::persist::bytemuck")]
#[repr(C)]
struct Velocity {
    x: f32,
    y: f32,
    z: f32,
}

/// A zero-sized plain-data marker: a column of no bytes.
#[derive(Clone, Copy, Debug, PartialEq, StableHash, Pod, Zeroable)]
#[bytemuck(crate = "freyr::persist::bytemuck")]
#[repr(C)]
struct Frozen;

#[derive(Clone, Debug, PartialEq, StableHash, Serialize, Deserialize)]
struct Name(String);

fn register(r: &mut Registry, reversed: bool) {
    if reversed {
        r.register_persistent::<Name>("raw.name", 1);
        r.register_persistent_pod::<Frozen>("raw.frozen", 1);
        r.register_persistent_pod::<Velocity>("raw.velocity", 1);
        r.register_persistent_pod::<Position>("raw.position", 1);
        r.spawn((
            Frozen,
            Velocity {
                x: 0.0,
                y: 0.0,
                z: 0.0,
            },
        ));
    } else {
        r.register_persistent_pod::<Position>("raw.position", 1);
        r.register_persistent_pod::<Velocity>("raw.velocity", 1);
        r.register_persistent_pod::<Frozen>("raw.frozen", 1);
        r.register_persistent::<Name>("raw.name", 1);
    }
}

fn world() -> Registry {
    let mut r = Registry::with_workers(2);
    register(&mut r, false);
    r.spawn_batch((0..N).map(|i| {
        let f = i as f32;
        (
            Position([f, -f, 0.5]),
            Velocity {
                x: 1.0,
                y: f,
                z: -2.0,
            },
        )
    }));
    for i in (0..N).step_by(7) {
        let e = r.spawn((Position([i as f32; 3]), Name(format!("n{i}"))));
        if i % 2 == 0 {
            r.insert(e, (Frozen,)).unwrap();
        }
    }
    let gone: Vec<Entity> = {
        let mut seen = Vec::new();
        r.query::<&Velocity>().each(|e, _| seen.push(e));
        seen.into_iter().step_by(5).collect()
    };
    for e in gone {
        r.despawn(e).unwrap();
    }
    r
}

fn hash(r: &Registry) -> u64 {
    r.world_hash::<(Position, Velocity, Frozen, Name)>()
}

fn order(r: &mut Registry) -> Vec<(Entity, Position)> {
    let mut seen = Vec::new();
    r.query::<&Position>().each(|e, p| seen.push((e, *p)));
    seen
}

#[test]
fn raw_columns_load_back_beside_serde_ones_in_any_type_order() {
    let bytes = world().save_to_vec().unwrap();
    assert_eq!(
        world().save_to_vec().unwrap(),
        bytes,
        "a save is deterministic"
    );
    for reversed in [false, true] {
        let mut saved = world();
        let mut loaded = Registry::with_workers(1);
        register(&mut loaded, reversed);
        loaded.load_into(&bytes).unwrap();
        assert_eq!(hash(&loaded), hash(&saved), "reversed {reversed}");
        assert_eq!(order(&mut loaded), order(&mut saved));
        assert_eq!(
            loaded.spawn((Frozen,)),
            saved.spawn((Frozen,)),
            "same next id"
        );
    }
}

/// A save larger than the size from which a load copies with stores that bypass the cache
/// (8 MiB of entity and column bytes: 480k rows of 8 + 12 + 12 bytes is 15 MB) loads to the
/// same world: every value, the order, the next id, and a tick over the loaded values.
#[test]
#[cfg_attr(
    miri,
    ignore = "15 MB of rows; the copy path Miri checks is the small one"
)]
fn a_save_past_the_streaming_size_loads_to_the_same_world() {
    const BIG: u32 = 480_000;
    let make = || {
        let mut r = Registry::with_workers(2);
        register(&mut r, false);
        r.spawn_batch((0..BIG).map(|i| {
            let f = i as f32;
            (
                Position([f, -f, 0.25 * f]),
                Velocity {
                    x: 1.0,
                    y: f,
                    z: -f,
                },
            )
        }));
        // A partial last chunk and a second archetype.
        r.spawn((Position([1.0; 3]), Name("last".into())));
        r
    };
    let mut saved = make();
    let bytes = saved.save_to_vec().unwrap();
    assert!(bytes.len() > 15_000_000, "{} bytes", bytes.len());
    let mut loaded = Registry::with_workers(1);
    register(&mut loaded, true);
    loaded.load_into(&bytes).unwrap();
    assert_eq!(hash(&loaded), hash(&saved));
    let (a, b) = (order(&mut loaded), order(&mut saved));
    assert_eq!(a.len(), BIG as usize + 1);
    assert_eq!(a, b);
    let mut sum = 0.0f64;
    loaded.query::<(&Position, &Velocity)>().each(|_, (p, v)| {
        sum += f64::from(p.0[0] + v.y);
    });
    let expected: f64 = (0..BIG).map(|i| 2.0 * f64::from(i as f32)).sum();
    assert_eq!(sum, expected);
    // A second load copies into the chunks the first one replaced (the program's own small
    // world's), and a third into the first load's: the same world each time.
    for round in 0..2 {
        loaded.load_into(&bytes).unwrap();
        assert_eq!(hash(&loaded), hash(&saved), "round {round}");
        assert_eq!(order(&mut loaded), b, "round {round}");
    }
    assert!(
        loaded.spare_memory() > 15_000_000,
        "the replaced 480k-row world's chunks"
    );
    assert_eq!(
        loaded.spawn((Frozen,)),
        saved.spawn((Frozen,)),
        "same next id"
    );
}

/// Every load after the first copies into the chunk memory the previous load replaced: the
/// loaded world is the save's whatever those bytes held; a failed load leaves the registry
/// unchanged and frees that memory; `release_spare_memory` frees it on request.
#[test]
fn loads_reuse_the_replaced_worlds_memory_and_nothing_else_changes() {
    let first = world().save_to_vec().unwrap();
    let mut other = world();
    other.spawn_batch((0..N).map(|i| (Position([-(i as f32); 3]), Name(format!("o{i}")))));
    let second = other.save_to_vec().unwrap();
    let mut r = Registry::with_workers(1);
    register(&mut r, true);
    assert_eq!(r.spare_memory(), 0);
    r.load_into(&first).unwrap();
    r.load_into(&second).unwrap();
    assert_eq!(hash(&r), hash(&other));
    assert_eq!(order(&mut r), order(&mut other));
    let kept = r.spare_memory();
    assert!(kept > 0, "the first load's world's chunks");
    r.load_into(&first).unwrap();
    assert_eq!(hash(&r), hash(&world()));
    assert_eq!(order(&mut r), order(&mut world()));
    let mut damaged = second.clone();
    let at = damaged.len() / 2;
    damaged[at] ^= 0x04;
    assert!(matches!(
        r.load_into(&damaged),
        Err(LoadError::ChecksumMismatch { .. })
    ));
    assert_eq!(hash(&r), hash(&world()), "unchanged");
    assert_eq!(
        r.spare_memory(),
        0,
        "what the failed build took is freed with it"
    );
    r.load_into(&second).unwrap();
    assert_eq!(hash(&r), hash(&other));
    let kept = r.spare_memory();
    assert!(kept > 0);
    assert_eq!(r.release_spare_memory(), kept);
    assert_eq!(r.spare_memory(), 0);
    r.load_into(&first).unwrap();
    assert_eq!(hash(&r), hash(&world()));
}

#[test]
fn the_other_encoding_registered_is_a_typed_error_and_changes_nothing() {
    let bytes = world().save_to_vec().unwrap();
    let mut serde_here = Registry::with_workers(1);
    serde_here.register_persistent::<Position>("raw.position", 1);
    serde_here.register_persistent_pod::<Velocity>("raw.velocity", 1);
    serde_here.register_persistent_pod::<Frozen>("raw.frozen", 1);
    serde_here.register_persistent::<Name>("raw.name", 1);
    let kept = serde_here.spawn((Position([9.0; 3]),));
    let err = serde_here.load_into(&bytes).unwrap_err();
    match &err {
        LoadError::EncodingMismatch {
            name,
            saved,
            registered,
        } => {
            assert_eq!(name, "raw.position");
            assert_eq!(*saved, ColumnEncoding::Raw);
            assert_eq!(*registered, ColumnEncoding::Serde);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("raw.position"), "{err}");
    assert_eq!(serde_here.len(), 1);
    assert_eq!(serde_here.get::<Position>(kept), Ok(&Position([9.0; 3])));

    // And the other way round: a serde save read by a program that registers the type raw.
    let mut serde_saver = Registry::with_workers(1);
    serde_saver.register_persistent::<Position>("raw.position", 1);
    serde_saver.spawn((Position([1.0; 3]),));
    let serde_bytes = serde_saver.save_to_vec().unwrap();
    let mut raw_here = Registry::with_workers(1);
    register(&mut raw_here, false);
    assert!(matches!(
        raw_here.load_into(&serde_bytes),
        Err(LoadError::EncodingMismatch {
            saved: ColumnEncoding::Serde,
            registered: ColumnEncoding::Raw,
            ..
        })
    ));
    assert!(raw_here.is_empty());
}

#[test]
fn every_truncation_and_flipped_bit_of_a_raw_save_is_caught() {
    let mut small = Registry::with_workers(1);
    register(&mut small, false);
    small.spawn((Position([1.0, 2.0, 3.0]), Frozen));
    small.spawn((Velocity {
        x: 4.0,
        y: 5.0,
        z: 6.0,
    },));
    let bytes = small.save_to_vec().unwrap();
    let mut target = Registry::with_workers(1);
    register(&mut target, true);
    let before = hash(&target);
    let step = if cfg!(miri) { 53 } else { 1 };
    for len in (0..bytes.len()).step_by(step) {
        assert!(matches!(
            target.load_into(&bytes[..len]),
            Err(LoadError::Truncated { .. })
        ));
    }
    for bit in (0..bytes.len() * 8).step_by(step * 3) {
        let mut damaged = bytes.clone();
        damaged[bit / 8] ^= 1 << (bit % 8);
        let err = target.load_into(&damaged).unwrap_err();
        assert!(
            matches!(
                err,
                LoadError::ChecksumMismatch { .. }
                    | LoadError::NotAFreyrFile
                    | LoadError::Truncated { .. }
            ),
            "bit {bit}: {err:?}"
        );
    }
    assert_eq!(hash(&target), before);
    target.load_into(&bytes).unwrap();
    assert_eq!(hash(&target), hash(&small));
}

/// Imports `bytes` into a fresh registry (with a hook on an unrelated type if `hooked`, so
/// the import goes through `Registry::insert`), after taking some ids.
fn import(bytes: &[u8], hooked: bool) -> (Registry, Vec<(Entity, Entity)>, usize) {
    let mut b = Registry::with_workers(1);
    register(&mut b, false);
    let calls = Arc::new(AtomicUsize::new(0));
    if hooked {
        let seen = calls.clone();
        b.on_add::<Position>(move |_, _| {
            seen.fetch_add(1, Ordering::Relaxed);
        });
    }
    for i in 0..3 {
        b.spawn((Name(format!("local{i}")),));
    }
    let map = b.import(bytes).unwrap();
    let pairs = map.pairs().to_vec();
    (b, pairs, calls.load(Ordering::Relaxed))
}

#[test]
fn an_import_with_and_without_hooks_gives_the_same_world() {
    let mut a = world();
    let mut exported = Vec::new();
    a.query::<&Position>().each(|e, _| exported.push(e));
    exported.reverse();
    exported.truncate(exported.len() / 2);
    let bytes = a.export(&exported).unwrap();
    let (mut plain, plain_pairs, _) = import(&bytes, false);
    let (mut hooked, hooked_pairs, calls) = import(&bytes, true);
    assert_eq!(plain_pairs, hooked_pairs);
    assert_eq!(
        calls,
        exported.len(),
        "the hooks saw every imported Position"
    );
    assert_eq!(hash(&plain), hash(&hooked));
    assert_eq!(order(&mut plain), order(&mut hooked));
    for &(old, new) in &plain_pairs {
        assert_eq!(plain.get::<Position>(new), a.get::<Position>(old));
        assert_eq!(plain.get::<Velocity>(new).ok(), a.get::<Velocity>(old).ok());
        assert_eq!(plain.get::<Frozen>(new).ok(), a.get::<Frozen>(old).ok());
        assert_eq!(plain.get::<Name>(new).ok(), a.get::<Name>(old).ok());
    }
    assert_eq!(plain.len(), 3 + exported.len());
}
