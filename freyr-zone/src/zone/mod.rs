//! The zone runtime: [`Zone`], one region's world on the registry's own fixed-step loop,
//! handing entities to other zones through a [`Bus`].

mod checkpoint;
mod config;
mod handoff;
pub(crate) mod inbox;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use freyr::time::{ManualClock, MonotonicClock};
use freyr::{Component, Registry};

use crate::bus::{Bus, Position};
use crate::digest::ZoneDigest;
use crate::error::{Rejection, ZoneError};
use crate::message::ZoneId;
use crate::stats::ZoneStats;

pub use config::{Checkpointing, FaultPoint, Pace, ZoneConfig};
use inbox::Inbox;

/// What a zone needs to know about its entities: who owns each one (a function of one
/// component, e.g. the position), and the digest of its entities by a stable key.
pub trait ZoneRules: Send + 'static {
    /// The component the owner is a function of. An entity without it never leaves.
    type Place: Component;

    /// The zone that owns an entity at `place`. A zone number out of range keeps the entity
    /// where it is (counted in [`ZoneStats::bad_owner`]).
    fn owner(&self, place: &Self::Place) -> ZoneId;

    /// The digest of the zone's entities, keyed by a stable key component of the user's (see
    /// [`ZoneDigest`]).
    fn digest(&self, registry: &mut Registry) -> ZoneDigest;
}

/// The outbound messages not yet stored by the bus: handoffs first, then markers.
#[derive(Default)]
struct Outbox {
    handoffs: Vec<(ZoneId, String, Vec<u8>)>,
    markers: Vec<(ZoneId, String, Vec<u8>)>,
}

/// One zone: a registry that owns a region, on the registry's own fixed-step loop, reading
/// its inbound stream from a [`Bus`] and publishing to its neighbours.
///
/// Each [`step`](Zone::step) runs one tick T:
/// 1. waits until every other zone's "tick T − K done" marker has arrived (bounded by
///    [`ZoneConfig::neighbour_timeout`]; the time and whom it waited for go to
///    [`ZoneStats`]),
/// 2. imports the handoffs sent at T − K, in (source zone, tick, sequence) order, so the
///    world never depends on arrival order,
/// 3. lets the registry's fixed-step loop run tick T (a gate holds it until 1 and 2 are done),
/// 4. exports the entities [`ZoneRules::owner`] places in another zone, despawns them, and
///    publishes them (then a "tick T done" marker to every other zone),
/// 5. every M ticks, writes a crash-safe checkpoint: the save and the stream position in one
///    file.
///
/// See the [crate documentation](crate) for zones on threads. Stepped in turn on one thread
/// (K ≥ 1 makes that possible: what tick T needs was sent at T − K):
///
/// ```
/// use freyr_zone::aircraft::{self, Strips};
/// use freyr_zone::{InProcessBus, Zone, ZoneConfig};
///
/// let strips = Strips { zones: 2, side: 1_000.0 };
/// let bus = InProcessBus::new(2);
/// let mut zones: Vec<_> = (0..2)
///     .map(|z| {
///         let mut registry = aircraft::registry(1, strips.side);
///         aircraft::spawn_zone(&mut registry, &strips, z, 100);
///         Zone::new(registry, bus.clone(), strips, ZoneConfig::new(z, 2)).unwrap()
///     })
///     .collect();
/// for _ in 0..30 {
///     for zone in &mut zones {
///         zone.step().unwrap();
///     }
/// }
/// for zone in &mut zones {
///     zone.settle().unwrap();
/// }
/// let sent: u64 = zones.iter().map(|z| z.stats().handoffs_sent).sum();
/// let received: u64 = zones.iter().map(|z| z.stats().handoffs_received).sum();
/// assert!(sent > 0);
/// assert_eq!(sent, received, "every aircraft that left arrived");
/// assert_eq!(zones.iter().map(|z| z.registry().len()).sum::<usize>(), 100);
/// ```
pub struct Zone<B: Bus, R: ZoneRules> {
    registry: Registry,
    bus: B,
    rules: R,
    config: ZoneConfig,
    inbox: Inbox,
    outbox: Outbox,
    stats: ZoneStats,
    /// The gate's limit: the fixed-step loop may run ticks below it.
    ready: Arc<AtomicU64>,
    clock: Option<ManualClock>,
    fault: Option<Box<dyn FnMut(FaultPoint) + Send>>,
    /// Set by [`settle`](Zone::settle): the run is over.
    settled: bool,
}

