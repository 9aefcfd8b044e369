//! `BudgetQueue::tick` with a job whose step panics every time: the job is removed (dropped
//! exactly once), the jobs behind it get the rest of the budget, the units the panicking step
//! spent are counted exactly, and the first panic is re-raised once the tick's work is done.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr_time::{BudgetQueue, Incremental, Progress, WorkBudget};

/// Spends `spend_then_panic` units and panics, every call; or needs `.need` units and finishes.
struct Job {
    need: u64,
    spend_then_panic: Option<u64>,
    drops: Arc<AtomicUsize>,
}

impl Incremental for Job {
    type Output = u64;
    fn advance(&mut self, budget: &mut WorkBudget) -> Progress<u64> {
        if let Some(units) = self.spend_then_panic {
            for _ in 0..units {
                budget.try_spend();
            }
            panic!("step panicked after {units} units");
        }
        while self.need > 0 {
            if !budget.try_spend() {
                return Progress::Pending;
            }
            self.need -= 1;
        }
        Progress::Done(budget.spent())
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn job(need: u64, spend_then_panic: Option<u64>, drops: &Arc<AtomicUsize>) -> Job {
    Job {
        need,
        spend_then_panic,
        drops: Arc::clone(drops),
    }
}

#[test]
fn a_job_that_always_panics_is_removed_and_the_jobs_behind_it_run() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut queue = BudgetQueue::new(10).unwrap();
    let crash = queue.push(job(0, Some(3), &drops));
    let a = queue.push(job(4, None, &drops));
    let b = queue.push(job(5, None, &drops));
    let mut finished = Vec::new();
    let caught = catch_unwind(AssertUnwindSafe(|| {
        queue.tick(|id, _| finished.push(id));
    }))
    .unwrap_err();
    assert_eq!(
        caught.downcast_ref::<String>().map(String::as_str),
        Some("step panicked after 3 units")
    );
    // The crash spent 3 of the 10 units, then a took 4 and b 3 (of its 5).
    assert_eq!(finished, [a]);
    assert_eq!(
        queue.total_spent(),
        10,
        "units spent by the panicking step count"
    );
    assert_eq!(queue.len(), 1);
    let work = queue.tick(|id, _| finished.push(id));
    assert_eq!((work.spent, work.finished), (2, 1));
    assert_eq!(finished, [a, b]);
    assert_eq!(queue.total_spent(), 12);
    assert!(queue.is_empty());
    // Every job dropped exactly once: the crash when it was removed, a and b when they finished.
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    assert_ne!(crash, a);
}

#[test]
fn failed_jobs_are_reported_with_their_panic() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut queue = BudgetQueue::new(4).unwrap();
    let first = queue.push(job(0, Some(1), &drops));
    let ok = queue.push(job(1, None, &drops));
    let second = queue.push(job(0, Some(0), &drops));
    let mut finished = Vec::new();
    let caught = catch_unwind(AssertUnwindSafe(|| queue.tick(|id, _| finished.push(id))));
    assert!(caught.is_err());
    assert_eq!(finished, [ok]);
    let failed: Vec<(u64, String)> = queue
        .take_failed()
        .into_iter()
        .map(|(id, p)| (id, p.message().to_owned()))
        .collect();
    assert_eq!(
        failed,
        [
            (first, String::from("step panicked after 1 units")),
            (second, String::from("step panicked after 0 units"))
        ]
    );
    assert!(queue.take_failed().is_empty());
    assert_eq!(queue.total_spent(), 2);
    assert_eq!(drops.load(Ordering::SeqCst), 3);
}

#[test]
fn a_panicking_finished_callback_does_not_stop_the_tick() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut queue = BudgetQueue::new(6).unwrap();
    for _ in 0..3 {
        queue.push(job(2, None, &drops));
    }
    let mut seen = Vec::new();
    let caught = catch_unwind(AssertUnwindSafe(|| {
        queue.tick(|id, _| {
            seen.push(id);
            panic!("finished({id})");
        })
    }))
    .unwrap_err();
    assert_eq!(
        caught.downcast_ref::<String>().map(String::as_str),
        Some("finished(0)")
    );
    assert_eq!(seen, [0, 1, 2]);
    assert!(queue.is_empty());
    assert_eq!(queue.total_spent(), 6);
}
