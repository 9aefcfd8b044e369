//! Change ticks: per (chunk, component) of an archetype, the simulation tick at which write
//! access to that chunk's column was last granted ("changed") and at which a row last arrived
//! in the chunk ("added").
//!
//! ```text
//!  columns = 3 (the archetype's components, in column order)
//!  changed: [ c0:col0 c0:col1 c0:col2 | c1:col0 c1:col1 c1:col2 | ... ]   one u64 per pair
//!  added:   [ c0:col0 c0:col1 c0:col2 | c1:col0 ...                    ]
//! ```
//!
//! Ticks are 64-bit and never wrap in practice (2^64 ticks at 1 MHz is 584,000 years), so a
//! plain `>` compares them. Stores are relaxed: a stamp is written by the thread that was
//! granted write access (the caller of a world operation, or the launching thread of a parallel
//! query) and read after the sync point that orders it, so no stronger ordering is needed; the
//! atomics only make the shared stores of one launch sound.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One (chunk, column)'s changed tick, located once ([`Archetype::changed_entries`]) for a
/// caller that stamps it again and again while the archetype stays as it was: a query that
/// caches where its columns are for as long as the world's layout is unchanged stamps its
/// written columns through these, one relaxed store each and no lookups.
///
/// ```text
///  changed: [ c0:col0 c0:col1 c0:col2 | c1:col0 c1:col1 c1:col2 | ... ]
///                     ^entry 0                 ^entry 1                  (column 1)
/// ```
///
/// [`Archetype::changed_entries`]: crate::Archetype::changed_entries
///
/// # Examples
/// ```
/// let mut world = freyr::World::new();
/// world.spawn_batch((0..600u32).map(|i| (i, 0u8)));
/// let e = world.spawn((7u32, 1u8));
/// let (arch, _, _) = world.entity_location(e).unwrap();
/// let archetype = world.archetype(arch);
/// let entries: Vec<_> = archetype.changed_entries(1).collect();
/// assert_eq!(entries.len(), 2); // 601 rows: two chunks
/// for entry in &entries {
///     // SAFETY: `archetype` is borrowed from `world` for this whole block: not modified.
///     unsafe { entry.stamp(4) };
/// }
/// assert!((0..2).all(|chunk| archetype.changed_tick(chunk, 1) == 4));
/// assert!((0..2).all(|chunk| archetype.changed_tick(chunk, 0) != 4));
/// ```
#[derive(Copy, Clone, Debug)]
pub struct ChangedEntry(NonNull<AtomicU64>);

// SAFETY: the handle only ever stores to an atomic (relaxed), which any thread may do; when it
// may store is the `stamp` caller's contract, not the thread's.
unsafe impl Send for ChangedEntry {}
// SAFETY: as for `Send`: `&ChangedEntry` gives nothing but the same atomic store.
unsafe impl Sync for ChangedEntry {}

impl ChangedEntry {
    /// Stamps the entry's chunk and column changed at `tick`, as
    /// [`Archetype::mark_changed`](crate::Archetype::mark_changed) would have when the entry
    /// was taken.
    ///
    /// # Safety
    /// The archetype the entry was taken from still exists and has not been mutably borrowed
    /// since (no `&mut World` was taken in between), so its tick storage is where it was.
    #[inline(always)]
    pub unsafe fn stamp(&self, tick: u64) {
        // SAFETY: the entry points into the archetype's tick storage, alive and unmoved per the
        // caller contract; atomics may be stored through shared references.
        unsafe { self.0.as_ref() }.store(tick, Ordering::Relaxed);
    }
}

/// The change ticks of one archetype's chunks (allocated ones, spare chunks included).
pub(crate) struct ChangeTicks {
    columns: usize,
    changed: Vec<AtomicU64>,
    added: Vec<AtomicU64>,
    /// Per chunk: `tick + 1` of the last arrival stamp while every entry of the chunk still
    /// holds it (0: not known). Lets the arrivals of a tick after the first skip the per-column
    /// stores (a row move stamps two chunks; a 10k add/remove loop stamps the same few chunks
    /// thousands of times in one tick). Every other stamp of `changed` clears it.
    arrived: Vec<AtomicU64>,
    /// Whether some chunk may hold a key (set with one; cleared once a stamp clears them all):
    /// while it is false, which is the usual state of an archetype queries write, a stamp
    /// clears nothing, so a query's stamps cost what they did without the keys.
    armed: AtomicBool,
}

