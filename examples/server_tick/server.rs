//! The authoritative server tick: the world, the peers, and the systems of one tick, run by the
//! registry's own loop ([`Registry::update`], from `run_frame` in `run.rs`).
//!
//! | system (phase) | runs | reads | writes |
//! |---|---|---|---|
//! | `grid` (PreUpdate) | serial | every `Flight` | the spatial grid (a resource, buffers kept) |
//! | `ai` (Update) | `each_async`, label `AI` | the grid, `View<Flight>` (pre-step) | own `Ai`, `Input` |
//! | `integrate` (Update) | `each_async`, label `Integrate` | own `Input` | own `Flight` |
//! | `damage` (Update) | function system, beside `weapons` | every aircraft's index | the `Health` of the ~2% hit |
//! | `weapons` (Update) | function system, beside `damage` | each weapon's aircraft's `Ai` (through `ChildOf`) | each `Weapon` |
//! | `peers`: `gather` (Update) | serial | every `Flight`, the peers' send state, the `Despawned` events | the snapshot table, the despawn log, the work list |
//! | `peers`: `serialize` | `parallel_for` over peers, grain 1 | the frozen table and despawn log | each peer's own state |
//! | `peers`: `flush` | serial | each built peer | its byte stream ("send") |
//! | `tail` (PostUpdate) | serial | | kills (a `Despawned` event each; its weapons go with it) and respawns aircraft, peers leave and join |
//!
//! Each aircraft carries two weapons as children (the hierarchy), despawned with it. Each
//! exclusive system names its part of the tick for the tick profiler (`profile_tick_phase`);
//! the function systems are timed under their names. The levers of
//! the overrun governor are the [`Levers`] resource, set before the Update phase (by the
//! governor system of `run.rs`, or left at their unloaded defaults) and frozen for the tick.
//! The state the systems share lives in resources: the grid, the peers, the population.

use std::sync::Mutex;
use std::time::Instant;

use freyr::hierarchy::ChildOf;
use freyr::profile::TraceKind;
use freyr::system::{Local, Query, Tick};
use freyr::{Entity, EventCursor, Phase, Registry, Res, View, With};

use crate::ai;
use crate::grid::{GridEntry, SpatialGrid};
use crate::levers::{LeverParams, Levers, ai_sample_due};
use crate::peer::{Peer, StreamDigest};
use crate::physics;
use crate::snapshot::{
    self, DESPAWN_LOG_TICKS, DespawnLog, Despawned, SnapshotLevers, SnapshotTable,
};
use crate::world::{Ai, Flight, Health, Input, LOADOUT, Weapon, hit, map_side, mix, new_aircraft};

/// What the world looks like and how it changes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Settings {
    /// Aircraft at the start (the population stays at this size). The map's side grows with
    /// it, at constant density (see [`Settings::map_side`]).
    pub entities: usize,
    /// Peers at the start (the count stays at this size).
    pub peers: usize,
    /// The spatial grid's cell size, in metres.
    pub cell_size: f32,
    /// A peer's base interest radius, in metres.
    pub interest_radius: f32,
    /// Every this many ticks some aircraft are shot down and replaced (0: never).
    pub kill_every: u64,
    /// Every this many ticks one peer leaves and a new one joins (0: never).
    pub churn_every: u64,
    /// Ticks of despawns the despawn log keeps for the per-peer pass (0: none, every peer
    /// sweeps what it holds for despawns). The streams are the same for every value.
    pub despawn_log_ticks: u64,
}

impl Settings {
    /// The side of the square map, in metres: 40 km at the default 20,000 aircraft, scaled
    /// with the square root of the count so the density stays 12.5 aircraft per km².
    #[must_use]
    pub(crate) fn map_side(&self) -> f32 {
        map_side(self.entities)
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            entities: 20_000,
            peers: 256,
            cell_size: 2000.0,
            interest_radius: 4000.0,
            kill_every: 60,
            churn_every: 90,
            despawn_log_ticks: DESPAWN_LOG_TICKS,
        }
    }
}

