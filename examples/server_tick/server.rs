//! The authoritative server tick: the world, the peers, and the seven phases of one tick.
//!
//! | phase | runs | reads | writes |
//! |---|---|---|---|
//! | `grid` | serial | every `Flight` | the spatial grid (a resource, buffers kept) |
//! | `ai` | `each_async`, label `AI` | the grid, `View<Flight>` (pre-step) | own `Ai`, `Input` |
//! | `integrate` | `each_async`, label `Integrate` | own `Input` | own `Flight` |
//! | `gather` | serial | every `Flight`, the peers' send state | the snapshot table, the work list |
//! | `serialize` | `parallel_for` over peers, grain 1 | the frozen table | each peer's own state |
//! | `flush` | serial | each built peer | its byte stream ("send") |
//! | `tail` | serial | | kills and respawns aircraft, peers leave and join |
//!
//! The levers of the overrun governor are passed in, frozen for the tick.

use std::sync::Mutex;
use std::time::Instant;

use freyr::profile::TraceKind;
use freyr::{Entity, Registry, Res, View};

use crate::ai;
use crate::grid::{GridEntry, SpatialGrid};
use crate::levers::{Levers, ai_sample_due};
use crate::peer::{Peer, StreamDigest};
use crate::physics;
use crate::snapshot::{self, SnapshotLevers, SnapshotTable};
use crate::world::{Ai, Flight, Input, map_side, mix, new_aircraft};

/// What the world looks like and how it changes.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
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
}

impl Settings {
    /// The side of the square map, in metres: 40 km at the default 20,000 aircraft, scaled
    /// with the square root of the count so the density stays 12.5 aircraft per km².
    #[must_use]
    pub fn map_side(&self) -> f32 {
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
        }
    }
}

/// The server: the registry holding the aircraft, the peers, and the buffers every tick reuses.
pub struct Server {
    /// The world and the pool.
    pub registry: Registry,
    settings: Settings,
    table: SnapshotTable,
    /// The connected peers, in id order. Each is locked by exactly one worker in the per-peer
    /// pass (so never contended); the lock is what lets a `Fn` closure hand out `&mut Peer`.
    peers: Vec<Mutex<Peer>>,
    /// Streams of the peers that left: (id, digest).
    departed: Vec<(u32, StreamDigest)>,
    next_peer_id: u32,
    /// Indices into `peers` due a snapshot this tick.
    work: Vec<usize>,
    /// Aircraft spawned so far (numbers the next spawn).
    spawned: u64,
    kills: Vec<Entity>,
    /// Aircraft shot down so far.
    pub killed: u64,
}

impl Server {
    /// A server with `workers` total parallelism (0: one per CPU).
    #[must_use]
    pub fn new(settings: Settings, workers: usize) -> Self {
        let side = settings.map_side();
        let mut registry = Registry::with_workers(workers);
        registry.spawn_batch((0..settings.entities as u64).map(|n| new_aircraft(n, 0, side)));
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
        Server {
            registry,
            table: SnapshotTable::new(settings.cell_size, side),
            peers,
            departed: Vec::new(),
            next_peer_id: peer_count,
            work: Vec::new(),
            spawned: settings.entities as u64,
            kills: Vec::new(),
            killed: 0,
            settings,
        }
    }

    /// Runs tick `tick` under `levers`. The caller brackets it with the registry's
    /// `begin_tick` / `end_tick` when profiling.
    pub fn tick(&mut self, tick: u64, levers: &Levers) {
        self.rebuild_grid();
        self.ai_pass(tick, levers.ai_stride);
        self.integrate_pass(tick);
        self.gather(tick, levers.snapshot_interval_ticks);
        self.serialize(
            tick,
            SnapshotLevers {
                byte_budget: levers.byte_budget,
                interest_scale: levers.interest_scale as f32,
            },
        );
        self.flush(tick);
        self.tail(tick);
    }

