//! What a segment of function systems keeps from one run to the next: the per-node counters
//! the executor (`registry::fn_systems`) resets in place instead of allocating each tick, and
//! the timings that choose between running the segment on the calling thread alone and spreading
//! it over the pool.

use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU32};

pub(crate) const SKIPPED: u8 = 0;
pub(crate) const RAN: u8 = 1;
pub(crate) const PANICKED: u8 = 2;

/// What one segment keeps from run to run: the per-node counters, reset in place at the start
/// of each run instead of allocated, and the [`Chooser`].
#[derive(Default)]
pub(crate) struct SegmentRuns {
    pub(crate) left: Vec<AtomicU32>,
    pub(crate) poisoned: Vec<AtomicBool>,
    pub(crate) status: Vec<AtomicU8>,
    /// The nodes with no predecessor, in index order or shuffled (the shuffled-start mode).
    pub(crate) roots: Vec<u32>,
    pub(crate) chooser: Chooser,
}

impl SegmentRuns {
    /// Resets the counters for a run of a segment whose node `v` waits for `preds[v]` nodes:
    /// every node waits for all its predecessors, none is poisoned, none has run; the roots
    /// are listed in index order.
    pub(crate) fn reset(&mut self, preds: &[u32]) {
        let n = preds.len();
        self.left.resize_with(n, || AtomicU32::new(0));
        self.poisoned.resize_with(n, || AtomicBool::new(false));
        self.status.resize_with(n, || AtomicU8::new(SKIPPED));
        for (left, &p) in self.left.iter_mut().zip(preds) {
            *left.get_mut() = p;
        }
        for poisoned in &mut self.poisoned {
            *poisoned.get_mut() = false;
        }
        for status in &mut self.status {
            *status.get_mut() = SKIPPED;
        }
        self.roots.clear();
        self.roots
            .extend((0..n as u32).filter(|&v| preds[v as usize] == 0));
    }

    /// How node `v` ended in the last run: [`SKIPPED`], [`RAN`] or [`PANICKED`].
    pub(crate) fn status(&mut self, v: usize) -> u8 {
        *self.status[v].get_mut()
    }
}

/// Chooses how a segment runs: on the calling thread alone, in a topological order, or spread
/// over the pool. A pool run pays for waking the workers (a system call, then tens of µs
/// before a parked worker runs on a virtual machine) and loses to one thread on a segment of
/// small systems; a segment of heavy disjoint systems gains. The chooser keeps the smoothed
/// wall time of recent runs in each mode and takes the faster, trying the other again every
/// [`Chooser::PROBE_EVERY`] runs so a segment whose systems grow is spread again. Either
/// way the world is the same: the graph orders every conflicting pair, and commands and
/// events apply in registration order.
#[derive(Default)]
pub(crate) struct Chooser {
    /// Smoothed wall time (ns) of runs on the calling thread; 0 until one is measured.
    inline_ns: u64,
    /// Smoothed wall time (ns) of runs over the pool; 0 until one is measured.
    pool_ns: u64,
    /// Runs since the slower mode was last tried.
    since_probe: u32,
}

impl Chooser {
    /// How often the slower mode is tried again.
    pub(crate) const PROBE_EVERY: u32 = 16;

    /// Whether the next run goes over the pool: first the pool, then the calling thread, then
    /// the faster of the two, with a probe of the other every `PROBE_EVERY` runs.
    pub(crate) fn pool(&mut self) -> bool {
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

    /// Records a run's wall time: a quarter weight for the new run.
    pub(crate) fn record(&mut self, pool: bool, nanos: u64) {
        let slot = if pool {
            &mut self.pool_ns
        } else {
            &mut self.inline_ns
        };
        let nanos = nanos.max(1);
        *slot = if *slot == 0 {
            nanos
        } else {
            (*slot * 3 + nanos) / 4
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
        // The pool is slower: after one run of each, the calling thread, but for the probes.
        let modes = picks(&mut c, 2 + 4 * p, 50_000, 30_000);
        assert_eq!(modes[..2], [true, false]);
        let pooled: Vec<usize> = (2..modes.len()).filter(|&i| modes[i]).collect();
        assert_eq!(
            pooled.len(),
            4,
            "one probe of the pool per {p} runs: {pooled:?}"
        );
        assert!(pooled.windows(2).all(|w| w[1] - w[0] == p));
        // The systems grow: the pool gets faster than one thread, and the chooser follows
        // once the probes have measured it.
        let modes = picks(&mut c, 8 * p, 10_000, 60_000);
        assert!(modes[6 * p..].iter().filter(|&&pool| pool).count() >= 2 * p - 2);
        // A single slow run does not flip the choice at once.
        let mut c = Chooser::default();
        picks(&mut c, 2, 10_000, 30_000);
        c.record(true, 40_000);
        assert!(c.pool());
    }
}
