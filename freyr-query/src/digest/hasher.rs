//! [`DigestHasher`]: the word-at-a-time hash behind [`WorldDigest`](crate::WorldDigest).

/// The multiplier of a lane round (odd, so multiplying by it is a bijection of `u64`).
const ROUND_MUL: u64 = 0x9fb2_1c65_1e98_df25;
/// Lane `i` starts at `SEED * (i + 1)` (wrapping).
const SEED: u64 = 0x9e37_79b9_7f4a_7c15;
/// Number of independent lanes: eight multiplications in flight hide their latency.
const LANES: usize = 8;

/// A fixed, portable, word-at-a-time hash of a byte stream: the hash of every digest in
/// [`WorldDigest`](crate::WorldDigest). It has no seed from the platform or the process, so two
/// machines (or another implementation) get the same value for the same bytes.
///
/// # The algorithm
///
/// All arithmetic is on `u64`, wrapping; `>>` is a logical shift.
///
/// 1. The stream is cut into 8-byte words, each read **little-endian**
///    (`u64::from_le_bytes`); a last partial word is padded with zero bytes. Word `j` (0-based)
///    goes to lane `j % 8`.
/// 2. Lane `i` (`0..8`) starts at `0x9e37_79b9_7f4a_7c15 * (i + 1)`. Absorbing word `w` into a
///    lane `l`: `x = (l ^ w) * 0x9fb2_1c65_1e98_df25; l = x ^ (x >> 32)`.
/// 3. [`finish`](DigestHasher::finish): `h = n`, the stream length in bytes; then for each lane
///    `i` in order `h = fmix(h ^ lane_i)`; the result is `h`. `fmix` is MurmurHash3's 64-bit
///    finaliser: `h ^= h >> 33; h *= 0xff51_afd7_ed55_8ccd; h ^= h >> 33;
///    h *= 0xc4ce_b9fe_1a85_ec53; h ^= h >> 33`.
///
/// How the stream is split across [`write`](DigestHasher::write) calls does not matter: only
/// the concatenated bytes do. Every step is a bijection of one lane (or of `h`) given the rest,
/// so a change confined to one 8-byte word of the stream — a flipped bit, a changed field —
/// always changes the result; streams of different lengths differ through `n`.
///
/// It is a checksum for finding divergence between honest runs, not a cryptographic hash.
///
/// # Examples
///
/// ```
/// use freyr::DigestHasher;
///
/// let hash = |bytes: &[u8]| {
///     let mut h = DigestHasher::new();
///     h.write(bytes);
///     h.finish()
/// };
/// // The split of the stream does not matter.
/// let mut split = DigestHasher::new();
/// split.write(b"fre");
/// split.write(b"yr");
/// assert_eq!(split.finish(), hash(b"freyr"));
/// // `write_u64` is `write` of the little-endian bytes.
/// let mut word = DigestHasher::new();
/// word.write_u64(0x0102_0304_0506_0708);
/// assert_eq!(word.finish(), hash(&0x0102_0304_0506_0708u64.to_le_bytes()));
/// // One flipped bit changes the hash; so does a trailing zero byte.
/// assert_ne!(hash(&[0u8; 64]), hash(&[&[0u8; 63][..], &[1]].concat()));
/// assert_ne!(hash(&[0u8; 7]), hash(&[0u8; 8]));
/// ```
#[derive(Clone, Debug)]
pub struct DigestHasher {
    lanes: [u64; LANES],
    /// Full words absorbed so far.
    words: u64,
    /// Bytes of the current partial word, little-endian in the low bytes.
    tail: u64,
    /// Number of bytes in `tail` (`0..8`).
    tail_len: u32,
}

impl Default for DigestHasher {
    fn default() -> Self {
        DigestHasher::new()
    }
}

#[inline(always)]
fn round(lane: u64, word: u64) -> u64 {
    let x = (lane ^ word).wrapping_mul(ROUND_MUL);
    x ^ (x >> 32)
}

#[inline]
fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[inline(always)]
fn word_at(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(w)
}

