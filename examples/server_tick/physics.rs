//! The integrate pass: one fixed step of an aircraft's flight, from its own [`Input`], with
//! turbulence seeded per (entity, tick).
//!
//! Each call writes only its own entity's [`Flight`]. Turbulence comes from a generator seeded
//! with [`mix`] of the entity's index and the tick and advanced locally, never from a shared
//! generator, so the perturbation does not depend on evaluation order: the world is
//! bit-identical for every worker count.

use core::f32::consts::{PI, TAU};

use crate::world::{ALT_MAX, ALT_MIN, DT, Flight, Input, MAX_SPEED, mix, unit};

/// The fastest turn, in radians per second.
pub(crate) const MAX_TURN_RATE: f32 = 0.6;
/// Peak turbulence acceleration, in metres per second squared.
pub(crate) const TURBULENCE: f32 = 1.5;

/// Advances `flight` by one tick of [`DT`] seconds on a map `side` metres across.
pub(crate) fn integrate(
    entity_index: u32,
    flight: &mut Flight,
    input: &Input,
    tick: u64,
    side: f32,
) {
    // Turn towards the asked heading by the shorter way, at most MAX_TURN_RATE.
    let mut turn = (input.heading - flight.heading).rem_euclid(TAU);
    if turn > PI {
        turn -= TAU;
    }
    let max_turn = MAX_TURN_RATE * DT;
    flight.heading = (flight.heading + turn.clamp(-max_turn, max_turn)).rem_euclid(TAU);

    // Turbulence: a local generator seeded by (entity, tick).
    let mut seed = mix(u64::from(entity_index), tick);
    let mut gust = || {
        seed = mix(seed, 0x7455_7262);
        (unit(seed) - 0.5) * 2.0 * TURBULENCE
    };
    let speed = MAX_SPEED * input.throttle.clamp(0.0, 1.0);
    let target = [
        speed * flight.heading.cos(),
        speed * flight.heading.sin(),
        input.climb.clamp(-30.0, 30.0),
    ];
    for (vel, target) in flight.vel.iter_mut().zip(target) {
        let accel = (target - *vel) * 0.5 + gust();
        *vel += accel * DT;
    }

    for axis in 0..3 {
        flight.pos[axis] += flight.vel[axis] * DT;
    }
    // Stay on the map: reflect off its edges and the altitude bounds.
    for (axis, (lo, hi)) in [(0.0, side), (0.0, side), (ALT_MIN, ALT_MAX)]
        .into_iter()
        .enumerate()
    {
        if flight.pos[axis] < lo {
            flight.pos[axis] = lo + (lo - flight.pos[axis]).min(hi - lo);
            flight.vel[axis] = flight.vel[axis].abs();
        } else if flight.pos[axis] >= hi {
            flight.pos[axis] = (hi - (flight.pos[axis] - hi)).max(lo).min(hi - 0.01);
            flight.vel[axis] = -flight.vel[axis].abs();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::{REFERENCE_SIDE as WORLD_SIZE, new_aircraft};

    #[test]
    fn turbulence_depends_on_the_entity_and_the_tick_only() {
        let (flight, input, _, _) = new_aircraft(3, 0, WORLD_SIZE);
        let step = |index, tick| {
            let mut f = flight;
            integrate(index, &mut f, &input, tick, WORLD_SIZE);
            f
        };
        assert_eq!(step(3, 10), step(3, 10));
        assert_ne!(step(3, 10), step(3, 11));
        assert_ne!(step(3, 10), step(4, 10));
    }

    #[test]
    fn aircraft_stay_on_the_map() {
        for n in 0..200 {
            let (mut flight, mut input, _, _) = new_aircraft(n, 1, WORLD_SIZE);
            input.climb = if n % 2 == 0 { 30.0 } else { -30.0 };
            input.throttle = 1.0;
            for tick in 0..3000 {
                integrate(n as u32, &mut flight, &input, tick, WORLD_SIZE);
                assert!((0.0..WORLD_SIZE).contains(&flight.pos[0]), "{flight:?}");
                assert!((0.0..WORLD_SIZE).contains(&flight.pos[1]), "{flight:?}");
                assert!((ALT_MIN..=ALT_MAX).contains(&flight.pos[2]), "{flight:?}");
            }
        }
    }
}
