//! An idle pool costs (close to) no CPU: after running some work and going idle, the worker
//! threads of an oversubscribed pool use under 5% of one core, all together, over one second.
//! CPU time is read from `/proc/self/task/*/stat` (fields `utime` and `stime`, in clock ticks).
//!
//! This is a generous bound, not a speed test: a worker that spins or polls while idle uses a
//! whole core, twenty times the bound. This binary holds a single test because it reads
//! process-wide state (every thread's CPU time).

use std::hint::black_box;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use freyr_sched::ThreadPool;

const OVERSUBSCRIBED: usize = 8;
/// The bound, as a fraction of one core over the measured window.
const MAX_CORE_FRACTION: f64 = 0.05;
const WINDOW: Duration = Duration::from_secs(1);

/// Clock ticks per second of the `/proc` CPU times (`USER_HZ`), from `getconf CLK_TCK`.
/// If `getconf` is missing, falls back to 100: `USER_HZ` is part of Linux's user-space ABI and
/// is 100 on every architecture Rust supports on Linux (kernel `include/asm-generic/param.h`),
/// whatever the kernel's internal `HZ`.
fn clock_ticks_per_second() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// `utime + stime` (ticks) of every thread named `freyr-worker-*`, and how many there are.
fn worker_cpu_ticks() -> (u64, usize) {
    let mut ticks = 0;
    let mut threads = 0;
    for entry in std::fs::read_dir("/proc/self/task").expect("/proc/self/task is readable") {
        let Ok(stat) = std::fs::read_to_string(entry.unwrap().path().join("stat")) else {
            continue; // the thread exited between listing and reading
        };
        // `pid (comm) state ppid ...`: comm may hold spaces or parentheses, so split at the
        // last ')'. After it, field 3 (state) is index 0, so utime (14) and stime (15) are at
        // indices 11 and 12.
        let open = stat.find('(').expect("stat has (comm)");
        let close = stat.rfind(')').expect("stat has (comm)");
        let comm = &stat[open + 1..close];
        if !comm.starts_with("freyr-worker-") {
            continue;
        }
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let utime: u64 = fields[11].parse().expect("utime is a number");
        let stime: u64 = fields[12].parse().expect("stime is a number");
        ticks += utime + stime;
        threads += 1;
    }
    (ticks, threads)
}

/// Worker CPU time over `WINDOW` of doing nothing, as a fraction of one core.
fn idle_core_fraction(hz: u64) -> f64 {
    let (start, threads) = worker_cpu_ticks();
    assert_eq!(threads, OVERSUBSCRIBED - 1, "found every worker thread");
    std::thread::sleep(WINDOW);
    let (end, threads) = worker_cpu_ticks();
    assert_eq!(threads, OVERSUBSCRIBED - 1, "found every worker thread");
    (end - start) as f64 / hz as f64 / WINDOW.as_secs_f64()
}

#[test]
fn idle_pool_uses_under_five_percent_of_a_core() {
    let hz = clock_ticks_per_second();
    assert!(hz > 0);
    let pool = ThreadPool::new(OVERSUBSCRIBED);
    // A new thread names itself once it runs; wait (generously) until all carry their names.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while worker_cpu_ticks().1 < OVERSUBSCRIBED - 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }

    // A pool that never ran anything.
    let fresh = idle_core_fraction(hz);
    assert!(
        fresh < MAX_CORE_FRACTION,
        "a fresh idle pool used {:.1}% of a core",
        fresh * 100.0
    );

    // Work first, then idle: the workers must park again after their bounded spin.
    let sum = AtomicU64::new(0);
    for _ in 0..20 {
        pool.parallel_for(100_000, 64, |i| {
            sum.fetch_add(black_box(i as u64) & 1, Ordering::Relaxed);
        });
    }
    assert_eq!(sum.load(Ordering::Relaxed), 20 * 50_000);
    std::thread::sleep(Duration::from_millis(100));
    let after_work = idle_core_fraction(hz);
    assert!(
        after_work < MAX_CORE_FRACTION,
        "an idle pool used {:.1}% of a core after running work",
        after_work * 100.0
    );
}
