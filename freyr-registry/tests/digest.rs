//! The desync locator: a flipped bit in a 100k-entity world is named down to the archetype,
//! component, chunk, row and entity; digests are equal for 1, 2, 3 and 8 workers; any single
//! value change, and a change of row order, changes the digest; `PLAIN_BYTES` is no for a type
//! with padding; the digest's streams are exactly as documented. Under Miri the worlds are small
//! (the raw-column path is the one Miri checks).
//!
//! `cargo test --release -p freyr-query --test digest -- --ignored timing` prints the digest's
//! time for 100k entities × 4 components of 16 bytes.

use core::hash::Hasher;

use freyr::hash::StableHasher;
use freyr::hash::{ChunkAddress, DigestHasher, DivergenceKind, WorldDigest};
use freyr::storage::CHUNK_CAPACITY;
use freyr::{Registry, StableHash};

#[derive(StableHash, Clone, Copy, Debug, PartialEq)]
struct A([u32; 4]);
#[derive(StableHash, Clone, Copy, Debug, PartialEq)]
struct B([f32; 4]);
#[derive(StableHash, Clone, Copy, Debug, PartialEq)]
struct C([u64; 2]);
#[derive(StableHash, Clone, Copy, Debug, PartialEq)]
struct D {
    x: i32,
    y: i32,
    z: i32,
    w: i32,
}
/// A tag, to make more archetypes.
#[derive(StableHash, Clone, Copy)]
struct Tag;
/// Not plain (a `String`): hashed value by value.
#[derive(StableHash, Clone, Debug, PartialEq)]
struct Name(String);

/// Entities in the big world. Under Miri, enough for row [`ROW`] of the first archetype's second
/// chunk (81 rows, the other three 78 each, so the first is told apart by its length).
const BIG: u32 = if cfg!(miri) { 315 } else { 100_000 };
/// The victim's row in its chunk.
const ROW: usize = if cfg!(miri) { 7 } else { 77 };

fn register(r: &mut Registry) {
    r.register_hashable::<A>();
    r.register_hashable::<B>();
    r.register_hashable::<C>();
    r.register_hashable::<D>();
    r.register_hashable::<Tag>();
    r.register_hashable::<Name>();
}

fn a(i: u32) -> A {
    A([i, i ^ 0x55, i.wrapping_mul(3), 7])
}
fn b(i: u32) -> B {
    B([i as f32, -(i as f32), 0.5, 1.0])
}
fn c(i: u32) -> C {
    C([u64::from(i) << 20, 99])
}
fn d(i: u32) -> D {
    D {
        x: i as i32,
        y: -(i as i32),
        z: 3,
        w: 4,
    }
}

/// `n` entities over four archetypes of the four 16-byte components (and a tag).
fn big_world(workers: usize, n: u32) -> Registry {
    let mut r = Registry::with_workers(workers);
    register(&mut r);
    let quarter = n / 4;
    r.spawn_batch((0..n - 3 * quarter).map(|i| (a(i), b(i), c(i), d(i))));
    r.spawn_batch((0..quarter).map(|i| (a(i), b(i), c(i))));
    r.spawn_batch((0..quarter).map(|i| (a(i), c(i), d(i), Tag)));
    r.spawn_batch((0..quarter).map(|i| (b(i), c(i), d(i))));
    r
}

fn names(r: &Registry, archetype: usize) -> Vec<String> {
    let world = r.world();
    world.archetypes()[archetype]
        .components()
        .iter()
        .map(|&id| world.component_info(id).name().to_owned())
        .collect()
}

