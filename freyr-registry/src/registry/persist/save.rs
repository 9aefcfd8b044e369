//! Saving a registry: [`Registry::save_to_vec`], [`Registry::save_into`] and the crash-safe
//! [`Registry::save`].

use std::io::Write;
use std::path::Path;

use crate::registry::Registry;
use freyr_persist::persist::SaveError;
use freyr_persist::persist::body::write_save;
use freyr_query::launch::inflight::OpAccess;

impl Registry {
    /// The registry saved to bytes: the world (component table, archetypes in creation order,
    /// rows in order, entity allocator) and the [`tick`](Registry::tick). Resources, systems
    /// and clocks are not saved. Reads only.
    ///
    /// # Errors
    ///
    /// [`SaveError::Snapshot`] as for [`snapshot`](Registry::snapshot) (not at a quiet point,
    /// or inside `update`); [`SaveError::NotPersistent`] naming every component type of the
    /// world with no persistent name.
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
        // As a snapshot at this tick would: deadline results from it on are kept, so loading
        // this save back into this registry delivers them again.
        self.note_snapshot_tick(tick);
        *out = write_save(core::mem::take(out), world, tick, &ops);
        Ok(())
    }

    /// Saves to `path`, crash-safe: writes a temporary file beside it, syncs it to disk,
    /// renames it over `path` and syncs the directory, so a crash at any moment leaves either
    /// the old save or the new one, never a torn file.
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

/// Writes `bytes` to a temporary file beside `path`, syncs it, renames it over `path` and
/// syncs the directory.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the save path names no file",
        )
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)?;
        #[cfg(unix)]
        std::fs::File::open(&dir)?.sync_all()?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
