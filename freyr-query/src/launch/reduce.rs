//! Deterministic reductions: the slot a retired reduction leaves its result in, read by
//! `Reduction`, the handle returned by
//! `Query::each_async_reduce`.
//!
//! Each chunk folds its rows in row order starting from `identity()`; the chunk results are
//! combined in chunk order (`combine(combine(c0, c1), c2)…`) on the thread that retires the
//! launch. Neither depends on which worker ran which chunk or when, so a float sum is
//! bit-identical for every worker count.

use std::sync::{Arc, Mutex};

enum Outcome<A> {
    Pending,
    Ready(A),
    /// A chunk's callback panicked: its fold result is missing.
    Lost,
    Taken,
}

/// Where a retired reduction leaves its result.
pub struct ReduceSlot<A> {
    outcome: Mutex<Outcome<A>>,
}

impl<A> ReduceSlot<A> {
    pub fn pending() -> Arc<Self> {
        Arc::new(ReduceSlot {
            outcome: Mutex::new(Outcome::Pending),
        })
    }

    pub(crate) fn set(&self, value: Option<A>) {
        let mut outcome = freyr_sync::lock_std(&self.outcome);
        *outcome = match value {
            Some(v) => Outcome::Ready(v),
            None => Outcome::Lost,
        };
    }

    pub fn is_ready(&self) -> bool {
        matches!(*freyr_sync::lock_std(&self.outcome), Outcome::Ready(_))
    }

    pub fn take(&self) -> Option<Option<A>> {
        let mut outcome = freyr_sync::lock_std(&self.outcome);
        match core::mem::replace(&mut *outcome, Outcome::Taken) {
            Outcome::Ready(v) => Some(Some(v)),
            Outcome::Lost => Some(None),
            Outcome::Pending => {
                *outcome = Outcome::Pending;
                None
            }
            Outcome::Taken => unreachable!("a Reduction handle is consumed by join"),
        }
    }
}
