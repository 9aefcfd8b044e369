//! Helpers shared by freyr-sched's behaviour tests.

#![allow(dead_code)] // each test binary uses a different subset

use std::sync::atomic::{AtomicU32, Ordering};

/// More workers than this machine has cores, so workers are preempted mid-protocol.
pub(crate) const OVERSUBSCRIBED: usize = 8;

/// One run counter per task index: proves exactly-once delivery.
pub(crate) struct Tally(pub Vec<AtomicU32>);

impl Tally {
    /// A tally of `len` indices, all at zero.
    pub(crate) fn new(len: usize) -> Tally {
        Tally((0..len).map(|_| AtomicU32::new(0)).collect())
    }

    /// Counts one run of `index`.
    pub(crate) fn hit(&self, index: usize) {
        self.0[index].fetch_add(1, Ordering::Relaxed);
    }

    /// How many times `index` ran.
    pub(crate) fn count(&self, index: usize) -> u32 {
        self.0[index].load(Ordering::Relaxed)
    }

    /// Panics naming the first index that did not run exactly once, and how many did not.
    #[track_caller]
    pub(crate) fn assert_exactly_once(&self) {
        let wrong: Vec<(usize, u32)> = self
            .0
            .iter()
            .enumerate()
            .map(|(i, c)| (i, c.load(Ordering::Relaxed)))
            .filter(|&(_, c)| c != 1)
            .collect();
        assert!(
            wrong.is_empty(),
            "{} of {} tasks did not run exactly once; first: index {} ran {} times",
            wrong.len(),
            self.0.len(),
            wrong[0].0,
            wrong[0].1
        );
    }
}
