//! [`DigestHasher`]: the word-at-a-time hash behind [`WorldDigest`](crate::WorldDigest).

use freyr_query::row_path::row_loop;

/// Number of lanes (64-bit accumulators); a stripe is one word per lane.
const LANES: usize = 8;
/// Bytes per stripe.
const STRIPE: usize = 8 * LANES;
/// Stripes per block: the lanes are scrambled after each block.
const BLOCK: u64 = 16;
/// Lane `i` starts at `SEED * (i + 1)`; key `j` is `fmix(SEED * (j + 1))`.
const SEED: u64 = 0x9e37_79b9_7f4a_7c15;
/// The multiplier of the scramble.
const SCRAMBLE_MUL: u64 = 0x9e37_79b1;

/// MurmurHash3's 64-bit finaliser (a bijection of `u64`).
#[inline]
const fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Key `j`: `fmix(SEED * (j + 1))`, for `j` in `0..136`: 128 stripe keys (stripe `s % 16`,
/// lane `i` takes key `(s % 16) * 8 + i`), then 8 scramble keys (lane `i` takes `128 + i`).
const KEYS: [u64; 136] = {
    let mut keys = [0u64; 136];
    let mut j = 0;
    while j < keys.len() {
        keys[j] = fmix(SEED.wrapping_mul(j as u64 + 1));
        j += 1;
    }
    keys
};

/// A fixed, portable, word-at-a-time hash of a byte stream: the hash of every digest in
/// [`WorldDigest`](crate::WorldDigest). It has no seed from the platform or the process, so two
/// machines (or another implementation) get the same value for the same bytes.
///
/// # The algorithm
///
/// All arithmetic is on `u64`, wrapping; `>>` is a logical shift; `lo(x)` is `x & 0xffff_ffff`
/// and `hi(x)` is `x >> 32`.
///
/// - `fmix(h)` is MurmurHash3's 64-bit finaliser: `h ^= h >> 33; h *= 0xff51_afd7_ed55_8ccd;
///   h ^= h >> 33; h *= 0xc4ce_b9fe_1a85_ec53; h ^= h >> 33`.
/// - `SEED = 0x9e37_79b9_7f4a_7c15`; key `j` is `K[j] = fmix(SEED * (j + 1))`.
/// 1. The stream is cut into 64-byte **stripes** of eight 8-byte words `w[0..8]`, each word
///    read **little-endian** (`u64::from_le_bytes`). A last partial stripe is padded with zero
///    bytes to 64 (an empty stream has no stripe).
/// 2. Eight lanes, `acc[i] = SEED * (i + 1)` at the start. Stripe `s` (0-based) is absorbed as:
///    for each lane `i`, `x = w[i] ^ K[(s % 16) * 8 + i]`, then
///    `acc[i] += w[i ^ 1] + lo(x) * hi(x)`.
/// 3. After each stripe `s` with `s % 16 == 15` (a padded last one too), each lane `a = acc[i]`
///    is scrambled: `a ^= a >> 47; a ^= K[128 + i]; a *= 0x9e37_79b1`.
/// 4. [`finish`](DigestHasher::finish): `h = n`, the stream length in bytes; then for each lane
///    `i` in order `h = fmix(h ^ acc[i])`; the result is `h`.
///
/// How the stream is split across [`write`](DigestHasher::write) calls does not matter, only the
/// concatenated bytes. A flipped bit in word `w[i]` changes lane `i ^ 1` by exactly that bit
/// (its sum takes `w[i]` as is) and lane `i` through the product; streams of different lengths
/// differ through `n`. The lane products are 32 × 32 → 64-bit multiplications, which vector
/// units do several at a time (the loop exists in an AVX2 copy chosen at run time, as the row
/// loops are: `RowPath`; both copies compute the same integers).
///
/// It is a checksum for finding divergence between honest runs, not a cryptographic hash.
///
/// # Examples
///
/// ```
/// use freyr::hash::DigestHasher;
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
    acc: [u64; LANES],
    /// Full stripes absorbed so far.
    stripes: u64,
    /// The current partial stripe.
    buf: [u8; STRIPE],
    /// Bytes in `buf` (`0..64`).
    buf_len: usize,
}

