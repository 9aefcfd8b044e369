//! What the zone tests share: the aircraft layout run on the in-process bus.

#![allow(dead_code)]

use freyr_zone::aircraft::{self, Strips};
use freyr_zone::{Bus, InProcessBus, Zone, ZoneConfig, ZoneDigest, ZoneStats};

/// A run's layout: zones, aircraft, map side, lookahead, ticks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    pub zones: u32,
    pub aircraft: u64,
    pub side: f32,
    pub lookahead: u64,
    pub ticks: u64,
}

impl Layout {
    pub(crate) fn strips(&self) -> Strips {
        Strips {
            zones: self.zones,
            side: self.side,
        }
    }

    pub(crate) fn config(&self, zone: u32) -> ZoneConfig {
        let mut c = ZoneConfig::new(zone, self.zones);
        c.lookahead = self.lookahead;
        c.batch_entities = 7; // several batches per (source, dest, tick)
        c
    }

    /// Zone `zone` at tick 0, its aircraft spawned.
    pub(crate) fn zone<B: Bus>(
        &self,
        zone: u32,
        workers: usize,
        bus: B,
        config: ZoneConfig,
    ) -> Zone<B, Strips> {
        let mut registry = aircraft::registry(workers, self.side);
        aircraft::spawn_zone(&mut registry, &self.strips(), zone, self.aircraft);
        Zone::new(registry, bus, self.strips(), config).unwrap()
    }
}

/// Every zone on its own thread, on one in-process bus: the merged digest and each zone's
/// stats.
/// Also each zone's whole-world hash (Freyr's `world_hash_all`: entity ids, row order and
/// values), stronger than the merged digest: it changes if imports ran in another order.
pub(crate) fn run_threads(
    layout: Layout,
    workers: usize,
) -> (ZoneDigest, Vec<ZoneStats>, Vec<u64>) {
    let bus = InProcessBus::new(layout.zones);
    let results: Vec<(ZoneDigest, ZoneStats, u64)> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..layout.zones)
            .map(|z| {
                let bus = bus.clone();
                s.spawn(move || {
                    let mut zone = layout.zone(z, workers, bus, layout.config(z));
                    zone.run_until(layout.ticks).unwrap();
                    zone.settle().unwrap();
                    let hash = zone.registry().world_hash_all().unwrap();
                    (zone.digest(), zone.stats().clone(), hash)
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let hashes = results.iter().map(|r| r.2).collect();
    let (digest, stats) = merge(results.into_iter().map(|(d, s, _)| (d, s)).collect());
    (digest, stats, hashes)
}

/// Every zone in one thread, stepped in turn (zone order reversed, so messages arrive in
/// another order than on threads).
pub(crate) fn run_lockstep(
    layout: Layout,
    workers: usize,
) -> (ZoneDigest, Vec<ZoneStats>, Vec<u64>) {
    let bus = InProcessBus::new(layout.zones);
    let mut zones: Vec<_> = (0..layout.zones)
        .map(|z| layout.zone(z, workers, bus.clone(), layout.config(z)))
        .collect();
    for _ in 0..layout.ticks {
        for zone in zones.iter_mut().rev() {
            zone.step().unwrap();
        }
    }
    for zone in &mut zones {
        zone.settle().unwrap();
    }
    let hashes = zones
        .iter()
        .map(|z| z.registry().world_hash_all().unwrap())
        .collect();
    let results = zones.iter_mut().map(|z| (z.digest(), z.stats().clone()));
    let (digest, stats) = merge(results.collect());
    (digest, stats, hashes)
}

pub(crate) fn merge(results: Vec<(ZoneDigest, ZoneStats)>) -> (ZoneDigest, Vec<ZoneStats>) {
    let mut merged = ZoneDigest::default();
    let mut stats = Vec::new();
    for (d, s) in results {
        merged.merge(&d);
        stats.push(s);
    }
    (merged, stats)
}

/// Checks that every aircraft key `0..count` is there exactly once.
pub(crate) fn assert_each_key_once(digest: &ZoneDigest, count: u64) {
    assert!(
        digest.duplicate_keys().is_empty(),
        "duplicated: {:?}",
        digest.duplicate_keys()
    );
    assert_eq!(
        digest.sorted_keys(),
        (0..count).collect::<Vec<_>>(),
        "lost aircraft"
    );
}

/// The [`Bus`] contract, the same for every implementation: one publisher's messages in order,
/// a repeated id kept once, streams per zone, replay from any position, bounded reads.
pub(crate) fn bus_contract<B: Bus>(bus: &mut B) {
    use std::time::{Duration, Instant};
    for i in 0..50u32 {
        bus.publish(1, &format!("id-{i}"), &i.to_le_bytes())
            .unwrap();
        bus.publish(1, &format!("id-{i}"), b"a repeat").unwrap();
    }
    bus.publish(0, "other", b"zone 0").unwrap();
    bus.flush().unwrap();
    let mut got = Vec::new();
    let mut from = 1;
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < 50 && Instant::now() < deadline {
        for m in bus.read(1, from, 16, Duration::from_millis(200)).unwrap() {
            from = m.position + 1;
            got.push(m);
        }
    }
    let values: Vec<u32> = got
        .iter()
        .map(|m| u32::from_le_bytes(m.payload[..4].try_into().unwrap()))
        .collect();
    assert_eq!(values, (0..50).collect::<Vec<_>>(), "in order, each once");
    assert!(got.windows(2).all(|w| w[0].position < w[1].position));
    // Replay from the middle.
    let again = bus
        .read(1, got[30].position, 100, Duration::from_secs(2))
        .unwrap();
    assert_eq!(again[0], got[30]);
    assert_eq!(
        again.len(),
        20,
        "to the end of zone 1's stream, nothing of zone 0's"
    );
    assert!(
        bus.read(1, from, 10, Duration::from_millis(100))
            .unwrap()
            .is_empty()
    );
    let zone0 = bus.read(0, 1, 10, Duration::from_secs(2)).unwrap();
    assert_eq!(zone0.len(), 1);
    assert_eq!(zone0[0].payload, b"zone 0");
}
