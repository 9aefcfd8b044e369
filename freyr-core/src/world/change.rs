//! Structural changes of one live entity: `despawn`, `insert`, `remove`.

use core::any::TypeId;
use core::mem::ManuallyDrop;

use crate::archetype::ArchetypeId;
use crate::bundle::{Bundle, MAX_BUNDLE};
use crate::column::{copy_value, for_each_finishing_on_panic};
use crate::edges::Hop;
use crate::entity::Entity;
use crate::error::{ComponentError, NoSuchEntity};

use super::World;
use super::row_move::{FinishRemove, begin_move, complete_move, two_mut, vacate};

impl World {
    /// Despawns `entity`, dropping its components.
    ///
    /// If a component's `Drop` panics, the entity is still gone, its other components are
    /// dropped, and the panic continues after the world is consistent again.
    ///
    /// # Errors
    /// [`NoSuchEntity`] if the handle is stale or was never spawned.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((String::from("x"),));
    /// assert!(world.despawn(e).is_ok());
    /// assert!(world.despawn(e).is_err());
    /// ```
    pub fn despawn(&mut self, entity: Entity) -> Result<(), NoSuchEntity> {
        let found = self.find(entity).ok_or(NoSuchEntity(entity))?;
        self.entities.free(entity);
        if !self.archetypes[found.archetype].rows.needs_drop {
            // No column has drop glue, so no user code runs: the row is removed at once, with
            // no guard to finish it on unwind.
            vacate(
                &mut self.archetypes[found.archetype].rows,
                &mut self.chunks,
                &mut self.entities,
                (found.window, found.chunk, found.chunk_id),
                found.row,
            );
            return Ok(());
        }
        let finish = FinishRemove {
            rows: &mut self.archetypes[found.archetype].rows,
            chunks: &mut self.chunks,
            entities: &mut self.entities,
            chunk_id: found.chunk_id,
            chunk: found.chunk,
            window: found.window,
            row: found.row,
        };
        // The entity is already freed; dropping `finish` (also while unwinding) removes the row.
        finish.rows.drop_row(found.chunk, found.row);
        drop(finish);
        Ok(())
    }

