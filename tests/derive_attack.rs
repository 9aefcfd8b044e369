//! Hostile uses of `#[derive(StableHash)]`: odd generics, odd names, packed and `repr` types,
//! explicit discriminants and float edge cases, each checked against the FNV-1a 64 of the bytes
//! the documented rules say are fed.
#![forbid(unsafe_code)] // the derive must work in a crate that forbids `unsafe`

use core::hash::Hasher;
use core::marker::PhantomData;

use freyr::hash::StableHasher;

/// Hashes through the trait's full path: the test crate never imports `StableHash`.
fn hash<T: freyr::StableHash + ?Sized>(v: &T) -> u64 {
    let mut h = StableHasher::new();
    v.stable_hash(&mut h);
    h.finish()
}

/// FNV-1a 64, written out here so the expected values do not come from the code under test.
fn fnv(bytes: &[u8]) -> u64 {
    let mut state = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        state ^= u64::from(b);
        state = state.wrapping_mul(0x0000_0100_0000_01b3);
    }
    state
}

/// Concatenates byte chunks.
fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn plain<T: freyr::StableHash>() -> bool {
    T::PLAIN_BYTES.claimed()
}

// ---- generics ---------------------------------------------------------------------------

#[derive(freyr::StableHash)]
struct Bounded<T: Copy + Default, U>
where
    U: Clone,
{
    t: T,
    u: U,
}

#[derive(freyr::StableHash)]
struct WhereNoComma<T>
where
    T: Copy,
{
    t: T,
}

#[derive(freyr::StableHash)]
struct Defaults<T = u16, const N: usize = 2> {
    items: [T; N],
}

#[derive(freyr::StableHash)]
struct Lifetimes<'a, 'b: 'a, T: ?Sized + 'b> {
    first: &'a str,
    second: &'b T,
}

#[derive(freyr::StableHash)]
struct Nested<T>(Option<Vec<Box<T>>>, (T, u8));

/// A field typed by an associated type needs the user's own where clause.
trait UnitKind {
    type Repr;
}
#[derive(freyr::StableHash)]
struct Meters;
impl UnitKind for Meters {
    type Repr = u32;
}
#[derive(freyr::StableHash)]
struct Assoc<K: UnitKind>
where
    K::Repr: freyr::StableHash,
{
    value: K::Repr,
    unit: K,
}

/// The marker is skipped; `M` still gets the documented `M: StableHash` bound.
#[derive(freyr::StableHash)]
struct Handle<M> {
    id: u32,
    #[stable_hash(skip)]
    _marker: PhantomData<M>,
}

#[test]
fn generics_with_bounds_where_clauses_and_defaults() {
    assert_eq!(hash(&Bounded { t: 1u8, u: 2u16 }), fnv(&[1, 2, 0]));
    assert_eq!(hash(&WhereNoComma { t: 7i16 }), fnv(&[7, 0]));
    let d: Defaults = Defaults { items: [1, 2] };
    assert_eq!(hash(&d), fnv(&[1, 0, 2, 0]));
    assert_eq!(
        hash(&Defaults::<u8, 3> { items: [1, 2, 3] }),
        fnv(&[1, 2, 3])
    );
    // Plain when `T` is: a generic struct's answer follows its arguments.
    assert!(plain::<Defaults>());
    assert!(!plain::<Defaults<Option<u8>, 1>>());
    assert!(!plain::<Defaults<freyr::Entity, 1>>());
    let s = String::from("xy");
    let v = Lifetimes {
        first: "a",
        second: s.as_str(),
    };
    // Strings: the length as u64, then the bytes.
    assert_eq!(
        hash(&v),
        fnv(&cat(&[
            &1u64.to_le_bytes(),
            b"a",
            &2u64.to_le_bytes(),
            b"xy"
        ]))
    );
    assert!(
        !plain::<Lifetimes<'_, '_, u32>>(),
        "references are pointers, never plain"
    );
    let n = Nested(Some(vec![Box::new(3u8)]), (4u8, 5));
    // Some = 1u8, the length as u64, the element; then the tuple.
    assert_eq!(
        hash(&n),
        fnv(&cat(&[&[1], &1u64.to_le_bytes(), &[3, 4, 5]]))
    );
    assert_eq!(hash(&Nested::<u8>(None, (4, 5))), fnv(&[0, 4, 5]));
    let a = Assoc::<Meters> {
        value: 6,
        unit: Meters,
    };
    assert_eq!(hash(&a), fnv(&[6, 0, 0, 0]));
    assert!(plain::<Assoc<Meters>>(), "a unit struct adds no bytes");
    assert_eq!(
        hash(&Handle::<u8> {
            id: 5,
            _marker: PhantomData
        }),
        fnv(&5u32.to_le_bytes())
    );
    assert!(
        !plain::<Handle<u8>>(),
        "a skipped field makes a struct not plain"
    );
}

