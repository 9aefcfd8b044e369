//! Entity handles and the entity allocator.
//!
//! An [`Entity`] is a 32-bit index plus a 31-bit generation. The allocator keeps one `u32`
//! *slot* per index ever handed out (4 bytes per entity, nothing sized up front) and a stack of
//! free indices. A slot either locates its live entity's row or remembers the generation its
//! next occupant will get; see [`Entities::slots`] for the bit layout.

use core::fmt;
use core::num::NonZeroU32;

use crate::CHUNK_CAPACITY;

/// A handle to an entity: a 32-bit index plus a generation.
///
/// Handles are plain values (`Copy`, `Hash`, `Ord` by index then generation). When an entity is
/// despawned its index may be reused, but with a higher generation, so an old handle is *stale*
/// forever: every [`World`](crate::World) API that takes an `Entity` reports a stale handle as an
/// error and never touches the slot's new occupant.
///
/// `Debug` prints `index` `v` `generation`, e.g. `5v2`.
///
/// # Examples
/// ```
/// use freyr::World;
/// let mut world = World::new();
/// let e = world.spawn((1u32,));
/// assert_eq!(format!("{e:?}"), "0v1");
/// world.despawn(e).unwrap();
/// let f = world.spawn((2u32,));
/// assert_eq!(f.index(), e.index());
/// assert_eq!(f.generation(), e.generation() + 1);
/// assert!(!world.contains(e));
/// ```
// `repr(C)`: index, then generation, no padding, so on a little-endian target the bytes of a
// slice of handles are their `to_bits` words (saves copy entity columns whole).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(C)]
pub struct Entity {
    index: u32,
    generation: NonZeroU32,
}

impl Entity {
    /// The largest generation a world ever hands out (`2^31 - 1`). A slot whose generation
    /// reaches it is retired when its entity is despawned: the index is never reused.
    pub(crate) const MAX_GENERATION: u32 = 0x7FFF_FFFF;

    /// Builds a handle from its parts (`generation` must be non-zero).
    #[inline]
    pub(crate) const fn from_parts(index: u32, generation: NonZeroU32) -> Entity {
        Entity { index, generation }
    }

    /// The index: the entity's slot number, reused after a despawn.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let a = world.spawn(());
    /// let b = world.spawn(());
    /// assert_eq!((a.index(), b.index()), (0, 1));
    /// ```
    #[inline]
    pub fn index(self) -> u32 {
        self.index
    }

    /// The generation: how many times the index has been used (starting at 1).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let a = world.spawn(());
    /// assert_eq!(a.generation(), 1);
    /// ```
    #[inline]
    pub fn generation(self) -> u32 {
        self.generation.get()
    }

    /// Packs the handle into 64 bits: generation in the high half, index in the low half.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn(());
    /// assert_eq!(e.to_bits(), (1u64 << 32) | 0);
    /// assert_eq!(freyr::Entity::from_bits(e.to_bits()), Some(e));
    /// ```
    #[inline]
    pub fn to_bits(self) -> u64 {
        (u64::from(self.generation.get()) << 32) | u64::from(self.index)
    }

    /// Unpacks a handle made by [`to_bits`](Entity::to_bits); `None` when the generation half is
    /// zero (no handle has generation 0).
    ///
    /// # Examples
    /// ```
    /// use freyr::Entity;
    /// let e = Entity::from_bits((3u64 << 32) | 7).unwrap();
    /// assert_eq!((e.index(), e.generation()), (7, 3));
    /// assert_eq!(Entity::from_bits(7), None);
    /// ```
    #[inline]
    pub fn from_bits(bits: u64) -> Option<Entity> {
        Some(Entity {
            index: bits as u32,
            generation: NonZeroU32::new((bits >> 32) as u32)?,
        })
    }
}

