//! Change filters (`Query::filter_changed`,
//! `Query::filter_added`) and the stamping of write access: which
//! chunks of a matched archetype a run visits, and the change tick it stamps on the columns it
//! writes there.
//!
//! ```text
//!  per matched archetype: terms -> (column, kind, since), written columns
//!  per chunk:             pass = every term's tick(chunk, column) > since   (one load each)
//!                         if pass: stamp tick on every written column        (one store each)
//! ```
//!
//! Both are per chunk, never per row: an unchanged chunk costs one comparison per term.

use freyr_core::{Archetype, ComponentId};

/// What a change term compares.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TickKind {
    /// The tick write access was last granted.
    Changed,
    /// The tick a row last arrived.
    Added,
}

/// One change condition: component `id` (`None`: never registered, so no archetype has it)
/// stamped after `since`.
#[derive(Copy, Clone, Debug)]
pub struct TickTerm {
    pub id: Option<ComponentId>,
    pub kind: TickKind,
    pub since: u64,
}

/// The chunk selection and stamping of one run of a query over one archetype (internal to the
/// Freyr workspace: freyr-registry's function-system queries walk chunks with it).
pub struct ArchetypeTicks<'a> {
    archetype: &'a Archetype,
    /// `(column, kind, since)` per term.
    terms: Vec<(usize, TickKind, u64)>,
    written: &'a [usize],
    tick: u64,
}

impl<'a> ArchetypeTicks<'a> {
    /// The selection for `archetype` whose written columns are `written`, stamping `tick`; `None`
    /// when a term names a component the archetype lacks (no chunk of it passes).
    #[inline]
    pub fn new(
        archetype: &'a Archetype,
        terms: &[TickTerm],
        written: &'a [usize],
        tick: u64,
    ) -> Option<Self> {
        let mut resolved = Vec::new();
        for term in terms {
            let column = archetype.column_index(term.id?)?;
            resolved.push((column, term.kind, term.since));
        }
        Some(ArchetypeTicks {
            archetype,
            terms: resolved,
            written,
            tick,
        })
    }

    /// Whether chunk `chunk` passes every term.
    #[inline]
    pub fn passes(&self, chunk: usize) -> bool {
        self.terms.iter().all(|&(column, kind, since)| {
            let stamp = match kind {
                TickKind::Changed => self.archetype.changed_tick(chunk, column),
                TickKind::Added => self.archetype.added_tick(chunk, column),
            };
            stamp > since
        })
    }

    /// Stamps the written columns of chunk `chunk` changed: the run was granted write access.
    #[inline]
    pub fn stamp(&self, chunk: usize) {
        for &column in self.written {
            self.archetype.mark_changed(chunk, column, self.tick);
        }
    }

    /// Checks chunk `chunk` and, when it passes, stamps it: what a run does before visiting it.
    #[inline]
    pub fn select(&self, chunk: usize) -> bool {
        let pass = self.passes(chunk);
        if pass {
            self.stamp(chunk);
        }
        pass
    }
}