/// The tick length: 60 Hz.
// For hand-driven ticks (the benches and the tests); the example's own loop is `run_frame`.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const DT: f32 = 1.0 / 60.0;

/// The peers and what the per-peer pass reuses every tick (a resource).
struct Peers {
    table: SnapshotTable,
    /// The connected peers, in id order. Each is locked by exactly one worker in the per-peer
    /// pass (so never contended); the lock is what lets a `Fn` closure hand out `&mut Peer`.
    peers: Vec<Mutex<Peer>>,
    /// Streams of the peers that left: (id, digest).
    departed: Vec<(u32, StreamDigest)>,
    next_peer_id: u32,
    /// Indices into `peers` due a snapshot this tick.
    work: Vec<usize>,
    /// By entity index: the last tick the entity's `Health` chunk was found changed.
    health_tick: Vec<u64>,
    /// The despawns of the last few ticks, from the [`Despawned`] events.
    despawn_log: DespawnLog,
    /// Where the gather has read the [`Despawned`] events to.
    despawn_cursor: EventCursor,
}

/// The aircraft population's bookkeeping (a resource).
struct Population {
    /// Aircraft spawned so far (numbers the next spawn).
    spawned: u64,
    kills: Vec<Entity>,
    /// Aircraft shot down so far.
    killed: u64,
}

/// The server: the registry holding the aircraft, the peers and the systems of the tick.
pub(crate) struct Server {
    /// The world, the pool, the systems and their shared state (resources).
    pub registry: Registry,
    settings: Settings,
}

impl Server {
    /// A server with `workers` total parallelism (0: one per CPU), its systems registered and
    /// its levers at their unloaded defaults.
    #[must_use]
    pub(crate) fn new(settings: Settings, workers: usize) -> Self {
        let side = settings.map_side();
        let mut registry = Registry::with_workers(workers);
        let aircraft =
            registry.spawn_batch((0..settings.entities as u64).map(|n| new_aircraft(n, 0, side)));
        arm(&mut registry, &aircraft);
        registry.insert_resource(SpatialGrid::new(settings.cell_size, side));
        let peer_count = u32::try_from(settings.peers).unwrap_or_else(|_| {
            panic!(
                "{} peers do not fit the u32 peer ids; pass at most {}",
                settings.peers,
                u32::MAX
            )
        });
        let peers = (0..peer_count)
            .map(|id| Mutex::new(Peer::new(id, settings.interest_radius, side)))
            .collect();
        registry.insert_resource(Peers {
            table: SnapshotTable::new(settings.cell_size, side),
            peers,
            departed: Vec::new(),
            next_peer_id: peer_count,
            work: Vec::new(),
            health_tick: Vec::new(),
            despawn_log: DespawnLog::new(settings.despawn_log_ticks),
            despawn_cursor: EventCursor::default(),
        });
        registry.add_event::<Despawned>();
        registry.insert_resource(Population {
            spawned: settings.entities as u64,
            kills: Vec::new(),
            killed: 0,
        });
        registry.insert_resource(Levers::unloaded(&LeverParams::default()));
        registry.insert_resource(settings.clone());
        registry.add_system(Phase::PreUpdate, rebuild_grid);
        registry.add_system(Phase::Update, ai_pass);
        registry.add_system(Phase::Update, integrate_pass);
        // Two function systems with disjoint access (`Health`; `Weapon` and a read of `Ai`):
        // they run side by side on the pool, between the integrate and the peers passes.
        registry
            .add_fn_system(Phase::Update, "damage", damage)
            .expect("the damage system's access can be granted");
        registry
            .add_fn_system(Phase::Update, "weapons", weapons)
            .expect("the weapons system's access can be granted");
        registry.add_system(Phase::Update, peers_pass);
        registry.add_system(Phase::PostUpdate, tail);
        Server { registry, settings }
    }

