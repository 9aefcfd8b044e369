//! A world taken apart and built again, for saves, loads and imports of entity subsets.
//!
//! **Internal to the Freyr workspace, not a stable API.** This module, and the `World`
//! and `Archetype` methods below marked `#[doc(hidden)]`, are public only so that `freyr-persist` (the save format) can
//! reach them; they are `#[doc(hidden)]`, the facade `freyr` exports none of them, and they may
//! change in any release. Users save, load, export and import with `Registry::save`,
//! `Registry::load_into`, `Registry::export` and `Registry::import` (feature `persist`), whose
//! file format is the documented contract. As in hecs and bevy, what a user of the storage
//! layer gets is whole-world operations with their invariants kept, not a constructor taking
//! raw allocator slots and chunk ids, whose checks are tied to this release's layout.
//!
//! One piece is public on purpose: [`SpareSlabs`](crate::SpareSlabs) with
//! [`World::recycle_into`](crate::World::recycle_into), the slab memory a rollback's
//! `WorldSnapshot::restore_over` reuses; the facade exports it as `freyr::storage::SpareSlabs`.
//!
//! Reading: [`World::allocator_view`], [`World::component_infos`], every archetype's
//! [`slab_sizes`](crate::Archetype::slab_sizes) and [`chunk_ids`](crate::Archetype::chunk_ids),
//! its chunks' entities and columns ([`ChunkRef`](crate::ChunkRef)), and
//! [`append_entity_bits`], and every archetype's change stamps
//! ([`stamps_into`](crate::Archetype::stamps_into)): everything observable, read straight from
//! the live world (no copy of the world is taken first).
//!
//! Building: [`World::from_parts`] makes a world of decoded [`WorldParts`] after checking every
//! invariant the world relies on, so that no input, however made, can break memory safety;
//! [`World::restore_stamps`] puts a built world's change stamps back;
//! [`World::spawn_columns`] spawns entities from type-erased columns. Values arrive as
//! [`ColumnValues`]: moved out of a `Vec<T>`, or copied from bytes a caller vouches for.
//!
//! [`World`]: crate::World
//! [`World::allocator_view`]: crate::World::allocator_view
//! [`World::component_infos`]: crate::World::component_infos
//! [`World::from_parts`]: crate::World::from_parts
//! [`World::restore_stamps`]: crate::World::restore_stamps
//! [`World::spawn_columns`]: crate::World::spawn_columns

mod build;
mod check;
mod spawn;
mod stamps;
mod stream;
mod view;

use core::any::TypeId;
use core::fmt;

use crate::component::{Component, ComponentId, ComponentInfo, fresh_component_id};

pub use self::view::{AllocatorView, append_entity_bits};

/// Bytes of one entity in [`ArchetypeParts::entities`]: its [`Entity::to_bits`], little-endian.
///
/// [`Entity::to_bits`]: crate::Entity::to_bits
pub const ENTITY_BYTES: usize = 8;

/// The entity allocator and chunk-id table of a world, as plain data.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocatorParts {
    /// One slot per entity index ever handed out.
    pub slots: Vec<u32>,
    /// The free-index stack, bottom first.
    pub free: Vec<u32>,
    /// Live entity count.
    pub len: usize,
    /// Number of chunk ids ever handed out.
    pub chunk_ids: usize,
    /// Free chunk ids, in stack order.
    pub free_chunks: Vec<u32>,
}

/// Values of one column, of a type known only at run time, to be moved or copied into a world
/// (dropping it unused drops the values it owns).
pub struct ColumnValues<'a> {
    type_id: TypeId,
    len: usize,
    size: usize,
    ptr: *const u8,
    /// `Some` for values owned by a `Vec`: gives up the values (`true`: they were moved out)
    /// or drops them (`false`). `None` for borrowed plain bytes.
    finish: Option<Box<dyn FnOnce(bool) + Send>>,
    /// The bytes, for values borrowed as plain bytes.
    borrowed: Option<&'a [u8]>,
}

// SAFETY: the values are `Component`s (`Send + Sync`) owned by the `Vec` inside `finish`, or
// plain bytes borrowed shared; `ptr` only points into one of those.
unsafe impl Send for ColumnValues<'_> {}

