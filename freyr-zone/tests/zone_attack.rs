//! A hostile user against the zone contracts, on the in-process bus: forged and repeated
//! messages, a bus that loses markers or goes down, zones that panic mid-tick, owners out of
//! range. Traffic (entities crossing back and forth or all at once, references split across
//! handoffs, worker counts, oversized handoffs) is in `zone_attack_traffic`.

mod attack;
mod common;

use attack::*;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{assert_each_key_once, run_lockstep};
use freyr::Registry;
use freyr_zone::aircraft;
use freyr_zone::{
    Bus, BusError, Checkpointing, FaultPoint, InProcessBus, Message, Rejection, Zone, ZoneError,
    ZoneId,
};

#[test]
fn a_forged_handoff_from_the_end_of_time_is_refused_without_a_panic_or_an_import() {
    let l = aircraft_layout(1_200.0);
    let bus = InProcessBus::new(2);
    let mut zone = l.zone(0, 1, bus.clone(), l.config(0));
    let mut rogue = bus.clone();
    // A real export of an aircraft no zone has (key 999_999).
    let export = {
        let mut r = aircraft::registry(1, l.side);
        let e = r.spawn(aircraft::aircraft(999_999, l.side));
        r.export(&[e]).unwrap()
    };
    // tick + K does not fit in a u64: no zone ever reaches the tick it is due at.
    for (i, tick) in [u64::MAX, u64::MAX - 1].into_iter().enumerate() {
        let forged = Message::Handoff {
            source: 1,
            dest: 0,
            tick,
            seq: 0,
            sent_unix_ns: 0,
            export: export.clone(),
        };
        rogue
            .publish(0, &format!("forged-{i}"), &forged.encode())
            .unwrap();
    }
    for t in 0..4 {
        let marker = Message::Marker {
            source: 1,
            dest: 0,
            tick: t,
        };
        rogue.publish(0, &marker.id(), &marker.encode()).unwrap();
    }
    for _ in 0..4 {
        zone.step().unwrap();
    }
    zone.settle().unwrap();
    let s = zone.stats().clone();
    assert_eq!(s.rejected(), 2, "{s:?}");
    assert_eq!(s.out_of_range, 2, "{s:?}");
    assert!(
        matches!(
            s.last_rejection,
            Some(Rejection::TickOutOfRange { source: 1, .. })
        ),
        "{s:?}"
    );
    assert_eq!((s.handoffs_received, s.batches_applied), (0, 0));
    let digest = zone.digest();
    assert!(
        !digest.sorted_keys().contains(&999_999),
        "the forged aircraft was imported"
    );
    assert!(digest.duplicate_keys().is_empty());
}

#[test]
fn a_forged_export_with_a_valid_checksum_and_the_wrong_layout_imports_nothing() {
    let l = aircraft_layout(1_200.0);
    let bus = InProcessBus::new(2);
    let mut zone = l.zone(0, 1, bus.clone(), l.config(0));
    let mut rogue = bus.clone();
    // The aircraft type names, but other types behind them (a sound export, wrong content).
    let export = {
        let mut r = Registry::with_workers(1);
        r.register_persistent::<u8>("aircraft.key", 1);
        r.register_persistent::<(u8, u8)>("aircraft.flight", 1);
        let e = r.spawn((7u8, (1u8, 2u8)));
        r.export(&[e]).unwrap()
    };
    let forged = Message::Handoff {
        source: 1,
        dest: 0,
        tick: 0,
        seq: 0,
        sent_unix_ns: 0,
        export,
    };
    rogue.publish(0, &forged.id(), &forged.encode()).unwrap();
    for t in 0..3 {
        let marker = Message::Marker {
            source: 1,
            dest: 0,
            tick: t,
        };
        rogue.publish(0, &marker.id(), &marker.encode()).unwrap();
    }
    let before = zone.registry().len();
    for _ in 0..3 {
        zone.step().unwrap(); // tick 2 applies tick 0's handoffs
    }
    let s = zone.stats().clone();
    assert_eq!(s.rejected_imports, 1, "{s:?}");
    assert!(
        matches!(s.last_rejection, Some(Rejection::Import(_))),
        "{s:?}"
    );
    assert_eq!(s.handoffs_received, 0);
    let left = s.handoffs_sent as usize;
    assert_eq!(
        zone.registry().len(),
        before - left,
        "nothing half-imported"
    );
}

// ---------------------------------------------------------------------------------------------
// A bus that misbehaves.

