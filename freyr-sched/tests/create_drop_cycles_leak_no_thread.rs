//! Creating and dropping pools in a loop leaks no thread: after 1,000 create/drop cycles of an
//! oversubscribed pool (some of them with work in flight until the drop) the process thread
//! count, read from `/proc/self/task`, is back at its baseline.
//!
//! This binary holds a single test because it reads process-wide state (the thread count).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use freyr_sched::ThreadPool;

const OVERSUBSCRIBED: usize = 8;
/// ThreadSanitizer (`--cfg freyr_tsan`) runs a tenth: each start and join costs it milliseconds.
const CYCLES: usize = if cfg!(freyr_tsan) { 100 } else { 1_000 };

fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task is readable (Linux)")
        .count()
}

/// A joined thread's `/proc` entry can outlive `join` by a moment (the kernel reaps it just
/// after waking the joiner), so poll until the count reaches `want` or a generous deadline passes;
/// returns the last count seen. This is not a speed test: a leak never converges.
fn settle_to(want: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n = thread_count();
        if n == want || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn thousand_create_drop_cycles_leave_thread_count_at_baseline() {
    let baseline = thread_count();

    // The count sees the pool's threads: N-1 background workers while it lives.
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    assert_eq!(thread_count(), baseline + OVERSUBSCRIBED - 1);
    drop(pool);
    assert_eq!(settle_to(baseline), baseline);

    let ran = AtomicUsize::new(0);
    for cycle in 0..CYCLES {
        let pool = ThreadPool::new(OVERSUBSCRIBED);
        match cycle % 4 {
            // Dropped at once, workers possibly still starting up.
            0 => {}
            // Dropped right after work, workers possibly still spinning before they park.
            1 => pool.parallel_for(64, 1, |_| {
                ran.fetch_add(1, Ordering::Relaxed);
            }),
            2 => pool.scope(|s| {
                for _ in 0..16 {
                    s.spawn(|_| {
                        ran.fetch_add(1, Ordering::Relaxed);
                    });
                }
            }),
            // Dropped after the workers have had time to park.
            _ => {
                if cycle % 100 == 3 {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        drop(pool);
    }
    assert_eq!(ran.load(Ordering::Relaxed), CYCLES / 4 * (64 + 16));
    assert_eq!(
        settle_to(baseline),
        baseline,
        "threads leaked by {CYCLES} pool create/drop cycles"
    );
}
