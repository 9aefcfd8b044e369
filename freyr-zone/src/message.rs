//! The wire format of what zones send each other: handoff batches and tick markers.
//!
//! A message is a 4-byte magic (`FZM1`), a kind byte (`H` handoff, `M` marker), the source
//! zone, the destination zone and the tick (little-endian), then for a handoff its sequence
//! number, the wall time it was sent (telemetry only, never part of the world) and the
//! [`Registry::export`](freyr::Registry::export) bytes. Decoding checks every length: a
//! message that does not decode is a [`MessageError`], never a panic.

use core::fmt;

/// A zone's number, `0..zones`.
pub type ZoneId = u32;

const MAGIC: &[u8; 4] = b"FZM1";
const HANDOFF: u8 = b'H';
const MARKER: u8 = b'M';
/// Magic, kind, source, destination, tick.
const HEADER: usize = 4 + 1 + 4 + 4 + 8;

/// A message between zones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Entities leaving `source` for `dest` at the end of `tick`: an export, applied by
    /// `dest` at `tick + K`. `seq` numbers the batches of one (source, dest, tick).
    Handoff {
        /// The sending zone.
        source: ZoneId,
        /// The receiving zone.
        dest: ZoneId,
        /// The sender's tick the entities left at.
        tick: u64,
        /// The batch's number within (source, dest, tick), from 0.
        seq: u32,
        /// When it was sent, in nanoseconds since the Unix epoch (latency telemetry only).
        sent_unix_ns: u64,
        /// The `Registry::export` bytes.
        export: Vec<u8>,
    },
    /// `source` has published everything it sends `dest` for `tick`.
    Marker {
        /// The sending zone.
        source: ZoneId,
        /// The receiving zone.
        dest: ZoneId,
        /// The tick that is complete.
        tick: u64,
    },
}

/// Why a message did not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MessageError {
    /// Shorter than its header or than the lengths it declares.
    Truncated {
        /// The message's length in bytes.
        len: usize,
    },
    /// It does not start with the magic `FZM1`.
    BadMagic,
    /// The kind byte is neither a handoff nor a marker.
    UnknownKind(u8),
    /// Bytes after the end of the message.
    TrailingBytes {
        /// How many.
        extra: usize,
    },
}

impl fmt::Display for MessageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MessageError::Truncated { len } => {
                write!(f, "a zone message of {len} bytes is truncated")
            }
            MessageError::BadMagic => f.write_str("not a zone message (bad magic)"),
            MessageError::UnknownKind(k) => write!(f, "unknown zone message kind {k:#04x}"),
            MessageError::TrailingBytes { extra } => {
                write!(f, "{extra} bytes after the end of a zone message")
            }
        }
    }
}

impl std::error::Error for MessageError {}

impl Message {
    /// The sending zone.
    #[must_use]
    pub fn source(&self) -> ZoneId {
        match self {
            Message::Handoff { source, .. } | Message::Marker { source, .. } => *source,
        }
    }

    /// The receiving zone.
    #[must_use]
    pub fn dest(&self) -> ZoneId {
        match self {
            Message::Handoff { dest, .. } | Message::Marker { dest, .. } => *dest,
        }
    }

    /// The message id the bus deduplicates by: the same message published twice (a restarted
    /// zone re-running its ticks) has the same id. `h.<source>.<dest>.<tick>.<seq>` for a
    /// handoff, `m.<source>.<dest>.<tick>` for a marker.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_zone::Message;
    /// let m = Message::Marker { source: 1, dest: 0, tick: 7 };
    /// assert_eq!(m.id(), "m.1.0.7");
    /// ```
    #[must_use]
    pub fn id(&self) -> String {
        match self {
            Message::Handoff {
                source,
                dest,
                tick,
                seq,
                ..
            } => format!("h.{source}.{dest}.{tick}.{seq}"),
            Message::Marker { source, dest, tick } => format!("m.{source}.{dest}.{tick}"),
        }
    }

    /// The message's bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_zone::Message;
    /// let m = Message::Handoff { source: 0, dest: 1, tick: 3, seq: 0, sent_unix_ns: 9, export: vec![1, 2] };
    /// assert_eq!(Message::decode(&m.encode()), Ok(m));
    /// ```
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + 16);
        out.extend_from_slice(MAGIC);
        let (kind, source, dest, tick) = match self {
            Message::Handoff {
                source, dest, tick, ..
            } => (HANDOFF, source, dest, tick),
            Message::Marker { source, dest, tick } => (MARKER, source, dest, tick),
        };
        out.push(kind);
        out.extend_from_slice(&source.to_le_bytes());
        out.extend_from_slice(&dest.to_le_bytes());
        out.extend_from_slice(&tick.to_le_bytes());
        if let Message::Handoff {
            seq,
            sent_unix_ns,
            export,
            ..
        } = self
        {
            out.extend_from_slice(&seq.to_le_bytes());
            out.extend_from_slice(&sent_unix_ns.to_le_bytes());
            out.extend_from_slice(&(export.len() as u64).to_le_bytes());
            out.extend_from_slice(export);
        }
        out
    }

    /// Decodes a message.
    ///
    /// # Errors
    ///
    /// A [`MessageError`] saying what is wrong.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_zone::{Message, MessageError};
    /// assert_eq!(Message::decode(b"FZM1"), Err(MessageError::Truncated { len: 4 }));
    /// assert_eq!(Message::decode(b"nonsense, not a message"), Err(MessageError::BadMagic));
    /// ```
    pub fn decode(bytes: &[u8]) -> Result<Message, MessageError> {
        let truncated = MessageError::Truncated { len: bytes.len() };
        if bytes.len() >= 4 && &bytes[..4] != MAGIC {
            return Err(MessageError::BadMagic);
        }
        if bytes.len() < HEADER {
            return Err(truncated);
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let (source, dest, tick) = (u32_at(5), u32_at(9), u64_at(13));
        match bytes[4] {
            MARKER => match bytes.len() - HEADER {
                0 => Ok(Message::Marker { source, dest, tick }),
                extra => Err(MessageError::TrailingBytes { extra }),
            },
            HANDOFF => {
                let fixed = HEADER + 4 + 8 + 8;
                if bytes.len() < fixed {
                    return Err(truncated);
                }
                let (seq, sent_unix_ns) = (u32_at(HEADER), u64_at(HEADER + 4));
                let len = u64_at(HEADER + 12);
                let available = (bytes.len() - fixed) as u64;
                if len > available {
                    return Err(truncated);
                }
                if len < available {
                    return Err(MessageError::TrailingBytes {
                        extra: (available - len) as usize,
                    });
                }
                Ok(Message::Handoff {
                    source,
                    dest,
                    tick,
                    seq,
                    sent_unix_ns,
                    export: bytes[fixed..].to_vec(),
                })
            }
            kind => Err(MessageError::UnknownKind(kind)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_prefix_of_a_handoff_is_a_typed_error() {
        let m = Message::Handoff {
            source: 2,
            dest: 1,
            tick: 40,
            seq: 3,
            sent_unix_ns: 5,
            export: vec![7; 33],
        };
        let bytes = m.encode();
        assert_eq!(Message::decode(&bytes), Ok(m));
        for cut in 0..bytes.len() {
            assert!(
                Message::decode(&bytes[..cut]).is_err(),
                "prefix of {cut} bytes"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(
            Message::decode(&longer),
            Err(MessageError::TrailingBytes { extra: 1 })
        );
        let mut kind = bytes;
        kind[4] = b'Q';
        assert_eq!(Message::decode(&kind), Err(MessageError::UnknownKind(b'Q')));
    }
}
