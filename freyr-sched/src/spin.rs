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

use std::time::Instant;

use crate::metrics::CachePadded;
use crate::sleep::{Sleep, Sleeper};
use freyr_sync::{AtomicUsize, Ordering, SpinClock, Stopwatch};

/// The most a worker's budget is halved: 10 µs / 2^8 is under 40 ns, so the phase is its one
/// search round.
const MAX_HALVINGS: u32 = 8;

/// Work that a new submission brought this soon after a worker went idle restores its full
/// budget: back-to-back batches (a submit a few µs after the last wait, or after a wake-up that
/// takes tens of µs on a VM), not a frame's sleep of milliseconds.
const SHORT_IDLE_NANOS: u64 = 200_000;

/// A worker's spin budget, adapted to how soon new work has followed its idle moments (see
/// PROTOCOL.md "Spin"): each phase that runs out halves the next one, down to a single search
/// round; work from a new submission found within [`SHORT_IDLE_NANOS`] of going idle restores
/// the full budget. A pool that runs one batch per 60 Hz frame thus stops spinning after its
/// batches within a few frames, while back-to-back batches keep a worker awake between them.
/// Work split off a running batch restores nothing: it says nothing about the next batch.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    halvings: u32,
}

/// When a worker went idle: the submission count then, and a clock.
pub(crate) struct IdleMark {
    submissions: usize,
    since: Stopwatch,
}

impl Backoff {
    /// The worker's budget is the full one halved this many times.
    #[inline]
    pub(crate) fn halvings(&self) -> u32 {
        self.halvings
    }

    /// A spin phase found nothing: the next one gets half the time.
    #[inline]
    fn spun_out(&mut self) {
        self.halvings = (self.halvings + 1).min(MAX_HALVINGS);
    }

    /// The worker, idle since `mark`, found work: if a submission came since and soon, the
    /// batches are back to back, and the full budget is restored.
    #[inline]
    pub(crate) fn found_work(&mut self, spin: &Spin, mark: &IdleMark) {
        if self.halvings != 0 {
            let submitted = spin.submissions.0.load(Ordering::Relaxed) != mark.submissions;
            self.found_work_after(submitted, mark.since.elapsed_nanos());
        }
    }

    /// [`found_work`](Backoff::found_work)'s rule: `submitted` says whether a submission came
    /// since the worker went idle, `idle_nanos` ago.
    #[inline]
    fn found_work_after(&mut self, submitted: bool, idle_nanos: u64) {
        if submitted && idle_nanos < SHORT_IDLE_NANOS {
            self.halvings = 0;
        }
    }
}

