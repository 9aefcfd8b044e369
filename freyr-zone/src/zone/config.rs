//! [`ZoneConfig`] and its parts.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::ZoneError;
use crate::message::ZoneId;

/// How the fixed-step loop's clock runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// As fast as the zone and its neighbours go: the loop's clock is advanced by one tick per
    /// step (tests, benchmarks, replays).
    Free,
    /// On the real clock: one tick per tick length, as a server runs.
    RealTime,
}

/// Where and how often a zone writes its checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpointing {
    /// The directory of the checkpoint file (`zone-<id>.checkpoint`).
    pub dir: PathBuf,
    /// A checkpoint after every tick T with T + 1 a multiple of this (M ≥ 1).
    pub every: u64,
}

/// The moments of a step at which a fault hook ([`Zone::set_fault_hook`](crate::Zone::set_fault_hook))
/// is called, with the tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultPoint {
    /// The tick's handoffs are published and stored, its markers not yet.
    BetweenHandoffsAndMarkers(u64),
    /// A checkpoint's temporary file is written and synced, not yet renamed; with the tick the
    /// checkpoint resumes at (the next tick to run).
    MidCheckpoint(u64),
    /// The tick is done (published, checkpointed if due).
    TickEnd(u64),
}

/// A zone's place in the layout and its parameters.
///
/// # Examples
///
/// ```
/// let config = freyr_zone::ZoneConfig::new(1, 3);
/// assert_eq!((config.zone, config.zones, config.lookahead), (1, 3, 2));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneConfig {
    /// This zone's number, `0..zones`.
    pub zone: ZoneId,
    /// How many zones the layout has.
    pub zones: u32,
    /// K ≥ 1: a handoff sent at the end of tick T is imported at the start of T + K. The zone
    /// runs up to K ticks ahead of its slowest neighbour. Default 2.
    pub lookahead: u64,
    /// The tick length (the fixed step's dt). Default 1/60 s.
    pub tick: Duration,
    /// The loop's clock. Default [`Pace::Free`].
    pub pace: Pace,
    /// How long one step waits for neighbours' markers before it reports
    /// [`ZoneError::NeighbourSilent`]. Default 10 s.
    pub neighbour_timeout: Duration,
    /// How long a publish is retried (the bus away, e.g. a server restart) before the step
    /// reports [`ZoneError::Bus`]. Default 30 s.
    pub publish_timeout: Duration,
    /// The most entities in one handoff message. Default 2048. An `Entity` field is remapped
    /// only when its target is in the same message (one export).
    pub batch_entities: usize,
    /// The most bytes in one handoff message: a batch whose message is larger is split in
    /// halves until each fits (an entity whose message alone is larger is sent alone). Default
    /// 512 KiB, half of a NATS server's default `max_payload` (1 MiB), which refuses larger
    /// messages for good.
    pub batch_bytes: usize,
    /// Crash-safe checkpoints; `None` (the default) writes none.
    pub checkpoint: Option<Checkpointing>,
}

impl ZoneConfig {
    /// Zone `zone` of `zones`, with the defaults above.
    #[must_use]
    pub fn new(zone: ZoneId, zones: u32) -> Self {
        ZoneConfig {
            zone,
            zones,
            lookahead: 2,
            tick: Duration::from_secs(1) / 60,
            pace: Pace::Free,
            neighbour_timeout: Duration::from_secs(10),
            publish_timeout: Duration::from_secs(30),
            batch_entities: 2048,
            batch_bytes: 512 * 1024,
            checkpoint: None,
        }
    }

    /// Checks every field.
    ///
    /// # Errors
    ///
    /// [`ZoneError::Config`] naming the first field that is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut config = freyr_zone::ZoneConfig::new(2, 2);
    /// assert!(config.validate().unwrap_err().to_string().contains("zone 2"));
    /// config.zone = 1;
    /// config.lookahead = 0;
    /// assert!(config.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), ZoneError> {
        let bad = |why: String| Err(ZoneError::Config(why));
        if self.zones == 0 || self.zone >= self.zones {
            return bad(format!(
                "zone {} is not one of 0..{}",
                self.zone, self.zones
            ));
        }
        if self.lookahead == 0 {
            return bad("the lookahead K must be at least 1".into());
        }
        if self.neighbour_timeout.is_zero() || self.publish_timeout.is_zero() {
            return bad("the neighbour and publish timeouts must be positive".into());
        }
        if self.batch_entities == 0 || self.batch_bytes == 0 {
            return bad("a handoff batch must hold at least one entity".into());
        }
        if self.checkpoint.as_ref().is_some_and(|c| c.every == 0) {
            return bad("the checkpoint interval must be at least 1 tick".into());
        }
        Ok(())
    }
}