#[test]
fn every_message_delivered_twice_under_a_new_id_changes_nothing() {
    let l = aircraft_layout(600.0);
    let clean = run_lockstep(l, 1).0;
    let bus = InProcessBus::new(2);
    let mut zones: Vec<_> = (0..2)
        .map(|z| {
            let mut faulty = Faulty::new(bus.clone());
            faulty.duplicate = true;
            l.zone(z, 2, faulty, l.config(z))
        })
        .collect();
    lockstep(&mut zones, l.ticks);
    let (digest, stats) = merged(&mut zones);
    assert_each_key_once(&digest, l.aircraft);
    assert_eq!(digest.value(), clean.value());
    for (me, other) in [(0, 1), (1, 0)] {
        let (s, o) = (&stats[me], &stats[other]);
        assert!(o.batches_sent > 10, "too few handoffs: {o:?}");
        // Each copy is read before its tick's marker: refused as a repeat, never imported.
        assert_eq!(s.duplicates, o.batches_sent, "zone {me}: {s:?}");
        assert_eq!(s.batches_applied, o.batches_sent, "zone {me}: {s:?}");
        assert_eq!(s.handoffs_received, o.handoffs_sent, "zone {me}: {s:?}");
        assert_eq!(s.rejected(), s.duplicates, "zone {me}: {s:?}");
    }
}

#[test]
fn lost_markers_are_covered_by_the_next_one_and_the_world_is_unchanged() {
    let l = aircraft_layout(600.0); // 40 ticks: the last marker (39) is odd, not lost
    let clean = run_lockstep(l, 1).0;
    let bus = InProcessBus::new(2);
    let mut zones: Vec<_> = (0..2)
        .map(|z| {
            let mut faulty = Faulty::new(bus.clone());
            faulty.drop_even_markers = true;
            l.zone(z, 1, faulty, l.config(z))
        })
        .collect();
    lockstep(&mut zones, l.ticks);
    let (digest, stats) = merged(&mut zones);
    assert!(stats.iter().all(|s| s.handoffs_sent > 10), "{stats:?}");
    assert_each_key_once(&digest, l.aircraft);
    assert_eq!(digest.value(), clean.value());
    // Only odd markers are in the streams: 20 per stream.
    assert_eq!(bus.stream_len(0) as u64, 20 + stats[1].batches_sent);
}

