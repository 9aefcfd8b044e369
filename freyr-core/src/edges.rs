//! Cached archetype-graph edges: where an `insert` or `remove` of a bundle type moves a row.
//!
//! Each archetype maps a bundle `TypeId` to an edge index (one `hashbrown` lookup per
//! operation); the edge holds the target archetype and the column mappings, so a row move is
//! one plain copy per column.

use crate::archetype::{Archetype, ArchetypeId};
use crate::component::ComponentId;

/// Inserting bundle `B` into a row of the source archetype.
pub(crate) struct InsertEdge {
    /// Where the row goes (the source itself when every component is already present).
    pub(crate) target: ArchetypeId,
    /// Per bundle position: the target column, and whether the source already has it (the old
    /// value is then overwritten and dropped).
    pub(crate) fields: Box<[(u32, bool)]>,
    /// Per source column: the target column its value moves to.
    pub(crate) moves: Box<[u32]>,
}

/// Removing bundle `B` from a row of the source archetype.
pub(crate) struct RemoveEdge {
    /// Where the row goes, or the type name of the first bundle component the source lacks.
    pub(crate) target: Result<ArchetypeId, &'static str>,
    /// Per bundle position: the source column it is read from.
    pub(crate) fields: Box<[u32]>,
    /// Per target column: the source column its value comes from.
    pub(crate) moves: Box<[u32]>,
}

/// The sorted union of `source` and `bundle`.
pub(crate) fn union(source: &[ComponentId], bundle: &[ComponentId]) -> Vec<ComponentId> {
    let mut set: Vec<ComponentId> = source.iter().chain(bundle).copied().collect();
    set.sort_unstable();
    set.dedup();
    set
}

/// The sorted `source` minus `bundle`.
pub(crate) fn difference(source: &[ComponentId], bundle: &[ComponentId]) -> Vec<ComponentId> {
    source
        .iter()
        .copied()
        .filter(|c| !bundle.contains(c))
        .collect()
}

/// Column index of `id` in `archetype`, which must have it.
fn column(archetype: &Archetype, id: ComponentId) -> u32 {
    archetype
        .column_index(id)
        .expect("edge target has the component") as u32
}

impl InsertEdge {
    pub(crate) fn new(
        source: &Archetype,
        target: &Archetype,
        bundle: &[ComponentId],
    ) -> InsertEdge {
        InsertEdge {
            target: target.id(),
            fields: bundle
                .iter()
                .map(|&c| (column(target, c), source.has(c)))
                .collect(),
            moves: source
                .components()
                .iter()
                .map(|&c| column(target, c))
                .collect(),
        }
    }
}

impl RemoveEdge {
    pub(crate) fn new(
        source: &Archetype,
        target: &Archetype,
        bundle: &[ComponentId],
    ) -> RemoveEdge {
        RemoveEdge {
            target: Ok(target.id()),
            fields: bundle.iter().map(|&c| column(source, c)).collect(),
            moves: target
                .components()
                .iter()
                .map(|&c| column(source, c))
                .collect(),
        }
    }

    pub(crate) fn missing(name: &'static str) -> RemoveEdge {
        RemoveEdge {
            target: Err(name),
            fields: Box::new([]),
            moves: Box::new([]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[u32]) -> Vec<ComponentId> {
        v.iter()
            .map(|&i| crate::component::tests_support::id(i))
            .collect()
    }

    #[test]
    fn set_algebra_keeps_sorted_order() {
        assert_eq!(union(&ids(&[1, 4]), &ids(&[3, 1])), ids(&[1, 3, 4]));
        assert_eq!(difference(&ids(&[1, 3, 4]), &ids(&[3])), ids(&[1, 4]));
    }
}
