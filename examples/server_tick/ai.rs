//! The AI pass: each controller samples a new [`Input`] for its own aircraft, reading the
//! *pre-step* state of the others through the spatial grid built at tick start and, for a
//! pursuit's target, through a read-only view of every aircraft's [`Flight`].
//!
//! Three kinds, costs far apart (like a native controller next to a scripted one):
//!
//! | kind | work per sample |
//! |---|---|
//! | `Patrol` | a few arithmetic operations towards its waypoint |
//! | `Pursuit` | a neighbourhood search through the grid when it has no live target |
//! | `Scripted` | a neighbourhood scan, then [`SCRIPT_STEPS`] steps of a small interpreter |
//!
//! Everything a sample reads was fixed before the pass began, and it writes only its own
//! entity's `Ai` and `Input`, so the result is the same whichever worker runs it, in whatever
//! order.

use core::f32::consts::{PI, TAU};

use freyr::Entity;
use freyr::query::ComponentView;

use crate::grid::{SpatialGrid, dist2};
use crate::world::{ALT_MAX, ALT_MIN, Ai, AiKind, Flight, Input, mix, unit};

/// How far a pursuit looks for a target, in metres.
pub(crate) const PURSUIT_RANGE: f32 = 3000.0;
/// How far a script scans its neighbourhood, in metres.
pub(crate) const SCRIPT_RANGE: f32 = 2500.0;
/// Interpreter steps per scripted sample.
pub(crate) const SCRIPT_STEPS: usize = 600;

/// Samples `entity`'s controller for tick `tick`.
pub(crate) fn sample(
    entity: Entity,
    flight: &Flight,
    ai: &mut Ai,
    input: &mut Input,
    grid: &SpatialGrid,
    flights: ComponentView<'_, Flight>,
    tick: u64,
) {
    match ai.kind {
        AiKind::Patrol => patrol(flight, ai, input),
        AiKind::Pursuit => pursuit(entity, flight, ai, input, grid, flights, tick),
        AiKind::Scripted => scripted(entity, flight, ai, input, grid, tick),
    }
}

fn heading_to(from: [f32; 3], to: [f32; 2]) -> f32 {
    (to[1] - from[1]).atan2(to[0] - from[0]).rem_euclid(TAU)
}

fn patrol(flight: &Flight, ai: &Ai, input: &mut Input) {
    let to = heading_to(flight.pos, ai.waypoint);
    // Circle the waypoint: aim a quarter turn off once close.
    let d2 = (flight.pos[0] - ai.waypoint[0]).powi(2) + (flight.pos[1] - ai.waypoint[1]).powi(2);
    input.heading = if d2 < 1500.0 * 1500.0 {
        (to + PI / 2.0) % TAU
    } else {
        to
    };
    input.throttle = 0.6;
    input.climb = (5000.0 - flight.pos[2]) * 0.01;
}

fn pursuit(
    entity: Entity,
    flight: &Flight,
    ai: &mut Ai,
    input: &mut Input,
    grid: &SpatialGrid,
    flights: ComponentView<'_, Flight>,
    tick: u64,
) {
    // A destroyed target fails the generation check and is dropped.
    let target = ai.target.and_then(|t| flights.get(t).map(|f| (t, f.pos)));
    let target = match target {
        Some((t, pos)) if dist2(pos, flight.pos) < (2.0 * PURSUIT_RANGE).powi(2) => Some((t, pos)),
        _ => {
            let mut best: Option<(f32, Entity, [f32; 3])> = None;
            grid.for_each_within(flight.pos, PURSUIT_RANGE, |other, d2| {
                if other.entity == entity {
                    return;
                }
                let better = match best {
                    None => true,
                    Some((bd, be, _)) => {
                        d2 < bd || (d2 == bd && other.entity.to_bits() < be.to_bits())
                    }
                };
                if better {
                    best = Some((d2, other.entity, other.pos));
                }
            });
            best.map(|(_, e, pos)| (e, pos))
        }
    };
    ai.target = target.map(|(t, _)| t);
    match target {
        Some((_, pos)) => {
            input.heading = heading_to(flight.pos, [pos[0], pos[1]]);
            input.throttle = 1.0;
            input.climb = (pos[2] - flight.pos[2]) * 0.05;
        }
        None => {
            // Nobody near: wander, seeded by (entity, tick).
            let h = mix(u64::from(entity.index()), tick);
            input.heading = (flight.heading + (unit(h) - 0.5) * 0.2).rem_euclid(TAU);
            input.throttle = 0.8;
            input.climb = 0.0;
        }
    }
}

/// The interpreter's instruction set: a register machine over the aircraft's four registers and
/// the neighbourhood summary.
#[derive(Clone, Copy)]
enum Op {
    AddNeighbours(u8),
    MulConst(u8, f32),
    Mix(u8, u8),
    Sin(u8),
    Clamp(u8),
}

/// The script every scripted aircraft runs (a fixed program; its cost is what matters).
const SCRIPT: [Op; 8] = [
    Op::AddNeighbours(0),
    Op::MulConst(0, 0.999),
    Op::Mix(1, 0),
    Op::Sin(1),
    Op::Mix(2, 1),
    Op::MulConst(2, 0.5),
    Op::Mix(3, 2),
    Op::Clamp(3),
];

