//! What a segment of function systems keeps from one run to the next: the per-node counters
//! and the report list that the executor (`registry::fn_systems`) resets in place instead of
//! allocating each tick, and the timings that choose between running the segment on the calling
//! thread alone and spreading it over the pool.

use core::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::Mutex;

use crate::shares::Share;

/// What one segment keeps from run to run: the per-node counters, reset in place at the start
/// of each run instead of allocated, and the [`Chooser`].
#[derive(Default)]
pub(crate) struct SegmentRuns {
    pub(crate) left: Vec<AtomicU32>,
    pub(crate) poisoned: Vec<AtomicBool>,
    /// The segment's roots shuffled, in the shuffled-start mode (otherwise unused).
    pub(crate) shuffled: Vec<u32>,
    /// The runners' shares of the roots in a run over the pool (see [`Share`]).
    pub(crate) shares: Vec<Share>,
    /// The nodes whose run left work for the updating thread (commands or events to apply, a
    /// timing to book), in the order they ended. A node that ran with nothing to report is not
    /// listed, so the updating thread does not touch it: its state stays in the cache of the
    /// worker that ran it.
    pub(crate) report: Mutex<Vec<u32>>,
    pub(crate) chooser: Chooser,
}

impl SegmentRuns {
    /// Resets the counters for a run of a segment whose node `v` waits for `preds[v]` nodes:
    /// every node waits for all its predecessors, none is poisoned, nothing is reported. A
    /// counter is written only where it changed: the runners read the flags, and a write to a
    /// line another core holds costs a round trip between the cores.
    pub(crate) fn reset(&mut self, preds: &[u32]) {
        let n = preds.len();
        self.left.resize_with(n, || AtomicU32::new(0));
        self.poisoned.resize_with(n, || AtomicBool::new(false));
        for (left, &p) in self.left.iter_mut().zip(preds) {
            if *left.get_mut() != p {
                *left.get_mut() = p;
            }
        }
        for poisoned in &mut self.poisoned {
            if *poisoned.get_mut() {
                *poisoned.get_mut() = false;
            }
        }
        self.report
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Splits `n` roots into `runners` (at least one) contiguous shares of near-equal length,
    /// in root order: runner `r` gets the `r`-th.
    pub(crate) fn share_roots(&mut self, n: u32, runners: u32) {
        Share::split(&mut self.shares, n, runners);
    }
}

/// Chooses how a segment runs: on the calling thread alone, in a topological order, or spread
/// over the pool. A pool run pays for waking the workers (a system call, then tens of µs
/// before a parked worker runs on a virtual machine) and loses to one thread on a segment of
/// small systems; a segment of heavy disjoint systems gains. The chooser keeps the smoothed
/// wall time of recent runs in each mode and takes the faster, trying the other again now and
/// then (see [`Chooser::pool`]) so a segment whose systems grow is spread again.
///
/// The first run after a change of mode is not measured, and the run after it keeps the mode
/// and is. A pool run right after runs on the calling thread finds the workers parked, as no
/// pool run after another does when the ticks follow each other closely; and a run on the
/// calling thread right after pool runs finds the systems' state and rows that the workers ran
/// in their cores' caches (on a virtual machine whose cores behaved as if they shared no cache,
/// that run took 8.2 µs on average where runs after runs on the calling thread took 4.8 µs).
/// So each mode is judged by its steady state, not by the cost of switching to it. Where every
/// run finds the workers parked (one tick per 60 Hz frame), the measured run finds them parked
/// too, and the choice stays right. Either way the world is the same: the graph orders every
/// conflicting pair, and commands and events apply in registration order.
#[derive(Default)]
pub(crate) struct Chooser {
    /// Smoothed wall time (ns) of runs on the calling thread; 0 until one is measured.
    inline_ns: u64,
    /// Smoothed wall time (ns) of runs over the pool; 0 until one is measured.
    pool_ns: u64,
    /// Runs since the slower mode was last tried.
    since_probe: u32,
    /// Runs of the faster mode between two tries of the slower (0 until the first try:
    /// [`Chooser::PROBE_EVERY`]).
    probe_every: u32,
    /// The wall time (ns) and count of the runs of the try under way (its two runs and the
    /// first run after it); `None` outside a try.
    probe: Option<(u64, u32)>,
    /// The mode of the last run, once there was one.
    last: Option<bool>,
    /// The next run keeps this mode: the last run changed to it and was not measured.
    repeat: Option<bool>,
}

impl Chooser {
    /// The fewest runs between two tries of the slower mode.
    pub(crate) const PROBE_EVERY: u32 = 16;
    /// The most runs between two tries of the slower mode: a segment whose systems grew is
    /// spread again within this many runs.
    pub(crate) const PROBE_EVERY_MAX: u32 = 256;
    /// A try's cost beyond what the faster mode would have taken (its two runs and the first
    /// run back, which may find the workers parked or the caches cold), as a share of the runs
    /// between two tries, is kept under 1 / `PROBE_COST_SHARE`.
    const PROBE_COST_SHARE: u64 = 32;

