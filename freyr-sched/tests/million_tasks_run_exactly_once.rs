//! One million tiny tasks on an oversubscribed pool (8 workers on a 2-core machine) run exactly
//! once each, through every submission path: the allocation-free chunk path
//! (`submit_indexed`), scoped spawns and `parallel_for`. A tally counts the runs per index.

mod common;

use common::{OVERSUBSCRIBED, Tally};
use freyr_sched::{TaskGroup, ThreadPool};

/// A million natively; ThreadSanitizer (`--cfg freyr_tsan`) checks the same paths at a tenth.
const MILLION: usize = if cfg!(freyr_tsan) { 100_000 } else { 1_000_000 };

fn hit(tally: &Tally, index: usize) {
    tally.hit(index);
}

#[test]
fn chunk_path_one_million_tasks_in_one_submission() {
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let tally = Tally::new(MILLION);
    let group = TaskGroup::new();
    // SAFETY: `tally` and `group` outlive `group.wait` below and are not moved before it.
    unsafe { pool.submit_indexed(&group, &tally, MILLION, hit) };
    group.wait(&pool);
    assert!(group.is_done());
    tally.assert_exactly_once();
}

#[test]
fn chunk_path_one_million_tasks_in_chunk_sized_submissions() {
    // 1,954 submissions of up to 512 tasks, as a query over a million entities makes them.
    struct Slice<'a> {
        tally: &'a Tally,
        base: usize,
    }
    fn hit_slice(job: &Slice<'_>, index: usize) {
        job.tally.hit(job.base + index);
    }
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let tally = Tally::new(MILLION);
    let group = TaskGroup::new();
    let jobs: Vec<Slice<'_>> = (0..MILLION.div_ceil(512))
        .map(|c| Slice {
            tally: &tally,
            base: c * 512,
        })
        .collect();
    for job in &jobs {
        let count = (MILLION - job.base).min(512);
        // SAFETY: `jobs` (and the tally they borrow) and `group` outlive `group.wait` below.
        unsafe { pool.submit_indexed(&group, job, count, hit_slice) };
    }
    group.wait(&pool);
    tally.assert_exactly_once();
}

#[test]
fn chunk_path_group_is_reusable_across_waves() {
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let group = TaskGroup::new();
    for wave in 0..4 {
        let tally = Tally::new(MILLION / 4 + wave);
        // SAFETY: `tally` and `group` outlive `group.wait` below and are not moved before it.
        unsafe { pool.submit_indexed(&group, &tally, tally.0.len(), hit) };
        group.wait(&pool);
        tally.assert_exactly_once();
    }
}

#[test]
fn scope_one_million_spawned_tasks() {
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let tally = Tally::new(MILLION);
    pool.scope(|s| {
        for i in 0..MILLION {
            let tally = &tally;
            s.spawn(move |_| tally.hit(i));
        }
    });
    tally.assert_exactly_once();
}

#[test]
fn parallel_for_one_million_indices_grain_one() {
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let tally = Tally::new(MILLION);
    pool.parallel_for(MILLION, 1, |i| tally.hit(i));
    tally.assert_exactly_once();
}

#[test]
fn parallel_for_one_million_indices_grain_not_dividing_count() {
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    let tally = Tally::new(MILLION);
    pool.parallel_for(MILLION, 997, |i| tally.hit(i));
    tally.assert_exactly_once();
}
