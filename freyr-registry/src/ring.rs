//! [`SnapshotRing`]: the snapshots of the last ticks, for a rollback loop that allocates
//! nothing per tick once warm.

use crate::registry::Registry;

use freyr_persist::snapshot::{Snapshot, SnapshotError};

/// Snapshots of the last `capacity` ticks, each kept in the slot `tick % capacity`, whose
/// buffers are reused: once every slot has held a world of the current layout, a
/// [`push`](SnapshotRing::push) allocates nothing (unless a component or resource `Clone`
/// does).
///
/// # Examples
///
/// ```
/// use freyr::Registry;
/// use freyr::snapshot::SnapshotRing;
///
/// #[derive(Clone, Copy)]
/// struct X(i64);
///
/// let mut registry = Registry::with_workers(2);
/// registry.register_snapshot_copy::<X>();
/// let e = registry.spawn((X(0),));
/// registry.add_system(freyr::Phase::Update, move |r: &mut Registry, _: f32| {
///     r.get_mut::<X>(e).unwrap().0 += 1;
/// });
/// let mut ring = SnapshotRing::new(8);
/// for _ in 0..20 {
///     ring.push(&registry).unwrap(); // the state before tick `registry.tick()`
///     registry.update(0.016);
/// }
/// assert_eq!(registry.tick(), 20);
/// ring.restore(&mut registry, 15).unwrap(); // roll back 5 ticks
/// assert_eq!((registry.tick(), registry.get::<X>(e).unwrap().0), (15, 15));
/// assert!(ring.restore(&mut registry, 3).is_err()); // too old: overwritten
/// ```
pub struct SnapshotRing {
    slots: Box<[Snapshot]>,
    /// The tick each slot holds, `None` while it holds none.
    ticks: Box<[Option<u64>]>,
}

impl SnapshotRing {
    /// A ring of `capacity` empty slots (8–16 ticks is typical for rollback).
    ///
    /// # Panics
    ///
    /// If `capacity` is 0.
    pub fn new(capacity: usize) -> SnapshotRing {
        assert!(
            capacity > 0,
            "freyr: a SnapshotRing needs at least one slot"
        );
        SnapshotRing {
            slots: (0..capacity).map(|_| Snapshot::new()).collect(),
            ticks: vec![None; capacity].into_boxed_slice(),
        }
    }

    /// Number of slots.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Takes a snapshot of `registry` at its current [`tick`](Registry::tick) into that tick's
    /// slot (replacing what the slot held) and returns the tick.
    ///
    /// # Errors
    ///
    /// As [`Registry::snapshot`]; the slot then holds what it held before.
    ///
    /// # Panics
    ///
    /// Re-raises a panic of a component or resource `Clone`. The slot then belongs to `tick`
    /// with an incomplete snapshot: the tick it held before is gone from
    /// [`ticks`](Self::ticks), and restoring `tick` is refused with
    /// [`SnapshotError::Incomplete`] until a later push fills the slot again.
    pub fn push(&mut self, registry: &Registry) -> Result<u64, SnapshotError> {
        let tick = registry.tick();
        let slot = self.slot(tick);
        // Claimed before the copy, so a panic inside it leaves the slot named for `tick`
        // (its snapshot incomplete), not for the tick it overwrote half-way.
        let held = self.ticks[slot].replace(tick);
        if let Err(error) = registry.snapshot_into(&mut self.slots[slot]) {
            // Refused before anything was copied: the slot still holds its old snapshot.
            self.ticks[slot] = held;
            return Err(error);
        }
        Ok(tick)
    }

    /// The snapshot of `tick`, if the ring holds it (incomplete if its push panicked: see
    /// [`Snapshot::is_complete`]).
    pub fn get(&self, tick: u64) -> Option<&Snapshot> {
        let slot = self.slot(tick);
        (self.ticks[slot] == Some(tick)).then(|| &self.slots[slot])
    }

    /// Restores `registry` to `tick` (see [`Registry::restore`]) and forgets the snapshots of
    /// later ticks, which belong to the timeline being replaced (also when the restore then
    /// re-raises the panic of a replaced value's `Drop`: the registry is restored by then).
    ///
    /// # Errors
    ///
    /// [`SnapshotError::TickNotInRing`] if no slot holds `tick`;
    /// [`SnapshotError::Incomplete`] if its push panicked; otherwise as [`Registry::restore`].
    pub fn restore(&mut self, registry: &mut Registry, tick: u64) -> Result<(), SnapshotError> {
        let slot = self.slot(tick);
        if self.ticks[slot] != Some(tick) {
            return Err(SnapshotError::TickNotInRing { tick });
        }
        let ticks = &mut self.ticks;
        // Forgotten as soon as the registry is restored: a replaced value's `Drop` may panic
        // after that, and the later ticks belong to the replaced timeline all the same.
        registry.restore_then(&self.slots[slot], &mut || {
            for held in ticks.iter_mut() {
                if held.is_some_and(|t| t > tick) {
                    *held = None;
                }
            }
        })
    }

    /// The ticks the ring can restore, oldest first (a slot whose push panicked is left out).
    pub fn ticks(&self) -> Vec<u64> {
        let mut ticks: Vec<u64> = (self.ticks.iter().zip(self.slots.iter()))
            .filter_map(|(tick, snapshot)| tick.filter(|_| snapshot.is_complete()))
            .collect();
        ticks.sort_unstable();
        ticks
    }

    fn slot(&self, tick: u64) -> usize {
        (tick % self.slots.len() as u64) as usize
    }
}
