//! The server tick's end-to-end rules, on a small world:
//!
//! - serial equivalence: byte-identical per-peer streams (and world) for 1, 2, 3 and 8 workers,
//!   over a run with aircraft shot down mid-run, peers joining and leaving, and forced levers;
//! - a disabled governor, or one that is never over budget, is byte for byte the ungoverned run;
//! - the levers change what is sent, and the governor engages and recovers;
//! - the registry's loop works for the server as the guide says: `tick()`, deadline jobs and
//!   async systems inside `run_frame`, and a hand-driven `update` loop is the same run.

use std::sync::Arc;
use std::time::Duration;

use freyr::profile::TickProfileConfig;
use freyr::time::GovernorParams;
use freyr::time::deadline::Delivered;
use freyr::time::pump::{Launched, Process};
use freyr::{AsyncSystem, Phase, Registry};

use freyr::hierarchy::ChildOf;

use crate::world::{Flight, LOADOUT, Weapon};

use crate::run::{LeverSource, Pace, RunConfig, RunReport, run};
use crate::server::{Server, Settings};

fn small() -> Settings {
    Settings {
        entities: 3000,
        peers: 24,
        cell_size: 2000.0,
        interest_radius: 6000.0,
        kill_every: 20,
        churn_every: 15,
        despawn_log_ticks: crate::snapshot::DESPAWN_LOG_TICKS,
    }
}

fn config(ticks: u64, levers: LeverSource) -> RunConfig {
    RunConfig {
        ticks,
        pace: Pace::Free,
        governor: GovernorParams::default(),
        levers,
        raise_budget: None,
        profile: Some(TickProfileConfig::default()),
    }
}

/// The load factor of every tick the profiler's window holds (every tick of these short runs).
fn load_factors(server: &Server) -> Vec<f64> {
    let profile = server.registry.tick_profile().expect("config() profiles");
    assert_eq!(profile.ticks_recorded(), profile.records().len() as u64);
    profile.records().map(|r| r.load_factor).collect()
}

fn run_on(workers: usize, config: &RunConfig) -> (RunReport, Server) {
    let mut server = Server::new(small(), workers);
    let report = run(&mut server, config);
    (report, server)
}

/// Every lever moves: interval 1 → 2 → 4, budget 1200 → 600 → 400, stride 1 → 2 → 4, interest
/// 1 → 0.5.
fn lever_schedule() -> LeverSource {
    LeverSource::Forced(vec![(0, 1.0), (12, 0.5), (27, 0.25), (44, 0.8)])
}

#[test]
fn peer_streams_are_byte_identical_for_1_2_3_and_8_workers() {
    let config = config(60, lever_schedule());
    let (reference, server) = run_on(1, &config);
    let streams = server.streams();
    // The run did what it claims to exercise.
    assert!(server.killed() > 0, "no aircraft was shot down");
    assert_eq!(
        streams.len(),
        small().peers + 60 / 15,
        "peers joined and left"
    );
    assert!(
        streams.iter().all(|(_, s)| s.packets > 0),
        "a peer never got a packet"
    );
    let levels = load_factors(&server);
    assert!(levels.contains(&0.25) && levels.contains(&0.5) && levels.contains(&1.0));
    assert_eq!(reference.lowest_load_factor, 0.25);
    for workers in [2, 3, 8] {
        let (report, server) = run_on(workers, &config);
        assert_eq!(
            server.streams(),
            streams,
            "{workers} workers: a peer's stream differs"
        );
        assert_eq!(
            report.stream_digest, reference.stream_digest,
            "{workers} workers"
        );
        assert_eq!(report.world_hash, reference.world_hash, "{workers} workers");
        assert_eq!(
            report.lever_digest, reference.lever_digest,
            "{workers} workers"
        );
    }
}

