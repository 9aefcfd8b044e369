//! One million tiny tasks on an oversubscribed pool (8 workers on a 2-core machine) run exactly
//! once each, through every submission path: the allocation-free chunk path
//! (`submit_indexed`), scoped spawns and `parallel_for`. A tally counts the runs per index.

use std::sync::atomic::{AtomicU32, Ordering};

use freyr_sched::{TaskGroup, ThreadPool};

const MILLION: usize = 1_000_000;
/// More workers than this machine has cores, so workers are preempted mid-protocol.
const OVERSUBSCRIBED: usize = 8;

/// One run counter per task index.
struct Tally(Vec<AtomicU32>);

impl Tally {
    fn new(len: usize) -> Tally {
        Tally((0..len).map(|_| AtomicU32::new(0)).collect())
    }

    fn hit(&self, index: usize) {
        self.0[index].fetch_add(1, Ordering::Relaxed);
    }

    /// Panics naming the first index that did not run exactly once, and how many did not.
    #[track_caller]
    fn assert_exactly_once(&self) {
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
