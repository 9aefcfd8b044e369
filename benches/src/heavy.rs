//! The per-entity work of `heavy_compute` (ecs_bench_suite): invert a 4x4 matrix 100 times, then
//! transform a position by it. Shared by the criterion row and the `scaling` binary.

use crate::{Position, Rotation, Transform, Velocity};

/// A 4x4 matrix, rows of columns as in [`Transform`].
pub type Mat4 = [[f32; 4]; 4];

/// Inversions per entity per tick.
pub const INVERSIONS: usize = 100;

/// The inverse of `m` by cofactors (as glam and cgmath compute it). A singular `m` gives
/// non-finite entries.
///
/// # Examples
///
/// ```
/// use freyr_benches::heavy::inverse;
///
/// let m = [
///     [2.0, 0.5, 0.0, 1.0],
///     [0.0, 1.0, 3.0, 0.0],
///     [1.0, 0.0, 1.0, 0.5],
///     [0.0, 2.0, 0.0, 1.0],
/// ];
/// let inv = inverse(&m);
/// for i in 0..4 {
///     for j in 0..4 {
///         let dot: f32 = (0..4).map(|k| m[i][k] * inv[k][j]).sum();
///         let want = if i == j { 1.0 } else { 0.0 };
///         assert!((dot - want).abs() < 1e-5, "({i}, {j}): {dot}");
///     }
/// }
/// ```
// Out of line on purpose: every implementation then runs the same machine code for the
// kernel, so the rows compare the ECS around it rather than how each inlining context happened
// to allocate registers (inlined into a row loop, the 16 matrix entries spill to the stack and
// the kernel runs ~25% slower; a peer whose call site was not inlined looked that much faster).
#[inline(never)]
pub fn inverse(m: &Mat4) -> Mat4 {
    let a = m;
    let s0 = a[0][0] * a[1][1] - a[1][0] * a[0][1];
    let s1 = a[0][0] * a[1][2] - a[1][0] * a[0][2];
    let s2 = a[0][0] * a[1][3] - a[1][0] * a[0][3];
    let s3 = a[0][1] * a[1][2] - a[1][1] * a[0][2];
    let s4 = a[0][1] * a[1][3] - a[1][1] * a[0][3];
    let s5 = a[0][2] * a[1][3] - a[1][2] * a[0][3];
    let c5 = a[2][2] * a[3][3] - a[3][2] * a[2][3];
    let c4 = a[2][1] * a[3][3] - a[3][1] * a[2][3];
    let c3 = a[2][1] * a[3][2] - a[3][1] * a[2][2];
    let c2 = a[2][0] * a[3][3] - a[3][0] * a[2][3];
    let c1 = a[2][0] * a[3][2] - a[3][0] * a[2][2];
    let c0 = a[2][0] * a[3][1] - a[3][0] * a[2][1];
    let det = s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0;
    let inv = 1.0 / det;
    [
        [
            (a[1][1] * c5 - a[1][2] * c4 + a[1][3] * c3) * inv,
            (-a[0][1] * c5 + a[0][2] * c4 - a[0][3] * c3) * inv,
            (a[3][1] * s5 - a[3][2] * s4 + a[3][3] * s3) * inv,
            (-a[2][1] * s5 + a[2][2] * s4 - a[2][3] * s3) * inv,
        ],
        [
            (-a[1][0] * c5 + a[1][2] * c2 - a[1][3] * c1) * inv,
            (a[0][0] * c5 - a[0][2] * c2 + a[0][3] * c1) * inv,
            (-a[3][0] * s5 + a[3][2] * s2 - a[3][3] * s1) * inv,
            (a[2][0] * s5 - a[2][2] * s2 + a[2][3] * s1) * inv,
        ],
        [
            (a[1][0] * c4 - a[1][1] * c2 + a[1][3] * c0) * inv,
            (-a[0][0] * c4 + a[0][1] * c2 - a[0][3] * c0) * inv,
            (a[3][0] * s4 - a[3][1] * s2 + a[3][3] * s0) * inv,
            (-a[2][0] * s4 + a[2][1] * s2 - a[2][3] * s0) * inv,
        ],
        [
            (-a[1][0] * c3 + a[1][1] * c1 - a[1][2] * c0) * inv,
            (a[0][0] * c3 - a[0][1] * c1 + a[0][2] * c0) * inv,
            (-a[3][0] * s3 + a[3][1] * s1 - a[3][2] * s0) * inv,
            (a[2][0] * s3 - a[2][1] * s1 + a[2][2] * s0) * inv,
        ],
    ]
}

/// One entity's work: [`INVERSIONS`] inversions of `t`, then `p = M * p` (as a direction).
///
/// # Examples
///
/// ```
/// use freyr_benches::heavy::{entity, work};
///
/// let (mut t, mut p, _, _) = entity(0);
/// let before = t;
/// work(&mut t, &mut p);
/// // An even number of inversions gives the matrix back (up to rounding).
/// for (row, want) in t.0.iter().zip(&before.0) {
///     for (x, w) in row.iter().zip(want) {
///         assert!((x - w).abs() < 1e-4);
///     }
/// }
/// assert!((p.0[0] - 1.0).abs() < 1e-4); // (1, 0, 0) is on the rotation's axis
/// ```
#[inline(always)]
pub fn work(t: &mut Transform, p: &mut Position) {
    for _ in 0..INVERSIONS {
        t.0 = inverse(&t.0);
    }
    let m = &t.0;
    let v = p.0;
    p.0 = [
        m[0][0] * v[0] + m[1][0] * v[1] + m[2][0] * v[2],
        m[0][1] * v[0] + m[1][1] * v[1] + m[2][1] * v[2],
        m[0][2] * v[0] + m[1][2] * v[1] + m[2][2] * v[2],
    ];
}

/// The `heavy_compute` entity: a rotation of 1.2 rad about x (ecs_bench_suite's matrix, well
/// conditioned under inversion) and unit vectors along x.
///
/// # Examples
///
/// ```
/// let (t, p, _, _) = freyr_benches::heavy::entity(7);
/// assert_eq!(t.0[0], [1.0, 0.0, 0.0, 0.0]);
/// assert_eq!(p.0, [1.0, 0.0, 0.0]);
/// ```
pub fn entity(_i: usize) -> (Transform, Position, Rotation, Velocity) {
    let (s, c) = 1.2f32.sin_cos();
    let m = [
        [1.0, 0.0, 0.0, 0.0],
        [0.0, c, s, 0.0],
        [0.0, -s, c, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ];
    (
        Transform(m),
        Position([1.0, 0.0, 0.0]),
        Rotation([1.0, 0.0, 0.0]),
        Velocity([1.0, 0.0, 0.0]),
    )
}
