//! Whole-world hashing for determinism checks: [`StableHasher`], [`StableHash`],
//! [`HashComponents`] and `Registry::world_hash`; and [`mix`],
//! the hash deterministic randomness is drawn from.
//!
//! The hash covers every live entity (sorted by id, so storage layout does not matter) and, for
//! each, the presence and value of every component type named. Floats hash by their bits
//! (`to_bits`), so `-0.0` and `0.0` differ and the hash is bit-exact. The hasher is FNV-1a 64,
//! fixed forever, so hashes can be compared across runs, worker counts and builds.

use freyr_core::{Component, Entity, World};

use freyr_query::access::{Access, AccessKind, TypeAccess};
use freyr_query::tuples::tuples_up_to_12;

mod column;
mod hasher;
mod plain;

pub(crate) use self::column::ColumnFns;
pub use self::hasher::DigestHasher;
pub use self::plain::PlainBytes;

/// SplitMix64's finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", 2014): a bijection of `u64` in which every output bit depends on every input
/// bit. It is the deterministic randomness of a simulation: fold what a random choice is about
/// (the entity's bits, the tick, a per-purpose salt, each multiplied by its own odd constant)
/// into one word and `mix` it, instead of drawing from a shared generator, so the outcome does
/// not depend on which worker evaluates it or in which order. Fixed forever: the same input
/// gives the same output on every platform, build and worker count.
///
/// Adding the golden-ratio increment `0x9E37_79B9_7F4A_7C15` before mixing gives SplitMix64's
/// generator step.
///
/// # Examples
///
/// ```
/// use freyr::{Entity, mix};
///
/// assert_eq!(mix(0), 0);
/// // SplitMix64 seeded with 0: its first output.
/// const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
/// assert_eq!(mix(GOLDEN), 0xE220_A839_7B1D_CDAF);
///
/// // Per-entity randomness keyed by (entity, tick, salt): a pure function of the three.
/// let roll = |e: Entity, tick: u64, salt: u64| {
///     mix(e.to_bits() ^ tick.rotate_left(40) ^ salt.wrapping_mul(GOLDEN))
/// };
/// let mut world = freyr::World::new();
/// let e = world.spawn((1u8,));
/// assert_eq!(roll(e, 7, 1), roll(e, 7, 1));
/// assert_ne!(roll(e, 7, 1), roll(e, 8, 1));
/// ```
#[must_use]
#[inline]
pub const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a, 64-bit: a fixed, portable hash for comparing worlds.
///
/// # Examples
///
/// ```
/// use core::hash::Hasher;
/// use freyr::hash::StableHasher;
///
/// let mut a = StableHasher::new();
/// a.write(b"freyr");
/// let mut b = StableHasher::new();
/// b.write(b"freyr");
/// assert_eq!(a.finish(), b.finish());
/// assert_ne!(a.finish(), StableHasher::new().finish());
/// ```
#[derive(Clone, Debug)]
pub struct StableHasher {
    state: u64,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

impl StableHasher {
    /// A hasher in its initial state.
    pub fn new() -> Self {
        StableHasher { state: FNV_OFFSET }
    }
}

impl Default for StableHasher {
    fn default() -> Self {
        StableHasher::new()
    }
}

impl core::hash::Hasher for StableHasher {
    fn finish(&self) -> u64 {
        self.state
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.state ^= u64::from(b);
            self.state = self.state.wrapping_mul(FNV_PRIME);
        }
    }
}

/// A value that hashes the same on every platform and run: integers as little-endian bytes,
/// floats by their bits.
///
/// # Examples
///
/// ```
/// use core::hash::Hasher;
/// use freyr::StableHash;
/// use freyr::hash::StableHasher;
///
/// struct Pos {
///     x: f32,
///     y: f32,
/// }
/// impl StableHash for Pos {
///     fn stable_hash(&self, h: &mut StableHasher) {
///         self.x.stable_hash(h);
///         self.y.stable_hash(h);
///     }
/// }
///
/// let mut a = StableHasher::new();
/// Pos { x: 0.0, y: 1.0 }.stable_hash(&mut a);
/// let mut b = StableHasher::new();
/// Pos { x: -0.0, y: 1.0 }.stable_hash(&mut b);
/// assert_ne!(a.finish(), b.finish()); // bit-exact
/// ```
pub trait StableHash {
    /// Whether the memory of a value is exactly the bytes [`stable_hash`](Self::stable_hash)
    /// feeds, so that a [`WorldDigest`](crate::WorldDigest) may hash a column of them as raw
    /// memory. Default: no. Saying yes takes `unsafe` ([`PlainBytes::new_unchecked`]);
    /// `#[derive(StableHash)]` says yes, after compile-time checks, for a struct of plain
    /// fields without padding. It never changes `stable_hash` or the world hash.
    const PLAIN_BYTES: PlainBytes<Self> = PlainBytes::NO;

