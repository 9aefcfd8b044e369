//! `ThreadPool::new(1)` is the calling thread alone: scoped tasks, chunk tasks and
//! `parallel_for` all run on the calling thread, the chunk path before `submit_indexed`
//! returns, and panics are still caught into the group and re-raised by its wait.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::thread::{self, ThreadId};

use freyr_sched::{TaskGroup, ThreadPool};

/// Records the thread and order of each run.
struct Runs(Mutex<Vec<(usize, ThreadId)>>);

impl Runs {
    fn new() -> Runs {
        Runs(Mutex::new(Vec::new()))
    }

    fn record(&self, index: usize) {
        self.0.lock().unwrap().push((index, thread::current().id()));
    }

    /// Every index of `0..count` exactly once, all on `caller`.
    #[track_caller]
    fn assert_all_on(&self, caller: ThreadId, count: usize) {
        let mut runs = self.0.lock().unwrap().clone();
        assert!(runs.iter().all(|&(_, t)| t == caller), "ran off the caller");
        runs.sort_unstable_by_key(|&(i, _)| i);
        let indices: Vec<usize> = runs.iter().map(|&(i, _)| i).collect();
        assert_eq!(indices, (0..count).collect::<Vec<_>>());
    }
}

fn record(runs: &Runs, index: usize) {
    runs.record(index);
}

#[test]
fn pool_of_one_reports_one_worker() {
    assert_eq!(ThreadPool::new(1).workers(), 1);
}

#[test]
fn chunk_tasks_run_inline_before_submit_returns() {
    let pool = ThreadPool::new(1);
    let runs = Runs::new();
    let group = TaskGroup::new();
    // SAFETY: `runs` and `group` outlive `group.wait` below.
    unsafe { pool.submit_indexed(&group, &runs, 1000, record) };
    // Inline: all done already, before any wait.
    assert!(group.is_done());
    runs.assert_all_on(thread::current().id(), 1000);
    group.wait(&pool);
}

#[test]
fn scoped_tasks_run_on_the_calling_thread() {
    let pool = ThreadPool::new(1);
    let runs = Runs::new();
    pool.scope(|s| {
        for i in 0..1000 {
            let runs = &runs;
            s.spawn(move |s| {
                runs.record(i);
                if i < 10 {
                    s.spawn(move |_| runs.record(1000 + i));
                }
            });
        }
    });
    runs.assert_all_on(thread::current().id(), 1010);
}

#[test]
fn scoped_tasks_may_use_thread_local_state_of_the_caller() {
    // Inline means literally this thread: its thread-locals are the ones the tasks see.
    thread_local!(static HITS: Cell<usize> = const { Cell::new(0) });
    let pool = ThreadPool::new(1);
    pool.scope(|s| {
        for _ in 0..100 {
            s.spawn(|_| HITS.with(|h| h.set(h.get() + 1)));
        }
    });
    assert_eq!(HITS.with(Cell::get), 100);
}

#[test]
fn parallel_for_runs_on_the_calling_thread_in_order() {
    let pool = ThreadPool::new(1);
    let runs = Runs::new();
    pool.parallel_for(10_000, 3, |i| runs.record(i));
    let caller = thread::current().id();
    let order: Vec<usize> = runs.0.lock().unwrap().iter().map(|&(i, _)| i).collect();
    assert_eq!(
        order,
        (0..10_000).collect::<Vec<_>>(),
        "inline runs in index order"
    );
    runs.assert_all_on(caller, 10_000);
}

#[test]
fn inline_panics_are_caught_into_the_group() {
    fn maybe_panic(runs: &Runs, index: usize) {
        runs.record(index);
        if index == 5 || index == 7 {
            panic!("inline task {index}");
        }
    }
    let pool = ThreadPool::new(1);
    let runs = Runs::new();
    let group = TaskGroup::new();
    // SAFETY: `runs` and `group` outlive `group.wait` below.
    unsafe { pool.submit_indexed(&group, &runs, 10, maybe_panic) };
    // The panics did not escape `submit_indexed`: every task ran, the group holds them.
    runs.assert_all_on(thread::current().id(), 10);
    assert_eq!(group.panicked(), 2);
    let payload = panic::catch_unwind(AssertUnwindSafe(|| group.wait(&pool)))
        .expect_err("the wait re-raises the inline panic");
    assert_eq!(
        payload.downcast_ref::<String>().map(String::as_str),
        Some("inline task 5"),
        "the first panic, in submission order, is the one re-raised"
    );
    group.wait(&pool);
}
