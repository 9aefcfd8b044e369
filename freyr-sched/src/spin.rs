//! The spin phase: how long an idle thread keeps searching before it parks
//! (PROTOCOL.md "Spin"; the park that follows is in `sleep.rs`).
//!
//! Modelled on rayon's sleep protocol (`rayon-core/src/sleep`): an idle
//! thread searches a bounded number of rounds, yielding the CPU between
//! them, and then parks. Two differences, both about what an idle pool costs
//! a process that sleeps between ticks: the bound is a *time* budget (a round
//! over 15 queues costs more than a round over one), and only a few workers
//! spin at once (as many as there are cores besides the caller's, at least
//! one). Every other idle worker parks after one failed search. The one that
//! spins keeps the wake-up latency of back-to-back batches low: it takes the
//! next batch's first range at once and, finding sleepers, splits it and
//! wakes them.

use crate::sleep::{Sleep, Sleeper};
use freyr_sync::{AtomicUsize, Ordering, SpinClock};

/// The pool's spin policy and the count of workers spinning now.
pub(crate) struct Spin {
    /// Workers in their spin phase now (a heuristic: a stale count only lets
    /// one worker more or less spin, never affects correctness).
    spinners: AtomicUsize,
    /// How many workers may spin at once.
    max_spinners: usize,
    /// More threads than cores: rounds yield the CPU instead of busy-waiting,
    /// and the budget is shorter.
    oversubscribed: bool,
}

impl Spin {
    /// The policy for a pool of `workers` total threads on a machine with
    /// `cores` (>= 1) available cores.
    pub(crate) fn new(workers: usize, cores: usize) -> Self {
        let cores = cores.max(1);
        Spin {
            spinners: AtomicUsize::new(0),
            max_spinners: cores.saturating_sub(1).max(1),
            oversubscribed: workers > cores,
        }
    }

    /// The spin phase of a thread of `kind` that just found nothing: calls
    /// `search` once, then round after round until it returns `Some`
    /// (returned) or the budget is spent (`None`: the caller parks). A worker spins only while
    /// fewer than the allowed number of workers spin; a group waiter always
    /// spins (it waits for its own group, and nobody else will run it).
    ///
    /// While it spins, the thread is counted in `sleep`'s searchers, so a
    /// busy thread can split its range for it.
    pub(crate) fn spin<R>(
        &self,
        kind: Sleeper,
        sleep: &Sleep,
        mut search: impl FnMut() -> Option<R>,
    ) -> Option<R> {
        if !SpinClock::SPINS {
            return None;
        }
        let counted = kind == Sleeper::Worker;
        if counted && self.spinners.fetch_add(1, Ordering::Relaxed) >= self.max_spinners {
            self.spinners.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let _searching = sleep.searching();
        // The clock starts after the slot is taken and is read only after a
        // search, so the first round always searches: a thread preempted
        // (or slowed by a sanitizer) before its first round still looks once.
        let mut clock = SpinClock::start(self.oversubscribed);
        // `search` only looks for a task (it never runs one), so nothing
        // here unwinds and the count is always given back.
        let found = loop {
            clock.pause();
            if let Some(found) = search() {
                break Some(found);
            }
            if clock.spent() {
                break None;
            }
        };
        if counted {
            self.spinners.fetch_sub(1, Ordering::Relaxed);
        }
        found
    }

    /// Workers allowed to spin at once.
    #[cfg(all(test, not(freyr_loom)))]
    fn max_spinners(&self) -> usize {
        self.max_spinners
    }
}

// Loom never spins (`SpinClock::SPINS` is false there), so these run only in
// normal builds. They read no clock: each asserts what holds whatever the
// budget (the first round always searches), so a slow build (a sanitizer, a
// preempted thread) passes them too.
#[cfg(all(test, not(freyr_loom)))]
mod tests {
    use super::*;

    #[test]
    fn one_spinner_per_core_besides_the_callers_and_at_least_one() {
        assert_eq!(Spin::new(2, 2).max_spinners(), 1);
        assert_eq!(Spin::new(16, 2).max_spinners(), 1);
        assert_eq!(Spin::new(16, 16).max_spinners(), 15);
        assert_eq!(Spin::new(4, 1).max_spinners(), 1);
        assert_eq!(Spin::new(4, 0).max_spinners(), 1);
    }

    #[test]
    fn a_worker_beyond_the_limit_does_not_spin_and_a_waiter_always_does() {
        let spin = Spin::new(3, 2); // one spinner allowed
        let sleep = Sleep::new();
        let mut waiter_rounds = 0;
        let outer = spin.spin(Sleeper::Worker, &sleep, || {
            // While this worker spins, a second worker gets no slot...
            let second = spin.spin(Sleeper::Worker, &sleep, || -> Option<()> {
                panic!("a worker beyond the limit must not search")
            });
            assert_eq!(second, None);
            // ...but a group waiter spins anyway (its first round always
            // searches, whatever the budget).
            let waiter = spin.spin(Sleeper::GroupWaiter, &sleep, || {
                waiter_rounds += 1;
                Some(7)
            });
            assert_eq!((waiter, waiter_rounds), (Some(7), 1));
            Some(1)
        });
        assert_eq!(outer, Some(1));
        assert_eq!(spin.spinners.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn the_spin_ends_when_the_budget_is_spent() {
        let spin = Spin::new(2, 2);
        let sleep = Sleep::new();
        let mut rounds = 0u64;
        let found = spin.spin(Sleeper::Worker, &sleep, || -> Option<()> {
            assert!(
                sleep.has_searchers(),
                "a spinning thread counts as searching"
            );
            rounds += 1;
            None
        });
        assert!(
            !sleep.has_searchers(),
            "and stops counting when its phase ends"
        );
        assert_eq!(found, None);
        assert!(rounds >= 1, "at least one search round");
        assert_eq!(spin.spinners.load(Ordering::Relaxed), 0);
    }
}
