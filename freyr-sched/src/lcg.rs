//! The per-producer linear congruential generator that spreads submissions
//! over the worker queues and picks the first steal victim.

/// Knuth's MMIX multiplier and increment: a full-period LCG modulo 2^64.
const MULTIPLIER: u64 = 6_364_136_223_846_793_005;
const INCREMENT: u64 = 1_442_695_040_888_963_407;

/// A 64-bit LCG. Only its **high** 32 bits are used: in a power-of-two LCG
/// bit `k` cycles with period `2^(k+1)`, so the low bits alternate almost
/// deterministically (bit 0 flips every step) and would hand out queues in a
/// short repeating pattern.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lcg(u64);

impl Lcg {
    pub(crate) fn new(seed: u64) -> Self {
        Lcg(seed)
    }

    pub(crate) fn state(self) -> u64 {
        self.0
    }

    /// Advances the generator and returns a value in `0..n` (`n >= 1`) taken
    /// from the high 32 bits by multiply-shift (no division, no modulo bias
    /// beyond 2^-32).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(MULTIPLIER).wrapping_add(INCREMENT);
        let high = self.0 >> 32;
        ((high * n as u64) >> 32) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_stays_in_range() {
        let mut lcg = Lcg::new(42);
        for n in 1..40 {
            for _ in 0..100 {
                assert!(lcg.below(n) < n);
            }
        }
    }

    #[test]
    fn high_bits_spread_over_two_queues_without_alternating() {
        // The low bit of this LCG strictly alternates; the high bits must not.
        let mut lcg = Lcg::new(7);
        let picks: Vec<usize> = (0..64).map(|_| lcg.below(2)).collect();
        let alternating = picks.windows(2).all(|w| w[0] != w[1]);
        assert!(!alternating, "queue choice must not follow the low bit");
        let ones = picks.iter().filter(|&&p| p == 1).count();
        assert!((16..=48).contains(&ones), "skewed: {ones} of 64");
    }

    #[test]
    fn every_queue_gets_work() {
        let mut lcg = Lcg::new(1);
        let mut hits = [0usize; 7];
        for _ in 0..7_000 {
            hits[lcg.below(7)] += 1;
        }
        assert!(hits.iter().all(|&h| h > 700), "{hits:?}");
    }
}
