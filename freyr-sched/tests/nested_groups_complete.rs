//! Groups nested inside tasks complete, and every task of every level runs exactly once, on an
//! oversubscribed pool: scopes inside scoped tasks, tasks spawning into their own scope, chunk
//! tasks that wait on a group of their own (helping while they wait), `parallel_for` inside
//! `parallel_for`, and independent groups waited on from several threads at once.

mod common;

use std::sync::atomic::Ordering;

use common::{OVERSUBSCRIBED, Tally};
use freyr_sched::{Scope, TaskGroup, ThreadPool};

#[test]
fn scopes_inside_scoped_tasks() {
    const OUTER: usize = 64;
    const INNER: usize = 64;
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let tally = Tally::new(OUTER * INNER);
    let outer_done = Tally::new(OUTER);
    pool.scope(|s| {
        for o in 0..OUTER {
            let (pool, tally, outer_done) = (&pool, &tally, &outer_done);
            s.spawn(move |_| {
                pool.scope(|inner| {
                    for i in 0..INNER {
                        inner.spawn(move |_| tally.hit(o * INNER + i));
                    }
                });
                // The inner scope returned: all of its tasks ran.
                for i in 0..INNER {
                    assert_eq!(tally.0[o * INNER + i].load(Ordering::Relaxed), 1);
                }
                outer_done.hit(o);
            });
        }
    });
    tally.assert_exactly_once();
    outer_done.assert_exactly_once();
}

/// Task `id` of a complete binary tree: tallies itself and spawns its two children into the
/// same scope. The scope's wait must cover tasks spawned by tasks.
fn tree_node<'scope, 'env>(s: &'scope Scope<'scope, 'env>, tally: &'scope Tally, id: usize) {
    tally.hit(id);
    for child in [2 * id + 1, 2 * id + 2] {
        if child < tally.0.len() {
            s.spawn(move |s| tree_node(s, tally, child));
        }
    }
}

#[test]
fn tasks_spawning_into_their_own_scope() {
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let tally = Tally::new((1 << 15) - 1);
    pool.scope(|s| {
        let tally = &tally;
        s.spawn(move |s| tree_node(s, tally, 0));
    });
    tally.assert_exactly_once();
}

struct Outer<'a> {
    pool: &'a ThreadPool,
    tally: &'a Tally,
    inner: usize,
}

struct Inner<'a> {
    tally: &'a Tally,
    base: usize,
}

fn inner_task(job: &Inner<'_>, i: usize) {
    job.tally.hit(job.base + i);
}

fn outer_task(job: &Outer<'_>, o: usize) {
    let group = TaskGroup::new();
    let inner = Inner {
        tally: job.tally,
        base: o * job.inner,
    };
    // SAFETY: `inner` and `group` live until `group.wait` below returns.
    unsafe {
        job.pool
            .submit_indexed(&group, &inner, job.inner, inner_task)
    };
    group.wait(job.pool);
}

#[test]
fn chunk_tasks_waiting_on_their_own_groups() {
    const OUTER: usize = 256;
    const INNER: usize = 128;
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let tally = Tally::new(OUTER * INNER);
    let job = Outer {
        pool: &pool,
        tally: &tally,
        inner: INNER,
    };
    let group = TaskGroup::new();
    // SAFETY: `job` and `group` live until `group.wait` below returns.
    unsafe { pool.submit_indexed(&group, &job, OUTER, outer_task) };
    group.wait(&pool);
    tally.assert_exactly_once();
}

#[test]
fn parallel_for_inside_parallel_for() {
    const OUTER: usize = 300;
    const INNER: usize = 333;
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let tally = Tally::new(OUTER * INNER);
    pool.parallel_for(OUTER, 7, |o| {
        pool.parallel_for(INNER, 10, |i| tally.hit(o * INNER + i));
    });
    tally.assert_exactly_once();
}

#[test]
fn independent_groups_waited_on_from_several_threads() {
    const THREADS: usize = 4;
    const TASKS: usize = 50_000;
    fn hit(tally: &Tally, i: usize) {
        tally.hit(i);
    }
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let tallies: Vec<Tally> = (0..THREADS).map(|_| Tally::new(TASKS)).collect();
    std::thread::scope(|ts| {
        for tally in &tallies {
            let pool = &pool;
            ts.spawn(move || {
                let group = TaskGroup::new();
                for _ in 0..4 {
                    // Each round re-runs every index once more; check after each wait.
                    let before = tally.0[0].load(Ordering::Relaxed);
                    // SAFETY: `tally` and `group` outlive `group.wait` below.
                    unsafe { pool.submit_indexed(&group, tally, TASKS, hit) };
                    group.wait(pool);
                    for c in &tally.0 {
                        assert_eq!(c.load(Ordering::Relaxed), before + 1);
                    }
                }
                for c in &tally.0 {
                    c.store(1, Ordering::Relaxed);
                }
            });
        }
    });
    for tally in &tallies {
        tally.assert_exactly_once();
    }
}

#[test]
fn scope_returns_the_closure_value_and_tasks_borrow_the_stack() {
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let mut slots = vec![0u64; 1000];
    let answer = pool.scope(|s| {
        for (i, slot) in slots.iter_mut().enumerate() {
            s.spawn(move |_| *slot = (i as u64) * 3);
        }
        42
    });
    assert_eq!(answer, 42);
    assert!(slots.iter().enumerate().all(|(i, &v)| v == i as u64 * 3));
}