/// The pool's spin policy and the count of workers spinning now.
pub(crate) struct Spin {
    /// Workers in their spin phase now (a heuristic: a stale count only lets
    /// one worker more or less spin, never affects correctness). Changed by
    /// every spin phase of a worker, at its start and its end, so on a cache
    /// line apart from `submissions`, which every submission changes: a
    /// worker that finds a task and leaves its spin phase does not first
    /// fetch the line the submitter has just taken.
    spinners: CachePadded<AtomicUsize>,
    /// Submissions so far (not splits), for [`Backoff`]: a relaxed hint that
    /// only sets how long a worker spins, never affects correctness.
    submissions: CachePadded<AtomicUsize>,
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
            spinners: CachePadded(AtomicUsize::new(0)),
            submissions: CachePadded(AtomicUsize::new(0)),
            max_spinners: cores.saturating_sub(1).max(1),
            oversubscribed: workers > cores,
        }
    }

    /// Counts a submission of new work (submit step 3; not a split).
    #[inline]
    pub(crate) fn submitted(&self) {
        self.submissions.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Marks the moment a worker went idle, for [`Backoff::found_work`].
    #[inline]
    pub(crate) fn idle_mark(&self) -> IdleMark {
        IdleMark {
            submissions: self.submissions.0.load(Ordering::Relaxed),
            since: Stopwatch::start(),
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
    ///
    /// A worker passes its `backoff`: the phase lasts the budget it says, and
    /// one that runs out shortens the next. A group waiter passes `None` and
    /// spins the full budget.
    ///
    /// With what it found, it returns the phase's last clock reading (its
    /// start or its last budget check: at most one search round before the
    /// find; `None` in a build without a clock), so that a thread that goes
    /// on to run what it found can date the start of its busy episode without
    /// reading the clock again between the find and the run.
    pub(crate) fn spin<R>(
        &self,
        kind: Sleeper,
        sleep: &Sleep,
        backoff: Option<&mut Backoff>,
        mut search: impl FnMut() -> Option<R>,
    ) -> Option<(R, Option<Instant>)> {
        if !SpinClock::SPINS {
            return None;
        }
        let counted = kind == Sleeper::Worker;
        if counted && self.spinners.0.fetch_add(1, Ordering::Relaxed) >= self.max_spinners {
            self.spinners.0.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let _searching = sleep.searching();
        // The clock starts after the slot is taken and is read only after a
        // search, so the first round always searches: a thread preempted
        // (or slowed by a sanitizer) before its first round still looks once.
        let halvings = backoff.as_ref().map_or(0, |b| b.halvings());
        let mut clock = SpinClock::start_shortened(self.oversubscribed, halvings);
        // `search` only looks for a task (it never runs one), so nothing
        // here unwinds and the count is always given back.
        let found = loop {
            clock.pause();
            if let Some(found) = search() {
                break Some((found, clock.last_read()));
            }
            if clock.spent() {
                break None;
            }
        };
        if counted {
            self.spinners.0.fetch_sub(1, Ordering::Relaxed);
        }
        if found.is_none()
            && let Some(backoff) = backoff
        {
            backoff.spun_out();
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

    /// What a phase found, without its clock reading.
    fn found<R>(spun: Option<(R, Option<Instant>)>) -> Option<R> {
        spun.map(|(found, _)| found)
    }

    #[test]
    fn a_find_comes_with_the_phase_s_last_clock_reading() {
        let spin = Spin::new(2, 2);
        let sleep = Sleep::new(1, 1);
        // Found in the first round: the reading is the phase's start.
        let before = Instant::now();
        let (value, seen) = spin
            .spin(Sleeper::Worker, &sleep, None, || Some(3))
            .unwrap();
        let after = Instant::now();
        let seen = seen.expect("a std build reads the clock");
        assert_eq!(value, 3);
        assert!(before <= seen && seen <= after);
        // Found in the second round: the reading is the budget check after the first, taken
        // after the phase started and before the find. (Under Miri a phase is one round; on a
        // loaded machine one may end before its second round: tried again.)
        if cfg!(miri) {
            return;
        }
        for _ in 0..1_000 {
            let start = Instant::now();
            let mut rounds = 0;
            let mut at_find = None;
            let spun = spin.spin(Sleeper::GroupWaiter, &sleep, None, || {
                rounds += 1;
                (rounds == 2).then(|| at_find = Some(Instant::now()))
            });
            if let Some(((), seen)) = spun {
                let (seen, at_find) = (seen.unwrap(), at_find.unwrap());
                assert!(start <= seen && seen <= at_find, "{seen:?} {at_find:?}");
                return;
            }
        }
        panic!("no phase of 1,000 reached its second round");
    }

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
        let sleep = Sleep::new(1, 1);
        let mut waiter_rounds = 0;
        let outer = spin.spin(Sleeper::Worker, &sleep, None, || {
            // While this worker spins, a second worker gets no slot...
            let second = spin.spin(Sleeper::Worker, &sleep, None, || -> Option<()> {
                panic!("a worker beyond the limit must not search")
            });
            assert!(second.is_none());
            // ...but a group waiter spins anyway (its first round always
            // searches, whatever the budget).
            let waiter = spin.spin(Sleeper::GroupWaiter, &sleep, None, || {
                waiter_rounds += 1;
                Some(7)
            });
            assert_eq!((found(waiter), waiter_rounds), (Some(7), 1));
            Some(1)
        });
        assert_eq!(found(outer), Some(1));
        assert_eq!(spin.spinners.0.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn phases_that_run_out_shorten_the_next_and_a_soon_submission_restores_it() {
        let spin = Spin::new(2, 2);
        let sleep = Sleep::new(1, 1);
        let mut backoff = Backoff::default();
        for expected in 1..=MAX_HALVINGS + 2 {
            let spun = spin.spin(
                Sleeper::Worker,
                &sleep,
                Some(&mut backoff),
                || -> Option<()> { None },
            );
            assert!(spun.is_none());
            assert_eq!(backoff.halvings(), expected.min(MAX_HALVINGS));
        }
        // A phase that finds work leaves the budget as it is.
        assert_eq!(
            found(spin.spin(Sleeper::Worker, &sleep, Some(&mut backoff), || Some(()))),
            Some(())
        );
        assert_eq!(backoff.halvings(), MAX_HALVINGS);
        // Work split off a running batch (no new submission) restores nothing...
        let mark = spin.idle_mark();
        backoff.found_work(&spin, &mark);
        assert_eq!(backoff.halvings(), MAX_HALVINGS);
        // ...work a new submission brought long after going idle (a frame's sleep) neither...
        spin.submitted();
        backoff.found_work_after(true, 2 * SHORT_IDLE_NANOS);
        assert_eq!(backoff.halvings(), MAX_HALVINGS);
        // ...but one brought soon after restores the full budget...
        backoff.found_work_after(true, SHORT_IDLE_NANOS / 2);
        assert_eq!(backoff.halvings(), 0);
        // ...and a group waiter's phases (no backoff) spin in full and change nothing.
        assert!(
            spin.spin(Sleeper::GroupWaiter, &sleep, None, || -> Option<()> {
                None
            })
            .is_none()
        );
        assert_eq!(backoff.halvings(), 0);
    }

    #[test]
    fn the_spin_ends_when_the_budget_is_spent() {
        let spin = Spin::new(2, 2);
        let sleep = Sleep::new(1, 1);
        let mut rounds = 0u64;
        let spun = spin.spin(Sleeper::Worker, &sleep, None, || -> Option<()> {
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
        assert!(spun.is_none());
        assert!(rounds >= 1, "at least one search round");
        assert_eq!(spin.spinners.0.load(Ordering::Relaxed), 0);
    }
}
