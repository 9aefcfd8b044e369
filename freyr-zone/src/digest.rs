//! [`ZoneDigest`]: the merged digest of several zones, keyed by a stable user key.

use freyr::mix;

/// A digest of entities keyed by a stable key of the user's (a component that moves with the
/// entity), independent of entity ids, of which zone or process holds the entity, and of
/// order: the sum of one hash per (key, state) pair, and the count. Two zones' digests
/// [`merge`](ZoneDigest::merge) into the digest of both, so the merged digest of a run is the
/// same whether its zones ran in one process or in many. The keys are kept, so a test can
/// check that no entity was lost or duplicated.
///
/// # Examples
///
/// ```
/// use freyr_zone::ZoneDigest;
/// let mut west = ZoneDigest::default();
/// west.add(1, 0xaa);
/// let mut east = ZoneDigest::default();
/// east.add(2, 0xbb);
/// let mut both = ZoneDigest::default();
/// both.add(2, 0xbb);
/// both.add(1, 0xaa);
/// west.merge(&east);
/// assert_eq!(west.value(), both.value());
/// assert!(west.duplicate_keys().is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneDigest {
    sum: u64,
    keys: Vec<u64>,
}

impl ZoneDigest {
    /// Adds one entity: its stable key and a hash of its state.
    pub fn add(&mut self, key: u64, state: u64) {
        self.sum = self.sum.wrapping_add(mix(key ^ mix(state)));
        self.keys.push(key);
    }

    /// Adds every entity of `other`.
    pub fn merge(&mut self, other: &ZoneDigest) {
        self.sum = self.sum.wrapping_add(other.sum);
        self.keys.extend_from_slice(&other.keys);
    }

    /// How many entities were added.
    #[must_use]
    pub fn entities(&self) -> u64 {
        self.keys.len() as u64
    }

    /// The sum of the entities' hashes: with [`entities`](Self::entities), what another
    /// process needs to merge this digest ([`value_of_parts`](Self::value_of_parts)).
    #[must_use]
    pub fn sum(&self) -> u64 {
        self.sum
    }

    /// The digest's value: a function of the set of (key, state) pairs (with repeats).
    #[must_use]
    pub fn value(&self) -> u64 {
        Self::value_of_parts(&[(self.entities(), self.sum)])
    }

    /// The merged value of digests given as (entities, sum) parts, as separate processes
    /// print them.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_zone::ZoneDigest;
    /// let mut a = ZoneDigest::default();
    /// a.add(1, 2);
    /// let mut b = ZoneDigest::default();
    /// b.add(3, 4);
    /// let parts = [(a.entities(), a.sum()), (b.entities(), b.sum())];
    /// a.merge(&b);
    /// assert_eq!(ZoneDigest::value_of_parts(&parts), a.value());
    /// ```
    #[must_use]
    pub fn value_of_parts(parts: &[(u64, u64)]) -> u64 {
        let (n, sum) = parts.iter().fold((0u64, 0u64), |(n, s), &(pn, ps)| {
            (n + pn, s.wrapping_add(ps))
        });
        mix(sum ^ mix(n))
    }

    /// The keys added more than once, sorted: empty when no entity is duplicated.
    #[must_use]
    pub fn duplicate_keys(&self) -> Vec<u64> {
        let mut keys = self.keys.clone();
        keys.sort_unstable();
        let mut dups: Vec<u64> = keys
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| w[0])
            .collect();
        dups.dedup();
        dups
    }

    /// The keys, sorted.
    #[must_use]
    pub fn sorted_keys(&self) -> Vec<u64> {
        let mut keys = self.keys.clone();
        keys.sort_unstable();
        keys
    }
}
