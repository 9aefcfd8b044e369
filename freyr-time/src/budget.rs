//! Work budgets: incremental jobs advanced by a fixed number of work units
//! per tick, so they finish on the same tick on every machine.
//!
//! A budget measured in milliseconds is never deterministic: how much work
//! fits in 4 ms depends on the CPU. A budget in *work units* (nodes
//! expanded, cells flooded, agents planned) is: the job keeps its state (an
//! open list, a partial plan) between ticks and does exactly `N` units per
//! tick, however long they take. The cost moves to frame time, which the
//! fixed-step loop absorbs. No threads, no stalls.

use core::any::Any;
use core::fmt;
use core::num::NonZeroU64;
use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};

use crate::pool_job::{JobPanic, panic_message};
use freyr_sched::keep_first;

/// The work units a job may still spend this tick. A job calls
/// [`try_spend`](Self::try_spend) before each unit of work.
///
/// # Examples
///
/// ```
/// let mut budget = freyr::time::budget::WorkBudget::new(2);
/// assert!(budget.try_spend());
/// assert!(budget.try_spend());
/// assert!(!budget.try_spend());
/// assert!(budget.is_exhausted());
/// assert_eq!(budget.spent(), 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkBudget {
    granted: u64,
    left: u64,
}

impl WorkBudget {
    /// A budget of `units`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(freyr::time::budget::WorkBudget::new(5).remaining(), 5);
    /// ```
    #[must_use]
    pub fn new(units: u64) -> Self {
        WorkBudget {
            granted: units,
            left: units,
        }
    }

    /// Spends one unit if one is left; returns whether it did.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut budget = freyr::time::budget::WorkBudget::new(1);
    /// assert!(budget.try_spend());
    /// assert!(!budget.try_spend());
    /// ```
    pub fn try_spend(&mut self) -> bool {
        if self.left == 0 {
            return false;
        }
        self.left -= 1;
        true
    }

    /// Units left.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut budget = freyr::time::budget::WorkBudget::new(3);
    /// budget.try_spend();
    /// assert_eq!(budget.remaining(), 2);
    /// ```
    #[must_use]
    pub fn remaining(&self) -> u64 {
        self.left
    }

    /// Units spent so far.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut budget = freyr::time::budget::WorkBudget::new(3);
    /// budget.try_spend();
    /// assert_eq!(budget.spent(), 1);
    /// ```
    #[must_use]
    pub fn spent(&self) -> u64 {
        self.granted - self.left
    }

    /// Whether no unit is left.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(freyr::time::budget::WorkBudget::new(0).is_exhausted());
    /// ```
    #[must_use]
    pub fn is_exhausted(&self) -> bool {
        self.left == 0
    }
}

/// What an [`Incremental::advance`] call achieved.
///
/// # Examples
///
/// ```
/// use freyr::time::budget::Progress;
/// let p: Progress<u8> = Progress::Done(3);
/// assert_eq!(p.done(), Some(3));
/// assert_eq!(Progress::<u8>::Pending.done(), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress<T> {
    /// The budget ran out first; call again on a later tick.
    Pending,
    /// The job finished with this output.
    Done(T),
}

impl<T> Progress<T> {
    /// The output, if done.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(freyr::time::budget::Progress::Done("x").done(), Some("x"));
    /// ```
    pub fn done(self) -> Option<T> {
        match self {
            Progress::Pending => None,
            Progress::Done(value) => Some(value),
        }
    }
}

