//! Spawning from type-erased columns ([`World::spawn_columns`]), the archetype of a component
//! set ([`World::archetype_with`]) and the ids the next spawns will get
//! ([`World::next_spawn_ids`]): what an import of an entity subset needs.

use core::mem::ManuallyDrop;
use core::num::NonZeroU32;

use crate::CHUNK_CAPACITY;
use crate::archetype::{ArchetypeId, Rows};
use crate::component::ComponentId;
use crate::entity::{Entity, FREE, Location};
use crate::world::World;

use super::ColumnValues;

impl World {
    /// The ids the next `count` spawns will get, in order (a batch spawn of `count` entities
    /// gets exactly these): freed indices first, most recently freed first, with their next
    /// generation, then fresh indices. Reads only.
    ///
    /// # Panics
    /// If the entity index space (2^32 indices) cannot hold `count` more fresh indices.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let a = world.spawn(());
    /// world.despawn(a).unwrap();
    /// let next = world.next_spawn_ids(2);
    /// assert_eq!(world.spawn_batch((0..2).map(|_| ())), next);
    /// ```
    pub fn next_spawn_ids(&self, count: usize) -> Vec<Entity> {
        let (slots, free, _) = self.entities.parts();
        let reused = free.iter().rev().take(count).map(|&index| {
            let generation = NonZeroU32::new(slots[index as usize] & !FREE)
                .expect("free-stack slots hold a non-zero generation");
            Entity::from_parts(index, generation)
        });
        let fresh = count.saturating_sub(free.len());
        let end = u32::try_from(slots.len() + fresh).unwrap_or_else(|_| {
            panic!(
                "freyr: entity index space exhausted: {} indices are allocated and {fresh} \
                 fresh ones were asked for; despawn entities so their indices are reused",
                slots.len()
            )
        });
        let fresh =
            (slots.len() as u32..end).map(|index| Entity::from_parts(index, NonZeroU32::MIN));
        reused.chain(fresh).collect()
    }

    /// The archetype of exactly the components `ids` (any order), created (empty) if the world
    /// has none yet: archetypes are iterated in creation order, so a caller can give a batch
    /// of archetypes the order another sequence of operations would have created them in.
    ///
    /// # Panics
    /// If an id is not registered in this world or repeats, or a new archetype passes the
    /// archetype limit (see [capacity limits](World#capacity-limits)).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let (a, b) = (world.register::<u8>(), world.register::<u16>());
    /// let ab = world.archetype_with(&[b, a]);
    /// let e = world.spawn((1u8, 2u16));
    /// assert_eq!(world.entity_location(e).unwrap().0, ab);
    /// ```
    pub fn archetype_with(&mut self, ids: &[ComponentId]) -> ArchetypeId {
        let mut sorted = ids.to_vec();
        sorted.sort_unstable();
        for (i, id) in sorted.iter().enumerate() {
            assert!(
                id.index() < self.components.len(),
                "freyr: archetype_with: component {} is not registered in this world; \
                 register its type first",
                id.index()
            );
            assert!(
                i == 0 || sorted[i - 1] != *id,
                "freyr: archetype_with: component {} is listed twice; list each once",
                id.index()
            );
        }
        self.archetype_for(&sorted)
    }

    /// Spawns `count` entities with one value of each column, row `i` of every column going
    /// to the `i`-th entity; returns their ids, which are
    /// [`next_spawn_ids`](World::next_spawn_ids)`(count)`. The values are moved (or copied,
    /// for borrowed bytes) into the archetype of the columns' component set, as a batch spawn
    /// of a bundle of those types would place them; the same change ticks are stamped.
    ///
    /// # Panics
    /// Before anything changes: if a component id is not registered in this world, repeats,
    /// or its values are of another type, or if a column does not hold `count` values. If a
    /// capacity limit would be passed (see [capacity limits](World#capacity-limits)), before
    /// any entity or chunk is allocated (the set's archetype may have been created, empty).
    /// The values are dropped with the panic.
    ///
    /// # Examples
    /// ```
    /// use freyr_core::parts::ColumnValues;
    /// let mut world = freyr::World::new();
    /// let (a, b) = (world.register::<u32>(), world.register::<String>());
    /// let ids = world.spawn_columns(
    ///     2,
    ///     vec![
    ///         (b, ColumnValues::new(vec![String::from("x"), String::from("y")])),
    ///         (a, ColumnValues::new(vec![1u32, 2])),
    ///     ],
    /// );
    /// assert_eq!(world.get::<String>(ids[1]).unwrap(), "y");
    /// assert_eq!(world.get::<u32>(ids[0]), Ok(&1));
    /// ```
    #[doc(hidden)]
    pub fn spawn_columns(
        &mut self,
        count: usize,
        mut columns: Vec<(ComponentId, ColumnValues<'_>)>,
    ) -> Vec<Entity> {
        let ids: Vec<ComponentId> = columns.iter().map(|&(id, _)| id).collect();
        for (id, values) in &columns {
            let registered = id.index() < self.components.len();
            assert!(
                registered && self.components.info(*id).type_id() == values.type_id,
                "freyr: spawn_columns: component {} is not registered in this world with the \
                 type of its values",
                id.index()
            );
            assert!(
                values.len == count,
                "freyr: spawn_columns: a column holds {} values for {count} entities; give each \
                 column one value per entity",
                values.len
            );
        }
        let archetype = self.archetype_with(&ids);
        let World {
            archetypes,
            entities,
            chunks,
            ..
        } = self;
        let target = &mut archetypes[archetype.index()];
        let positions: Vec<usize> = ids
            .iter()
            .map(|&id| {
                target
                    .column_index(id)
                    .expect("the archetype of the set has it")
            })
            .collect();
        let rows = &mut target.rows;
        // Limits first, as in `spawn_batch`: nothing below panics.
        rows.reserve(archetype, chunks, count);
        entities.reserve(count);
        // The owners give the values up before the rows holding them are counted: were
        // anything below to panic, the values would leak, never be dropped twice.
        let owners = ManuallyDrop::new(
            columns
                .iter_mut()
                .map(|(_, values)| values.finish.take())
                .collect::<Vec<_>>(),
        );
        let mut spawned = Vec::with_capacity(count);
        while spawned.len() < count {
            let done = spawned.len();
            let (chunk, row) = rows.prepare_push(archetype, chunks);
            let window = rows.window(chunk);
            let chunk_id = rows.chunks.list[chunk].id;
            let n = (CHUNK_CAPACITY - row).min(count - done);
            for ((_, values), &column) in columns.iter().zip(&positions) {
                // SAFETY: `values` holds `count` values of the column's type (checked above),
                // readable bitwise; `n` of them from value `done`. The destination is the
                // vacant rows `row..row + n` of this chunk (`row + n <= CHUNK_CAPACITY`).
                // Their owner gave them up above, so the copy is a move.
                unsafe {
                    core::ptr::copy_nonoverlapping(
                        values.bytes_from(done),
                        rows.slot(window, column, row),
                        n * values.size,
                    )
                };
            }
            for r in row..row + n {
                let entity = entities.alloc(Location {
                    chunk: chunk_id,
                    row: r as u32,
                });
                // SAFETY: `window` is a chunk of these rows and `r < CHUNK_CAPACITY`.
                unsafe { Rows::write_entity(window, r, entity) };
                spawned.push(entity);
            }
            rows.len += n;
        }
        for finish in ManuallyDrop::into_inner(owners).into_iter().flatten() {
            finish(true);
        }
        spawned
    }
}
