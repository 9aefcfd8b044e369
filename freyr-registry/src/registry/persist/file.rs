//! The crash-safe write of a save file: a temporary beside the destination, synced, renamed
//! over it, the directory synced; and the removal of the temporaries that savers killed
//! mid-write left behind.
//!
//! ```text
//!  dir/world.save              the save
//!  dir/.world.save.<pid>.tmp   the temporary of the saver with process id <pid>, renamed over
//!                              the save when complete; left behind if that process was killed
//! ```
//!
//! The rule for stale temporaries: a save to `dir/name` first removes every file
//! `dir/.name.<pid>.tmp` whose `<pid>` (decimal digits) is not this process and names no
//! running process, and which belongs to this process's user. Whether a process runs is read
//! from `/proc/<pid>` on Linux and Android (a process killed but not yet reaped by its parent
//! still counts as running); elsewhere, or when `/proc` is not mounted, no process is known to
//! have ended and nothing is removed. A live saver in another process is never touched, as long
//! as all the savers to one directory share one process-id namespace (containers that share a
//! directory but not their process ids must not save to the same path). Temporaries of other
//! names, and files that only look like temporaries, are left alone. The removal is best
//! effort: a failure to list or remove leaves the file, and the save goes on.
//!
//! Saves of one process to one path (from two threads) share the temporary's name, so they
//! take turns: each writes and renames its whole temporary while the other waits, and the
//! file on disk is always one whole save (the last to finish).

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, PoisonError};

/// Writes `bytes` to a temporary file beside `path`, syncs it, renames it over `path` and
/// syncs the directory; first removes the stale temporaries of `path` (see the module doc).
pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the save path names no file",
        )
    })?;
    let pid = std::process::id();
    remove_stale_temporaries(&dir, name, pid);
    let tmp = dir.join(temporary_name(name, pid));
    // Two saves of this process to one path share the temporary's name: one at a time.
    let _claim = Claim::take(
        std::fs::canonicalize(&dir)
            .map_or_else(|_| tmp.clone(), |d| d.join(temporary_name(name, pid))),
    );
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

/// The temporaries this process is writing now (their directory canonical where it resolves).
static WRITING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Signalled when a temporary leaves [`WRITING`].
static WRITTEN: Condvar = Condvar::new();

/// This process's claim on a temporary's name, held from its creation to its rename: two
/// threads saving to one path (two registries, or one shared) would otherwise write one file
/// at once, and the first rename would publish the second's half-written bytes. The second
/// waits for the first, then writes its own; the last to finish is the save on disk.
struct Claim(PathBuf);

impl Claim {
    fn take(tmp: PathBuf) -> Claim {
        let mut writing = WRITING.lock().unwrap_or_else(PoisonError::into_inner);
        while writing.contains(&tmp) {
            writing = WRITTEN
                .wait(writing)
                .unwrap_or_else(PoisonError::into_inner);
        }
        writing.push(tmp.clone());
        Claim(tmp)
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut writing = WRITING.lock().unwrap_or_else(PoisonError::into_inner);
        writing.retain(|tmp| *tmp != self.0);
        WRITTEN.notify_all();
    }
}

/// `.name.<pid>.tmp`: the temporary of the saver `pid` for the file `name`.
fn temporary_name(name: &OsStr, pid: u32) -> OsString {
    let mut tmp = OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".{pid}.tmp"));
    tmp
}

/// The process id in `file` if it is named as a temporary of `name` (`.name.<digits>.tmp`).
fn temporary_pid(file: &OsStr, name: &OsStr) -> Option<u32> {
    let rest = file.as_encoded_bytes().strip_prefix(b".")?;
    let rest = rest.strip_prefix(name.as_encoded_bytes())?;
    let digits = rest.strip_prefix(b".")?.strip_suffix(b".tmp")?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    core::str::from_utf8(digits).ok()?.parse().ok()
}

/// Removes the temporaries of `name` in `dir` left by savers that no longer run (see the
/// module doc); `pid` is this process.
fn remove_stale_temporaries(dir: &Path, name: &OsStr, pid: u32) {
    let Some(owner) = own_user() else {
        return; // no way to tell a running process from an ended one here
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(saver) = temporary_pid(&file, name) else {
            continue;
        };
        if saver == pid || is_running(saver) {
            continue;
        }
        let path = entry.path();
        // The owner is read without following a link: a link named like a temporary is
        // removed only if this user made it, and what it points to is never touched.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| file_owner(&m) == Some(owner)) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// This process's user, where ended processes can be told from running ones (`/proc/self` is
/// owned by it); `None` elsewhere.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn own_user() -> Option<u32> {
    std::fs::metadata("/proc/self")
        .ok()
        .and_then(|m| file_owner(&m))
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn own_user() -> Option<u32> {
    None
}

/// Whether process `pid` runs (or has ended but is not yet reaped): its `/proc` entry exists.
/// An entry that cannot be read for another reason than its absence counts as running.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn is_running(pid: u32) -> bool {
    match std::fs::symlink_metadata(format!("/proc/{pid}")) {
        Ok(_) => true,
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn is_running(_pid: u32) -> bool {
    true
}

#[cfg(unix)]
fn file_owner(metadata: &std::fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    Some(metadata.uid())
}

#[cfg(not(unix))]
fn file_owner(_metadata: &std::fs::Metadata) -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::{temporary_name, temporary_pid};

    #[test]
    fn only_names_of_the_temporary_pattern_give_a_pid() {
        let name = OsStr::new("world.save");
        assert_eq!(temporary_name(name, 42), OsStr::new(".world.save.42.tmp"));
        assert_eq!(temporary_pid(&temporary_name(name, 42), name), Some(42));
        assert_eq!(
            temporary_pid(&temporary_name(name, u32::MAX), name),
            Some(u32::MAX)
        );
        for other in [
            "world.save",
            ".world.save.tmp",
            ".world.save..tmp",
            ".world.save.+4.tmp",
            ".world.save.-4.tmp",
            ".world.save.4x.tmp",
            ".world.save.4.tmp.bak",
            ".world.save.99999999999.tmp",
            ".world.saveX.4.tmp",
            ".other.save.4.tmp",
            "..world.save.4.tmp",
            ".world.save.4.4.tmp",
        ] {
            assert_eq!(temporary_pid(OsStr::new(other), name), None, "{other}");
        }
        // A name that is a prefix of another's: `.a.1.tmp` is a's, not `a.1`'s.
        assert_eq!(
            temporary_pid(OsStr::new(".a.1.2.tmp"), OsStr::new("a.1")),
            Some(2)
        );
        assert_eq!(
            temporary_pid(OsStr::new(".a.1.tmp"), OsStr::new("a.1")),
            None
        );
    }
}
