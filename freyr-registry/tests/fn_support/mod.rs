//! The helpers `fn_systems_attack.rs` and `fn_systems_attack_graph.rs` share.

#![allow(dead_code)]

use freyr::{Registry, StableHash};
use std::panic::{AssertUnwindSafe, catch_unwind};

pub(crate) const WORKERS: &[usize] = &[1, 2, 3, 8, 16];

#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
pub(crate) struct A(pub(crate) u32);

#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
pub(crate) struct Marker(pub(crate) u32);

#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
pub(crate) struct Id(pub(crate) u64);

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Ev(pub(crate) u64);

#[derive(Debug, Default, PartialEq)]
pub(crate) struct Sum(pub(crate) u64);

pub(crate) struct Res1(pub(crate) u32);

/// Runs one update, returning the panic's message if it panicked.
pub(crate) fn update(registry: &mut Registry) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| registry.update(0.1))).map_err(|p| {
        p.downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "<other payload>".to_owned())
    })
}

/// The values of `T` in entity order (archetype, chunk, row), with the entities' bits.
pub(crate) fn rows<T: Copy + Send + Sync + 'static>(registry: &mut Registry) -> Vec<(u64, T)> {
    let mut out = Vec::new();
    registry
        .query::<&T>()
        .each(|e, v| out.push((e.to_bits(), *v)));
    out
}