#[test]
fn a_flipped_bit_is_located_to_the_entity() {
    let here = big_world(1, BIG);
    let mut there = big_world(1, BIG);
    assert_eq!(here.locate_divergence(&there), Ok(None));

    // The victim: in the first archetype, chunk 1 (or the last), row `ROW`.
    let first = there
        .world()
        .archetypes()
        .iter()
        .position(|a| a.len() as u32 == BIG - 3 * (BIG / 4))
        .unwrap();
    let archetype = &there.world().archetypes()[first];
    let chunk = 1.min(archetype.chunk_count() - 1);
    let victim = archetype.chunk(chunk).entities()[ROW];
    there.get_mut::<C>(victim).unwrap().0[1] ^= 1 << 40;

    // Across machines: digests, then one chunk's row digests.
    let (dh, dt) = (here.digest().unwrap(), there.digest().unwrap());
    assert_ne!(dh.value(), dt.value());
    let found = freyr::hash::diff(&dh, &dt).unwrap();
    assert_eq!(found.archetype, first);
    assert_eq!(found.components, names(&there, first));
    let mut sorted = found.components.clone();
    sorted.sort();
    let short: Vec<&str> = sorted
        .iter()
        .map(|n| n.rsplit("::").next().unwrap())
        .collect();
    assert_eq!(short, ["A", "B", "C", "D"]);
    let c_index = found
        .components
        .iter()
        .position(|n| n.ends_with("::C"))
        .unwrap();
    assert_eq!(
        found.kind,
        DivergenceKind::Component {
            index: c_index,
            name: found.components[c_index].clone()
        }
    );
    assert_eq!(
        (found.chunk, found.row, found.entity),
        (Some(chunk), None, None)
    );
    let at = ChunkAddress {
        archetype: first,
        chunk,
    };
    let found = found.with_rows(
        &here.row_digests(at).unwrap(),
        &there.row_digests(at).unwrap(),
    );
    assert_eq!((found.row, found.entity), (Some(ROW), Some(victim)));

    // In one process: the same report.
    assert_eq!(here.locate_divergence(&there), Ok(Some(found.clone())));
    let text = found.to_string();
    assert!(text.contains(&format!("archetype {first}")), "{text}");
    assert!(
        text.contains(&format!("chunk {chunk}, row {ROW}, entity {victim}")),
        "{text}"
    );
}

/// Spawns, despawns and writes from `each_async`, a few ticks, on `workers` workers.
fn simulated(workers: usize) -> Registry {
    let mut r = big_world(workers, 20_000);
    for tick in 0..3u32 {
        r.query::<(&mut A, &B)>().each_async(move |_, (a, b)| {
            a.0[0] = a.0[0].wrapping_add(b.0[0].to_bits() ^ tick);
        });
        r.query::<(&mut D, &C)>()
            .each_async_with(move |e, (d, cv), ctx| {
                d.x = d.x.wrapping_add(cv.0[0] as i32);
                if (e.index() + tick) % 97 == 0 {
                    ctx.commands().despawn(e);
                } else if (e.index() + tick) % 89 == 0 {
                    ctx.commands()
                        .spawn((a(e.index()), c(tick), Name(format!("n{}", e.index()))));
                }
            });
        r.execute_tasks();
    }
    r
}

#[test]
#[cfg_attr(
    miri,
    ignore = "what it adds is equality across worker counts, a logic property run natively: its \
              parallel run's tasks and commands are Miri-checked by small_world_soundness, and \
              its digests read the columns as this file's other Miri tests do"
)]
fn digests_are_equal_for_1_2_3_and_8_workers() {
    let reference = simulated(1);
    let want = reference.digest().unwrap();
    assert!(
        want.archetypes()
            .iter()
            .any(|a| a.components().iter().any(|n| n.ends_with("Name")))
    );
    for workers in [2, 3, 8] {
        let run = simulated(workers);
        assert_eq!(run.digest().unwrap(), want, "{workers} workers");
        assert_eq!(reference.locate_divergence(&run), Ok(None));
        assert_eq!(run.world_hash_all(), reference.world_hash_all());
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "its digests read the columns as the other tests do; the edits are logic, run natively"
)]
fn every_single_value_change_changes_the_digest() {
    let mut r = big_world(1, 2_000);
    r.spawn_batch((0..40).map(|i| (a(i), Name(format!("x{i}")))));
    let before = r.digest().unwrap();
    let ids: Vec<_> = r
        .world()
        .archetypes()
        .iter()
        .flat_map(|a| a.chunks())
        .flat_map(|c| c.entities().to_vec())
        .step_by(37)
        .collect();
    let mut checked = 0;
    for e in ids {
        macro_rules! flip {
            ($t:ty, $edit:expr) => {
                if let Ok(v) = r.get_mut::<$t>(e) {
                    let old = v.clone();
                    ($edit)(v);
                    let after = r.digest().unwrap();
                    assert_ne!(after.value(), before.value(), "{} of {e}", stringify!($t));
                    let found = freyr::hash::diff(&before, &after).unwrap();
                    assert!(
                        matches!(&found.kind, DivergenceKind::Component { name, .. }
                            if name.ends_with(concat!("::", stringify!($t)))),
                        "{found}"
                    );
                    *r.get_mut::<$t>(e).unwrap() = old;
                    assert_eq!(r.digest().unwrap(), before);
                    checked += 1;
                }
            };
        }
        flip!(A, |v: &mut A| v.0[3] ^= 1 << 31);
        flip!(B, |v: &mut B| v.0[1] = -v.0[1]);
        flip!(C, |v: &mut C| v.0[0] ^= 1);
        flip!(D, |v: &mut D| v.w ^= 1 << 7);
        flip!(Name, |v: &mut Name| v.0.push('!'));
    }
    assert!(checked >= 150, "{checked}");
}