impl DigestHasher {
    /// A hasher over the empty stream.
    pub fn new() -> Self {
        let mut lanes = [0u64; LANES];
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane = SEED.wrapping_mul(i as u64 + 1);
        }
        DigestHasher {
            lanes,
            words: 0,
            tail: 0,
            tail_len: 0,
        }
    }

    #[inline(always)]
    fn absorb(&mut self, word: u64) {
        let lane = (self.words % LANES as u64) as usize;
        self.lanes[lane] = round(self.lanes[lane], word);
        self.words += 1;
    }

    /// Appends `bytes` to the stream.
    pub fn write(&mut self, mut bytes: &[u8]) {
        while self.tail_len != 0 && !bytes.is_empty() {
            self.tail |= u64::from(bytes[0]) << (8 * self.tail_len);
            self.tail_len += 1;
            bytes = &bytes[1..];
            if self.tail_len == 8 {
                let word = self.tail;
                self.tail = 0;
                self.tail_len = 0;
                self.absorb(word);
            }
        }
        if self.tail_len != 0 {
            return; // `bytes` ended inside the partial word
        }
        // Single words until lane 0 is next, so that blocks of eight map word `k` to lane `k`.
        let mut at = 0;
        while self.words % LANES as u64 != 0 && bytes.len() - at >= 8 {
            self.absorb(word_at(bytes, at));
            at += 8;
        }
        at += self.write_blocks(&bytes[at..]);
        while bytes.len() - at >= 8 {
            self.absorb(word_at(bytes, at));
            at += 8;
        }
        for (i, &b) in bytes[at..].iter().enumerate() {
            self.tail |= u64::from(b) << (8 * i);
        }
        self.tail_len = (bytes.len() - at) as u32;
    }

    /// Absorbs whole 64-byte blocks of `bytes` (lane 0 next); returns the bytes consumed.
    #[inline]
    fn write_blocks(&mut self, bytes: &[u8]) -> usize {
        let mut lanes = self.lanes;
        let blocks = bytes.chunks_exact(8 * LANES);
        let consumed = bytes.len() - blocks.remainder().len();
        for block in blocks {
            for (i, lane) in lanes.iter_mut().enumerate() {
                *lane = round(*lane, word_at(block, 8 * i));
            }
        }
        self.lanes = lanes;
        self.words += (consumed / 8) as u64;
        consumed
    }

    /// Appends the 8 little-endian bytes of `word`.
    #[inline]
    pub fn write_u64(&mut self, word: u64) {
        if self.tail_len == 0 {
            self.absorb(word);
        } else {
            self.write(&word.to_le_bytes());
        }
    }

    /// Appends each word's 8 little-endian bytes, in order: `write_u64` of each, faster.
    pub fn write_u64s(&mut self, words: &[u64]) {
        let mut rest = words;
        while self.tail_len != 0 || self.words % LANES as u64 != 0 {
            let Some((&w, tail)) = rest.split_first() else {
                return;
            };
            self.write_u64(w);
            rest = tail;
        }
        let blocks = rest.chunks_exact(LANES);
        let remainder = blocks.remainder();
        let mut lanes = self.lanes;
        for block in blocks {
            for (lane, &w) in lanes.iter_mut().zip(block) {
                *lane = round(*lane, w);
            }
        }
        self.lanes = lanes;
        self.words += (rest.len() - remainder.len()) as u64;
        for &w in remainder {
            self.absorb(w);
        }
    }

    /// The hash of the stream written so far (the hasher can go on).
    pub fn finish(&self) -> u64 {
        let mut copy = self.clone();
        let len = copy.words * 8 + u64::from(copy.tail_len);
        if copy.tail_len != 0 {
            let tail = copy.tail;
            copy.absorb(tail);
        }
        copy.lanes.iter().fold(len, |h, &lane| fmix(h ^ lane))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The algorithm as documented, one word at a time, for comparing with the fast path.
    fn reference(bytes: &[u8]) -> u64 {
        let mut lanes: Vec<u64> = (0..8u64).map(|i| SEED.wrapping_mul(i + 1)).collect();
        for (j, chunk) in bytes.chunks(8).enumerate() {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            lanes[j % 8] = round(lanes[j % 8], u64::from_le_bytes(w));
        }
        lanes.iter().fold(bytes.len() as u64, |h, &l| fmix(h ^ l))
    }

    #[test]
    fn any_split_matches_the_reference() {
        let bytes: Vec<u8> = (0..300u32).map(|i| (i * 37 + 11) as u8).collect();
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 127, 128, 200, 300] {
            let stream = &bytes[..len];
            let mut whole = DigestHasher::new();
            whole.write(stream);
            assert_eq!(whole.finish(), reference(stream), "len {len}");
            for cut in [0, 1, 3, 8, 13, 64, 70].into_iter().filter(|&c| c <= len) {
                let mut h = DigestHasher::new();
                h.write(&stream[..cut]);
                h.write(&stream[cut..]);
                assert_eq!(h.finish(), reference(stream), "len {len} cut {cut}");
            }
        }
    }

    #[test]
    fn a_known_value_is_fixed() {
        // Pinned: changing the algorithm changes every digest a server may have stored.
        let mut h = DigestHasher::new();
        h.write(b"freyr");
        assert_eq!(h.finish(), reference(b"freyr"));
        assert_eq!(DigestHasher::new().finish(), reference(b""));
        let pinned = h.finish();
        assert_eq!(pinned, PINNED_FREYR, "{pinned:#x}");
    }

    const PINNED_FREYR: u64 = 0x98e8_4ee6_a647_4d4e;

    #[test]
    fn words_match_their_bytes() {
        let words: Vec<u64> = (0..37u64).map(|i| i.wrapping_mul(0x0123_4567_89ab_cdef)).collect();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        for lead in [0usize, 1, 3, 8, 9] {
            let mut h = DigestHasher::new();
            h.write(&bytes[..lead]);
            h.write_u64s(&words);
            let mut want = Vec::from(&bytes[..lead]);
            want.extend_from_slice(&bytes);
            assert_eq!(h.finish(), reference(&want), "lead {lead}");
        }
    }

    #[test]
    fn every_single_bit_flip_changes_the_hash() {
        let base = vec![0x5au8; 96];
        let mut h = DigestHasher::new();
        h.write(&base);
        let want = h.finish();
        for bit in 0..base.len() * 8 {
            let mut flipped = base.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            let mut h = DigestHasher::new();
            h.write(&flipped);
            assert_ne!(h.finish(), want, "bit {bit}");
        }
    }
}
