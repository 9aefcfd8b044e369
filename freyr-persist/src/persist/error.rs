//! The errors of saves, loads, exports and imports: [`SaveError`] and [`LoadError`].

use core::fmt;

use crate::snapshot::SnapshotError;

use super::ColumnEncoding;

/// Why a save was refused. Nothing was written (a save to a path leaves the old file).
#[derive(Debug)]
#[non_exhaustive]
pub enum SaveError {
    /// Inside `update`, or not at a quiet point (launches in flight, command buffers or
    /// destructions waiting for a sync point), as for
    /// `Registry::snapshot`.
    Snapshot(SnapshotError),
    /// Component types of the world (by `type_name`) with no persistent name.
    NotPersistent {
        /// The types, in component-id order.
        types: Vec<&'static str>,
    },
    /// Deadline jobs are in flight (requested and not yet delivered): a save cannot hold
    /// their closures, and a load of it would never deliver them. Save at a tick with none in
    /// flight (a tick at least K after the last request), or after
    /// `Registry::settle_jobs`.
    JobsInFlight {
        /// `(result type, jobs in flight)` for every result type with any, in registration
        /// order.
        jobs: Vec<(&'static str, usize)>,
    },
    /// Writing, syncing or renaming the file failed.
    Io(std::io::Error),
}

impl fmt::Display for SaveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SaveError::Snapshot(e) => write!(f, "cannot save: {e}"),
            SaveError::NotPersistent { types } => {
                write!(
                    f,
                    "cannot save: the world has component types with no persistent name: "
                )?;
                for (i, name) in types.iter().enumerate() {
                    write!(f, "{}`{name}`", if i > 0 { ", " } else { "" })?;
                }
                write!(
                    f,
                    "; register each with `register_persistent::<T>(name, version)`"
                )
            }
            SaveError::JobsInFlight { jobs } => {
                write!(f, "cannot save: deadline jobs are in flight (")?;
                for (i, (name, count)) in jobs.iter().enumerate() {
                    write!(f, "{}{count} of `{name}`", if i > 0 { ", " } else { "" })?;
                }
                write!(
                    f,
                    "), and a save cannot hold them; save at a tick with no job in flight, or \
                     after `settle_jobs()`"
                )
            }
            SaveError::Io(e) => write!(f, "cannot write the save: {e}; check the path and disk"),
        }
    }
}

impl std::error::Error for SaveError {}

/// Why a load or an import was refused. The registry is unchanged.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// Reading the file failed.
    Io(std::io::Error),
    /// The bytes do not start with the magic of this kind of file (a save, or an export).
    NotAFreyrFile,
    /// Shorter or longer than its header says: a torn or truncated file.
    Truncated {
        /// Length the header announces (or the minimum).
        expected: usize,
        /// Length found.
        found: usize,
    },
    /// The checksum does not match: some byte changed.
    ChecksumMismatch {
        /// Checksum stored in the file.
        stored: u64,
        /// Checksum of the bytes read.
        computed: u64,
    },
    /// Written by another format version.
    UnsupportedFormat {
        /// The file's format version.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// A component name the loading registry has not registered.
    UnknownType {
        /// The persistent name.
        name: String,
    },
    /// The type is registered with another version.
    VersionMismatch {
        /// The persistent name.
        name: String,
        /// Version in the file.
        saved: u32,
        /// Version registered here.
        registered: u32,
    },
    /// The type's size or alignment differs from the saved one.
    LayoutMismatch {
        /// The persistent name.
        name: String,
        /// `(size, align)` in the file.
        saved: (u64, u64),
        /// `(size, align)` here.
        registered: (u64, u64),
    },
    /// The type is registered here with the other column encoding (raw bytes or serde) than
    /// the file's: the values cannot be read either way.
    EncodingMismatch {
        /// The persistent name.
        name: String,
        /// Encoding in the file.
        saved: ColumnEncoding,
        /// Encoding registered here.
        registered: ColumnEncoding,
    },
    /// The checked bytes do not form a world (a file made by other means, or a bug).
    Corrupt {
        /// What is inconsistent.
        what: &'static str,
    },
    /// The registry is not at a quiet point (see `Registry::restore`).
    Snapshot(SnapshotError),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "cannot read the save: {e}; check the path"),
            LoadError::NotAFreyrFile => {
                write!(
                    f,
                    "not a freyr save or export (wrong magic); check which file is loaded"
                )
            }
            LoadError::Truncated { expected, found } => write!(
                f,
                "the file is truncated or torn: {found} bytes, {expected} expected; load an \
                 older save"
            ),
            LoadError::ChecksumMismatch { stored, computed } => write!(
                f,
                "the file's checksum {stored:#018x} does not match its bytes ({computed:#018x}): \
                 it was damaged; load an older save"
            ),
            LoadError::UnsupportedFormat { found, supported } => write!(
                f,
                "the file has format version {found}, this build reads {supported}; load it with \
                 a matching freyr"
            ),
            LoadError::UnknownType { name } => write!(
                f,
                "the file has component type `{name}`, not registered here; register it with \
                 `register_persistent::<T>(\"{name}\", version)`"
            ),
            LoadError::VersionMismatch {
                name,
                saved,
                registered,
            } => write!(
                f,
                "component type `{name}` was saved at version {saved}, registered here at \
                 version {registered}; convert the save or register the matching version"
            ),
            LoadError::LayoutMismatch {
                name,
                saved,
                registered,
            } => write!(
                f,
                "component type `{name}` was saved with (size, align) {saved:?}, it is \
                 {registered:?} here; bump its version when its fields change"
            ),
            LoadError::EncodingMismatch {
                name,
                saved,
                registered,
            } => write!(
                f,
                "component type `{name}` was saved as {saved}, it is registered here as \
                 {registered}; register it the way the saving program did"
            ),
            LoadError::Corrupt { what } => {
                write!(f, "the file is inconsistent ({what}); load an older save")
            }
            LoadError::Snapshot(e) => write!(f, "cannot load now: {e}"),
        }
    }
}

impl std::error::Error for LoadError {}