impl ChangeTicks {
    /// No chunks yet, for an archetype of `columns` components.
    pub(crate) fn new(columns: usize) -> ChangeTicks {
        ChangeTicks {
            columns,
            changed: Vec::new(),
            added: Vec::new(),
            arrived: Vec::new(),
            armed: AtomicBool::new(false),
        }
    }

    /// Makes room for `chunks` chunks (new entries hold tick 0). Never shrinks: entries of freed
    /// chunks are stamped again when rows arrive in those chunks.
    pub(crate) fn ensure(&mut self, chunks: usize) {
        let n = chunks * self.columns;
        if self.changed.len() < n {
            self.changed.resize_with(n, || AtomicU64::new(0));
            self.added.resize_with(n, || AtomicU64::new(0));
        }
        if self.arrived.len() < chunks {
            self.arrived.resize_with(chunks, || AtomicU64::new(0));
        }
    }

    /// How many chunks the ticks were ensured for (what `set_arrived`'s contract reads).
    #[cfg(any(test, feature = "test-support"))]
    pub(crate) fn ensured_chunks(&self) -> usize {
        self.arrived.len()
    }

    /// The tick write access to (`chunk`, `column`) was last granted.
    #[inline]
    pub(crate) fn changed(&self, chunk: usize, column: usize) -> u64 {
        self.changed[chunk * self.columns + column].load(Ordering::Relaxed)
    }

    /// The tick a row last arrived in `chunk` (the same for every column).
    #[inline]
    pub(crate) fn added(&self, chunk: usize, column: usize) -> u64 {
        self.added[chunk * self.columns + column].load(Ordering::Relaxed)
    }

    /// Stamps (`chunk`, `column`) changed at `tick`: one relaxed store, skipped when the entry
    /// already holds `tick`. A store of the value already there still takes the cache line for
    /// the storing core, and one line holds the entries of several chunks: two threads writing
    /// rows of neighbouring chunks at one tick (the propagation pass's trees, whose leaves share
    /// a few chunks) passed it between their cores on every write. Skipping is exact: the entry
    /// keeps its value, so the arrival key, which says every entry of the chunk holds its tick,
    /// stays true.
    #[inline]
    pub(crate) fn set_changed(&self, chunk: usize, column: usize, tick: u64) {
        let entry = &self.changed[chunk * self.columns + column];
        if entry.load(Ordering::Relaxed) != tick {
            entry.store(tick, Ordering::Relaxed);
            self.clear_key(chunk);
        }
    }

    /// Forgets `chunk`'s arrival key, if any key may be set.
    #[inline]
    fn clear_key(&self, chunk: usize) {
        if self.armed.load(Ordering::Relaxed) {
            self.arrived[chunk].store(0, Ordering::Relaxed);
        }
    }

    /// Stamps `column` of each of the first `chunks` chunks changed at `tick`: what a query that
    /// visits every chunk of the archetype does, as one tight strided loop (no per-chunk index
    /// arithmetic or bounds check).
    ///
    /// # Panics
    /// If `column` is not below the column count or fewer than `chunks` chunks have entries.
    #[inline]
    pub(crate) fn set_changed_first(&self, chunks: usize, column: usize, tick: u64) {
        assert!(column < self.columns, "freyr: no column {column}");
        let entries = &self.changed[..chunks * self.columns];
        // A plain strided index (`skip` + `step_by` cost about seven instructions a store).
        let mut at = column;
        while at < entries.len() {
            entries[at].store(tick, Ordering::Relaxed);
            at += self.columns;
        }
        self.clear_keys_first(chunks);
    }

    /// Forgets the arrival keys of the first `chunks` chunks, if any key may be set.
    #[inline]
    fn clear_keys_first(&self, chunks: usize) {
        if self.armed.load(Ordering::Relaxed) {
            for a in &self.arrived[..chunks] {
                a.store(0, Ordering::Relaxed);
            }
            // Every key cleared: nothing to clear until the next arrival sets one. (A key is
            // only set through `&mut self`, so none is set while this runs.)
            if chunks >= self.arrived.len() {
                self.armed.store(false, Ordering::Relaxed);
            }
        }
    }

