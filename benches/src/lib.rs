//! Shared workloads and component types for Freyr's criterion benchmarks.
//!
//! Every bench group (`core`, `sched`, `query`) and every peer (hecs, bevy_ecs, rayon behind the
//! `compare` feature) uses these same component types, so the numbers compare like with like.
//! [`heavy`] holds the `heavy_compute` work, shared with the `scaling` binary.

pub mod heavy;

/// A 4x4 transform matrix (64 bytes), the heavy component of the spawn benchmark.
#[derive(Copy, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
pub struct Transform(pub [[f32; 4]; 4]);

/// A position in 3D space.
#[derive(Copy, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
pub struct Position(pub [f32; 3]);

/// A rotation (as a 3-vector of Euler angles).
#[derive(Copy, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
pub struct Rotation(pub [f32; 3]);

/// A velocity in 3D space.
#[derive(Copy, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
pub struct Velocity(pub [f32; 3]);

/// An extra component used to add and remove on existing entities.
#[derive(Copy, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
pub struct Extra(pub f32);

/// ecs_bench_suite's `add_remove` shape: every entity starts with `A` alone...
#[derive(Copy, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
pub struct A(pub f32);

/// ...and `B` is inserted into all of them, then removed again.
#[derive(Copy, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
pub struct B(pub f32);

impl Transform {
    /// The identity matrix.
    pub const IDENTITY: Transform = Transform([
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ]);
}

/// The (Position, Velocity) pair for entity `i` of a benchmark world: distinct, deterministic values.
///
/// # Examples
/// ```
/// let (p, v) = freyr_benches::pos_vel(2);
/// assert_eq!(p.0[0], 2.0);
/// assert_eq!(v.0[0], 1.0);
/// ```
pub fn pos_vel(i: usize) -> (Position, Velocity) {
    let f = i as f32;
    (Position([f, f * 0.5, -f]), Velocity([1.0, 0.25, -0.5]))
}

/// The worker counts named by the `FREYR_BENCH_THREADS` environment variable (a comma list,
/// e.g. `1,2,16`), so one bench binary can be run on a bigger machine; `None` when it is unset.
///
/// A count may exceed this machine's threads (the pool is oversubscribed) but not
/// [`MAX_WORKERS`](freyr_sched::MAX_WORKERS), the most a pool has.
///
/// When the variable is set but is not such a list ([`parse_bench_threads`]), it prints why
/// and exits with status 2, before any benchmark runs.
///
/// # Examples
/// ```
/// // SAFETY (of the test): no other thread reads the environment here.
/// unsafe { std::env::set_var("FREYR_BENCH_THREADS", "1, 4,16") };
/// assert_eq!(freyr_benches::bench_threads(), Some(vec![1, 4, 16]));
/// unsafe { std::env::remove_var("FREYR_BENCH_THREADS") };
/// assert_eq!(freyr_benches::bench_threads(), None);
/// ```
pub fn bench_threads() -> Option<Vec<usize>> {
    let list = std::env::var_os("FREYR_BENCH_THREADS")?;
    let counts = list
        .to_str()
        .ok_or_else(|| format!("FREYR_BENCH_THREADS={list:?} is not a comma list of counts"))
        .and_then(parse_bench_threads);
    match counts {
        Ok(counts) => Some(counts),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}

/// Reads a `FREYR_BENCH_THREADS` list: worker counts in `1..=MAX_WORKERS`, separated by commas.
///
/// # Errors
///
/// A message naming the variable, the entry and what it takes.
///
/// # Examples
/// ```
/// assert_eq!(freyr_benches::parse_bench_threads("1, 4,16"), Ok(vec![1, 4, 16]));
/// assert!(freyr_benches::parse_bench_threads("0,4").unwrap_err().contains("\"0\""));
/// assert!(freyr_benches::parse_bench_threads("").is_err());
/// ```
pub fn parse_bench_threads(list: &str) -> Result<Vec<usize>, String> {
    let max = freyr_sched::MAX_WORKERS;
    list.split(',')
        .map(|s| match s.trim().parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(format!(
                "FREYR_BENCH_THREADS={list:?}: {:?} is not a worker count; give a comma list \
                 of counts in 1..={max}, e.g. 1,2,8",
                s.trim()
            )),
        })
        .collect()
}

/// This machine's parallelism (1 if it cannot be read).
///
/// # Examples
/// ```
/// assert!(freyr_benches::machine_threads() >= 1);
/// ```
pub fn machine_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The CPU's model name (from `/proc/cpuinfo` on Linux), or `"unknown CPU"`, for the headers of
/// the reports.
///
/// # Examples
/// ```
/// assert!(!freyr_benches::cpu_name().is_empty());
/// ```
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name")?.split(':').nth(1))
                .map(|name| name.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// The instruction set this crate was compiled for, in words: `"x86-64-v3"` when AVX2 and FMA
/// are on (`-C target-cpu=x86-64-v3` or newer), `"generic x86-64"` on the x86-64 baseline.
///
/// # Examples
/// ```
/// let build = freyr_benches::build_name();
/// assert!(["x86-64-v3", "generic x86-64", "x86-64 (SSE4/AVX without FMA)", "not x86-64"]
///     .contains(&build));
/// ```
pub fn build_name() -> &'static str {
    if !cfg!(target_arch = "x86_64") {
        "not x86-64"
    } else if cfg!(all(target_feature = "avx2", target_feature = "fma")) {
        "x86-64-v3"
    } else if cfg!(any(target_feature = "sse4.1", target_feature = "avx")) {
        "x86-64 (SSE4/AVX without FMA)"
    } else {
        "generic x86-64"
    }
}
