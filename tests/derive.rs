//! `#[derive(StableHash)]` on every shape, checked against the bytes a hand-written impl feeds.

use core::hash::Hasher;

use freyr::hash::StableHasher;
use freyr::{Entity, Registry, StableHash};

fn hash(v: &impl StableHash) -> u64 {
    let mut h = StableHasher::new();
    v.stable_hash(&mut h);
    h.finish()
}

/// What a hand-written impl would feed.
fn manual(feed: impl FnOnce(&mut StableHasher)) -> u64 {
    let mut h = StableHasher::new();
    feed(&mut h);
    h.finish()
}

#[derive(StableHash)]
struct Named {
    x: f32,
    y: f32,
    id: u64,
}

#[derive(StableHash)]
struct Tuple(i32, [u8; 3]);

#[derive(StableHash)]
struct Tag;

#[derive(StableHash)]
struct Braced {}

#[derive(StableHash)]
enum Shape {
    Empty,
    Dot(f32),
    Pair(f32, f32),
    Rect { w: f32, h: f32 },
}

#[derive(StableHash)]
enum Never {}

#[derive(StableHash)]
struct Generic<T, const N: usize> {
    items: [T; N],
    owner: Option<Entity>,
}

#[derive(StableHash)]
struct Borrowed<'a, T: ?Sized> {
    name: &'a T,
}

#[derive(StableHash)]
struct Cached {
    value: u32,
    #[stable_hash(skip)]
    #[allow(dead_code)] // read by nothing: the point of the test is that the hash ignores it
    memo: u64,
}

#[derive(StableHash)]
enum Partly {
    A(
        #[stable_hash(skip)]
        #[allow(dead_code)]
        u8,
        u16,
    ),
    B {
        #[stable_hash(skip)]
        #[allow(dead_code)]
        skipped: u8,
        kept: u16,
    },
}

/// The path a sub-crate of Freyr would use, which does not depend on the facade.
#[derive(StableHash)]
#[stable_hash(crate = "freyr_registry")]
struct OtherPath(u8);

#[test]
fn named_struct_hashes_its_fields_in_declaration_order() {
    let v = Named {
        x: 1.0,
        y: 2.0,
        id: 7,
    };
    let manual = manual(|h| {
        1.0f32.stable_hash(h);
        2.0f32.stable_hash(h);
        7u64.stable_hash(h);
    });
    assert_eq!(hash(&v), manual);
    let swapped = Named {
        x: 2.0,
        y: 1.0,
        id: 7,
    };
    assert_ne!(hash(&v), hash(&swapped));
    let negative_zero = Named {
        x: -0.0,
        y: 2.0,
        id: 7,
    };
    assert_ne!(
        hash(&Named {
            x: 0.0,
            y: 2.0,
            id: 7
        }),
        hash(&negative_zero),
        "floats hash by their bits"
    );
}

#[test]
fn tuple_struct_hashes_its_fields_in_order() {
    let manual = manual(|h| {
        (-3i32).stable_hash(h);
        [1u8, 2, 3].stable_hash(h);
    });
    assert_eq!(hash(&Tuple(-3, [1, 2, 3])), manual);
    assert_ne!(hash(&Tuple(-3, [1, 2, 3])), hash(&Tuple(-3, [3, 2, 1])));
}

#[test]
fn unit_and_empty_structs_hash_nothing() {
    assert_eq!(hash(&Tag), StableHasher::new().finish());
    assert_eq!(hash(&Braced {}), StableHasher::new().finish());
}

#[test]
fn enums_hash_the_variant_index_then_the_fields() {
    assert_eq!(hash(&Shape::Empty), hash(&0u32));
    assert_eq!(
        hash(&Shape::Dot(1.5)),
        manual(|h| {
            1u32.stable_hash(h);
            1.5f32.stable_hash(h);
        })
    );
    assert_eq!(
        hash(&Shape::Rect { w: 1.0, h: 2.0 }),
        manual(|h| {
            3u32.stable_hash(h);
            1.0f32.stable_hash(h);
            2.0f32.stable_hash(h);
        })
    );
    // The same field values under different variants differ.
    assert_ne!(
        hash(&Shape::Pair(1.0, 2.0)),
        hash(&Shape::Rect { w: 1.0, h: 2.0 })
    );
    let all = [
        hash(&Shape::Empty),
        hash(&Shape::Dot(0.0)),
        hash(&Shape::Pair(0.0, 0.0)),
        hash(&Shape::Rect { w: 0.0, h: 0.0 }),
    ];
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert_ne!(a, b);
        }
    }
    // An enum with no variants has no values; its impl exists and compiles.
    fn is_stable_hash<T: StableHash>() {}
    is_stable_hash::<Never>();
}

