//! Freyr's sync shim: every primitive the scheduling protocol touches, from one place, so
//! that the same code runs on `std` and on [loom](https://docs.rs/loom).
//!
//! freyr-sched's pool (its sleep, group, queue and shutdown protocol) and freyr-query's
//! launch hand-off import their atomics, locks, condition variables, threads, thread-locals,
//! queues and `UnsafeCell` from this crate only. Normally that is `std` plus
//! `crossbeam-queue` (zero cost: re-exports and `#[inline(always)]` wrappers). Built with
//! `RUSTFLAGS="--cfg freyr_loom"` it is `loom` plus a lock-free slot array on loom's atomics
//! standing in for the queues (no lock, so no ordering the real queues do not have), with the
//! queue capacity, spin phase and batch split shrunk so the models in `loom-tests/` reach the
//! full-queue, overflow and park edges in a few steps. Both halves export the same names with
//! the same signatures, so the models check the very code that ships.
//!
//! Metrics counters are deliberately *not* routed through the shim: they are relaxed
//! statistics that never steer the protocol, and making them loom atomics would only multiply
//! the interleavings loom has to explore.
//!
//! # Example
//!
//! ```
//! use freyr_sync::{AtomicUsize, Mutex, Ordering, UnsafeCell, lock};
//!
//! let hits = AtomicUsize::new(0);
//! hits.fetch_add(2, Ordering::AcqRel);
//! assert_eq!(hits.load(Ordering::Acquire), 2);
//!
//! let cell = UnsafeCell::new(5_u32);
//! // SAFETY: no other access to the cell exists during the call.
//! cell.with_mut(|p| unsafe { *p += 1 });
//! assert_eq!(cell.into_inner(), 6);
//!
//! let names = Mutex::new(vec!["a"]);
//! lock(&names).push("b");
//! assert_eq!(lock(&names).len(), 2);
//! ```

#[cfg(not(freyr_loom))]
mod cell;
#[cfg(not(freyr_loom))]
mod std_impl;
#[cfg(not(freyr_loom))]
pub use cell::UnsafeCell;
#[cfg(not(freyr_loom))]
pub use std_impl::*;

#[cfg(freyr_loom)]
mod loom_impl;
#[cfg(freyr_loom)]
mod loom_slots;
#[cfg(freyr_loom)]
pub use loom::cell::UnsafeCell;
#[cfg(freyr_loom)]
pub use loom_impl::*;

/// Locks `mutex`, ignoring poisoning: every critical section of the protocol leaves its data
/// consistent even if a panic unwinds through it, so a poisoned lock is as good as any.
///
/// # Examples
///
/// ```
/// let count = freyr_sync::Mutex::new(1);
/// *freyr_sync::lock(&count) += 1;
/// assert_eq!(*freyr_sync::lock(&count), 2);
/// ```
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Locks a `std::sync::Mutex`, ignoring poisoning, in every build: under loom too, where
/// [`lock`] takes loom's `Mutex`. For state outside the pool protocol that loom does not model
/// (a deadline job's result, a pump's completion slot, a reduction's outcome), whose owners
/// leave it consistent when a panic unwinds through a critical section, so a poisoned lock is
/// as good as any.
///
/// # Examples
///
/// ```
/// let count = std::sync::Mutex::new(1);
/// let _ = std::panic::catch_unwind(|| {
///     let _guard = count.lock().unwrap();
///     panic!("poisons the lock");
/// });
/// assert!(count.is_poisoned());
/// *freyr_sync::lock_std(&count) += 1;
/// assert_eq!(*freyr_sync::lock_std(&count), 2);
/// ```
pub fn lock_std<T: ?Sized>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits on `condvar` (releasing `guard` while blocked, as `Condvar::wait` does), ignoring
/// poisoning (see [`lock`]). Wake-ups may be spurious: call it in a loop over the condition.
///
/// # Examples
///
/// ```
/// use freyr_sync::{Arc, Condvar, Mutex, lock, wait};
///
/// let state = Arc::new((Mutex::new(false), Condvar::new()));
/// let other = Arc::clone(&state);
/// let setter = std::thread::spawn(move || {
///     *lock(&other.0) = true;
///     other.1.notify_all();
/// });
/// let mut ready = lock(&state.0);
/// while !*ready {
///     ready = wait(&state.1, ready);
/// }
/// assert!(*ready);
/// drop(ready);
/// setter.join().unwrap();
/// ```
pub fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar
        .wait(guard)
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
