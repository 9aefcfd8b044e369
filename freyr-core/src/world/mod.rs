//! The [`World`]: entities, the component registry, archetypes and the structural operations.
//!
//! Layout of this folder (each file imports only from the ones before it, and from the
//! storage files below `world`):
//!
//! - `row_move.rs`: moving one row between archetypes along a cached edge (claim the target
//!   row, copy the shared columns, vacate the source row even if a `Drop` panics), and
//!   building an edge's column mappings;
//! - `mod.rs`: the `World` type, lookups, bundle and edge caches, component access;
//! - `spawn.rs`: `spawn`, `spawn_batch`, `reserve`;
//! - `change.rs`: `despawn`, `insert`, `remove`;
//! - `change_tick.rs`: the change tick those operations stamp.

mod change;
mod change_tick;
mod parts;
mod row_move;
mod spawn;

use core::any::TypeId;

use hashbrown::HashMap;

use crate::CHUNK_CAPACITY;
use crate::archetype::{Archetype, ArchetypeId, Rows};
use crate::bundle::{Bundle, check_distinct};
use crate::chunk::ChunkTable;
use crate::component::{Component, ComponentId, ComponentInfo, Components, TypeIdMap};
use crate::edges::{Hop, InsertEdge, RemoveEdge, difference, union};
use crate::entity::{Entities, Entity};
use crate::error::ComponentError;
use crate::world_id::WorldId;

use self::row_move::Found;

/// What a world caches per bundle type: its component ids and where `spawn` puts each element.
struct BundleInfo {
    /// Component ids in tuple order.
    ids: Box<[ComponentId]>,
    /// The archetype with exactly these components.
    archetype: ArchetypeId,
    /// Per tuple position: (column offset in the one-chunk layout, value size) in that
    /// archetype.
    slots: Box<[(usize, usize)]>,
}

/// The container of all entities and their components.
///
/// Entities with the same set of component types share an [`Archetype`], whose rows are stored
/// in chunks of [`CHUNK_CAPACITY`] entities in structure-of-arrays columns. Structural
/// operations (`spawn`, `insert`, `remove`, `despawn`) move rows between archetypes; every
/// operation on a stale handle returns an error and changes nothing.
///
/// Entity ids are a pure function of the sequence of operations (freed indices are reused in
/// LIFO order), so replaying the same operations gives the same ids.
///
/// # Capacity limits
///
/// A world's ids have fixed widths. An operation that would pass a limit panics before it
/// changes any entity, with a message that names the limit, the count and what to do (e.g.
/// `freyr: chunk limit reached: a world holds at most 4194304 chunks of 512 rows ...; despawn
/// entities, reserve less, or split the entities across several worlds`); the world stays
/// valid.
///
/// | Limit | At most, per world | Reached by |
/// |---|---|---|
/// | chunks | 2^22 chunks of [`CHUNK_CAPACITY`] rows at once: 2^31 rows over all archetypes, fewer as each archetype keeps its partly filled and reserved chunks | [`spawn`](World::spawn), [`spawn_batch`](World::spawn_batch), [`reserve`](World::reserve), [`insert`](World::insert), [`remove`](World::remove) |
/// | entity indices | 2^32 (every `u32`), live or retired (an index whose generation is exhausted is never reused) | [`spawn`](World::spawn), [`spawn_batch`](World::spawn_batch), [`reserve`](World::reserve) |
/// | archetypes | 2^32 − 1 distinct component sets | the first `spawn`, `spawn_batch`, `reserve`, `insert` or `remove` that makes a new set |
/// | archetype edges | 2^32 insert edges and 2^32 remove edges (one per archetype and bundle type inserted into or removed from it) | [`insert`](World::insert), [`remove`](World::remove) |
/// | component types | 2^32 | [`register`](World::register) and the first use of a type |
///
/// [`CommandBuffer::apply`](crate::CommandBuffer::apply) reaches them as the operations it
/// applies do. In practice the chunk limit is the only one a program reaches: 2^31 rows take
/// 16 GiB for the entity handles alone, and the others need billions of distinct types,
/// component sets or bundle types.
///
/// # Examples
/// ```
/// use freyr::World;
/// let mut world = World::new();
/// let e = world.spawn((1u32, "name"));
/// world.insert(e, (2.5f32,)).unwrap();
/// *world.get_mut::<u32>(e).unwrap() += 1;
/// assert_eq!(*world.get::<u32>(e).unwrap(), 2);
/// assert_eq!(world.remove::<(f32,)>(e).unwrap(), (2.5,));
/// world.despawn(e).unwrap();
/// assert!(world.is_empty());
/// ```
pub struct World {
    /// This world's identity; see [`World::id`].
    id: WorldId,
    pub(crate) entities: Entities,
    pub(crate) components: Components,
    pub(crate) archetypes: Vec<Archetype>,
    archetype_index: HashMap<Box<[ComponentId]>, ArchetypeId>,
    pub(crate) chunks: ChunkTable,
    bundles: TypeIdMap<BundleInfo>,
    insert_edges: Vec<InsertEdge>,
    remove_edges: Vec<RemoveEdge>,
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

impl core::fmt::Debug for World {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("World")
            .field("len", &self.len())
            .field("archetypes", &self.archetypes.len())
            .field("components", &self.components.len())
            .finish()
    }
}