    /// Whether the next run goes over the pool: first the pool (twice: the first run is not
    /// measured), then the calling thread (twice, as well), then the faster of the two, with a
    /// try of the other (two runs) every [`PROBE_EVERY`](Chooser::PROBE_EVERY) runs or more:
    /// a try that cost more than the faster mode would have spaces the next one out, so that
    /// trying costs the faster mode about 1/32 of its time at most (a try of the pool from the
    /// calling thread wakes parked workers: 20 µs and more on a virtual machine, against a
    /// segment of 5 µs).
    pub(crate) fn pool(&mut self) -> bool {
        if let Some(mode) = self.repeat.take() {
            return mode;
        }
        if self.pool_ns == 0 {
            return true;
        }
        if self.inline_ns == 0 {
            return false;
        }
        let pool_faster = self.pool_ns <= self.inline_ns;
        self.since_probe += 1;
        if self.since_probe >= self.probe_every.max(Self::PROBE_EVERY) {
            self.since_probe = 0;
            self.probe = Some((0, 0));
            return !pool_faster;
        }
        pool_faster
    }

    /// Records a run's wall time: a quarter weight for the new run, counted at most twice the
    /// smoothed time, so that one run the machine interrupted (a preempted worker, a page fault)
    /// cannot flip the choice on its own, while a lasting change still moves the time within a
    /// few runs. The time of a run in another mode than the run before it (or of the first run)
    /// is not kept: see [`Chooser`].
    pub(crate) fn record(&mut self, pool: bool, nanos: u64) {
        let changed = self.last != Some(pool);
        self.last = Some(pool);
        let nanos = nanos.max(1);
        if let Some((spent, runs)) = &mut self.probe {
            *spent = spent.saturating_add(nanos);
            *runs += 1;
        }
        self.probe_done();
        if changed {
            self.repeat = Some(pool);
            return;
        }
        let slot = if pool {
            &mut self.pool_ns
        } else {
            &mut self.inline_ns
        };
        *slot = if *slot == 0 {
            nanos
        } else {
            (*slot * 3 + nanos.min(*slot * 2)) / 4
        };
    }

