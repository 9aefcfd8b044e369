//! Both compiled copies of the row loops ([`RowPath`]) give bit-identical worlds and float
//! reductions, and both compute exactly what plain scalar Rust computes.
//!
//! One test function only: [`RowPath::force`] is process-wide, so no other test in this binary
//! may run row loops at the same time.
//!
//! In a build whose target has AVX2 and FMA (or on a CPU without them) there is one copy, and
//! the test compares it with itself and with the scalar reference; run it in a default build
//! (`cargo test -p freyr-query --test row_paths`) on an AVX2 machine to compare the two copies.

use freyr_registry::{Entity, Registry, RowPath, StableHash, StableHasher, With, Without};

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos([f32; 3]);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Vel([f32; 3]);
#[derive(Clone, Copy, Debug)]
struct Mass(f64);
#[derive(Clone, Copy, Debug)]
struct Heat(f32);
#[derive(Clone, Copy, Debug)]
struct Spark(u32);
struct Cold;

impl StableHash for Pos {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}
impl StableHash for Vel {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}
impl StableHash for Mass {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}
impl StableHash for Heat {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}
impl StableHash for Spark {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}

const ENTITIES: u32 = 6_000;
const TICKS: u32 = 4;
const DT: f32 = 1.0 / 60.0;

fn start(i: u32) -> (Pos, Vel) {
    let f = i as f32;
    (
        Pos([f * 0.37, -f * 1.13, (f * 0.071).sin() * 50.0]),
        Vel([(f * 0.013).cos() * 3.1, 0.7 - f * 1e-4, f.sqrt() * 0.33]),
    )
}

/// The scalar reference of the `each` + `each_chunk` steps: plain Rust, one row at a time.
fn reference_step(p: &mut Pos, v: &Vel) {
    for k in 0..3 {
        p.0[k] += v.0[k] * DT;
        p.0[k] = p.0[k] * 0.999 + 0.001;
    }
}

/// Everything a run leaves: the world hash, the float reductions' bits, and the positions of
/// the first entities after the first step (to compare with the scalar reference).
struct Outcome {
    hash: u64,
    sums: Vec<(u32, u64)>,
    first_step: Vec<(Entity, Pos)>,
}

/// A few ticks through every row loop Freyr runs for the user: `each`, `each_chunk`,
/// `each_with` (commands), `each_async`, `each_async_with` (commands and a view) and
/// `each_async_reduce` (f32 and f64), over three archetypes and chunk splits.
fn run(workers: usize) -> Outcome {
    let mut registry = Registry::with_workers(workers);
    registry.spawn_batch((0..ENTITIES).map(|i| {
        let (p, v) = start(i);
        (p, v, Mass(1.0 + f64::from(i % 17) * 0.125))
    }));
    registry.spawn_batch((0..ENTITIES / 3).map(|i| {
        let (p, v) = start(i + ENTITIES);
        (p, v, Heat(i as f32 * 0.5), Cold)
    }));
    let mut sums = Vec::new();
    let mut first_step = Vec::new();
    for tick in 0..TICKS {
        registry.query::<(&mut Pos, &Vel)>().each(|_, (p, v)| {
            for k in 0..3 {
                p.0[k] += v.0[k] * DT;
            }
        });
        registry
            .query::<&mut Pos>()
            .each_chunk(|_, pos: &mut [Pos]| {
                for p in pos {
                    for x in &mut p.0 {
                        *x = *x * 0.999 + 0.001;
                    }
                }
            });
        if tick == 0 {
            registry
                .query::<(Entity, &Pos)>()
                .each(|e, (_, p)| first_step.push((e, *p)));
        }
        registry
            .query_filtered::<(&Pos, &mut Heat), With<Cold>>()
            .each_with(|e, (p, h), ctx| {
                h.0 = h.0 * 0.75 + p.0[0].abs() * 0.25;
                if h.0 > 900.0 && e.index() % 5 == 0 {
                    ctx.commands().remove::<(Cold,)>(e);
                }
            });
        registry
            .query_filtered::<(&mut Vel, &Pos), Without<Heat>>()
            .rows_per_task(100)
            .each_async(|_, (v, p)| {
                for k in 0..3 {
                    v.0[k] = v.0[k] * 0.98 - p.0[k] * 1e-3;
                }
            });
        registry
            .query::<(&mut Mass, &Pos)>()
            .each_async_with(move |e, (m, p), ctx| {
                m.0 = m.0 * 0.999 + f64::from(p.0[1]) * 1e-6;
                if e.index() % 997 == tick {
                    ctx.commands().spawn((Spark(e.index()),));
                }
            });
        registry.execute_tasks();
        let f32_sum = registry
            .query::<&Pos>()
            .each_async_reduce(
                || 0.0f32,
                |acc, _, p| acc + p.0[0] * 0.5 + p.0[1] - p.0[2] * 0.25,
                |a, b| a + b,
            )
            .join(&mut registry);
        let f64_sum = registry
            .query::<(&Mass, &Vel)>()
            .rows_per_task(64)
            .each_async_reduce(
                || 0.0f64,
                |acc, _, (m, v)| acc + m.0 * f64::from(v.0[0] * v.0[1]),
                |a, b| a + b,
            )
            .join(&mut registry);
        sums.push((f32_sum.to_bits(), f64_sum.to_bits()));
    }
    Outcome {
        hash: registry.world_hash::<(Pos, Vel, Mass, Heat, Spark)>(),
        sums,
        first_step,
    }
}

