//! The helpers `hierarchy_attack.rs` and `hierarchy_attack_edits.rs` share.

#![allow(dead_code)]

use std::panic::{self, AssertUnwindSafe};

use freyr::{Commands, Registry};

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Name(pub(crate) u32);

impl freyr::StableHash for Name {
    fn stable_hash(&self, h: &mut freyr::hash::StableHasher) {
        self.0.stable_hash(h);
    }
}

pub(crate) fn registry(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_hashable::<Name>();
    r.register_persistent::<Name>("test.name", 1);
    r.register_snapshot_copy::<Name>();
    r.register_cloneable::<Name>();
    r.register_hierarchy();
    r.register_disabled();
    r
}

/// Records `f`'s commands from a callback and applies them at a sync point; returns the sync
/// point's panic, if any.
pub(crate) fn record(
    r: &mut Registry,
    f: impl Fn(&mut Commands<'_>) + Send + Sync,
) -> Option<Box<dyn std::any::Any + Send>> {
    struct Anchor;
    let anchor = r.spawn((Anchor,));
    r.query::<&Anchor>()
        .each_with(|_, _, ctx| f(ctx.commands()));
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| r.execute_tasks()));
    r.despawn(anchor).unwrap();
    outcome.err()
}

pub(crate) fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}
