//! What a zone has read from its inbound stream and not applied yet: the handoffs waiting for
//! their tick, the neighbours' markers, and the position to read from next.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::bus::Position;
use crate::error::Rejection;
use crate::message::{Message, ZoneId};
use crate::stats::ZoneStats;

/// A pending handoff's key: (apply tick, source, tick, seq). Map order is application order.
pub(crate) type PendingKey = (u64, ZoneId, u64, u32);

/// The inbound side of a zone. Everything here is in a checkpoint, so a restarted zone reads
/// on from `next` as if it had never stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Inbox {
    /// The position of the next message to read.
    pub next: Position,
    /// Per zone, the highest tick it has declared done (`None`: none yet).
    pub done: Vec<Option<u64>>,
    /// Handoffs waiting for their tick, in application order.
    pub pending: BTreeMap<PendingKey, Vec<u8>>,
}

impl Inbox {
    pub(crate) fn new(zones: u32) -> Self {
        Inbox {
            next: 1,
            done: vec![None; zones as usize],
            pending: BTreeMap::new(),
        }
    }

    /// The zones other than `me` whose marker of `tick` has not arrived, in zone order.
    pub(crate) fn missing(&self, me: ZoneId, tick: u64) -> Vec<ZoneId> {
        (0..self.done.len() as ZoneId)
            .filter(|&z| z != me && self.done[z as usize].is_none_or(|d| d < tick))
            .collect()
    }

    /// Takes in one message read at `position` while the zone is about to run `current`
    /// (ticks before it are applied): buffers a handoff, records a marker, or refuses it.
    pub(crate) fn accept(
        &mut self,
        position: Position,
        payload: &[u8],
        me: ZoneId,
        lookahead: u64,
        current: u64,
        stats: &mut ZoneStats,
    ) {
        self.next = self.next.max(position + 1);
        let message = match Message::decode(payload) {
            Ok(m) => m,
            Err(e) => return stats.reject(Rejection::Undecodable(e)),
        };
        let (source, dest) = (message.source(), message.dest());
        if dest != me || source == me || source as usize >= self.done.len() {
            return stats.reject(Rejection::UnknownZone { source, dest });
        }
        match message {
            Message::Marker { tick, .. } => {
                let done = &mut self.done[source as usize];
                *done = Some(done.map_or(tick, |d| d.max(tick)));
            }
            Message::Handoff {
                tick,
                seq,
                sent_unix_ns,
                export,
                ..
            } => {
                let Some(apply) = tick.checked_add(lookahead) else {
                    return stats.reject(Rejection::TickOutOfRange { source, tick });
                };
                if self.done[source as usize].is_some_and(|d| d >= tick) {
                    let stale = apply < current;
                    return stats.reject(match stale {
                        true => Rejection::AlreadyApplied { source, tick, seq },
                        false => Rejection::AfterMarker { source, tick },
                    });
                }
                if apply < current {
                    return stats.reject(Rejection::AlreadyApplied { source, tick, seq });
                }
                let key = (apply, source, tick, seq);
                if self.pending.contains_key(&key) {
                    return stats.reject(Rejection::Duplicate { source, tick, seq });
                }
                self.pending.insert(key, export);
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                stats.record_latency(now.saturating_sub(sent_unix_ns));
            }
        }
    }

    /// Removes and returns the handoffs due at `tick`, in (source, tick, seq) order.
    pub(crate) fn take_due(&mut self, tick: u64) -> Vec<(PendingKey, Vec<u8>)> {
        let later = self.pending.split_off(&(tick + 1, 0, 0, 0));
        let due = std::mem::replace(&mut self.pending, later);
        due.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handoff(source: ZoneId, tick: u64, seq: u32) -> Vec<u8> {
        Message::Handoff {
            source,
            dest: 0,
            tick,
            seq,
            sent_unix_ns: 0,
            export: vec![seq as u8],
        }
        .encode()
    }

    #[test]
    fn due_handoffs_come_out_in_source_tick_seq_order_whatever_the_arrival_order() {
        let mut stats = ZoneStats::default();
        let orders = [
            [(2, 5, 1), (1, 5, 0), (2, 5, 0)],
            [(2, 5, 0), (2, 5, 1), (1, 5, 0)],
        ];
        let mut outs = Vec::new();
        for order in orders {
            let mut inbox = Inbox::new(3);
            for (i, (s, t, q)) in order.into_iter().enumerate() {
                inbox.accept(i as u64 + 1, &handoff(s, t, q), 0, 2, 0, &mut stats);
            }
            assert!(inbox.take_due(6).is_empty());
            outs.push(inbox.take_due(7));
        }
        assert_eq!(outs[0], outs[1]);
        let keys: Vec<_> = outs[0].iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, [(7, 1, 5, 0), (7, 2, 5, 0), (7, 2, 5, 1)]);
    }

    #[test]
    fn a_repeat_and_a_handoff_after_its_marker_are_refused() {
        let mut stats = ZoneStats::default();
        let mut inbox = Inbox::new(2);
        inbox.accept(1, &handoff(1, 3, 0), 0, 1, 0, &mut stats);
        inbox.accept(2, &handoff(1, 3, 0), 0, 1, 0, &mut stats);
        assert_eq!(stats.duplicates, 1);
        let marker = Message::Marker {
            source: 1,
            dest: 0,
            tick: 3,
        }
        .encode();
        inbox.accept(3, &marker, 0, 1, 0, &mut stats);
        inbox.accept(4, &handoff(1, 3, 1), 0, 1, 0, &mut stats);
        assert_eq!(stats.after_marker, 1);
        inbox.accept(5, &handoff(1, 1, 0), 0, 1, 3, &mut stats);
        assert_eq!(stats.already_applied, 1);
        assert_eq!((inbox.next, inbox.pending.len()), (6, 1));
        assert!(inbox.missing(0, 3).is_empty());
        assert_eq!(inbox.missing(0, 4), [1]);
    }
}