impl fmt::Debug for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}v{}", self.index, self.generation)
    }
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Makes room on the full free stack `free` for every index of a `slots`-long slot table at
/// once: the stack never holds more, so it grows once to its bound instead of doubling (a world
/// that despawns a million entities then reallocates and copies it 20 times, and touches twice
/// the memory). Its capacity stays at most the slot table's length: 4 bytes per index.
#[cold]
#[inline(never)]
fn grow_free_stack(free: &mut Vec<u32>, slots: usize) {
    free.reserve_exact(slots.saturating_sub(free.len()).max(1));
}

/// How many entity indices a world has: every `u32`, so at most 2^32 entities are live (or
/// retired: a slot whose generation is exhausted keeps its index forever) at once.
pub(crate) const INDEX_SPACE: u64 = 1 << 32;

/// The index of a fresh slot when `allocated` slots exist (none of them free).
///
/// # Panics
/// When `allocated` is [`INDEX_SPACE`]: every index is live or retired.
#[inline]
fn fresh_index(allocated: usize) -> u32 {
    match u32::try_from(allocated) {
        Ok(index) => index,
        Err(_) => index_space_exhausted(allocated, 1),
    }
}

#[cold]
#[inline(never)]
fn index_space_exhausted(in_use: usize, more: usize) -> ! {
    panic!(
        "freyr: entity index space exhausted: {in_use} of the {INDEX_SPACE} entity indices are \
         in use (live or retired) and {more} more were asked for; despawn entities (their \
         indices are reused) or split the entities across several worlds"
    )
}

/// Row bits of a live slot (`CHUNK_CAPACITY == 1 << ROW_BITS`: 9 bits for 512 rows).
pub(crate) const ROW_BITS: u32 = CHUNK_CAPACITY.trailing_zeros();
const ROW_MASK: u32 = (1 << ROW_BITS) - 1;
/// Set in a free (or retired) slot.
pub(crate) const FREE: u32 = 1 << 31;
/// Global chunk ids must fit in the 22 bits between the FREE flag and the row.
pub(crate) const MAX_CHUNKS: usize = 1 << (31 - ROW_BITS);

const _: () = assert!(CHUNK_CAPACITY == 1 << ROW_BITS);

/// Where a live entity's row is: a global chunk id and a row inside that chunk.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Location {
    /// Global chunk id (index into the world's chunk table).
    pub(crate) chunk: u32,
    /// Row inside the chunk, `< CHUNK_CAPACITY`.
    pub(crate) row: u32,
}

impl Location {
    #[inline]
    pub(crate) fn pack(self) -> u32 {
        debug_assert!((self.chunk as usize) < MAX_CHUNKS && self.row <= ROW_MASK);
        (self.chunk << ROW_BITS) | self.row
    }
}

/// The entity allocator: slots, a LIFO free stack and the live count.
///
/// Allocation is a pure function of the sequence of allocate/free calls (the free stack is
/// LIFO), so the same operations give the same handles.
#[derive(Default)]
pub(crate) struct Entities {
    /// One slot per index ever allocated, grown lazily:
    ///
    /// ```text
    ///   31  30                              9 8          0
    ///  +---+---------------------------------+------------+
    ///  | 0 |  global chunk id (22 bits)      |  row (9)   |   live: where the row is
    ///  +---+---------------------------------+------------+
    ///  | 1 |  generation of the next occupant (31 bits)   |   free; 0 = retired
    ///  +---+----------------------------------------------+
    /// ```
    ///
    /// A live slot does not store the generation: the chunk's entity column holds the full
    /// [`Entity`] at that row, and a handle is current iff it equals that stored entity.
    /// A retired slot (generation exhausted) is never on the free stack, so it is never reused.
    slots: Vec<u32>,
    /// Free indices, most recently freed on top.
    free: Vec<u32>,
    /// Number of live entities.
    len: usize,
}