    /// Runs one tick by hand (numbered `registry.tick()`), under the [`Levers`] resource: what
    /// `run_frame` does for every tick it owes.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn tick(&mut self) {
        self.registry.update(DT);
    }

    /// One digest over every peer's byte stream, departed ones included, in peer-id order.
    #[must_use]
    pub(crate) fn stream_digest(&self) -> u64 {
        self.streams().iter().fold(0, |h, (id, s)| {
            mix(mix(mix(h, u64::from(*id)), s.hash), s.bytes)
        })
    }

    /// Every peer's stream, departed ones included, in peer-id order.
    #[must_use]
    pub(crate) fn streams(&self) -> Vec<(u32, StreamDigest)> {
        let state = self.peers();
        let mut all = state.departed.clone();
        all.extend(state.peers.iter().map(|p| {
            let p = p.lock().expect("no peer build panicked");
            (p.id, p.stream)
        }));
        all.sort_unstable_by_key(|(id, _)| *id);
        all
    }

    /// The hash of every aircraft's state and its weapons'.
    #[must_use]
    pub(crate) fn world_hash(&self) -> u64 {
        self.registry.world_hash::<(Flight, Input, Ai)>() ^ self.registry.world_hash::<(Weapon,)>()
    }

    /// The settings it was made with.
    #[must_use]
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Peers connected now.
    #[must_use]
    pub(crate) fn peer_count(&self) -> usize {
        self.peers().peers.len()
    }

    /// Bytes sent to all peers so far.
    #[must_use]
    pub(crate) fn bytes_sent(&self) -> u64 {
        self.streams().iter().map(|(_, s)| s.bytes).sum()
    }

    /// Aircraft shot down so far.
    #[must_use]
    pub(crate) fn killed(&self) -> u64 {
        self.registry
            .resource::<Population>()
            .expect("the server inserts its population at start")
            .killed
    }

    fn peers(&self) -> &Peers {
        self.registry
            .resource::<Peers>()
            .expect("the server inserts its peers at start")
    }
}

/// Takes the resource `T` out for a system's serial work (the system then puts it back).
fn take<T: Send + Sync + 'static>(registry: &mut Registry) -> T {
    registry.remove_resource::<T>().unwrap_or_else(|| {
        panic!(
            "the server inserts its {} at start",
            core::any::type_name::<T>()
        )
    })
}

/// The levers of this tick (copied out: frozen for the tick).
fn levers(registry: &Registry) -> Levers {
    *registry
        .resource::<Levers>()
        .expect("the server inserts its levers at start")
}

fn settings(registry: &Registry) -> &Settings {
    registry
        .resource::<Settings>()
        .expect("the server inserts its settings at start")
}

/// Tick start (PreUpdate): the grid of every aircraft's pre-step position, into the kept
/// buffers.
fn rebuild_grid(registry: &mut Registry, _dt: f32) {
    registry.profile_tick_phase("grid");
    let mut grid = take::<SpatialGrid>(registry);
    grid.clear();
    registry
        .query::<&Flight>()
        .with_label("Grid")
        .each(|entity, f| {
            grid.push(GridEntry {
                entity,
                pos: f.pos,
                vel: f.vel,
            });
        });
    grid.finish();
    registry.insert_resource(grid);
}

/// Every controller samples from the pre-step world; under an AI stride, the entities not due
/// keep their last input.
fn ai_pass(registry: &mut Registry, _dt: f32) {
    registry.profile_tick_phase("ai");
    let tick = registry.tick();
    let stride = levers(registry).ai_stride;
    registry
        .query::<(&Flight, &mut Ai, &mut Input)>()
        .views::<(Res<SpatialGrid>, View<Flight>)>()
        .with_label("AI")
        .each_async_with(move |entity, (flight, ai, input), ctx| {
            if !ai_sample_due(u64::from(entity.index()), tick, stride) {
                return;
            }
            let (grid, flights) = ctx.views();
            ai::sample(entity, flight, ai, input, grid, flights, tick);
        });
    registry.execute_tasks();
}