/// A job time-sliced by work units: it keeps its state between calls and
/// does exactly as much work per call as the budget allows.
///
/// Contract of [`advance`](Self::advance): spend one unit of `budget`
/// ([`WorkBudget::try_spend`]) before each unit of work; return
/// [`Progress::Done`] when finished, or [`Progress::Pending`] *only* once the
/// budget is exhausted (so a job is advanced by exactly `N` units per tick
/// until its last one). The output must depend only on the job's inputs,
/// never on how its work was split into calls. [`advance_by`] checks the
/// exhaustion rule.
///
/// # Examples
///
/// ```
/// use freyr::time::budget::{Incremental, Progress, WorkBudget, advance_by};
///
/// /// Sums 1..=n, one addition per unit.
/// struct SumTo { next: u64, n: u64, sum: u64 }
/// impl Incremental for SumTo {
///     type Output = u64;
///     fn advance(&mut self, budget: &mut WorkBudget) -> Progress<u64> {
///         while self.next <= self.n {
///             if !budget.try_spend() {
///                 return Progress::Pending;
///             }
///             self.sum += self.next;
///             self.next += 1;
///         }
///         Progress::Done(self.sum)
///     }
/// }
/// let mut job = SumTo { next: 1, n: 10, sum: 0 };
/// assert_eq!(advance_by(&mut job, 4), (Progress::Pending, 4));
/// assert_eq!(advance_by(&mut job, 4), (Progress::Pending, 4));
/// assert_eq!(advance_by(&mut job, 4), (Progress::Done(55), 2));
/// ```
pub trait Incremental {
    /// What the finished job produces.
    type Output;

    /// Does work, one unit of `budget` per unit of work, until finished or
    /// out of budget.
    fn advance(&mut self, budget: &mut WorkBudget) -> Progress<Self::Output>;
}

/// Advances `job` by a budget of `units`; returns its progress and the units
/// it spent.
///
/// # Panics
///
/// If the job returns [`Progress::Pending`] with units left: that breaks
/// [`Incremental`]'s contract (its finishing tick would no longer be a
/// function of the budget).
///
/// # Examples
///
/// ```
/// use freyr::time::budget::{Incremental, Progress, WorkBudget, advance_by};
/// struct Lazy;
/// impl Incremental for Lazy {
///     type Output = ();
///     fn advance(&mut self, _: &mut WorkBudget) -> Progress<()> {
///         Progress::Pending // gives up without spending: a contract breach
///     }
/// }
/// let caught = std::panic::catch_unwind(|| advance_by(&mut Lazy, 3));
/// assert!(caught.is_err());
/// ```
pub fn advance_by<J: Incremental + ?Sized>(job: &mut J, units: u64) -> (Progress<J::Output>, u64) {
    let mut budget = WorkBudget::new(units);
    let progress = job.advance(&mut budget);
    if let Some(breach) = contract_breach(&progress, &budget) {
        panic!("{breach}");
    }
    (progress, budget.spent())
}

/// The message of a `Pending` returned with units left, if that is what `progress` is.
fn contract_breach<T>(progress: &Progress<T>, budget: &WorkBudget) -> Option<String> {
    (matches!(progress, Progress::Pending) && !budget.is_exhausted()).then(|| {
        format!(
            "freyr: Incremental::advance returned Pending with {} of {} units unspent; a job \
             must spend its whole budget (WorkBudget::try_spend before each unit) or finish",
            budget.remaining(),
            budget.granted
        )
    })
}

/// A budget of 0 units per tick was asked for.
///
/// # Examples
///
/// ```
/// use freyr::time::budget::{BudgetQueue, ZeroBudget};
/// struct Never;
/// impl freyr::time::budget::Incremental for Never {
///     type Output = ();
///     fn advance(&mut self, _: &mut freyr::time::budget::WorkBudget) -> freyr::time::budget::Progress<()> {
///         freyr::time::budget::Progress::Done(())
///     }
/// }
/// assert_eq!(BudgetQueue::<Never>::new(0).unwrap_err(), ZeroBudget);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZeroBudget;

impl fmt::Display for ZeroBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a work budget needs at least 1 unit per tick (got 0, so no job would ever \
             finish)",
        )
    }
}

impl std::error::Error for ZeroBudget {}

/// What one [`BudgetQueue::tick`] did.
///
/// # Examples
///
/// ```
/// let work = freyr::time::budget::TickWork::default();
/// assert_eq!((work.spent, work.finished, work.panicked), (0, 0, 0));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickWork {
    /// Units spent (the per-tick budget unless the queue ran dry).
    pub spent: u64,
    /// Jobs finished.
    pub finished: u64,
    /// Jobs removed because their step panicked (see [`BudgetQueue::tick`]).
    pub panicked: u64,
}

