//! The simulation behind `cargo run --release --example million`, shared with the root test
//! `tests/million_sim.rs` (both include this file with `#[path]`), so the test checks exactly the
//! code the example runs.
//!
//! The world: `entities` entities with [`Position`] and [`Velocity`]; a tenth also carry an
//! [`Ai`], the rest a [`Lifetime`] counting down ticks. Each [`Registry::update`] runs:
//!
//! | phase      | label       | kind                  | access                                   |
//! |------------|-------------|-----------------------|------------------------------------------|
//! | PreUpdate  | `Steer`     | `each_async`          | `&Ai`, `&mut Velocity`                   |
//! | Update     | `Integrate` | `each_async_with`     | `&mut Position`, `&Velocity`, `Option<&mut Lifetime>`; despawns expired entities |
//! | Update     | `AI Think`  | `each_with`, overlapping `Integrate` | `&mut Ai`; spawns new entities |
//! | PostUpdate | `Anchor`    | `each_async`          | `&Position`, `&mut Ai`                   |
//!
//! `AI Think` runs on the calling thread while `Integrate`'s chunk tasks run on the workers: the
//! two touch disjoint components, so neither waits (no implicit sync point). Every tick about
//! `churn` entities expire and about `churn` are spawned, so the population stays near its
//! starting size. All randomness comes from [`mix`] of (entity, tick): no shared RNG, so the
//! world is bit-identical for every worker count.

use std::time::{Duration, Instant};

use freyr::profile::ProfileReport;
use freyr::{Phase, Registry, StableHash};

/// Fixed time step of the simulation, in seconds.
pub(crate) const DT: f32 = 1.0 / 60.0;

/// Where an entity is.
#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
pub(crate) struct Position {
    /// x coordinate.
    pub x: f32,
    /// y coordinate.
    pub y: f32,
    /// z coordinate.
    pub z: f32,
}

/// How fast an entity moves, per second.
#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
pub(crate) struct Velocity {
    /// x component.
    pub x: f32,
    /// y component.
    pub y: f32,
    /// z component.
    pub z: f32,
}

/// Ticks left before a non-AI entity expires (and is despawned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, StableHash)]
pub(crate) struct Lifetime(pub u32);

/// The state of an AI-driven entity.
#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
pub(crate) struct Ai {
    /// Seconds until the next decision.
    pub think_timer: f32,
    /// Desired direction of travel (x, y), unit length.
    pub heading: [f32; 2],
    /// Desired speed.
    pub speed: f32,
    /// Where the entity was at the end of the last tick; spawns appear here.
    pub anchor: [f32; 3],
    /// Decisions taken so far.
    pub decisions: u32,
}

/// The current tick number, a resource read by the AI pass.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Clock {
    /// Ticks completed so far.
    pub tick: u32,
}

/// [`freyr::mix`] over (`key`, `tick`, `salt`): the per-entity random source.
pub(crate) fn mix(key: u64, tick: u32, salt: u64) -> u64 {
    freyr::mix(
        key ^ u64::from(tick).wrapping_mul(0xD6E8_FEB8_6659_FD93)
            ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15),
    )
}

/// A float in `[0, 1)` from the top 24 bits of `bits`.
pub(crate) fn unit(bits: u64) -> f32 {
    (bits >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
}

/// A unit vector in the plane from `bits`.
fn direction(bits: u64) -> [f32; 2] {
    let angle = unit(bits) * core::f32::consts::TAU;
    [angle.cos(), angle.sin()]
}

/// The size and shape of a run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    /// Entities at the start.
    pub entities: usize,
    /// One in `ai_every` entities has an [`Ai`] (10 = 10%).
    pub ai_every: usize,
    /// Expected spawns (and despawns) per tick.
    pub churn: usize,
    /// Pool size, the calling thread included (0 = one per CPU).
    pub workers: usize,
    /// Ticks to run.
    pub ticks: u32,
}

impl Config {
    /// Ticks a non-AI entity lives: the population of non-AI entities divided by `churn`, so
    /// about `churn` of them expire per tick.
    pub(crate) fn lifetime(&self) -> u32 {
        let plain = self.entities - self.entities / self.ai_every;
        (plain / self.churn.max(1)).max(1) as u32
    }

    /// The spawn threshold of one AI decision roll: `churn` spawns per tick expected over all AI
    /// entities.
    fn spawn_threshold(&self) -> u64 {
        let ai = (self.entities / self.ai_every).max(1) as u128;
        let p = (self.churn as u128) << 64;
        (p / ai).min(u128::from(u64::MAX)) as u64
    }
}

/// What a run measured.
pub(crate) struct Outcome {
    /// Workers the pool really had.
    pub workers: usize,
    /// Wall time of building the world.
    pub setup: Duration,
    /// Wall time of every `update`, in tick order.
    pub tick_times: Vec<Duration>,
    /// The profiler at the end.
    pub profile: ProfileReport,
    /// Live entities at the end.
    pub entities: usize,
    /// Entities with an [`Ai`] at the end.
    pub ai_entities: usize,
    /// Whole-world hash of every entity's Position, Velocity, Ai and Lifetime at the end.
    pub hash: u64,
}

impl Outcome {
    /// The `q`-quantile (0.0..=1.0) of the tick times, nearest rank.
    pub(crate) fn tick_quantile(&self, q: f64) -> Duration {
        let mut sorted = self.tick_times.clone();
        sorted.sort_unstable();
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }
}