impl Default for DigestHasher {
    fn default() -> Self {
        DigestHasher::new()
    }
}

/// Absorbs stripe number `s`, whose words are `w`.
#[inline(always)]
fn absorb(acc: &mut [u64; LANES], s: u64, w: &[u64; LANES]) {
    let base = (s % BLOCK) as usize * LANES;
    for i in 0..LANES {
        let x = w[i] ^ KEYS[base + i];
        let product = (x & 0xffff_ffff).wrapping_mul(x >> 32);
        acc[i] = acc[i].wrapping_add(w[i ^ 1]).wrapping_add(product);
    }
    if s % BLOCK == BLOCK - 1 {
        for (i, a) in acc.iter_mut().enumerate() {
            *a ^= *a >> 47;
            *a ^= KEYS[128 + i];
            *a = a.wrapping_mul(SCRAMBLE_MUL);
        }
    }
}

/// The words of one 64-byte stripe, little-endian.
#[inline(always)]
fn words(stripe: &[u8]) -> [u64; LANES] {
    let mut w = [0u64; LANES];
    for (i, word) in w.iter_mut().enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(&stripe[8 * i..8 * i + 8]);
        *word = u64::from_le_bytes(b);
    }
    w
}

row_loop! {
    /// Absorbs the whole stripes of `bytes`, numbered from `first`; the bytes after the last
    /// whole stripe are left.
    ///
    /// # Safety
    ///
    /// None beyond the dispatcher's own (it picks the AVX2 copy only on a CPU that has it).
    unsafe fn stripes / stripes_baseline / stripes_avx2 <>(
        acc: &mut [u64; LANES],
        first: u64,
        bytes: &[u8],
    ) where {} units(bytes.len()) {
        let mut lanes = *acc;
        for (s, stripe) in (first..).zip(bytes.chunks_exact(STRIPE)) {
            absorb(&mut lanes, s, &words(stripe));
        }
        *acc = lanes;
    }
}

impl DigestHasher {
    /// A hasher over the empty stream.
    pub fn new() -> Self {
        let mut acc = [0u64; LANES];
        for (i, lane) in acc.iter_mut().enumerate() {
            *lane = SEED.wrapping_mul(i as u64 + 1);
        }
        DigestHasher {
            acc,
            stripes: 0,
            buf: [0; STRIPE],
            buf_len: 0,
        }
    }

    /// Appends `bytes` to the stream.
    pub fn write(&mut self, mut bytes: &[u8]) {
        if self.buf_len != 0 {
            let take = (STRIPE - self.buf_len).min(bytes.len());
            self.buf[self.buf_len..self.buf_len + take].copy_from_slice(&bytes[..take]);
            self.buf_len += take;
            bytes = &bytes[take..];
            if self.buf_len < STRIPE {
                return;
            }
            absorb(&mut self.acc, self.stripes, &words(&self.buf));
            self.stripes += 1;
            self.buf_len = 0;
        }
        let whole = bytes.len() / STRIPE;
        if whole != 0 {
            // SAFETY: `stripes` has no precondition; the dispatcher picks the AVX2 copy only on
            // a CPU with AVX2.
            unsafe { stripes(&mut self.acc, self.stripes, &bytes[..whole * STRIPE]) };
            self.stripes += whole as u64;
        }
        let rest = &bytes[whole * STRIPE..];
        self.buf[..rest.len()].copy_from_slice(rest);
        self.buf_len = rest.len();
    }

    /// Appends the 8 little-endian bytes of `word`.
    #[inline]
    pub fn write_u64(&mut self, word: u64) {
        self.write(&word.to_le_bytes());
    }

    /// Appends each word's 8 little-endian bytes, in order: `write_u64` of each, faster.
    pub fn write_u64s(&mut self, words: &[u64]) {
        for chunk in words.chunks(8 * LANES) {
            let mut bytes = [0u8; 8 * STRIPE];
            for (slot, w) in bytes.chunks_exact_mut(8).zip(chunk) {
                slot.copy_from_slice(&w.to_le_bytes());
            }
            self.write(&bytes[..8 * chunk.len()]);
        }
    }

