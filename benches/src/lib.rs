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
/// # Panics
/// When the variable is set but holds something other than positive counts.
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
    let list = std::env::var("FREYR_BENCH_THREADS").ok()?;
    let counts: Vec<usize> = list
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .unwrap_or_else(|_| panic!("FREYR_BENCH_THREADS: {s:?} is not a count"))
        })
        .filter(|&n| n > 0)
        .collect();
    assert!(!counts.is_empty(), "FREYR_BENCH_THREADS names no count");
    Some(counts)
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