    /// Adds the components of `bundle` to `entity`, moving it to the matching archetype.
    /// A component the entity already has is overwritten and its old value dropped.
    ///
    /// # Errors
    /// [`NoSuchEntity`] if the handle is stale or was never spawned (the bundle is dropped).
    ///
    /// # Panics
    /// If `bundle` names a component type twice (before anything changes). If an overwritten
    /// value's `Drop` panics, the insert is complete and the other old values are dropped first.
    /// If the move would pass a [capacity limit](World#capacity-limits) (2^22 chunks, 2^32 − 1
    /// archetypes, 2^32 insert edges, 2^32 component types), before the entity changes (the
    /// bundle is dropped).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// world.insert(e, (2u8, 3u16)).unwrap();
    /// assert_eq!(*world.get::<u8>(e).unwrap(), 2);
    /// assert_eq!(*world.get::<u16>(e).unwrap(), 3);
    /// ```
    // Inlined into the caller: the common path is a short straight line (measured: 5% of a
    // 10k add/remove workload is the call itself); the rare paths stay out of line.
    #[inline(always)]
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) -> Result<(), NoSuchEntity> {
        let found = self.find(entity).ok_or(NoSuchEntity(entity))?;
        // SAFETY: `found.archetype` indexes the archetypes (see `Found`).
        let source = unsafe { self.archetypes.get_unchecked_mut(found.archetype) };
        let hop = match source.insert_edges.get(TypeId::of::<B>()) {
            Some(hop) => hop,
            None => self.init_insert_edge::<B>(found.archetype),
        };
        // SAFETY: `hop` was built by `init_insert_edge` of this world, which pushed its edge at
        // index `hop.edge`; edges are never removed (see `Hop`).
        let edge = unsafe { self.insert_edges.get_unchecked(hop.edge as usize) };
        let target = hop.target as usize;
        if !edge.overwrites && target != found.archetype {
            // Every component is new, so the row moves (the empty bundle stays): the common
            // case, with the bundle written by type instead of byte-copied field by field.
            // SAFETY: the edge of bundle type `B` has one field per id `B::register` pushed,
            // which is one per element (`Bundle` is sealed: only the tuple impls exist).
            let fields = unsafe { edge.fields.get_unchecked(..B::LEN) };
            // SAFETY: the source index is valid (see `Found`), the target is an archetype the
            // edge was built for (see `Hop`), and the two differ (checked above).
            let (src, dst) = unsafe { two_mut(&mut self.archetypes, found.archetype, target) };
            // SAFETY: `edge` leads from the found row's archetype to `dst`'s, and
            // `complete_move` below removes the source row without dropping.
            let landing = unsafe {
                begin_move(
                    &mut dst.rows,
                    ArchetypeId(hop.target),
                    &mut self.chunks,
                    entity,
                    (found.window, found.row),
                    &edge.moves,
                )
            };
            // SAFETY: slot i is the landing row of bundle element i's column (edge field i, in
            // tuple order) in the landing chunk: aligned for its type, and vacant
            // (`begin_move` filled only the moved columns, which the bundle does not name
            // since none is overwritten).
            unsafe {
                bundle.write_with(|i| {
                    let f = fields[i];
                    landing.window.slot(f.offset, f.size, landing.row)
                })
            };
            complete_move(
                (&mut src.rows, &mut dst.rows),
                &mut self.chunks,
                &mut self.entities,
                entity,
                &landing,
                &found,
            );
            return Ok(());
        }
        self.insert_overwriting(entity, bundle);
        Ok(())
    }

    /// The rest of [`insert`](World::insert): some bundle component is already present (or the
    /// bundle is empty), so old values are swapped out and dropped. Out of line, so the common
    /// path above keeps its registers: the row and the edge are looked up again here rather
    /// than passed (passing them made the common path store them to the stack first).
    #[inline(never)]
    fn insert_overwriting<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        let found = self
            .find(entity)
            .expect("freyr: insert_overwriting is called for a live entity");
        let hop = self.archetypes[found.archetype]
            .insert_edges
            .get(TypeId::of::<B>())
            .expect("freyr: insert_overwriting is called after the edge is built");
        let edge = &self.insert_edges[hop.edge as usize];
        let target = hop.target as usize;
        let mut fields = [core::ptr::null_mut::<u8>(); MAX_BUNDLE];
        let mut bundle = ManuallyDrop::new(bundle);
        // SAFETY: `bundle` is a live tuple and `fields` has MAX_BUNDLE >= B::LEN entries.
        unsafe { B::field_ptrs(&mut *bundle, &mut fields) };
        let source = found.window;
        if target == found.archetype {
            // Every component is present: swap the new values in place (write access to the
            // row's chunk: every column is stamped changed, conservatively).
            self.archetypes[found.archetype]
                .rows
                .ticks
                .set_chunk_changed(found.chunk, self.chunks.tick);
            for (&field, f) in fields.iter().zip(edge.fields.iter()) {
                let slot = source.slot(f.offset, f.size, found.row);
                // SAFETY: the slot holds the entity's live value of this element's type and
                // the field is a live value in the bundle: distinct, `size` bytes each. After
                // the swap the row owns the new value and the bundle field the old one.
                unsafe { core::ptr::swap_nonoverlapping(field, slot, f.size) };
            }
        } else {
            // SAFETY: the source index is valid (see `Found`), the target is an archetype the
            // edge was built for (see `Hop`), and the two differ (the branch above took the
            // equal case).
            let (src, dst) = unsafe { two_mut(&mut self.archetypes, found.archetype, target) };
            // SAFETY: `edge` leads from the found row's archetype to `dst`'s, and
            // `complete_move` below removes the source row without dropping.
            let landing = unsafe {
                begin_move(
                    &mut dst.rows,
                    ArchetypeId(hop.target),
                    &mut self.chunks,
                    entity,
                    (source, found.row),
                    &edge.moves,
                )
            };
            // Nothing below can panic until the old values are dropped.
            for (&field, f) in fields.iter().zip(edge.fields.iter()) {
                let slot = landing.window.slot(f.offset, f.size, landing.row);
                if f.overwrite {
                    // SAFETY: the slot now holds the moved old value; swapping leaves the new
                    // value in the row and the old one in the bundle field (dropped below).
                    unsafe { core::ptr::swap_nonoverlapping(field, slot, f.size) };
                } else {
                    // SAFETY: vacant slot of this element's type; the value moves into it (the
                    // bundle is ManuallyDrop, and this field is not dropped below).
                    unsafe { copy_value(field, slot, f.size) };
                }
            }
            complete_move(
                (&mut src.rows, &mut dst.rows),
                &mut self.chunks,
                &mut self.entities,
                entity,
                &landing,
                &found,
            );
        }
        // The world is consistent; drop the overwritten old values now held by the bundle.
        if !edge.drops_old {
            return;
        }
        for_each_finishing_on_panic(edge.fields.len(), |i| {
            let f = &edge.fields[i];
            if let (true, Some(drop)) = (f.overwrite, f.drop) {
                // SAFETY: field i holds the old value swapped out of the row; it is dropped
                // exactly once here and the bundle itself is never dropped.
                unsafe { drop(fields[i], 1) };
            }
        });
    }

    /// Removes the components of bundle `B` from `entity` and returns them, moving the entity
    /// to the matching archetype.
    ///
    /// # Errors
    /// [`ComponentError::NoSuchEntity`] for a stale handle; [`ComponentError::MissingComponent`]
    /// naming the first component of `B` the entity lacks (nothing is removed then).
    ///
    /// # Panics
    /// If `B` names a component type twice (before anything changes). If the move would pass a
    /// [capacity limit](World#capacity-limits) (2^22 chunks, 2^32 − 1 archetypes, 2^32 remove
    /// edges, 2^32 component types), before the entity changes.
    ///
    /// # Examples
    /// ```
    /// use freyr::{ComponentError, World};
    /// let mut world = World::new();
    /// let e = world.spawn((1u8, 2u16));
    /// assert_eq!(world.remove::<(u16,)>(e), Ok((2,)));
    /// assert_eq!(
    ///     world.remove::<(u16,)>(e),
    ///     Err(ComponentError::MissingComponent { entity: e, component: "u16" })
    /// );
    /// assert!(world.contains(e));
    /// ```
    // Inlined into the caller, as `insert`.
    #[inline(always)]
    pub fn remove<B: Bundle>(&mut self, entity: Entity) -> Result<B, ComponentError> {
        let found = self
            .find(entity)
            .ok_or(ComponentError::NoSuchEntity(entity))?;
        // SAFETY: `found.archetype` indexes the archetypes (see `Found`).
        let source = unsafe { self.archetypes.get_unchecked_mut(found.archetype) };
        let hop = match source.remove_edges.get(TypeId::of::<B>()) {
            Some(hop) => hop,
            None => self.init_remove_edge::<B>(found.archetype),
        };
        // SAFETY: `hop` was built by `init_remove_edge` of this world, which pushed its edge at
        // index `hop.edge`; edges are never removed (see `Hop`).
        let edge = unsafe { self.remove_edges.get_unchecked(hop.edge as usize) };
        if hop.target == Hop::MISSING {
            let Some(name) = edge.missing else {
                unreachable!(
                    "freyr: a remove hop without a target has an edge naming the missing component"
                );
            };
            return Err(ComponentError::MissingComponent {
                entity,
                component: name,
            });
        }
        let target = hop.target as usize;
        if target == found.archetype {
            // Only the empty bundle removes nothing and stays.
            // SAFETY: B::LEN == 0 here (a non-empty bundle always leaves the archetype), so no
            // slot is asked for.
            return Ok(unsafe { B::read_with(|_| unreachable!("the empty bundle has no slots")) });
        }
        // SAFETY: the edge of bundle type `B`, not missing a component, has one field per id
        // `B::register` pushed, which is one per element (`Bundle` is sealed).
        let fields = unsafe { edge.fields.get_unchecked(..B::LEN) };
        // SAFETY: the source index is valid (see `Found`), the target is an archetype the edge
        // was built for (see `Hop`; not `MISSING`, returned above), and the two differ
        // (returned above when equal).
        let (src, dst) = unsafe { two_mut(&mut self.archetypes, found.archetype, target) };
        let source = found.window;
        // SAFETY: `edge` leads from the found row's archetype to `dst`'s, and `complete_move`
        // below removes the source row without dropping.
        let landing = unsafe {
            begin_move(
                &mut dst.rows,
                ArchetypeId(hop.target),
                &mut self.chunks,
                entity,
                (source, found.row),
                &edge.moves,
            )
        };
        // Nothing below can panic.
        // SAFETY: slot i is the entity's live value of tuple element i (edge field i, in tuple
        // order); they are moved out here and the row is removed below without dropping them.
        let value = unsafe {
            B::read_with(|i| {
                let f = fields[i];
                source.slot(f.offset, f.size, found.row)
            })
        };
        complete_move(
            (&mut src.rows, &mut dst.rows),
            &mut self.chunks,
            &mut self.entities,
            entity,
            &landing,
            &found,
        );
        Ok(value)
    }
}