impl<B: Bus, R: ZoneRules> Zone<B, R> {
    /// A zone over `registry` (its types registered for persistence, its systems added, its
    /// initial entities spawned), installing the registry's fixed step and a gate on it.
    ///
    /// # Errors
    ///
    /// [`ZoneError::Config`] if the configuration is not usable (zone out of range, K = 0, a
    /// zero timeout or batch size, a checkpoint interval of 0, a tick length the fixed step
    /// refuses).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_zone::aircraft::{self, Strips};
    /// use freyr_zone::{InProcessBus, Zone, ZoneConfig, ZoneError};
    ///
    /// let strips = Strips { zones: 2, side: 100.0 };
    /// let mut config = ZoneConfig::new(0, 2);
    /// config.lookahead = 0;
    /// let zone = Zone::new(aircraft::registry(1, 100.0), InProcessBus::new(2), strips, config);
    /// assert!(matches!(zone, Err(ZoneError::Config(_))));
    /// ```
    pub fn new(
        mut registry: Registry,
        bus: B,
        rules: R,
        config: ZoneConfig,
    ) -> Result<Self, ZoneError> {
        config.validate()?;
        let clock = match config.pace {
            Pace::Free => {
                let clock = ManualClock::new();
                registry
                    .set_fixed_step(config.tick, clock.clone())
                    .map_err(|e| ZoneError::Config(e.to_string()))?;
                Some(clock)
            }
            Pace::RealTime => {
                registry
                    .set_fixed_step(config.tick, MonotonicClock::new())
                    .map_err(|e| ZoneError::Config(e.to_string()))?;
                None
            }
        };
        let fixed = registry.fixed_step_mut().expect("installed above");
        fixed
            .set_max_catchup_ticks(1)
            .map_err(|e| ZoneError::Config(e.to_string()))?;
        let ready = Arc::new(AtomicU64::new(registry.tick()));
        let limit = Arc::clone(&ready);
        registry.add_gate(move |next: u64| next < limit.load(Ordering::Acquire));
        let stats = ZoneStats {
            waited_for: vec![Duration::ZERO; config.zones as usize],
            ..ZoneStats::default()
        };
        Ok(Zone {
            registry,
            bus,
            rules,
            inbox: Inbox::new(config.zones),
            outbox: Outbox::default(),
            stats,
            ready,
            clock,
            fault: None,
            settled: false,
            config,
        })
    }

    /// The registry (read it between steps).
    #[must_use]
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The registry, to change it between steps (e.g. spawn entities this zone owns).
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &ZoneConfig {
        &self.config
    }

    /// The zone's telemetry.
    #[must_use]
    pub fn stats(&self) -> &ZoneStats {
        &self.stats
    }

    /// The bus handle (for a test to inject messages, or to read the stream).
    pub fn bus_mut(&mut self) -> &mut B {
        &mut self.bus
    }

    /// The next tick this zone runs.
    #[must_use]
    pub fn tick(&self) -> u64 {
        self.registry.tick()
    }

    /// The position in the inbound stream the zone reads from next: everything before it has
    /// been applied or is held in the zone (and in its checkpoints).
    #[must_use]
    pub fn position(&self) -> Position {
        self.inbox.next
    }

    /// The digest of this zone's entities ([`ZoneRules::digest`]).
    pub fn digest(&mut self) -> ZoneDigest {
        self.rules.digest(&mut self.registry)
    }

    /// Installs a function called at the [`FaultPoint`]s of a step: crash tests end the
    /// process there to prove that a crash at that moment loses nothing.
    pub fn set_fault_hook(&mut self, hook: impl FnMut(FaultPoint) + Send + 'static) {
        self.fault = Some(Box::new(hook));
    }

    fn fault(&mut self, at: FaultPoint) {
        if let Some(hook) = &mut self.fault {
            hook(at);
        }
    }

    /// Runs one tick (see the [type documentation](Zone)) and returns its number.
    ///
    /// # Errors
    ///
    /// - [`ZoneError::NeighbourSilent`] if a neighbour's marker did not come in time: nothing
    ///   ran; call again to keep waiting.
    /// - [`ZoneError::Bus`] if publishing failed: the tick ran, its messages stay queued and
    ///   the next call publishes them first.
    /// - [`ZoneError::Save`] or [`ZoneError::Checkpoint`] if a checkpoint could not be written
    ///   (the tick ran and was published).
    pub fn step(&mut self) -> Result<u64, ZoneError> {
        if self.settled {
            return Err(ZoneError::Config(
                "the zone is settled: its run is over".into(),
            ));
        }
        self.publish_outbox()?;
        let tick = self.registry.tick();
        self.receive_until(tick, tick.checked_sub(self.config.lookahead))?;
        let busy = Instant::now();
        self.apply_due(tick);
        self.run_tick(tick);
        self.hand_off(tick)?;
        self.stats.ticks += 1;
        self.stats.busy += busy.elapsed();
        self.publish_outbox()?;
        if let Some(c) = &self.config.checkpoint
            && (tick + 1).is_multiple_of(c.every)
        {
            self.checkpoint()?;
        }
        self.fault(FaultPoint::TickEnd(tick));
        Ok(tick)
    }

