//! A zone's outbound side (the handoffs and markers of a tick, published with retries) and its
//! checkpoints (write, and resume from one).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use freyr::Entity;

use crate::bus::Bus;
use crate::error::ZoneError;
use crate::message::{Message, ZoneId};

use super::checkpoint::{self, Header};
use super::{FaultPoint, Zone, ZoneRules};

impl<B: Bus, R: ZoneRules> Zone<B, R> {
    /// Exports, despawns and queues the entities owned by other zones after tick `tick`, then
    /// queues the tick's markers.
    pub(super) fn hand_off(&mut self, tick: u64) -> Result<(), ZoneError> {
        let (me, zones) = (self.config.zone, self.config.zones);
        let mut leaving: Vec<Vec<Entity>> = vec![Vec::new(); zones as usize];
        let mut bad_owner = 0;
        let rules = &self.rules;
        self.registry.query::<&R::Place>().each(|e, place| {
            let owner = rules.owner(place);
            if owner != me {
                match leaving.get_mut(owner as usize) {
                    Some(list) => list.push(e),
                    None => bad_owner += 1,
                }
            }
        });
        self.stats.bad_owner += bad_owner;
        let sent_unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        for (dest, entities) in leaving.iter().enumerate() {
            // A stack of batches, the next on top; one too large is split in halves (a pure
            // function of the entities, so the same in every run).
            let mut batches: Vec<&[Entity]> =
                entities.chunks(self.config.batch_entities).rev().collect();
            let mut seq = 0u32;
            while let Some(batch) = batches.pop() {
                let export = self.registry.export(batch).map_err(ZoneError::Save)?;
                let message = Message::Handoff {
                    source: me,
                    dest: dest as ZoneId,
                    tick,
                    seq,
                    sent_unix_ns,
                    export,
                };
                let bytes = message.encode();
                if bytes.len() > self.config.batch_bytes && batch.len() > 1 {
                    let (first, second) = batch.split_at(batch.len() / 2);
                    batches.extend([second, first]);
                    continue;
                }
                self.outbox
                    .handoffs
                    .push((dest as ZoneId, message.id(), bytes));
                self.stats.batches_sent += 1;
                seq += 1;
            }
            self.stats.handoffs_sent += entities.len() as u64;
            for &e in entities {
                self.registry
                    .despawn(e)
                    .expect("an entity just exported is alive");
            }
        }
        for dest in (0..zones).filter(|&z| z != me) {
            let message = Message::Marker {
                source: me,
                dest,
                tick,
            };
            self.outbox
                .markers
                .push((dest, message.id(), message.encode()));
        }
        Ok(())
    }

    /// Publishes the queued handoffs, waits until the bus stored them, then the markers, so a
    /// marker is never in a stream before a handoff it covers. Retries (the same ids: the bus
    /// keeps one copy) until [`ZoneConfig::publish_timeout`](super::ZoneConfig::publish_timeout).
    pub(super) fn publish_outbox(&mut self) -> Result<(), ZoneError> {
        if self.outbox.handoffs.is_empty() && self.outbox.markers.is_empty() {
            return Ok(());
        }
        let start = Instant::now();
        self.publish_all(false, start)?;
        self.outbox.handoffs.clear();
        if let Some(tick) = self
            .outbox
            .markers
            .first()
            .and_then(|(_, id, _)| marker_tick(id))
        {
            self.fault(FaultPoint::BetweenHandoffsAndMarkers(tick));
        }
        self.publish_all(true, start)?;
        self.outbox.markers.clear();
        Ok(())
    }

