//! How much CPU a pool burns while the game sleeps between ticks, next to rayon.
//!
//! A 60 Hz loop: each tick runs one parallel pass over 50k entities (`pos += vel * dt` on
//! `[f32; 3]` components) and waits for it, then the calling thread sleeps 16 ms. Nothing is
//! queued during the sleep, so the CPU the process spends in it is the calling thread's sleep
//! call plus the pool's workers spinning or going to sleep. The binary prints, per pool size,
//! the process's CPU time spent *between* ticks over its CPU time spent *inside* them (lower is
//! better), and the same with the calling thread's own share left out of the numerator (the
//! pool's alone; a pool that parks at once scores near 0), for Freyr (`each_async` +
//! `execute_tasks`) and for rayon (`par_chunks_mut(512)` inside `install`, on a pool of the
//! same size), measured in one run. Before the pools it runs the same loop with no pool and no
//! work, and prints that loop's CPU per sleep: the floor under every pool's "out" on the
//! machine at hand (tens of µs on a virtual machine, where sleeping and waking a thread costs
//! the hypervisor's exits as well as the kernel's work).
//!
//! ```text
//! cargo run --release -p freyr-benches --bin idle_cpu            # 2, 8 and 16 workers, 120 ticks
//! cargo run --release -p freyr-benches --bin idle_cpu -- 240 4   # 240 ticks, 4 workers only
//! ```
//!
//! # How CPU time is read
//!
//! Per thread, user and system, in ns: the calling thread's own clock
//! (`CLOCK_THREAD_CPUTIME_ID`), and each pool thread's through its thread CPU clock
//! (`clock_gettime` on the clock id the kernel derives from the thread id, the one
//! `pthread_getcpuclockid` returns), summed. Reading another thread's clock adds the time it
//! ran since its last scheduler event, so every sample is exact for every thread.
//!
//! Not the process clock (`CLOCK_PROCESS_CPUTIME_ID`), which earlier versions of this binary
//! read: Linux sums each thread's runtime *as of that thread's last scheduler event* and
//! brings only the calling thread's up to date (`thread_group_cputime` in
//! `kernel/sched/cputime.c`: other running threads' "pending times" are skipped). A worker
//! still running when the tick ends (finishing the last range, searching once more, going to
//! sleep) had its whole episode since it woke at the start of the tick booked *between* the
//! ticks, when it next parked: the tick's own work showed up as idle CPU, the more so the more
//! of the tick the workers ran, and the tick's CPU looked no larger than its wall time.
//!
//! The sampling costs about 0.5 µs per thread (one system call each). It is left out of the
//! calling thread's figures (they stop before it and restart after it), and a pool thread's
//! CPU during the sampling that ends a tick counts as inside the tick: at most the sampling's
//! span, a few µs at 16 workers, for both pools alike.
//!
//! Linux only (thread CPU clock ids and `/proc/self/task`), and only meaningful on a machine
//! that is otherwise quiet.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use freyr::Registry;
use freyr::sched::MAX_WORKERS;
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

/// `CLOCK_THREAD_CPUTIME_ID` in `<time.h>` on Linux: the calling thread's CPU clock.
const CLOCK_THREAD_CPUTIME_ID: i32 = 3;

/// The CPU time so far of the thread that `clock` measures (user and system), or `None` if
/// that thread no longer exists.
fn cpu_clock(clock: i32) -> Option<Duration> {
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
    // Linux targets this binary builds for) through a valid, exclusive pointer, and has no other
    // effect; an unknown clock id is an error return, not undefined behaviour.
    let status = unsafe { clock_gettime(clock, &raw mut time) };
    (status == 0).then(|| {
        Duration::new(
            u64::try_from(time.tv_sec).expect("CPU time is never negative"),
            u32::try_from(time.tv_nsec).expect("tv_nsec is below one second"),
        )
    })
}

/// The calling thread's CPU time so far.
fn own_cpu() -> Duration {
    cpu_clock(CLOCK_THREAD_CPUTIME_ID).expect("clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed")
}

/// The ids of this process's threads, from `/proc/self/task`.
fn thread_ids() -> Vec<i32> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task is readable (idle_cpu runs on Linux only)")
        .map(|entry| {
            let entry = entry.expect("/proc/self/task lists threads");
            entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse().ok())
                .expect("a task directory is named by its thread id")
        })
        .collect()
}

/// The CPU clocks of every thread of the process but the calling (main) one: the pool's.
struct PoolClocks(Vec<i32>);

