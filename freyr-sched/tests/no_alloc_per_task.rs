//! Dispatching chunk tasks through `submit_indexed` or `submit_job` performs no heap allocation
//! per task: with a counting global allocator, dispatching (and waiting for) 10,000 tasks
//! allocates no more than dispatching 100 does, plus a small constant, on every pool size. And a
//! fork-join through a scope (two small spawns) allocates nothing: its closures are kept in the
//! scope.
//!
//! This binary holds a single test because the allocator counts process-wide.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr_sched::{IndexedJob, TaskGroup, ThreadPool};

/// The system allocator, counting every allocation (and reallocation) from any thread.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
/// The number of the first allocation of the measured window (`usize::MAX`: none).
static WINDOW_START: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The sizes of the window's first allocations: the failure message shows them, which names
/// the culprit (e.g. a queue block).
static WINDOW_SIZES: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];

fn count(layout: Layout) {
    let n = ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    let start = WINDOW_START.load(Ordering::Relaxed);
    if let Some(slot) = n.checked_sub(start).and_then(|k| WINDOW_SIZES.get(k)) {
        slot.store(layout.size(), Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `Counting`
// upholds `GlobalAlloc`'s contract exactly as `System` does; the counter has no effect on memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout);
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout);
        // SAFETY: forwarded unchanged; the caller upholds `alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(Layout::from_size_align(new_size, layout.align()).unwrap_or(layout));
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; the caller upholds `dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations a dispatch of any size may make (e.g. a lazily grown buffer, a waker on first
/// park); far below one per task of the large dispatch.
const CONSTANT_SLACK: usize = 16;
const SMALL: usize = 100;
const LARGE: usize = 10_000;

/// The job shared by every task: an empty-bodied task that still touches the job.
struct Job {
    sum: AtomicUsize,
}

fn task(job: &Job, index: usize) {
    job.sum.fetch_add(index, Ordering::Relaxed);
}

impl IndexedJob for Job {
    fn run(&self, index: usize) {
        task(self, index);
    }
}

/// Which chunk-task entry point a dispatch goes through.
#[derive(Clone, Copy, Debug)]
enum Path {
    SubmitIndexed,
    SubmitJob,
}

/// Allocations made while `count` tasks are dispatched and waited for (the job and the group
/// are built before counting starts, as a query builds them once per launch), and the sizes of
/// the first few of them.
fn allocations_for(pool: &ThreadPool, path: Path, count: usize) -> (usize, Vec<usize>) {
    let job = Job {
        sum: AtomicUsize::new(0),
    };
    let group = TaskGroup::new();
    for slot in &WINDOW_SIZES {
        slot.store(0, Ordering::Relaxed);
    }
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    WINDOW_START.store(before, Ordering::SeqCst);
    // SAFETY: `job` and `group` outlive `group.wait` below and are not moved before it.
    unsafe {
        match path {
            Path::SubmitIndexed => pool.submit_indexed(&group, &job, count, task),
            Path::SubmitJob => pool.submit_job(&group, &job, count),
        }
    };
    group.wait(pool);
    let after = ALLOCATIONS.load(Ordering::SeqCst);
    WINDOW_START.store(usize::MAX, Ordering::SeqCst);
    assert_eq!(job.sum.load(Ordering::Relaxed), count * (count - 1) / 2);
    let sizes = WINDOW_SIZES
        .iter()
        .map(|s| s.load(Ordering::Relaxed))
        .take(after - before)
        .collect();
    (after - before, sizes)
}

fn dispatch_allocates_nothing_per_task(workers: usize, path: Path) {
    // The counter itself works (a test that cannot see allocations proves nothing).
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let boxed = std::hint::black_box(Box::new(1u64));
    assert!(ALLOCATIONS.load(Ordering::SeqCst) > before);
    drop(boxed);

    let pool = ThreadPool::new(workers);
    // Warm up: first-use allocations (thread-locals, lazily built buffers) are not per task.
    for _ in 0..3 {
        let _ = allocations_for(&pool, path, LARGE);
    }
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut large_sizes = Vec::new();
    for _ in 0..5 {
        small.push(allocations_for(&pool, path, SMALL).0);
        let (n, sizes) = allocations_for(&pool, path, LARGE);
        large.push(n);
        large_sizes.extend(sizes);
    }
    let small_max = *small.iter().max().unwrap();
    let large_max = *large.iter().max().unwrap();
    assert!(
        large_max <= small_max + CONSTANT_SLACK && large_max <= CONSTANT_SLACK,
        "{workers} workers, {path:?}: dispatching {LARGE} tasks allocated {large:?} times \
         (first sizes in bytes: {large_sizes:?}), {SMALL} tasks {small:?} times: \
         allocation grows with the task count"
    );
}

/// 100 scopes of two small spawns each allocate no more than the slack in all (boxed closures
/// would make 200 allocations); a scope's third spawn still boxes its closure.
fn scope_fork_join_allocates_nothing(workers: usize) {
    let pool = ThreadPool::new(workers);
    let ran = AtomicUsize::new(0);
    let fork_join = |spawns: usize| {
        pool.scope(|s| {
            for _ in 0..spawns {
                let ran = &ran;
                s.spawn(move |_| {
                    ran.fetch_add(1, Ordering::Relaxed);
                });
            }
        });
    };
    for _ in 0..10 {
        fork_join(2);
    }
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    for _ in 0..100 {
        fork_join(2);
    }
    let two = ALLOCATIONS.load(Ordering::SeqCst) - before;
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    for _ in 0..100 {
        fork_join(3);
    }
    let three = ALLOCATIONS.load(Ordering::SeqCst) - before;
    assert_eq!(ran.load(Ordering::Relaxed), 20 + 200 + 300);
    assert!(
        two <= CONSTANT_SLACK,
        "{workers} workers: 100 scopes of two small spawns allocated {two} times"
    );
    if workers > 1 {
        assert!(
            three >= 100,
            "{workers} workers: the third spawns allocated {three} times"
        );
    }
}

#[test]
fn chunk_task_dispatch_allocates_nothing_per_task() {
    // One test for every size: a second test finishing would make the harness allocate while
    // this one measures. Two workers is the sharpest case: a single 1,024-slot queue, so any
    // runaway splitting spills into the overflow queue, which allocates blocks.
    for workers in [1, 2, 8] {
        for path in [Path::SubmitIndexed, Path::SubmitJob] {
            dispatch_allocates_nothing_per_task(workers, path);
        }
        scope_fork_join_allocates_nothing(workers);
    }
}