    fn publish_all(&mut self, markers: bool, start: Instant) -> Result<(), ZoneError> {
        loop {
            let queue = match markers {
                true => &self.outbox.markers,
                false => &self.outbox.handoffs,
            };
            let mut result = Ok(());
            for (dest, id, payload) in queue {
                result = self.bus.publish(*dest, id, payload);
                if result.is_err() {
                    break;
                }
            }
            let result = result.and_then(|()| self.bus.flush());
            match result {
                Ok(()) => return Ok(()),
                Err(e) if start.elapsed() >= self.config.publish_timeout => return Err(e.into()),
                Err(_) => {
                    self.stats.bus_retries += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    fn header(&self) -> Header {
        Header {
            zone: self.config.zone,
            zones: self.config.zones,
            lookahead: self.config.lookahead,
        }
    }

    /// Writes the checkpoint now: the registry's save and the inbox, in one file, crash-safely.
    /// [`step`](Zone::step) calls it every M ticks. What a failed step left queued is published
    /// first: a checkpoint never holds a world whose departed entities the bus has not stored
    /// (a zone resumed from it would not publish them again).
    ///
    /// # Errors
    ///
    /// [`ZoneError::Config`] without [`ZoneConfig::checkpoint`](super::ZoneConfig::checkpoint);
    /// [`ZoneError::Bus`] if the queued messages could not be published (nothing is written);
    /// [`ZoneError::Save`] or [`ZoneError::Checkpoint`] if writing failed (the previous
    /// checkpoint is then intact).
    pub fn checkpoint(&mut self) -> Result<(), ZoneError> {
        let Some(c) = &self.config.checkpoint else {
            return Err(ZoneError::Config(
                "no checkpoint directory configured".into(),
            ));
        };
        let path = checkpoint::path(&c.dir, self.config.zone);
        self.publish_outbox()?;
        let save = self.registry.save_to_vec().map_err(ZoneError::Save)?;
        let bytes = checkpoint::encode(&self.header(), &self.inbox, &save);
        let tick = self.registry.tick();
        let mut fault = self.fault.take();
        let written = checkpoint::write_atomic(&path, &bytes, || {
            if let Some(hook) = &mut fault {
                hook(FaultPoint::MidCheckpoint(tick));
            }
        });
        self.fault = fault;
        written?;
        self.stats.checkpoints += 1;
        Ok(())
    }

    /// Resumes from the checkpoint file if there is one: loads its world (replacing the
    /// registry's, tick included) and its inbox, so the next step reads the inbound stream on
    /// from the position the world applied through, re-runs to the present and re-publishes
    /// what it had published (the bus and the receivers drop the repeats). Returns whether a
    /// checkpoint was loaded.
    ///
    /// # Errors
    ///
    /// [`ZoneError::Config`] without a checkpoint directory, [`ZoneError::Checkpoint`] for an
    /// unreadable or damaged file or one of another zone or layout, [`ZoneError::Load`] for a
    /// world that does not load. The zone is then unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_zone::aircraft::{self, Strips};
    /// use freyr_zone::{Checkpointing, InProcessBus, Zone, ZoneConfig};
    ///
    /// let dir = std::env::temp_dir().join(format!("freyr-zone-resume-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let strips = Strips { zones: 1, side: 100.0 };
    /// let mut config = ZoneConfig::new(0, 1);
    /// config.checkpoint = Some(Checkpointing { dir: dir.clone(), every: 4 });
    /// let start = |config: ZoneConfig| {
    ///     let mut registry = aircraft::registry(1, 100.0);
    ///     aircraft::spawn_zone(&mut registry, &strips, 0, 10);
    ///     Zone::new(registry, InProcessBus::new(1), strips, config).unwrap()
    /// };
    /// let mut zone = start(config.clone());
    /// zone.run_until(6).unwrap(); // a checkpoint after tick 3
    /// let world = zone.digest();
    ///
    /// let mut restarted = start(config);
    /// assert!(restarted.resume().unwrap());
    /// assert_eq!(restarted.tick(), 4);
    /// restarted.run_until(6).unwrap();
    /// assert_eq!(restarted.digest(), world);
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn resume(&mut self) -> Result<bool, ZoneError> {
        let Some(c) = &self.config.checkpoint else {
            return Err(ZoneError::Config(
                "no checkpoint directory configured".into(),
            ));
        };
        let path = checkpoint::path(&c.dir, self.config.zone);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(ZoneError::Checkpoint(format!("{}: {e}", path.display()))),
        };
        let (inbox, save) = checkpoint::decode(&bytes, &self.header())?;
        self.registry.load_into(save).map_err(ZoneError::Load)?;
        self.inbox = inbox;
        self.outbox = Default::default();
        self.ready
            .store(self.registry.tick(), std::sync::atomic::Ordering::Release);
        Ok(true)
    }
}

/// The tick of a marker id `m.<source>.<dest>.<tick>`.
fn marker_tick(id: &str) -> Option<u64> {
    id.rsplit('.').next()?.parse().ok()
}
