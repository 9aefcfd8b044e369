//! The per-peer snapshot build: interest query, relevance ranking, byte budget, delta encoding
//! and despawn reports, from a frozen [`SnapshotTable`] and [`DespawnLog`] into the peer's own
//! buffer.
//!
//! The table is gathered serially after the integrate pass and is read-only while the peers are
//! built in parallel; each build writes only its own [`Peer`]. A build performs no cross-peer
//! write and draws no random number, so a peer's bytes are the same whichever worker builds
//! it: the per-peer streams are identical for every worker count.

use std::collections::VecDeque;

use freyr::Entity;

use crate::grid::{GridEntry, SpatialGrid};
use crate::peer::{Candidate, Known, KnownMap, Peer};
use crate::wire::{
    END, PACKET, Quantized, put_delta, put_despawn, put_full, put_health, put_varint,
};
use crate::world::{AiKind, Flight, MAX_SPEED};

/// An entity a peer has not been sent for this many ticks is forgotten by both sides; it is sent
/// in full when it is next relevant.
pub(crate) const RETENTION_TICKS: u64 = 180;

/// A peer's map of what it holds is purged of forgotten entities every this many ticks (in
/// between, a forgotten entry is only ignored: see [`build`]).
pub(crate) const PURGE_TICKS: u64 = 60;

/// The ticks of despawns the [`DespawnLog`] keeps: a peer built again within this many ticks
/// reads its despawns from the log; one that waited longer, or is new, sweeps what it holds.
/// Covers the peers' own send interval (2) and the governor's default longest one (4).
pub(crate) const DESPAWN_LOG_TICKS: u64 = 8;

/// An aircraft was despawned: the event the tail sends for each one it destroys (through
/// `Registry::send_event`, stored at the tail's sync point), read by the next tick's gather
/// into the [`DespawnLog`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Despawned(pub Entity);

/// The despawns of the last [`DESPAWN_LOG_TICKS`] ticks (or the retention it was made with), in
/// the order they were recorded, each with the first tick whose snapshot table no longer holds
/// the entity.
///
/// A peer built at tick `t` that was last built at tick `s` needs the despawns seen in
/// `(s, t]`: [`DespawnLog::since`] gives them when the log still holds all of them, at a cost
/// of the despawns in the window, not of the entities the peer holds.
#[derive(Clone, Debug)]
pub(crate) struct DespawnLog {
    retention: u64,
    /// (tick seen, index, generation); ticks never decrease.
    entries: VecDeque<(u64, u32, u32)>,
    /// Every despawn seen at this tick or later is held.
    covers_from: u64,
}

impl DespawnLog {
    /// An empty log keeping `retention` ticks of despawns (0: none, every peer sweeps), covering
    /// every tick from 0 on until the first [`prune`](DespawnLog::prune) drops some.
    #[must_use]
    pub(crate) fn new(retention: u64) -> Self {
        DespawnLog {
            retention,
            entries: VecDeque::new(),
            covers_from: 0,
        }
    }

    /// Records that `entity` is gone from the snapshot table of `tick` on (ticks recorded never
    /// decrease).
    pub(crate) fn push(&mut self, tick: u64, entity: Entity) {
        debug_assert!(self.entries.back().is_none_or(|e| e.0 <= tick));
        self.entries
            .push_back((tick, entity.index(), entity.generation()));
    }

    /// Forgets the despawns seen more than `retention` ticks before `tick`: from then on the
    /// log covers the ticks `(tick - retention, tick]`.
    pub(crate) fn prune(&mut self, tick: u64) {
        let from = (tick + 1).saturating_sub(self.retention);
        while self.entries.front().is_some_and(|e| e.0 < from) {
            self.entries.pop_front();
        }
        self.covers_from = self.covers_from.max(from);
    }