    /// The changed-tick entries of `column` in the first `chunks` chunks, as handles that stamp
    /// them without looking anything up again ([`ChangedEntry`]). Clears those chunks' arrival
    /// keys now, as a stamp would: a key is only set through `&mut self`, so while the entries
    /// may be used (no `&mut self` since) none is set again and their stamps need not clear
    /// any.
    ///
    /// # Panics
    /// If `column` is not below the column count or fewer than `chunks` chunks have entries.
    pub(crate) fn entries(
        &self,
        chunks: usize,
        column: usize,
    ) -> impl ExactSizeIterator<Item = ChangedEntry> + '_ {
        assert!(column < self.columns, "freyr: no column {column}");
        let entries = &self.changed[..chunks * self.columns];
        self.clear_keys_first(chunks);
        (0..chunks)
            .map(move |chunk| ChangedEntry(NonNull::from(&entries[chunk * self.columns + column])))
    }

    /// Stamps every column of `chunk` changed at `tick`.
    #[inline]
    pub(crate) fn set_chunk_changed(&self, chunk: usize, tick: u64) {
        self.store_chunk_changed(chunk, tick);
        self.clear_key(chunk);
    }

    /// The stores of [`set_chunk_changed`](ChangeTicks::set_chunk_changed).
    #[inline]
    fn store_chunk_changed(&self, chunk: usize, tick: u64) {
        let at = chunk * self.columns;
        for t in &self.changed[at..at + self.columns] {
            t.store(tick, Ordering::Relaxed);
        }
    }

    /// Stamps a row's arrival in `chunk` at `tick`: every column added and changed. When the
    /// chunk's last arrival was stamped at the same `tick` and nothing stamped it since, every
    /// entry already holds `tick` and nothing is stored.
    ///
    /// Unchecked because every row move calls it twice (the landing chunk and the hole's): the
    /// bounds check and the panic path it keeps alive cost a 10k add/remove loop about 4% of
    /// its instructions.
    ///
    /// # Safety
    /// `chunk` is below the chunk count of the last [`ensure`](ChangeTicks::ensure) (the owning
    /// archetype calls it whenever its chunk list grows, so any chunk of the list qualifies).
    #[inline(always)]
    pub(crate) unsafe fn set_arrived(&mut self, chunk: usize, tick: u64) {
        debug_assert!(
            chunk < self.arrived.len(),
            "freyr: arrival stamp past ensure()"
        );
        let key = tick.wrapping_add(1);
        // SAFETY: `ensure(n)` keeps `arrived.len() >= n` (it never shrinks) and `chunk < n`
        // (caller contract).
        let known = unsafe { self.arrived.get_unchecked_mut(chunk) }.get_mut();
        if *known == key && key != 0 {
            return;
        }
        *known = key;
        *self.armed.get_mut() = true;
        self.stamp_arrived(chunk, tick);
    }

    /// The stores of [`set_arrived`](ChangeTicks::set_arrived).
    #[inline(never)]
    fn stamp_arrived(&self, chunk: usize, tick: u64) {
        let at = chunk * self.columns;
        for t in &self.added[at..at + self.columns] {
            t.store(tick, Ordering::Relaxed);
        }
        self.store_chunk_changed(chunk, tick);
    }

    /// Writes the `(changed, added)` ticks of the first `chunks` chunks, chunk-major, into
    /// `changed` and `added` (replacing their contents; no allocation once they are large
    /// enough), for a snapshot.
    pub(crate) fn export_into(&self, chunks: usize, changed: &mut Vec<u64>, added: &mut Vec<u64>) {
        let n = (chunks * self.columns).min(self.changed.len());
        let read = |v: &[AtomicU64], out: &mut Vec<u64>| {
            out.clear();
            out.extend(v[..n].iter().map(|t| t.load(Ordering::Relaxed)));
        };
        read(&self.changed, changed);
        read(&self.added, added);
    }

    /// Puts back ticks [`export_into`](ChangeTicks::export_into)ed from an archetype of the same columns
    /// (the entries past them keep tick 0).
    pub(crate) fn import(&mut self, changed: &[u64], added: &[u64]) {
        debug_assert_eq!(changed.len(), added.len());
        self.ensure(changed.len() / self.columns.max(1));
        for (t, &v) in self.changed.iter_mut().zip(changed) {
            *t.get_mut() = v;
        }
        for (t, &v) in self.added.iter_mut().zip(added) {
            *t.get_mut() = v;
        }
        for a in &mut self.arrived {
            *a.get_mut() = 0;
        }
        *self.armed.get_mut() = false;
    }
}

