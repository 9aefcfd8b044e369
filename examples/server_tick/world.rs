//! The aircraft: their components, the per-(entity, tick) hash every random choice comes
//! from, and how new aircraft are made.
//!
//! An aircraft is a [`Flight`] (position, velocity, heading), the [`Input`] its controller
//! last produced and an [`Ai`] controller. Three controller kinds of very different cost share
//! the AI pass (see `ai.rs`): most patrol (cheap), a quarter pursue a neighbour found through
//! the spatial grid, and one in twenty runs a small interpreted script, the expensive kind.

use freyr::hash::StableHasher;
use freyr::{Entity, StableHash};

/// The fixed tick length, in seconds (60 Hz).
pub(crate) const DT: f32 = 1.0 / 60.0;
/// The side of the map at [`REFERENCE_ENTITIES`] aircraft: 40 km.
pub(crate) const REFERENCE_SIDE: f32 = 40_000.0;
/// The population [`REFERENCE_SIDE`] is sized for (the example's default).
pub(crate) const REFERENCE_ENTITIES: usize = 20_000;

/// The side, in metres, of the square map `[0, side)²` that holds `entities` aircraft: the map
/// grows with the population at constant density, 12.5 aircraft per km² (20,000 on 40 km × 40
/// km, 200,000 on 126.5 km), so each aircraft's neighbourhood, and with it the AI's cost per
/// aircraft, stays the same whatever the count. At least 1 m.
#[must_use]
pub(crate) fn map_side(entities: usize) -> f32 {
    let scale = (entities as f64 / REFERENCE_ENTITIES as f64).sqrt();
    ((f64::from(REFERENCE_SIDE) * scale) as f32).max(1.0)
}
/// Altitude bounds, in metres.
pub(crate) const ALT_MIN: f32 = 100.0;
/// Altitude bounds, in metres.
pub(crate) const ALT_MAX: f32 = 12_000.0;
/// The fastest an aircraft flies, in metres per second.
pub(crate) const MAX_SPEED: f32 = 250.0;

/// The hash every random choice comes from: [`freyr::mix`] of the two keys folded SplitMix64's
/// way, keyed by what the choice is about (entity index, tick, purpose), never a shared
/// generator, so the outcome does not depend on which worker evaluates it or in which order.
#[must_use]
pub(crate) fn mix(a: u64, b: u64) -> u64 {
    freyr::mix(
        a.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(b)
            .wrapping_add(0x9E37_79B9_7F4A_7C15),
    )
}

/// A uniform value in `[0, 1)` from a hash.
#[must_use]
pub(crate) fn unit(h: u64) -> f32 {
    (h >> 40) as f32 / (1u64 << 24) as f32
}

/// An aircraft's flight state: written only by the integrate pass, for its own entity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Flight {
    /// Position: x, y across the map, z the altitude, in metres.
    pub pos: [f32; 3],
    /// Velocity, in metres per second.
    pub vel: [f32; 3],
    /// Heading in radians, `[0, 2π)`.
    pub heading: f32,
}

/// Hit points: changed rarely (only aircraft of a squadron engaged this tick take damage, a
/// few percent per tick), so the per-peer pass sends it only from chunks changed since the
/// tick the peer last received the entity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Health(pub u8);

/// Aircraft per squadron: consecutive spawn numbers fly, and are engaged, together.
pub(crate) const SQUADRON: u64 = 64;

/// Whether aircraft `index` takes damage at `tick`: its squadron is engaged (1 in 25 per tick)
/// and it is hit (1 in 2): about 2% of aircraft per tick, a pure function of (entity, tick).
#[must_use]
pub(crate) fn hit(index: u32, tick: u64) -> bool {
    let index = u64::from(index);
    mix(index / SQUADRON, tick).is_multiple_of(25) && mix(index, tick ^ 0x6869_7421) & 1 == 0
}

/// A weapon an aircraft carries: a child of its aircraft (`Registry::spawn_children`), so it is
/// despawned with it. Each aircraft carries [`LOADOUT`]: a missile rack and a gun. Written only
/// by the `weapons` function system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Weapon {
    /// Ticks between two shots.
    pub reload: u16,
    /// Shots left.
    pub ammo: u16,
    /// Ticks until the next shot is possible.
    pub cooldown: u16,
}

/// The weapons every aircraft is spawned with, in child order: missiles (4, one every two
/// seconds) and a gun (400 rounds, ten shots a second).
pub(crate) const LOADOUT: [(Weapon,); 2] = [
    (Weapon {
        reload: 120,
        ammo: 4,
        cooldown: 0,
    },),
    (Weapon {
        reload: 6,
        ammo: 400,
        cooldown: 0,
    },),
];

impl StableHash for Weapon {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.reload.stable_hash(h);
        self.ammo.stable_hash(h);
        self.cooldown.stable_hash(h);
    }
}

