//! What the resource attack tests share: the types, a panic's text, and resources whose
//! `Clone` and `Drop` are counted and made to panic on demand.
#![allow(dead_code)]

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use freyr::{Registry, StableHash};

#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
pub(crate) struct Pos(pub(crate) u64);
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Count(pub(crate) u64);
pub(crate) struct Gravity(pub(crate) u64);
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Table(pub(crate) Vec<u64>);
#[derive(Clone)]
pub(crate) struct Ping;

/// The text of a panic payload.
pub(crate) fn text(payload: Box<dyn Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else {
        String::from("<not text>")
    }
}

/// `update`, its panic as text.
pub(crate) fn update(r: &mut Registry) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| r.update(0.0))).map_err(text)
}

pub(crate) fn hash(r: &Registry) -> u64 {
    r.world_hash_all().unwrap()
}

/// Counts what values of a [`Tracked`] family are made and dropped, and makes their `Clone` or
/// `Drop` panic on demand.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) made: AtomicUsize,
    pub(crate) drops: AtomicUsize,
    pub(crate) clone_fails: AtomicBool,
    pub(crate) drop_fails: AtomicBool,
}

impl Tally {
    pub(crate) fn balanced(&self) -> bool {
        self.made.load(Ordering::SeqCst) == self.drops.load(Ordering::SeqCst)
    }
}

/// A resource (one type per `K`) whose every value is counted by its tally.
pub(crate) struct Tracked<const K: u8> {
    pub(crate) value: u64,
    pub(crate) tally: Arc<Tally>,
}

impl<const K: u8> Tracked<K> {
    pub(crate) fn new(value: u64, tally: &Arc<Tally>) -> Self {
        tally.made.fetch_add(1, Ordering::SeqCst);
        Tracked {
            value,
            tally: tally.clone(),
        }
    }
}

impl<const K: u8> Clone for Tracked<K> {
    fn clone(&self) -> Self {
        if self.tally.clone_fails.load(Ordering::SeqCst) {
            panic!("Tracked<{K}>::clone fails");
        }
        Tracked::new(self.value, &self.tally)
    }
}

impl<const K: u8> Drop for Tracked<K> {
    fn drop(&mut self) {
        self.tally.drops.fetch_add(1, Ordering::SeqCst);
        if self.tally.drop_fails.load(Ordering::SeqCst) {
            panic!("Tracked<{K}>::drop fails");
        }
    }
}

pub(crate) fn value<const K: u8>(r: &Registry) -> Option<u64> {
    r.resource::<Tracked<K>>().map(|t| t.value)
}

/// A registry with two tracked resources registered for snapshots and a few rows.
pub(crate) fn tracked_registry(workers: usize, one: &Arc<Tally>, two: &Arc<Tally>) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_hashable::<Pos>();
    r.register_snapshot_copy::<Pos>();
    r.register_snapshot_resource::<Tracked<1>>();
    r.register_snapshot_resource::<Tracked<2>>();
    r.insert_resource(Tracked::<1>::new(1, one));
    r.insert_resource(Tracked::<2>::new(2, two));
    r.spawn_batch((0..700).map(|i| (Pos(i),)));
    r
}