/// The weapons: two children per aircraft, destroyed with a shot-down aircraft, fired by the
/// `weapons` function system beside `damage`; the world (weapons included) is the same for
/// 1, 2, 3, 8 and 16 workers.
#[test]
fn weapons_ride_their_aircraft_and_the_world_is_the_same_for_every_worker_count() {
    let config = config(40, LeverSource::Forced(Vec::new()));
    let mut hashes = Vec::new();
    for workers in [1, 2, 3, 8, 16] {
        let (report, mut server) = run_on(workers, &config);
        assert!(server.killed() > 0, "no aircraft was shot down");
        let registry = &mut server.registry;
        registry.check_hierarchy();
        let mut aircraft = Vec::new();
        registry.query::<&Flight>().each(|e, _| aircraft.push(e));
        let mut mounted = Vec::new();
        registry
            .query::<(&Weapon, &ChildOf)>()
            .each(|_, (w, mount)| mounted.push((*w, mount.parent())));
        assert_eq!(aircraft.len(), small().entities);
        for &e in &aircraft {
            let weapons: Vec<Weapon> = registry
                .children(e)
                .iter()
                .map(|&w| *registry.get::<Weapon>(w).unwrap())
                .collect();
            assert_eq!(weapons.len(), LOADOUT.len(), "{e:?}'s weapons");
            assert_eq!(weapons[0].reload, LOADOUT[0].0.reload, "missiles first");
        }
        assert_eq!(mounted.len(), LOADOUT.len() * small().entities);
        let mut fired = 0;
        for (w, parent) in mounted {
            assert!(registry.get::<Flight>(parent).is_ok(), "an orphan weapon");
            let full = LOADOUT.iter().find(|l| l.0.reload == w.reload).unwrap().0;
            fired += u32::from(full.ammo - w.ammo);
        }
        assert!(fired > 0, "no weapon fired");
        hashes.push((report.world_hash, report.stream_digest, fired));
    }
    assert!(hashes.iter().all(|h| *h == hashes[0]), "{hashes:?}");
}

#[test]
fn a_disabled_or_never_overrun_governor_is_the_ungoverned_run() {
    let ungoverned = run_on(2, &config(40, LeverSource::Forced(Vec::new()))).0;
    // Off, with a budget no tick can meet: were it not off, it would shed work.
    let mut off = config(40, LeverSource::Governor { enabled: false });
    off.governor.budget = Duration::from_micros(1);
    let off = run_on(2, &off);
    let mut roomy = config(40, LeverSource::Governor { enabled: true });
    roomy.governor.budget = Duration::from_secs(3600);
    let never_over = run_on(2, &roomy);
    for (name, (report, server)) in [("governor off", &off), ("never over budget", &never_over)] {
        assert_eq!(report.stream_digest, ungoverned.stream_digest, "{name}");
        assert_eq!(report.world_hash, ungoverned.world_hash, "{name}");
        assert_eq!(report.lever_digest, ungoverned.lever_digest, "{name}");
        assert!(load_factors(server).iter().all(|&lf| lf == 1.0), "{name}");
        assert_eq!(report.lowest_load_factor, 1.0, "{name}");
        assert_eq!(
            report.governor.1,
            (0, 0),
            "{name}: no decision moved the load factor"
        );
    }
}

#[test]
fn the_levers_change_what_is_sent_but_not_the_physics_rate() {
    let full = run_on(1, &config(30, LeverSource::Forced(Vec::new()))).0;
    let shed = run_on(1, &config(30, LeverSource::Forced(vec![(0, 0.25)]))).0;
    assert_ne!(shed.stream_digest, full.stream_digest);
    assert_ne!(shed.lever_digest, full.lever_digest);
    // AI sampling is strided, so the world differs too, but every tick still ran.
    assert_eq!(shed.ticks, full.ticks);
    assert_ne!(shed.world_hash, full.world_hash);
}

