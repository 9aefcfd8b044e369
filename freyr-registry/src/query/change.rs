//! The change filters of a [`Query`]: [`filter_changed`](Query::filter_changed) and
//! [`filter_added`](Query::filter_added).

use freyr_core::Component;

use freyr_query::changed::{TickKind, TickTerm};
use freyr_query::fetch::QueryData;
use freyr_query::filter::QueryFilter;
use freyr_query::view::ViewSet;

use super::Query;

impl<'r, Q: QueryData, F: QueryFilter, V: ViewSet> Query<'r, Q, F, V> {
    /// Visits only the chunks whose `T` column was granted write access after tick `since`:
    /// bevy_ecs's `Changed<T>`, at chunk granularity and with the "since" tick explicit.
    ///
    /// Works with every run method (`each`, `each_chunk`, `each_with`, `each_async*`, and
    /// [`count`](Query::count), which counts the rows of the passing chunks and stamps nothing);
    /// several filters must all pass. The query's cached state is shared by every system that
    /// builds the same query type, so the tick is not kept in it: each system keeps its own last
    /// tick and passes it here. The comparison is `stamp > since` on 64-bit ticks (they never wrap).
    ///
    /// - **Chunk granularity.** Every (chunk, component) pair carries the tick it was last
    ///   written; a chunk that passes is visited whole, all its rows, changed or not (a filter is
    ///   conservative: it never misses a change, it may yield unchanged rows of a changed
    ///   chunk). A chunk that does not pass costs one comparison, never a row scan.
    /// - **"Changed" means write access was granted**, not that the bytes differ: a query with
    ///   `&mut T` stamps every chunk it visits, `get_mut` the entity's chunk, a row arriving in a
    ///   chunk (spawn, insert, remove, the last row filling a despawned row's hole) every
    ///   column of that chunk. Code that writes through raw column pointers
    ///   ([`ChunkRef::column_ptr`](freyr_core::ChunkRef::column_ptr)) stamps itself with
    ///   [`Archetype::mark_changed`](freyr_core::Archetype::mark_changed).
    /// - **The tick is the simulation tick** ([`Registry::tick`](crate::Registry::tick)),
    ///   stamped in launch and command order, so the stamps and what a filter yields are the
    ///   same for every worker count; a restore puts the snapshot's stamps back and stamps
    ///   nothing.
    ///
    /// An archetype without `T` is never visited; a `T` never registered matches nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct Health(u32);
    ///
    /// let mut registry = Registry::with_workers(2);
    /// let ids = registry.spawn_batch((0..2000).map(|_| (Health(100),))); // tick 0, 4 chunks
    /// registry.update(0.0); // now tick 1
    /// registry.get_mut::<Health>(ids[1500]).unwrap().0 -= 10;
    /// let mut seen = Vec::new();
    /// registry
    ///     .query::<(freyr::Entity, &Health)>()
    ///     .filter_changed::<Health>(0) // written after tick 0
    ///     .each_chunk(|entities, _| seen.push(entities.len()));
    /// assert_eq!(seen, [512]); // the one chunk holding ids[1500]
    /// ```
    pub fn filter_changed<T: Component>(self, since: u64) -> Self {
        self.tick_term::<T>(TickKind::Changed, since)
    }

    /// Visits only the chunks in which a row arrived after tick `since` (a spawn, an insert or
    /// removal moving the entity there, the last row filling a hole): bevy_ecs's `Added<T>` at
    /// chunk granularity, with the rules of [`filter_changed`](Query::filter_changed).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct Pos(f32);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.spawn_batch((0..600).map(|_| (Pos(0.0),))); // tick 0: chunks 0 and 1
    /// registry.update(0.0);
    /// registry.spawn((Pos(1.0),)); // tick 1: lands in chunk 1
    /// let mut rows = 0;
    /// registry
    ///     .query::<&Pos>()
    ///     .filter_added::<Pos>(0)
    ///     .each(|_, _| rows += 1);
    /// assert_eq!(rows, 600 - 512 + 1); // chunk 1, whole
    /// ```
    pub fn filter_added<T: Component>(self, since: u64) -> Self {
        self.tick_term::<T>(TickKind::Added, since)
    }

    fn tick_term<T: Component>(mut self, kind: TickKind, since: u64) -> Self {
        let id = self.registry.filter_component_id::<T>();
        self.ticks.push(TickTerm { id, kind, since });
        self
    }
}