#[test]
fn a_change_of_row_order_changes_the_digest_but_not_the_world_hash() {
    // Removing and re-inserting a component moves the entity to its archetype's last row.
    let reorder = |first: usize, second: usize| {
        let mut r = Registry::with_workers(1);
        register(&mut r);
        let ids = r.spawn_batch((0..10).map(|i| (a(i), c(i))));
        for i in [first, second] {
            let removed: (C,) = r.remove(ids[i]).unwrap();
            r.insert(ids[i], removed).unwrap();
        }
        r
    };
    // Swap-removes: x holds rows [0, 1, 9, 3, 4, 2, 6, 7, 8, 5], y [0, 1, 5, 3, 4, 9, 6, 7, 8, 2].
    let (x, y) = (reorder(2, 5), reorder(5, 2));
    assert_eq!(x.world_hash_all(), y.world_hash_all());
    let found = x.locate_divergence(&y).unwrap().unwrap();
    assert!(
        matches!(
            found.kind,
            DivergenceKind::Entities {
                a_len: 10,
                b_len: 10
            }
        ),
        "{found}"
    );
    assert_eq!(found.chunk, Some(0));
    assert_eq!(found.row, Some(2));
    let ninth = x.world().archetypes()[found.archetype].chunk(0).entities()[2];
    assert_eq!(found.entity, Some(ninth));
    assert_eq!(
        y.world().archetypes()[found.archetype].chunk(0).entities()[5],
        ninth
    );
}

#[test]
fn an_unregistered_type_is_an_error_naming_it() {
    struct Forgotten;
    let mut r = Registry::with_workers(1);
    r.spawn((Forgotten,));
    let err = r.digest().unwrap_err();
    assert!(err.type_names[0].ends_with("Forgotten"));
    r.exclude_from_hash::<Forgotten>();
    let digest = r.digest().unwrap();
    let arch = digest.archetypes().iter().find(|a| a.len() == 1).unwrap();
    assert!(!arch.is_hashed(0) && arch.column(0, 0).is_none());
}

#[derive(StableHash)]
struct Padded {
    big: u64,
    small: u8,
}
#[derive(StableHash)]
struct Pair<T>(T, T);
#[derive(StableHash)]
struct Skips {
    kept: u32,
    #[stable_hash(skip)]
    _cache: u32,
}
#[derive(StableHash)]
#[allow(dead_code)] // only its `PLAIN_BYTES` is looked at
enum Mode {
    On,
}

#[test]
fn plain_bytes_is_no_for_padding_pointers_enums_and_skipped_fields() {
    fn plain<T: StableHash>() -> bool {
        T::PLAIN_BYTES.claimed()
    }
    // Compile-time: the answer is a constant.
    const _: () = assert!(!<Padded as StableHash>::PLAIN_BYTES.claimed());
    const _: () = assert!(<D as StableHash>::PLAIN_BYTES.claimed());
    assert!(!plain::<Padded>());
    assert!(!plain::<(u8, u32)>());
    assert!(!plain::<Pair<(u8, u16)>>());
    assert!(!plain::<Skips>());
    assert!(!plain::<Mode>());
    assert!(!plain::<Name>());
    assert!(!plain::<Option<u32>>());
    assert!(!plain::<freyr::Entity>());
    assert!(!plain::<&u32>());
    for yes in [
        plain::<A>(),
        plain::<B>(),
        plain::<C>(),
        plain::<D>(),
        plain::<Tag>(),
        plain::<(u32, u32)>(),
        plain::<[u16; 3]>(),
        plain::<Pair<u8>>(),
        plain::<Pair<[f64; 2]>>(),
        plain::<bool>(),
        plain::<char>(),
    ] {
        assert!(yes);
    }
    assert_eq!(A::PLAIN_BYTES.get(), cfg!(target_endian = "little"));
}