// ---- names ------------------------------------------------------------------------------

#[allow(non_camel_case_types, dead_code)]
struct __hasher_type;

/// Types named like what the derive expands to, in scope where it expands.
#[allow(dead_code)]
struct StableHasherLookalike;
#[allow(non_camel_case_types, dead_code)]
type PlainBytes = u8;
#[allow(dead_code)]
mod core_shadow {}

#[derive(freyr::StableHash)]
#[allow(non_snake_case)]
struct InternalNames {
    h: u8,
    hasher: u8,
    self_: u8,
    __state: u8,
    __hasher: u8,
    __f0: u8,
    __f1: u8,
    Self_: u8,
}

#[derive(freyr::StableHash)]
#[allow(non_snake_case, non_camel_case_types)]
enum InternalEnum {
    V { __f1: u8, __f0: u16, __hasher: u8 },
    W(u8, u16),
    r#match { r#type: u8 },
}

#[derive(freyr::StableHash)]
struct Raw {
    r#type: u8,
    r#fn: u16,
    r#self_: u8,
}

#[test]
fn fields_named_like_the_macros_internals_are_hashed_in_order() {
    let v = InternalNames {
        h: 1,
        hasher: 2,
        self_: 3,
        __state: 4,
        __hasher: 5,
        __f0: 6,
        __f1: 7,
        Self_: 8,
    };
    assert_eq!(hash(&v), fnv(&[1, 2, 3, 4, 5, 6, 7, 8]));
    assert!(plain::<InternalNames>());
    // `__f1` is declared first: it is fed first, whatever the bindings are called.
    let e = InternalEnum::V {
        __f1: 1,
        __f0: 0x0302,
        __hasher: 4,
    };
    assert_eq!(hash(&e), fnv(&[0, 0, 0, 0, 1, 2, 3, 4]));
    assert_eq!(hash(&InternalEnum::W(9, 1)), fnv(&[1, 0, 0, 0, 9, 1, 0]));
    assert_eq!(
        hash(&InternalEnum::r#match { r#type: 7 }),
        fnv(&[2, 0, 0, 0, 7])
    );
    let r = Raw {
        r#type: 1,
        r#fn: 2,
        r#self_: 3,
    };
    assert_eq!(hash(&r), fnv(&[1, 2, 0, 3]));
}

#[test]
fn a_type_inside_a_function_without_imports() {
    #[derive(freyr::StableHash)]
    struct Local(u8);
    #[derive(freyr::StableHash)]
    enum LocalEnum {
        #[allow(dead_code)]
        A,
        B(Local),
    }
    assert_eq!(hash(&LocalEnum::B(Local(3))), fnv(&[1, 0, 0, 0, 3]));
}

// ---- repr and layout --------------------------------------------------------------------

#[derive(freyr::StableHash, Clone, Copy)]
#[repr(C, packed)]
struct Packed {
    a: u8,
    b: u32,
    c: u16,
}

#[derive(freyr::StableHash, Clone, Copy)]
#[repr(Rust, packed(2))]
struct Packed2(u8, u64);

#[derive(freyr::StableHash)]
#[repr(C)]
struct Padded {
    a: u8,
    b: u32,
}

#[derive(freyr::StableHash)]
#[repr(C)]
struct Reordered {
    b: u16,
    a: u16,
}

#[test]
fn packed_structs_hash_their_fields_and_are_plain() {
    let p = Packed {
        a: 1,
        b: 0x0504_0302,
        c: 0x0706,
    };
    assert_eq!(hash(&p), fnv(&[1, 2, 3, 4, 5, 6, 7]));
    assert!(plain::<Packed>());
    let q = Packed2(1, 2);
    assert_eq!(hash(&q), fnv(&cat(&[&[1], &2u64.to_le_bytes()])));
    assert!(
        !plain::<Packed2>(),
        "packed(2) leaves a padding byte after the u8"
    );
    assert!(!plain::<Padded>());
    assert!(plain::<Reordered>());
    assert_eq!(hash(&Reordered { b: 1, a: 2 }), fnv(&[1, 0, 2, 0]));
}

#[test]
fn a_packed_component_digests_and_world_hashes_by_value() {
    let build = |workers: usize, bump: u32| {
        let mut registry = freyr::Registry::with_workers(workers);
        registry.register_hashable::<Packed>();
        registry.spawn_batch((0..1500u32).map(|i| {
            (Packed {
                a: i as u8,
                b: i,
                c: 7,
            },)
        }));
        registry.spawn((Packed {
            a: 0,
            b: bump,
            c: 0,
        },));
        registry
    };
    let (one, four) = (build(1, 0), build(4, 0));
    assert_eq!(one.digest().unwrap(), four.digest().unwrap());
    assert_ne!(one.digest().unwrap(), build(1, 1).digest().unwrap());
    assert_eq!(
        one.world_hash::<(Packed,)>(),
        four.world_hash::<(Packed,)>()
    );
    assert_ne!(
        one.world_hash::<(Packed,)>(),
        build(4, 1).world_hash::<(Packed,)>()
    );
}

// ---- enums ------------------------------------------------------------------------------

#[derive(freyr::StableHash)]
#[allow(dead_code)]
enum Explicit {
    Ten = 10,
    Five = 5,
    Big = 1_000,
}

#[derive(freyr::StableHash, Clone, Copy)]
#[repr(u8)]
#[allow(dead_code)]
enum Small {
    A = 200,
    B = 3,
}

#[derive(freyr::StableHash)]
#[repr(u8)]
enum ReprData {
    Unit = 7,
    Tuple(u16) = 2,
    Named { x: i8 } = 9,
}

#[derive(freyr::StableHash)]
enum Shapes<T> {
    Unit,
    Empty(),
    Braced {},
    One(T),
    Two(T, Small),
    Named {
        first: T,
        then: Option<Box<Shapes<T>>>,
    },
}

#[derive(freyr::StableHash)]
enum Empty {}

#[derive(freyr::StableHash)]
enum EmptyGeneric<T> {
    #[allow(dead_code)]
    Only(T, #[stable_hash(skip)] PhantomData<T>),
}

#[test]
fn explicit_discriminants_and_repr_are_ignored_the_index_is_hashed() {
    // Documented: the variant's position as a u32, never its discriminant.
    assert_eq!(hash(&Explicit::Ten), fnv(&0u32.to_le_bytes()));
    assert_eq!(hash(&Explicit::Five), fnv(&1u32.to_le_bytes()));
    assert_eq!(hash(&Explicit::Big), fnv(&2u32.to_le_bytes()));
    assert_eq!(hash(&Small::A), fnv(&[0, 0, 0, 0]));
    assert_eq!(hash(&Small::B), fnv(&[1, 0, 0, 0]));
    assert!(
        !plain::<Small>(),
        "an enum is never plain: its memory is its discriminant"
    );
    assert_eq!(hash(&ReprData::Unit), fnv(&[0, 0, 0, 0]));
    assert_eq!(hash(&ReprData::Tuple(0x0201)), fnv(&[1, 0, 0, 0, 1, 2]));
    assert_eq!(hash(&ReprData::Named { x: -1 }), fnv(&[2, 0, 0, 0, 0xff]));
    assert!(!plain::<ReprData>());
}

#[test]
fn every_variant_shape_feeds_its_index_then_its_fields() {
    type S = Shapes<u8>;
    // The three field-less shapes feed only the index.
    assert_eq!(hash(&S::Unit), fnv(&[0, 0, 0, 0]));
    assert_eq!(hash(&S::Empty()), fnv(&[1, 0, 0, 0]));
    assert_eq!(hash(&S::Braced {}), fnv(&[2, 0, 0, 0]));
    assert_eq!(hash(&S::One(9)), fnv(&[3, 0, 0, 0, 9]));
    assert_eq!(
        hash(&S::Two(9, Small::B)),
        fnv(&[4, 0, 0, 0, 9, 1, 0, 0, 0])
    );
    let inner = S::One(1);
    let v = S::Named {
        first: 5,
        then: Some(Box::new(inner)),
    };
    assert_eq!(hash(&v), fnv(&[5, 0, 0, 0, 5, 1, 3, 0, 0, 0, 1]));
    assert_eq!(
        hash(&S::Named {
            first: 5,
            then: None
        }),
        fnv(&[5, 0, 0, 0, 5, 0])
    );
    assert!(!plain::<S>());
    // An empty enum has an impl (no value to call it on) and is not plain.
    assert!(!plain::<Empty>());
    assert!(!plain::<EmptyGeneric<u8>>());
}

/// The same variants in another order: a different type, and documented to hash differently.
#[derive(freyr::StableHash)]
enum ShapesReordered<T> {
    One(T),
    Unit,
}

#[test]
fn variant_order_changes_the_hash_variant_names_do_not() {
    #[derive(freyr::StableHash)]
    enum Renamed<T> {
        #[allow(dead_code)]
        Nothing,
        #[allow(dead_code)]
        Nix(),
        #[allow(dead_code)]
        Zip {},
        Single(T),
    }
    // Index 3 with one field in both: names are not fed.
    assert_eq!(hash(&Renamed::Single(9u8)), hash(&Shapes::One(9u8)));
    assert_ne!(hash(&ShapesReordered::One(9u8)), hash(&Shapes::One(9u8)));
    assert_ne!(
        hash(&ShapesReordered::<u8>::Unit),
        hash(&Shapes::<u8>::Unit)
    );
    assert_eq!(hash(&ShapesReordered::<u8>::Unit), hash(&1u32));
}

// ---- what feeds the hash ----------------------------------------------------------------

#[derive(freyr::StableHash)]
struct Xy {
    x: u32,
    y: u32,
}
#[derive(freyr::StableHash)]
struct Pq {
    p: u32,
    q: u32,
}
#[derive(freyr::StableHash)]
struct Yx {
    y: u32,
    x: u32,
}
#[derive(freyr::StableHash)]
struct TupleXy(u32, u32);
#[derive(freyr::StableHash)]
struct Unit;
#[derive(freyr::StableHash)]
struct UnitTuple();

#[test]
fn names_are_not_hashed_order_is() {
    let xy = hash(&Xy { x: 1, y: 2 });
    assert_eq!(xy, fnv(&[1, 0, 0, 0, 2, 0, 0, 0]));
    // Only values in declaration order are fed: other names, the same hash.
    assert_eq!(xy, hash(&Pq { p: 1, q: 2 }));
    assert_eq!(xy, hash(&TupleXy(1, 2)));
    assert_eq!(xy, hash(&(1u32, 2u32)));
    // The same names in another order, initialised with the same names: fed in declaration order.
    assert_ne!(xy, hash(&Yx { x: 1, y: 2 }));
    assert_eq!(xy, hash(&Yx { y: 1, x: 2 }));
    assert_eq!(hash(&Unit), fnv(&[]));
    assert_eq!(hash(&UnitTuple()), fnv(&[]));
    assert!(plain::<Unit>() && plain::<UnitTuple>() && plain::<Xy>());
}

#[derive(freyr::StableHash)]
struct Floats {
    a: f32,
    b: f64,
}

#[test]
fn floats_hash_by_their_bits() {
    let h = |a: f32, b: f64| hash(&Floats { a, b });
    let bytes = |a: f32, b: f64| {
        fnv(&cat(&[
            &a.to_bits().to_le_bytes(),
            &b.to_bits().to_le_bytes(),
        ]))
    };
    for (a, b) in [
        (0.0, 0.0),
        (-0.0, -0.0),
        (f32::NAN, f64::NAN),
        (f32::INFINITY, f64::MIN_POSITIVE),
    ] {
        assert_eq!(h(a, b), bytes(a, b));
    }
    assert_ne!(h(0.0, 0.0), h(-0.0, 0.0));
    assert_ne!(h(0.0, 0.0), h(0.0, -0.0));
    // Every NaN equals no float, but one NaN's bits hash the same every time...
    assert_eq!(h(f32::NAN, 1.0), h(f32::NAN, 1.0));
    // ...and NaNs with other bits (sign, payload) hash differently: no canonicalisation.
    let other_nan = f32::from_bits(0x7fc0_0001);
    assert!(other_nan.is_nan());
    assert_ne!(h(f32::NAN, 1.0), h(other_nan, 1.0));
    assert_ne!(h(f32::NAN, 1.0), h(-f32::NAN, 1.0));
    assert_eq!(
        h(1.5, -2.0),
        fnv(&cat(&[
            &1.5f32.to_bits().to_le_bytes(),
            &(-2.0f64).to_bits().to_le_bytes()
        ]))
    );
    // f32 then f64: 4 bytes of padding in a `repr(Rust)` struct, so never plain.
    assert!(!plain::<Floats>());
}

/// Pinned (FNV-1a 64 computed outside Rust): these numbers may never change.
#[test]
fn pinned_values() {
    assert_eq!(hash(&Xy { x: 1, y: 2 }), 0xc9c2_8939_c996_68c6);
    assert_eq!(hash(&Shapes::<u8>::One(9)), 0xf16b_3c03_a27b_62fd);
    let p = Packed {
        a: 1,
        b: 0x0504_0302,
        c: 0x0706,
    };
    assert_eq!(hash(&p), 0xb366_33e7_03a8_0ad7);
}

// ---- unsized structs --------------------------------------------------------------------

#[derive(freyr::StableHash)]
struct Tail<T: ?Sized> {
    n: u8,
    rest: T,
}

#[derive(freyr::StableHash)]
struct WhereTail<T>
where
    T: ?Sized,
{
    n: u8,
    rest: T,
}

#[derive(freyr::StableHash)]
struct SliceTail {
    n: u8,
    rest: [u16],
}

#[derive(freyr::StableHash)]
struct StrTail(u8, str);

#[test]
fn unsized_structs_hash_their_fields_and_are_not_plain() {
    let boxed: Box<Tail<[u8]>> = Box::new(Tail { n: 1, rest: [2, 3] });
    // A slice feeds its length as u64, then its elements.
    assert_eq!(
        hash(&*boxed),
        fnv(&cat(&[&[1], &2u64.to_le_bytes(), &[2, 3]]))
    );
    assert_eq!(
        hash(&boxed),
        hash(&*boxed),
        "a Box hashes what it points to"
    );
    let sized = Tail { n: 1, rest: 5u8 };
    assert_eq!(hash(&sized), fnv(&[1, 5]));
    assert!(
        !plain::<Tail<u8>>(),
        "a maybe-unsized tail is never plain, even when sized"
    );
    assert!(!plain::<WhereTail<u8>>());
    let w: &WhereTail<[u8]> = &WhereTail { n: 4, rest: [] };
    assert_eq!(hash(w), fnv(&cat(&[&[4], &0u64.to_le_bytes()])));
    fn is_stable_hash<T: freyr::StableHash + ?Sized>() {}
    is_stable_hash::<SliceTail>();
    is_stable_hash::<StrTail>();
}