    /// Runs [`step`](Zone::step) until the zone's next tick is `end`.
    ///
    /// # Errors
    ///
    /// The first error of a step.
    pub fn run_until(&mut self, end: u64) -> Result<(), ZoneError> {
        while self.registry.tick() < end {
            self.step()?;
        }
        Ok(())
    }

    /// Ends the run at the current tick N: waits for every other zone's marker of N − 1 and
    /// imports every handoff still in flight to this zone (in (source, tick, sequence) order),
    /// so that each entity is in exactly one zone and the merged [`digest`](Zone::digest)
    /// covers them all. Afterwards [`step`](Zone::step) refuses to run.
    ///
    /// # Errors
    ///
    /// [`ZoneError::NeighbourSilent`] or [`ZoneError::Bus`] as for a step; call again.
    ///
    /// # Examples
    ///
    /// A zone alone in its layout has no neighbour to wait for:
    ///
    /// ```
    /// use freyr_zone::aircraft::{self, Strips};
    /// use freyr_zone::{InProcessBus, Zone, ZoneConfig};
    ///
    /// let strips = Strips { zones: 1, side: 100.0 };
    /// let mut registry = aircraft::registry(1, 100.0);
    /// aircraft::spawn_zone(&mut registry, &strips, 0, 10);
    /// let mut zone = Zone::new(registry, InProcessBus::new(1), strips, ZoneConfig::new(0, 1)).unwrap();
    /// assert_eq!(zone.step().unwrap(), 0);
    /// assert_eq!(zone.step().unwrap(), 1);
    /// zone.settle().unwrap();
    /// assert!(zone.step().is_err(), "settled");
    /// assert_eq!(zone.digest().entities(), 10);
    /// ```
    pub fn settle(&mut self) -> Result<(), ZoneError> {
        self.publish_outbox()?;
        let end = self.registry.tick();
        self.receive_until(end, end.checked_sub(1))?;
        self.apply_due(u64::MAX - 1);
        self.settled = true;
        Ok(())
    }

    /// Imports the handoffs due at or before `tick`.
    fn apply_due(&mut self, tick: u64) {
        for ((_, source, _, _), export) in self.inbox.take_due(tick) {
            match self.registry.import(&export) {
                Ok(map) => {
                    self.stats.handoffs_received += map.len() as u64;
                    self.stats.batches_applied += 1;
                }
                Err(e) => self
                    .stats
                    .reject(Rejection::Import(format!("from zone {source}: {e}"))),
            }
        }
    }

    /// Lets the fixed-step loop run exactly tick `tick`.
    fn run_tick(&mut self, tick: u64) {
        self.ready.store(tick + 1, Ordering::Release);
        while self.registry.tick() == tick {
            if let Some(clock) = &self.clock {
                clock.advance(self.config.tick);
            }
            self.registry.run_frame();
            if self.registry.tick() == tick
                && let Some(wait) = self.registry.time_until_next_tick()
            {
                std::thread::sleep(wait);
            }
        }
    }

    /// Reads the inbound stream, the zone about to run `tick`, until every other zone has
    /// declared tick `needed` done (with `None`, reads what is there).
    fn receive_until(&mut self, tick: u64, needed: Option<u64>) -> Result<(), ZoneError> {
        let me = self.config.zone;
        let start = Instant::now();
        let mut polled = false;
        loop {
            let missing = needed.map_or_else(Vec::new, |n| self.inbox.missing(me, n));
            if missing.is_empty() && polled {
                return Ok(());
            }
            let waited = start.elapsed();
            if !missing.is_empty() && waited >= self.config.neighbour_timeout {
                self.stats.last_wait = Some((tick, missing.clone()));
                return Err(ZoneError::NeighbourSilent {
                    tick,
                    needed: needed.unwrap_or(0),
                    waiting_for: missing,
                    waited,
                });
            }
            let wait = match missing.is_empty() {
                true => Duration::ZERO,
                false => (self.config.neighbour_timeout - waited).min(Duration::from_millis(50)),
            };
            let slice = Instant::now();
            let read = self.bus.read(me, self.inbox.next, 4096, wait);
            let read = match read {
                Ok(read) => read,
                Err(e) if missing.is_empty() => {
                    // Nothing needed now: a failed poll only delays latency telemetry.
                    let _ = e;
                    self.stats.bus_retries += 1;
                    return Ok(());
                }
                Err(_) => {
                    self.stats.bus_retries += 1;
                    std::thread::sleep(Duration::from_millis(20));
                    Vec::new()
                }
            };
            polled = true;
            for m in &read {
                self.inbox.accept(
                    m.position,
                    &m.payload,
                    me,
                    self.config.lookahead,
                    tick,
                    &mut self.stats,
                );
            }
            if !missing.is_empty() {
                let spent = slice.elapsed();
                self.stats.waited += spent;
                for &z in &missing {
                    self.stats.waited_for[z as usize] += spent;
                }
                self.stats.last_wait = Some((tick, missing));
            }
        }
    }
}
