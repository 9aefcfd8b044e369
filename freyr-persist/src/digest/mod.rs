//! The desync locator: a per-(archetype, chunk, component) digest of a world
//! ([`WorldDigest`], `Registry::digest`), and [`diff`], which names
//! the first place two digests differ.
//!
//! # Reading a desync report
//!
//! Two runs that should be identical (two servers in lockstep, a replay against its recording,
//! a run on 1 worker against one on 8) each take a [`WorldDigest`] at the same tick. If the
//! whole-world values ([`WorldDigest::value`]) are equal the worlds are equal. If not,
//! [`diff`] walks both digests in a fixed order and returns the first [`Divergence`]:
//!
//! 1. the **archetype**, by its index in creation order and the names of its component types
//!    (a [`DivergenceKind::Archetypes`] divergence: one side created a different archetype
//!    there, or none — a spawn, insert or remove happened on one side only);
//! 2. the **chunk** (512 rows each) inside it, in order;
//! 3. within the chunk, the entity ids first ([`DivergenceKind::Entities`]: a different
//!    entity, the same entities in another row order, or a different row count), then each
//!    component in the archetype's order ([`DivergenceKind::Component`]: a value changed).
//!
//! A digest holds one `u64` per (chunk, component), so it says *which* chunk, not which row.
//! The row comes from [`RowDigests`]: one `u64` per (row, component) of one chunk. In one
//! process, `Registry::locate_divergence` does all of
//! it. Across machines, exchange the digests, then the row digests of the one chunk named
//! (`Registry::row_digests`), and call
//! [`Divergence::with_rows`]: the report then names the **row** and the **entity**.
//!
//! The first divergence is usually the cause; later ones are often its consequences (a wrong
//! velocity at tick T is a wrong position at T + 1). Take digests every tick and stop at the
//! first tick whose values differ.
//!
//! What a digest covers: every archetype of the world in creation order (empty ones too), the
//! entity ids of every chunk in row order, and the values of every type registered with
//! `Registry::register_hashable`. A type excluded with
//! `Registry::exclude_from_hash` is named (it is part of
//! its archetype) but its values are not hashed. Unlike
//! `Registry::world_hash_all`, which hashes entities in id
//! order and ignores storage, a digest sees the layout: two worlds with equal world hashes but
//! rows in another order have different digests, because iteration order is part of what a
//! deterministic run must reproduce.
//!
//! # The digest, exactly
//!
//! Every hash is a [`DigestHasher`] (specified in its documentation) over a byte stream:
//!
//! - a type's **column stream** for one chunk: if the type is
//!   [`PLAIN_BYTES`](crate::StableHash::PLAIN_BYTES), the concatenation of its values'
//!   `StableHash` bytes, in row order (read as raw column memory); otherwise, per value, the 8
//!   little-endian bytes of the FNV-1a 64 hash ([`StableHasher`](crate::StableHasher)) of its
//!   `StableHash` bytes. A column digest is the hash of the column stream; a row digest is the
//!   hash of that row's part of it.
//! - a chunk's **entity digest**: the hash of its entities' [`Entity::to_bits`] as 8
//!   little-endian bytes each, in row order; a row's entity is stored as those bits.
//! - an **archetype value**: the hash of, as 8-byte little-endian words unless said otherwise:
//!   the component count; per component, its name's length, its name's UTF-8 bytes (unpadded),
//!   and 1 if its values are hashed else 0; the entity count; the chunk count; per chunk, its
//!   entity digest, then the column digests of its hashed components in archetype order.
//! - the **world value**: the hash of the archetype count and then each archetype value.
//!
//! On a big-endian target no type is read as raw memory ([`PlainBytes::get`] is false), so
//! plain types take the per-value form there: digests compare between machines of the same
//! byte order (every tier-1 Rust target is little-endian). Component names are
//! `core::any::type_name`, so compare digests between builds of the same program.
//!
//! # Examples
//!
//! ```
//! use freyr::{Registry, StableHash};
//! use freyr::hash::DivergenceKind;
//!
//! #[derive(StableHash, Clone, Copy)]
//! struct Pos([f32; 4]);
//! #[derive(StableHash, Clone, Copy)]
//! struct Vel([f32; 4]);
//!
//! let build = || {
//!     let mut registry = Registry::with_workers(1);
//!     registry.register_hashable::<Pos>();
//!     registry.register_hashable::<Vel>();
//!     let ids = registry.spawn_batch((0..2000).map(|i| (Pos([i as f32; 4]), Vel([1.0; 4]))));
//!     (registry, ids)
//! };
//! let (a, _) = build();
//! let (mut b, ids) = build();
//! assert_eq!(a.digest().unwrap(), b.digest().unwrap());
//!
//! // One bit of one velocity differs on `b`.
//! let victim = ids[1500];
//! b.get_mut::<Vel>(victim).unwrap().0[2] = f32::from_bits(1.0f32.to_bits() ^ 1);
//!
//! let found = freyr::hash::diff(&a.digest().unwrap(), &b.digest().unwrap()).unwrap();
//! assert_eq!((found.chunk, found.row), (Some(2), None)); // chunk 2 holds rows 1024..1536
//! assert!(matches!(&found.kind, DivergenceKind::Component { name, .. } if name.ends_with("Vel")));
//!
//! // In one process the registry drills down to the row and the entity.
//! let found = a.locate_divergence(&b).unwrap().unwrap();
//! assert_eq!((found.chunk, found.row, found.entity), (Some(2), Some(1500 - 1024), Some(victim)));
//! println!("{found}");
//! ```

