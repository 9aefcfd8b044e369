//! Loom models of freyr-sched's protocol live in `tests/`; build them with
//! `RUSTFLAGS="--cfg freyr_loom"` (see `.ci/loom.sh`). This library holds the
//! helpers the models share. Without the cfg it is empty.
//!
//! `mutants/` holds one patch per mutant: a change to the production sources
//! that breaks one protocol step. `.ci/loom.sh` applies each to a scratch copy
//! of the workspace and requires the model named in the patch to fail.
#![cfg(freyr_loom)]

use std::panic;
use std::sync::Once;

use loom::sync::atomic::{AtomicUsize, Ordering};

/// The payload of panics the models raise on purpose; the panic hook keeps
/// them quiet so a failing model's output shows only real failures.
pub const EXPECTED_PANIC: &str = "freyr-loom: expected panic";

/// Runs `model` under loom for every interleaving within the bounds.
///
/// Bounds come from the environment (`LOOM_MAX_PREEMPTIONS`,
/// `LOOM_MAX_BRANCHES`, ...) as loom reads them; the preemption bound
/// defaults to 2 when unset, so a plain `cargo test` stays fast.
pub fn check<F>(model: F)
where
    F: Fn() + Sync + Send + 'static,
{
    static QUIET: Once = Once::new();
    QUIET.call_once(|| {
        let default_hook = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if info.payload_as_str() != Some(EXPECTED_PANIC) {
                default_hook(info);
            }
        }));
    });
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    let iterations = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&iterations);
    builder.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        model();
    });
    eprintln!(
        "freyr-loom: explored {} interleavings",
        iterations.load(std::sync::atomic::Ordering::Relaxed)
    );
}

/// Checks a model property. A violation aborts the process at once instead
/// of panicking: unwinding out of a loom execution would run the pool's and
/// groups' destructors (joining workers, waiting for counters that a broken
/// protocol never brings to zero) inside a half-torn-down model, which can
/// spin instead of failing. One model runs per process (cargo-nextest), so
/// an abort fails exactly that model.
pub fn require(holds: bool, property: impl FnOnce() -> String) {
    if !holds {
        eprintln!("freyr-loom: model property violated: {}", property());
        std::process::abort();
    }
}

/// One counter per task index: how many times each ran.
pub struct Tally {
    runs: Vec<AtomicUsize>,
}

impl Tally {
    /// `n` counters at zero.
    pub fn new(n: usize) -> Self {
        Tally {
            runs: (0..n).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    /// Records one run of task `index` (a `submit_indexed` task function).
    /// A second run is reported on the spot, as a double run (an RMW reads
    /// the latest count, so this check cannot miss one).
    pub fn hit(&self, index: usize) {
        let before = self.runs[index].fetch_add(1, Ordering::Relaxed);
        require(before == 0, || {
            format!("task {index} ran twice (a task must run exactly once)")
        });
    }

    /// The run counts. Relaxed loads: only the wait's own synchronisation
    /// makes the tasks' increments visible, so a missing happens-before edge
    /// shows up as a stale count.
    pub fn counts(&self) -> Vec<usize> {
        self.runs
            .iter()
            .map(|r| r.load(Ordering::Relaxed))
            .collect()
    }

    /// Asserts that every task ran exactly once, as seen by this thread: a
    /// count of 0 is a task that did not run *or whose run this thread does
    /// not happen-after* (loom lets a relaxed load read a stale value
    /// exactly when no happens-before edge forbids it).
    pub fn assert_each_ran_once(&self) {
        let counts = self.counts();
        require(counts.iter().all(|&c| c == 1), || {
            format!(
                "every task must run exactly once and be seen to have run, got {counts:?} \
                 (0: not run, or its effects not ordered before this point)"
            )
        });
    }
}

/// A `submit_indexed` task body that records its index.
pub fn hit(tally: &Tally, index: usize) {
    tally.hit(index);
}
