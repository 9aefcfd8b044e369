//! The byte framing of a save or an export: magic, format version, body length, body, checksum;
//! little-endian integers and length-prefixed blobs inside the body.

use super::LoadError;

/// The save format version this build writes and reads.
pub(crate) const FORMAT_VERSION: u32 = 1;
/// Header: magic (8), format version (4), body length (8).
const HEADER: usize = 20;
/// Trailer: the checksum (8).
const TRAILER: usize = 8;

/// A 64-bit checksum of `bytes`, eight bytes at a time: every step is a bijection of the
/// state, so two inputs of one length that differ in one word (in particular, by one flipped
/// bit) always give different sums.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h: u64 = 0xF2EE_5A5E_0000_0001 ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    h ^ (h >> 32)
}

/// Builds a framed file: header, then the body written through [`Writer`], then the checksum.
pub(crate) struct Writer {
    pub(crate) out: Vec<u8>,
}

impl Writer {
    pub(crate) fn new(magic: &[u8; 8]) -> Writer {
        let mut out = Vec::new();
        out.extend_from_slice(magic);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        Writer { out }
    }

    pub(crate) fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    pub(crate) fn u64(&mut self, v: u64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    pub(crate) fn u32s(&mut self, vs: &[u32]) {
        self.u64(vs.len() as u64);
        self.out.reserve(vs.len() * 4);
        for v in vs {
            self.u32(*v);
        }
    }

    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        self.u64(bytes.len() as u64);
        self.out.extend_from_slice(bytes);
    }

    /// Fills in the body length and appends the checksum.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        let body = (self.out.len() - HEADER) as u64;
        self.out[12..20].copy_from_slice(&body.to_le_bytes());
        let sum = checksum(&self.out);
        self.out.extend_from_slice(&sum.to_le_bytes());
        self.out
    }
}

/// Checks a framed file's magic, version, length and checksum; returns its body.
pub(crate) fn open<'a>(bytes: &'a [u8], magic: &[u8; 8]) -> Result<&'a [u8], LoadError> {
    if bytes.len() < 8 || &bytes[..8] != magic {
        let found = bytes.len().min(8);
        return Err(match bytes[..found] == magic[..found] {
            true => LoadError::Truncated {
                expected: HEADER + TRAILER,
                found: bytes.len(),
            },
            false => LoadError::NotAFreyrFile,
        });
    }
    if bytes.len() < HEADER + TRAILER {
        return Err(LoadError::Truncated {
            expected: HEADER + TRAILER,
            found: bytes.len(),
        });
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("four bytes"));
    let body = u64::from_le_bytes(bytes[12..20].try_into().expect("eight bytes"));
    let expected = (HEADER + TRAILER) as u64 + body;
    if bytes.len() as u64 != expected {
        return Err(LoadError::Truncated {
            expected: usize::try_from(expected).unwrap_or(usize::MAX),
            found: bytes.len(),
        });
    }
    let end = bytes.len() - TRAILER;
    let stored = u64::from_le_bytes(bytes[end..].try_into().expect("eight bytes"));
    let computed = checksum(&bytes[..end]);
    if stored != computed {
        return Err(LoadError::ChecksumMismatch { stored, computed });
    }
    if version != FORMAT_VERSION {
        return Err(LoadError::UnsupportedFormat {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    Ok(&bytes[HEADER..end])
}

/// Reads a body; every read is bounds-checked (a checked body is still untrusted input).
pub(crate) struct Reader<'a> {
    pub(crate) rest: &'a [u8],
}

fn corrupt(what: &'static str) -> LoadError {
    LoadError::Corrupt { what }
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], LoadError> {
        if self.rest.len() < n {
            return Err(corrupt(what));
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(head)
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, LoadError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes(b.try_into().expect("four bytes")))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, LoadError> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("eight bytes")))
    }

    /// A count of items of `size` bytes each that must fit in the rest of the body.
    pub(crate) fn count(&mut self, size: usize, what: &'static str) -> Result<usize, LoadError> {
        let n = self.u64(what)?;
        match usize::try_from(n) {
            Ok(n) if n.checked_mul(size).is_some_and(|b| b <= self.rest.len()) => Ok(n),
            _ => Err(corrupt(what)),
        }
    }

    pub(crate) fn u32s(&mut self, what: &'static str) -> Result<Vec<u32>, LoadError> {
        let n = self.count(4, what)?;
        let b = self.take(n * 4, what)?;
        Ok(b.chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("four bytes")))
            .collect())
    }

    pub(crate) fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], LoadError> {
        let n = self.count(1, what)?;
        self.take(n, what)
    }

    pub(crate) fn end(&self) -> Result<(), LoadError> {
        match self.rest.is_empty() {
            true => Ok(()),
            false => Err(corrupt("bytes after the last archetype")),
        }
    }
}