impl World {
    /// An empty world.
    ///
    /// # Panics
    /// If 2^64 − 1 worlds were already created in this process (the [`WorldId`] counter is
    /// exhausted; never in practice).
    ///
    /// # Examples
    /// ```
    /// let world = freyr::World::new();
    /// assert!(world.is_empty());
    /// assert_eq!(world.archetypes().len(), 1); // the empty archetype
    /// ```
    pub fn new() -> World {
        let mut world = World {
            id: WorldId::fresh(),
            entities: Entities::default(),
            components: Components::default(),
            archetypes: Vec::new(),
            archetype_index: HashMap::new(),
            chunks: ChunkTable::default(),
            bundles: TypeIdMap::default(),
            insert_edges: Vec::new(),
            remove_edges: Vec::new(),
        };
        let empty = world.archetype_for(&[]);
        debug_assert_eq!(empty, ArchetypeId::EMPTY);
        world
    }

    /// This world's identity, distinct from every other world of the process (see
    /// [`WorldId`]). Caches built from a world check it before use.
    ///
    /// # Examples
    /// ```
    /// let a = freyr::World::new();
    /// let b = freyr::World::new();
    /// assert_ne!(a.id(), b.id());
    /// ```
    #[inline]
    pub fn id(&self) -> WorldId {
        self.id
    }

    /// Registers `T` (if new) and returns its id. Components are also registered on first use;
    /// calling this first fixes the id order.
    ///
    /// # Panics
    /// If the world already has 2^32 component types (a [capacity limit](World#capacity-limits)).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let id = world.register::<u64>();
    /// assert_eq!(world.register::<u64>(), id);
    /// assert_eq!(world.component_id::<u64>(), Some(id));
    /// ```
    pub fn register<T: Component>(&mut self) -> ComponentId {
        self.components.register::<T>()
    }

    /// The id of `T` if it has been registered (explicitly or by use).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// assert_eq!(world.component_id::<u8>(), None);
    /// world.spawn((1u8,));
    /// assert!(world.component_id::<u8>().is_some());
    /// ```
    pub fn component_id<T: Component>(&self) -> Option<ComponentId> {
        self.components.id_of(TypeId::of::<T>())
    }

    /// What the world knows about component `id`.
    ///
    /// # Panics
    /// If `id` was not registered in this world.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let id = world.register::<u32>();
    /// assert_eq!(world.component_info(id).name(), "u32");
    /// ```
    pub fn component_info(&self, id: ComponentId) -> &ComponentInfo {
        self.components.info(id)
    }

    /// Number of live entities.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn(());
    /// assert_eq!(world.len(), 1);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether there are no live entities.
    ///
    /// # Examples
    /// ```
    /// assert!(freyr::World::new().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All archetypes; index `i` has `ArchetypeId` `i`. New archetypes are only ever appended.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.spawn((1u8,));
    /// assert_eq!(world.archetypes().len(), 2);
    /// assert_eq!(world.archetypes()[1].len(), 1);
    /// ```
    #[inline]
    pub fn archetypes(&self) -> &[Archetype] {
        &self.archetypes
    }