impl Entities {
    /// Number of live entities.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Reserves room for `additional` more allocations without reallocating (exactly, no
    /// doubling overshoot).
    ///
    /// # Panics
    /// If the indices in use plus those `additional` allocations would need more than
    /// [`INDEX_SPACE`] indices (before anything is allocated).
    pub(crate) fn reserve(&mut self, additional: usize) {
        let fresh = additional.saturating_sub(self.free.len());
        let in_use = self.slots.len() - self.free.len();
        if (in_use as u64).saturating_add(additional as u64) > INDEX_SPACE {
            index_space_exhausted(in_use, additional);
        }
        self.slots.reserve_exact(fresh);
    }

    /// The location stored in `entity`'s slot, or `None` if the slot is free or out of range.
    /// The caller must still compare `entity` with the one stored at that row (the generation
    /// check).
    #[inline]
    pub(crate) fn location(&self, entity: Entity) -> Option<Location> {
        let slot = *self.slots.get(entity.index as usize)?;
        if slot & FREE != 0 {
            return None;
        }
        Some(Location {
            chunk: slot >> ROW_BITS,
            row: slot & ROW_MASK,
        })
    }

    /// Allocates a handle whose row is at `location`.
    ///
    /// # Panics
    /// If all [`INDEX_SPACE`] indices are in use (live or retired), with the message of
    /// [`fresh_index`].
    #[inline]
    pub(crate) fn alloc(&mut self, location: Location) -> Entity {
        let packed = location.pack();
        let entity = if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            let generation = *slot & !FREE;
            *slot = packed;
            // Free-stack slots always hold a non-zero generation (retired ones are never pushed).
            let generation = NonZeroU32::new(generation).expect("free slot with generation 0");
            Entity::from_parts(index, generation)
        } else {
            let index = fresh_index(self.slots.len());
            self.slots.push(packed);
            Entity::from_parts(index, NonZeroU32::MIN)
        };
        self.len += 1;
        entity
    }

    /// Points a live entity's slot at its new row. Unchecked: every row move calls it once or
    /// twice, always for an entity it just found or moved.
    ///
    /// # Safety
    /// `entity` holds an index this allocator handed out (a live entity's, for instance).
    #[inline]
    pub(crate) unsafe fn set_location(&mut self, entity: Entity, location: Location) {
        debug_assert!((entity.index as usize) < self.slots.len());
        // SAFETY: an index handed out has a slot, and slots are never removed (caller contract).
        *unsafe { self.slots.get_unchecked_mut(entity.index as usize) } = location.pack();
    }

    /// Frees a live entity's slot: the next occupant gets the next generation, or the slot is
    /// retired when the generation is exhausted.
    #[inline]
    pub(crate) fn free(&mut self, entity: Entity) {
        let generation = entity.generation.get();
        let slot = &mut self.slots[entity.index as usize];
        if generation < Entity::MAX_GENERATION {
            *slot = FREE | (generation + 1);
            if self.free.len() == self.free.capacity() {
                grow_free_stack(&mut self.free, self.slots.len());
            }
            self.free.push(entity.index);
        } else {
            *slot = FREE;
        }
        self.len -= 1;
    }

    /// The allocator's whole state: slots, free stack (bottom first) and live count (for
    /// snapshots; see `crate::snapshot`).
    pub(crate) fn parts(&self) -> (&[u32], &[u32], usize) {
        (&self.slots, &self.free, self.len)
    }

    /// Overwrites the allocator with a state read by [`parts`](Entities::parts), reusing this
    /// allocator's buffers: the same operations then hand out the same handles.
    pub(crate) fn set_parts(&mut self, slots: &[u32], free: &[u32], len: usize) {
        self.slots.clear();
        self.slots.extend_from_slice(slots);
        self.free.clear();
        self.free.extend_from_slice(free);
        self.len = len;
    }

    /// An allocator holding a state read by [`parts`](Entities::parts) (checked by the
    /// caller), taking the vectors as they are.
    pub(crate) fn from_parts(slots: Vec<u32>, free: Vec<u32>, len: usize) -> Entities {
        Entities { slots, free, len }
    }

    /// Number of indices ever allocated (the slot table length).
    #[cfg(test)]
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Test hook: pretend `index`'s next generation is `generation` (the slot must be free).
    #[cfg(test)]
    pub(crate) fn force_free_generation(&mut self, index: u32, generation: u32) {
        assert!(self.slots[index as usize] & FREE != 0);
        self.slots[index as usize] = FREE | generation;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(row: u32) -> Location {
        Location { chunk: 3, row }
    }

    #[test]
    fn slot_packs_chunk_and_row() {
        let mut entities = Entities::default();
        let e = entities.alloc(Location {
            chunk: (MAX_CHUNKS - 1) as u32,
            row: CHUNK_CAPACITY as u32 - 1,
        });
        assert_eq!(
            entities.location(e),
            Some(Location {
                chunk: (MAX_CHUNKS - 1) as u32,
                row: CHUNK_CAPACITY as u32 - 1
            })
        );
    }

    #[test]
    fn free_indices_are_reused_lifo_with_bumped_generation() {
        let mut entities = Entities::default();
        let a = entities.alloc(loc(0));
        let b = entities.alloc(loc(1));
        entities.free(a);
        entities.free(b);
        assert_eq!(entities.location(a), None);
        let c = entities.alloc(loc(2));
        let d = entities.alloc(loc(3));
        assert_eq!((c.index(), c.generation()), (b.index(), 2));
        assert_eq!((d.index(), d.generation()), (a.index(), 2));
        assert_eq!(entities.len(), 2);
        assert_eq!(entities.slot_count(), 2);
    }

    #[test]
    fn exhausted_generation_retires_the_slot() {
        let mut entities = Entities::default();
        let a = entities.alloc(loc(0));
        entities.free(a);
        entities.force_free_generation(a.index(), Entity::MAX_GENERATION);
        let b = entities.alloc(loc(0));
        assert_eq!(b.generation(), Entity::MAX_GENERATION);
        entities.free(b);
        let c = entities.alloc(loc(0));
        assert_ne!(c.index(), a.index(), "retired slot must not be reused");
        assert_eq!(entities.location(b), None);
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn the_last_index_is_handed_out() {
        assert_eq!(fresh_index(0), 0);
        assert_eq!(fresh_index(INDEX_SPACE as usize - 1), u32::MAX);
    }

    // The allocator's counter is the slot table's length; a table of 2^32 slots (16 GiB) is
    // out of reach of a test, so the counter is passed to the check that `alloc` runs.
    #[test]
    #[cfg(target_pointer_width = "64")]
    #[should_panic(expected = "freyr: entity index space exhausted: 4294967296 of the \
                               4294967296 entity indices are in use (live or retired) and 1 \
                               more were asked for; despawn entities")]
    fn allocating_past_the_index_space_panics_with_what_to_do() {
        fresh_index(INDEX_SPACE as usize);
    }

    #[test]
    #[should_panic(
        expected = "freyr: entity index space exhausted: 1 of the 4294967296 entity \
                               indices are in use"
    )]
    fn reserving_past_the_index_space_panics_before_allocating() {
        let mut entities = Entities::default();
        entities.alloc(loc(0));
        let b = entities.alloc(loc(1));
        entities.free(b);
        // The free index does not count as in use.
        entities.reserve(usize::MAX);
    }

    #[test]
    fn bits_round_trip_and_debug() {
        let e = Entity::from_parts(5, NonZeroU32::new(2).unwrap());
        assert_eq!(format!("{e:?}"), "5v2");
        assert_eq!(Entity::from_bits(e.to_bits()), Some(e));
        assert!(Entity::from_parts(1, NonZeroU32::MIN) < Entity::from_parts(2, NonZeroU32::MIN));
    }
}
