//! [`WorldId`]: the identity of one [`World`](crate::World) value, never reused in a process.

use core::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};

/// The identity of one [`World`](crate::World): every `World::new()` takes a fresh one from a
/// process-wide 64-bit counter, so no two worlds created by one process share an id (at a
/// billion worlds a second the counter lasts over 500 years; exhausting it panics rather than
/// wrapping).
///
/// Caches built from a world (component ids, matched archetypes, access sets) store its id and
/// compare it with the world they are used with: a world replaced behind a cache — `*world =
/// World::new()`, `mem::swap`, `mem::take` — carries a different id, so the cache knows to
/// rebuild instead of reading one type as another. Moving a world keeps its id; it is the same
/// world.
///
/// # Examples
/// ```
/// use freyr::World;
/// let mut a = World::new();
/// let mut b = World::new();
/// let (id_a, id_b) = (a.id(), b.id());
/// assert_ne!(id_a, id_b);
/// core::mem::swap(&mut a, &mut b);
/// assert_eq!(a.id(), id_b);
/// let taken = core::mem::take(&mut a);
/// assert_eq!(taken.id(), id_b);
/// assert_ne!(a.id(), id_b); // `take` left a new world behind
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorldId(NonZeroU64);

static NEXT: AtomicU64 = AtomicU64::new(1);

impl WorldId {
    /// A fresh id, distinct from every id handed out before in this process.
    ///
    /// # Panics
    /// If 2^64 - 1 ids were handed out already.
    pub(crate) fn fresh() -> WorldId {
        let id = NEXT
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1))
            .expect("freyr: the WorldId counter is exhausted (2^64 - 1 worlds were created)");
        WorldId(NonZeroU64::new(id).expect("the counter starts at 1 and never wraps"))
    }

    /// The id as a number (for logs and diagnostics).
    ///
    /// # Examples
    /// ```
    /// let world = freyr::World::new();
    /// assert!(world.id().get() >= 1);
    /// ```
    pub fn get(self) -> u64 {
        self.0.get()
    }
}
