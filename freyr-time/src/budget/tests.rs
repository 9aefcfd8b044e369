//! Unit tests of work budgets and the budget queue.

use super::*;

/// Needs `.0` units; records the budget of every call.
struct Units(u64, Vec<u64>);

impl Incremental for Units {
    type Output = Vec<u64>;
    fn advance(&mut self, budget: &mut WorkBudget) -> Progress<Vec<u64>> {
        self.1.push(budget.remaining());
        while self.0 > 0 {
            if !budget.try_spend() {
                return Progress::Pending;
            }
            self.0 -= 1;
        }
        Progress::Done(core::mem::take(&mut self.1))
    }
}

#[test]
fn every_tick_spends_exactly_the_budget_while_work_remains() {
    let mut queue = BudgetQueue::new(10).unwrap();
    for need in [25, 3, 14] {
        queue.push(Units(need, Vec::new()));
    }
    let mut spent = Vec::new();
    let mut calls = Vec::new();
    while !queue.is_empty() {
        spent.push(queue.tick(|id, budgets| calls.push((id, budgets))).spent);
    }
    // 42 units: 10 + 10 + 10 + 10 + 2.
    assert_eq!(spent, [10, 10, 10, 10, 2]);
    assert_eq!(
        calls,
        [(0, vec![10, 10, 10]), (1, vec![5]), (2, vec![2, 10, 10])]
    );
}

#[test]
fn the_finishing_tick_is_a_function_of_work_and_budget() {
    for per_tick in 1..=12u64 {
        let mut queue = BudgetQueue::new(per_tick).unwrap();
        queue.push(Units(30, Vec::new()));
        let mut ticks = 0;
        while !queue.is_empty() {
            queue.tick(|_, _| {});
            ticks += 1;
        }
        assert_eq!(ticks, 30u64.div_ceil(per_tick), "budget {per_tick}");
    }
}

#[test]
#[should_panic(expected = "units unspent")]
fn pending_with_budget_left_is_a_contract_breach() {
    struct Quits;
    impl Incremental for Quits {
        type Output = ();
        fn advance(&mut self, budget: &mut WorkBudget) -> Progress<()> {
            budget.try_spend();
            Progress::Pending
        }
    }
    let mut queue = BudgetQueue::new(4).unwrap();
    queue.push(Quits);
    queue.tick(|_, _| {});
}

#[test]
fn zero_budget_is_rejected_with_a_reason() {
    let err = BudgetQueue::<Units>::new(0).unwrap_err();
    assert!(err.to_string().contains("at least 1 unit"));
}
