//! The same inputs give bit-identical worlds for 1, 2, 3 and 8 workers: a simulation whose
//! spawns, despawns, inserts and removes all come from `each_async` callbacks, and a float
//! reduction over a million entities.

use freyr_registry::{Entity, Phase, Registry, Res, StableHash, StableHasher, View};

#[derive(Clone, Copy)]
struct Pos {
    x: f32,
    y: f32,
}
#[derive(Clone, Copy)]
struct Vel {
    x: f32,
    y: f32,
}
#[derive(Clone, Copy)]
struct Age(u32);
#[derive(Clone, Copy)]
struct Marked(u32);
#[derive(Clone, Copy)]
struct Target(Entity);
#[derive(Clone, Copy)]
struct Seen(f32);
struct Tick(u32);

impl StableHash for Pos {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.x.stable_hash(h);
        self.y.stable_hash(h);
    }
}
impl StableHash for Vel {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.x.stable_hash(h);
        self.y.stable_hash(h);
    }
}
impl StableHash for Age {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}
impl StableHash for Marked {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}
impl StableHash for Target {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}
impl StableHash for Seen {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}

/// Per-entity randomness from (entity, tick), never a shared RNG.
fn rand(e: Entity, tick: u32, salt: u64) -> u64 {
    freyr::mix(e.to_bits() ^ (u64::from(tick) << 40) ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

fn simulate(workers: usize, ticks: u32) -> (u64, Vec<u32>, usize) {
    let mut registry = Registry::with_workers(workers);
    let first = registry.spawn_batch((0..2500u32).map(|i| {
        (
            Pos {
                x: i as f32 * 0.5,
                y: 0.0,
            },
            Vel {
                x: 1.0 / (i as f32 + 1.0),
                y: (i % 7) as f32 * 0.1,
            },
            Age(0),
        )
    }));
    // A tenth of the entities watch another one (a game server's AI pass).
    for (i, e) in first.iter().enumerate().step_by(10) {
        registry
            .insert(*e, (Target(first[(i * 7 + 3) % first.len()]), Seen(0.0)))
            .unwrap();
    }
    registry.insert_resource(Tick(0));

    // PreUpdate, AI pass: read other entities' positions, write only your own `Seen`.
    registry.add_system(Phase::PreUpdate, |r: &mut Registry, _dt: f32| {
        r.query::<(&Target, &mut Seen)>()
            .views::<(View<Pos>,)>()
            .with_label("AI")
            .each_async_with(|_, (target, seen), ctx| {
                let (positions,) = ctx.views();
                seen.0 = positions.get(target.0).map_or(-1.0, |p| p.x + p.y);
            });
    });
    // Update: integrate (async) overlapping the life-cycle pass (async, disjoint components).
    registry.add_system(Phase::Update, |r: &mut Registry, dt: f32| {
        r.query::<(&mut Pos, &Vel)>()
            .with_label("Integrate")
            .each_async(move |_, (p, v)| {
                p.x += v.x * dt;
                p.y += v.y * dt;
            });
        let tick = r.resource::<Tick>().unwrap().0;
        r.query::<&mut Age>()
            .views::<(Res<Tick>,)>()
            .with_label("Life")
            .each_async_with(move |e, age, ctx| {
                age.0 += 1;
                let roll = rand(e, tick, 1);
                let cmds = ctx.commands();
                if roll.is_multiple_of(61) {
                    cmds.despawn(e);
                } else if roll.is_multiple_of(53) {
                    let child = cmds.spawn((
                        Pos {
                            x: (roll % 1000) as f32,
                            y: 1.0,
                        },
                        Vel { x: -0.5, y: 0.25 },
                        Age(0),
                    ));
                    if roll.is_multiple_of(2) {
                        cmds.insert(child, (Marked(tick),));
                    }
                } else if roll.is_multiple_of(29) {
                    cmds.insert(e, (Marked(tick),));
                }
            });
    });
    // PostUpdate: remove old marks, retarget dead targets, advance the tick.
    registry.add_system(Phase::PostUpdate, |r: &mut Registry, _dt: f32| {
        let tick = r.resource::<Tick>().unwrap().0;
        r.query::<&Marked>().each_async_with(move |e, m, ctx| {
            if tick - m.0 > 4 {
                ctx.commands().remove::<(Marked,)>(e);
            }
        });
        r.query::<&Target>()
            .views::<(View<Pos>,)>()
            .each_async_with(|e, target, ctx| {
                let (positions,) = ctx.views();
                if !positions.contains(target.0) {
                    ctx.commands().remove::<(Target, Seen)>(e);
                }
            });
        r.resource_mut::<Tick>().unwrap().0 += 1;
    });

    let mut sums = Vec::new();
    for _ in 0..ticks {
        registry.update(1.0 / 60.0);
        let sum = registry
            .query::<&Pos>()
            .each_async_reduce(|| 0.0f32, |acc, _, p| acc + p.x, |a, b| a + b)
            .join(&mut registry);
        sums.push(sum.to_bits());
    }
    registry.world().check_invariants();
    let hash = registry.world_hash::<(Pos, Vel, Age, Marked, Target, Seen)>();
    (hash, sums, registry.len())
}

#[test]
fn simulation_hash_is_identical_for_1_2_3_and_8_workers() {
    // Under Miri a few ticks exercise the same paths at a size it can interpret; ThreadSanitizer
    // (`--cfg freyr_tsan`, CI's TSan step) races them over a tenth of the native run.
    let ticks = if cfg!(miri) {
        2
    } else if cfg!(freyr_tsan) {
        20
    } else {
        200
    };
    let (hash, sums, len) = simulate(1, ticks);
    // The run did structural work: the population changed.
    assert_ne!(len, 2500);
    assert!(len > 100);
    for workers in [2, 3, 8, 16, 64] {
        let (h, s, l) = simulate(workers, ticks);
        assert_eq!(l, len, "workers = {workers}");
        assert_eq!(s, sums, "workers = {workers}");
        assert_eq!(h, hash, "workers = {workers}");
    }
}

#[test]
#[cfg_attr(miri, ignore = "a million entities is too slow to interpret")]
fn float_reduction_over_a_million_entities_is_bit_identical() {
    struct Energy(f32);
    let sum = |workers| {
        let mut registry = Registry::with_workers(workers);
        // ThreadSanitizer (`--cfg freyr_tsan`) reduces 100k rows: the same tasks and combines.
        let n = if cfg!(freyr_tsan) {
            100_000
        } else {
            1_000_000u32
        };
        registry.spawn_batch((0..n).map(|i| {
            // Magnitudes spanning many orders, so any change of association shows in the bits.
            let v = (i % 977) as f32 * 1e-3 + 1.0 / ((i % 13) as f32 + 1.0) * 1e3;
            (Energy(if i % 2 == 0 { v } else { -v * 0.999 }),)
        }));
        let total = registry
            .query::<&Energy>()
            .each_async_reduce(|| 0.0f32, |acc, _, e| acc + e.0, |a, b| a + b)
            .join(&mut registry);
        // The same computation written out sequentially: fold each chunk from the identity in
        // row order, combine the chunk results in chunk order.
        let mut reference: Option<f32> = None;
        registry.query::<&Energy>().each_chunk(|_, energy| {
            let chunk = energy.iter().fold(0.0f32, |acc, e| acc + e.0);
            reference = Some(reference.map_or(chunk, |r| r + chunk));
        });
        assert_eq!(total.to_bits(), reference.unwrap().to_bits());
        // Split into tasks of at most 64 rows: a different grouping (so possibly other bits),
        // but again one fixed by the data alone — each chunk of `len` rows in
        // `len.div_ceil(64)` parts of near-equal length (`rows_per_task`'s layout), folded and
        // combined in order.
        let split = registry
            .query::<&Energy>()
            .rows_per_task(64)
            .each_async_reduce(|| 0.0f32, |acc, _, e| acc + e.0, |a, b| a + b)
            .join(&mut registry);
        let mut reference: Option<f32> = None;
        registry.query::<&Energy>().each_chunk(|_, energy| {
            let (len, parts) = (energy.len(), energy.len().div_ceil(64));
            for k in 0..parts {
                let piece = &energy[k * len / parts..(k + 1) * len / parts];
                let part = piece.iter().fold(0.0f32, |acc, e| acc + e.0);
                reference = Some(reference.map_or(part, |r| r + part));
            }
        });
        assert_eq!(split.to_bits(), reference.unwrap().to_bits());
        (total, split)
    };
    let (one, one_split) = sum(1);
    for workers in [2, 3, 8, 16, 64] {
        let (total, split) = sum(workers);
        assert_eq!(total.to_bits(), one.to_bits(), "workers = {workers}");
        assert_eq!(
            split.to_bits(),
            one_split.to_bits(),
            "workers = {workers}, split"
        );
    }
}
