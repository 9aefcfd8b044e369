//! The change stamps of a save: a section of the body of its own, after the archetypes, so a
//! loaded registry answers every `filter_changed(since)` and `filter_added(since)` as the saved
//! one did, and its next writes stamp as the saved one's would have.
//!
//! ```text
//!  stamps section = archetype count (u64), then per archetype, in creation order:
//!      changed: count (u64), that many u64   one per (allocated chunk, column), chunk-major
//!      added:   count (u64), that many u64
//! ```

use freyr_core::{ArchetypeId, World};

use super::LoadError;
use super::format::{Reader, Writer};

/// One archetype's stamps as read from a file: `(changed, added)`.
pub type ArchetypeStamps = (Vec<u64>, Vec<u64>);

/// Writes the stamps section of `world`.
pub fn write_stamps(w: &mut Writer, world: &World) {
    let (mut changed, mut added) = (Vec::new(), Vec::new());
    w.u64(world.archetypes().len() as u64);
    for archetype in world.archetypes() {
        archetype.stamps_into(&mut changed, &mut added);
        w.u64s(&changed);
        w.u64s(&added);
    }
}

/// Reads a stamps section of `archetypes` archetypes (their lengths are checked against the
/// built world by [`restore_stamps`]).
pub fn read_stamps(
    r: &mut Reader<'_>,
    archetypes: usize,
) -> Result<Vec<ArchetypeStamps>, LoadError> {
    let count = r.u64("the stamps' archetype count")?;
    if count != archetypes as u64 {
        return Err(LoadError::Corrupt {
            what: "the stamps do not list every archetype",
        });
    }
    (0..archetypes)
        .map(|_| Ok((r.u64s("a changed stamp")?, r.u64s("an added stamp")?)))
        .collect()
}

/// Puts the stamps read by [`read_stamps`] into the world built from the same file (whose
/// archetypes are the file's, in its order).
pub fn restore_stamps(world: &mut World, stamps: &[ArchetypeStamps]) -> Result<(), LoadError> {
    let ids: Vec<ArchetypeId> = world.archetypes().iter().map(|a| a.id()).collect();
    if ids.len() != stamps.len() {
        return Err(LoadError::Corrupt {
            what: "the stamps do not list every archetype",
        });
    }
    for (&id, (changed, added)) in ids.iter().zip(stamps) {
        world
            .restore_stamps(id, changed, added)
            .map_err(|e| LoadError::Corrupt { what: e.0 })?;
    }
    Ok(())
}
