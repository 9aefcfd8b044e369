//! Reading a live world the way a save records it: the allocator, the component table, every
//! archetype's slabs and chunk ids, and the entities' bits.

use crate::archetype::Archetype;
use crate::component::ComponentInfo;
use crate::entity::Entity;
use crate::world::World;

/// The entity allocator and chunk-id table of a world, borrowed (see [`AllocatorParts`]).
///
/// [`AllocatorParts`]: super::AllocatorParts
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AllocatorView<'w> {
    /// One slot per entity index ever handed out.
    pub slots: &'w [u32],
    /// The free-index stack, bottom first.
    pub free: &'w [u32],
    /// Live entity count.
    pub len: usize,
    /// Number of chunk ids ever handed out.
    pub chunk_ids: usize,
    /// Free chunk ids, in stack order.
    pub free_chunks: &'w [u32],
}

impl World {
    /// The entity allocator and chunk-id table, as a save records them.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let a = world.spawn((1u8,));
    /// world.despawn(a).unwrap();
    /// let view = world.allocator_view();
    /// assert_eq!((view.slots.len(), view.free, view.len), (1, &[0][..], 0));
    /// ```
    #[doc(hidden)]
    pub fn allocator_view(&self) -> AllocatorView<'_> {
        let (slots, free, len) = self.entities.parts();
        let (chunk_ids, free_chunks) = self.chunks.parts();
        AllocatorView {
            slots,
            free,
            len,
            chunk_ids,
            free_chunks,
        }
    }

    /// The component table, in id order.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn((1u8, 2u16));
    /// assert_eq!(world.component_infos().len(), 2);
    /// assert_eq!(world.component_infos()[1].name(), "u16");
    /// ```
    pub fn component_infos(&self) -> &[ComponentInfo] {
        self.components.infos()
    }
}

impl Archetype {
    /// Chunks per slab allocation, in order (spare chunks included): with
    /// [`chunk_ids`](Archetype::chunk_ids), what a save records so that a loaded world has the
    /// same chunks.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn_batch((0..600u32).map(|i| (i,)));
    /// let archetype = world.archetypes().iter().find(|a| a.len() == 600).unwrap();
    /// assert_eq!(archetype.slab_sizes().sum::<u32>(), 2);
    /// ```
    #[doc(hidden)]
    pub fn slab_sizes(&self) -> impl ExactSizeIterator<Item = u32> + '_ {
        self.rows.chunks.slab_sizes().map(|k| k as u32)
    }

    /// The global id of every allocated chunk, in order (spare chunks included).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn((1u32,));
    /// let archetype = world.archetypes().iter().find(|a| a.len() == 1).unwrap();
    /// assert_eq!(archetype.chunk_ids().collect::<Vec<_>>(), [0]);
    /// ```
    #[doc(hidden)]
    pub fn chunk_ids(&self) -> impl ExactSizeIterator<Item = u32> + '_ {
        self.rows.chunks.list.iter().map(|c| c.id)
    }
}

/// Appends each entity's [`Entity::to_bits`], little-endian, in order ([`ENTITY_BYTES`] each):
/// the encoding of [`ArchetypeParts::entities`]. On a little-endian target this is one copy.
///
/// [`ENTITY_BYTES`]: super::ENTITY_BYTES
/// [`ArchetypeParts::entities`]: super::ArchetypeParts::entities
///
/// # Examples
/// ```
/// let mut world = freyr::World::new();
/// let e = world.spawn(());
/// let mut out = Vec::new();
/// freyr_core::parts::append_entity_bits(&[e], &mut out);
/// assert_eq!(out, e.to_bits().to_le_bytes());
/// ```
pub fn append_entity_bits(entities: &[Entity], out: &mut Vec<u8>) {
    #[cfg(target_endian = "little")]
    {
        let len = size_of_val(entities);
        // SAFETY: `Entity` is `repr(C)` of two `u32`s (index, then generation) with no
        // padding, so its bytes are initialised; on a little-endian target they are exactly
        // `to_bits().to_le_bytes()` (index in the low half). The slice is borrowed for the
        // read.
        let bytes = unsafe { core::slice::from_raw_parts(entities.as_ptr().cast::<u8>(), len) };
        out.extend_from_slice(bytes);
    }
    #[cfg(not(target_endian = "little"))]
    for e in entities {
        out.extend_from_slice(&e.to_bits().to_le_bytes());
    }
}
