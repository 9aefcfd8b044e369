//! Events: values sent from any callback and read by later systems, in the same deterministic
//! order as commands.
//!
//! # Sending
//!
//! A callback sends with [`EachContext::send`](crate::EachContext::send) (in `each_with` and
//! `each_async_with`), a system with `Registry::send_event`.
//! Events travel with the commands of the same task: each task of an `each_async_with` call has
//! its own buffer, and at the next sync point the buffers are moved into the store in
//! (launch number, chunk index) order, each in send order — that is (launch, chunk, row, record)
//! order, the order commands apply in, whatever the worker count. A direct
//! `send_event` takes the next launch number like an `each_with`
//! call. Events become readable at that sync point (never while their task may still run).
//!
//! # Reading and retention
//!
//! A reader keeps its own [`EventCursor`] and reads with
//! `Registry::read_events`: every event stored since its last
//! read, in order, then the cursor moves past them. Events are double-buffered by tick: an event
//! stored at a sync point of tick `T` (`Registry::tick`) can be read
//! during ticks `T` and `T + 1` and is gone from tick `T + 2` on — a reader that runs every tick
//! (in any phase) misses nothing. A reader that skipped ticks skips what expired. Expired events
//! are dropped when the store next stores; events of a tick after the registry's (left by a load
//! to an earlier tick) are not readable, and that next store drops them.
//!
//! # Snapshots
//!
//! The store of `E` is the resource [`Events<E>`]; it is registered for snapshots when it is
//! made (by `Registry::add_event` or the first sync point that
//! stores an `E`), which is why an event type is `Clone`. A restore brings back the unread events
//! and the sequence numbers with them (and removes a store first made after the snapshot: no `E`
//! existed then); keep reader cursors in a snapshot resource to rewind them too. A cursor that
//! was not rewound reads the restored timeline without skipping or repeating (see
//! [`EventCursor`]).
//!
//! # Panics
//!
//! A task that panics loses its events with its commands (the panic rule of
//! [`commands`](crate::Commands)); the events of the other tasks are stored. A panicking `Drop`
//! of an expired event is re-raised after every event of the sync point was stored.

pub mod buffer;

/// Where a reader is in the stream of one event type: the sequence number of the next event it
/// reads, and the store (and timeline) it last read. [`EventCursor::default`] reads everything
/// still kept.
///
/// A cursor belongs to one store. Used with another one — a store a restore brought back (the
/// cursor was not rewound with the world), another registry's, or another event type's — it
/// reads from the last number the two histories share: for a restored store, the number of
/// events stored when the snapshot was taken (or its own position, if earlier), so it skips no
/// event of the new timeline and reads none it read before the snapshot again; for an unrelated
/// store, everything still kept. [`EventCursor::at`] makes a cursor that trusts its number in
/// any store (as a reader restored from a snapshot does). Equality and order compare positions.
///
/// # Examples
///
/// ```
/// use freyr::{EventCursor, Registry};
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct Hit(u32);
///
/// let mut registry = Registry::with_workers(1);
/// let mut cursor = EventCursor::default();
/// registry.send_event(Hit(1));
/// registry.execute_tasks();
/// let read: Vec<Hit> = registry.read_events::<Hit>(&mut cursor).cloned().collect();
/// assert_eq!(read, [Hit(1)]);
/// assert_eq!(cursor.position(), 1);
/// assert_eq!(registry.read_events::<Hit>(&mut cursor).count(), 0);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct EventCursor {
    next: u64,
    /// The timeline of the store this cursor last read; 0 for none (its number is trusted).
    timeline: u64,
}

impl PartialEq for EventCursor {
    fn eq(&self, other: &Self) -> bool {
        self.next == other.next
    }
}

impl Eq for EventCursor {}

impl core::hash::Hash for EventCursor {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.next.hash(state);
    }
}

impl PartialOrd for EventCursor {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for EventCursor {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.next.cmp(&other.next)
    }
}

impl EventCursor {
    /// A cursor at sequence number `position` (the number of events of its type stored before
    /// the next one it reads), trusted in whatever store it reads first.
    pub fn at(position: u64) -> EventCursor {
        EventCursor {
            next: position,
            timeline: 0,
        }
    }

    /// The sequence number of the next event this cursor reads.
    pub fn position(&self) -> u64 {
        self.next
    }
}

/// A fresh timeline id for a store (made, or copied by a snapshot or a restore): never 0.
fn next_timeline() -> u64 {
    static NEXT: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, core::sync::atomic::Ordering::Relaxed)
}

/// The stored events of type `E`: a resource of the registry, double-buffered by tick (see the
/// [module docs](self) for order and retention).
///
/// # Examples
///
/// ```
/// use freyr::{EventCursor, Events, Registry};
///
/// #[derive(Clone)]
/// struct Ping;
///
/// let mut registry = Registry::with_workers(1);
/// registry.add_event::<Ping>();
/// registry.send_event(Ping);
/// registry.send_event(Ping);
/// registry.execute_tasks();
/// let events = registry.resource::<Events<Ping>>().unwrap();
/// assert_eq!(events.len(), 2);
/// assert_eq!(events.sent(), 2);
/// ```
#[derive(Debug)]
pub struct Events<E> {
    /// Events of tick `older_tick`, numbered from `older_start`.
    older: Vec<E>,
    older_start: u64,
    older_tick: u64,
    /// Events of tick `newer_tick`, numbered from `newer_start`.
    newer: Vec<E>,
    newer_start: u64,
    newer_tick: u64,
    /// This store's identity: a copy (a snapshot's, a restore's) gets a new one, so a cursor
    /// that read another timeline is recognised.
    timeline: u64,
    /// The events numbered below `fork` are the history this store shares with the one it was
    /// copied from (all it held then); 0 for a store made empty.
    fork: u64,
}