fn scripted(
    entity: Entity,
    flight: &Flight,
    ai: &mut Ai,
    input: &mut Input,
    grid: &SpatialGrid,
    tick: u64,
) {
    // Neighbourhood summary: count, centroid offset and mean velocity of the neighbours.
    let mut count = 0.0f32;
    let mut offset = [0.0f32; 2];
    let mut vel = [0.0f32; 2];
    grid.for_each_within(flight.pos, SCRIPT_RANGE, |other, _| {
        if other.entity != entity {
            count += 1.0;
            offset[0] += other.pos[0] - flight.pos[0];
            offset[1] += other.pos[1] - flight.pos[1];
            vel[0] += other.vel[0];
            vel[1] += other.vel[1];
        }
    });
    let summary = count + (offset[0] - offset[1]) * 1e-4 + (vel[0] + vel[1]) * 1e-3;
    let mut r = ai.registers;
    for step in 0..SCRIPT_STEPS {
        match SCRIPT[step % SCRIPT.len()] {
            Op::AddNeighbours(a) => r[a as usize] += summary * 1e-3,
            Op::MulConst(a, k) => r[a as usize] *= k,
            Op::Mix(a, b) => r[a as usize] = 0.5 * (r[a as usize] + r[b as usize]),
            Op::Sin(a) => r[a as usize] = r[a as usize].sin(),
            Op::Clamp(a) => r[a as usize] = r[a as usize].clamp(-1.0, 1.0),
        }
    }
    ai.registers = r;
    let jitter = unit(mix(u64::from(entity.index()), tick)) - 0.5;
    let away = if count > 0.0 {
        // Separate from the crowd, steered by the script's output.
        (-offset[1]).atan2(-offset[0])
    } else {
        heading_to(flight.pos, ai.waypoint)
    };
    input.heading = (away + r[3] * 0.5 + jitter * 0.05).rem_euclid(TAU);
    input.throttle = 0.5 + 0.5 * r[2].abs().min(1.0);
    let mid = 0.5 * (ALT_MIN + ALT_MAX);
    input.climb = (mid - flight.pos[2]) * 0.01 + r[1] * 2.0;
}

#[cfg(test)]
mod tests {
    use freyr::{Registry, Res, View};

    use super::*;
    use crate::grid::GridEntry;
    use crate::world::{REFERENCE_SIDE as WORLD_SIZE, new_aircraft};

    /// A world of `n` aircraft of one kind.
    fn world_of(kind: AiKind, n: u64) -> (Registry, Vec<Entity>) {
        let mut registry = Registry::with_workers(1);
        let entities = registry.spawn_batch((0..n).map(|i| {
            let (f, input, mut ai, _) = new_aircraft(i, 0, WORLD_SIZE);
            ai.kind = kind;
            (f, input, ai)
        }));
        (registry, entities)
    }

    /// The tick-start grid, then the AI pass.
    fn run_ai(registry: &mut Registry, tick: u64) {
        let mut grid = SpatialGrid::new(2000.0, WORLD_SIZE);
        grid.clear();
        registry.query::<&Flight>().each(|e, f| {
            grid.push(GridEntry {
                entity: e,
                pos: f.pos,
                vel: f.vel,
            });
        });
        grid.finish();
        registry.insert_resource(grid);
        registry
            .query::<(&Flight, &mut Ai, &mut Input)>()
            .views::<(Res<SpatialGrid>, View<Flight>)>()
            .each_async_with(move |e, (f, ai, input), ctx| {
                let (grid, flights) = ctx.views();
                sample(e, f, ai, input, grid, flights, tick);
            });
        registry.execute_tasks();
    }

    #[test]
    fn a_pursuit_drops_a_destroyed_target_and_finds_another() {
        let (mut registry, entities) = world_of(AiKind::Pursuit, 4000);
        run_ai(&mut registry, 1);
        let (chaser, target) = entities
            .iter()
            .find_map(|&e| registry.get::<Ai>(e).unwrap().target.map(|t| (e, t)))
            .expect("some pursuit found a target among 4000 aircraft");
        registry.despawn(target).unwrap();
        run_ai(&mut registry, 2);
        let now = registry.get::<Ai>(chaser).unwrap().target;
        assert_ne!(now, Some(target), "chasing a destroyed aircraft");
    }

    #[test]
    fn every_kind_samples_the_same_input_from_the_same_state() {
        for kind in [AiKind::Patrol, AiKind::Pursuit, AiKind::Scripted] {
            let (mut one, entities) = world_of(kind, 3000);
            let (mut two, _) = world_of(kind, 3000);
            run_ai(&mut one, 7);
            run_ai(&mut two, 7);
            let mut changed = 0;
            for &e in &entities {
                assert_eq!(
                    one.get::<Ai>(e).unwrap(),
                    two.get::<Ai>(e).unwrap(),
                    "{kind:?}"
                );
                let input = one.get::<Input>(e).unwrap();
                assert_eq!(input, two.get::<Input>(e).unwrap(), "{kind:?}");
                changed +=
                    usize::from(*input != new_aircraft(u64::from(e.index()), 0, WORLD_SIZE).1);
            }
            assert!(changed > 2000, "{kind:?}: only {changed} inputs changed");
        }
    }
}
