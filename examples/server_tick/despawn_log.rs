//! The despawn log of the per-peer pass: a peer built within the log's retention reads its
//! despawns from the log, one that fell behind (or is new) sweeps what it holds, and both give
//! the bytes the sweep alone gives, on a unit table and over a whole churning run.

use std::time::Duration;

use freyr::Entity;
use freyr::profile::TickProfileConfig;
use freyr::time::GovernorParams;

use crate::peer::Peer;
use crate::run::{LeverSource, Pace, RunConfig, run};
use crate::server::{Server, Settings};
use crate::snapshot::{DESPAWN_LOG_TICKS, DespawnLog, SnapshotLevers, SnapshotTable, build};
use crate::wire::{Record, decode};
use crate::world::{AiKind, Flight, REFERENCE_SIDE, new_aircraft};

const LEVERS: SnapshotLevers = SnapshotLevers {
    byte_budget: 1_000_000,
    interest_scale: 1.0,
};

fn entity(index: u32, generation: u32) -> Entity {
    Entity::from_bits(u64::from(index) | (u64::from(generation) << 32)).unwrap()
}

/// `n` aircraft (generation 1) within a peer's interest radius.
fn around(peer: &Peer, n: u32) -> Vec<(Entity, Flight)> {
    let c = peer.position(0);
    (0..n)
        .map(|i| {
            let mut f = new_aircraft(u64::from(i), 0, REFERENCE_SIDE).0;
            f.pos = [
                c[0] + (i as f32 * 37.0) % 2000.0,
                c[1] + (i as f32 * 53.0) % 2000.0,
                c[2],
            ];
            (entity(i, 1), f)
        })
        .collect()
}

fn table_of(entities: &[(Entity, Flight)]) -> SnapshotTable {
    let mut table = SnapshotTable::new(2000.0, REFERENCE_SIDE);
    table.clear();
    for (e, f) in entities {
        table.push(*e, f, AiKind::Patrol, (100, 0));
    }
    table.finish();
    table
}

/// A log that holds none of the ticks before `tick`: every build at `tick` sweeps.
fn nothing_at(tick: u64) -> DespawnLog {
    let mut log = DespawnLog::new(0);
    log.prune(tick);
    log
}