    /// Tick start: the grid of every aircraft's pre-step position, into the kept buffers.
    fn rebuild_grid(&mut self) {
        let registry = &mut self.registry;
        registry.tick_phase("grid");
        let mut grid = registry
            .remove_resource::<SpatialGrid>()
            .expect("the server inserts its grid at start");
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

    /// Every controller samples from the pre-step world; under an AI stride, the entities not
    /// due keep their last input.
    fn ai_pass(&mut self, tick: u64, stride: u32) {
        self.registry.tick_phase("ai");
        self.registry
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
        self.registry.execute_tasks();
    }

    /// Every aircraft integrates every tick (the governor never skips it).
    fn integrate_pass(&mut self, tick: u64) {
        self.registry.tick_phase("integrate");
        let side = self.settings.map_side();
        self.registry
            .query::<(&mut Flight, &Input)>()
            .with_label("Integrate")
            .each_async(move |entity, (flight, input)| {
                physics::integrate(entity.index(), flight, input, tick, side);
            });
        self.registry.execute_tasks();
    }

    /// Serial gather: the frozen snapshot table, and the peers due a snapshot.
    fn gather(&mut self, tick: u64, governor_interval: u32) {
        self.registry.tick_phase("gather");
        let table = &mut self.table;
        table.clear();
        self.registry
            .query::<(&Flight, &Ai)>()
            .each(|entity, (flight, ai)| table.push(entity, flight, ai.kind));
        table.finish();
        self.work.clear();
        for (i, peer) in self.peers.iter_mut().enumerate() {
            let peer = peer.get_mut().expect("no peer build panicked");
            if peer.due(tick, governor_interval) {
                self.work.push(i);
            }
        }
    }

    /// The per-peer pass: one task per due peer, each building into its own buffer.
    fn serialize(&mut self, tick: u64, levers: SnapshotLevers) {
        self.registry.tick_phase("serialize");
        let traced = self.registry.is_tracing();
        let (table, peers, work) = (&self.table, &self.peers, &self.work);
        self.registry.pool().parallel_for(work.len(), 1, |w| {
            let mut peer = peers[work[w]].lock().expect("no peer build panicked");
            let start = traced.then(Instant::now);
            snapshot::build(&mut peer, table, levers, tick);
            peer.build_span =
                start.map(|s| (s, Instant::now(), freyr::sched::current_worker_index()));
        });
    }

    /// Serial flush: "send" every built packet and book the send.
    fn flush(&mut self, tick: u64) {
        self.registry.tick_phase("flush");
        for &i in &self.work {
            let peer = self.peers[i].get_mut().expect("no peer build panicked");
            peer.stream.absorb(&peer.buf);
            peer.last_sent = Some(tick);
            if let Some((start, end, worker)) = peer.build_span.take() {
                self.registry
                    .trace_span(TraceKind::Task, "Snapshot", worker, start, end);
            }
        }
    }

    /// The serial tail: aircraft shot down and replaced, peers leaving and joining.
    fn tail(&mut self, tick: u64) {
        self.registry.tick_phase("tail");
        let every = self.settings.kill_every;
        if every > 0 && tick % every == every - 1 {
            let kills = &mut self.kills;
            kills.clear();
            self.registry.query::<Entity>().each(|e, _| {
                if mix(u64::from(e.index()), tick).is_multiple_of(64) {
                    kills.push(e);
                }
            });
            for &e in kills.iter() {
                self.registry.destroy_entity(e);
            }
            self.registry.execute_tasks();
            let first = self.spawned;
            let side = self.settings.map_side();
            let count = self.kills.len() as u64;
            self.registry
                .spawn_batch((first..first + count).map(|n| new_aircraft(n, tick, side)));
            self.spawned += count;
            self.killed += count;
        }
        let churn = self.settings.churn_every;
        if churn > 0 && tick % churn == churn / 2 && !self.peers.is_empty() {
            let leaving = (mix(tick, 0x6c65_6176) % self.peers.len() as u64) as usize;
            let peer = self
                .peers
                .remove(leaving)
                .into_inner()
                .expect("no peer build panicked");
            self.departed.push((peer.id, peer.stream));
            let id = self.next_peer_id;
            self.next_peer_id += 1;
            self.peers.push(Mutex::new(Peer::new(
                id,
                self.settings.interest_radius,
                self.settings.map_side(),
            )));
        }
    }

    /// One digest over every peer's byte stream, departed ones included, in peer-id order.
    #[must_use]
    pub fn stream_digest(&self) -> u64 {
        self.streams().iter().fold(0, |h, (id, s)| {
            mix(mix(mix(h, u64::from(*id)), s.hash), s.bytes)
        })
    }

    /// Every peer's stream, departed ones included, in peer-id order.
    #[must_use]
    pub fn streams(&self) -> Vec<(u32, StreamDigest)> {
        let mut all = self.departed.clone();
        all.extend(self.peers.iter().map(|p| {
            let p = p.lock().expect("no peer build panicked");
            (p.id, p.stream)
        }));
        all.sort_unstable_by_key(|(id, _)| *id);
        all
    }

    /// The hash of every aircraft's state.
    #[must_use]
    pub fn world_hash(&self) -> u64 {
        self.registry.world_hash::<(Flight, Input, Ai)>()
    }

    /// The settings it was made with.
    #[must_use]
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Peers connected now.
    #[must_use]
    pub fn peer_count(&self) -> usize {
        self.peers.len()
    }

    /// Bytes sent to all peers so far.
    #[must_use]
    pub fn bytes_sent(&self) -> u64 {
        self.streams().iter().map(|(_, s)| s.bytes).sum()
    }
}
