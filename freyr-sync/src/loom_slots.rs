//! The loom stand-in for the production queues: a bounded lock-free array
//! of slots that synchronises exactly as the real queues do, and no more.
//!
//! What the protocol relies on from a queue, and what this gives:
//! - a pushed value is taken by exactly one `pop` (each slot changes hands
//!   by one CAS),
//! - the taker happens-after the pusher (release on publishing a slot,
//!   acquire on taking it: crossbeam's `ArrayQueue` and `SegQueue` publish
//!   with a release store and take with an acquire load too),
//! - `is_empty` reads what pushes and pops wrote, with `SeqCst` loads, as
//!   crossbeam's `is_empty` does, and nothing else.
//!
//! There is no lock, so nothing here orders a push against a parking
//! thread's re-check: that is the job of the two `SeqCst` fences of the
//! sleep protocol, and removing either one is visible to the models. Loom's
//! `UnsafeCell` also reports a slot read that is not ordered after its
//! write, or a write that races a read.
//!
//! Why not crossbeam's `ArrayQueue` algorithm transcribed as is: its push
//! claims a position (CAS on the tail) and publishes the slot in a second
//! step, and a popper that meets the claimed, unpublished slot spins until
//! the pusher finishes (likewise a pusher behind a half-done pop). Loom
//! explores schedules where that thread is descheduled while two others
//! spin, and a three-thread model then exceeds loom's branch limit instead
//! of finishing. Here no operation ever waits for another thread's
//! half-done one: a slot being written or read counts as *not there* (a
//! push is not visible before it completes, a taken value is gone), so
//! every operation is a bounded scan. The price is FIFO order, which the
//! protocol never relies on (exactly-once and no-loss do not need it).

use core::mem::MaybeUninit;

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering};

/// Slot states.
const EMPTY: usize = 0;
/// A pusher owns the slot and is writing its value.
const WRITING: usize = 1;
/// The slot holds a published value.
const FULL: usize = 2;
/// A popper owns the slot and is reading its value.
const TAKING: usize = 3;

struct Slot<T> {
    state: AtomicUsize,
    value: UnsafeCell<MaybeUninit<T>>,
}

/// A bounded MPMC bag of `T` (see the module docs).
pub(crate) struct Slots<T> {
    slots: Box<[Slot<T>]>,
}

// SAFETY: a value moves between threads only through a slot, and the state
// CASes give each slot one writer or one reader at a time (loom's
// `UnsafeCell` checks exactly that in every explored execution).
unsafe impl<T: Send> Sync for Slots<T> {}
// SAFETY: the bag owns its values; sending it sends them.
unsafe impl<T: Send> Send for Slots<T> {}

impl<T: Copy> Slots<T> {
    /// An empty bag of `cap` (> 0) slots.
    pub(crate) fn new(cap: usize) -> Self {
        assert!(cap > 0, "freyr-sync: a queue needs at least one slot");
        Slots {
            slots: (0..cap)
                .map(|_| Slot {
                    state: AtomicUsize::new(EMPTY),
                    value: UnsafeCell::new(MaybeUninit::uninit()),
                })
                .collect(),
        }
    }

    /// Pushes `value`, handing it back when no slot is empty.
    pub(crate) fn push(&self, value: T) -> Result<(), T> {
        for slot in &self.slots {
            // Acquire: the previous reader's read of this slot happens
            // before the write below.
            if slot
                .state
                .compare_exchange(EMPTY, WRITING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                // SAFETY: the CAS made this thread the slot's only owner
                // until it publishes the state below.
                slot.value
                    .with_mut(|p| unsafe { p.write(MaybeUninit::new(value)) });
                // MUTANT `queue_publish_relaxed`: the slot is published
                // without release, so its taker may read it before the
                // write (loom: a causality violation).
                slot.state.store(FULL, Ordering::Release);
                return Ok(());
            }
        }
        Err(value)
    }

    /// Takes a published value, or `None` when there is none.
    pub(crate) fn pop(&self) -> Option<T> {
        for slot in &self.slots {
            if self.claim(slot) {
                // SAFETY: the claim (acquire) made this thread the slot's
                // only owner, after the write that published it.
                let value = slot.value.with(|p| unsafe { p.read().assume_init() });
                // Release: this read happens before the next write.
                slot.state.store(EMPTY, Ordering::Release);
                return Some(value);
            }
        }
        None
    }

    /// Moves `slot` from full to taking; `false` when it is not full or
    /// another popper took it first.
    fn claim(&self, slot: &Slot<T>) -> bool {
        // MUTANT `pop_not_atomic`: a load and a store instead of the CAS, so
        // two poppers can both take the last value.
        slot.state
            .compare_exchange(FULL, TAKING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Whether no slot held a published value when it was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.slots
            .iter()
            .all(|slot| slot.state.load(Ordering::SeqCst) != FULL)
    }
}
