//! The change stamps of a world taken apart and built again: [`Archetype::stamps_into`] reads
//! them as a save records them, [`World::restore_stamps`] puts them back into a world built by
//! [`World::from_parts`], so a loaded world answers every change filter as the saved one did.
//!
//! ```text
//!  columns = 2, allocated chunks = 3 (spare chunks included, in chunk order)
//!  changed: [ c0:col0 c0:col1 | c1:col0 c1:col1 | c2:col0 c2:col1 ]   one u64 per pair
//!  added:   [ c0:col0 c0:col1 | c1:col0 c1:col1 | c2:col0 c2:col1 ]
//! ```

use crate::archetype::{Archetype, ArchetypeId};
use crate::world::World;

use super::InvalidParts;

impl Archetype {
    /// The change stamps of every allocated chunk (spare chunks too, in chunk order), chunk-major
    /// by column: `changed` receives [`changed_tick`](Archetype::changed_tick) and `added`
    /// [`added_tick`](Archetype::added_tick) of (chunk 0, column 0), (chunk 0, column 1), … —
    /// `chunk_ids().len() * components().len()` entries each, their old contents replaced (no
    /// allocation once they are large enough). What a save records so that
    /// [`World::restore_stamps`] can put them back.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.set_change_tick(4);
    /// let e = world.spawn((1u32, 2u8));
    /// world.set_change_tick(6);
    /// *world.get_mut::<u8>(e).unwrap() += 1;
    /// let (arch, _, _) = world.entity_location(e).unwrap();
    /// let (mut changed, mut added) = (Vec::new(), Vec::new());
    /// world.archetype(arch).stamps_into(&mut changed, &mut added);
    /// // One chunk, two columns (`u32` then `u8`); `get_mut` stamps only the column it writes.
    /// assert_eq!((changed, added), (vec![4, 6], vec![4, 4]));
    /// ```
    #[doc(hidden)]
    pub fn stamps_into(&self, changed: &mut Vec<u64>, added: &mut Vec<u64>) {
        self.rows
            .ticks
            .export_into(self.rows.chunks.list.len(), changed, added);
    }
}

impl World {
    /// Puts back the change stamps of archetype `archetype` that
    /// [`Archetype::stamps_into`] read from an archetype of the same components and chunks:
    /// every [`changed_tick`](Archetype::changed_tick) and
    /// [`added_tick`](Archetype::added_tick) is then the saved one, and the next grants of write
    /// access stamp as before. A world built by [`from_parts`](World::from_parts) has every
    /// stamp 0; a load restores them with this, archetype by archetype, before the world is
    /// used. Stamps nothing else and changes no value.
    ///
    /// # Errors
    /// [`InvalidParts`] if `archetype` is not an archetype of this world or `changed` and `added`
    /// are not one entry per allocated chunk and column each; nothing changes then.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.set_change_tick(3);
    /// let e = world.spawn((1u32,));
    /// let (arch, chunk, _) = world.entity_location(e).unwrap();
    /// world.restore_stamps(arch, &[9], &[7]).unwrap();
    /// assert_eq!(world.archetype(arch).changed_tick(chunk, 0), 9);
    /// assert_eq!(world.archetype(arch).added_tick(chunk, 0), 7);
    /// assert!(world.restore_stamps(arch, &[9, 9], &[7, 7]).is_err(), "one chunk, one column");
    /// ```
    #[doc(hidden)]
    pub fn restore_stamps(
        &mut self,
        archetype: ArchetypeId,
        changed: &[u64],
        added: &[u64],
    ) -> Result<(), InvalidParts> {
        let Some(archetype) = self.archetypes.get_mut(archetype.index()) else {
            return Err(InvalidParts("stamps name an unknown archetype"));
        };
        let rows = &mut archetype.rows;
        let entries = rows.chunks.list.len() * rows.columns.len();
        if changed.len() != entries || added.len() != entries {
            return Err(InvalidParts(
                "an archetype's stamps are not one per chunk and column",
            ));
        }
        rows.ticks.import(changed, added);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::CHUNK_CAPACITY;
    use crate::World;
    use crate::archetype::ArchetypeId;

    /// Every archetype's stamps, read as a save reads them.
    fn all_stamps(world: &World) -> Vec<(Vec<u64>, Vec<u64>)> {
        world
            .archetypes()
            .iter()
            .map(|a| {
                let (mut changed, mut added) = (Vec::new(), Vec::new());
                a.stamps_into(&mut changed, &mut added);
                (changed, added)
            })
            .collect()
    }

    #[test]
    fn stamps_read_and_restored_equal_the_originals_spare_chunks_included() {
        // 1,200 rows in chunks of 512 (150 under Miri's 64): two full chunks and a third.
        let c = CHUNK_CAPACITY as u32;
        let (rows, kept, written) = (2 * c + c * 11 / 32, c + c * 11 / 64, c + c * 47 / 128);
        let mut world = World::new();
        world.set_change_tick(2);
        let ids = world.spawn_batch((0..rows).map(|i| (i, u64::from(i))));
        world.set_change_tick(5);
        *world.get_mut::<u64>(ids[written as usize]).unwrap() += 1;
        world.set_change_tick(9);
        for &e in &ids[kept as usize..] {
            world.despawn(e).unwrap(); // leaves a spare chunk
        }
        world.spawn((1u8,));
        let saved = all_stamps(&world);
        let (a, _, _) = world.entity_location(ids[0]).unwrap();
        assert_eq!(
            saved[a.index()].0.len(),
            3 * 2,
            "three chunks, one of them spare"
        );
        let mut other = World::new();
        let others = other.spawn_batch((0..rows).map(|i| (i, u64::from(i))));
        for &e in &others[kept as usize..] {
            other.despawn(e).unwrap();
        }
        other.spawn((1u8,));
        assert_ne!(all_stamps(&other), saved);
        for (i, (changed, added)) in saved.iter().enumerate() {
            other
                .restore_stamps(ArchetypeId(i as u32), changed, added)
                .unwrap();
        }
        assert_eq!(all_stamps(&other), saved);
    }

    #[test]
    fn wrong_lengths_and_unknown_archetypes_change_nothing() {
        let mut world = World::new();
        world.set_change_tick(4);
        let e = world.spawn((1u32, 2u16));
        let (a, _, _) = world.entity_location(e).unwrap();
        let before = all_stamps(&world);
        assert!(world.restore_stamps(a, &[1], &[1, 1]).is_err());
        assert!(world.restore_stamps(a, &[1, 1], &[1]).is_err());
        assert!(world.restore_stamps(a, &[1; 3], &[1; 3]).is_err());
        assert!(world.restore_stamps(ArchetypeId(99), &[], &[]).is_err());
        assert_eq!(all_stamps(&world), before);
    }
}