    /// The archetype with id `id`.
    ///
    /// # Panics
    /// If `id` is not an archetype of this world.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// let (id, _, _) = world.entity_location(e).unwrap();
    /// assert_eq!(world.archetype(id).len(), 1);
    /// ```
    #[inline]
    pub fn archetype(&self, id: ArchetypeId) -> &Archetype {
        &self.archetypes[id.index()]
    }

    /// Whether `entity` is alive in this world.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn(());
    /// assert!(world.contains(e));
    /// world.despawn(e).unwrap();
    /// assert!(!world.contains(e));
    /// ```
    #[inline]
    pub fn contains(&self, entity: Entity) -> bool {
        self.find(entity).is_some()
    }

    /// Where `entity`'s row is: (archetype, chunk index, row in chunk); `None` if stale.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let a = world.spawn((1u8,));
    /// let b = world.spawn((2u8,));
    /// let (arch, chunk, row) = world.entity_location(b).unwrap();
    /// assert_eq!((chunk, row), (0, 1));
    /// assert_eq!(world.archetype(arch).chunk(chunk).entities()[row], b);
    /// world.despawn(a).unwrap();
    /// assert_eq!(world.entity_location(b), Some((arch, 0, 0))); // moved into the hole
    /// assert_eq!(world.entity_location(a), None);
    /// ```
    pub fn entity_location(&self, entity: Entity) -> Option<(ArchetypeId, usize, usize)> {
        self.find(entity)
            .map(|f| (ArchetypeId(f.archetype as u32), f.chunk, f.row))
    }

    /// Locates a live entity's row, checking the generation against the chunk's entity column.
    #[inline]
    fn find(&self, entity: Entity) -> Option<Found> {
        let location = self.entities.location(entity)?;
        // SAFETY: a live slot holds the id of the live chunk its row is in (world invariant:
        // every live entity's slot is updated whenever its row moves).
        let entry = unsafe { self.chunks.get(location.chunk) };
        let archetype = entry.archetype as usize;
        let chunk = entry.index as usize;
        let row = location.row as usize;
        let window = entry.window;
        // SAFETY: a live slot locates an initialised row of an existing chunk (world invariant:
        // every live entity's slot is updated whenever its row moves).
        let stored = unsafe { Rows::read_entity(window, row) };
        (stored == entity).then_some(Found {
            archetype,
            chunk,
            chunk_id: location.chunk,
            row,
            window,
        })
    }

    /// Finds or creates the archetype with the sorted component set `ids`.
    pub(crate) fn archetype_for(&mut self, ids: &[ComponentId]) -> ArchetypeId {
        if let Some(&id) = self.archetype_index.get(ids) {
            return id;
        }
        let id = ArchetypeId::fresh(self.archetypes.len());
        let ids: Box<[ComponentId]> = ids.into();
        self.archetypes
            .push(Archetype::new(id, ids.clone(), &self.components));
        self.archetype_index.insert(ids, id);
        id
    }

    /// Registers bundle type `B`: checks for repeated types (panicking before any change), then
    /// registers its components and its spawn archetype.
    #[cold]
    fn init_bundle<B: Bundle>(&mut self) {
        check_distinct::<B>();
        let mut ids = Vec::with_capacity(B::LEN);
        B::register(&mut self.components, &mut ids);
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        let archetype = self.archetype_for(&sorted);
        let arch = &self.archetypes[archetype.index()];
        let slots = ids
            .iter()
            .map(|&id| {
                let column =
                    &arch.rows.columns[arch.column_index(id).expect("bundle archetype has it")];
                (column.offset, column.size)
            })
            .collect();
        let info = BundleInfo {
            ids: ids.into(),
            archetype,
            slots,
        };
        self.bundles.insert(TypeId::of::<B>(), info);
    }

    /// The component ids of bundle `B` in tuple order, registering it if new.
    fn bundle_ids<B: Bundle>(&mut self) -> Box<[ComponentId]> {
        if !self.bundles.contains_key(&TypeId::of::<B>()) {
            self.init_bundle::<B>();
        }
        self.bundles[&TypeId::of::<B>()].ids.clone()
    }

