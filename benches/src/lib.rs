//! Shared workloads and component types for Freyr's criterion benchmarks.
//!
//! Every bench group (`core`, `sched`, `query`) and every peer (hecs, bevy_ecs, rayon behind the
//! `compare` feature) uses these same component types, so the numbers compare like with like.

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
