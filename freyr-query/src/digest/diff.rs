//! [`diff`]: the first place two world digests differ, as a [`Divergence`].

use core::fmt;

use freyr_core::Entity;

use super::{ArchetypeDigest, RowDigests, WorldDigest};

/// What differs at a [`Divergence`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DivergenceKind {
    /// The archetype at this index has other component types on each side, or exists on one
    /// side only (`None`): a structural change (spawn, insert, remove) happened on one side.
    Archetypes {
        /// Side `a`'s component names there.
        a: Option<Vec<String>>,
        /// Side `b`'s component names there.
        b: Option<Vec<String>>,
    },
    /// The chunk's entity ids differ: another entity, another row order, or another row count.
    Entities {
        /// Side `a`'s entity count in the archetype.
        a_len: usize,
        /// Side `b`'s entity count in the archetype.
        b_len: usize,
    },
    /// The values of one component differ.
    Component {
        /// Its position in the archetype's component list.
        index: usize,
        /// Its type name.
        name: String,
    },
}

/// The first difference between two world digests, as [`diff`] finds it: archetypes in creation
/// order, chunks in order, and in a chunk the entity ids before each component in the
/// archetype's order. [`with_rows`](Divergence::with_rows) adds the row and the entity.
///
/// `Display` prints one line for a log, e.g. ``archetype 2 (`game::Pos`, `game::Vel`):
/// component `game::Vel` differs in chunk 17, row 42, entity 8745v1``.
///
/// # Examples
///
/// See the [module documentation](crate::digest).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Index of the archetype in creation order.
    pub archetype: usize,
    /// Its component type names (side `a`'s; side `b`'s where `a` has no archetype there).
    pub components: Vec<String>,
    /// What differs.
    pub kind: DivergenceKind,
    /// The chunk, for entity and component divergences.
    pub chunk: Option<usize>,
    /// The row in the chunk, once known ([`with_rows`](Divergence::with_rows)).
    pub row: Option<usize>,
    /// Side `a`'s entity in that row (side `b`'s where `a` has no such row), once known.
    pub entity: Option<Entity>,
}

/// The first divergence between `a` and `b`, or `None` when they are equal. Names the
/// archetype, the chunk and the component (or the entity column); the row comes from
/// [`Divergence::with_rows`].
///
/// # Examples
///
/// See the [module documentation](crate::digest).
pub fn diff(a: &WorldDigest, b: &WorldDigest) -> Option<Divergence> {
    if a == b {
        return None;
    }
    let count = a.archetypes().len().max(b.archetypes().len());
    (0..count).find_map(|i| archetype_diff(i, a.archetypes().get(i), b.archetypes().get(i)))
}

fn archetype_diff(
    index: usize,
    a: Option<&ArchetypeDigest>,
    b: Option<&ArchetypeDigest>,
) -> Option<Divergence> {
    let names = |d: Option<&ArchetypeDigest>| d.map(|d| d.components().to_vec());
    let divergence = |kind, chunk| Divergence {
        archetype: index,
        components: names(a.or(b)).unwrap_or_default(),
        kind,
        chunk,
        row: None,
        entity: None,
    };
    let (Some(da), Some(db)) = (a, b) else {
        let kind = DivergenceKind::Archetypes {
            a: names(a),
            b: names(b),
        };
        return Some(divergence(kind, None));
    };
    if da.components() != db.components() || da.hashed != db.hashed {
        let kind = DivergenceKind::Archetypes {
            a: names(a),
            b: names(b),
        };
        return Some(divergence(kind, None));
    }
    for chunk in 0..da.chunk_count().max(db.chunk_count()) {
        if da.entities(chunk) != db.entities(chunk) {
            let kind = DivergenceKind::Entities {
                a_len: da.len(),
                b_len: db.len(),
            };
            return Some(divergence(kind, Some(chunk)));
        }
        for (k, name) in da.components().iter().enumerate() {
            if da.column(chunk, k) != db.column(chunk, k) {
                let kind = DivergenceKind::Component {
                    index: k,
                    name: name.clone(),
                };
                return Some(divergence(kind, Some(chunk)));
            }
        }
    }
    (da != db).then(|| {
        let kind = DivergenceKind::Entities {
            a_len: da.len(),
            b_len: db.len(),
        };
        divergence(kind, None)
    })
}

impl Divergence {
    /// Adds the row and the entity, from the row digests of the divergent chunk on each side
    /// (`a` from side `a`): the first row whose entity differs (for
    /// [`DivergenceKind::Entities`]) or whose value of the component differs (for
    /// [`DivergenceKind::Component`]). Changes nothing for an archetype divergence, or when the
    /// row digests show no difference of that kind (digests of another chunk or tick).
    ///
    /// # Examples
    ///
    /// See the [module documentation](crate::digest).
    pub fn with_rows(mut self, a: &RowDigests, b: &RowDigests) -> Divergence {
        let rows = a.len().max(b.len());
        let row = match &self.kind {
            DivergenceKind::Archetypes { .. } => None,
            DivergenceKind::Entities { .. } => {
                (0..rows).find(|&r| a.entity_bits(r) != b.entity_bits(r))
            }
            DivergenceKind::Component { index, .. } => (0..rows).find(|&r| {
                a.entity_bits(r) != b.entity_bits(r) || a.value(r, *index) != b.value(r, *index)
            }),
        };
        if let Some(row) = row {
            self.row = Some(row);
            self.entity = a.entity(row).or_else(|| b.entity(row));
        }
        self
    }
}

fn names_list(f: &mut fmt::Formatter<'_>, names: &[String]) -> fmt::Result {
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            write!(f, ", ")?;
        }
        write!(f, "`{name}`")?;
    }
    Ok(())
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "archetype {} (", self.archetype)?;
        names_list(f, &self.components)?;
        write!(f, "): ")?;
        match &self.kind {
            DivergenceKind::Archetypes { a, b } => {
                let side = |s: &Option<Vec<String>>| if s.is_some() { "present" } else { "absent" };
                write!(
                    f,
                    "the archetypes differ (side a: {}, side b: {})",
                    side(a),
                    side(b)
                )?;
                if let (Some(_), Some(b)) = (a, b) {
                    write!(f, "; side b has ")?;
                    names_list(f, b)?;
                }
            }
            DivergenceKind::Entities { a_len, b_len } => {
                write!(f, "the entity ids differ ({a_len} vs {b_len} entities)")?;
            }
            DivergenceKind::Component { name, .. } => write!(f, "component `{name}` differs")?,
        }
        if let Some(chunk) = self.chunk {
            write!(f, " in chunk {chunk}")?;
        }
        if let Some(row) = self.row {
            write!(f, ", row {row}")?;
        }
        if let Some(entity) = self.entity {
            write!(f, ", entity {entity}")?;
        }
        Ok(())
    }
}
