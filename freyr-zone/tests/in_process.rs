//! Zones on the in-process bus: the merged digest does not depend on workers, threads or
//! arrival order; with K = 1 it is the single world's; handoffs really happen.

mod common;

use common::{Layout, assert_each_key_once, run_lockstep, run_threads};
use freyr_zone::{Bus, BusError, InProcessBus, aircraft};

fn layout(zones: u32, lookahead: u64) -> Layout {
    Layout {
        zones,
        aircraft: 400,
        side: 1_500.0,
        lookahead,
        ticks: 90,
    }
}

/// The same aircraft in one registry, `ticks` fixed steps.
fn single_world(layout: Layout) -> u64 {
    let mut one = aircraft::registry(2, layout.side);
    one.spawn_batch((0..layout.aircraft).map(|k| aircraft::aircraft(k, layout.side)));
    let dt = layout.config(0).tick.as_secs_f32();
    for _ in 0..layout.ticks {
        one.update(dt);
    }
    aircraft::digest(&mut one).value()
}

#[test]
fn with_lookahead_one_two_and_three_zones_compute_the_single_world() {
    for zones in [2, 3] {
        let l = layout(zones, 1);
        let (digest, stats, _) = run_threads(l, 2);
        assert_each_key_once(&digest, l.aircraft);
        assert!(
            stats.iter().all(|s| s.handoffs_sent > 20),
            "too few crossings: {stats:?}"
        );
        assert_eq!(digest.value(), single_world(l), "{zones} zones");
    }
}

#[test]
fn merged_digest_is_the_same_for_1_2_3_8_and_16_workers_threads_or_lockstep() {
    for zones in [2, 3] {
        let l = layout(zones, 3);
        let (reference, stats, hashes) = run_lockstep(l, 1);
        assert_each_key_once(&reference, l.aircraft);
        let sent: u64 = stats.iter().map(|s| s.handoffs_sent).sum();
        let received: u64 = stats.iter().map(|s| s.handoffs_received).sum();
        assert!(
            sent > 50 && received > 0,
            "sent {sent}, received {received}"
        );
        // With K = 3, aircraft in flight at the end miss a tick or two: not the single world.
        assert_ne!(reference.value(), single_world(l));
        for workers in [1, 2, 3, 8, 16] {
            let (threads, stats, threads_hashes) = run_threads(l, workers);
            // Each zone's world, ids and row order included, whatever the arrival order.
            assert_eq!(threads_hashes, hashes, "{zones} zones, {workers} workers");
            assert_eq!(
                threads.value(),
                reference.value(),
                "{zones} zones, {workers} workers"
            );
            assert!(stats.iter().all(|s| s.rejected() == 0));
            let (lockstep, _, lockstep_hashes) = run_lockstep(l, workers);
            assert_eq!(lockstep_hashes, hashes, "{zones} zones, {workers} workers");
            assert_eq!(
                lockstep.value(),
                reference.value(),
                "{zones} zones, {workers} workers"
            );
        }
    }
}

#[test]
fn the_in_process_bus_keeps_the_bus_contract() {
    common::bus_contract(&mut InProcessBus::new(2));
    assert_eq!(
        InProcessBus::new(2).publish(2, "x", b""),
        Err(BusError::UnknownZone(2))
    );
}
