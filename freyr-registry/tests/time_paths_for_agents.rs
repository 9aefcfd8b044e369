//! Work budgets through the registry: 200 agents request A* paths, a system advances them by
//! exactly 300 node expansions per tick, and every path lands on the tick its work predicts,
//! whatever the wall time (random sleeps in parallel work) and the worker count.

mod time_common;

use std::sync::Arc;

use freyr_registry::{Entity, Phase, Registry};
use freyr_time::{BudgetQueue, GridPathSearch, Progress, advance_by};
use time_common::{Agent, PathRequest, Route, mix, pause, test_grid};

const AGENTS: u32 = 200;
const BUDGET: u64 = 300;

fn endpoints(i: u32) -> Agent {
    let h = mix(u64::from(i));
    Agent {
        cell: ((h % 7) as u32, ((h >> 8) % 24) as u32),
        goal: (17 + ((h >> 16) % 7) as u32, ((h >> 24) % 24) as u32),
    }
}

/// Runs until every agent has a route; returns (agent index, route) in spawn order.
fn run(workers: usize) -> Vec<(u32, Route)> {
    let mut r = Registry::with_workers(workers);
    let grid = Arc::new(test_grid());
    let agents: Vec<Entity> = r.spawn_batch((0..AGENTS).map(|i| (endpoints(i), i)));
    let mut queue = BudgetQueue::<PathRequest>::new(BUDGET).unwrap();
    let mut requested = false;
    r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        if !requested {
            requested = true;
            let mut wanting = Vec::new();
            r.query::<&Agent>().each(|e, a| wanting.push((e, *a)));
            for (e, a) in wanting {
                queue.push(PathRequest::new(e, &grid, a.cell, a.goal));
            }
        }
        let tick = r.tick();
        let mut done = Vec::new();
        let work = queue.tick(|_, (agent, path)| done.push((agent, path)));
        assert!(
            work.spent == BUDGET || queue.is_empty(),
            "exactly the budget while work remains"
        );
        for (agent, path) in done {
            let path = path.expect("every test endpoint is reachable");
            let route = Route {
                cells: path.cells.len() as u32,
                cost: u32::try_from(path.cost).expect("a 24 x 24 grid's path cost fits a u32"),
                found_at: tick,
            };
            r.insert(agent, (route,)).unwrap();
        }
    });
    // Unrelated parallel work whose wall time varies at random.
    r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        let tick = r.tick();
        r.query::<&u32>().each_async(move |_, &i| {
            if mix(u64::from(i) ^ tick ^ workers as u64).is_multiple_of(50) {
                pause(300);
            }
        });
    });
    while r.query::<&Route>().count() < agents.len() {
        r.update(0.0);
    }
    agents
        .iter()
        .map(|&e| (*r.get::<u32>(e).unwrap(), *r.get::<Route>(e).unwrap()))
        .collect()
}

#[test]
fn every_path_lands_on_the_tick_its_work_predicts_on_every_worker_count() {
    let grid = Arc::new(test_grid());
    // The prediction: all requests queued on tick 0, FIFO, BUDGET expansions per tick, so
    // request k finishes on tick (expansions of requests 0..=k - 1) / BUDGET.
    let mut cumulative = 0;
    let mut predicted = Vec::new();
    for i in 0..AGENTS {
        let a = endpoints(i);
        let mut search = GridPathSearch::new(Arc::clone(&grid), a.cell, a.goal);
        let (progress, _) = advance_by(&mut search, u64::MAX);
        let Progress::Done(Some(path)) = progress else {
            panic!("agent {i} has no path")
        };
        cumulative += search.expanded();
        predicted.push((i, path.cost, (cumulative - 1) / BUDGET));
    }
    let reference = run(1);
    for (&(i, cost, tick), &(j, route)) in predicted.iter().zip(&reference) {
        assert_eq!(i, j);
        assert_eq!(
            u64::from(route.cost),
            cost,
            "agent {i}: the budgeted search finds the optimal path"
        );
        assert_eq!(
            route.found_at, tick,
            "agent {i}: finished on the predicted tick"
        );
    }
    assert!(
        reference.last().unwrap().1.found_at > 10,
        "the work spanned many ticks"
    );
    for workers in [2, 3, 8, 16, 64] {
        assert_eq!(run(workers), reference, "{workers} workers");
    }
}
