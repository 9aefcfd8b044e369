//! Parking idle threads without losing wake-ups. The protocol and the proof
//! sketch are in `PROTOCOL.md` ("Park and wake"); the step numbers below
//! refer to it.

use crate::metrics::Counters;
use crate::sync::{self, AtomicUsize, Condvar, Mutex, Ordering, fence};

/// The pool-wide sleep state shared by workers and waiting threads.
pub(crate) struct Sleep {
    /// Threads that announced they are about to sleep or are sleeping
    /// (workers and group waiters alike). Pushers read it to decide whether
    /// a wake-up is needed at all; it is a hint that is exact where it
    /// matters (see `announce`).
    sleepers: AtomicUsize,
    /// The wake-up epoch: bumped under the lock by every wake. A sleeper
    /// waits only while the epoch is the one it saw when it re-checked for
    /// work, under the same lock.
    epoch: Mutex<u64>,
    wakeup: Condvar,
}

impl Sleep {
    pub(crate) fn new() -> Self {
        Sleep {
            sleepers: AtomicUsize::new(0),
            epoch: Mutex::new(0),
            wakeup: Condvar::new(),
        }
    }

    /// Whether some thread is (about to be) asleep: then splitting work is
    /// worthwhile. A relaxed hint, never used for correctness.
    #[inline]
    pub(crate) fn has_sleepers(&self) -> bool {
        self.sleepers.load(Ordering::Relaxed) != 0
    }

    /// Submit step 3: called after `tasks` new tasks were pushed. Wakes up to
    /// `tasks` sleepers, and costs one fence and one load when nobody sleeps.
    #[inline]
    pub(crate) fn new_work(&self, tasks: usize) {
        // Pairs with the fence in `sleep` (park step 2): either this load sees
        // the sleeper's announcement, or the sleeper's re-check sees the push.
        fence(Ordering::SeqCst);
        let sleepers = self.sleepers.load(Ordering::Relaxed);
        if sleepers != 0 {
            self.wake(tasks, sleepers);
        }
    }

    #[cold]
    fn wake(&self, tasks: usize, sleepers: usize) {
        let mut epoch = sync::lock(&self.epoch);
        *epoch = epoch.wrapping_add(1);
        if tasks >= sleepers {
            self.wakeup.notify_all();
        } else {
            for _ in 0..tasks {
                self.wakeup.notify_one();
            }
        }
    }

    /// Wakes every sleeper (group completion with a sleeping waiter, and
    /// shutdown).
    #[cold]
    pub(crate) fn wake_all(&self) {
        let mut epoch = sync::lock(&self.epoch);
        *epoch = epoch.wrapping_add(1);
        self.wakeup.notify_all();
    }

    /// Park steps 1-5: announce, fence, lock, re-check, wait for a new epoch.
    /// `still_idle` re-checks every condition the caller waits for (queued
    /// work, its group's completion, shutdown) and returns `true` when there
    /// is still nothing to do; it runs under the sleep lock.
    #[cold]
    pub(crate) fn sleep(&self, counters: &Counters, still_idle: impl FnOnce() -> bool) {
        // 1. Announce: from here on a pusher that misses our re-check sees us.
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        // 2. Order the announcement before the re-check's loads.
        fence(Ordering::SeqCst);
        // 3. Lock: a waker's epoch bump happens entirely before or after.
        let mut epoch = sync::lock(&self.epoch);
        // 4. Re-check. MUTANT `no_recheck_before_sleep` skips it: a push that
        //    landed between our last search and the announcement (so its
        //    pusher saw no sleeper) is then never noticed.
        #[cfg(not(freyr_mutant = "no_recheck_before_sleep"))]
        let idle = still_idle();
        #[cfg(freyr_mutant = "no_recheck_before_sleep")]
        let idle = {
            let _ = still_idle;
            true
        };
        if idle {
            // 5. Sleep until some waker bumps the epoch.
            counters.add_park();
            let seen = *epoch;
            while *epoch == seen {
                epoch = sync::wait(&self.wakeup, epoch);
            }
            counters.add_wakeup();
        }
        drop(epoch);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(all(test, not(freyr_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn a_re_check_that_finds_work_does_not_park() {
        let sleep = Sleep::new();
        let counters = Counters::default();
        sleep.sleep(&counters, || false);
        assert_eq!(counters.snapshot().parks, 0);
        assert!(!sleep.has_sleepers());
    }

    #[test]
    fn new_work_wakes_a_sleeper() {
        let sleep = Arc::new(Sleep::new());
        let work = Arc::new(AtomicBool::new(false));
        let sleeper = {
            let (sleep, work) = (Arc::clone(&sleep), Arc::clone(&work));
            std::thread::spawn(move || {
                let counters = Counters::default();
                while !work.load(Ordering::SeqCst) {
                    sleep.sleep(&counters, || !work.load(Ordering::SeqCst));
                }
                counters.snapshot()
            })
        };
        // Publish, then wake: exactly the submit steps 2-3.
        work.store(true, Ordering::SeqCst);
        sleep.new_work(1);
        let metrics = sleeper.join().unwrap();
        assert_eq!(metrics.parks, metrics.wakeups);
        assert!(!sleep.has_sleepers());
    }
}
