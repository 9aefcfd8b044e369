//! What the digest attack files share: the component types they compare and the registries
//! they build.

#![allow(dead_code)]

use freyr::{Entity, Registry, StableHash};

#[derive(StableHash, Clone, Copy, Debug, PartialEq)]
pub(crate) struct Hp(pub(crate) u32);
#[derive(StableHash, Clone, Copy, Debug, PartialEq)]
pub(crate) struct Pos(pub(crate) [f32; 2]);
/// A tag (no bytes).
#[derive(StableHash, Clone, Copy, Debug, PartialEq)]
pub(crate) struct Tag;
/// Not plain: hashed value by value.
#[derive(StableHash, Clone, Debug, PartialEq)]
pub(crate) struct Name(pub(crate) String);
/// Excluded from the hash on purpose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Cache(pub(crate) u64);

/// A registry with the test types registered (and `Cache` excluded).
pub(crate) fn registry(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_hashable::<Hp>();
    r.register_hashable::<Pos>();
    r.register_hashable::<Tag>();
    r.register_hashable::<Name>();
    r.exclude_from_hash::<Cache>();
    r
}

/// `n` entities with `Hp(i)`.
pub(crate) fn hp_world(n: u32) -> (Registry, Vec<Entity>) {
    let mut r = registry(1);
    let ids = r.spawn_batch((0..n).map(|i| (Hp(i),)));
    (r, ids)
}

/// The archetype index and chunk of `e` in `r`.
pub(crate) fn address(r: &Registry, e: Entity) -> (usize, usize, usize) {
    let (archetype, chunk, row) = r.world().entity_location(e).unwrap();
    (archetype.index(), chunk, row)
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}