/// Incremental jobs sharing a budget of `N` units per tick, in FIFO order:
/// each tick the oldest job gets the budget first; when it finishes, the
/// rest of the budget flows to the next one. Jobs therefore finish on a tick
/// that depends only on the jobs and `N`.
///
/// # Examples
///
/// ```
/// use freyr::time::budget::{BudgetQueue, Incremental, Progress, WorkBudget};
/// /// Needs `0` units of work.
/// struct Chores(u64);
/// impl Incremental for Chores {
///     type Output = &'static str;
///     fn advance(&mut self, budget: &mut WorkBudget) -> Progress<&'static str> {
///         while self.0 > 0 {
///             if !budget.try_spend() {
///                 return Progress::Pending;
///             }
///             self.0 -= 1;
///         }
///         Progress::Done("done")
///     }
/// }
/// let mut queue = BudgetQueue::new(5).unwrap();
/// let a = queue.push(Chores(7));
/// let b = queue.push(Chores(2));
/// let mut finished = Vec::new();
/// queue.tick(|id, _| finished.push((0, id)));
/// queue.tick(|id, _| finished.push((1, id)));
/// // a: 5 units on tick 0 and 2 on tick 1; b: 2 units on tick 1.
/// assert_eq!(finished, [(1, a), (1, b)]);
/// assert!(queue.is_empty());
/// ```
pub struct BudgetQueue<J: Incremental> {
    per_tick: NonZeroU64,
    jobs: VecDeque<(u64, J)>,
    next_id: u64,
    spent: u64,
    /// Jobs removed because their step panicked, until [`take_failed`](Self::take_failed).
    failed: Vec<(u64, JobPanic)>,
}

impl<J: Incremental> BudgetQueue<J> {
    /// A queue that spends `per_tick` units per [`tick`](Self::tick).
    ///
    /// # Errors
    ///
    /// [`ZeroBudget`] if `per_tick` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct J;
    /// # impl freyr::time::budget::Incremental for J { type Output = ();
    /// #     fn advance(&mut self, _: &mut freyr::time::budget::WorkBudget) -> freyr::time::budget::Progress<()> {
    /// #         freyr::time::budget::Progress::Done(()) } }
    /// let queue = freyr::time::budget::BudgetQueue::<J>::new(500).unwrap();
    /// assert_eq!(queue.per_tick(), 500);
    /// ```
    pub fn new(per_tick: u64) -> Result<Self, ZeroBudget> {
        Ok(BudgetQueue {
            per_tick: NonZeroU64::new(per_tick).ok_or(ZeroBudget)?,
            jobs: VecDeque::new(),
            next_id: 0,
            spent: 0,
            failed: Vec::new(),
        })
    }