    /// Once a try's three runs are recorded, spaces the next try by what this one cost beyond
    /// three runs of the faster mode.
    fn probe_done(&mut self) {
        let Some((spent, 3)) = self.probe else {
            return;
        };
        self.probe = None;
        let best = self.pool_ns.min(self.inline_ns).max(1);
        let extra = spent.saturating_sub(3 * best);
        let every = extra.saturating_mul(Self::PROBE_COST_SHARE) / best;
        self.probe_every = u32::try_from(every)
            .unwrap_or(u32::MAX)
            .clamp(Self::PROBE_EVERY, Self::PROBE_EVERY_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::Chooser;

    /// The modes a chooser picks over `runs` runs, recording `pool_ns` or `inline_ns` for each.
    fn picks(chooser: &mut Chooser, runs: usize, pool_ns: u64, inline_ns: u64) -> Vec<bool> {
        (0..runs)
            .map(|_| {
                let pool = chooser.pool();
                chooser.record(pool, if pool { pool_ns } else { inline_ns });
                pool
            })
            .collect()
    }

    /// The indices of the runs that went over the pool.
    fn pooled(modes: &[bool]) -> Vec<usize> {
        (0..modes.len()).filter(|&i| modes[i]).collect()
    }

    #[test]
    fn the_pool_first_then_one_thread_then_the_faster_with_tries_spaced_by_their_cost() {
        let mut c = Chooser::default();
        let p = Chooser::PROBE_EVERY as usize;
        // The pool is slower (50 µs against 30 µs): two pool runs and two on the calling
        // thread (the first of each not measured), then the calling thread but for the tries,
        // each two pool runs in a row.
        let modes = picks(&mut c, 200, 50_000, 30_000);
        assert_eq!(modes[..4], [true, true, false, false]);
        let tries = pooled(&modes[4..]);
        assert!(
            tries
                .chunks(2)
                .all(|pair| pair.len() == 2 && pair[1] == pair[0] + 1),
            "{tries:?}"
        );
        // The first try after `PROBE_EVERY` runs on the calling thread; it cost 2 x 50 µs and
        // the run back 30 µs, 40 µs more than three runs on the calling thread: the next tries
        // come 40 x 32 / 30 = 42 choices apart: 44 runs, as the try's second run and the
        // repeat of the run back keep a mode rather than choose one.
        assert_eq!(tries[0], p - 1, "{modes:?}");
        let starts: Vec<usize> = tries.chunks(2).map(|pair| pair[0]).collect();
        assert!(starts.len() >= 3, "{starts:?}");
        assert!(
            starts.windows(2).all(|w| w[1] - w[0] == 42 + 2),
            "{starts:?}"
        );
        // The systems grow: the pool gets faster than one thread, and the chooser follows
        // once a try has measured it (within the longest spacing).
        let modes = picks(
            &mut c,
            2 * Chooser::PROBE_EVERY_MAX as usize,
            10_000,
            60_000,
        );
        let tail = &modes[Chooser::PROBE_EVERY_MAX as usize + 8..];
        assert!(
            tail.iter().filter(|&&pool| pool).count() >= tail.len() - 4,
            "{modes:?}"
        );
        // A single slow run does not flip the choice at once.
        let mut c = Chooser::default();
        picks(&mut c, 6, 10_000, 30_000);
        c.record(true, 40_000);
        assert!(c.pool());
    }

    #[test]
    fn one_interrupted_run_does_not_flip_the_choice_and_a_lasting_change_does() {
        let mut c = Chooser::default();
        // The pool at 10 µs against 15 µs on the calling thread; then one pool run of 200 µs
        // (a preempted worker): counted as 20 µs, so the pool stays the faster.
        picks(&mut c, 4, 10_000, 15_000);
        c.record(true, 10_000); // right after the calling thread: not kept
        c.record(true, 200_000);
        assert_eq!(c.pool_ns, 12_500, "counted as twice the smoothed time");
        assert!(c.pool_ns < c.inline_ns);
        assert!(c.pool());
        // The pool's runs stay at 200 µs: within a few runs the calling thread is chosen.
        let modes = picks(&mut c, 8, 200_000, 15_000);
        assert!(!modes[4..].iter().any(|&pool| pool), "{modes:?}");
    }

    /// Runs where the first run in a mode after the other mode is slow (parked workers, or the
    /// systems' data in the other cores' caches) and later ones are not.
    fn picks_with_switch_cost(c: &mut Chooser, runs: usize, costs: [u64; 4]) -> Vec<bool> {
        let [pool_cold, pool_warm, inline_cold, inline_warm] = costs;
        let mut last = None;
        (0..runs)
            .map(|_| {
                let pool = c.pool();
                let ns = match (pool, last == Some(pool)) {
                    (true, false) => pool_cold,
                    (true, true) => pool_warm,
                    (false, false) => inline_cold,
                    (false, true) => inline_warm,
                };
                last = Some(pool);
                c.record(pool, ns);
                pool
            })
            .collect()
    }

    #[test]
    fn a_run_after_the_other_mode_is_not_measured() {
        // Cold pool runs wait for parked workers (200 µs); warm ones take 5 µs against 7 µs on
        // the calling thread: the pool for good, but for the first two runs on the calling
        // thread and one try, after which the tries' cost (a cold pool run each) spaces them
        // to the longest.
        let mut c = Chooser::default();
        let modes = picks_with_switch_cost(&mut c, 64, [200_000, 5_000, 7_000, 7_000]);
        let inline: Vec<usize> = (0..modes.len()).filter(|&i| !modes[i]).collect();
        assert_eq!(inline[..2], [2, 3], "{modes:?}");
        assert_eq!(inline.len(), 4, "{modes:?}");
        assert_eq!(c.probe_every, Chooser::PROBE_EVERY_MAX);
        // The other way round: a run on the calling thread after pool runs finds the systems'
        // data in the workers' caches (8.2 µs), later ones do not (4.8 µs), and the pool takes
        // 5.6 µs warm: the calling thread for good. Judged by its first runs, it would lose.
        let mut c = Chooser::default();
        let modes = picks_with_switch_cost(&mut c, 600, [25_000, 5_600, 8_200, 4_800]);
        let tail = &modes[100..];
        assert!(
            pooled(tail).len() <= 2 * (tail.len() / Chooser::PROBE_EVERY as usize),
            "{modes:?}"
        );
        assert!(c.inline_ns < c.pool_ns);
        // Each try costs a cold pool run, a warm one and a cold run back (25 + 5.6 + 8.2 µs),
        // 24.4 µs more than three runs on the calling thread: tries 162 runs apart.
        assert_eq!(c.probe_every, 162);
        assert!(
            pooled(tail).len() <= 2 * tail.len().div_ceil(162),
            "{modes:?}"
        );
    }
}
