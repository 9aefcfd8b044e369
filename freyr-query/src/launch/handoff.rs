//! The hand-off between a launch's tasks and the thread that retires it: per-task output slots
//! and the countdown that lets the last task to finish stamp the launch's end. Written against
//! the sync shim (`freyr-sync`), so the loom models in `loom-tests/` (`query_handoff.rs`) check
//! this very code; in a normal build the shim is `std` and the cell wrapper compiles away.
//!
//! The protocol (freyr-sched's PROTOCOL.md, "The query launch hand-off"):
//! - task `i` runs exactly once, on one thread, and only it writes `slots[i]`
//!   ([`TaskSlots::with_mut`]); the retiring thread reads the slots ([`TaskSlots::into_vec`])
//!   only after the launch's task group completed, whose acquire orders every task's writes
//!   before the read;
//! - every finished batch of tasks decrements the [`Countdown`] with `AcqRel`: the call that
//!   takes it to zero is unique, and happens after every other task finished, so the end stamp
//!   it writes is no earlier than any task's end.

use freyr_sync::{AtomicU64, AtomicUsize, Ordering, UnsafeCell};

/// One output slot per task of a launch, written only by the task that owns the index and read
/// only at retirement.
pub struct TaskSlots<S>(Box<[UnsafeCell<S>]>);

// SAFETY: shared access only goes through `with_mut`, whose contract makes each slot's accesses
// exclusive in time (one task per index, then retirement after the group completed); moving
// slot values between threads needs `S: Send`.
unsafe impl<S: Send> Sync for TaskSlots<S> {}

impl<S: Default> TaskSlots<S> {
    /// `tasks` slots, each `S::default()`.
    pub fn new(tasks: usize) -> Self {
        TaskSlots((0..tasks).map(|_| UnsafeCell::new(S::default())).collect())
    }
}

impl<S> TaskSlots<S> {
    /// Calls `f` with task `index`'s slot.
    ///
    /// # Safety
    ///
    /// The calling thread runs task `index`, and no other access to `slots[index]` happens
    /// during the call: each task index runs exactly once, and the slots are read only after
    /// the launch's group completed.
    ///
    /// # Panics
    ///
    /// If `index` is out of range.
    #[inline(always)]
    pub unsafe fn with_mut<R>(&self, index: usize, f: impl FnOnce(&mut S) -> R) -> R {
        // MUTANT `handoff_slot_index_shift`: a task writes its neighbour's slot (the last two
        // tasks share the last slot, and the first slot stays unset).
        let cell = &self.0[index];
        // SAFETY: this is the only access to the slot during the call (caller contract).
        cell.with_mut(|slot| f(unsafe { &mut *slot }))
    }

    /// The slots' values in task order, at retirement: owning `self` means no task still holds
    /// a reference to the launch.
    pub fn into_vec(self) -> Vec<S> {
        self.0
            .into_vec()
            .into_iter()
            .map(UnsafeCell::into_inner)
            .collect()
    }
}

/// The launch-timing countdown: tasks left, and the end stamp that the last task to finish
/// writes.
pub struct Countdown {
    remaining: AtomicUsize,
    end: AtomicU64,
}

impl Countdown {
    /// A countdown over `tasks` tasks, no end stamped.
    pub fn new(tasks: usize) -> Self {
        Countdown {
            remaining: AtomicUsize::new(tasks),
            end: AtomicU64::new(0),
        }
    }

    /// Records that `n` more tasks finished. The one call that finishes the last task runs
    /// `stamp` (after every other task's finish, by the `AcqRel` decrement) and stores its
    /// value, raised to at least 1 since 0 means "not stamped"; it returns `true`, every other
    /// call `false`.
    #[inline]
    pub fn finish(&self, n: usize, stamp: impl FnOnce() -> u64) -> bool {
        // MUTANT `handoff_countdown_relaxed`: the decrement orders nothing, so the last
        // finisher need not see the others.
        let order = Ordering::AcqRel;
        let before = self.remaining.fetch_sub(n, order);
        // MUTANT `handoff_last_check_off_by_one`: the next-to-last finisher believes it is the
        // last.
        let last = before == n;
        if last {
            self.end.store(stamp().max(1), Ordering::Release);
        }
        last
    }

    /// The end stamp, or `None` when no call finished the last task (a task panicked first).
    pub fn end(&self) -> Option<u64> {
        match self.end.load(Ordering::Acquire) {
            0 => None,
            n => Some(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Countdown, TaskSlots};

    #[test]
    fn each_task_writes_its_own_slot_and_retirement_reads_them_in_task_order() {
        let slots = TaskSlots::<u32>::new(3);
        // SAFETY: one thread, one access at a time.
        unsafe {
            slots.with_mut(2, |slot| *slot = 7);
            slots.with_mut(0, |slot| *slot += 1);
        }
        assert_eq!(slots.into_vec(), [1, 0, 7]);
    }

    #[test]
    fn only_the_call_that_finishes_the_last_task_stamps_the_end() {
        let countdown = Countdown::new(3);
        assert!(!countdown.finish(2, || panic!("not the last task")));
        assert_eq!(countdown.end(), None);
        assert!(countdown.finish(1, || 42));
        assert_eq!(countdown.end(), Some(42));
    }

    #[test]
    fn a_zero_stamp_still_reads_as_stamped() {
        let countdown = Countdown::new(1);
        assert!(countdown.finish(1, || 0));
        assert_eq!(countdown.end(), Some(1));
    }
}