#[test]
fn the_governor_engages_over_budget_and_recovers_when_the_budget_is_raised() {
    let mut cfg = config(140, LeverSource::Governor { enabled: true });
    // No tick fits in a microsecond; every tick fits in an hour.
    cfg.governor.budget = Duration::from_micros(1);
    cfg.raise_budget = Some((60, Duration::from_secs(3600)));
    let (report, server) = run_on(2, &cfg);
    let lf = &load_factors(&server);
    let floor = GovernorParams::default().floor();
    assert_eq!(lf[0], 1.0);
    assert_eq!(
        lf[59], floor,
        "the governor did not reach its floor over budget"
    );
    assert_eq!(
        lf[139], 1.0,
        "the governor did not recover after the budget was raised"
    );
    // Only the decisions that moved the load factor count: 1 -> 0.7 -> 0.49 -> 0.343 -> 0.25
    // down (the rest of the over-budget ticks hold at the floor), 0.25 + 6 x 0.125 up.
    assert_eq!(report.governor.1, (4, 6));
    let moves = |down: bool| {
        lf.windows(2)
            .filter(|w| if down { w[1] < w[0] } else { w[1] > w[0] })
            .count() as u64
    };
    assert_eq!((moves(true), moves(false)), report.governor.1);
    assert_eq!(report.lowest_load_factor, floor);
    assert_eq!(report.dropped, 0, "a free-paced run drops nothing");
}

#[test]
fn the_trace_of_a_server_tick_parses_and_covers_every_task_and_every_peer_built() {
    let mut cfg = config(6, LeverSource::Forced(Vec::new()));
    cfg.profile = Some(TickProfileConfig {
        trace_ticks: 4..5,
        ..TickProfileConfig::default()
    });
    let (_, server) = run_on(3, &cfg);
    let profile = server.registry.tick_profile().unwrap();
    let mut bytes = Vec::new();
    profile.write_chrome_trace(&mut bytes).unwrap();
    let trace: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let events: Vec<&serde_json::Value> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    assert!(events.iter().all(|e| e["args"]["tick"] == 4));
    let record = profile.records().find(|r| r.tick == 4).unwrap();
    // Query tasks: per launch, the batches tile 0..tasks exactly.
    let mut launches: std::collections::BTreeMap<u64, Vec<(u64, u64)>> = Default::default();
    // The function systems: one span each, on the worker that ran it.
    for name in ["damage", "weapons"] {
        let spans = events
            .iter()
            .filter(|e| e["cat"] == "task" && e["name"] == name)
            .count();
        assert_eq!(spans, 1, "{name}");
    }
    for e in events.iter().filter(|e| {
        e["cat"] == "task"
            && !["Snapshot", "damage", "weapons"].contains(&e["name"].as_str().unwrap())
    }) {
        let a = &e["args"];
        launches
            .entry(a["launch"].as_u64().unwrap())
            .or_default()
            .push((
                a["first_task"].as_u64().unwrap(),
                a["end_task"].as_u64().unwrap(),
            ));
    }
    let mut total = 0;
    for ranges in launches.values_mut() {
        ranges.sort_unstable();
        let mut next = 0;
        for &(first, end) in ranges.iter() {
            assert_eq!(first, next, "a gap or overlap in a launch's tasks");
            next = end;
        }
        total += next;
    }
    assert_eq!(launches.len(), 2, "the AI and integrate launches");
    assert_eq!(total, record.tasks);
    // The per-peer pass: one span per peer built. At load factor 1 every peer is due on an even
    // tick (the congested ones, every eighth, send every other tick: 0, 2, 4).
    let snapshots = events.iter().filter(|e| e["name"] == "Snapshot").count();
    assert_eq!(snapshots, small().peers);
    let phases: Vec<&str> = events
        .iter()
        .filter(|e| e["cat"] == "phase")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        phases,
        [
            "deadlines",
            "PreUpdate",
            "grid",
            "levers",
            "Update",
            "ai",
            "integrate",
            "combat",
            "gather",
            "serialize",
            "flush",
            "PostUpdate",
            "tail"
        ]
    );
}

#[test]
fn a_hand_driven_update_loop_is_the_run_frame_loop() {
    let (report, _) = run_on(2, &config(30, LeverSource::Forced(Vec::new())));
    let mut server = Server::new(small(), 2);
    for _ in 0..30 {
        server.tick();
    }
    assert_eq!(server.registry.tick(), 30);
    assert_eq!(server.registry.last_tick().unwrap().tick, 29);
    assert_eq!(server.world_hash(), report.world_hash);
    assert_eq!(server.stream_digest(), report.stream_digest);
    assert_eq!(report.ticks, 30);
}

