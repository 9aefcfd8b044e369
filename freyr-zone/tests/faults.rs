//! Bad input and faults on the in-process bus: refused messages are counted and change
//! nothing, a silent neighbour is named, a zone restarted from its checkpoint rejoins the run
//! and the merged digest is the one of the run without the restart.

mod common;

use std::time::Duration;

use common::{Layout, assert_each_key_once, merge, run_lockstep};
use freyr_zone::{Bus, Checkpointing, InProcessBus, Message, Rejection, ZoneError};

fn layout() -> Layout {
    Layout {
        zones: 2,
        aircraft: 300,
        side: 1_200.0,
        lookahead: 2,
        ticks: 60,
    }
}

/// A real export of an entity with a type zone 0 does not know.
fn alien_export() -> Vec<u8> {
    let mut r = freyr::Registry::with_workers(1);
    r.register_persistent::<u32>("alien.type", 1);
    let e = r.spawn((7u32,));
    r.export(&[e]).unwrap()
}

#[test]
fn bad_messages_are_counted_and_the_zones_run_on_to_the_same_world() {
    let l = layout();
    let (clean, _, _) = run_lockstep(l, 1);
    let bus = InProcessBus::new(2);
    let mut zones: Vec<_> = (0..2)
        .map(|z| l.zone(z, 2, bus.clone(), l.config(z)))
        .collect();
    let mut rogue = bus.clone();
    let mut kept = None;
    for tick in 0..l.ticks {
        for zone in &mut zones {
            zone.step().unwrap();
        }
        if tick == 10 {
            // A real handoff zone 1 sent zone 0, kept to send again later.
            let stream = rogue.read(0, 1, 10_000, Duration::ZERO).unwrap();
            kept = stream
                .into_iter()
                .map(|m| m.payload)
                .find(|p| matches!(Message::decode(p), Ok(Message::Handoff { tick: 9, .. })));
            let bad: Vec<(&str, Vec<u8>)> = vec![
                ("garbage", b"not a zone message at all".to_vec()),
                (
                    "truncated",
                    Message::Marker {
                        source: 1,
                        dest: 0,
                        tick: 3,
                    }
                    .encode()[..10]
                        .to_vec(),
                ),
                (
                    "unknown-zone",
                    Message::Marker {
                        source: 9,
                        dest: 0,
                        tick: 11,
                    }
                    .encode(),
                ),
                (
                    "self",
                    Message::Marker {
                        source: 0,
                        dest: 0,
                        tick: 11,
                    }
                    .encode(),
                ),
                (
                    "alien",
                    Message::Handoff {
                        source: 1,
                        dest: 0,
                        tick: 10,
                        seq: 900,
                        sent_unix_ns: 0,
                        export: alien_export(),
                    }
                    .encode(),
                ),
                (
                    "damaged",
                    Message::Handoff {
                        source: 1,
                        dest: 0,
                        tick: 10,
                        seq: 901,
                        sent_unix_ns: 0,
                        export: b"FREYREXP?".to_vec(),
                    }
                    .encode(),
                ),
            ];
            for (id, payload) in bad {
                rogue.publish(0, id, &payload).unwrap();
            }
        }
        if tick == 20 {
            // Re-delivered long after its tick was applied (a new id: the bus cannot drop it).
            rogue
                .publish(0, "late-copy", kept.as_ref().expect("a handoff at tick 9"))
                .unwrap();
        }
    }
    for zone in &mut zones {
        zone.settle().unwrap();
    }
    let s = zones[0].stats().clone();
    assert_eq!((s.undecodable, s.unknown_zone), (2, 2), "{s:?}");
    // The alien and damaged handoffs came after zone 1's tick-10 marker or before it,
    // depending on the interleaving: either way refused, never imported.
    assert_eq!(s.rejected_imports + s.after_marker, 2, "{s:?}");
    assert_eq!(s.already_applied, 1, "{s:?}");
    assert!(matches!(
        s.last_rejection,
        Some(Rejection::AlreadyApplied {
            source: 1,
            tick: 9,
            ..
        })
    ));
    assert_eq!(zones[1].stats().rejected(), 0);
    let (digest, _) = merge(
        zones
            .iter_mut()
            .map(|z| (z.digest(), z.stats().clone()))
            .collect(),
    );
    assert_each_key_once(&digest, l.aircraft);
    assert_eq!(digest.value(), clean.value());
}