    /// Builds and caches the edge for inserting `B` into archetype `source`.
    #[cold]
    #[inline(never)]
    fn init_insert_edge<B: Bundle>(&mut self, source: usize) -> Hop {
        let ids = self.bundle_ids::<B>();
        let set = union(self.archetypes[source].components(), &ids);
        let target = self.archetype_for(&set);
        let edge = InsertEdge::new(
            &self.archetypes[source],
            &self.archetypes[target.index()],
            &ids,
        );
        let hop = Hop::new(self.insert_edges.len(), target.0);
        self.insert_edges.push(edge);
        self.archetypes[source]
            .insert_edges
            .insert(TypeId::of::<B>(), hop);
        hop
    }

    /// Builds and caches the edge for removing `B` from archetype `source`.
    #[cold]
    #[inline(never)]
    fn init_remove_edge<B: Bundle>(&mut self, source: usize) -> Hop {
        let ids = self.bundle_ids::<B>();
        let src = &self.archetypes[source];
        let (edge, target) = match ids.iter().position(|&c| !src.has(c)) {
            Some(missing) => (
                RemoveEdge::missing(self.components.info(ids[missing]).name()),
                Hop::MISSING,
            ),
            None => {
                let set = difference(src.components(), &ids);
                let target = self.archetype_for(&set);
                let edge = RemoveEdge::new(
                    &self.archetypes[source],
                    &self.archetypes[target.index()],
                    &ids,
                );
                (edge, target.0)
            }
        };
        let hop = Hop::new(self.remove_edges.len(), target);
        self.remove_edges.push(edge);
        self.archetypes[source]
            .remove_edges
            .insert(TypeId::of::<B>(), hop);
        hop
    }

    /// Pointer to `entity`'s `T`, or the reason there is none.
    #[inline]
    fn component_ptr<T: Component>(&self, entity: Entity) -> Result<*mut T, ComponentError> {
        self.component_slot::<T>(entity).map(|(ptr, _, _)| ptr)
    }

    /// Pointer to `entity`'s `T` with the entity's location and `T`'s column index in its
    /// archetype (what stamping a write needs), or the reason there is none.
    #[inline]
    fn component_slot<T: Component>(
        &self,
        entity: Entity,
    ) -> Result<(*mut T, Found, usize), ComponentError> {
        let found = self
            .find(entity)
            .ok_or(ComponentError::NoSuchEntity(entity))?;
        let missing = ComponentError::MissingComponent {
            entity,
            component: core::any::type_name::<T>(),
        };
        let id = self.components.id_of(TypeId::of::<T>()).ok_or(missing)?;
        let archetype = &self.archetypes[found.archetype];
        let column = archetype.column_index(id).ok_or(missing)?;
        let ptr = archetype
            .rows
            .slot(found.window, column, found.row)
            .cast::<T>();
        Ok((ptr, found, column))
    }

    /// A shared reference to `entity`'s component `T`.
    ///
    /// # Errors
    /// [`ComponentError::NoSuchEntity`] for a stale handle, [`ComponentError::MissingComponent`]
    /// if the entity has no `T`.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// assert_eq!(world.get::<u8>(e), Ok(&1));
    /// assert!(world.get::<u16>(e).is_err());
    /// ```
    pub fn get<T: Component>(&self, entity: Entity) -> Result<&T, ComponentError> {
        let ptr = self.component_ptr::<T>(entity)?;
        // SAFETY: the pointer is the entity's live, aligned `T` (column type checked through
        // its component id); `&self` keeps the world unmodified for the reference's lifetime.
        Ok(unsafe { &*ptr })
    }

    /// A mutable reference to `entity`'s component `T`.
    ///
    /// # Errors
    /// As [`get`](World::get).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// *world.get_mut::<u8>(e).unwrap() = 9;
    /// assert_eq!(world.get::<u8>(e), Ok(&9));
    /// ```
    pub fn get_mut<T: Component>(&mut self, entity: Entity) -> Result<&mut T, ComponentError> {
        let (ptr, found, column) = self.component_slot::<T>(entity)?;
        self.archetypes[found.archetype].rows.ticks.set_changed(
            found.chunk,
            column,
            self.chunks.tick,
        );
        // SAFETY: as in `get`; `&mut self` makes the reference exclusive, and the pointer has the
        // chunk allocation's provenance (it was never derived from a shared reference).
        Ok(unsafe { &mut *ptr })
    }

