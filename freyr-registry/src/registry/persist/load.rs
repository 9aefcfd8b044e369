//! Loading a save: [`Registry::load_into`] and [`Registry::load_file`], and the chunk memory a
//! load keeps for the next one ([`Registry::spare_memory`]).

use std::path::Path;

use freyr_core::World;
use freyr_core::parts::SpareSlabs;

use crate::registry::Registry;
use freyr_persist::persist::LoadError;
use freyr_persist::persist::body::{SAVE_MAGIC, read_world_parts};
use freyr_persist::persist::format::{Framed, Reader, Verifier, frame};
use freyr_persist::snapshot::SnapshotError;

impl Registry {
    /// Replaces this registry's world and tick with the save in `bytes`: the same world hash,
    /// the same entity ids and next spawned ids, the same iteration order as the saved
    /// registry, whatever order this program touched its types in (types are matched by
    /// persistent name). Everything is checked before anything changes; the loaded world is
    /// a new world, as after [`restore`](Registry::restore).
    ///
    /// # Errors
    ///
    /// A [`LoadError`] naming what is wrong; the registry is then unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::persist::LoadError;
    /// let mut registry = freyr::Registry::with_workers(1);
    /// assert!(matches!(registry.load_into(b"nonsense"), Err(LoadError::NotAFreyrFile)));
    /// ```
    pub fn load_into(&mut self, bytes: &[u8]) -> Result<(), LoadError> {
        self.guard("Registry::load_into");
        let framed = frame(bytes, SAVE_MAGIC)?;
        // The checksum is fed as the new world is built (each piece hashed right after its
        // copy) and compared before anything is replaced; when it differs, that is the error
        // whatever else the damaged bytes caused.
        let mut verifier = framed.verifier();
        // The new world copies into the chunk memory the last load's replaced world left;
        // whatever it does not reuse is freed now, so at most one world's memory is kept.
        let mut spare = core::mem::take(&mut self.spare_slabs);
        let built = self.build_loaded(&framed, &mut verifier, &mut spare);
        drop(spare);
        verifier.finish(&framed)?;
        let (world, tick) = built?;
        self.install_loaded(world, tick)
            .map_err(LoadError::Snapshot)
    }

    /// Bytes of chunk memory this registry keeps for its next load: what the world that the
    /// last [`load_into`](Registry::load_into) replaced held (its slabs, not its values). The
    /// next load copies into that memory instead of asking the allocator for new pages, whose
    /// first touch is a page fault each (a quarter of a 1M-entity load, measured); what it
    /// does not reuse it frees. So a registry that loads into a world it holds keeps up to
    /// that world's memory once more, until
    /// [`release_spare_memory`](Registry::release_spare_memory).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_persistent::<u32>("hp", 1);
    /// registry.spawn_batch((0..1000u32).map(|i| (i,)));
    /// let save = registry.save_to_vec().unwrap();
    /// assert_eq!(registry.spare_memory(), 0);
    /// registry.load_into(&save).unwrap();
    /// let kept = registry.spare_memory();
    /// assert!(kept >= 1000 * 4, "the replaced world's chunks");
    /// registry.load_into(&save).unwrap(); // copies into them, and keeps the replaced ones
    /// assert_eq!(registry.spare_memory(), kept);
    /// ```
    pub fn spare_memory(&self) -> usize {
        self.spare_slabs.bytes()
    }

    /// Frees the chunk memory kept for the next load (see
    /// [`spare_memory`](Registry::spare_memory)) and returns its size in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_persistent::<u32>("hp", 1);
    /// registry.spawn_batch((0..1000u32).map(|i| (i,)));
    /// let save = registry.save_to_vec().unwrap();
    /// registry.load_into(&save).unwrap();
    /// let kept = registry.spare_memory();
    /// assert!(kept > 0);
    /// assert_eq!(registry.release_spare_memory(), kept);
    /// assert_eq!(registry.spare_memory(), 0);
    /// ```
    pub fn release_spare_memory(&mut self) -> usize {
        let bytes = self.spare_slabs.bytes();
        self.spare_slabs.clear();
        bytes
    }

    /// The world and tick of a framed save (its checksum not yet compared), every byte the
    /// world's parts copy passed to `verifier` as it is copied.
    fn build_loaded(
        &self,
        framed: &Framed<'_>,
        verifier: &mut Verifier<'_>,
        spare: &mut SpareSlabs,
    ) -> Result<(World, u64), LoadError> {
        framed.check_version()?;
        let mut r = Reader { rest: framed.body };
        let tick = r.u64("the tick")?;
        let ops = self.read_types(&mut r)?;
        let parts = read_world_parts(&mut r, &ops)?;
        let world = World::from_parts_reading(parts, &mut |piece| verifier.read(piece), spare)
            .map_err(|e| LoadError::Corrupt { what: e.0 })?;
        Ok((world, tick))
    }

    /// Puts a loaded world and its tick in place, as [`restore`](Registry::restore) does: at a
    /// quiet point only; the replaced world's values are dropped last.
    fn install_loaded(&mut self, world: World, tick: u64) -> Result<(), SnapshotError> {
        self.check_quiet()?;
        self.check_rewind_jobs(tick);
        let (current, _) = self.sync.write_all(&self.profiler);
        let old_world = core::mem::replace(current, world);
        self.rewind_time(tick);
        // User `Drop`s run last, with the registry already loaded; the old world's chunk
        // memory is kept for the next load.
        old_world.recycle_into(&mut self.spare_slabs);
        Ok(())
    }

    /// As [`load_into`](Registry::load_into), reading the file at `path`.
    ///
    /// # Errors
    ///
    /// [`LoadError::Io`] if reading fails; otherwise as `load_into`.
    pub fn load_file(&mut self, path: impl AsRef<Path>) -> Result<(), LoadError> {
        let bytes = std::fs::read(path).map_err(LoadError::Io)?;
        self.load_into(&bytes)
    }
}