/// Every aircraft integrates every tick (the governor never skips it).
fn integrate_pass(registry: &mut Registry, _dt: f32) {
    registry.profile_tick_phase("integrate");
    let tick = registry.tick();
    let side = settings(registry).map_side();
    registry
        .query::<(&mut Flight, &Input)>()
        .with_label("Integrate")
        .each_async(move |entity, (flight, input)| {
            physics::integrate(entity.index(), flight, input, tick, side);
        });
    registry.execute_tasks();
    // The function systems registered next (`damage`, `weapons`) run right after this system
    // returns: their time is the profiler's "combat" part of the tick.
    registry.profile_tick_phase("combat");
}

/// Gives each new aircraft its [`LOADOUT`] as children, so a shot-down aircraft's weapons go
/// with it.
fn arm(registry: &mut Registry, aircraft: &[Entity]) {
    for &a in aircraft {
        registry
            .spawn_children(a, LOADOUT)
            .expect("a just-spawned aircraft is alive");
    }
}

/// Damage (Update, a function system): about 2% of aircraft lose hit points, found with a
/// read-only walk and written through `get`, so only their chunks are stamped changed (a walk
/// over `&mut Health` would stamp every chunk). A shot-down aircraft is back at 100 (the kills
/// are the tail's).
fn damage(
    aircraft: Query<Entity, With<Flight>>,
    mut health: Query<&mut Health>,
    tick: Tick,
    mut hits: Local<Vec<Entity>>,
) {
    let mut aircraft = aircraft;
    hits.clear();
    aircraft.each(|e, _| {
        if hit(e.index(), tick.tick) {
            hits.push(e);
        }
    });
    for &e in hits.iter() {
        let health = health.get(e).expect("every aircraft has health");
        health.0 = if health.0 <= 7 { 100 } else { health.0 - 7 };
    }
}

/// Weapons (Update, a function system): a weapon whose aircraft is pursuing a target fires
/// when reloaded and not empty; every weapon's cooldown runs down. It reads its aircraft's
/// `Ai` through the parent relation.
fn weapons(mut mounts: Query<(&mut Weapon, &ChildOf)>, mut controllers: Query<&Ai>) {
    mounts.each(|_, (weapon, mount)| {
        if weapon.cooldown > 0 {
            weapon.cooldown -= 1;
            return;
        }
        let engaged = controllers
            .get(mount.parent())
            .is_ok_and(|ai| ai.target.is_some());
        if engaged && weapon.ammo > 0 {
            weapon.ammo -= 1;
            weapon.cooldown = weapon.reload;
        }
    });
}

/// The snapshots: a serial gather, the per-peer pass, a serial flush.
fn peers_pass(registry: &mut Registry, _dt: f32) {
    let tick = registry.tick();
    let levers = levers(registry);
    let mut peers = take::<Peers>(registry);
    gather(registry, &mut peers, tick, levers.snapshot_interval_ticks);
    serialize(
        registry,
        &peers,
        tick,
        SnapshotLevers {
            byte_budget: levers.byte_budget,
            interest_scale: levers.interest_scale as f32,
        },
    );
    flush(registry, &mut peers, tick);
    registry.insert_resource(peers);
}