    /// The (index, generation) of every despawn seen after tick `since`, in recorded order, or
    /// `None` when the log no longer holds all of them (`since` is older than its retention).
    #[must_use]
    pub(crate) fn since(&self, since: u64) -> Option<impl Iterator<Item = (u32, u32)> + '_> {
        if since.saturating_add(1) < self.covers_from {
            return None;
        }
        let start = self.entries.partition_point(|e| e.0 <= since);
        Some(self.entries.range(start..).map(|&(_, i, g)| (i, g)))
    }
}

/// One live entity as every peer sees it this tick.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SnapRow {
    /// The entity.
    pub entity: Entity,
    /// Its flight state after this tick's integration.
    pub flight: Flight,
    /// Its controller kind, sent in full records.
    pub kind: u8,
    /// Its quantised state (computed once, shared by every peer).
    pub state: Quantized,
    /// Its hit points.
    pub health: u8,
    /// The last tick its `Health` chunk was found changed (a `Changed<Health>` filter in the
    /// gather): a peer that last received the entity at or after it holds the current value.
    pub health_tick: u64,
}

/// The frozen, read-only input of the per-peer pass.
pub(crate) struct SnapshotTable {
    /// Live entities, in the world's iteration order.
    pub rows: Vec<SnapRow>,
    /// `row_of[index]` is the row of the live entity with that index, plus one (0: none).
    row_of: Vec<u32>,
    /// The rows by position, for the interest query.
    pub grid: SpatialGrid,
}

impl SnapshotTable {
    /// An empty table whose grid has cells `cell_size` metres wide over a map `side` metres
    /// across.
    #[must_use]
    pub(crate) fn new(cell_size: f32, side: f32) -> Self {
        SnapshotTable {
            rows: Vec::new(),
            row_of: Vec::new(),
            grid: SpatialGrid::new(cell_size, side),
        }
    }

    /// Starts a gather: forgets every row, keeps the buffers.
    pub(crate) fn clear(&mut self) {
        for row in &self.rows {
            self.row_of[row.entity.index() as usize] = 0;
        }
        self.rows.clear();
        self.grid.clear();
    }

    /// Adds a live entity.
    pub(crate) fn push(
        &mut self,
        entity: Entity,
        flight: &Flight,
        kind: AiKind,
        health: (u8, u64),
    ) {
        let index = entity.index() as usize;
        if self.row_of.len() <= index {
            self.row_of.resize(index + 1, 0);
        }
        let row = self.rows.len() as u32;
        self.row_of[index] = row + 1;
        self.rows.push(SnapRow {
            entity,
            flight: *flight,
            kind: kind as u8,
            state: Quantized::of(flight.pos, flight.vel, flight.heading),
            health: health.0,
            health_tick: health.1,
        });
        self.grid.push(GridEntry {
            entity,
            pos: flight.pos,
            vel: flight.vel,
        });
    }

    /// Ends a gather.
    pub(crate) fn finish(&mut self) {
        self.grid.finish();
    }

    /// The row of a live entity found through the grid.
    fn row(&self, entity: Entity) -> u32 {
        self.row_of[entity.index() as usize] - 1
    }

    /// Whether the entity with `index` and `generation` is alive.
    #[must_use]
    pub(crate) fn alive(&self, index: u32, generation: u32) -> bool {
        match self.row_of.get(index as usize) {
            Some(&r) if r > 0 => self.rows[r as usize - 1].entity.generation() == generation,
            _ => false,
        }
    }
}

/// What the governor's levers say about this tick's snapshots.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SnapshotLevers {
    /// The per-peer byte budget.
    pub byte_budget: u32,
    /// The interest-radius scale.
    pub interest_scale: f32,
}

