//! The reference world of the crate's tests, example and benchmark: the aircraft of the
//! `server_tick` example reduced to what crosses a border, on a square map cut into vertical
//! strips, one per zone.
//!
//! An aircraft is a [`Key`] (its stable identity: entity ids change when it moves), a
//! [`Flight`], a [`Health`] and a [`Pilot`]: four components, all plain data saved on the raw
//! path. Every random choice is a hash of (key, tick), never of the entity id or a shared
//! generator, so an aircraft flies the same whichever zone, process or worker runs it.

use freyr::hash::StableHasher;
use freyr::persist::bytemuck::{Pod, Zeroable};
use freyr::{Phase, Registry, StableHash, mix};

use crate::digest::ZoneDigest;
use crate::message::ZoneId;
use crate::zone::ZoneRules;

/// An aircraft's stable identity, kept across zones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable, StableHash)]
#[bytemuck(crate = "freyr::persist::bytemuck")]
#[repr(C)]
pub struct Key(pub u64);

/// Position and velocity in metres (x, y on the map, z the altitude), heading in radians.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, StableHash)]
#[bytemuck(crate = "freyr::persist::bytemuck")]
#[repr(C)]
pub struct Flight {
    /// Position.
    pub pos: [f32; 3],
    /// Velocity.
    pub vel: [f32; 3],
    /// Heading.
    pub heading: f32,
}

/// Hit points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable, StableHash)]
#[bytemuck(crate = "freyr::persist::bytemuck")]
#[repr(C)]
pub struct Health(pub u32);

/// How the aircraft is flown: its cruise speed and how sharply it turns.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, StableHash)]
#[bytemuck(crate = "freyr::persist::bytemuck")]
#[repr(C)]
pub struct Pilot {
    /// Cruise speed, metres per second.
    pub speed: f32,
    /// Largest turn rate, radians per second.
    pub turn: f32,
}

/// A map of side `side` metres cut into `zones` vertical strips of equal width.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Strips {
    /// How many zones.
    pub zones: u32,
    /// The map's side, in metres.
    pub side: f32,
}

impl Strips {
    /// The zone of the strip that holds `x`.
    #[must_use]
    pub fn zone_of(&self, x: f32) -> ZoneId {
        let strip = (x / self.side * self.zones as f32) as i64;
        strip.clamp(0, i64::from(self.zones) - 1) as ZoneId
    }
}

impl ZoneRules for Strips {
    type Place = Flight;

    fn owner(&self, place: &Flight) -> ZoneId {
        self.zone_of(place.pos[0])
    }

    fn digest(&self, registry: &mut Registry) -> ZoneDigest {
        digest(registry)
    }
}

/// The digest of a registry's aircraft, keyed by [`Key`].
pub fn digest(registry: &mut Registry) -> ZoneDigest {
    let mut out = ZoneDigest::default();
    registry
        .query::<(&Key, &Flight, &Health, &Pilot)>()
        .each(|_, (key, flight, health, pilot)| {
            let mut h = StableHasher::new();
            flight.stable_hash(&mut h);
            health.stable_hash(&mut h);
            pilot.stable_hash(&mut h);
            out.add(key.0, core::hash::Hasher::finish(&h));
        });
    out
}

/// A registry of `workers` workers with the aircraft types registered (persistent, hashable)
/// and the flight system added (Update): each aircraft turns by a (key, tick)-seeded amount,
/// flies, wraps around the map's edges and now and then takes damage.
#[must_use]
pub fn registry(workers: usize, side: f32) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_persistent_pod::<Key>("aircraft.key", 1);
    r.register_persistent_pod::<Flight>("aircraft.flight", 1);
    r.register_persistent_pod::<Health>("aircraft.health", 1);
    r.register_persistent_pod::<Pilot>("aircraft.pilot", 1);
    r.register_hashable::<Key>();
    r.register_hashable::<Flight>();
    r.register_hashable::<Health>();
    r.register_hashable::<Pilot>();
    r.add_system(Phase::Update, move |r: &mut Registry, dt: f32| {
        let tick = r.tick();
        r.query::<(&Key, &mut Flight, &mut Health, &Pilot)>()
            .each_async(move |_, (key, f, health, pilot)| {
                fly(key.0, tick, dt, side, f, health, pilot)
            });
    });
    r
}

fn unit(h: u64) -> f32 {
    (h >> 40) as f32 / (1u64 << 24) as f32
}

fn fly(
    key: u64,
    tick: u64,
    dt: f32,
    side: f32,
    f: &mut Flight,
    health: &mut Health,
    pilot: &Pilot,
) {
    let h = mix(key.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ tick);
    f.heading =
        (f.heading + (unit(h) - 0.5) * 2.0 * pilot.turn * dt).rem_euclid(core::f32::consts::TAU);
    let climb = (unit(mix(h)) - 0.5) * 20.0;
    f.vel = [
        f.heading.cos() * pilot.speed,
        f.heading.sin() * pilot.speed,
        climb,
    ];
    for (p, v) in f.pos.iter_mut().zip(f.vel) {
        *p += v * dt;
    }
    f.pos[0] = f.pos[0].rem_euclid(side);
    f.pos[1] = f.pos[1].rem_euclid(side);
    f.pos[2] = f.pos[2].clamp(100.0, 12_000.0);
    if h.is_multiple_of(997) {
        health.0 = health.0.saturating_sub(1);
    }
}

/// Aircraft `key` at the start: a pure function of the key and the map.
#[must_use]
pub fn aircraft(key: u64, side: f32) -> (Key, Flight, Health, Pilot) {
    let h = mix(key ^ 0x5EED);
    let heading = unit(mix(h ^ 3)) * core::f32::consts::TAU;
    let flight = Flight {
        pos: [
            unit(h) * side,
            unit(mix(h ^ 1)) * side,
            1000.0 + unit(mix(h ^ 2)) * 9000.0,
        ],
        vel: [0.0; 3],
        heading,
    };
    let pilot = Pilot {
        speed: 150.0 + unit(mix(h ^ 4)) * 100.0,
        turn: 0.1 + unit(mix(h ^ 5)) * 0.4,
    };
    (Key(key), flight, Health(100), pilot)
}

/// Spawns, in key order, the aircraft `0..count` that `strips` places in zone `zone`.
pub fn spawn_zone(registry: &mut Registry, strips: &Strips, zone: ZoneId, count: u64) {
    let mine = (0..count)
        .map(|k| aircraft(k, strips.side))
        .filter(|a| strips.owner(&a.1) == zone);
    registry.spawn_batch(mine);
}