impl ColumnValues<'static> {
    /// Takes `values`, in row order.
    ///
    /// # Examples
    /// ```
    /// use freyr_core::parts::ColumnValues;
    /// let values = ColumnValues::new(vec![1u32, 2, 3]);
    /// assert_eq!(values.len(), 3);
    /// ```
    pub fn new<T: Component>(mut values: Vec<T>) -> ColumnValues<'static> {
        let (ptr, len) = (values.as_mut_ptr(), values.len());
        ColumnValues {
            type_id: TypeId::of::<T>(),
            len,
            size: size_of::<T>(),
            ptr: ptr.cast::<u8>(),
            // Moving the `Vec` into the closure leaves its buffer (and `ptr`) where it is.
            finish: Some(Box::new(move |moved| {
                if moved {
                    // SAFETY: the values were moved out bitwise; length 0 frees the buffer
                    // without dropping them.
                    unsafe { values.set_len(0) };
                }
                drop(values);
            })),
            borrowed: None,
        }
    }
}

impl<'a> ColumnValues<'a> {
    /// `len` values of the plain-data type `T` whose bytes (in memory order, `size_of::<T>()`
    /// each, no alignment needed) are `bytes`, copied out when they enter a world; `None` if
    /// `bytes` is not `len` values long.
    ///
    /// # Safety
    /// Every `size_of::<T>()`-byte piece of `bytes` is a valid `T` (for instance, `T` is
    /// `bytemuck::Pod`).
    ///
    /// # Examples
    /// ```
    /// use freyr_core::parts::ColumnValues;
    /// let bytes = [1u8, 0, 2, 0];
    /// // SAFETY: any two bytes are a valid `u16`.
    /// let values = unsafe { ColumnValues::from_bytes::<u16>(&bytes, 2) }.unwrap();
    /// assert_eq!(values.len(), 2);
    /// // SAFETY: as above.
    /// assert!(unsafe { ColumnValues::from_bytes::<u16>(&bytes, 3) }.is_none());
    /// ```
    pub unsafe fn from_bytes<T: Component + Copy>(
        bytes: &'a [u8],
        len: usize,
    ) -> Option<ColumnValues<'a>> {
        if len.checked_mul(size_of::<T>())? != bytes.len() {
            return None;
        }
        Some(ColumnValues {
            type_id: TypeId::of::<T>(),
            len,
            size: size_of::<T>(),
            ptr: bytes.as_ptr(),
            finish: None,
            borrowed: Some(bytes),
        })
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The values' type.
    pub fn type_id(&self) -> TypeId {
        self.type_id
    }

    /// Bytes from value `first` (its values are read from there, bitwise).
    fn bytes_from(&self, first: usize) -> *const u8 {
        self.ptr.wrapping_add(first * self.size)
    }

    /// The values were copied bitwise into a world, which owns them now: frees their `Vec`
    /// without dropping them.
    fn moved_out(mut self) {
        if let Some(finish) = self.finish.take() {
            finish(true);
        }
    }
}

impl Drop for ColumnValues<'_> {
    fn drop(&mut self) {
        if let Some(finish) = self.finish.take() {
            finish(false);
        }
    }
}

/// One archetype, decoded.
pub struct ArchetypeParts<'a> {
    /// The component ids, strictly ascending.
    pub components: Vec<ComponentId>,
    /// Chunks per slab, in order (each at least 1).
    pub slabs: Vec<u32>,
    /// Global id of every allocated chunk, in order.
    pub chunk_ids: Vec<u32>,
    /// The entity of every row, [`ENTITY_BYTES`] each ([`Entity::to_bits`], little-endian).
    ///
    /// [`Entity::to_bits`]: crate::Entity::to_bits
    pub entities: &'a [u8],
    /// One per component, in the order of `components`, each one value per row.
    pub columns: Vec<ColumnValues<'a>>,
}

impl ArchetypeParts<'_> {
    /// Number of rows.
    fn len(&self) -> usize {
        self.entities.len() / ENTITY_BYTES
    }
}

/// A whole world, decoded.
pub struct WorldParts<'a> {
    /// The component table in id order; build each entry with [`component_info`].
    pub components: Vec<ComponentInfo>,
    /// The allocator.
    pub allocator: AllocatorParts,
    /// The archetypes in creation order.
    pub archetypes: Vec<ArchetypeParts<'a>>,
}

/// The [`ComponentInfo`] of `T` as component number `index` of a [`WorldParts`].
///
/// # Examples
/// ```
/// let info = freyr_core::parts::component_info::<u32>(3);
/// assert_eq!(info.id().index(), 3);
/// assert_eq!(info.type_id(), core::any::TypeId::of::<u32>());
/// ```
pub fn component_info<T: Component>(index: usize) -> ComponentInfo {
    ComponentInfo::of::<T>(fresh_component_id(index))
}

/// Decoded parts that do not form a world: which invariant fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidParts(pub &'static str);

impl fmt::Display for InvalidParts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the world's parts are inconsistent: {}", self.0)
    }
}

impl std::error::Error for InvalidParts {}
