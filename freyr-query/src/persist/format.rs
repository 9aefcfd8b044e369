//! The byte framing of a save or an export: magic, format version, body length, body, checksum;
//! little-endian integers and length-prefixed blobs inside the body.

use super::LoadError;

/// The save format version this build writes and reads.
///
/// 2: the per-type column encoding (serde or raw bytes) and the eight-lane checksum.
/// 3: the checksum's lanes run over the body from its first byte and the header is folded in
/// last, so a save hashes each piece as it writes it.
pub(crate) const FORMAT_VERSION: u32 = 3;
/// Header: magic (8), format version (4), body length (8).
const HEADER: usize = 20;
/// Trailer: the checksum (8).
const TRAILER: usize = 8;

/// Independent lanes of the checksum: eight words of a 64-byte block go to eight lanes whose
/// multiply chains run side by side, so the sum runs at the multiplier's throughput rather
/// than its latency (one long chain costs about 4 ms for 24 MB, eight about a quarter).
const LANES: usize = 8;
/// Bytes of one block: one word per lane.
const BLOCK: usize = 8 * LANES;
/// The odd multiplier of every step (odd, so multiplying by it is a bijection of `u64`).
const K: u64 = 0x9E37_79B9_7F4A_7C15;
/// The lanes' and the fold's starting value.
const SEED: u64 = 0xF2EE_5A5E_0000_0003;

/// One step of a lane: for a fixed word a bijection of the state, and for a fixed state an
/// injection of the word (xor with the state, multiplication by an odd constant and a
/// rotation are each bijections).
#[inline(always)]
fn step(h: u64, w: u64) -> u64 {
    (h ^ w).wrapping_mul(K).rotate_left(29)
}

/// The running state of the file checksum, fed whole blocks of the body in order. The
/// checksum of a file's header and body is a 64-bit sum which catches any change of one 8-byte
/// word (in particular any single flipped bit) between two files of one length:
///
/// - the body is cut into 64-byte blocks from its first byte, word `i` of each block going to
///   lane `i`; the tail (under 64 bytes) is zero-padded into one more block. The lanes start
///   from distinct seeds;
/// - a difference in one body word reaches one lane only. That lane's states are equal up to
///   the step taking the word, differ right after it (a step is injective in its word), and
///   stay different (every later step is a bijection of the state); the other lanes are
///   equal;
/// - the lanes are then folded in order, each by one [`step`] of the running sum, and then the
///   header's magic, version and body length, one step each: with everything else equal, the
///   step taking the differing lane or header word gives a different sum (injective in the
///   word), and the later steps and the final `h ^ (h >> 32)` are bijections. The body length
///   is folded in, so a zero tail is not the same as no tail.
#[derive(Clone)]
struct Lanes([u64; LANES]);

impl Lanes {
    fn new() -> Lanes {
        Lanes(core::array::from_fn(|i| {
            SEED.wrapping_add((i as u64).wrapping_mul(K))
        }))
    }

    /// Feeds `bytes`, whole blocks (a multiple of [`BLOCK`] long). Kept out of line: one
    /// copy of the tight loop, the lanes in registers.
    #[inline(never)]
    fn blocks(&mut self, bytes: &[u8]) {
        debug_assert_eq!(bytes.len() % BLOCK, 0);
        let mut lanes = self.0;
        for block in bytes.chunks_exact(BLOCK) {
            for (lane, word) in lanes.iter_mut().zip(block.chunks_exact(8)) {
                *lane = step(
                    *lane,
                    u64::from_le_bytes(word.try_into().expect("eight bytes")),
                );
            }
        }
        self.0 = lanes;
    }

    /// The checksum, given the body's last `tail` bytes (under a block) and the file's header.
    fn finish(mut self, tail: &[u8], header: &[u8; HEADER]) -> u64 {
        let mut last = [0u8; BLOCK];
        last[..tail.len()].copy_from_slice(tail);
        self.blocks(&last);
        let h = self.0.iter().fold(SEED, |h, &lane| step(h, lane));
        let word = |at: usize, n: usize| {
            let mut w = [0u8; 8];
            w[..n].copy_from_slice(&header[at..at + n]);
            u64::from_le_bytes(w)
        };
        let h = step(step(step(h, word(0, 8)), word(8, 4)), word(12, 8));
        h ^ (h >> 32)
    }
}