#[test]
fn generics_lifetimes_and_const_generics_get_bounds() {
    let a = Generic::<u16, 2> {
        items: [1, 2],
        owner: None,
    };
    assert_eq!(
        hash(&a),
        manual(|h| {
            [1u16, 2].stable_hash(h);
            None::<Entity>.stable_hash(h);
        })
    );
    let nested = Generic::<Shape, 1> {
        items: [Shape::Dot(1.0)],
        owner: None,
    };
    assert_ne!(
        hash(&nested),
        hash(&Generic::<Shape, 1> {
            items: [Shape::Dot(2.0)],
            owner: None
        })
    );
    // Tuples hash their elements in order; strings their length, then their bytes.
    assert_eq!(
        hash(&(1u8, Shape::Empty)),
        manual(|h| {
            1u8.stable_hash(h);
            0u32.stable_hash(h);
        })
    );
    assert_ne!(hash(&("ab", "c")), hash(&("a", "bc")));
    let text = String::from("ab");
    assert_eq!(
        hash(&Borrowed {
            name: text.as_str()
        }),
        hash(&"ab")
    );
    assert_ne!(
        hash(&Borrowed { name: "ab" }),
        hash(&Borrowed { name: "ba" })
    );
}

#[test]
fn skipped_fields_do_not_change_the_hash() {
    assert_eq!(
        hash(&Cached { value: 1, memo: 10 }),
        hash(&Cached { value: 1, memo: 99 })
    );
    assert_eq!(hash(&Cached { value: 1, memo: 10 }), hash(&1u32));
    assert_eq!(
        hash(&Partly::A(1, 5)),
        manual(|h| {
            0u32.stable_hash(h);
            5u16.stable_hash(h);
        })
    );
    assert_eq!(hash(&Partly::A(1, 5)), hash(&Partly::A(2, 5)));
    assert_eq!(
        hash(&Partly::B {
            skipped: 1,
            kept: 5
        }),
        manual(|h| {
            1u32.stable_hash(h);
            5u16.stable_hash(h);
        })
    );
}

#[test]
fn the_crate_attribute_names_another_path() {
    assert_eq!(hash(&OtherPath(9)), hash(&9u8));
}

/// Pinned values: the derive's output may never change, since saved hashes (replays, logs,
/// a test's expectation in a dependent crate) are compared across builds and versions.
#[test]
fn derived_hashes_are_pinned_across_builds() {
    assert_eq!(
        hash(&Named {
            x: 1.0,
            y: -2.5,
            id: 42
        }),
        // FNV-1a 64 of the bytes 00 00 80 3f | 00 00 20 c0 | 2a 00 00 00 00 00 00 00.
        0x4dba_aa42_58bc_e212
    );
    // FNV-1a 64 of 03 00 00 00 | 00 00 40 40 | 00 00 80 40.
    assert_eq!(hash(&Shape::Rect { w: 3.0, h: 4.0 }), 0xf6a6_9d1f_a621_4e86);
}

#[test]
fn derived_components_join_the_world_hash_identically_for_every_worker_count() {
    fn run(workers: usize) -> u64 {
        let mut registry = Registry::with_workers(workers);
        registry.spawn_batch((0..3000u32).map(|i| {
            let shape = match i % 3 {
                0 => Shape::Empty,
                1 => Shape::Dot(i as f32),
                _ => Shape::Rect { w: 1.0, h: 2.0 },
            };
            (Tuple(i as i32, [0; 3]), shape)
        }));
        registry
            .query::<(&mut Tuple, &Shape)>()
            .each_async(|_, (t, s)| {
                if let Shape::Dot(d) = s {
                    t.0 += *d as i32;
                }
            });
        registry.execute_tasks();
        registry.world_hash::<(Tuple, Shape, Tag)>()
    }
    let one = run(1);
    for workers in [2, 3, 8, 16, 64] {
        assert_eq!(run(workers), one, "{workers} workers");
    }
    // A changed field shows in the hash.
    let mut registry = Registry::with_workers(1);
    let e = registry.spawn((Tuple(0, [0; 3]), Shape::Empty));
    let before = registry.world_hash::<(Tuple, Shape, Tag)>();
    *registry.get_mut::<Shape>(e).unwrap() = Shape::Dot(0.0);
    assert_ne!(registry.world_hash::<(Tuple, Shape, Tag)>(), before);
    registry.insert(e, (Tag,)).unwrap();
    assert_ne!(registry.world_hash::<(Tuple, Shape, Tag)>(), before);
}