/// Builds `peer`'s snapshot for `tick` into `peer.buf`: despawns of entities it holds that are
/// gone, then the entities within its (scaled) interest radius in relevance order, full when
/// new to the peer and delta-encoded otherwise, until the byte budget is spent. Records `tick`
/// as the peer's last send.
///
/// The despawns come from `log` (the despawns since the peer's last build) when it still holds
/// them all, otherwise from a sweep of everything the peer holds against the table; both give
/// the same records, sorted by (index, generation). An entity not sent for more than
/// [`RETENTION_TICKS`] is forgotten: ignored at once, dropped from the map every
/// [`PURGE_TICKS`].
pub(crate) fn build(
    peer: &mut Peer,
    table: &SnapshotTable,
    log: &DespawnLog,
    levers: SnapshotLevers,
    tick: u64,
) {
    let center = peer.position(tick);
    let radius = peer.radius * levers.interest_scale;
    let budget = levers.byte_budget as usize;
    let previous = peer.last_sent;
    let Peer {
        known,
        buf,
        candidates,
        despawns,
        record,
        last_sent,
        purge_at,
        ..
    } = peer;
    buf.clear();
    buf.push(PACKET);
    put_varint(buf, tick);

    find_despawns(known, despawns, table, log, previous);
    for &(index, generation) in despawns.iter() {
        put_despawn(buf, index, generation);
        known.remove(&index);
    }
    if tick >= *purge_at {
        known.retain(|_, k| fresh(k, tick));
        *purge_at = tick + PURGE_TICKS;
    }

    rank(candidates, known, table, center, radius, tick);

    // Budget: write records in rank order until the next one would not fit.
    for c in candidates.iter() {
        let r = &table.rows[c.row as usize];
        let (index, generation) = (r.entity.index(), r.entity.generation());
        record.clear();
        match known.get(&index) {
            Some(k) if k.generation == generation && fresh(k, tick) => {
                put_delta(record, index, &k.state, &r.state);
                // Health is looked at only for entities whose chunk changed since this peer
                // last received them; the rest are skipped with one comparison.
                if r.health_tick > k.last_tick && r.health != k.health {
                    put_health(record, index, r.health);
                }
            }
            _ => put_full(record, index, generation, r.kind, &r.state, r.health),
        }
        if buf.len() + record.len() + 1 > budget {
            break;
        }
        buf.extend_from_slice(record);
        known.insert(
            index,
            Known {
                generation,
                state: r.state,
                last_tick: tick,
                health: r.health,
            },
        );
    }
    buf.push(END);
    *last_sent = Some(tick);
}

/// Whether the peer still holds `k` at `tick` (it was sent within [`RETENTION_TICKS`]).
fn fresh(k: &Known, tick: u64) -> bool {
    tick.saturating_sub(k.last_tick) <= RETENTION_TICKS
}

/// Into `despawns`, sorted: the (index, generation) of every entity the peer held after its
/// last build (at `previous`) that is gone. From the log when it covers the ticks since, else by
/// a sweep of `known` against the table.
fn find_despawns(
    known: &KnownMap,
    despawns: &mut Vec<(u32, u32)>,
    table: &SnapshotTable,
    log: &DespawnLog,
    previous: Option<u64>,
) {
    // Held after the last build: not forgotten by then.
    let held = |k: &Known| previous.is_none_or(|s| fresh(k, s));
    despawns.clear();
    match previous.and_then(|s| log.since(s)) {
        Some(gone) => despawns.extend(gone.filter(|&(index, generation)| {
            known
                .get(&index)
                .is_some_and(|k| k.generation == generation && held(k))
        })),
        None => despawns.extend(
            known
                .iter()
                .filter(|(index, k)| held(k) && !table.alive(**index, k.generation))
                .map(|(index, k)| (*index, k.generation)),
        ),
    }
    // The log's order is the tail's, the map's arbitrary: both are sorted before writing.
    despawns.sort_unstable();
}

