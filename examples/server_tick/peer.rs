//! A simulated peer (a connected client): where it looks from, how far it sees, what it last
//! received of each entity, and the byte stream sent to it.
//!
//! Everything here is the peer's own: the per-peer snapshot pass gives each peer to exactly one
//! worker, which reads the frozen snapshot table and writes only this struct.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Instant;

use crate::wire::Quantized;
use crate::world::{mix, unit};

/// What a peer last received of one entity.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Known {
    /// The generation it was told about: a different live generation at the same index is a
    /// new entity (the old one was despawned).
    pub generation: u32,
    /// The quantised state it holds.
    pub state: Quantized,
    /// The tick it was last sent.
    pub last_tick: u64,
    /// The hit points it holds.
    pub health: u8,
}

/// Hashes an entity index for a peer's [`KnownMap`]: one multiply by an odd constant (the
/// indices are the server's own, dense and never attacker-chosen, so SipHash's flood resistance
/// buys nothing, and the despawn log looks one up per despawn).
///
/// Nothing sent depends on the map's order: the only pass over it (the despawn sweep) sorts what
/// it finds.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IndexHasher(u64);

impl Hasher for IndexHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ u64::from(n)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// What a peer holds, by entity index.
pub(crate) type KnownMap = HashMap<u32, Known, BuildHasherDefault<IndexHasher>>;

/// A running digest of a byte stream: FNV-1a 64 over every byte ever sent, plus counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StreamDigest {
    /// FNV-1a 64 of the concatenated packets.
    pub hash: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Packets sent.
    pub packets: u64,
}

impl Default for StreamDigest {
    fn default() -> Self {
        StreamDigest {
            hash: 0xcbf2_9ce4_8422_2325,
            bytes: 0,
            packets: 0,
        }
    }
}

impl StreamDigest {
    /// Adds one packet.
    pub(crate) fn absorb(&mut self, packet: &[u8]) {
        for &b in packet {
            self.hash = (self.hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.bytes += packet.len() as u64;
        self.packets += 1;
    }
}

/// One peer.
pub(crate) struct Peer {
    /// The peer's id (never reused).
    pub id: u32,
    /// How far it sees, in metres, before the governor's interest scale.
    pub radius: f32,
    /// The side of the map it looks at, in metres.
    pub map_side: f32,
    /// Its own send interval in ticks (a congested link gets snapshots less often).
    pub send_interval: u32,
    /// The tick it was last sent a snapshot (recorded by the snapshot build).
    pub last_sent: Option<u64>,
    /// What it last received, by entity index. An entry not sent for more than
    /// `snapshot::RETENTION_TICKS` is forgotten (ignored) and dropped at the next purge.
    pub known: KnownMap,
    /// The first tick at which the next build purges forgotten entries from `known`.
    pub purge_at: u64,
    /// This tick's packet (recycled from tick to tick).
    pub buf: Vec<u8>,
    /// Ranked interest candidates (recycled).
    pub candidates: Vec<Candidate>,
    /// Despawns found this tick (recycled).
    pub despawns: Vec<(u32, u32)>,
    /// One record being encoded (recycled).
    pub record: Vec<u8>,
    /// Everything sent to it so far.
    pub stream: StreamDigest,
    /// When this tick's build ran and on which worker, when the tick is traced.
    pub build_span: Option<(Instant, Instant, Option<usize>)>,
}

/// An entity in a peer's interest set, with its relevance.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Candidate {
    /// Its row in the snapshot table.
    pub row: u32,
    /// Its entity index (the tie-break: ranking is a total order).
    pub index: u32,
    /// Higher is sent first.
    pub score: f32,
}

impl Peer {
    /// A peer with id `id` on a map `map_side` metres across; its radius, send interval and
    /// orbit follow from the id.
    #[must_use]
    pub(crate) fn new(id: u32, base_radius: f32, map_side: f32) -> Self {
        let h = mix(u64::from(id), 0x7065_6572);
        Peer {
            id,
            radius: base_radius * (0.75 + 0.5 * unit(h)),
            map_side,
            send_interval: if id % 8 == 7 { 2 } else { 1 },
            last_sent: None,
            known: KnownMap::default(),
            purge_at: 0,
            buf: Vec::new(),
            candidates: Vec::new(),
            despawns: Vec::new(),
            record: Vec::new(),
            stream: StreamDigest::default(),
            build_span: None,
        }
    }

    /// Where the peer looks from at tick `tick`: a slow orbit around a point fixed by its id,
    /// at least 5% of the map's side from its edges (2 km on the 40 km map).
    #[must_use]
    pub(crate) fn position(&self, tick: u64) -> [f32; 3] {
        let h = mix(u64::from(self.id), 0x6f72_6274);
        let margin = self.map_side * 0.05;
        let span = self.map_side - 2.0 * margin;
        let center = [margin + unit(h) * span, margin + unit(h >> 13) * span];
        let angle = unit(h >> 26) * core::f32::consts::TAU + (tick % 36_000) as f32 * 0.002;
        [
            center[0] + 1500.0 * angle.cos(),
            center[1] + 1500.0 * angle.sin(),
            5000.0,
        ]
    }

    /// Whether the peer gets a snapshot at `tick`, given the governor's send interval: the
    /// longer of its own interval and the governor's spaces it out.
    #[must_use]
    pub(crate) fn due(&self, tick: u64, governor_interval: u32) -> bool {
        let interval = u64::from(self.send_interval.max(governor_interval).max(1));
        self.last_sent
            .is_none_or(|last| tick.saturating_sub(last) >= interval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_is_due_by_the_longer_of_its_interval_and_the_governors() {
        let mut peer = Peer::new(7, 4000.0, crate::world::REFERENCE_SIDE); // its own interval is 2
        assert_eq!(peer.send_interval, 2);
        assert!(peer.due(0, 1));
        peer.last_sent = Some(10);
        assert!(!peer.due(11, 1));
        assert!(peer.due(12, 1));
        assert!(!peer.due(12, 4));
        assert!(peer.due(14, 4));
    }

    #[test]
    fn the_index_hasher_spreads_dense_indices_over_the_high_bits() {
        let hash = |n: u32| {
            let mut h = IndexHasher::default();
            h.write_u32(n);
            h.finish()
        };
        // The map's control bytes come from the top seven bits: dense indices must not share
        // them, nor collide.
        let tops: std::collections::HashSet<u64> = (0..128).map(|n| hash(n) >> 57).collect();
        assert!(tops.len() > 64, "{} distinct of 128", tops.len());
        let all: std::collections::HashSet<u64> = (0..10_000).map(hash).collect();
        assert_eq!(all.len(), 10_000);
        let mut bytes = IndexHasher::default();
        bytes.write(&[1, 2]);
        assert_ne!(bytes.finish(), IndexHasher::default().finish());
    }

    #[test]
    fn the_stream_digest_depends_on_packet_content_and_order() {
        let mut a = StreamDigest::default();
        let mut b = StreamDigest::default();
        a.absorb(&[1, 2]);
        a.absorb(&[3]);
        b.absorb(&[3]);
        b.absorb(&[1, 2]);
        assert_ne!(a.hash, b.hash);
        assert_eq!((a.bytes, a.packets), (3, 2));
    }
}