impl<E> Default for Events<E> {
    fn default() -> Self {
        Events {
            older: Vec::new(),
            older_start: 0,
            older_tick: 0,
            newer: Vec::new(),
            newer_start: 0,
            newer_tick: 0,
            timeline: next_timeline(),
            fork: 0,
        }
    }
}

/// A copy is a new timeline that shares the events stored so far (see [`EventCursor`]).
impl<E: Clone> Clone for Events<E> {
    fn clone(&self) -> Self {
        Events {
            older: self.older.clone(),
            older_start: self.older_start,
            older_tick: self.older_tick,
            newer: self.newer.clone(),
            newer_start: self.newer_start,
            newer_tick: self.newer_tick,
            timeline: next_timeline(),
            fork: self.sent(),
        }
    }
}

impl<E> Events<E> {
    /// Number of events held (readable or not yet dropped).
    pub fn len(&self) -> usize {
        self.older.len() + self.newer.len()
    }

    /// Whether no event is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of events of this type stored so far: the sequence number the next one gets, and
    /// the position of a cursor that has read everything.
    pub fn sent(&self) -> u64 {
        self.newer_start + self.newer.len() as u64
    }

    /// Appends `events`, stored at tick `tick`: the older half is dropped when `tick` is two or
    /// more past it, and the newer half becomes the older one when `tick` moves on. A `tick`
    /// before the newer half's (the registry went back to an earlier tick and kept this store:
    /// a load, or a restore of a snapshot that did not copy it) drops both halves too: what
    /// they hold belongs to a timeline that is gone. Sequence numbers go on either way.
    ///
    /// # Panics
    ///
    /// Re-raises the first panic of an expired event's `Drop`, after every expired event was
    /// dropped and `events` were all appended: the store is then complete and consistent.
    pub fn extend_at(&mut self, tick: u64, events: impl IntoIterator<Item = E>) {
        let mut panic = None;
        if tick != self.newer_tick {
            let next = self.sent();
            if Some(tick) == self.newer_tick.checked_add(1) {
                core::mem::swap(&mut self.older, &mut self.newer);
                self.older_start = self.newer_start;
                self.older_tick = self.newer_tick;
            } else {
                self.older_start = next;
                self.older_tick = tick;
                drop_all(&mut self.older, &mut panic);
            }
            self.newer_start = next;
            self.newer_tick = tick;
            drop_all(&mut self.newer, &mut panic);
        }
        self.newer.extend(events);
        if let Some(panic) = panic {
            std::panic::resume_unwind(panic);
        }
    }

    /// The events readable at tick `now` from `cursor` on, in order; moves `cursor` past the
    /// last stored event. Events stored at tick `T` are readable while `T <= now <= T + 1`. A
    /// cursor of another store reads as [`EventCursor`] says; none reads past the last stored
    /// event.
    pub fn read<'a>(
        &'a self,
        cursor: &mut EventCursor,
        now: u64,
    ) -> impl Iterator<Item = &'a E> + use<'a, E> {
        // A cursor of another timeline reads from the last number the two share; none reads
        // past the end (what is stored from now on is not skipped).
        let shared = if cursor.timeline == 0 || cursor.timeline == self.timeline {
            cursor.next
        } else {
            cursor.next.min(self.fork)
        };
        let from = shared.min(self.sent());
        cursor.next = self.sent();
        cursor.timeline = self.timeline;
        let half = |events: &'a [E], start: u64, tick: u64| {
            let live = now.checked_sub(tick).is_some_and(|age| age <= 1);
            let skip = from.saturating_sub(start).min(events.len() as u64) as usize;
            if live { &events[skip..] } else { &[] }
        };
        half(&self.older, self.older_start, self.older_tick)
            .iter()
            .chain(half(&self.newer, self.newer_start, self.newer_tick))
    }
}

/// Empties `events`, keeping its capacity; a panicking `Drop` does not stop it (the slice's
/// drop glue goes on with the rest), and its payload is kept in `first` unless one is there.
fn drop_all<E>(events: &mut Vec<E>, first: &mut Option<Box<dyn core::any::Any + Send>>) {
    // `clear` sets the length to zero before dropping, so a panic leaves the vector empty.
    let cleared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| events.clear()));
    if let Err(payload) = cleared {
        freyr_sched::keep_first(first, payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_rotate_and_expire_by_tick() {
        let mut events = Events::default();
        events.extend_at(0, [1, 2]);
        events.extend_at(1, [3]);
        let mut c = EventCursor::default();
        assert_eq!(
            events.read(&mut c, 1).copied().collect::<Vec<_>>(),
            [1, 2, 3]
        );
        let mut c = EventCursor::default();
        assert_eq!(events.read(&mut c, 2).copied().collect::<Vec<_>>(), [3]);
        assert_eq!(c.position(), 3);
        events.extend_at(3, [4]);
        let mut c = EventCursor::at(1);
        assert_eq!(events.read(&mut c, 3).copied().collect::<Vec<_>>(), [4]);
        assert_eq!(events.len(), 1);
    }

    #[test]
    fn a_cursor_reads_only_what_is_new() {
        let mut events = Events::default();
        events.extend_at(5, [1, 2, 3]);
        let mut c = EventCursor::at(2);
        assert_eq!(events.read(&mut c, 5).copied().collect::<Vec<_>>(), [3]);
        assert_eq!(events.read(&mut c, 5).count(), 0);
        events.extend_at(5, [4]);
        assert_eq!(events.read(&mut c, 5).copied().collect::<Vec<_>>(), [4]);
    }
}
