//! The bitsets behind [`Access`](super::Access): [`ComponentSet`] and [`ArchetypeSet`], both
//! over one growable set of small indices.

use freyr_core::{ArchetypeId, ComponentId};

/// A growable set of small indices: bit `i % 64` of word `i / 64` set ⇔ index `i` in the set.
///
/// ```text
///  words[0]                          words[1]
///  bit 0 .. bit 63                   bit 64 .. bit 127
/// ```
///
/// Not a `bitvec::BitVec`: Miri's Stacked Borrows model rejects bitvec 1.x's element access
/// (ferrilab/bitvec#193; `BitVec::resize` here), and freyr-query's unsafe paths are Miri-tested
/// through the registry, which builds these sets on every query.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct IndexSet {
    words: Vec<u64>,
}

impl IndexSet {
    fn insert(&mut self, i: usize) {
        let word = i / 64;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1u64 << (i % 64);
    }

    fn remove(&mut self, i: usize) {
        if let Some(w) = self.words.get_mut(i / 64) {
            *w &= !(1u64 << (i % 64));
        }
    }

    fn contains(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    fn first_common(&self, other: &IndexSet) -> Option<usize> {
        self.words
            .iter()
            .zip(&other.words)
            .enumerate()
            .find_map(|(i, (a, b))| {
                let both = a & b;
                (both != 0).then(|| i * 64 + both.trailing_zeros() as usize)
            })
    }

    fn union_with(&mut self, other: &IndexSet) {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    fn difference_with(&mut self, other: &IndexSet) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= !b;
        }
    }
}

/// A growable bitset over [`ComponentId`]s (bit `i` set ⇔ `ComponentId` `i` in the set).
///
/// # Examples
///
/// ```
/// use freyr_query::access::ComponentSet;
///
/// let mut world = freyr::World::new();
/// let (a, b) = (world.register::<u8>(), world.register::<u16>());
/// let mut set = ComponentSet::new();
/// set.insert(b);
/// assert!(set.contains(b) && !set.contains(a));
/// let mut other = ComponentSet::new();
/// other.insert(a);
/// assert_eq!(set.first_common(&other), None);
/// other.union_with(&set);
/// assert_eq!(set.first_common(&other), Some(b.index()));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ComponentSet(IndexSet);

impl ComponentSet {
    /// Removes every id of `other`.
    pub(crate) fn remove_all(&mut self, other: &ComponentSet) {
        self.0.difference_with(&other.0);
    }

    /// An empty set.
    pub fn new() -> Self {
        ComponentSet::default()
    }

    /// Adds `id`.
    pub fn insert(&mut self, id: ComponentId) {
        self.0.insert(id.index());
    }

    /// Removes `id`.
    pub fn remove(&mut self, id: ComponentId) {
        self.0.remove(id.index());
    }

    /// Whether `id` is in the set.
    pub fn contains(&self, id: ComponentId) -> bool {
        self.0.contains(id.index())
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The lowest id in both sets, if any.
    pub fn first_common(&self, other: &ComponentSet) -> Option<usize> {
        self.0.first_common(&other.0)
    }

    /// Adds every id of `other`.
    pub fn union_with(&mut self, other: &ComponentSet) {
        self.0.union_with(&other.0);
    }
}

/// A growable bitset over [`ArchetypeId`]s: the archetypes an [`Access`](super::Access) is confined to.
///
/// # Examples
///
/// ```
/// use freyr_query::access::ArchetypeSet;
///
/// let mut world = freyr::World::new();
/// let (ea, eb) = (world.spawn((1u8,)), world.spawn((1u16,)));
/// let a = world.entity_location(ea).unwrap().0;
/// let b = world.entity_location(eb).unwrap().0;
/// let mut set = ArchetypeSet::new();
/// set.insert(a);
/// assert!(set.contains(a) && !set.contains(b));
/// let mut other = ArchetypeSet::new();
/// other.insert(b);
/// assert!(!set.intersects(&other));
/// other.insert(a);
/// assert!(set.intersects(&other));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArchetypeSet(IndexSet);

impl ArchetypeSet {
    /// An empty set.
    pub fn new() -> Self {
        ArchetypeSet::default()
    }

    /// Adds `id`.
    pub fn insert(&mut self, id: ArchetypeId) {
        self.0.insert(id.index());
    }

    /// Whether `id` is in the set.
    pub fn contains(&self, id: ArchetypeId) -> bool {
        self.0.contains(id.index())
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether some archetype is in both sets.
    pub fn intersects(&self, other: &ArchetypeSet) -> bool {
        self.0.first_common(&other.0).is_some()
    }

    /// Adds every id of `other`.
    pub fn union_with(&mut self, other: &ArchetypeSet) {
        self.0.union_with(&other.0);
    }
}