/// The column stream of a plain type, as the module documentation defines it: the values'
/// stable-hash bytes (for `A`, its four `u32`s little-endian), concatenated.
fn plain_column_by_the_spec(values: &[A]) -> u64 {
    let mut h = DigestHasher::new();
    for v in values {
        for x in v.0 {
            h.write(&x.to_le_bytes());
        }
    }
    h.finish()
}

/// The column stream of a non-plain type: per value, the FNV-1a 64 of its stable-hash bytes.
fn per_value_column_by_the_spec<T: StableHash>(values: &[T]) -> u64 {
    let mut h = DigestHasher::new();
    for v in values {
        let mut fnv = StableHasher::new();
        v.stable_hash(&mut fnv);
        h.write_u64(fnv.finish());
    }
    h.finish()
}

#[test]
fn the_digest_is_the_documented_streams() {
    let mut r = Registry::with_workers(1);
    register(&mut r);
    // Two chunks: a full one and the rest.
    let c = CHUNK_CAPACITY as u32;
    let rows = c + if cfg!(miri) { 18 } else { 188 };
    let ids = r.spawn_batch((0..rows).map(|i| (a(i), Name(format!("{i}")))));
    let digest: WorldDigest = r.digest().unwrap();
    let (arch, _, _) = r.world().entity_location(ids[0]).unwrap();
    let ad = &digest.archetypes()[arch.index()];
    let comps = ad.components();
    let (ka, kn) = (
        comps.iter().position(|n| n.ends_with("::A")).unwrap(),
        comps.iter().position(|n| n.ends_with("::Name")).unwrap(),
    );
    for (chunk, rows) in [(0usize, 0..c), (1, c..rows)] {
        let avals: Vec<A> = rows.clone().map(a).collect();
        let nvals: Vec<Name> = rows.clone().map(|i| Name(format!("{i}"))).collect();
        let want_a = if cfg!(target_endian = "little") {
            plain_column_by_the_spec(&avals)
        } else {
            per_value_column_by_the_spec(&avals)
        };
        assert_eq!(ad.column(chunk, ka), Some(want_a));
        assert_eq!(
            ad.column(chunk, kn),
            Some(per_value_column_by_the_spec(&nvals))
        );
        let mut h = DigestHasher::new();
        for i in rows.clone() {
            h.write_u64(ids[i as usize].to_bits());
        }
        assert_eq!(ad.entities(chunk), Some(h.finish()));
    }
    // The world value folds the archetype values.
    let mut h = DigestHasher::new();
    h.write_u64(digest.archetypes().len() as u64);
    for a in digest.archetypes() {
        h.write_u64(a.value());
    }
    assert_eq!(digest.value(), h.finish());
    // Digests travel: serialise, deserialise, compare.
    let json = serde_json::to_string(&digest).unwrap();
    let back: WorldDigest = serde_json::from_str(&json).unwrap();
    assert_eq!(back, digest);
}

#[test]
#[ignore = "timing: run in release, see the file's documentation"]
fn timing() {
    // 100k entities in one archetype of the four 16-byte components.
    let mut r = Registry::with_workers(1);
    register(&mut r);
    r.spawn_batch((0..100_000).map(|i| (a(i), b(i), c(i), d(i))));
    let mut best = f64::INFINITY;
    let mut times = Vec::new();
    for _ in 0..50 {
        let start = std::time::Instant::now();
        let digest = r.digest().unwrap();
        let t = start.elapsed().as_secs_f64() * 1e3;
        assert_ne!(digest.value(), 0);
        best = best.min(t);
        times.push(t);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "digest of 100k entities x 4 components (16 bytes): best {best:.3} ms, median {:.3} ms",
        times[times.len() / 2]
    );
}
