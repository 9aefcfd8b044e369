//! How much CPU a pool burns while the game sleeps between ticks, next to rayon.
//!
//! A 60 Hz loop: each tick runs one parallel pass over 50k entities (`pos += vel * dt` on
//! `[f32; 3]` components) and waits for it, then the calling thread sleeps 16 ms. Nothing is
//! queued during the sleep, so every CPU nanosecond the process spends in it is the pool's
//! workers spinning or going to sleep. The binary prints, per pool size, the process CPU time
//! spent *between* ticks over the CPU time spent *inside* them (lower is better; a pool that
//! parks at once scores near 0), for Freyr (`each_async` + `execute_tasks`) and for rayon
//! (`par_chunks_mut(512)` inside `install`, on a pool of the same size), measured in one run.
//!
//! ```text
//! cargo run --release -p freyr-benches --bin idle_cpu            # 2, 8 and 16 workers, 120 ticks
//! cargo run --release -p freyr-benches --bin idle_cpu -- 240 4   # 240 ticks, 4 workers only
//! ```
//!
//! CPU time is the process's (`CLOCK_PROCESS_CPUTIME_ID`: every thread, user and system, in ns),
//! so the numbers are only meaningful on Linux, and on a machine that is otherwise quiet.

use std::time::{Duration, Instant};

use freyr::Registry;
use rayon::prelude::*;

/// Entities per tick.
const ENTITIES: usize = 50_000;
/// The rest of a 60 Hz frame.
const FRAME_SLEEP: Duration = Duration::from_millis(16);
/// Ticks run before measuring (pool start-up, page faults, frequency ramp-up).
const WARM_UP: usize = 10;
/// `dt` of a 60 Hz frame.
const DT: f32 = 1.0 / 60.0;

struct Position([f32; 3]);
struct Velocity([f32; 3]);

/// The process's CPU time so far, all threads, user and system.
#[cfg(target_os = "linux")]
fn process_cpu() -> Duration {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    unsafe extern "C" {
        fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
    }
    /// `CLOCK_PROCESS_CPUTIME_ID` in `<time.h>` on Linux.
    const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
    let mut time = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `struct timespec` (two 64-bit fields on the 64-bit
    // Linux targets this binary builds for) through a valid, exclusive pointer, and has no other
    // effect.
    let status = unsafe { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &raw mut time) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed");
    Duration::new(
        u64::try_from(time.tv_sec).expect("CPU time is never negative"),
        u32::try_from(time.tv_nsec).expect("tv_nsec is below one second"),
    )
}

/// CPU spent inside the ticks and between them, over the measured ticks.
#[derive(Default)]
struct Split {
    inside: Duration,
    between: Duration,
    wall_inside: Duration,
}

impl Split {
    fn ratio(&self) -> f64 {
        self.between.as_secs_f64() / self.inside.as_secs_f64()
    }
}

/// Runs `ticks` frames of `tick` then a sleep, measuring after the warm-up.
fn frame_loop(ticks: usize, mut tick: impl FnMut()) -> Split {
    let mut split = Split::default();
    for frame in 0..WARM_UP + ticks {
        let (cpu0, wall0) = (process_cpu(), Instant::now());
        tick();
        let (cpu1, wall1) = (process_cpu(), Instant::now());
        std::thread::sleep(FRAME_SLEEP);
        let cpu2 = process_cpu();
        if frame >= WARM_UP {
            split.inside += cpu1 - cpu0;
            split.between += cpu2 - cpu1;
            split.wall_inside += wall1 - wall0;
        }
    }
    split
}

fn freyr(workers: usize, ticks: usize) -> (Split, f32) {
    let mut registry = Registry::with_workers(workers);
    registry
        .spawn_batch((0..ENTITIES).map(|i| (Position([0.0; 3]), Velocity([i as f32, 1.0, -1.0]))));
    let split = frame_loop(ticks, || {
        registry
            .query::<(&mut Position, &Velocity)>()
            .each_async(|_, (p, v)| {
                for k in 0..3 {
                    p.0[k] += v.0[k] * DT;
                }
            });
        registry.execute_tasks();
    });
    let mut check = 0.0;
    registry.query::<&Position>().each(|_, p| check += p.0[1]);
    (split, check)
}

fn rayon(workers: usize, ticks: usize) -> (Split, f32) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .build()
        .expect("rayon pool");
    let mut positions: Vec<Position> = (0..ENTITIES).map(|_| Position([0.0; 3])).collect();
    let velocities: Vec<Velocity> = (0..ENTITIES)
        .map(|i| Velocity([i as f32, 1.0, -1.0]))
        .collect();
    let split = frame_loop(ticks, || {
        pool.install(|| {
            positions
                .par_chunks_mut(512)
                .zip(velocities.par_chunks(512))
                .for_each(|(ps, vs)| {
                    for (p, v) in ps.iter_mut().zip(vs) {
                        for k in 0..3 {
                            p.0[k] += v.0[k] * DT;
                        }
                    }
                });
        });
    });
    let check = positions.iter().map(|p| p.0[1]).sum();
    (split, check)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let ticks: usize = args.next().map_or(120, |a| {
        a.parse()
            .expect("usage: idle_cpu [TICKS [WORKERS...]] (TICKS: a positive integer)")
    });
    let mut workers: Vec<usize> = args
        .map(|a| {
            a.parse()
                .expect("usage: idle_cpu [TICKS [WORKERS...]] (WORKERS: positive integers)")
        })
        .collect();
    if workers.is_empty() {
        workers = vec![2, 8, 16];
    }
    assert!(ticks > 0, "TICKS must be at least 1");
    println!(
        "idle_cpu: {ENTITIES} entities, {ticks} ticks (+{WARM_UP} warm-up) of one parallel pass + wait, \
         then {} ms asleep; {} CPUs available",
        FRAME_SLEEP.as_millis(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    println!(
        "{:>7} | {:>33} | {:>33}",
        "", "Freyr (each_async)", "rayon (par_chunks_mut(512))"
    );
    println!(
        "{:>7} | {:>8} {:>8} {:>6} {:>8} | {:>8} {:>8} {:>6} {:>8}",
        "workers", "in µs", "out µs", "out/in", "wall µs", "in µs", "out µs", "out/in", "wall µs"
    );
    for &n in &workers {
        assert!(n > 0, "a pool needs at least one worker");
        let (f, f_check) = freyr(n, ticks);
        let (r, r_check) = rayon(n, ticks);
        assert_eq!(
            f_check, r_check,
            "both loops must have computed the same positions"
        );
        let per_tick = |d: Duration| d.as_secs_f64() * 1e6 / ticks as f64;
        println!(
            "{:>7} | {:>8.1} {:>8.1} {:>6.2} {:>8.1} | {:>8.1} {:>8.1} {:>6.2} {:>8.1}",
            n,
            per_tick(f.inside),
            per_tick(f.between),
            f.ratio(),
            per_tick(f.wall_inside),
            per_tick(r.inside),
            per_tick(r.between),
            r.ratio(),
            per_tick(r.wall_inside),
        );
    }
    println!(
        "in/out: CPU per tick inside the tick / during the sleep after it; wall: the tick's wall time"
    );
}
