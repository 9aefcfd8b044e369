//! A zone's checkpoint: its registry's save and its inbox (stream position, markers, pending
//! handoffs) in one file, written crash-safely (temporary file, sync, rename, directory sync),
//! so the world and the position it applied through can never disagree.
//!
//! Layout (little-endian): magic `FZCKPT01`, zone, zones, lookahead, next position, per zone
//! its done tick (`u64::MAX` for none), the pending handoffs (count, then apply tick, source,
//! tick, seq, length, bytes each), the save's length and bytes, and a CRC-64/NVME of
//! everything before it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::ZoneError;
use crate::message::ZoneId;

use super::inbox::Inbox;

const MAGIC: &[u8; 8] = b"FZCKPT01";
const CRC: crc_fast::CrcAlgorithm = crc_fast::CrcAlgorithm::Crc64Nvme;

/// What a checkpoint holds besides the inbox.
pub(crate) struct Header {
    pub zone: ZoneId,
    pub zones: u32,
    pub lookahead: u64,
}

/// The checkpoint file of zone `zone` in `dir`.
pub(crate) fn path(dir: &Path, zone: ZoneId) -> PathBuf {
    dir.join(format!("zone-{zone}.checkpoint"))
}

pub(crate) fn encode(header: &Header, inbox: &Inbox, save: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(save.len() + 256);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&header.zone.to_le_bytes());
    out.extend_from_slice(&header.zones.to_le_bytes());
    out.extend_from_slice(&header.lookahead.to_le_bytes());
    out.extend_from_slice(&inbox.next.to_le_bytes());
    for d in &inbox.done {
        out.extend_from_slice(&d.unwrap_or(u64::MAX).to_le_bytes());
    }
    out.extend_from_slice(&(inbox.pending.len() as u64).to_le_bytes());
    for (&(apply, source, tick, seq), bytes) in &inbox.pending {
        out.extend_from_slice(&apply.to_le_bytes());
        out.extend_from_slice(&source.to_le_bytes());
        out.extend_from_slice(&tick.to_le_bytes());
        out.extend_from_slice(&seq.to_le_bytes());
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out.extend_from_slice(&(save.len() as u64).to_le_bytes());
    out.extend_from_slice(save);
    let crc = crc_fast::checksum(CRC, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A reader over a checkpoint's bytes that turns every short read into an error.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8], ZoneError> {
        let n = usize::try_from(n).ok().filter(|&n| n <= self.rest.len());
        let n = n.ok_or_else(|| ZoneError::Checkpoint("the checkpoint is truncated".into()))?;
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(head)
    }
    fn u32(&mut self) -> Result<u32, ZoneError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, ZoneError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
}

/// Decodes a checkpoint of `expected`'s zone layout: its inbox and its save's bytes.
pub(crate) fn decode<'a>(
    bytes: &'a [u8],
    expected: &Header,
) -> Result<(Inbox, &'a [u8]), ZoneError> {
    let bad = |why: &str| ZoneError::Checkpoint(why.to_owned());
    if bytes.len() < MAGIC.len() + 8 || &bytes[..8] != MAGIC {
        return Err(bad("not a zone checkpoint"));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 8);
    if crc_fast::checksum(CRC, body).to_le_bytes() != crc {
        return Err(bad("the checkpoint is damaged (checksum mismatch)"));
    }
    let mut r = Reader { rest: &body[8..] };
    let (zone, zones, lookahead) = (r.u32()?, r.u32()?, r.u64()?);
    if (zone, zones, lookahead) != (expected.zone, expected.zones, expected.lookahead) {
        return Err(ZoneError::Checkpoint(format!(
            "the checkpoint is zone {zone} of {zones} with lookahead {lookahead}, not zone {} of \
             {} with lookahead {}",
            expected.zone, expected.zones, expected.lookahead
        )));
    }
    let mut inbox = Inbox::new(zones);
    inbox.next = r.u64()?;
    for d in &mut inbox.done {
        *d = Some(r.u64()?).filter(|&t| t != u64::MAX);
    }
    let pending = r.u64()?;
    let mut map = BTreeMap::new();
    for _ in 0..pending {
        let key = (r.u64()?, r.u32()?, r.u64()?, r.u32()?);
        let len = r.u64()?;
        map.insert(key, r.take(len)?.to_vec());
    }
    inbox.pending = map;
    let len = r.u64()?;
    let save = r.take(len)?;
    if !r.rest.is_empty() {
        return Err(bad("bytes after the end of the checkpoint"));
    }
    Ok((inbox, save))
}

/// Writes `bytes` to `path` crash-safely: a temporary file beside it, synced, renamed over
/// it, the directory synced. `between` runs after the temporary file is written and before
/// the rename (a fault-injection point).
pub(crate) fn write_atomic(
    path: &Path,
    bytes: &[u8],
    between: impl FnOnce(),
) -> Result<(), ZoneError> {
    let io = |e: std::io::Error| ZoneError::Checkpoint(format!("{}: {e}", path.display()));
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut tmp_name = path.file_name().unwrap_or_default().to_owned();
    tmp_name.push(".tmp");
    let tmp = dir.join(tmp_name);
    let mut file = std::fs::File::create(&tmp).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)?;
    drop(file);
    between();
    std::fs::rename(&tmp, path).map_err(io)?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_round_trips_and_any_damage_is_a_typed_error() {
        let header = Header {
            zone: 1,
            zones: 3,
            lookahead: 2,
        };
        let mut inbox = Inbox::new(3);
        inbox.next = 41;
        inbox.done = vec![Some(9), None, Some(10)];
        inbox.pending.insert((11, 0, 9, 0), vec![1, 2, 3]);
        let bytes = encode(&header, &inbox, b"the save");
        let (back, save) = decode(&bytes, &header).unwrap();
        assert_eq!((back, save), (inbox, &b"the save"[..]));
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut], &header).is_err(), "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert!(decode(&flipped, &header).is_err());
        let other = Header {
            zone: 0,
            zones: 3,
            lookahead: 2,
        };
        assert!(
            matches!(decode(&bytes, &other), Err(ZoneError::Checkpoint(m)) if m.contains("not zone 0"))
        );
    }
}