/// Builds a framed file: header, then the body written through [`Writer`], then the checksum.
/// The checksum is fed as the body grows ([`absorb`](Writer::absorb)), so a large save hashes
/// each piece while it is still in cache.
pub(crate) struct Writer {
    pub(crate) out: Vec<u8>,
    lanes: Lanes,
    /// Offset of the first body byte not yet fed to the checksum (a block boundary).
    hashed: usize,
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
        Writer {
            out,
            lanes: Lanes::new(),
            hashed: HEADER,
        }
    }

    /// Feeds the checksum every whole block written so far. Only between writes: a blob's
    /// length is patched after its bytes, so no blob may be open.
    pub(crate) fn absorb(&mut self) {
        let ready = (self.out.len() - self.hashed) / BLOCK * BLOCK;
        self.lanes
            .blocks(&self.out[self.hashed..self.hashed + ready]);
        self.hashed += ready;
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
        self.absorb();
        let header: [u8; HEADER] = self.out[..HEADER].try_into().expect("the header");
        let sum = self.lanes.finish(&self.out[self.hashed..], &header);
        self.out.extend_from_slice(&sum.to_le_bytes());
        self.out
    }
}

/// A file whose framing (magic, length) is checked, but not yet its checksum or version.
pub(crate) struct Framed<'a> {
    header: &'a [u8; HEADER],
    /// The body, between header and checksum.
    pub(crate) body: &'a [u8],
    stored: u64,
}

/// Checks a file's magic and length against its header.
pub(crate) fn frame<'a>(bytes: &'a [u8], magic: &[u8; 8]) -> Result<Framed<'a>, LoadError> {
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
    let body = u64::from_le_bytes(bytes[12..20].try_into().expect("eight bytes"));
    let expected = (HEADER + TRAILER) as u64 + body;
    if bytes.len() as u64 != expected {
        return Err(LoadError::Truncated {
            expected: usize::try_from(expected).unwrap_or(usize::MAX),
            found: bytes.len(),
        });
    }
    let end = bytes.len() - TRAILER;
    Ok(Framed {
        header: bytes[..HEADER].try_into().expect("the header"),
        body: &bytes[HEADER..end],
        stored: u64::from_le_bytes(bytes[end..].try_into().expect("eight bytes")),
    })
}

impl<'a> Framed<'a> {
    /// The file's format version is the one this build reads.
    pub(crate) fn check_version(&self) -> Result<(), LoadError> {
        let version = u32::from_le_bytes(self.header[8..12].try_into().expect("four bytes"));
        match version == FORMAT_VERSION {
            true => Ok(()),
            false => Err(LoadError::UnsupportedFormat {
                found: version,
                supported: FORMAT_VERSION,
            }),
        }
    }

    /// A checksum of the body computed as it is read.
    pub(crate) fn verifier(&self) -> Verifier<'a> {
        Verifier {
            body: self.body,
            lanes: Lanes::new(),
            hashed: 0,
        }
    }
}

/// The checksum of a body, fed in order as its bytes are read (see [`Verifier::read`]), so a
/// load hashes each piece it copies while the piece is in cache.
pub(crate) struct Verifier<'a> {
    body: &'a [u8],
    lanes: Lanes,
    /// Bytes of the body already fed (a block boundary).
    hashed: usize,
}

impl Verifier<'_> {
    /// `piece`, a part of the body, was just read: feeds every whole block up to its end.
    /// Pieces may skip bytes (they are fed with the next piece) and should come in order (an
    /// earlier one feeds nothing); a slice from elsewhere feeds nothing, or bytes the next
    /// pieces would have fed: the sum is the same either way, since the body is always fed in
    /// order, once.
    pub(crate) fn read(&mut self, piece: &[u8]) {
        let start = self.body.as_ptr().addr();
        let end = piece
            .as_ptr()
            .addr()
            .wrapping_add(piece.len())
            .wrapping_sub(start);
        if end > self.body.len() || end <= self.hashed {
            return;
        }
        let ready = (end - self.hashed) / BLOCK * BLOCK;
        self.lanes
            .blocks(&self.body[self.hashed..self.hashed + ready]);
        self.hashed += ready;
    }

    /// Feeds the rest of the body and compares the sum with the stored one.
    pub(crate) fn finish(mut self, framed: &Framed<'_>) -> Result<(), LoadError> {
        let whole = (self.body.len() - self.hashed) / BLOCK * BLOCK;
        self.lanes
            .blocks(&self.body[self.hashed..self.hashed + whole]);
        let tail = &self.body[self.hashed + whole..];
        let computed = self.lanes.finish(tail, framed.header);
        match computed == framed.stored {
            true => Ok(()),
            false => Err(LoadError::ChecksumMismatch {
                stored: framed.stored,
                computed,
            }),
        }
    }
}

/// Checks a framed file's magic, length, checksum and version; returns its body.
pub(crate) fn open<'a>(bytes: &'a [u8], magic: &[u8; 8]) -> Result<&'a [u8], LoadError> {
    let framed = frame(bytes, magic)?;
    framed.verifier().finish(&framed)?;
    framed.check_version()?;
    Ok(framed.body)
}