impl PoolClocks {
    /// The process's threads now, the main thread (whose id is the process id) left out.
    fn of_this_process() -> Self {
        let main = i32::try_from(std::process::id()).expect("a pid fits an i32");
        // The kernel's thread CPU clock id: `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`,
        // `(~tid << 3) | CPUCLOCK_PERTHREAD_MASK (4) | CPUCLOCK_SCHED (2)`.
        PoolClocks(
            thread_ids()
                .into_iter()
                .filter(|&tid| tid != main)
                .map(|tid| ((!tid) << 3) | 6)
                .collect(),
        )
    }

    /// The pool threads' CPU time so far, summed.
    fn sum(&self) -> Duration {
        self.0
            .iter()
            .map(|&clock| cpu_clock(clock).expect("a pool thread exited while measured"))
            .sum()
    }
}

/// Waits until the main thread is the process's only one (a rayon pool's threads exit after
/// its drop returns), so the next pool's threads are counted alone.
fn wait_for_single_thread() {
    let deadline = Instant::now() + Duration::from_secs(10);
    while thread_ids().len() > 1 {
        assert!(
            Instant::now() < deadline,
            "the previous pool's threads did not exit"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// One exact CPU sample: the pool threads' sum, read between two reads of the calling
/// thread's own clock (the first before the sampling, the second after it).
struct Sample {
    own_before: Duration,
    pool: Duration,
    own_after: Duration,
}

impl Sample {
    fn take(pool: &PoolClocks) -> Self {
        let own_before = own_cpu();
        let pool = pool.sum();
        let own_after = own_cpu();
        Sample {
            own_before,
            pool,
            own_after,
        }
    }

    /// `(calling thread, pool)` CPU from `self` to `later`, the sampling itself left out.
    fn until(&self, later: &Sample) -> (Duration, Duration) {
        (
            later.own_before.saturating_sub(self.own_after),
            later.pool.saturating_sub(self.pool),
        )
    }
}

/// CPU spent inside the ticks and between them, over the measured ticks.
#[derive(Default)]
struct Split {
    inside: Duration,
    between: Duration,
    /// The calling thread's share of `between`: its own sleep call.
    own_between: Duration,
    wall_inside: Duration,
}

impl Split {
    /// The process's CPU between ticks over its CPU inside them.
    fn ratio(&self) -> f64 {
        self.between.as_secs_f64() / self.inside.as_secs_f64()
    }

    /// The pool threads' CPU between ticks over the process's CPU inside them.
    fn pool_ratio(&self) -> f64 {
        (self.between - self.own_between).as_secs_f64() / self.inside.as_secs_f64()
    }
}

/// Runs `ticks` frames of `tick` then a sleep, measuring after the warm-up. Every thread of
/// the process but the calling one is taken to be the pool's (started before this is called).
fn frame_loop(ticks: usize, mut tick: impl FnMut()) -> Split {
    let pool = PoolClocks::of_this_process();
    let mut split = Split::default();
    let mut start = Sample::take(&pool);
    for frame in 0..WARM_UP + ticks {
        let wall0 = Instant::now();
        tick();
        let wall1 = Instant::now();
        let ticked = Sample::take(&pool);
        std::thread::sleep(FRAME_SLEEP);
        let slept = Sample::take(&pool);
        if frame >= WARM_UP {
            let (own_in, pool_in) = start.until(&ticked);
            let (own_out, pool_out) = ticked.until(&slept);
            split.inside += own_in + pool_in;
            split.between += own_out + pool_out;
            split.own_between += own_out;
            split.wall_inside += wall1 - wall0;
        }
        start = slept;
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
    drop(pool);
    wait_for_single_thread();
    (split, check)
}

const HELP: &str = "\
idle_cpu: the CPU a pool burns between 60 Hz ticks, over its CPU inside them, beside rayon.

USAGE: idle_cpu [TICKS [WORKERS...]]
       (cargo run --release -p freyr-benches --bin idle_cpu -- [TICKS [WORKERS...]])

  TICKS        timed ticks per pool size, 1..=1000000 (default 120)
  WORKERS...   pool sizes to measure, each in 1..=256 (default 2 8 16); more than this
               machine's threads is allowed (the pool is oversubscribed)
  -h, --help   this text";

/// The most timed ticks per pool size (about 4.6 hours of 60 Hz frames).
const MAX_TICKS: usize = 1_000_000;

/// Parsed command line.
#[derive(Debug, PartialEq)]
struct Args {
    ticks: usize,
    workers: Vec<usize>,
    help: bool,
}

/// Reads `[TICKS [WORKERS...]]` (or `-h`/`--help`); every argument is checked before a run.
fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        ticks: 120,
        workers: Vec::new(),
        help: false,
    };
    let count = |what: &str, v: &str, max: usize| match v.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{what} {v:?}: expected a whole number in 1..={max} (see --help)"
        )),
    };
    for (i, arg) in args.into_iter().enumerate() {
        match arg.as_str() {
            "-h" | "--help" => parsed.help = true,
            _ if i == 0 => parsed.ticks = count("TICKS", &arg, MAX_TICKS)?,
            _ => parsed.workers.push(count("WORKERS", &arg, MAX_WORKERS)?),
        }
    }
    if parsed.workers.is_empty() {
        parsed.workers = vec![2, 8, 16];
    }
    Ok(parsed)
}

