//! [`RowDigests`]: one chunk's digests row by row, for finding the row two chunks differ in.

use freyr_core::Entity;
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use super::ChunkAddress;

/// The digests of one chunk row by row: the entity of each row and one `u64` per (row, hashed
/// component), the hash of that row's part of the column stream (see the
/// [module documentation](crate::digest)). Small enough to send: 8 bytes per row plus 8 per
/// (row, component). Made by `Registry::row_digests`; compared
/// by [`Divergence::with_rows`](crate::Divergence::with_rows).
///
/// # Examples
///
/// ```
/// use freyr::{Registry, StableHash};
/// use freyr::hash::ChunkAddress;
///
/// #[derive(StableHash)]
/// struct Hp(u32);
///
/// let mut registry = Registry::with_workers(1);
/// registry.register_hashable::<Hp>();
/// let ids = registry.spawn_batch((0..3).map(|i| (Hp(i),)));
/// let (archetype, chunk, _) = registry.world().entity_location(ids[0]).unwrap();
/// let at = ChunkAddress { archetype: archetype.index(), chunk };
/// let rows = registry.row_digests(at).unwrap();
/// assert_eq!(rows.len(), 3);
/// assert_eq!(rows.entity(2), Some(ids[2]));
/// assert_ne!(rows.value(0, 0), rows.value(1, 0));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct RowDigests {
    address: ChunkAddress,
    components: Vec<String>,
    hashed: Vec<bool>,
    /// `Entity::to_bits` of each row.
    entities: Vec<u64>,
    /// Row-major: `values[row * components.len() + k]`, 0 for an excluded component.
    values: Vec<u64>,
}

impl RowDigests {
    /// The row digests of one chunk: its address, component names, which are hashed, the
    /// entities and one value per (row, hashed component).
    pub fn new(
        address: ChunkAddress,
        components: Vec<String>,
        hashed: Vec<bool>,
        entities: Vec<u64>,
        values: Vec<u64>,
    ) -> RowDigests {
        RowDigests {
            address,
            components,
            hashed,
            entities,
            values,
        }
    }

    /// The chunk these rows are.
    pub fn address(&self) -> ChunkAddress {
        self.address
    }

    /// The archetype's component type names, in its order.
    pub fn components(&self) -> &[String] {
        &self.components
    }

    /// Number of rows (0 when the chunk does not exist).
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// The entity in row `row`, or `None` past the last row.
    pub fn entity(&self, row: usize) -> Option<Entity> {
        self.entities.get(row).copied().and_then(Entity::from_bits)
    }

    /// The digest of component `index`'s value in row `row`; `None` past the last row or
    /// component, or for an excluded component.
    pub fn value(&self, row: usize, index: usize) -> Option<u64> {
        if row >= self.len() || !self.hashed.get(index).copied().unwrap_or(false) {
            return None;
        }
        self.values
            .get(row * self.components.len() + index)
            .copied()
    }

    /// `Entity::to_bits` of row `row`'s entity (what is compared: also for a malformed value).
    pub(crate) fn entity_bits(&self, row: usize) -> Option<u64> {
        self.entities.get(row).copied()
    }
}
