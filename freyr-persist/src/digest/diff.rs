//! [`diff`]: the first place two world digests differ, as a [`Divergence`].

use core::fmt;

use freyr_core::Entity;

use super::{ArchetypeDigest, RowDigests, WorldDigest};

/// What differs at a [`Divergence`].
///
/// # Examples
///
/// ```
/// use freyr::{Registry, StableHash};
/// use freyr::hash::DivergenceKind;
///
/// #[derive(StableHash)]
/// struct Hp(u32);
/// #[derive(StableHash)]
/// struct Shield(u32);
///
/// let mut a = Registry::with_workers(1);
/// let mut b = Registry::with_workers(1);
/// for r in [&mut a, &mut b] {
///     r.register_hashable::<Hp>();
///     r.register_hashable::<Shield>();
///     r.spawn((Hp(1),));
/// }
/// b.spawn((Hp(1), Shield(2))); // a structural change on one side only
/// let found = a.locate_divergence(&b).unwrap().unwrap();
/// assert!(matches!(&found.kind, DivergenceKind::Archetypes { a: None, b: Some(names) } if names.len() == 2));
/// ```
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
/// ```
/// use freyr::{Registry, StableHash};
///
/// #[derive(StableHash)]
/// struct Hp(u32);
///
/// let build = |hp: u32| {
///     let mut r = Registry::with_workers(1);
///     r.register_hashable::<Hp>();
///     let ids = r.spawn_batch((0..10).map(|i| (Hp(i * hp),)));
///     (r, ids)
/// };
/// let ((a, ids), (b, _)) = (build(1), build(2));
/// let found = a.locate_divergence(&b).unwrap().unwrap();
/// // Row 0 holds `Hp(0)` on both sides; row 1 is the first to differ.
/// assert_eq!((found.archetype, found.chunk, found.row, found.entity), (1, Some(0), Some(1), Some(ids[1])));
/// assert!(found.to_string().ends_with(&format!("differs in chunk 0, row 1, entity {}", ids[1])));
/// ```
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
/// ```
/// use freyr::{Registry, StableHash};
/// use freyr::hash::DivergenceKind;
///
/// #[derive(StableHash)]
/// struct Hp(u32);
///
/// let mut r = Registry::with_workers(1);
/// r.register_hashable::<Hp>();
/// let ids = r.spawn_batch((0..1000).map(|i| (Hp(i),)));
/// let before = r.digest().unwrap();
/// assert!(freyr::hash::diff(&before, &before).is_none());
/// r.get_mut::<Hp>(ids[700]).unwrap().0 += 1;
/// let found = freyr::hash::diff(&before, &r.digest().unwrap()).unwrap();
/// assert!(matches!(found.kind, DivergenceKind::Component { index: 0, .. }));
/// assert_eq!((found.chunk, found.row), (Some(1), None)); // the row needs `with_rows`
/// ```
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
    /// ```
    /// use freyr::{Registry, StableHash};
    /// use freyr::hash::ChunkAddress;
    ///
    /// #[derive(StableHash)]
    /// struct Hp(u32);
    ///
    /// let build = |swap: bool| {
    ///     let mut r = Registry::with_workers(1);
    ///     r.register_hashable::<Hp>();
    ///     r.spawn_batch((0..3).map(|i| (Hp(if swap && i == 2 { 9 } else { i }),)));
    ///     r
    /// };
    /// let (a, b) = (build(false), build(true));
    /// let found = freyr::hash::diff(&a.digest().unwrap(), &b.digest().unwrap()).unwrap();
    /// let at = ChunkAddress { archetype: found.archetype, chunk: found.chunk.unwrap() };
    /// let found = found.with_rows(&a.row_digests(at).unwrap(), &b.row_digests(at).unwrap());
    /// assert_eq!(found.row, Some(2));
    /// ```
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