    /// The hash of the stream written so far (the hasher can go on).
    pub fn finish(&self) -> u64 {
        let mut acc = self.acc;
        let len = self.stripes * STRIPE as u64 + self.buf_len as u64;
        if self.buf_len != 0 {
            let mut last = [0u8; STRIPE];
            last[..self.buf_len].copy_from_slice(&self.buf[..self.buf_len]);
            absorb(&mut acc, self.stripes, &words(&last));
        }
        acc.iter().fold(len, |h, &lane| fmix(h ^ lane))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The algorithm as documented, stripe by stripe, for comparing with the fast paths.
    fn reference(bytes: &[u8]) -> u64 {
        let key = |j: u64| fmix(SEED.wrapping_mul(j + 1));
        let mut acc: Vec<u64> = (0..8u64).map(|i| SEED.wrapping_mul(i + 1)).collect();
        for (s, stripe) in bytes.chunks(64).enumerate() {
            let mut padded = [0u8; 64];
            padded[..stripe.len()].copy_from_slice(stripe);
            let w: Vec<u64> = padded
                .chunks(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect();
            for i in 0..8 {
                let x = w[i] ^ key((s as u64 % 16) * 8 + i as u64);
                acc[i] = acc[i]
                    .wrapping_add(w[i ^ 1])
                    .wrapping_add((x & 0xffff_ffff).wrapping_mul(x >> 32));
            }
            if s % 16 == 15 {
                for (i, a) in acc.iter_mut().enumerate() {
                    *a ^= *a >> 47;
                    *a ^= key(128 + i as u64);
                    *a = a.wrapping_mul(0x9e37_79b1);
                }
            }
        }
        acc.iter().fold(bytes.len() as u64, |h, &l| fmix(h ^ l))
    }

    #[test]
    fn any_split_matches_the_reference() {
        let bytes: Vec<u8> = (0..2300u32).map(|i| (i * 37 + 11) as u8).collect();
        for len in [
            0, 1, 7, 8, 9, 63, 64, 65, 127, 128, 200, 1023, 1024, 1025, 1100, 2300,
        ] {
            let stream = &bytes[..len];
            let mut whole = DigestHasher::new();
            whole.write(stream);
            assert_eq!(whole.finish(), reference(stream), "len {len}");
            for cut in [0, 1, 3, 8, 13, 64, 70, 1000]
                .into_iter()
                .filter(|&c| c <= len)
            {
                let mut h = DigestHasher::new();
                h.write(&stream[..cut]);
                h.write(&stream[cut..]);
                assert_eq!(h.finish(), reference(stream), "len {len} cut {cut}");
            }
        }
    }

    #[test]
    fn both_copies_of_the_stripe_loop_agree() {
        let bytes: Vec<u8> = (0..64 * 40u32).map(|i| (i * 131 + 7) as u8).collect();
        let mut want = [1u64, 2, 3, 4, 5, 6, 7, 8];
        // SAFETY: no precondition.
        unsafe { stripes_baseline(&mut want, 3, &bytes) };
        let mut got = [1u64, 2, 3, 4, 5, 6, 7, 8];
        // SAFETY: no precondition (the dispatcher checks the CPU).
        unsafe { stripes(&mut got, 3, &bytes) };
        assert_eq!(got, want);
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

    const PINNED_FREYR: u64 = 0x30f1_9515_65c4_3b36;

    #[test]
    fn words_match_their_bytes() {
        let words: Vec<u64> = (0..37u64)
            .map(|i| i.wrapping_mul(0x0123_4567_89ab_cdef))
            .collect();
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
        let base = vec![0x5au8; 1100];
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

    #[test]
    fn swapped_stripes_change_the_hash() {
        let mut bytes = vec![0u8; 64 * 40];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i / 64) as u8;
        }
        let hash = |b: &[u8]| {
            let mut h = DigestHasher::new();
            h.write(b);
            h.finish()
        };
        let want = hash(&bytes);
        for (x, y) in [(0, 1), (0, 16), (3, 35), (15, 16)] {
            let mut swapped = bytes.clone();
            for k in 0..64 {
                swapped.swap(64 * x + k, 64 * y + k);
            }
            assert_ne!(hash(&swapped), want, "stripes {x} and {y}");
        }
    }
}
