//! The sync shim: every primitive the scheduling protocol touches, from one place.
//!
//! The protocol code (`sleep.rs`, `group.rs`, `shared.rs`, `pool.rs`) imports
//! `crate::sync::…` only. Normally that is `std` plus `crossbeam-queue`
//! (`std_impl.rs`); under `--cfg freyr_loom` it is `loom` plus a lock-free
//! slot array on loom's atomics standing in for the queues (`loom_impl.rs`,
//! `loom_slots.rs`: no lock, so no ordering the real queues do not have),
//! with the
//! queue capacity, spin count and batch split shrunk so the models reach the
//! full-queue, overflow and park edges in a few steps. Both halves export the
//! same names with the same signatures.
//!
//! Metrics counters are deliberately *not* routed through the shim: they are
//! relaxed statistics that never steer the protocol, and making them loom
//! atomics would only multiply the interleavings loom has to explore.

#[cfg(not(freyr_loom))]
pub(crate) mod cell;
#[cfg(not(freyr_loom))]
mod std_impl;
#[cfg(not(freyr_loom))]
pub(crate) use std_impl::*;

#[cfg(freyr_loom)]
pub(crate) mod loom_impl;
#[cfg(freyr_loom)]
mod loom_slots;
#[cfg(freyr_loom)]
pub(crate) use loom_impl::*;

/// Locks `mutex`, ignoring poisoning: every critical section in this crate
/// leaves its data consistent even if a panic unwinds through it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits on `condvar`, ignoring poisoning (see [`lock`]).
pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar
        .wait(guard)
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
