//! A 300-tick run mixing every time tool with ordinary parallel work (deadline jobs with random
//! delays, pump work gated for determinism, A* paths under a work budget, commands from
//! `each_async` callbacks, `each_async` integration) on the fixed-step loop gives the same
//! per-tick world hashes for 1, 2, 3 and 8 workers.

mod time_common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use freyr_registry::{Entity, Phase, Registry, TimeStats, With, Without};
use freyr_time::{AsyncPump, BudgetQueue, Delivered, ManualClock};
use time_common::{
    Age, Agent, Board, Label, PathRequest, Pos, Route, Vel, mix, pause, rand, test_grid,
};

const TICKS: u64 = 300;
const AGENTS: u32 = 48;

/// Marks an agent whose path request is queued.
struct Queued;

/// The per-tick hashes, recorded by the last system of every tick.
struct Hashes(Vec<(u64, u64)>);

type SharedPump = Arc<Mutex<AsyncPump<u64, Entity>>>;

fn simulate(workers: usize) -> (Vec<(u64, u64)>, TimeStats, usize) {
    let salt = workers as u64 * 7919;
    let clock = ManualClock::new();
    let dt = Duration::from_secs(1) / 60;
    let mut r = Registry::with_workers(workers);
    r.set_fixed_step(dt, clock.clone()).unwrap();
    r.insert_resource(Hashes(Vec::new()));
    let grid = Arc::new(test_grid());

    r.spawn_batch((0..600u32).map(|i| {
        (
            Pos {
                x: i as f32 * 0.25,
                y: (i % 17) as f32,
            },
            Vel {
                x: 1.0 / (i as f32 + 1.0),
                y: 0.5 - (i % 5) as f32 * 0.25,
            },
            Age(0),
        )
    }));
    let agents = r.spawn_batch((0..AGENTS).map(|i| {
        let agent = Agent {
            cell: (i % 6, (i * 5) % 24),
            goal: (23 - i % 5, (i * 7) % 24),
        };
        (agent, Label(0))
    }));
    let board = r.spawn((Board(0),));

    // Deadline jobs, K = 2: a checksum of a snapshot, applied to the board at T + 2.
    r.add_deadline_jobs(2, move |r: &mut Registry, done: Delivered<u64>| {
        assert_eq!(r.tick(), done.ticket.due());
        let value = done.result.expect("no job panics here");
        let b = r.get_mut::<Board>(board).unwrap();
        b.0 = mix(b.0 ^ value ^ done.ticket.due());
    })
    .unwrap();
    r.add_system(Phase::PreUpdate, move |r: &mut Registry, _dt: f32| {
        let tick = r.tick();
        let mut snapshot = Vec::with_capacity(64);
        r.query::<&Pos>().each(|_, p| {
            if snapshot.len() < 64 {
                snapshot.push(u64::from(p.x.to_bits() ^ p.y.to_bits()));
            }
        });
        r.request_job(snapshot, move |s: Vec<u64>| {
            pause(mix(tick ^ salt) % 1500); // slower or faster on each worker count
            s.iter().fold(tick, |acc, &x| mix(acc ^ x))
        })
        .unwrap();
    });

    // Update: integration with per-(entity, tick) turbulence, and a life cycle whose spawns and
    // despawns are commands recorded by parallel callbacks.
    r.add_system(Phase::Update, |r: &mut Registry, dt: f32| {
        let tick = r.tick();
        r.query::<(&mut Pos, &Vel)>()
            .with_label("Integrate")
            .each_async(move |e, (p, v)| {
                let gust = (rand(e, tick, 1) % 101) as f32 * 1e-3 - 0.05;
                p.x += v.x * dt + gust;
                p.y += v.y * dt - gust;
            });
        r.query::<&mut Age>()
            .with_label("Life")
            .each_async_with(move |e, age, ctx| {
                age.0 += 1;
                let roll = rand(e, tick, 2);
                if roll.is_multiple_of(89) {
                    ctx.commands().despawn(e);
                } else if roll.is_multiple_of(83) {
                    let x = (roll % 500) as f32;
                    ctx.commands()
                        .spawn((Pos { x, y: 1.0 }, Vel { x: -0.5, y: 0.25 }, Age(0)));
                }
            });
    });

    // Update: paths for every agent, A* under a budget of 150 node expansions per tick.
    let mut paths = BudgetQueue::<PathRequest>::new(150).unwrap();
    let grid_for_paths = Arc::clone(&grid);
    r.add_system(Phase::Update, move |r: &mut Registry, _dt: f32| {
        let tick = r.tick();
        let mut wanting = Vec::new();
        r.query_filtered::<&Agent, Without<Queued>>()
            .each(|e, a| wanting.push((e, *a)));
        for (e, a) in wanting {
            paths.push(PathRequest::new(e, &grid_for_paths, a.cell, a.goal));
            r.insert(e, (Queued,)).unwrap();
        }
        let mut found = Vec::new();
        paths.tick(|_, (agent, path)| found.push((agent, path)));
        for (agent, path) in found {
            let route = path.map_or(
                Route {
                    cells: 0,
                    cost: u32::MAX,
                    found_at: tick,
                },
                |p| Route {
                    cells: p.cells.len() as u32,
                    cost: u32::try_from(p.cost).expect("a 24 x 24 grid's path cost fits a u32"),
                    found_at: tick,
                },
            );
            let a = *r.get::<Agent>(agent).unwrap();
            let next = (rand(agent, tick, 3) % 24) as u32;
            r.insert(
                agent,
                (
                    route,
                    Agent {
                        cell: a.goal,
                        goal: (next, 23 - next),
                    },
                ),
            )
            .unwrap();
            r.remove::<(Queued,)>(agent).unwrap();
        }
    });

    // PostUpdate: pump work (capacity 4), drained in this system only; a gate holds the next
    // tick until every launch is drainable, so each launch lands exactly one tick later.
    let pump: SharedPump = Arc::new(Mutex::new(AsyncPump::with_capacity(4).unwrap()));
    let gate_pump = Arc::clone(&pump);
    r.add_gate(move |_next: u64| {
        let p = gate_pump.lock().unwrap();
        p.drainable() == p.in_flight()
    });
    let mut next_agent = 0usize;
    r.add_system(Phase::PostUpdate, move |r: &mut Registry, _dt: f32| {
        let mut pump = pump.lock().unwrap();
        r.drain_pump(
            &mut pump,
            |r, e, v| r.get_mut::<Label>(e).unwrap().0 = v,
            |_, e, why| panic!("pump result for {e:?} discarded: {why:?}"),
        );
        while pump.is_ready() {
            let e = agents[next_agent % agents.len()];
            next_agent += 1;
            let snapshot = *r.get::<Agent>(e).unwrap();
            let tick = r.tick();
            pump.launch(r.pool(), e, snapshot, move |a: Agent| {
                pause(mix(tick ^ salt ^ u64::from(a.goal.0)) % 800);
                Ok(mix(u64::from(a.cell.0) << 32 | u64::from(a.goal.1)) ^ tick)
            })
            .unwrap();
        }
    });

    // Last: record this tick's world hash.
    r.add_system(Phase::PostUpdate, |r: &mut Registry, _dt: f32| {
        let tick = r.tick();
        let hash = r.world_hash::<(Pos, Vel, Age, Board, Label, Agent, Route)>();
        r.resource_mut::<Hashes>().unwrap().0.push((tick, hash));
    });

    while r.tick() < TICKS {
        clock.advance(dt);
        if r.run_frame().held {
            // Pump work for the next tick is still running: give the workers the core.
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    let routes = r.query_filtered::<&Route, With<Agent>>().count();
    let mut hashes = r.remove_resource::<Hashes>().unwrap().0;
    hashes.truncate(TICKS as usize);
    (hashes, r.profile().time, routes)
}

#[test]
fn per_tick_hashes_match_for_1_2_3_and_8_workers() {
    let (reference, time, routes) = simulate(1);
    assert_eq!(reference.len(), TICKS as usize);
    assert!(
        reference
            .iter()
            .enumerate()
            .all(|(i, &(t, _))| t == i as u64),
        "ticks in order"
    );
    // A frame may run a few ticks past TICKS (catch-up after a hold); those count too.
    assert!(time.ticks >= TICKS);
    assert_eq!(time.deadlines.requested, time.ticks);
    assert_eq!(
        time.deadlines.applied,
        time.ticks - 2,
        "one job per tick, each applied at T + 2"
    );
    assert_eq!(routes, AGENTS as usize, "every agent got a path");
    for workers in [2, 3, 8, 16, 64] {
        let (hashes, time, _) = simulate(workers);
        for (tick, (want, got)) in reference.iter().zip(&hashes).enumerate() {
            assert_eq!(want, got, "tick {tick} differs on {workers} workers");
        }
        assert_eq!(hashes.len(), reference.len());
        assert_eq!(time.deadlines.applied, time.ticks - 2);
    }
}