#[cfg(test)]
mod tests {
    use super::ChangeTicks;

    /// `set_arrived` with its bounds checked first.
    fn arrive(ticks: &mut ChangeTicks, chunk: usize, tick: u64) {
        assert!(chunk < ticks.arrived.len());
        // SAFETY: `chunk` is below `arrived.len()`, the count of the last `ensure`.
        unsafe { ticks.set_arrived(chunk, tick) }
    }

    #[test]
    fn stamps_are_per_chunk_and_column_and_round_trip() {
        let mut ticks = ChangeTicks::new(2);
        ticks.ensure(3);
        ticks.set_changed(1, 1, 7);
        arrive(&mut ticks, 2, 9);
        assert_eq!((ticks.changed(1, 1), ticks.changed(1, 0)), (7, 0));
        assert_eq!((ticks.added(2, 0), ticks.changed(2, 1)), (9, 9));
        let (mut changed, mut added) = (Vec::new(), Vec::new());
        ticks.export_into(3, &mut changed, &mut added);
        assert_eq!(changed, [0, 0, 0, 7, 9, 9]);
        let mut back = ChangeTicks::new(2);
        back.import(&changed, &added);
        let (mut c2, mut a2) = (Vec::new(), Vec::new());
        back.export_into(3, &mut c2, &mut a2);
        assert_eq!((c2, a2), (changed, added));
    }

    #[test]
    fn a_repeated_arrival_restamps_what_was_stamped_since() {
        let mut ticks = ChangeTicks::new(2);
        ticks.ensure(2);
        arrive(&mut ticks, 1, 3);
        ticks.set_changed(1, 0, 9);
        arrive(&mut ticks, 1, 3);
        assert_eq!((ticks.changed(1, 0), ticks.changed(1, 1)), (3, 3));
        ticks.set_chunk_changed(1, 5);
        arrive(&mut ticks, 1, 3);
        assert_eq!((ticks.changed(1, 0), ticks.changed(1, 1)), (3, 3));
        ticks.set_changed_first(2, 1, 7);
        arrive(&mut ticks, 1, 3);
        assert_eq!((ticks.changed(1, 1), ticks.added(1, 1)), (3, 3));
        // A stamp of the first chunks only keeps the keys past them.
        ticks.set_changed_first(1, 1, 7);
        arrive(&mut ticks, 1, 3);
        assert_eq!((ticks.changed(0, 1), ticks.changed(1, 1)), (7, 3));
        // Once a stamp cleared every key, the next stamps clear nothing, and the next arrival
        // sets a key again.
        ticks.set_changed_first(2, 0, 6);
        ticks.set_changed(1, 1, 4);
        arrive(&mut ticks, 1, 3);
        assert_eq!((ticks.changed(1, 0), ticks.changed(1, 1)), (3, 3));
        ticks.set_chunk_changed(1, 2);
        arrive(&mut ticks, 1, 3);
        assert_eq!(ticks.changed(1, 0), 3);
        // A restore puts back other stamps; the next arrival at the same tick stamps again.
        ticks.import(&[0, 0, 8, 8], &[0, 0, 8, 8]);
        arrive(&mut ticks, 1, 3);
        assert_eq!((ticks.added(1, 0), ticks.changed(1, 1)), (3, 3));
        // A stamp of the tick an entry already holds changes nothing, the key included: the
        // next arrival at that tick still finds every entry holding it.
        arrive(&mut ticks, 1, 11);
        ticks.set_changed(1, 0, 11);
        assert_eq!(*ticks.arrived[1].get_mut(), 12);
        ticks.set_changed(1, 0, 12);
        assert_eq!(*ticks.arrived[1].get_mut(), 0);
        arrive(&mut ticks, 1, 11);
        assert_eq!((ticks.changed(1, 0), ticks.changed(1, 1)), (11, 11));
        // The last tick has no key; its arrivals always stamp.
        arrive(&mut ticks, 0, u64::MAX);
        ticks.set_changed(0, 0, 1);
        arrive(&mut ticks, 0, u64::MAX);
        assert_eq!(ticks.changed(0, 0), u64::MAX);
    }
}
