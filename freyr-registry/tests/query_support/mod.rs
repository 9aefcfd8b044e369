//! The helpers `query_attack.rs` and `query_attack_more.rs` share.

#![allow(dead_code)]

use freyr::storage::CHUNK_CAPACITY;
use freyr::{Registry, StableHash};

/// Rows per chunk (512; 64 under Miri).
pub(crate) const C: usize = CHUNK_CAPACITY;

pub(crate) const WORKERS: &[usize] = if cfg!(miri) { &[1, 2] } else { &[1, 2, 8, 16] };

#[derive(StableHash, Clone, Copy, Debug, PartialEq)]
pub(crate) struct Hp(pub(crate) u32);

#[derive(StableHash, Clone, Copy, Debug, PartialEq)]
pub(crate) struct Id(pub(crate) u32);

#[derive(StableHash, Clone, Copy, Debug, PartialEq)]
pub(crate) struct Marked;

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Ev(pub(crate) u32);

/// The rows of the chunks `Changed<Hp>` since `since` visits.
pub(crate) fn changed_rows(r: &mut Registry, since: u64) -> usize {
    let mut rows = 0;
    r.query::<&Hp>()
        .filter_changed::<Hp>(since)
        .each_chunk(|entities, _| rows += entities.len());
    rows
}

pub(crate) fn message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => p.downcast::<&str>().map(|s| s.to_string()).unwrap(),
    }
}