mod build;
mod diff;
mod rows;

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

pub use self::build::{row_digests, world_digest};
pub use self::diff::{Divergence, DivergenceKind, diff};
pub use self::rows::RowDigests;
pub(crate) use crate::hash::ColumnFns;
pub use crate::hash::{DigestHasher, PlainBytes};

#[cfg(doc)]
use freyr_core::Entity;

/// Where one chunk is: an archetype's index in creation order
/// ([`World::archetypes`](freyr_core::World::archetypes)) and the chunk's index in it.
///
/// # Examples
///
/// ```
/// let at = freyr::hash::ChunkAddress { archetype: 1, chunk: 0 };
/// assert_eq!(at, freyr::hash::ChunkAddress { archetype: 1, chunk: 0 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct ChunkAddress {
    /// Index of the archetype in creation order.
    pub archetype: usize,
    /// Index of the chunk in the archetype.
    pub chunk: usize,
}

/// The digest of a whole world: one [`ArchetypeDigest`] per archetype, in creation order, and
/// their fold, [`value`](WorldDigest::value). Plain data: compare it, clone it, serialise it
/// (serde, with the `serde` feature) and send it to another machine. See the [module documentation](self) for exactly
/// what is hashed and how to read a [`diff`].
///
/// # Examples
///
/// ```
/// use freyr::{Registry, StableHash};
///
/// #[derive(StableHash)]
/// struct Hp(u32);
///
/// let mut registry = Registry::with_workers(1);
/// registry.register_hashable::<Hp>();
/// registry.spawn_batch((0..600).map(|i| (Hp(i),)));
/// let digest = registry.digest().unwrap();
/// let hp = digest.archetypes().iter().find(|a| a.len() == 600).unwrap();
/// assert_eq!(hp.chunk_count(), 2);
/// assert!(hp.components()[0].ends_with("Hp"));
/// assert_eq!(digest, registry.digest().unwrap());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct WorldDigest {
    value: u64,
    archetypes: Vec<ArchetypeDigest>,
}

impl WorldDigest {
    /// The digest of these archetypes, folding their values into the world value.
    pub fn new(archetypes: Vec<ArchetypeDigest>) -> WorldDigest {
        let mut h = DigestHasher::new();
        h.write_u64(archetypes.len() as u64);
        for a in &archetypes {
            h.write_u64(a.value);
        }
        WorldDigest {
            value: h.finish(),
            archetypes,
        }
    }

    /// The whole-world value: equal for equal worlds, and what two servers compare every tick.
    pub fn value(&self) -> u64 {
        self.value
    }

    /// The archetypes' digests, in creation order (empty archetypes included).
    pub fn archetypes(&self) -> &[ArchetypeDigest] {
        &self.archetypes
    }
}

