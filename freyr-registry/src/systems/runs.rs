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
/// wall time of recent runs in each mode and takes the faster, trying the other again every
/// [`Chooser::PROBE_EVERY`] runs so a segment whose systems grow is spread again.
///
/// A pool run right after runs on the calling thread alone finds the workers parked, as no
/// pool run after another does when the ticks follow each other closely: its time is not
/// kept, and the run after it goes over the pool too and is measured. A segment thus goes
/// over the pool when that is faster in the steady state, not only when it is faster from
/// cold; where every run finds the workers parked (one tick per 60 Hz frame), the measured
/// run finds them parked too, and the choice stays right. Either way the world is the same:
/// the graph orders every conflicting pair, and commands and events apply in registration
/// order.
#[derive(Default)]
pub(crate) struct Chooser {
    /// Smoothed wall time (ns) of runs on the calling thread; 0 until one is measured.
    inline_ns: u64,
    /// Smoothed wall time (ns) of runs over the pool; 0 until one is measured.
    pool_ns: u64,
    /// Runs since the slower mode was last tried.
    since_probe: u32,
    /// Whether the last run went over the pool.
    last_pool: bool,
    /// The next run goes over the pool: the last one did, after runs on the calling thread,
    /// and its time was not kept.
    measure_pool: bool,
}

impl Chooser {
    /// How often the slower mode is tried again.
    pub(crate) const PROBE_EVERY: u32 = 16;

    /// Whether the next run goes over the pool: first the pool (twice: the first run is not
    /// measured), then the calling thread, then the faster of the two, with a probe of the
    /// other every `PROBE_EVERY` runs (two runs when the pool is probed).
    pub(crate) fn pool(&mut self) -> bool {
        if core::mem::take(&mut self.measure_pool) {
            return true;
        }
        if self.pool_ns == 0 {
            return true;
        }
        if self.inline_ns == 0 {
            return false;
        }
        let pool_faster = self.pool_ns <= self.inline_ns;
        self.since_probe += 1;
        if self.since_probe >= Self::PROBE_EVERY {
            self.since_probe = 0;
            return !pool_faster;
        }
        pool_faster
    }

    /// Records a run's wall time: a quarter weight for the new run, counted at most twice the
    /// smoothed time, so that one run the machine interrupted (a preempted worker, a page fault)
    /// cannot flip the choice on its own, while a lasting change still moves the time within a
    /// few runs. The time of a pool run after a run on the calling thread (or of the first run)
    /// is not kept: see [`Chooser`].
    pub(crate) fn record(&mut self, pool: bool, nanos: u64) {
        let from_cold = pool && !self.last_pool;
        self.last_pool = pool;
        if from_cold {
            self.measure_pool = true;
            return;
        }
        let slot = if pool {
            &mut self.pool_ns
        } else {
            &mut self.inline_ns
        };
        let nanos = nanos.max(1);
        *slot = if *slot == 0 {
            nanos
        } else {
            (*slot * 3 + nanos.min(*slot * 2)) / 4
        };
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

    #[test]
    fn the_pool_first_then_one_thread_then_the_faster_with_probes() {
        let mut c = Chooser::default();
        let p = Chooser::PROBE_EVERY as usize;
        // The pool is slower: two pool runs (the first not measured), one on the calling
        // thread, then the calling thread but for the probes, each two pool runs in a row.
        let modes = picks(&mut c, 3 + 4 * p, 50_000, 30_000);
        assert_eq!(modes[..3], [true, true, false]);
        let pooled: Vec<usize> = (3..modes.len()).filter(|&i| modes[i]).collect();
        assert_eq!(
            pooled.len(),
            2 * (4 * p / (p + 1)),
            "a two-run probe after every {p} runs on the calling thread: {pooled:?}"
        );
        assert!(pooled.chunks(2).all(|pair| pair[1] == pair[0] + 1));
        assert!(
            pooled
                .chunks(2)
                .collect::<Vec<_>>()
                .windows(2)
                .all(|w| w[1][0] - w[0][0] == p + 1)
        );
        // The systems grow: the pool gets faster than one thread, and the chooser follows
        // once the probes have measured it.
        let modes = picks(&mut c, 8 * p, 10_000, 60_000);
        assert!(modes[6 * p..].iter().filter(|&&pool| pool).count() >= 2 * p - 2);
        // A single slow run does not flip the choice at once.
        let mut c = Chooser::default();
        picks(&mut c, 3, 10_000, 30_000);
        c.record(true, 40_000);
        assert!(c.pool());
    }

    #[test]
    fn one_interrupted_run_does_not_flip_the_choice_and_a_lasting_change_does() {
        let mut c = Chooser::default();
        // The pool at 10 µs against 15 µs on the calling thread; then one pool run of 200 µs
        // (a preempted worker): counted as 20 µs, so the pool stays the faster.
        picks(&mut c, 3, 10_000, 15_000);
        c.record(true, 10_000); // right after the calling thread: not kept
        c.record(true, 200_000);
        assert_eq!(c.pool_ns, 12_500, "counted as twice the smoothed time");
        assert!(c.pool_ns < c.inline_ns);
        assert!(c.pool());
        // The pool's runs stay at 200 µs: within a few runs the calling thread is chosen.
        let modes = picks(&mut c, 8, 200_000, 15_000);
        assert!(!modes[4..].iter().any(|&pool| pool), "{modes:?}");
    }

    #[test]
    fn a_pool_run_after_the_calling_thread_is_not_measured() {
        let mut c = Chooser::default();
        // Cold: the first pool run waits for parked workers and is slow; warm runs are fast.
        let mut last_pool = false;
        let modes: Vec<bool> = (0..64)
            .map(|_| {
                let pool = c.pool();
                let ns = match (pool, last_pool) {
                    (true, false) => 200_000,
                    (true, true) => 5_000,
                    (false, _) => 7_000,
                };
                last_pool = pool;
                c.record(pool, ns);
                pool
            })
            .collect();
        // Only the one run on the calling thread that measures it; then the pool for good,
        // since no run after the first finds the workers parked.
        let inline: Vec<usize> = (0..modes.len()).filter(|&i| !modes[i]).collect();
        assert_eq!(inline[0], 2, "{modes:?}");
        assert!(inline.len() <= 5, "{inline:?}");
    }
}