/// What the controller asks of the airframe: written only by the AI pass, for its own entity.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Input {
    /// The heading to turn towards, in radians.
    pub heading: f32,
    /// Fraction of [`MAX_SPEED`] to fly at, `[0, 1]`.
    pub throttle: f32,
    /// Climb rate asked for, in metres per second.
    pub climb: f32,
}

/// The controller kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AiKind {
    /// Circles its waypoint: a few arithmetic operations.
    Patrol,
    /// Chases an aircraft found through the grid: a neighbourhood search when it has no target.
    Pursuit,
    /// Runs an interpreted script over its neighbourhood: the expensive kind.
    Scripted,
}

/// An aircraft's controller and its own memory: written only by the AI pass, for its own
/// entity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Ai {
    /// The controller kind.
    pub kind: AiKind,
    /// The point a patrol circles, or a script's home.
    pub waypoint: [f32; 2],
    /// The aircraft a pursuit chases (generation-checked: a destroyed target is dropped).
    pub target: Option<Entity>,
    /// Script registers that persist between samples.
    pub registers: [f32; 4],
}

impl StableHash for Flight {
    fn stable_hash(&self, h: &mut StableHasher) {
        for v in self.pos.iter().chain(&self.vel) {
            v.stable_hash(h);
        }
        self.heading.stable_hash(h);
    }
}

impl StableHash for Input {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.heading.stable_hash(h);
        self.throttle.stable_hash(h);
        self.climb.stable_hash(h);
    }
}

impl StableHash for Ai {
    fn stable_hash(&self, h: &mut StableHasher) {
        (self.kind as u8).stable_hash(h);
        self.waypoint[0].stable_hash(h);
        self.waypoint[1].stable_hash(h);
        self.target.map_or(u64::MAX, Entity::to_bits).stable_hash(h);
        for r in &self.registers {
            r.stable_hash(h);
        }
    }
}

/// The components of aircraft number `n` of a batch made at tick `tick` on a map `side` metres
/// across: a pure function, so the same spawns happen on every worker count.
#[must_use]
pub(crate) fn new_aircraft(n: u64, tick: u64, side: f32) -> (Flight, Input, Ai, Health) {
    let h = |purpose: u64| mix(mix(n, tick), purpose);
    let pos = [
        unit(h(1)) * side,
        unit(h(2)) * side,
        ALT_MIN + unit(h(3)) * (ALT_MAX - ALT_MIN),
    ];
    let heading = unit(h(4)) * core::f32::consts::TAU;
    let speed = MAX_SPEED * (0.4 + 0.5 * unit(h(5)));
    let flight = Flight {
        pos,
        vel: [speed * heading.cos(), speed * heading.sin(), 0.0],
        heading,
    };
    let roll = h(6) % 100;
    let kind = match roll {
        0..5 => AiKind::Scripted,
        5..30 => AiKind::Pursuit,
        _ => AiKind::Patrol,
    };
    let ai = Ai {
        kind,
        waypoint: [unit(h(7)) * side, unit(h(8)) * side],
        target: None,
        registers: [0.0; 4],
    };
    let input = Input {
        heading,
        throttle: 0.7,
        climb: 0.0,
    };
    (flight, input, ai, Health(100))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_aircraft_is_a_pure_function_of_its_number_and_tick() {
        let side = REFERENCE_SIDE;
        assert_eq!(new_aircraft(5, 9, side), new_aircraft(5, 9, side));
        assert_ne!(new_aircraft(5, 9, side).0, new_aircraft(6, 9, side).0);
        let kinds: Vec<_> = (0..1000).map(|n| new_aircraft(n, 0, side).2.kind).collect();
        let scripted = kinds.iter().filter(|k| **k == AiKind::Scripted).count();
        let pursuit = kinds.iter().filter(|k| **k == AiKind::Pursuit).count();
        assert!((25..80).contains(&scripted), "{scripted} scripted of 1000");
        assert!((200..300).contains(&pursuit), "{pursuit} pursuit of 1000");
    }

    #[test]
    fn the_map_grows_with_the_population_at_constant_density() {
        assert_eq!(map_side(REFERENCE_ENTITIES), REFERENCE_SIDE);
        assert_eq!(map_side(4 * REFERENCE_ENTITIES), 2.0 * REFERENCE_SIDE);
        assert_eq!(map_side(REFERENCE_ENTITIES / 4), REFERENCE_SIDE / 2.0);
        for n in [1_000, 20_000, 200_000, 10_000_000] {
            let km = f64::from(map_side(n)) / 1000.0;
            let density = n as f64 / (km * km);
            assert!((density - 12.5).abs() < 1e-3, "{n}: {density} per km²");
        }
        assert_eq!(map_side(0), 1.0);
    }

    #[test]
    fn unit_stays_in_the_half_open_interval() {
        for i in 0..10_000 {
            let u = unit(mix(i, 3));
            assert!((0.0..1.0).contains(&u));
        }
        assert_eq!(unit(u64::MAX), 1.0 - 1.0 / (1u64 << 24) as f32);
    }
}