    /// Despawns every entity, dropping all components. Archetypes and registrations stay;
    /// chunks are freed; every old handle becomes stale.
    ///
    /// If a component's `Drop` panics, the archetype being cleared is still emptied (its other
    /// values dropped) and the panic continues; archetypes not yet reached keep their entities.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// world.clear();
    /// assert!(world.is_empty());
    /// assert!(!world.contains(e));
    /// ```
    pub fn clear(&mut self) {
        for archetype in &mut self.archetypes {
            let rows = &mut archetype.rows;
            let len = rows.len;
            for chunk in 0..rows.len.div_ceil(CHUNK_CAPACITY) {
                let window = rows.window(chunk);
                for row in 0..rows.chunk_len(chunk) {
                    // SAFETY: `row` is an initialised row of chunk `chunk`.
                    self.entities
                        .free(unsafe { Rows::read_entity(window, row) });
                }
            }
            rows.len = 0;
            rows.drop_values(0, len);
            rows.trim(&mut self.chunks, 0);
        }
    }

    /// Test support: checks every structural invariant, panicking on the first violation.
    ///
    /// Checked: per archetype, all chunks but the last non-empty one are full, the slabs tile
    /// the chunks, chunk-table entries point back at their chunks, every stored entity's slot
    /// locates its row; the
    /// world length is the sum of archetype lengths.
    ///
    /// Exists only with the `test-support` feature, which the workspace's test builds turn on;
    /// not part of the API.
    #[cfg(any(test, feature = "test-support"))]
    #[doc(hidden)]
    pub fn check_invariants(&self) {
        let mut total = 0;
        for (a, archetype) in self.archetypes.iter().enumerate() {
            let rows = &archetype.rows;
            total += rows.len;
            assert!(rows.chunks.list.len() >= archetype.chunk_count());
            // Row moves stamp arrivals in any listed chunk without a bounds check.
            assert!(rows.ticks.ensured_chunks() >= rows.chunks.list.len());
            let column_ids = rows.columns.iter().map(|c| c.id);
            assert!(column_ids.eq(archetype.components().iter().copied()));
            rows.chunks.check();
            for (index, chunk) in rows.chunks.list.iter().enumerate() {
                // SAFETY: an archetype's chunk list holds ids its chunk table handed out.
                let entry = unsafe { self.chunks.get(chunk.id) };
                assert_eq!((entry.archetype as usize, entry.index as usize), (a, index));
                assert_eq!(entry.window, chunk.window);
            }
            for (index, chunk) in archetype.chunks().enumerate() {
                if index + 1 < archetype.chunk_count() {
                    assert_eq!(chunk.len(), CHUNK_CAPACITY, "non-last chunk not full");
                }
                for (row, &entity) in chunk.entities().iter().enumerate() {
                    assert_eq!(
                        self.entity_location(entity),
                        Some((archetype.id(), index, row)),
                        "slot of {entity:?} does not locate its row"
                    );
                }
            }
        }
        assert_eq!(total, self.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn the_last_archetype_id_stays_below_the_missing_target() {
        assert_eq!(ArchetypeId::fresh(0), ArchetypeId::EMPTY);
        let last = ArchetypeId::fresh(ArchetypeId::LIMIT - 1);
        assert!(last.0 < Hop::MISSING);
    }

    // 2^32 - 1 archetypes (distinct component sets) are out of reach of a test, so the
    // archetype count is passed to the check that creating an archetype runs.
    #[test]
    #[should_panic(
        expected = "freyr: archetype limit reached: a world holds at most 4294967295 \
                               archetypes (distinct component sets) and 4294967295 exist; use \
                               fewer distinct component combinations"
    )]
    fn an_archetype_past_the_limit_panics_with_what_to_do() {
        ArchetypeId::fresh(ArchetypeId::LIMIT);
    }

    #[test]
    fn storage_types_are_send_and_sync() {
        assert_send_sync::<World>();
        assert_send_sync::<Archetype>();
        assert_send_sync::<crate::ChunkRef<'static>>();
        assert_send_sync::<crate::CommandBuffer>();
    }
}