/// Reads a body; every read is bounds-checked (a checked body is still untrusted input).
pub(crate) struct Reader<'a> {
    pub(crate) rest: &'a [u8],
}

fn corrupt(what: &'static str) -> LoadError {
    LoadError::Corrupt { what }
}

impl<'a> Reader<'a> {
    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], LoadError> {
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
    use super::{BLOCK, HEADER, Lanes, Writer, frame, open};

    /// The checksum of `header` and `body` in one pass.
    fn checksum(header: &[u8; HEADER], body: &[u8]) -> u64 {
        let whole = body.len() - body.len() % BLOCK;
        let mut lanes = Lanes::new();
        lanes.blocks(&body[..whole]);
        lanes.finish(&body[whole..], header)
    }

    /// Bytes that are not all alike, so a lane mix-up would show.
    fn input(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 131 + 7) as u8).collect()
    }

    /// The checksum of a whole file (header, then body) of at least [`HEADER`] bytes.
    fn sum(file: &[u8]) -> u64 {
        checksum(file[..HEADER].try_into().unwrap(), &file[HEADER..])
    }

    #[test]
    fn every_single_bit_flip_changes_the_sum() {
        let lens: &[usize] = if cfg!(miri) {
            &[20, 29, 90]
        } else {
            &[20, 21, 27, 28, 83, 84, 85, 220]
        };
        for &len in lens {
            let bytes = input(len);
            let before = sum(&bytes);
            for bit in 0..len * 8 {
                let mut flipped = bytes.clone();
                flipped[bit / 8] ^= 1 << (bit % 8);
                assert_ne!(sum(&flipped), before, "length {len}, bit {bit}");
            }
        }
    }

    #[test]
    fn a_changed_word_or_a_swap_of_lanes_changes_the_sum() {
        let bytes = input(HEADER + 256);
        let before = sum(&bytes);
        for word in 0..32 {
            let mut changed = bytes.clone();
            let at = HEADER + word * 8;
            changed[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
            assert_ne!(sum(&changed), before, "word {word}");
        }
        // Words 0 and 1 of a block go to different lanes; swapping them is caught too.
        let mut swapped = bytes.clone();
        swapped[HEADER..HEADER + 16].rotate_left(8);
        assert_ne!(sum(&swapped), before);
        // The header's body length is part of the sum: a zero tail is not the same as no tail.
        let header = |len: u64| {
            let mut h = [0u8; HEADER];
            h[12..].copy_from_slice(&len.to_le_bytes());
            h
        };
        assert_ne!(
            checksum(&header(8), &[0; 8]),
            checksum(&header(16), &[0; 16])
        );
    }

    #[test]
    fn a_writer_that_absorbs_as_it_goes_sums_like_one_pass() {
        let magic = b"FREYRTST";
        for pieces in [&[0usize][..], &[1, 63, 64, 65], &[7, 200, 3, 128, 1000, 5]] {
            let mut streamed = Writer::new(magic, 0);
            let mut whole = Writer::new(magic, 0);
            for (i, &n) in pieces.iter().enumerate() {
                let piece = input(n + i);
                streamed.bytes(&piece);
                streamed.absorb();
                whole.bytes(&piece);
            }
            let (streamed, whole) = (streamed.finish(), whole.finish());
            assert_eq!(streamed, whole, "pieces {pieces:?}");
            assert!(open(&streamed, magic).is_ok(), "pieces {pieces:?}");
        }
    }

    #[test]
    fn a_verifier_fed_pieces_in_order_checks_like_one_pass() {
        let magic = b"FREYRTST";
        let mut w = Writer::new(magic, 0);
        w.bytes(&input(1000));
        let mut file = w.finish();
        let framed = frame(&file, magic).unwrap();
        let body = framed.body;
        // Pieces with gaps, a repeated one, one from elsewhere: the sum is the same.
        let mut v = framed.verifier();
        for (start, end) in [(3, 70), (70, 71), (200, 520), (100, 130), (600, 1000)] {
            v.read(&body[start..end]);
        }
        v.read(&input(64));
        assert!(v.finish(&framed).is_ok());
        // One flipped bit anywhere in the body is a mismatch, fed or not.
        for at in [0, 64, 500, body.len() - 1] {
            file[HEADER + at] ^= 1;
            let framed = frame(&file, magic).unwrap();
            let mut v = framed.verifier();
            v.read(&framed.body[..framed.body.len() / 2]);
            assert!(v.finish(&framed).is_err(), "byte {at}");
            file[HEADER + at] ^= 1;
        }
    }
}