    /// Queues `job` behind the others; returns its id (0, 1, 2, … in push order).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct J;
    /// # impl freyr::time::budget::Incremental for J { type Output = ();
    /// #     fn advance(&mut self, _: &mut freyr::time::budget::WorkBudget) -> freyr::time::budget::Progress<()> {
    /// #         freyr::time::budget::Progress::Done(()) } }
    /// let mut queue = freyr::time::budget::BudgetQueue::new(1).unwrap();
    /// assert_eq!(queue.push(J), 0);
    /// assert_eq!(queue.push(J), 1);
    /// assert_eq!(queue.len(), 2);
    /// ```
    pub fn push(&mut self, job: J) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.jobs.push_back((id, job));
        id
    }

    /// Spends one tick's budget on the queue, oldest job first, calling
    /// `finished(id, output)` for every job that finishes, in order.
    ///
    /// A job whose step panics (or breaks [`Incremental`]'s contract, see
    /// [`advance_by`]) is *removed* from the queue: the units it spent
    /// before panicking count in [`TickWork::spent`] and
    /// [`total_spent`](Self::total_spent), it is recorded with its panic
    /// message for [`take_failed`](Self::take_failed) and counted in
    /// [`TickWork::panicked`], and the rest of the tick's budget flows to the
    /// jobs behind it, as if it had finished. So a job that panics on every
    /// step can never hold the queue up, and which jobs run on which tick
    /// still depends only on the jobs and the budget.
    ///
    /// # Panics
    ///
    /// Once the tick's budget is spent (or the queue ran dry), re-raises the
    /// first panic of the tick: of a job's step, of a job's `Drop` when it is
    /// removed, of `finished`, or the contract breach of a job that returned
    /// [`Progress::Pending`] with units left. A panicking call never stops
    /// the tick; the queue's state (jobs removed, units spent) is already
    /// updated when the panic is re-raised. Later panics of the tick are
    /// dropped with [`drop_payload`](freyr_sched::drop_payload).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct J(u64);
    /// # impl freyr::time::budget::Incremental for J { type Output = u64;
    /// #     fn advance(&mut self, b: &mut freyr::time::budget::WorkBudget) -> freyr::time::budget::Progress<u64> {
    /// #         while self.0 > 0 { if !b.try_spend() { return freyr::time::budget::Progress::Pending; } self.0 -= 1; }
    /// #         freyr::time::budget::Progress::Done(7) } }
    /// let mut queue = freyr::time::budget::BudgetQueue::new(3).unwrap();
    /// queue.push(J(4));
    /// assert_eq!(queue.tick(|_, _| {}).spent, 3);
    /// let work = queue.tick(|_, out| assert_eq!(out, 7));
    /// assert_eq!((work.spent, work.finished), (1, 1));
    /// ```
    ///
    /// A job that panics is removed; the job behind it gets the rest of the budget:
    ///
    /// ```
    /// use freyr::time::budget::{BudgetQueue, Incremental, Progress, WorkBudget};
    /// enum Job { Crash, Count(u64) }
    /// impl Incremental for Job {
    ///     type Output = ();
    ///     fn advance(&mut self, budget: &mut WorkBudget) -> Progress<()> {
    ///         match self {
    ///             Job::Crash => {
    ///                 budget.try_spend();
    ///                 panic!("corrupt plan");
    ///             }
    ///             Job::Count(n) => {
    ///                 while *n > 0 {
    ///                     if !budget.try_spend() { return Progress::Pending; }
    ///                     *n -= 1;
    ///                 }
    ///                 Progress::Done(())
    ///             }
    ///         }
    ///     }
    /// }
    /// let mut queue = BudgetQueue::new(5).unwrap();
    /// let crash = queue.push(Job::Crash);
    /// let count = queue.push(Job::Count(3));
    /// let mut done = Vec::new();
    /// let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
    ///     queue.tick(|id, ()| done.push(id))
    /// }));
    /// assert!(caught.is_err()); // re-raised once the tick's work is done
    /// assert_eq!(done, [count]);
    /// assert_eq!(queue.total_spent(), 4); // 1 by the crash, 3 by the count
    /// let failed = queue.take_failed();
    /// assert_eq!(failed[0].0, crash);
    /// assert_eq!(failed[0].1.message(), "corrupt plan");
    /// assert!(queue.is_empty());
    /// ```
    pub fn tick(&mut self, mut finished: impl FnMut(u64, J::Output)) -> TickWork {
        let mut work = TickWork::default();
        let mut left = self.per_tick.get();
        let mut first_panic: Option<Box<dyn Any + Send>> = None;
        while left > 0 {
            let Some((id, job)) = self.jobs.front_mut() else {
                break;
            };
            let id = *id;
            let mut budget = WorkBudget::new(left);
            let step = panic::catch_unwind(AssertUnwindSafe(|| job.advance(&mut budget)));
            // Exact even when the step panicked: the budget saw every unit spent.
            let spent = budget.spent();
            left -= spent;
            work.spent += spent;
            let step = match step {
                Ok(progress) => match contract_breach(&progress, &budget) {
                    Some(breach) => Err(Box::new(breach) as Box<dyn Any + Send>),
                    None => Ok(progress),
                },
                Err(payload) => Err(payload),
            };
            match step {
                Ok(Progress::Pending) => break,
                Ok(Progress::Done(output)) => {
                    self.jobs.pop_front();
                    work.finished += 1;
                    let call = panic::catch_unwind(AssertUnwindSafe(|| finished(id, output)));
                    if let Err(payload) = call {
                        keep_first(&mut first_panic, payload);
                    }
                }
                Err(payload) => {
                    let removed = self.jobs.pop_front();
                    work.panicked += 1;
                    self.failed
                        .push((id, JobPanic::new(panic_message(&*payload))));
                    keep_first(&mut first_panic, payload);
                    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| drop(removed))) {
                        keep_first(&mut first_panic, payload);
                    }
                }
            }
        }
        self.spent += work.spent;
        if let Some(payload) = first_panic {
            panic::resume_unwind(payload);
        }
        work
    }

    /// Takes the record of the jobs [`tick`](Self::tick) removed because
    /// their step panicked: `(id, panic)` in the order they failed, since
    /// the last call.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct J;
    /// # impl freyr::time::budget::Incremental for J { type Output = ();
    /// #     fn advance(&mut self, _: &mut freyr::time::budget::WorkBudget) -> freyr::time::budget::Progress<()> {
    /// #         freyr::time::budget::Progress::Done(()) } }
    /// let mut queue = freyr::time::budget::BudgetQueue::<J>::new(1).unwrap();
    /// assert!(queue.take_failed().is_empty());
    /// ```
    pub fn take_failed(&mut self) -> Vec<(u64, JobPanic)> {
        core::mem::take(&mut self.failed)
    }

    /// Units per tick.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct J;
    /// # impl freyr::time::budget::Incremental for J { type Output = ();
    /// #     fn advance(&mut self, _: &mut freyr::time::budget::WorkBudget) -> freyr::time::budget::Progress<()> {
    /// #         freyr::time::budget::Progress::Done(()) } }
    /// assert_eq!(freyr::time::budget::BudgetQueue::<J>::new(8).unwrap().per_tick(), 8);
    /// ```
    #[must_use]
    pub fn per_tick(&self) -> u64 {
        self.per_tick.get()
    }

    /// Jobs not finished yet.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct J;
    /// # impl freyr::time::budget::Incremental for J { type Output = ();
    /// #     fn advance(&mut self, _: &mut freyr::time::budget::WorkBudget) -> freyr::time::budget::Progress<()> {
    /// #         freyr::time::budget::Progress::Done(()) } }
    /// assert_eq!(freyr::time::budget::BudgetQueue::<J>::new(8).unwrap().len(), 0);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether no job is queued.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct J;
    /// # impl freyr::time::budget::Incremental for J { type Output = ();
    /// #     fn advance(&mut self, _: &mut freyr::time::budget::WorkBudget) -> freyr::time::budget::Progress<()> {
    /// #         freyr::time::budget::Progress::Done(()) } }
    /// assert!(freyr::time::budget::BudgetQueue::<J>::new(8).unwrap().is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Units spent over the queue's life, including those spent by steps
    /// that panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct J;
    /// # impl freyr::time::budget::Incremental for J { type Output = ();
    /// #     fn advance(&mut self, b: &mut freyr::time::budget::WorkBudget) -> freyr::time::budget::Progress<()> {
    /// #         b.try_spend(); freyr::time::budget::Progress::Done(()) } }
    /// let mut queue = freyr::time::budget::BudgetQueue::new(8).unwrap();
    /// queue.push(J);
    /// queue.tick(|_, _| {});
    /// assert_eq!(queue.total_spent(), 1);
    /// ```
    #[must_use]
    pub fn total_spent(&self) -> u64 {
        self.spent
    }
}

impl<J: Incremental> fmt::Debug for BudgetQueue<J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BudgetQueue")
            .field("per_tick", &self.per_tick)
            .field("jobs", &self.jobs.len())
            .field("spent", &self.spent)
            .field("failed", &self.failed.len())
            .finish()
    }
}

#[cfg(test)]
mod tests;
