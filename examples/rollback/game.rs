//! The simulated game: players steer by their inputs, fire bullets that live a few ticks,
//! bullets that hit nothing expire, and every few ticks a deadline job scores the field.

#[cfg(test)]
use freyr::Entity;
use freyr::time::deadline::Delivered;
use freyr::{Phase, Registry, StableHash, mix};

/// The deadline jobs' latency, in ticks: shorter than most input delays, so jobs are in
/// flight across the ticks a rollback goes back to.
pub(crate) const JOB_LATENCY: u64 = 3;

#[derive(Clone, Copy, StableHash)]
pub(crate) struct Pos(pub i64, pub i64);
#[derive(Clone, Copy, StableHash)]
pub(crate) struct Vel(pub i64, pub i64);
#[derive(Clone, Copy, StableHash)]
pub(crate) struct Player(pub u8);
#[derive(Clone, Copy, StableHash)]
pub(crate) struct Bullet {
    pub owner: u8,
    pub ttl: u8,
}
/// Scenery the players fly over (`--entities` of them), drifting.
#[derive(Clone, Copy, StableHash)]
pub(crate) struct Rock(pub u32);
/// A type first used when a player raises a shield (input bit 3): new archetypes inside
/// the ticks a rollback re-simulates.
#[derive(Clone, Copy, StableHash)]
pub(crate) struct Shield(pub u8);
/// The score of a deadline job, put on the scoreboard entity when it lands.
#[derive(Clone, StableHash)]
pub(crate) struct Score(pub Vec<u64>);

/// The inputs of the tick about to run, one per player (set by the session before `update`).
pub(crate) struct TickInputs(pub Vec<u8>);

/// The input player `player` really gives on tick `tick`: deterministic, changing often
/// enough that predictions miss.
#[must_use]
pub(crate) fn real_input(player: u8, tick: u64) -> u8 {
    // Held for 3 ticks at a time, like a thumb on a stick.
    (mix((u64::from(player) << 32) | (tick / 3)) & 0x1f) as u8
}

/// A world of `players` players and `rocks` rocks, with the snapshot registrations, the
/// deadline jobs and the systems.
#[must_use]
pub(crate) fn new_world(workers: usize, players: u8, rocks: u32) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_snapshot_copy::<Pos>();
    r.register_snapshot_copy::<Vel>();
    r.register_snapshot_copy::<Player>();
    r.register_snapshot_copy::<Bullet>();
    r.register_snapshot_copy::<Rock>();
    r.register_snapshot_copy::<Shield>();
    r.register_snapshot_clone::<Score>();
    // Written by the session before every tick: not part of the simulated state.
    r.exclude_resource_from_snapshot::<TickInputs>();
    r.insert_resource(TickInputs(vec![0; usize::from(players)]));
    for p in 0..players {
        r.spawn((Player(p), Pos(i64::from(p) * 100, 0), Vel(0, 0)));
    }
    r.spawn_batch((0..rocks).map(|i| {
        (
            Rock(i),
            Pos(i64::from(i % 1000), i64::from(i / 1000)),
            Vel(1, 0),
        )
    }));
    let board = r.spawn((Pos(0, 0),));
    r.add_deadline_jobs(
        JOB_LATENCY,
        move |r: &mut Registry, done: Delivered<u64>| {
            let score = done.result.expect("the scoring job does not panic");
            match r.get_mut::<Score>(board) {
                Ok(s) => s.0.push(score),
                Err(_) => {
                    r.insert(board, (Score(vec![score]),))
                        .expect("the board lives");
                }
            }
        },
    )
    .expect("a latency of at least 1");
    r.add_system(Phase::Update, steer);
    r.add_system(Phase::Update, fire_and_score);
    r.add_system(Phase::PostUpdate, advance);
    r
}

/// Sets each player's velocity from its input, and its shield from bit 3.
fn steer(r: &mut Registry, _: f32) {
    let inputs = r
        .resource::<TickInputs>()
        .expect("inserted at setup")
        .0
        .clone();
    let mut shields = Vec::new();
    r.query::<(&Player, &mut Vel)>().each(|e, (p, v)| {
        let input = inputs[usize::from(p.0)];
        *v = Vel(
            i64::from(input & 1) - i64::from(input >> 1 & 1),
            i64::from(input >> 2 & 1),
        );
        shields.push((e, input & 8 != 0));
    });
    for (e, up) in shields {
        let has = r.get::<Shield>(e).is_ok();
        if up && !has {
            r.insert(e, (Shield(3),)).expect("a player lives");
        } else if !up && has {
            r.remove::<(Shield,)>(e).expect("a player lives");
        }
    }
}

/// Fires a bullet for every player with bit 4 set; every 4 ticks, asks a deadline job to
/// score the players' positions.
fn fire_and_score(r: &mut Registry, _: f32) {
    let inputs = r
        .resource::<TickInputs>()
        .expect("inserted at setup")
        .0
        .clone();
    let mut players = Vec::new();
    r.query::<(&Player, &Pos)>()
        .each(|_, (p, pos)| players.push((p.0, pos.0, pos.1)));
    for &(p, x, y) in &players {
        if inputs[usize::from(p)] & 16 != 0 {
            r.spawn((Bullet { owner: p, ttl: 4 }, Pos(x, y), Vel(3, 0)));
        }
    }
    if r.tick().is_multiple_of(4) {
        r.request_job(players, |ps: Vec<(u8, i64, i64)>| {
            ps.iter().fold(0u64, |h, &(p, x, y)| {
                mix(h ^ u64::from(p) ^ (x as u64) << 8 ^ (y as u64) << 32)
            })
        })
        .expect("the jobs are not settled");
    }
}

/// Moves everything on the pool; bullets age and expire through each_async commands.
fn advance(r: &mut Registry, _: f32) {
    r.query::<(&mut Pos, &Vel)>().each_async(|_, (p, v)| {
        p.0 += v.0;
        p.1 += v.1;
    });
    r.query::<&mut Bullet>().each_async_with(|e, b, ctx| {
        b.ttl -= 1;
        if b.ttl == 0 {
            ctx.commands().despawn(e);
        }
    });
}

/// The world hash the session prints and the tests compare.
#[must_use]
pub(crate) fn hash(r: &Registry) -> u64 {
    r.world_hash::<(Pos, Vel, Player, Bullet, Rock, Shield, Score)>()
}

/// The entities with a position, in the order `each` visits them.
#[cfg(test)]
#[must_use]
pub(crate) fn each_order(r: &mut Registry) -> Vec<Entity> {
    let mut order = Vec::new();
    r.query::<&Pos>().each(|e, _| order.push(e));
    order
}