#[test]
fn a_checkpoint_taken_while_the_bus_is_down_loses_no_handoff() {
    let l = aircraft_layout(400.0); // dense: aircraft cross every tick
    let clean = run_lockstep(l, 1).0;
    let dir = temp_dir("bus-down");
    let config = |z: ZoneId| {
        let mut c = l.config(z);
        c.publish_timeout = Duration::from_millis(30);
        c.checkpoint = Some(Checkpointing {
            dir: dir.clone(),
            every: 10,
        });
        c
    };
    let bus = InProcessBus::new(2);
    let first = Faulty::new(bus.clone());
    let down = Arc::clone(&first.down);
    let mut zones = vec![
        l.zone(0, 1, first, config(0)),
        l.zone(1, 1, Faulty::new(bus.clone()), config(1)),
    ];
    while zones[0].tick() < 20 {
        for zone in &mut zones {
            zone.step().unwrap();
        }
    }
    down.store(true, Ordering::SeqCst);
    let sent = zones[0].stats().handoffs_sent;
    match zones[0].step() {
        Err(ZoneError::Bus(BusError::Unavailable(_))) => {}
        other => panic!("expected the bus error, got {other:?}"),
    }
    assert!(
        zones[0].stats().handoffs_sent > sent,
        "tick 20 handed aircraft off"
    );
    assert_eq!(zones[0].tick(), 21, "the tick ran, its handoffs are queued");
    // Saving now would record a world without the queued aircraft and a stream that never
    // got them: refused while they are not published.
    match zones[0].checkpoint() {
        Err(ZoneError::Bus(_)) => {}
        other => panic!("a checkpoint with unpublished handoffs: {other:?}"),
    }
    // The process dies; the bus comes back; a new process resumes the zone.
    down.store(false, Ordering::SeqCst);
    zones[0] = l.zone(0, 2, Faulty::new(bus.clone()), config(0));
    assert!(zones[0].resume().unwrap());
    assert_eq!(zones[0].tick(), 20, "resumed at the last checkpoint");
    while zones[0].tick() < l.ticks || zones[1].tick() < l.ticks {
        for zone in &mut zones {
            if zone.tick() < l.ticks {
                zone.step().unwrap();
            }
        }
    }
    for zone in &mut zones {
        zone.settle().unwrap();
    }
    let (digest, _) = merged(&mut zones);
    assert_each_key_once(&digest, l.aircraft);
    assert_eq!(digest.value(), clean.value());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_layout_larger_than_its_bus_is_a_typed_error_and_the_zone_runs_on() {
    let bus = InProcessBus::new(1); // a stream for zone 0 only
    let mut registry = line_registry(1);
    registry.spawn((X(99.5), Vel(1.0, false), Key(1)));
    registry.spawn((X(10.0), Vel(0.0, false), Key(2)));
    let mut config = line_config(0, 2, 2, 64);
    config.publish_timeout = Duration::from_millis(20);
    let mut zone = Zone::new(registry, bus, Line, config).unwrap();
    for _ in 0..2 {
        match zone.step() {
            Err(ZoneError::Bus(BusError::UnknownZone(1))) => {}
            other => panic!("expected UnknownZone(1), got {other:?}"),
        }
    }
    assert_eq!(
        zone.tick(),
        1,
        "the first call ran tick 0; the second published first"
    );
    assert_eq!(zone.stats().handoffs_sent, 1);
    assert_eq!(
        zone.registry().len(),
        1,
        "key 2 is home; key 1 is queued, not imported"
    );
}

// ---------------------------------------------------------------------------------------------
// Zones that panic mid-tick.

#[test]
fn a_zone_that_panics_mid_tick_resumes_from_its_checkpoint_and_nothing_is_lost() {
    let l = aircraft_layout(400.0);
    let clean = run_lockstep(l, 1).0;
    let dir = temp_dir("panic");
    let config = |z: ZoneId| {
        let mut c = l.config(z);
        c.checkpoint = Some(Checkpointing {
            dir: dir.clone(),
            every: 5,
        });
        c
    };
    let bus = InProcessBus::new(2);
    let mut zones: Vec<_> = (0..2)
        .map(|z| l.zone(z, 1, bus.clone(), config(z)))
        .collect();
    let faults = [
        FaultPoint::BetweenHandoffsAndMarkers(13),
        FaultPoint::MidCheckpoint(25),
        FaultPoint::TickEnd(31),
    ];
    for fault in faults {
        zones[1].set_fault_hook(move |at| {
            if at == fault {
                std::panic::panic_any("injected");
            }
        });
        loop {
            zones[0].step().unwrap();
            let stepped = catch_unwind(AssertUnwindSafe(|| zones[1].step()));
            match stepped {
                Ok(r) => {
                    r.unwrap();
                }
                Err(p) => {
                    assert_eq!(p.downcast_ref::<&str>(), Some(&"injected"));
                    break;
                }
            }
        }
        // The zone's process is gone; a new one resumes it and catches up.
        zones[1] = l.zone(1, 3, bus.clone(), config(1));
        assert!(zones[1].resume().unwrap());
        assert_eq!(zones[1].tick() % 5, 0);
        while zones[1].tick() < zones[0].tick() {
            zones[1].step().unwrap();
        }
    }
    while zones[0].tick() < l.ticks {
        for zone in &mut zones {
            zone.step().unwrap();
        }
    }
    for zone in &mut zones {
        zone.settle().unwrap();
    }
    let (digest, stats) = merged(&mut zones);
    assert!(stats[0].already_applied + stats[0].duplicates + stats[0].after_marker == 0);
    assert_each_key_once(&digest, l.aircraft);
    assert_eq!(digest.value(), clean.value());
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Entities that cross in odd ways.

#[test]
fn an_owner_out_of_range_keeps_the_entity_home_and_counts_it() {
    let bus = InProcessBus::new(2);
    let mut registry = line_registry(1);
    registry.spawn((X(250.0), Vel(0.0, false), Key(1))); // zone 2 of 2
    registry.spawn((X(1e12), Vel(0.0, false), Key(2))); // u32::MAX
    registry.spawn((X(-5.0), Vel(0.0, false), Key(3))); // saturates to zone 0
    let mut zone = Zone::new(registry, bus.clone(), Line, line_config(0, 2, 2, 64)).unwrap();
    zone.step().unwrap();
    zone.step().unwrap();
    let s = zone.stats();
    assert_eq!((s.bad_owner, s.handoffs_sent, s.batches_sent), (4, 0, 0));
    assert_eq!(zone.registry().len(), 3);
    assert_eq!(bus.stream_len(1), 2, "only the two markers went out");
}