#[test]
fn both_row_paths_give_the_same_bits_as_scalar_code() {
    // The scalar reference of the first step, entity by entity in spawn order.
    let reference: Vec<Pos> = (0..ENTITIES + ENTITIES / 3)
        .map(|i| {
            let (mut p, v) = start(i);
            reference_step(&mut p, &v);
            p
        })
        .collect();

    let detected = RowPath::detected();
    let mut paths = vec![RowPath::Baseline];
    if detected != RowPath::Baseline {
        // Every loop on the AVX2 copy, then each loop on the copy it measured faster (the
        // adaptive mode's first calls alternate the two copies within one run).
        paths.push(detected);
        paths.push(RowPath::Adaptive);
    } else {
        eprintln!(
            "row_paths: one compiled copy here (target already has AVX2 + FMA, or the CPU \
             lacks them); comparing it with the scalar reference only"
        );
    }

    eprintln!("row_paths: comparing {paths:?}");
    let mut outcomes = Vec::new();
    for &path in &paths {
        RowPath::force(path);
        assert_eq!(RowPath::current(), path);
        for workers in [1, 3] {
            let outcome = run(workers);
            assert_eq!(outcome.first_step.len(), reference.len());
            for (i, ((e, got), want)) in outcome.first_step.iter().zip(&reference).enumerate() {
                assert_eq!(e.index() as usize, i, "spawn order");
                let (got, want) = (got.0.map(f32::to_bits), want.0.map(f32::to_bits));
                assert_eq!(got, want, "{path:?}: row {i} differs from scalar Rust");
            }
            outcomes.push((path, workers, outcome));
        }
    }
    let (first_path, first_workers, first) = &outcomes[0];
    // Printed so that builds for different targets can be compared too (the same hash is
    // expected from a generic and an x86-64-v3 build).
    eprintln!("row_paths: world hash {:#018x}", first.hash);
    for (path, workers, outcome) in &outcomes[1..] {
        let what = format!("{path:?} on {workers} workers vs {first_path:?} on {first_workers}");
        assert_eq!(outcome.hash, first.hash, "world hash: {what}");
        assert_eq!(
            outcome.sums, first.sums,
            "reductions (f32, f64 bits per tick): {what}"
        );
        assert!(
            outcome.first_step == first.first_step,
            "positions after the first step: {what}"
        );
    }
    RowPath::force(*paths.last().unwrap());
}