fn despawns_in(buf: &[u8]) -> Vec<(u32, u32)> {
    let (_, records) = decode(buf).unwrap();
    records
        .iter()
        .filter_map(|r| match *r {
            Record::Despawn { index, generation } => Some((index, generation)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_log_covers_exactly_its_retention() {
    let mut log = DespawnLog::new(2);
    log.push(1, entity(4, 1));
    log.push(1, entity(9, 1));
    log.push(3, entity(2, 5));
    log.prune(3);
    // At tick 3 it holds ticks 2 and 3: a peer last built at tick 0 must sweep, one built at 1
    // or later reads the despawns seen after its build.
    assert!(log.since(0).is_none());
    assert_eq!(log.since(1).unwrap().collect::<Vec<_>>(), [(2, 5)]);
    assert_eq!(log.since(2).unwrap().collect::<Vec<_>>(), [(2, 5)]);
    assert_eq!(log.since(3).unwrap().count(), 0);
    // Retention 0 holds nothing: every peer sweeps.
    assert!(nothing_at(5).since(4).is_none());
    // Unpruned, a log covers every tick from 0.
    let mut fresh = DespawnLog::new(DESPAWN_LOG_TICKS);
    fresh.push(0, entity(1, 1));
    assert_eq!(fresh.since(0).unwrap().count(), 0);
}

#[test]
fn despawns_from_the_log_are_reported_once_in_the_sweeps_order() {
    let mut by_log = Peer::new(2, 4000.0, REFERENCE_SIDE);
    let mut by_sweep = Peer::new(2, 4000.0, REFERENCE_SIDE);
    let mut entities = around(&by_log, 40);
    let mut log = DespawnLog::new(DESPAWN_LOG_TICKS);
    log.prune(0);
    let table = table_of(&entities);
    build(&mut by_log, &table, &log, LEVERS, 0);
    build(&mut by_sweep, &table, &nothing_at(0), LEVERS, 0);
    assert_eq!(by_log.known.len(), 40);
    // The tail kills 30, 5 and 17 (in that order); index 5 is reused at once. An entity the peer
    // never held (index 70) is killed too.
    for i in [30, 5, 17, 70] {
        log.push(1, entity(i, 1));
    }
    log.prune(1);
    entities.retain(|(e, _)| ![30, 17].contains(&e.index()));
    entities[5].0 = entity(5, 2);
    let table = table_of(&entities);
    build(&mut by_log, &table, &log, LEVERS, 1);
    build(&mut by_sweep, &table, &nothing_at(1), LEVERS, 1);
    assert_eq!(despawns_in(&by_log.buf), [(5, 1), (17, 1), (30, 1)]);
    assert_eq!(by_log.buf, by_sweep.buf);
    // Reported once: the log still holds tick 1, but the peer was built after it.
    build(&mut by_log, &table, &log, LEVERS, 2);
    build(&mut by_sweep, &table, &nothing_at(2), LEVERS, 2);
    assert_eq!(despawns_in(&by_log.buf), []);
    assert_eq!(by_log.buf, by_sweep.buf);
}

#[test]
fn the_log_is_read_not_the_table_while_it_covers_the_peer() {
    // A despawn the log was not told about is not found while the log covers the peer: the
    // per-peer pass reads the log, not every entity the peer holds.
    let mut peer = Peer::new(3, 4000.0, REFERENCE_SIDE);
    let mut entities = around(&peer, 20);
    let mut log = DespawnLog::new(DESPAWN_LOG_TICKS);
    build(&mut peer, &table_of(&entities), &log, LEVERS, 0);
    entities.remove(7);
    log.prune(1);
    build(&mut peer, &table_of(&entities), &log, LEVERS, 1);
    assert_eq!(despawns_in(&peer.buf), []);
}

#[test]
fn a_peer_that_fell_behind_the_log_or_is_new_sweeps_and_gets_the_same_bytes() {
    let mut lagging = Peer::new(5, 4000.0, REFERENCE_SIDE);
    let mut reference = Peer::new(5, 4000.0, REFERENCE_SIDE);
    let mut entities = around(&lagging, 30);
    let mut log = DespawnLog::new(DESPAWN_LOG_TICKS);
    log.prune(0);
    let table = table_of(&entities);
    build(&mut lagging, &table, &log, LEVERS, 0);
    build(&mut reference, &table, &nothing_at(0), LEVERS, 0);
    // Killed at tick 1, then the peer is not built again until the log dropped tick 1.
    for i in [12, 3] {
        log.push(1, entity(i, 1));
    }
    entities.retain(|(e, _)| ![12, 3].contains(&e.index()));
    let late = 2 + DESPAWN_LOG_TICKS;
    for tick in 1..=late {
        log.prune(tick);
    }
    assert!(log.since(0).is_none(), "the log still covers the peer");
    let table = table_of(&entities);
    build(&mut lagging, &table, &log, LEVERS, late);
    build(&mut reference, &table, &nothing_at(late), LEVERS, late);
    assert_eq!(despawns_in(&lagging.buf), [(3, 1), (12, 1)]);
    assert_eq!(lagging.buf, reference.buf);
    // A peer joining now holds nothing: its first build (a sweep) reports no despawn, and from
    // its second on it reads the log.
    let mut joined = Peer::new(5, 4000.0, REFERENCE_SIDE);
    build(&mut joined, &table, &log, LEVERS, late);
    assert_eq!(despawns_in(&joined.buf), []);
    log.push(late + 1, entity(0, 1));
    log.prune(late + 1);
    entities.retain(|(e, _)| e.index() != 0);
    build(&mut joined, &table_of(&entities), &log, LEVERS, late + 1);
    assert_eq!(despawns_in(&joined.buf), [(0, 1)]);
}

/// A small world that kills every 3 ticks and churns a peer every 5, under levers that space
/// the sends out to 4 ticks (so a short log does not cover every peer).
fn churning(despawn_log_ticks: u64, workers: usize) -> Server {
    let settings = Settings {
        entities: 3000,
        peers: 24,
        cell_size: 2000.0,
        interest_radius: 6000.0,
        kill_every: 3,
        churn_every: 5,
        despawn_log_ticks,
    };
    let config = RunConfig {
        ticks: 48,
        pace: Pace::Free,
        governor: GovernorParams::default(),
        levers: LeverSource::Forced(vec![(0, 1.0), (10, 0.25), (30, 0.5)]),
        raise_budget: None::<(u64, Duration)>,
        profile: Some(TickProfileConfig::default()),
    };
    let mut server = Server::new(settings, workers);
    run(&mut server, &config);
    server
}

#[test]
fn streams_read_from_the_log_equal_the_sweeps_for_a_churning_run_on_1_2_3_and_8_workers() {
    let sweep = churning(0, 1);
    assert!(sweep.killed() > 0, "no aircraft was shot down");
    let streams = sweep.streams();
    // One peer leaves and one joins at ticks 2, 7, ..., 47.
    assert_eq!(streams.len(), 24 + 10, "peers joined and left");
    for workers in [1, 2, 3, 8] {
        let logged = churning(DESPAWN_LOG_TICKS, workers);
        assert_eq!(logged.streams(), streams, "{workers} workers");
        assert_eq!(logged.world_hash(), sweep.world_hash(), "{workers} workers");
    }
    // A log shorter than the send interval: some builds read it, the rest sweep.
    assert_eq!(churning(2, 2).streams(), streams, "a 2-tick log");
}
