//! Saving a registry: [`Registry::save_to_vec`], [`Registry::save_into`] and the crash-safe
//! [`Registry::save`].

use std::path::Path;

use crate::registry::Registry;

use super::file::write_atomically;
use freyr_persist::persist::SaveError;
use freyr_persist::persist::body::write_save;
use freyr_query::launch::inflight::OpAccess;

impl Registry {
    /// The registry saved to bytes: the world (component table, archetypes in creation order,
    /// rows in order, entity allocator, and the change stamps of every chunk and column) and
    /// the [`tick`](Registry::tick). Resources, systems and clocks are not saved. Reads only.
    ///
    /// # Errors
    ///
    /// [`SaveError::Snapshot`] as for [`snapshot`](Registry::snapshot) (not at a quiet point,
    /// or inside `update`); [`SaveError::JobsInFlight`] while deadline jobs are in flight (a
    /// save cannot hold their closures: save at a tick with none in flight, or after
    /// [`settle_jobs`](Registry::settle_jobs)); [`SaveError::NotPersistent`] naming every
    /// component type of the world with no persistent name.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_persistent::<u64>("score", 1);
    /// let e = registry.spawn((5u64,));
    /// let bytes = registry.save_to_vec().unwrap();
    /// let mut loaded = freyr::Registry::with_workers(2);
    /// loaded.register_persistent::<u64>("score", 1);
    /// loaded.load_into(&bytes).unwrap();
    /// assert_eq!(*loaded.get::<u64>(e).unwrap(), 5);
    /// ```
    pub fn save_to_vec(&self) -> Result<Vec<u8>, SaveError> {
        let mut out = Vec::new();
        self.save_into(&mut out)?;
        Ok(out)
    }

    /// As [`save_to_vec`](Registry::save_to_vec), writing into `out` (cleared first), whose
    /// allocation is reused: a server that saves every few minutes keeps one buffer, and the
    /// save runs at copy speed instead of waiting on fresh pages. The save reads the live world
    /// (no copy of it is taken first).
    ///
    /// # Errors
    ///
    /// As `save_to_vec`; `out` is then unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_persistent::<u64>("score", 1);
    /// registry.spawn((5u64,));
    /// let mut buffer = Vec::new();
    /// registry.save_into(&mut buffer).unwrap();
    /// assert_eq!(buffer, registry.save_to_vec().unwrap());
    /// ```
    pub fn save_into(&self, out: &mut Vec<u8>) -> Result<(), SaveError> {
        self.guard("Registry::save");
        self.check_quiet().map_err(SaveError::Snapshot)?;
        // A save cannot hold the closures of deadline jobs in flight.
        let jobs = self.jobs_in_flight();
        if !jobs.is_empty() {
            return Err(SaveError::JobsInFlight { jobs });
        }
        let world = self.sync.read(&OpAccess::Exclusive, &self.profiler);
        let mut ops = Vec::with_capacity(world.component_infos().len());
        let mut missing = Vec::new();
        for info in world.component_infos() {
            match self.persist_types.by_type(info.type_id()) {
                Some(o) => ops.push(&o.column),
                None => missing.push(info.name()),
            }
        }
        if !missing.is_empty() {
            return Err(SaveError::NotPersistent { types: missing });
        }
        let tick = self.time.tick;
        *out = write_save(core::mem::take(out), world, tick, &ops);
        Ok(())
    }

    /// Saves to `path`, crash-safe: writes a temporary file beside it (`.name.<pid>.tmp`),
    /// syncs it to disk, renames it over `path` and syncs the directory, so a crash at any
    /// moment leaves either the old save or the new one, never a torn file. A crash may leave
    /// the temporary: each save first removes the temporaries of `path` whose process no longer
    /// runs (on Linux and Android, where `/proc` tells; never one of a running process, and
    /// only the user's own), so killed savers do not fill the disk.
    ///
    /// # Errors
    ///
    /// As [`save_to_vec`](Registry::save_to_vec); [`SaveError::Io`] if writing fails (the old
    /// file is then untouched).
    ///
    /// # Examples
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("freyr-doc-save-{}.bin", std::process::id()));
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_persistent::<u8>("byte", 1);
    /// registry.spawn((1u8,));
    /// registry.save(&path).unwrap();
    /// let mut loaded = freyr::Registry::with_workers(1);
    /// loaded.register_persistent::<u8>("byte", 1);
    /// loaded.load_file(&path).unwrap();
    /// assert_eq!(loaded.len(), 1);
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), SaveError> {
        let bytes = self.save_to_vec()?;
        write_atomically(path.as_ref(), &bytes).map_err(SaveError::Io)
    }
}