/// The starting entity `i`: deterministic position, velocity and lifetime.
fn initial(i: usize, config: &Config) -> (Position, Velocity, u32) {
    let bits = mix(i as u64, 0, 0xA11);
    let [dx, dy] = direction(bits);
    let speed = 1.0 + unit(bits.rotate_left(17)) * 4.0;
    let pos = Position {
        x: (i % 1000) as f32,
        y: (i / 1000) as f32,
        z: unit(bits.rotate_left(31)) * 10.0,
    };
    let vel = Velocity {
        x: dx * speed,
        y: dy * speed,
        z: 0.0,
    };
    let life = 1 + (bits % u64::from(config.lifetime())) as u32;
    (pos, vel, life)
}

/// Builds the world and the systems of a run.
pub(crate) fn build(config: &Config) -> Registry {
    let mut registry = Registry::with_workers(config.workers);
    registry.insert_resource(Clock::default());
    let ai_count = config.entities / config.ai_every;
    registry.spawn_batch((0..ai_count).map(|k| {
        let i = k * config.ai_every;
        let (pos, vel, _) = initial(i, config);
        let bits = mix(i as u64, 0, 0xB0B);
        let ai = Ai {
            think_timer: unit(bits) * 2.0,
            heading: direction(bits.rotate_left(23)),
            speed: 2.0,
            anchor: [pos.x, pos.y, pos.z],
            decisions: 0,
        };
        (pos, vel, ai)
    }));
    registry.spawn_batch(
        (0..config.entities)
            .filter(|i| i % config.ai_every != 0)
            .map(|i| {
                let (pos, vel, life) = initial(i, config);
                (pos, vel, Lifetime(life))
            }),
    );

    // PreUpdate: AI entities steer their velocity towards the heading they chose.
    registry.add_system(Phase::PreUpdate, |r: &mut Registry, dt: f32| {
        r.query::<(&Ai, &mut Velocity)>()
            .with_label("Steer")
            .each_async(move |_, (ai, vel)| {
                let blend = (4.0 * dt).min(1.0);
                vel.x += (ai.heading[0] * ai.speed - vel.x) * blend;
                vel.y += (ai.heading[1] * ai.speed - vel.y) * blend;
                vel.z *= 1.0 - blend;
            });
    });

    // Update: integrate everything in parallel, expiring lifetimes; overlap the AI's decisions on
    // the calling thread.
    let lifetime = config.lifetime();
    let threshold = config.spawn_threshold();
    registry.add_system(Phase::Update, move |r: &mut Registry, dt: f32| {
        r.query::<(&mut Position, &Velocity, Option<&mut Lifetime>)>()
            .with_label("Integrate")
            .each_async_with(move |e, (pos, vel, life), ctx| {
                pos.x += vel.x * dt;
                pos.y += vel.y * dt;
                pos.z += vel.z * dt;
                if let Some(life) = life {
                    life.0 = life.0.saturating_sub(1);
                    if life.0 == 0 {
                        ctx.commands().despawn(e);
                    }
                }
            });
        let tick = r.resource::<Clock>().map_or(0, |c| c.tick);
        r.query::<&mut Ai>()
            .with_label("AI Think")
            .each_with(|e, ai, ctx| {
                ai.think_timer -= dt;
                let key = e.to_bits();
                if ai.think_timer <= 0.0 {
                    let bits = mix(key, tick, 1);
                    ai.heading = direction(bits);
                    ai.speed = 0.5 + unit(bits.rotate_left(13)) * 5.0;
                    ai.think_timer = 0.25 + unit(bits.rotate_left(29)) * 1.75;
                    ai.decisions = ai.decisions.wrapping_add(1);
                }
                let roll = mix(key, tick, 2);
                if roll < threshold {
                    let [dx, dy] = direction(roll.rotate_left(7));
                    let [x, y, z] = ai.anchor;
                    ctx.commands().spawn((
                        Position { x, y, z },
                        Velocity {
                            x: dx * ai.speed,
                            y: dy * ai.speed,
                            z: 0.0,
                        },
                        Lifetime(lifetime),
                    ));
                }
            });
    });

    // PostUpdate: the AI remembers where it is (spawns of the next tick appear there), and the
    // clock advances.
    registry.add_system(Phase::PostUpdate, |r: &mut Registry, _dt: f32| {
        r.query::<(&Position, &mut Ai)>()
            .with_label("Anchor")
            .each_async(|_, (pos, ai)| ai.anchor = [pos.x, pos.y, pos.z]);
        if let Some(clock) = r.resource_mut::<Clock>() {
            clock.tick += 1;
        }
    });
    registry
}

/// Hash of the whole world (every live entity's id and components).
pub(crate) fn world_hash(registry: &Registry) -> u64 {
    registry.world_hash::<(Position, Velocity, Ai, Lifetime)>()
}

/// Builds the world, runs `config.ticks` updates, and reports.
pub(crate) fn run(config: &Config) -> Outcome {
    let start = Instant::now();
    let mut registry = build(config);
    let setup = start.elapsed();
    registry.reset_profile();
    let mut tick_times = Vec::with_capacity(config.ticks as usize);
    for _ in 0..config.ticks {
        let start = Instant::now();
        registry.update(DT);
        tick_times.push(start.elapsed());
    }
    let profile = registry.profile();
    let ai_entities = registry.query::<&Ai>().count();
    Outcome {
        workers: registry.workers(),
        setup,
        tick_times,
        profile,
        entities: registry.len(),
        ai_entities,
        hash: world_hash(&registry),
    }
}