/// The digest of one archetype: its component types, and one `u64` per chunk for the entity
/// ids and per (chunk, hashed component) for the values.
///
/// # Examples
///
/// ```
/// use freyr::{Registry, StableHash};
///
/// #[derive(StableHash)]
/// struct Hp(u32);
/// struct Cache(u32);
///
/// let mut registry = Registry::with_workers(1);
/// registry.register_hashable::<Hp>();
/// registry.exclude_from_hash::<Cache>();
/// registry.spawn((Hp(1), Cache(9)));
/// let digest = registry.digest().unwrap();
/// let a = digest.archetypes().iter().find(|a| a.len() == 1).unwrap();
/// let hp = a.components().iter().position(|n| n.ends_with("Hp")).unwrap();
/// assert!(a.is_hashed(hp) && a.column(0, hp).is_some());
/// assert_eq!(a.column(0, 1 - hp), None); // `Cache` is excluded
/// assert!(a.entities(0).is_some() && a.entities(1).is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct ArchetypeDigest {
    /// Component type names, in the archetype's component order.
    components: Vec<String>,
    /// Per component: whether its values are hashed (registered) or not (excluded).
    hashed: Vec<bool>,
    /// Entity count.
    len: usize,
    /// Per chunk: the entity digest.
    entities: Vec<u64>,
    /// Chunk-major: `columns[chunk * components.len() + k]`, 0 for an excluded component.
    columns: Vec<u64>,
    /// The archetype value (see the module documentation).
    value: u64,
}

impl ArchetypeDigest {
    /// The digest of one archetype from its parts; computes the archetype value. `hashed` has
    /// one flag per component; `entities` one digest per chunk; `columns` one per (chunk,
    /// component), chunk-major (0 for an excluded component).
    ///
    /// # Panics
    ///
    /// If the parts disagree: `hashed` not as long as `components`, or `columns` not
    /// `entities.len() * components.len()` long.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::hash::ArchetypeDigest;
    ///
    /// let names = vec!["Hp".to_string(), "Cache".to_string()];
    /// let a = ArchetypeDigest::new(names.clone(), vec![true, false], 3, vec![7], vec![11, 0]);
    /// assert_eq!((a.len(), a.chunk_count(), a.column(0, 0)), (3, 1, Some(11)));
    /// let short = std::panic::catch_unwind(|| {
    ///     ArchetypeDigest::new(names, vec![true, false], 3, vec![7], vec![11])
    /// });
    /// assert!(short.is_err());
    /// ```
    pub fn new(
        components: Vec<String>,
        hashed: Vec<bool>,
        len: usize,
        entities: Vec<u64>,
        columns: Vec<u64>,
    ) -> ArchetypeDigest {
        assert_eq!(
            hashed.len(),
            components.len(),
            "freyr: ArchetypeDigest::new needs one `hashed` flag per component"
        );
        assert_eq!(
            Some(columns.len()),
            entities.len().checked_mul(components.len()),
            "freyr: ArchetypeDigest::new needs one column digest per (chunk, component)"
        );
        let mut h = DigestHasher::new();
        h.write_u64(components.len() as u64);
        for (name, &hashed) in components.iter().zip(&hashed) {
            h.write_u64(name.len() as u64);
            h.write(name.as_bytes());
            h.write_u64(u64::from(hashed));
        }
        h.write_u64(len as u64);
        h.write_u64(entities.len() as u64);
        let width = components.len();
        for (c, &e) in entities.iter().enumerate() {
            h.write_u64(e);
            for k in (0..width).filter(|&k| hashed[k]) {
                h.write_u64(columns[c * width + k]);
            }
        }
        ArchetypeDigest {
            value: h.finish(),
            components,
            hashed,
            len,
            entities,
            columns,
        }
    }

    /// The component types' names (`core::any::type_name`), in the archetype's order.
    pub fn components(&self) -> &[String] {
        &self.components
    }

    /// Whether component `index`'s values are hashed (registered, not excluded).
    pub fn is_hashed(&self, index: usize) -> bool {
        self.hashed.get(index).copied().unwrap_or(false)
    }

    /// Number of entities.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the archetype has no entities.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of chunks.
    pub fn chunk_count(&self) -> usize {
        self.entities.len()
    }

    /// The entity digest of chunk `chunk`, or `None` past the last chunk.
    pub fn entities(&self, chunk: usize) -> Option<u64> {
        self.entities.get(chunk).copied()
    }

    /// The digest of component `index`'s column in chunk `chunk`; `None` past the last chunk or
    /// component, or for an excluded component.
    pub fn column(&self, chunk: usize, index: usize) -> Option<u64> {
        if !self.is_hashed(index) || chunk >= self.chunk_count() {
            return None;
        }
        self.columns
            .get(chunk * self.components.len() + index)
            .copied()
    }

    /// The archetype value: the fold of everything above.
    pub fn value(&self) -> u64 {
        self.value
    }
}
