//! [`Reduction`]: the handle returned by
//! [`Query::each_async_reduce`](crate::Query::each_async_reduce).
//!
//! Each chunk folds its rows in row order starting from `identity()`; the chunk results are
//! combined in chunk order (`combine(combine(c0, c1), c2)…`) on the thread that retires the
//! launch. Neither depends on which worker ran which chunk or when, so a float sum is
//! bit-identical for every worker count.

use std::sync::Arc;

use crate::registry::Registry;
use freyr_query::launch::reduce::ReduceSlot;

/// The pending result of [`Query::each_async_reduce`](crate::Query::each_async_reduce).
///
/// # Examples
///
/// ```
/// use freyr::Registry;
///
/// struct Mass(f64);
///
/// let mut registry = Registry::with_workers(4);
/// registry.spawn_batch((0..2000).map(|i| (Mass(i as f64 * 0.1),)));
/// let total = registry
///     .query::<&Mass>()
///     .each_async_reduce(|| 0.0f64, |acc, _, m| acc + m.0, |a, b| a + b);
/// let total = total.join(&mut registry);
/// assert!((total - 199_900.0).abs() < 1e-6);
/// ```
#[must_use = "a reduction's result is only available through `join`"]
pub struct Reduction<A> {
    slot: Arc<ReduceSlot<A>>,
    /// Launch number, or `None` when nothing matched and the result is `identity()`.
    launch: Option<u64>,
    registry_id: u64,
}

impl<A> Reduction<A> {
    pub(crate) fn new(slot: Arc<ReduceSlot<A>>, launch: Option<u64>, registry_id: u64) -> Self {
        Reduction {
            slot,
            launch,
            registry_id,
        }
    }

    /// Whether the result is available without waiting (its launch was retired by a sync point).
    pub fn is_ready(&self) -> bool {
        self.slot.is_ready()
    }

    /// Waits for this reduction's launch only (an implicit sync point for that launch; other
    /// in-flight work keeps running and its commands still wait for the next sync point) and
    /// returns the combined result.
    ///
    /// # Panics
    ///
    /// - Re-raises the first panic of this launch — of a callback, or of `identity` or `combine`
    ///   while the results were combined — if no sync point re-raised it yet; if one did, panics
    ///   saying the result was lost. Never returns a partial result.
    /// - If `registry` is not the registry that launched the reduction.
    pub fn join(self, registry: &mut Registry) -> A {
        assert_eq!(
            self.registry_id,
            registry.id(),
            "freyr: Reduction::join called with a different registry than the one that launched it"
        );
        if let Some(seq) = self.launch {
            registry.retire_launch(seq);
        }
        match self.slot.take() {
            Some(Some(v)) => v,
            Some(None) => panic!(
                "freyr: reduction result lost: a callback of its launch panicked \
                 (the panic was re-raised at the sync point)"
            ),
            None => panic!(
                "freyr: reduction result missing: its launch ended without finishing \
                 (no sync point or join retired it); this is a bug in freyr"
            ),
        }
    }
}