/// What the extra systems saw: (tick applied, tick requested, aircraft counted).
#[derive(Default)]
struct Seen {
    deadline: Vec<(u64, u64, usize)>,
    pumped: Vec<(u64, u64, usize)>,
}

/// Counts the aircraft off the tick, through the server's own pump.
struct CountAircraft;

impl AsyncSystem for CountAircraft {
    type Request = usize;
    type Result = usize;
    type Error = String;

    fn collect(&mut self, registry: &mut Registry) -> Option<usize> {
        Some(registry.query::<&Flight>().count())
    }

    fn process(&mut self, count: Arc<usize>) -> Process<usize, String> {
        Process::on_pool(move || Ok(*count))
    }

    fn apply(&mut self, registry: &mut Registry, count: usize, launched: &Launched<usize>) {
        let now = registry.tick();
        registry
            .resource_mut::<Seen>()
            .unwrap()
            .pumped
            .push((now, launched.tick, count));
    }
}

/// The server with a deadline job (K = 3) requested every tick from a PostUpdate system and an
/// async system, run on `run_frame` like the example.
fn run_with_jobs(workers: usize) -> (RunReport, Server) {
    let mut server = Server::new(small(), workers);
    let registry = &mut server.registry;
    registry.insert_resource(Seen::default());
    registry
        .add_deadline_jobs(3, |r: &mut Registry, done: Delivered<(u64, usize)>| {
            let (requested, count) = done.result.unwrap();
            assert_eq!(done.ticket.requested_at(), requested);
            let now = r.tick();
            r.resource_mut::<Seen>()
                .unwrap()
                .deadline
                .push((now, requested, count));
        })
        .unwrap();
    registry.add_system(Phase::PostUpdate, |r: &mut Registry, _: f32| {
        let (tick, count) = (r.tick(), r.query::<&Flight>().count());
        r.request_job((tick, count), |inputs: (u64, usize)| inputs)
            .unwrap();
    });
    registry.add_async_system(Phase::Update, CountAircraft);
    let report = run(&mut server, &config(20, LeverSource::Forced(Vec::new())));
    (report, server)
}

#[test]
fn deadline_jobs_async_systems_and_tick_work_in_the_servers_loop() {
    let (report, mut server) = run_with_jobs(3);
    assert_eq!(report.ticks, 20);
    assert_eq!(server.registry.tick(), 20);
    let seen = server.registry.remove_resource::<Seen>().unwrap();
    // Requested at T in PostUpdate, applied at exactly T + 3 before the systems of that tick.
    let due: Vec<(u64, u64)> = seen
        .deadline
        .iter()
        .map(|&(at, from, _)| (at, from))
        .collect();
    assert_eq!(due, (3..20).map(|t| (t, t - 3)).collect::<Vec<_>>());
    assert!(seen.deadline.iter().all(|&(_, _, n)| n == small().entities));
    // The pump: launched at T, applied in its own update at a later tick, in launch order.
    assert!(!seen.pumped.is_empty());
    assert!(seen.pumped.windows(2).all(|w| w[0].1 < w[1].1));
    assert!(
        seen.pumped
            .iter()
            .all(|&(at, from, n)| at > from && n == small().entities)
    );
    // The orderly end: settle the jobs and the pumps, then drop the registry.
    assert_eq!(server.registry.settle_jobs(), 3);
    assert!(server.registry.settle_systems() <= 1);
    // The extra systems change no digest: the same run without them.
    let (plain, _) = run_on(3, &config(20, LeverSource::Forced(Vec::new())));
    assert_eq!(
        (report.world_hash, report.stream_digest),
        (plain.world_hash, plain.stream_digest)
    );
    for workers in [1, 2, 8] {
        let (other, _) = run_with_jobs(workers);
        assert_eq!(other.world_hash, report.world_hash, "{workers} workers");
    }
}