/// Serial gather: the frozen snapshot table, and the peers due a snapshot.
fn gather(registry: &mut Registry, state: &mut Peers, tick: u64, governor_interval: u32) {
    registry.profile_tick_phase("gather");
    // Health changed this tick: one comparison per unchanged chunk, the changed ones whole.
    let health_tick = &mut state.health_tick;
    registry
        .query::<Entity>()
        .filter_changed::<Health>(tick.saturating_sub(1))
        .each_chunk(|entities, _| {
            for e in entities {
                let index = e.index() as usize;
                if health_tick.len() <= index {
                    health_tick.resize(index + 1, 0);
                }
                health_tick[index] = tick;
            }
        });
    // Despawns: the tail's events of the tick before, into the log the peers read.
    for Despawned(entity) in registry.read_events::<Despawned>(&mut state.despawn_cursor) {
        state.despawn_log.push(tick, *entity);
    }
    state.despawn_log.prune(tick);
    let table = &mut state.table;
    table.clear();
    registry
        .query::<(&Flight, &Ai, &Health)>()
        .each(|entity, (flight, ai, health)| {
            let changed = health_tick.get(entity.index() as usize).copied();
            table.push(entity, flight, ai.kind, (health.0, changed.unwrap_or(0)));
        });
    table.finish();
    state.work.clear();
    for (i, peer) in state.peers.iter_mut().enumerate() {
        let peer = peer.get_mut().expect("no peer build panicked");
        if peer.due(tick, governor_interval) {
            state.work.push(i);
        }
    }
}

/// The per-peer pass: one task per due peer, each building into its own buffer.
fn serialize(registry: &mut Registry, state: &Peers, tick: u64, levers: SnapshotLevers) {
    registry.profile_tick_phase("serialize");
    let traced = registry.is_tracing();
    let (table, log) = (&state.table, &state.despawn_log);
    let (peers, work) = (&state.peers, &state.work);
    registry.pool().parallel_for(work.len(), 1, |w| {
        let mut peer = peers[work[w]].lock().expect("no peer build panicked");
        let start = traced.then(Instant::now);
        snapshot::build(&mut peer, table, log, levers, tick);
        peer.build_span = start.map(|s| (s, Instant::now(), freyr::sched::current_worker_index()));
    });
}

/// Serial flush: "send" every built packet and book the send.
fn flush(registry: &mut Registry, state: &mut Peers, tick: u64) {
    registry.profile_tick_phase("flush");
    for &i in &state.work {
        let peer = state.peers[i].get_mut().expect("no peer build panicked");
        peer.stream.absorb(&peer.buf);
        debug_assert_eq!(peer.last_sent, Some(tick), "the build records the send");
        if let Some((start, end, worker)) = peer.build_span.take() {
            registry.trace_span(TraceKind::Task, "Snapshot", worker, start, end);
        }
    }
}

/// The serial tail (PostUpdate): aircraft shot down and replaced, peers leaving and joining.
fn tail(registry: &mut Registry, _dt: f32) {
    registry.profile_tick_phase("tail");
    let tick = registry.tick();
    let settings = settings(registry).clone();
    let every = settings.kill_every;
    if every > 0 && tick % every == every - 1 {
        let mut population = take::<Population>(registry);
        let kills = &mut population.kills;
        kills.clear();
        registry.query::<&Flight>().each(|e, _| {
            if mix(u64::from(e.index()), tick).is_multiple_of(64) {
                kills.push(e);
            }
        });
        for &e in kills.iter() {
            registry.send_event(Despawned(e));
            // Its weapons (its children) are destroyed with it.
            registry.destroy_entity(e);
        }
        registry.execute_tasks();
        let first = population.spawned;
        let side = settings.map_side();
        let count = population.kills.len() as u64;
        let aircraft =
            registry.spawn_batch((first..first + count).map(|n| new_aircraft(n, tick, side)));
        arm(registry, &aircraft);
        population.spawned += count;
        population.killed += count;
        registry.insert_resource(population);
    }
    let churn = settings.churn_every;
    let state = registry
        .resource_mut::<Peers>()
        .expect("the server inserts its peers at start");
    if churn > 0 && tick % churn == churn / 2 && !state.peers.is_empty() {
        let leaving = (mix(tick, 0x6c65_6176) % state.peers.len() as u64) as usize;
        let peer = state
            .peers
            .remove(leaving)
            .into_inner()
            .expect("no peer build panicked");
        state.departed.push((peer.id, peer.stream));
        let id = state.next_peer_id;
        state.next_peer_id += 1;
        state.peers.push(Mutex::new(Peer::new(
            id,
            settings.interest_radius,
            settings.map_side(),
        )));
    }
}
