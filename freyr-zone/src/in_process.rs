//! [`InProcessBus`]: the bus for zones in one process (tests, one-machine runs).

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::bus::{Bus, BusError, Inbound, Position};
use crate::message::ZoneId;

/// The streams: one vector of payloads per zone, and every message id seen.
#[derive(Default)]
struct Streams {
    zones: Vec<Vec<Vec<u8>>>,
    ids: HashSet<String>,
}

/// A bus in memory: one append-only stream per zone, shared by every clone (one clone per
/// zone, on any threads). Keeps the [`Bus`] contract: order per publisher, every message id
/// kept once (forever), replay from any position. Positions start at 1, one per message.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use freyr_zone::{Bus, InProcessBus};
///
/// let mut bus = InProcessBus::new(2);
/// let mut other = bus.clone();
/// bus.publish(1, "a", b"first").unwrap();
/// bus.publish(1, "a", b"first again").unwrap(); // the same id: dropped
/// bus.publish(1, "b", b"second").unwrap();
/// let read = other.read(1, 1, 10, Duration::ZERO).unwrap();
/// assert_eq!(read.len(), 2);
/// assert_eq!((read[1].position, &read[1].payload[..]), (2, &b"second"[..]));
/// assert!(other.read(1, 3, 10, Duration::ZERO).unwrap().is_empty());
/// ```
#[derive(Clone)]
pub struct InProcessBus {
    shared: Arc<(Mutex<Streams>, Condvar)>,
}

impl InProcessBus {
    /// A bus with a stream for each of `zones` zones.
    #[must_use]
    pub fn new(zones: u32) -> Self {
        let streams = Streams {
            zones: vec![Vec::new(); zones as usize],
            ids: HashSet::new(),
        };
        InProcessBus {
            shared: Arc::new((Mutex::new(streams), Condvar::new())),
        }
    }

    /// How many messages zone `zone`'s stream holds.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_zone::{Bus, InProcessBus};
    /// let mut bus = InProcessBus::new(1);
    /// bus.publish(0, "x", b"").unwrap();
    /// assert_eq!(bus.stream_len(0), 1);
    /// ```
    #[must_use]
    pub fn stream_len(&self, zone: ZoneId) -> usize {
        let streams = self.shared.0.lock().unwrap_or_else(PoisonError::into_inner);
        streams.zones.get(zone as usize).map_or(0, Vec::len)
    }
}

impl Bus for InProcessBus {
    fn publish(&mut self, dest: ZoneId, id: &str, payload: &[u8]) -> Result<(), BusError> {
        let (lock, ready) = &*self.shared;
        let mut streams = lock.lock().unwrap_or_else(PoisonError::into_inner);
        if dest as usize >= streams.zones.len() {
            return Err(BusError::UnknownZone(dest));
        }
        if streams.ids.insert(id.to_owned()) {
            streams.zones[dest as usize].push(payload.to_vec());
            ready.notify_all();
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), BusError> {
        Ok(())
    }

    fn read(
        &mut self,
        zone: ZoneId,
        from: Position,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<Inbound>, BusError> {
        let (lock, ready) = &*self.shared;
        let deadline = Instant::now() + wait;
        let mut streams = lock.lock().unwrap_or_else(PoisonError::into_inner);
        let first = from.max(1) as usize - 1;
        loop {
            let stream = streams
                .zones
                .get(zone as usize)
                .ok_or(BusError::UnknownZone(zone))?;
            if stream.len() > first {
                let end = stream.len().min(first + max);
                return Ok((first..end)
                    .map(|i| Inbound {
                        position: i as Position + 1,
                        payload: stream[i].clone(),
                    })
                    .collect());
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(Vec::new());
            }
            streams = ready
                .wait_timeout(streams, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}
