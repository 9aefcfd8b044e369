//! The byte framing of a save or an export: magic, format version, body length, body, checksum;
//! little-endian integers and length-prefixed blobs inside the body.

use super::LoadError;

/// The save format version this build writes and reads.
///
/// 2: the per-type column encoding (serde or raw bytes) and the eight-lane checksum.
pub(crate) const FORMAT_VERSION: u32 = 2;
/// Header: magic (8), format version (4), body length (8).
const HEADER: usize = 20;
/// Trailer: the checksum (8).
const TRAILER: usize = 8;

/// Independent lanes of the checksum: eight words of a 64-byte block go to eight lanes whose
/// multiply chains run side by side, so the sum runs at the multiplier's throughput rather
/// than its latency (one long chain costs about 4 ms for 24 MB, eight about a quarter).
const LANES: usize = 8;
/// The odd multiplier of every step (odd, so multiplying by it is a bijection of `u64`).
const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// One step of a lane: for a fixed word a bijection of the state, and for a fixed state an
/// injection of the word (xor with the state, multiplication by an odd constant and a
/// rotation are each bijections).
#[inline(always)]
fn step(h: u64, w: u64) -> u64 {
    (h ^ w).wrapping_mul(K).rotate_left(29)
}

/// A 64-bit checksum of `bytes`, which catches any change of one 8-byte word (in particular
/// any single flipped bit) between two inputs of one length:
///
/// - the input is cut into 64-byte blocks, word `i` of each block going to lane `i`; the tail
///   (under 64 bytes) is zero-padded into one more block. The lanes start from distinct
///   seeds mixed with the length;
/// - a difference in one word reaches one lane only. That lane's states are equal up to the
///   step taking the word, differ right after it (a step is injective in its word), and
///   stay different (every later step is a bijection of the state); the other lanes are
///   equal;
/// - the lanes are then folded in order, each by one [`step`] of the running sum: with the
///   other lanes equal, the step taking the differing lane gives a different sum (injective
///   in the word), and the later steps and the final `h ^ (h >> 32)` are bijections.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    let seed = 0xF2EE_5A5E_0000_0001 ^ bytes.len() as u64;
    let mut lanes: [u64; LANES] =
        core::array::from_fn(|i| seed.wrapping_add((i as u64).wrapping_mul(K)));
    let mut blocks = bytes.chunks_exact(8 * LANES);
    for block in &mut blocks {
        for (lane, word) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            *lane = step(
                *lane,
                u64::from_le_bytes(word.try_into().expect("eight bytes")),
            );
        }
    }
    let mut tail = [0u8; 8 * LANES];
    tail[..blocks.remainder().len()].copy_from_slice(blocks.remainder());
    for (lane, word) in lanes.iter_mut().zip(tail.chunks_exact(8)) {
        *lane = step(
            *lane,
            u64::from_le_bytes(word.try_into().expect("eight bytes")),
        );
    }
    let h = lanes.iter().fold(seed, |h, &lane| step(h, lane));
    h ^ (h >> 32)
}

/// Builds a framed file: header, then the body written through [`Writer`], then the checksum.
pub(crate) struct Writer {
    pub(crate) out: Vec<u8>,
}

impl Writer {
    /// A writer whose buffer has room for `capacity` bytes (a guess: it grows past it).
    pub(crate) fn new(magic: &[u8; 8], capacity: usize) -> Writer {
        Writer::reuse(magic, Vec::new(), capacity)
    }

    /// As [`new`](Writer::new), writing into `out`'s allocation (cleared first).
    pub(crate) fn reuse(magic: &[u8; 8], mut out: Vec<u8>, capacity: usize) -> Writer {
        out.clear();
        out.reserve(capacity.saturating_add(HEADER + TRAILER));
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
        self.words(vs.iter().map(|v| v.to_le_bytes()));
    }

    /// Appends fixed-size items in bulk (one resize, then plain stores the compiler can
    /// vectorise), without a count.
    pub(crate) fn words<const N: usize>(&mut self, items: impl ExactSizeIterator<Item = [u8; N]>) {
        let start = self.out.len();
        self.out.resize(start + items.len() * N, 0);
        for (slot, item) in self.out[start..].chunks_exact_mut(N).zip(items) {
            slot.copy_from_slice(&item);
        }
    }

    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        self.u64(bytes.len() as u64);
        self.out.extend_from_slice(bytes);
    }

    /// A length-prefixed blob whose bytes `fill` appends.
    pub(crate) fn blob(&mut self, fill: impl FnOnce(&mut Vec<u8>)) {
        let at = self.out.len();
        self.u64(0);
        fill(&mut self.out);
        let len = (self.out.len() - at - 8) as u64;
        self.out[at..at + 8].copy_from_slice(&len.to_le_bytes());
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
        Ok(self.words::<4>(n, what)?.map(u32::from_le_bytes).collect())
    }

    /// `n` items of `N` bytes each.
    pub(crate) fn words<const N: usize>(
        &mut self,
        n: usize,
        what: &'static str,
    ) -> Result<impl ExactSizeIterator<Item = [u8; N]> + 'a, LoadError> {
        let bytes = self.take(n.checked_mul(N).ok_or(corrupt(what))?, what)?;
        Ok(bytes
            .chunks_exact(N)
            .map(|c| <[u8; N]>::try_from(c).expect("N bytes")))
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

#[cfg(test)]
mod tests {
    use super::checksum;

    /// Bytes that are not all alike, so a lane mix-up would show.
    fn input(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 131 + 7) as u8).collect()
    }

    #[test]
    fn every_single_bit_flip_changes_the_sum() {
        let lens: &[usize] = if cfg!(miri) {
            &[0, 9, 70]
        } else {
            &[0, 1, 7, 8, 63, 64, 65, 200]
        };
        for &len in lens {
            let bytes = input(len);
            let sum = checksum(&bytes);
            for bit in 0..len * 8 {
                let mut flipped = bytes.clone();
                flipped[bit / 8] ^= 1 << (bit % 8);
                assert_ne!(checksum(&flipped), sum, "length {len}, bit {bit}");
            }
        }
    }

    #[test]
    fn a_changed_word_or_a_swap_of_lanes_changes_the_sum() {
        let bytes = input(256);
        let sum = checksum(&bytes);
        for word in 0..32 {
            let mut changed = bytes.clone();
            changed[word * 8..word * 8 + 8].copy_from_slice(&u64::MAX.to_le_bytes());
            assert_ne!(checksum(&changed), sum, "word {word}");
        }
        // Words 0 and 1 of a block go to different lanes; swapping them is caught too.
        let mut swapped = bytes.clone();
        swapped[..16].rotate_left(8);
        assert_ne!(checksum(&swapped), sum);
        // The length is part of the sum: a zero tail is not the same as no tail.
        assert_ne!(checksum(&[0; 8]), checksum(&[0; 16]));
    }
}