fn main() -> ExitCode {
    let Args {
        ticks,
        workers,
        help,
    } = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("idle_cpu: {e}");
            return ExitCode::from(2);
        }
    };
    if help {
        println!("{HELP}");
        return ExitCode::SUCCESS;
    }
    println!(
        "idle_cpu: {ENTITIES} entities, {ticks} ticks (+{WARM_UP} warm-up) of one parallel pass + wait, \
         then {} ms asleep; {} CPUs available",
        FRAME_SLEEP.as_millis(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    println!(
        "{:>7} | {:>40} | {:>40}",
        "", "Freyr (each_async)", "rayon (par_chunks_mut(512))"
    );
    let columns = ["in µs", "out µs", "out/in", "pool/in", "wall µs"];
    println!(
        "{:>7} | {:>7} {:>7} {:>6} {:>7} {:>8} | {:>7} {:>7} {:>6} {:>7} {:>8}",
        "workers",
        columns[0],
        columns[1],
        columns[2],
        columns[3],
        columns[4],
        columns[0],
        columns[1],
        columns[2],
        columns[3],
        columns[4],
    );
    assert!(
        workers.iter().all(|&n| n > 0),
        "a pool needs at least one worker"
    );
    wait_for_single_thread();
    // The floor under every "out" below: the same loop with no pool and no work, so its CPU
    // between ticks is the calling thread's sleep call alone (the kernel's and, on a virtual
    // machine, the hypervisor's cost of sleeping and waking a thread).
    let bare = frame_loop(ticks, || {});
    let bare_sleep = bare.own_between.as_secs_f64() * 1e6 / ticks as f64;
    for &n in &workers {
        let (f, f_check) = freyr(n, ticks);
        let (r, r_check) = rayon(n, ticks);
        assert_eq!(
            f_check, r_check,
            "both loops must have computed the same positions"
        );
        let per_tick = |d: Duration| d.as_secs_f64() * 1e6 / ticks as f64;
        println!(
            "{:>7} | {:>7.1} {:>7.1} {:>6.2} {:>7.2} {:>8.1} | {:>7.1} {:>7.1} {:>6.2} {:>7.2} {:>8.1}",
            n,
            per_tick(f.inside),
            per_tick(f.between),
            f.ratio(),
            f.pool_ratio(),
            per_tick(f.wall_inside),
            per_tick(r.inside),
            per_tick(r.between),
            r.ratio(),
            r.pool_ratio(),
            per_tick(r.wall_inside),
        );
    }
    println!(
        "in/out: the process's CPU per tick inside the tick / during the sleep after it (the \
         calling thread's sleep call included); pool/in: the pool threads' CPU during the sleep \
         over the process's inside; wall: the tick's wall time"
    );
    println!(
        "the calling thread's {} ms sleep alone (no pool, no work): {bare_sleep:.1} µs of CPU per \
         sleep on this machine, part of every \"out\" above",
        FRAME_SLEEP.as_millis()
    );
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::{Args, parse};

    fn args(words: &[&str]) -> Result<Args, String> {
        parse(words.iter().map(|w| w.to_string()))
    }

    #[test]
    fn arguments_are_checked_before_a_run() {
        let default = args(&[]).unwrap();
        assert_eq!((default.ticks, default.workers), (120, vec![2, 8, 16]));
        let chosen = args(&["240", "4", "1"]).unwrap();
        assert_eq!((chosen.ticks, chosen.workers), (240, vec![4, 1]));
        assert!(args(&["--help"]).unwrap().help);
        assert!(args(&["60", "-h"]).unwrap().help);
        assert_eq!(
            args(&["0"]).unwrap_err(),
            "TICKS \"0\": expected a whole number in 1..=1000000 (see --help)"
        );
        assert_eq!(
            args(&["60", "two"]).unwrap_err(),
            "WORKERS \"two\": expected a whole number in 1..=256 (see --help)"
        );
        assert!(
            args(&["--fast"])
                .unwrap_err()
                .starts_with("TICKS \"--fast\"")
        );
    }
}