/// Interest and relevance: the entities within `radius` of `center`, nearer, closing and
/// long-unsent ones first, into `candidates` in rank order.
fn rank(
    candidates: &mut Vec<Candidate>,
    known: &KnownMap,
    table: &SnapshotTable,
    center: [f32; 3],
    radius: f32,
    tick: u64,
) {
    candidates.clear();
    table
        .grid
        .for_each_within(center, radius, |cell_entry, d2| {
            let row = table.row(cell_entry.entity);
            let r = &table.rows[row as usize];
            let d = d2.sqrt().max(1.0);
            let closeness = 1.0 - d / radius;
            let rel = [
                center[0] - r.flight.pos[0],
                center[1] - r.flight.pos[1],
                center[2] - r.flight.pos[2],
            ];
            let closing =
                (rel[0] * r.flight.vel[0] + rel[1] * r.flight.vel[1] + rel[2] * r.flight.vel[2])
                    / (d * MAX_SPEED);
            let staleness = match known.get(&r.entity.index()) {
                Some(k) if k.generation == r.entity.generation() && fresh(k, tick) => {
                    (tick.saturating_sub(k.last_tick) as f32 / 30.0).min(2.0)
                }
                _ => 2.5,
            };
            candidates.push(Candidate {
                row,
                index: r.entity.index(),
                score: 2.0 * closeness + 0.5 * closing.clamp(0.0, 1.0) + staleness,
            });
        });
    candidates.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Record, decode};
    use crate::world::{REFERENCE_SIDE as WORLD_SIZE, new_aircraft};

    fn table_of(entities: &[(Entity, Flight)]) -> SnapshotTable {
        let mut table = SnapshotTable::new(2000.0, WORLD_SIZE);
        table.clear();
        for (e, f) in entities {
            table.push(*e, f, AiKind::Patrol, (100, 0));
        }
        table.finish();
        table
    }

    fn around(peer: &Peer, n: u32) -> Vec<(Entity, Flight)> {
        let c = peer.position(0);
        (0..n)
            .map(|i| {
                let mut f = new_aircraft(u64::from(i), 0, WORLD_SIZE).0;
                f.pos = [
                    c[0] + (i as f32 * 37.0) % 2000.0,
                    c[1] + (i as f32 * 53.0) % 2000.0,
                    c[2],
                ];
                (Entity::from_bits(u64::from(i) | 1 << 32).unwrap(), f)
            })
            .collect()
    }

    /// `build` with a log that holds none of the ticks since (so despawns are found by the
    /// sweep, as the log's fallback does).
    fn build(peer: &mut Peer, table: &SnapshotTable, levers: SnapshotLevers, tick: u64) {
        let mut nothing = DespawnLog::new(0);
        nothing.prune(tick);
        super::build(peer, table, &nothing, levers, tick);
    }

    const FULL_LEVERS: SnapshotLevers = SnapshotLevers {
        byte_budget: 1200,
        interest_scale: 1.0,
    };

    #[test]
    fn a_new_peer_gets_full_records_first_then_cheap_deltas_within_the_budget() {
        let mut peer = Peer::new(1, 4000.0, WORLD_SIZE);
        let entities = around(&peer, 60);
        let table = table_of(&entities);
        build(&mut peer, &table, FULL_LEVERS, 0);
        assert!(peer.buf.len() <= 1200);
        let (tick, first) = decode(&peer.buf).unwrap();
        assert_eq!(tick, 0);
        assert!(first.iter().all(|r| matches!(r, Record::Full { .. })));
        assert!(
            first.len() < 60,
            "all 60 fitted one budget: the test needs more"
        );
        // Unsent entities rank first, so within a few ticks every one has been sent in full ...
        for tick in 1..6 {
            build(&mut peer, &table, FULL_LEVERS, tick);
            assert!(peer.buf.len() <= 1200);
        }
        assert_eq!(peer.known.len(), 60);
        // ... and from then on unchanged entities cost a three-byte delta each, so all fit.
        build(&mut peer, &table, FULL_LEVERS, 6);
        let (_, last) = decode(&peer.buf).unwrap();
        assert_eq!(last.len(), 60);
        assert!(last.iter().all(|r| matches!(r, Record::Delta { .. })));
    }

    #[test]
    fn a_despawned_entity_is_reported_once_and_its_reused_index_is_sent_in_full() {
        let mut peer = Peer::new(2, 4000.0, WORLD_SIZE);
        let mut entities = around(&peer, 40);
        build(&mut peer, &table_of(&entities), FULL_LEVERS, 0);
        let (index, generation) = (entities[5].0.index(), entities[5].0.generation());
        assert!(peer.known.contains_key(&index));
        // The same index comes back with a new generation.
        entities[5].0 =
            Entity::from_bits(u64::from(index) | (u64::from(generation + 1) << 32)).unwrap();
        let table = table_of(&entities);
        build(&mut peer, &table, FULL_LEVERS, 1);
        let (_, records) = decode(&peer.buf).unwrap();
        assert_eq!(records[0], Record::Despawn { index, generation });
        assert!(records.contains(&Record::Full {
            index,
            generation: generation + 1,
            kind: AiKind::Patrol as u8,
            q: table.rows[5].state,
            hp: 100
        }));
        build(&mut peer, &table, FULL_LEVERS, 2);
        let (_, records) = decode(&peer.buf).unwrap();
        assert!(!records.iter().any(|r| matches!(r, Record::Despawn { .. })));
    }

    #[test]
    fn health_is_sent_only_for_entities_whose_chunk_changed_since_the_peer_received_them() {
        let mut peer = Peer::new(4, 4000.0, WORLD_SIZE);
        let entities = around(&peer, 20);
        let table_with = |health: &dyn Fn(usize) -> (u8, u64)| {
            let mut table = SnapshotTable::new(2000.0, WORLD_SIZE);
            table.clear();
            for (i, (e, f)) in entities.iter().enumerate() {
                table.push(*e, f, AiKind::Patrol, health(i));
            }
            table.finish();
            table
        };
        build(&mut peer, &table_with(&|_| (100, 0)), FULL_LEVERS, 0);
        assert_eq!(peer.known.len(), 20);
        // Entity 3's value changed at tick 1 (its chunk stamped); entity 4's chunk changed but
        // its value did not; entity 5's value differs but its chunk was not found changed since
        // the peer received it (so it cannot have changed: nothing is sent).
        let changed = table_with(&|i| match i {
            3 => (93, 1),
            4 => (100, 1),
            5 => (50, 0),
            _ => (100, 0),
        });
        build(&mut peer, &changed, FULL_LEVERS, 1);
        let (_, records) = decode(&peer.buf).unwrap();
        let health: Vec<_> = records
            .iter()
            .filter(|r| matches!(r, Record::Health { .. }))
            .collect();
        let index = entities[3].0.index();
        assert_eq!(health, [&Record::Health { index, hp: 93 }]);
        // Received at tick 1, the value is not sent again.
        build(&mut peer, &changed, FULL_LEVERS, 2);
        let (_, records) = decode(&peer.buf).unwrap();
        assert!(!records.iter().any(|r| matches!(r, Record::Health { .. })));
    }

    #[test]
    fn the_interest_scale_shrinks_the_set_and_the_budget_cuts_it() {
        let peer_at = || Peer::new(3, 4000.0, WORLD_SIZE);
        let entities = around(&peer_at(), 400);
        let table = table_of(&entities);
        let count = |levers| {
            let mut peer = peer_at();
            build(&mut peer, &table, levers, 0);
            (decode(&peer.buf).unwrap().1.len(), peer.buf.len())
        };
        let big = SnapshotLevers {
            byte_budget: 1_000_000,
            interest_scale: 1.0,
        };
        let (all, _) = count(big);
        let (half, _) = count(SnapshotLevers {
            interest_scale: 0.5,
            ..big
        });
        assert!(half < all, "{half} of {all}");
        let (_, bytes) = count(SnapshotLevers {
            byte_budget: 400,
            interest_scale: 1.0,
        });
        assert!(bytes <= 400);
    }
}
