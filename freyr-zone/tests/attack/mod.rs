//! What the two zone attack files share: a bus that injects faults, the line world (entities
//! that move along one axis and cross zone borders) and its helpers.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common::{Layout, merge};
use freyr::persist::EntityMap;
use freyr::{Entity, Phase, Registry};
use freyr_zone::{
    Bus, BusError, InProcessBus, Inbound, Message, Position, Zone, ZoneConfig, ZoneDigest, ZoneId,
    ZoneRules, ZoneStats,
};
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// A bus with faults: down on demand, every message published twice under a new id, or the
// even ticks' markers lost.

#[derive(Clone)]
pub(crate) struct Faulty {
    pub(crate) inner: InProcessBus,
    pub(crate) down: Arc<AtomicBool>,
    pub(crate) duplicate: bool,
    pub(crate) drop_even_markers: bool,
}

impl Faulty {
    pub(crate) fn new(inner: InProcessBus) -> Self {
        Faulty {
            inner,
            down: Arc::new(AtomicBool::new(false)),
            duplicate: false,
            drop_even_markers: false,
        }
    }

    pub(crate) fn check(&self) -> Result<(), BusError> {
        match self.down.load(Ordering::SeqCst) {
            true => Err(BusError::Unavailable("the test took the bus down".into())),
            false => Ok(()),
        }
    }
}

impl Bus for Faulty {
    fn publish(&mut self, dest: ZoneId, id: &str, payload: &[u8]) -> Result<(), BusError> {
        self.check()?;
        if self.drop_even_markers
            && let Ok(Message::Marker { tick, .. }) = Message::decode(payload)
            && tick % 2 == 0
        {
            return Ok(()); // lost on the way
        }
        self.inner.publish(dest, id, payload)?;
        if self.duplicate {
            // A second copy the bus cannot recognise as a repeat.
            self.inner.publish(dest, &format!("{id}~again"), payload)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), BusError> {
        self.check()?;
        self.inner.flush()
    }

    fn read(
        &mut self,
        zone: ZoneId,
        from: Position,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<Inbound>, BusError> {
        self.inner.read(zone, from, max, wait)
    }
}

// ---------------------------------------------------------------------------------------------
// A world on a line: zone = floor(x / 100), so a zone out of range is easy to reach.

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct X(pub(crate) f32);
/// Added to x each tick; with `.1` the sign flips after each move (back and forth).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Vel(pub(crate) f32, pub(crate) bool);
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Key(pub(crate) u64);
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Leader(pub(crate) Option<Entity>);

pub(crate) struct Line;

impl ZoneRules for Line {
    type Place = X;
    fn owner(&self, x: &X) -> ZoneId {
        (x.0 / 100.0).floor() as ZoneId // saturating: negative is 0, huge is u32::MAX
    }
    fn digest(&self, registry: &mut Registry) -> ZoneDigest {
        let mut d = ZoneDigest::default();
        registry.query::<(&Key, &X, &Vel)>().each(|_, (k, x, v)| {
            let state = u64::from(x.0.to_bits()) << 32 | u64::from(v.0.to_bits());
            d.add(k.0, state ^ u64::from(v.1));
        });
        d
    }
}

pub(crate) fn line_registry(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_persistent::<X>("attack.x", 1);
    r.register_persistent::<Vel>("attack.vel", 1);
    r.register_persistent::<Key>("attack.key", 1);
    r.register_persistent_with_remap::<Leader>("attack.leader", 1, |l, map: &EntityMap| {
        l.0 = l.0.and_then(|e| map.get(e));
    });
    r.add_system(Phase::Update, |r: &mut Registry, _dt: f32| {
        r.query::<(&mut X, &mut Vel)>().each(|_, (x, v)| {
            x.0 += v.0;
            if v.1 {
                v.0 = -v.0;
            }
        });
    });
    r
}

pub(crate) fn line_config(zone: ZoneId, zones: u32, lookahead: u64, batch: usize) -> ZoneConfig {
    let mut c = ZoneConfig::new(zone, zones);
    c.lookahead = lookahead;
    c.batch_entities = batch;
    c.neighbour_timeout = Duration::from_secs(30);
    c
}

/// Steps every zone in turn for `ticks` ticks, then settles them all.
pub(crate) fn lockstep<B: Bus, R: ZoneRules>(zones: &mut [Zone<B, R>], ticks: u64) {
    for _ in 0..ticks {
        for zone in zones.iter_mut() {
            zone.step().unwrap();
        }
    }
    for zone in zones.iter_mut() {
        zone.settle().unwrap();
    }
}

pub(crate) fn merged<B: Bus, R: ZoneRules>(
    zones: &mut [Zone<B, R>],
) -> (ZoneDigest, Vec<ZoneStats>) {
    merge(
        zones
            .iter_mut()
            .map(|z| (z.digest(), z.stats().clone()))
            .collect(),
    )
}

pub(crate) fn aircraft_layout(side: f32) -> Layout {
    Layout {
        zones: 2,
        aircraft: 300,
        side,
        lookahead: 2,
        ticks: 40,
    }
}

pub(crate) fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("freyr-zone-attack-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---------------------------------------------------------------------------------------------
// Forged messages.