    /// Feeds `self` into `h`.
    fn stable_hash(&self, h: &mut StableHasher);
}

/// `PLAIN_BYTES` for a type whose memory is its little-endian bytes (the integers, floats,
/// `bool`, `char`).
macro_rules! plain_bytes_yes {
    () => {
        // SAFETY: the type is a primitive number, `bool` or `char`: every byte is initialised, it
        // holds no pointer, and its memory on a little-endian target is its `to_le_bytes` (of
        // `to_bits`, or of the `u8` / `u32` it is hashed as), which is what `stable_hash` feeds.
        const PLAIN_BYTES: PlainBytes<Self> = unsafe { PlainBytes::new_unchecked(true) };
    };
}

macro_rules! impl_stable_hash_int {
    ($($t:ty),*) => {$(
        impl StableHash for $t {
            plain_bytes_yes!();
            fn stable_hash(&self, h: &mut StableHasher) {
                core::hash::Hasher::write(h, &self.to_le_bytes());
            }
        }
    )*};
}

impl_stable_hash_int!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128);

impl StableHash for usize {
    // SAFETY: where `usize` is 8 bytes its memory on a little-endian target is the `u64`'s
    // little-endian bytes `stable_hash` feeds; elsewhere the answer is no.
    const PLAIN_BYTES: PlainBytes<Self> =
        unsafe { PlainBytes::new_unchecked(size_of::<usize>() == 8) };
    fn stable_hash(&self, h: &mut StableHasher) {
        (*self as u64).stable_hash(h);
    }
}

impl StableHash for isize {
    // SAFETY: as for `usize`: 8 bytes, two's complement, hashed as the `i64`'s bytes.
    const PLAIN_BYTES: PlainBytes<Self> =
        unsafe { PlainBytes::new_unchecked(size_of::<isize>() == 8) };
    fn stable_hash(&self, h: &mut StableHasher) {
        (*self as i64).stable_hash(h);
    }
}

impl StableHash for bool {
    plain_bytes_yes!();
    fn stable_hash(&self, h: &mut StableHasher) {
        u8::from(*self).stable_hash(h);
    }
}

impl StableHash for char {
    plain_bytes_yes!();
    fn stable_hash(&self, h: &mut StableHasher) {
        u32::from(*self).stable_hash(h);
    }
}

impl StableHash for f32 {
    plain_bytes_yes!();
    fn stable_hash(&self, h: &mut StableHasher) {
        self.to_bits().stable_hash(h);
    }
}

impl StableHash for f64 {
    plain_bytes_yes!();
    fn stable_hash(&self, h: &mut StableHasher) {
        self.to_bits().stable_hash(h);
    }
}

impl StableHash for Entity {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.to_bits().stable_hash(h);
    }
}

/// The parent's id, as the registry's hierarchy methods keep it.
impl StableHash for freyr_core::ChildOf {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.parent().stable_hash(h);
    }
}

/// The children's ids, in order (the list's length first, as for every slice).
impl StableHash for freyr_core::Children {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.as_slice().stable_hash(h);
    }
}

impl StableHash for freyr_core::Disabled {
    // SAFETY: `Disabled` has no bytes and feeds none.
    const PLAIN_BYTES: PlainBytes<Self> = unsafe { PlainBytes::new_unchecked(true) };
    fn stable_hash(&self, _h: &mut StableHasher) {}
}

impl StableHash for () {
    // SAFETY: `()` has no bytes and feeds none.
    const PLAIN_BYTES: PlainBytes<Self> = unsafe { PlainBytes::new_unchecked(true) };
    fn stable_hash(&self, _h: &mut StableHasher) {}
}

impl<T: StableHash> StableHash for Option<T> {
    fn stable_hash(&self, h: &mut StableHasher) {
        match self {
            None => 0u8.stable_hash(h),
            Some(v) => {
                1u8.stable_hash(h);
                v.stable_hash(h);
            }
        }
    }
}

impl<T: StableHash, const N: usize> StableHash for [T; N] {
    // SAFETY: an array is its `N` elements back to back with no padding between them, and
    // `stable_hash` feeds them in order; so it is plain exactly when `T` is.
    const PLAIN_BYTES: PlainBytes<Self> =
        unsafe { PlainBytes::new_unchecked(T::PLAIN_BYTES.claimed()) };
    fn stable_hash(&self, h: &mut StableHasher) {
        for v in self {
            v.stable_hash(h);
        }
    }
}

impl<T: StableHash> StableHash for [T] {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.len().stable_hash(h);
        for v in self {
            v.stable_hash(h);
        }
    }
}

