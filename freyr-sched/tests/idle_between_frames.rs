//! A pool that runs one batch per 60 Hz frame and sleeps the rest of the frame spends (close to)
//! no CPU while the caller sleeps: after each batch its workers search briefly, then park, and
//! their spin phases shrink when no new batch follows soon. Bound: the workers' CPU during a
//! 16 ms sleep is under 250 µs on average (1.6% of one core, all workers together), where this
//! pool measures a few µs to a few tens of µs; a pool whose workers kept spinning for new work a
//! few hundred µs after every batch (as rayon's 8-worker pool does in the benches' `idle_cpu`)
//! would exceed it.
//!
//! This is a generous bound, not a speed test. CPU time is read per worker thread with its own
//! CPU clock (`clock_gettime` on the clock id the kernel derives from the thread id), which the
//! kernel brings up to date when read. Not the process clock: Linux does not bring a running
//! thread's time up to date there, so a worker still finishing the batch when it is read would
//! have its batch work booked as idle time (see the benches' `idle_cpu`). This binary holds a
//! single test because it reads process-wide state (every thread of the process).
#![cfg(all(target_os = "linux", not(miri)))]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use freyr_sched::ThreadPool;

/// Total threads of the pool (the test thread included).
const WORKERS: usize = 8;
/// The rest of a 60 Hz frame.
const FRAME_SLEEP: Duration = Duration::from_millis(16);
/// Frames run before measuring: the workers' spin phases shrink over the first few.
const WARM_UP: usize = 10;
/// Frames measured.
const FRAMES: usize = 20;
/// The most CPU the workers may spend, together, during one sleep, on average.
const MAX_PER_SLEEP: Duration = Duration::from_micros(250);
/// The pool's thread-name prefix: only these threads are measured.
const PREFIX: &str = "idle-frame-";

/// The CPU time so far of the thread that `clock` measures, user and system.
fn cpu_clock(clock: i32) -> Duration {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    unsafe extern "C" {
        fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
    }
    let mut time = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `struct timespec` (two 64-bit fields on the 64-bit
    // Linux targets the workspace builds for) through a valid, exclusive pointer, and has no
    // other effect; an unknown clock id is an error return, checked below.
    let status = unsafe { clock_gettime(clock, &raw mut time) };
    assert_eq!(status, 0, "a worker's CPU clock cannot be read");
    Duration::new(
        u64::try_from(time.tv_sec).expect("CPU time is never negative"),
        u32::try_from(time.tv_nsec).expect("tv_nsec is below one second"),
    )
}

/// The CPU clock ids of this process's threads named `PREFIX*`.
fn worker_clocks() -> Vec<i32> {
    let mut clocks = Vec::new();
    for entry in std::fs::read_dir("/proc/self/task").expect("/proc/self/task is readable") {
        let entry = entry.expect("/proc/self/task lists threads");
        let Ok(comm) = std::fs::read_to_string(entry.path().join("comm")) else {
            continue; // the thread exited between listing and reading
        };
        if !comm.starts_with(PREFIX) {
            continue;
        }
        let tid: i32 = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok())
            .expect("a task directory is named by its thread id");
        // The kernel's thread CPU clock id: `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`,
        // `(~tid << 3) | CPUCLOCK_PERTHREAD_MASK (4) | CPUCLOCK_SCHED (2)`.
        clocks.push(((!tid) << 3) | 6);
    }
    clocks
}

fn workers_cpu(clocks: &[i32]) -> Duration {
    clocks.iter().map(|&clock| cpu_clock(clock)).sum()
}

#[test]
fn workers_park_while_the_caller_sleeps_between_frames() {
    let pool = ThreadPool::builder()
        .workers(WORKERS)
        .thread_name(PREFIX)
        .build();
    // A new thread names itself once it runs; wait (generously) until all carry their names.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut clocks = worker_clocks();
    while clocks.len() < WORKERS - 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
        clocks = worker_clocks();
    }
    assert_eq!(clocks.len(), WORKERS - 1, "found every worker thread");

    let sum = AtomicU64::new(0);
    let mut asleep = Duration::ZERO;
    for frame in 0..WARM_UP + FRAMES {
        pool.parallel_for(50_000, 256, |i| {
            sum.fetch_add(black_box(i as u64) & 1, Ordering::Relaxed);
        });
        let before = workers_cpu(&clocks);
        std::thread::sleep(FRAME_SLEEP);
        let after = workers_cpu(&clocks);
        if frame >= WARM_UP {
            asleep += after - before;
        }
    }
    assert_eq!(
        sum.load(Ordering::Relaxed),
        (WARM_UP + FRAMES) as u64 * 25_000
    );
    let per_sleep = asleep / u32::try_from(FRAMES).expect("a few frames");
    assert!(
        per_sleep < MAX_PER_SLEEP,
        "the workers used {per_sleep:?} of CPU per {FRAME_SLEEP:?} sleep between frames \
         (bound {MAX_PER_SLEEP:?})"
    );
}