#[test]
fn an_unknown_type_is_refused_and_counted_by_the_import() {
    let l = layout();
    let bus = InProcessBus::new(2);
    let mut zone = l.zone(0, 1, bus.clone(), l.config(0));
    let mut rogue = bus.clone();
    let before = zone.registry().len();
    let alien = Message::Handoff {
        source: 1,
        dest: 0,
        tick: 0,
        seq: 0,
        sent_unix_ns: 0,
        export: alien_export(),
    };
    rogue.publish(0, "alien", &alien.encode()).unwrap();
    for t in 0..3 {
        rogue
            .publish(
                0,
                &format!("m{t}"),
                &Message::Marker {
                    source: 1,
                    dest: 0,
                    tick: t,
                }
                .encode(),
            )
            .unwrap();
    }
    for _ in 0..3 {
        zone.step().unwrap();
    }
    let s = zone.stats();
    assert_eq!(s.rejected_imports, 1);
    assert!(
        matches!(&s.last_rejection, Some(Rejection::Import(m)) if m.contains("alien.type")),
        "{:?}",
        s.last_rejection
    );
    assert!(zone.registry().len() <= before, "nothing imported");
}

#[test]
fn a_silent_neighbour_is_named_and_the_wait_is_bounded() {
    let l = layout();
    let bus = InProcessBus::new(2);
    let mut config = l.config(0);
    config.neighbour_timeout = Duration::from_millis(150);
    let mut zone0 = l.zone(0, 1, bus.clone(), config);
    // Ticks 0 and 1 need no marker (K = 2); tick 2 needs zone 1's tick-0 marker.
    zone0.step().unwrap();
    zone0.step().unwrap();
    let started = std::time::Instant::now();
    match zone0.step() {
        Err(ZoneError::NeighbourSilent {
            tick: 2,
            needed: 0,
            waiting_for,
            waited,
        }) => {
            assert_eq!(waiting_for, [1]);
            assert!(waited >= Duration::from_millis(150));
        }
        other => panic!("expected a silent neighbour, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    let s = zone0.stats();
    assert!(s.waited_for[1] >= Duration::from_millis(100), "{s:?}");
    assert_eq!(s.last_wait, Some((2, vec![1])));
    // The neighbour comes back: the zone goes on from where it stopped.
    let mut zone1 = l.zone(1, 1, bus.clone(), l.config(1));
    while zone0.tick() < l.ticks {
        zone1.step().unwrap();
        zone0.step().unwrap();
    }
    zone1.run_until(l.ticks).unwrap();
    zone0.settle().unwrap();
    zone1.settle().unwrap();
    let (digest, _) = merge(vec![
        (zone0.digest(), zone0.stats().clone()),
        (zone1.digest(), zone1.stats().clone()),
    ]);
    assert_eq!(digest.value(), run_lockstep(l, 1).0.value());
}

#[test]
fn a_zone_restarted_from_its_checkpoint_replays_and_the_run_is_unchanged() {
    let l = layout();
    let (clean, _, _) = run_lockstep(l, 1);
    let dir = std::env::temp_dir().join(format!("freyr-zone-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bus = InProcessBus::new(2);
    let config = |z: u32| {
        let mut c = l.config(z);
        c.checkpoint = Some(Checkpointing {
            dir: dir.clone(),
            every: 7,
        });
        c
    };
    let mut zones: Vec<_> = (0..2)
        .map(|z| l.zone(z, 2, bus.clone(), config(z)))
        .collect();
    for crash_at in [17u64, 30, 44] {
        while zones[1].tick() < crash_at {
            for zone in &mut zones {
                zone.step().unwrap();
            }
        }
        // Zone 1 dies (its registry and inbox are lost) and a new process resumes it.
        zones[1] = l.zone(1, 3, bus.clone(), config(1));
        assert!(zones[1].resume().unwrap());
        assert_eq!(zones[1].tick() % 7, 0, "resumed at a checkpoint");
        assert!(zones[1].tick() < crash_at);
        // Zone 1 re-runs to the present; zone 0 waits for nothing it has not got.
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
    let (digest, _) = merge(
        zones
            .iter_mut()
            .map(|z| (z.digest(), z.stats().clone()))
            .collect(),
    );
    assert_each_key_once(&digest, l.aircraft);
    assert_eq!(digest.value(), clean.value());
    std::fs::remove_dir_all(&dir).unwrap();
}