impl<T: StableHash> StableHash for Vec<T> {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.as_slice().stable_hash(h);
    }
}

impl StableHash for str {
    /// The length, then the UTF-8 bytes, so `("ab", "c")` and `("a", "bc")` differ.
    fn stable_hash(&self, h: &mut StableHasher) {
        self.len().stable_hash(h);
        core::hash::Hasher::write(h, self.as_bytes());
    }
}

impl StableHash for String {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.as_str().stable_hash(h);
    }
}

impl<T: StableHash + ?Sized> StableHash for Box<T> {
    fn stable_hash(&self, h: &mut StableHasher) {
        (**self).stable_hash(h);
    }
}

macro_rules! impl_stable_hash_tuple {
    ($($name:ident $index:tt),+) => {
        impl<$($name: StableHash),+> StableHash for ($($name,)+) {
            // SAFETY: yes only when every element is plain and the elements lie in index order
            // with no padding before, between or after them (checked on the layout), which is
            // the order `stable_hash` feeds them in.
            const PLAIN_BYTES: PlainBytes<Self> = unsafe {
                let mut end = 0;
                let mut plain = true;
                $(
                    plain = plain
                        && $name::PLAIN_BYTES.claimed()
                        && core::mem::offset_of!(Self, $index) == end;
                    end += size_of::<$name>();
                )+
                PlainBytes::new_unchecked(plain && end == size_of::<Self>())
            };
            fn stable_hash(&self, h: &mut StableHasher) {
                $(self.$index.stable_hash(h);)+
            }
        }
    };
}

impl_stable_hash_tuple!(A 0);
impl_stable_hash_tuple!(A 0, B 1);
impl_stable_hash_tuple!(A 0, B 1, C 2);
impl_stable_hash_tuple!(A 0, B 1, C 2, D 3);

/// The component types a world hash covers: a tuple of up to 12 `Component + StableHash` types.
///
/// Sealed: users do not implement it (it is public so that bounds can name it). The registry
/// resolves [`access`](HashComponents::access) before waiting for in-flight work, so an
/// implementation must only resolve ids there, never read a component value; the tuples below
/// keep that rule.
pub trait HashComponents: sealed::Sealed + 'static {
    /// Records the types read.
    fn type_access(out: &mut TypeAccess);
    /// Records the resolved component ids read.
    fn access(world: &World, access: &mut Access);
    /// Hashes presence and value of each type for `entity`.
    fn hash_entity(world: &World, entity: Entity, h: &mut StableHasher);
}

mod sealed {
    /// Keeps [`HashComponents`](super::HashComponents) to the tuples implemented here.
    #[allow(
        unnameable_types,
        reason = "sealed on purpose: other crates use the trait, only this crate implements it"
    )]
    pub trait Sealed {}
}

macro_rules! impl_hash_components {
    ($($name:ident $idx:tt),*) => {
        impl<$($name: Component + StableHash),*> sealed::Sealed for ($($name,)*) {}
        impl<$($name: Component + StableHash),*> HashComponents for ($($name,)*) {
            #[allow(unused_variables)]
            fn type_access(out: &mut TypeAccess) {
                $(out.add::<$name>(AccessKind::Read);)*
            }
            #[allow(unused_variables)]
            fn access(world: &World, access: &mut Access) {
                $(if let Some(id) = world.component_id::<$name>() {
                    access.add_read(id);
                })*
            }
            #[allow(unused_variables)]
            fn hash_entity(world: &World, entity: Entity, h: &mut StableHasher) {
                $(world.get::<$name>(entity).ok().stable_hash(h);)*
            }
        }
    };
}

tuples_up_to_12!(impl_hash_components);

impl<T: StableHash + ?Sized> StableHash for &T {
    fn stable_hash(&self, h: &mut StableHasher) {
        (**self).stable_hash(h);
    }
}

/// Hashes `world`: entity count, then every live entity in id order with its components `C`.
pub fn hash_world<C: HashComponents>(world: &World) -> u64 {
    hash_world_with(world, C::hash_entity)
}

/// Hashes `world`: entity count, then every live entity in id order, each followed by what
/// `hash_entity` feeds for it.
pub fn hash_world_with(
    world: &World,
    mut hash_entity: impl FnMut(&World, Entity, &mut StableHasher),
) -> u64 {
    let mut entities: Vec<Entity> = world
        .archetypes()
        .iter()
        .flat_map(|a| a.chunks())
        .flat_map(|c| c.entities().iter().copied())
        .collect();
    entities.sort_unstable_by_key(|e| (e.index(), e.generation()));
    let mut h = StableHasher::new();
    entities.len().stable_hash(&mut h);
    for e in entities {
        e.stable_hash(&mut h);
        hash_entity(world, e, &mut h);
    }
    core::hash::Hasher::finish(&h)
}
