//! Loading a save: [`Registry::load_into`] and [`Registry::load_file`] (copying into the chunk
//! memory the last replaced world left: [`Registry::spare_memory`]).

use std::panic::AssertUnwindSafe;
use std::path::Path;

use freyr_core::SpareSlabs;
use freyr_core::World;

use super::relation::{WorldRelation, check_relation};
use crate::registry::Registry;
use freyr_persist::persist::LoadError;
use freyr_persist::persist::body::{SAVE_MAGIC, read_world_parts};
use freyr_persist::persist::format::{Framed, Reader, Verifier, frame};
use freyr_persist::persist::stamps::restore_stamps;
use freyr_persist::snapshot::SnapshotError;
use freyr_sched::keep_first;

impl Registry {
    /// Replaces this registry's world and tick with the save in `bytes`: the same world hash,
    /// the same entity ids and next spawned ids, the same iteration order and the same change
    /// stamps as the saved registry (every `filter_changed(since)` and `filter_added(since)`
    /// answers as it did there), whatever order this program touched its types in (types are
    /// matched by persistent name). Everything is checked before anything changes, the parent
    /// relation included (a save whose [`ChildOf`](crate::hierarchy::ChildOf) and
    /// [`Children`](crate::hierarchy::Children) disagree, or whose parents make a cycle, is
    /// [`LoadError::Corrupt`]); the loaded world is a new world, as after
    /// [`restore`](Registry::restore).
    ///
    /// A save holds no deadline job in flight ([`save_to_vec`](Registry::save_to_vec) refuses
    /// one): the registry's own jobs in flight are discarded, as by a restore (each result
    /// dropped once), and the next ones are requested at the loaded tick on; job ids go on
    /// from this registry's own count.
    ///
    /// Function systems run next as on their first run (their change filters pass every row,
    /// [`Tick::last_run`](crate::systems::Tick) is `None`), as in a fresh program that loads
    /// the save: their previous run saw another history. Their event readers keep their
    /// cursors (a save holds no events).
    ///
    /// # Errors
    ///
    /// A [`LoadError`] naming what is wrong; the registry is then unchanged. Among them
    /// [`LoadError::Snapshot`] with [`SnapshotError::BeforeConfirmed`] if the save's tick is
    /// before a tick this registry confirmed ([`confirm_tick`](Registry::confirm_tick)).
    ///
    /// # Panics
    ///
    /// Re-raises the first panic of a replaced value's or a discarded deadline result's `Drop`,
    /// once the registry is fully loaded and every replaced value dropped once.
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
        let (parts, stamps) = read_world_parts(&mut r, &ops)?;
        let mut world = World::from_parts_reading(parts, &mut |piece| verifier.read(piece), spare)
            .map_err(|e| LoadError::Corrupt { what: e.0 })?;
        restore_stamps(&mut world, &stamps)?;
        // A forged (or `world_mut`-broken) parent relation would loop or panic later.
        check_relation(&WorldRelation::new(&world))?;
        Ok((world, tick))
    }

    /// Puts a loaded world and its tick in place, as [`restore`](Registry::restore) does: at a
    /// quiet point only; the replaced world's values are dropped last.
    fn install_loaded(&mut self, world: World, tick: u64) -> Result<(), SnapshotError> {
        self.check_quiet()?;
        // A save holds no deadline job: the registry's own are discarded, none installed.
        self.check_restore_jobs(tick, &[])?;
        let (current, _) = self.sync.write_all(&self.profiler);
        let old_world = core::mem::replace(current, world);
        let jobs_panic = self.rewind_time(tick, None);
        self.forget_fn_system_runs();
        // User `Drop`s run last, with the registry already loaded; the old world's chunk
        // memory is kept for the next load.
        // Caught, so that a discarded job result's panic is not dropped while unwinding.
        let spare = &mut self.spare_slabs;
        let mut first_panic =
            std::panic::catch_unwind(AssertUnwindSafe(|| old_world.recycle_into(spare))).err();
        if let Some(payload) = jobs_panic {
            keep_first(&mut first_panic, payload);
        }
        if let Some(payload) = first_panic {
            std::panic::resume_unwind(payload);
        }
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
