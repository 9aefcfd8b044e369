//! Cached archetype-graph edges: where an `insert` or `remove` of a bundle type moves a row.
//!
//! Each archetype maps a bundle `TypeId` to a [`Hop`] (the edge's index and its target
//! archetype) through an [`EdgeIndex`]: the last hop used, then one `hashbrown` lookup. The edge
//! holds the column mappings, so a row move is one plain copy per column.

use core::any::TypeId;

use crate::component::{ComponentId, DropFn, TypeIdMap};

/// One archetype's edges of one kind (insert or remove): bundle `TypeId` -> [`Hop`], with the
/// last hop used cached in front of the map, so repeated operations with one bundle type skip
/// the hash lookup.
pub(crate) struct EdgeIndex {
    map: TypeIdMap<Hop>,
    /// The last hop found; starts as a type no bundle has.
    last: (TypeId, Hop),
}

/// Where an edge is and where it leads: the index into the world's edge list, and the target
/// archetype's index ([`Hop::MISSING`] for a remove of a component the source lacks). The
/// target is kept here too so a row move can reach the target archetype without waiting for
/// the edge itself to load.
///
/// Row moves use both indices unchecked: a hop is made only by the world that pushes its edge
/// at `edge` (edge lists only grow) toward an archetype it holds at `target` (archetypes are
/// never removed), and it is stored only in that world's archetypes. A world rebuilt from parts
/// starts with fresh archetypes, so no hop outlives its edge list.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hop {
    pub(crate) edge: u32,
    pub(crate) target: u32,
}

impl Hop {
    /// The `target` of a remove edge that has none (the source lacks a bundle component).
    pub(crate) const MISSING: u32 = u32::MAX;

    /// How many insert edges (and, apart, remove edges) a world caches at most: 2^32.
    pub(crate) const LIMIT: u64 = 1 << 32;

    /// A hop to edge `edge`, leading to archetype `target` (or [`Hop::MISSING`]).
    ///
    /// # Panics
    /// When `edge` is [`Hop::LIMIT`].
    pub(crate) fn new(edge: usize, target: u32) -> Hop {
        match u32::try_from(edge) {
            Ok(edge) => Hop { edge, target },
            Err(_) => panic!(
                "freyr: archetype edge limit reached: a world caches at most {} insert edges and \
                 as many remove edges (one per archetype and bundle type inserted into or \
                 removed from it), and {edge} exist; insert and remove fewer distinct bundle \
                 types",
                Hop::LIMIT
            ),
        }
    }
}

/// The initial `last` key: not a `Bundle`, so it never matches a lookup.
struct NoBundle;

impl EdgeIndex {
    pub(crate) fn new() -> EdgeIndex {
        EdgeIndex {
            map: TypeIdMap::default(),
            last: (
                TypeId::of::<NoBundle>(),
                Hop {
                    edge: 0,
                    target: Hop::MISSING,
                },
            ),
        }
    }

    /// The hop for bundle type `ty`, if its edge was built.
    #[inline]
    pub(crate) fn get(&mut self, ty: TypeId) -> Option<Hop> {
        if self.last.0 == ty {
            return Some(self.last.1);
        }
        let &hop = self.map.get(&ty)?;
        self.last = (ty, hop);
        Some(hop)
    }

    /// Records that bundle type `ty` uses `hop`.
    pub(crate) fn insert(&mut self, ty: TypeId, hop: Hop) {
        self.map.insert(ty, hop);
    }
}

/// One column's value moving between rows: byte offsets of the column in the source and target
/// one-chunk layouts, and the value size. In a slab of `k` chunks a column starts at
/// `slab + k * offset`, so row `r` of chunk window `first..` is at
/// `slab + k * offset + (first + r) * size` (see [`Window`](crate::chunk::Window)); a move is
/// one copy per column between the two column bases.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Move {
    pub(crate) src: usize,
    pub(crate) dst: usize,
    pub(crate) size: usize,
}

/// Where one bundle element goes in (insert) or comes from (remove).
#[derive(Copy, Clone)]
pub(crate) struct Field {
    /// Column byte offset in the target (insert) or source (remove) one-chunk layout (scaled
    /// by the slab's chunk count, see [`Move`]).
    pub(crate) offset: usize,
    pub(crate) size: usize,
    /// Insert only: the entity already has this component; the old value is swapped out and
    /// dropped with `drop`.
    pub(crate) overwrite: bool,
    pub(crate) drop: Option<DropFn>,
}

/// Inserting bundle `B` into a row of the source archetype. Where the row goes (the source
/// itself when every component is already present) is the edge's [`Hop::target`].
pub(crate) struct InsertEdge {
    /// Per bundle position, in tuple order.
    pub(crate) fields: Box<[Field]>,
    /// The source row's values that move to the target (zero-sized columns left out).
    pub(crate) moves: Box<[Move]>,
    /// Whether some bundle component is already in the source (the row keeps or swaps it);
    /// when none is, the row always moves and every bundle column of the target is vacant.
    pub(crate) overwrites: bool,
    /// Whether some overwritten old value needs dropping.
    pub(crate) drops_old: bool,
}

/// Removing bundle `B` from a row of the source archetype. Where the row goes is the edge's
/// [`Hop::target`] ([`Hop::MISSING`] when the source lacks a bundle component).
pub(crate) struct RemoveEdge {
    /// The type name of the first bundle component the source lacks, if any.
    pub(crate) missing: Option<&'static str>,
    /// Per bundle position: where it is read from in the source.
    pub(crate) fields: Box<[Field]>,
    /// The source row's values that stay with the entity (zero-sized columns left out).
    pub(crate) moves: Box<[Move]>,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[u32]) -> Vec<ComponentId> {
        v.iter()
            .map(|&i| crate::component::tests_support::id(i))
            .collect()
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn the_last_edge_index_is_handed_out() {
        assert_eq!(Hop::new(Hop::LIMIT as usize - 1, 0).edge, u32::MAX);
    }

    // 2^32 edges (one per archetype and bundle type) are out of reach of a test, so the edge
    // count is passed to the check that building an edge runs.
    #[test]
    #[cfg(target_pointer_width = "64")]
    #[should_panic(
        expected = "freyr: archetype edge limit reached: a world caches at most \
                               4294967296 insert edges"
    )]
    fn an_edge_past_the_limit_panics_with_what_to_do() {
        Hop::new(Hop::LIMIT as usize, 0);
    }

    #[test]
    fn set_algebra_keeps_sorted_order() {
        assert_eq!(union(&ids(&[1, 4]), &ids(&[3, 1])), ids(&[1, 3, 4]));
        assert_eq!(difference(&ids(&[1, 3, 4]), &ids(&[3])), ids(&[1, 4]));
    }
}
