//! What `world_attack.rs` and `world_attack_more.rs` share: a value that counts its drops.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts its drops.
#[derive(Clone)]
pub(crate) struct Counted(pub(crate) Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A fresh drop counter.
pub(crate) fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}
