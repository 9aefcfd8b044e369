//! The registry's side of queries: the cache of query states, and the frames that the run
//! methods of [`Query`](crate::Query) execute in (refresh the state, wait for conflicting
//! work through [`SyncedWorld`](freyr_query::world::SyncedWorld), mark the callback, book the label).

use std::sync::Arc;
use std::time::Instant;

use freyr_core::World;

use freyr_query::events::buffer::TaskOutput;

use freyr_query::access::Access;
use freyr_query::changed::{ArchetypeTicks, TickTerm};
use freyr_query::error::QueryError;
use freyr_query::fetch::QueryData;
use freyr_query::filter::QueryFilter;
use freyr_query::launch::callback::CallbackScope;
use freyr_query::launch::inflight::OpAccess;
use freyr_query::launch::job::Kernel;
use freyr_query::state::{LayoutStamp, QueryState};
use freyr_query::view::ViewSet;

use super::Registry;
use freyr_query::world::{LaunchInfo, SyncedWorld};

impl Registry {
    /// The cached state of `(Q, F)`, if a query of that type was built before on the current
    /// world (a replaced world starts with an empty cache).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct A;
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.spawn((A,));
    /// assert!(registry.query_state::<&A, ()>().is_none());
    /// assert_eq!(registry.query::<&A>().count(), 1);
    /// assert_eq!(registry.query_state::<&A, ()>().unwrap().matched_archetypes().count(), 1);
    /// *registry.world_mut() = freyr::World::new();
    /// assert!(registry.query_state::<&A, ()>().is_none());
    /// ```
    pub fn query_state<Q: QueryData, F: QueryFilter>(&self) -> Option<&QueryState<Q, F>> {
        self.queries.get(self.sync.world_id())
    }

    /// Checks the registry is not driven from its own callback and builds or refreshes the
    /// state of `(Q, F)`: what [`Registry::try_query_filtered`] does before handing out a query.
    ///
    /// # Errors
    ///
    /// On conflicting access in `Q`.
    pub(crate) fn prepare_query<Q: QueryData, F: QueryFilter>(
        &mut self,
        what: &str,
    ) -> Result<(), QueryError> {
        self.guard(what);
        self.sync.refresh::<Q, F>(&mut self.queries).map(drop)
    }

    /// `T`'s component id, if registered (a change filter's term). Waits for nothing.
    pub(crate) fn filter_component_id<T: freyr_core::Component>(
        &self,
    ) -> Option<freyr_core::ComponentId> {
        self.sync.component_id::<T>()
    }

    /// Number of entities `(Q, F)` matches in the chunks that pass the change filter `terms`.
    /// Waits for nothing: in-flight work never changes which entities exist, and never stamps
    /// (write access is stamped on the thread that grants it). Stamps nothing: a count grants
    /// no write access.
    pub(crate) fn query_count<Q: QueryData, F: QueryFilter>(
        &mut self,
        terms: &[TickTerm],
    ) -> usize {
        self.guard("Query::count");
        let state = state_or_panic(self.sync.refresh::<Q, F>(&mut self.queries));
        if terms.is_empty() {
            return state
                .matched()
                .iter()
                .map(|m| self.sync.archetype_len(m.id))
                .sum();
        }
        // The chunk lengths are layout and the stamps are atomics that only the registry's own
        // thread writes: no component value is read.
        let world = self.sync.read(&OpAccess::Layout, &self.profiler);
        let mut rows = 0;
        for m in state.matched() {
            let archetype = world.archetype(m.id);
            let Some(ticks) = ArchetypeTicks::new(archetype, terms, &[], 0) else {
                continue;
            };
            for (index, chunk) in archetype.chunks().enumerate() {
                if ticks.passes(index) {
                    rows += chunk.len();
                }
            }
        }
        rows
    }

    /// The frame of `each` and `each_chunk`: checks the registry is not driven from its own
    /// callback (`what` names the caller in that panic), refreshes the query state, waits for
    /// in-flight work that conflicts with it, runs `body` inside the callback marker, and records
    /// the label's time. `body` gets a world on which nothing else touches `Q`'s columns until it
    /// returns, the state refreshed against it, and the stamp of its current layout (for
    /// [`QueryState::runs`]).
    #[inline(always)]
    pub(crate) fn run_sync<Q: QueryData, F: QueryFilter>(
        &mut self,
        what: &'static str,
        label: Option<&'static str>,
        body: impl FnOnce(&World, &mut QueryState<Q, F>, LayoutStamp),
    ) {
        // The clock is read only for a label: an unlabelled `each` over a few small archetypes
        // costs about as much as two clock reads.
        let start = label.map(|_| Instant::now());
        #[cfg(feature = "tracing")]
        let _each = freyr_profile::spans::each(label).entered();
        self.guard(what);
        let state = state_or_panic(self.sync.refresh::<Q, F>(&mut self.queries));
        let (world, stamp) = self
            .sync
            .read_with_layout(&OpAccess::Components(state.access()), &self.profiler);
        {
            let _scope = CallbackScope::enter(self.id);
            body(world, state, stamp);
        }
        if let (Some(label), Some(start)) = (label, start) {
            self.profiler.record_label(label, 0, start.elapsed());
        }
    }

    /// The frame of `each_with`: as [`run_sync`](Registry::run_sync), with the views `V` fetched
    /// after the wait (their access included in it) and a command buffer that joins the pending
    /// commands under a fresh launch number.
    ///
    /// # Panics
    ///
    /// If a [`Res<T>`](crate::Res) view names a missing resource (before anything runs).
    pub(crate) fn run_with<Q: QueryData, F: QueryFilter, V: ViewSet>(
        &mut self,
        label: Option<&'static str>,
        body: impl FnOnce(&World, &QueryState<Q, F>, V::Fetch, &mut TaskOutput),
    ) {
        let start = Instant::now();
        #[cfg(feature = "tracing")]
        let _each = freyr_profile::spans::each(label).entered();
        self.guard("Query::each_with");
        let state = state_or_panic(self.sync.refresh::<Q, F>(&mut self.queries));
        let access = query_access::<Q, F, V>(&self.sync, state);
        let (world, resources) = self
            .sync
            .read_with_resources(&OpAccess::Components(&access), &self.profiler);
        let views = V::fetch(world, resources).unwrap_or_else(|e| panic!("freyr: {e}"));
        let seq = self.next_seq;
        self.next_seq += 1;
        let mut commands = TaskOutput::default();
        {
            let _scope = CallbackScope::enter(self.id);
            body(world, state, views, &mut commands);
        }
        if !commands.is_empty() {
            self.pending.push((seq, vec![commands]));
        }
        if let Some(label) = label {
            self.profiler.record_label(label, 0, start.elapsed());
        }
    }

    /// The frame of the `each_async*` methods: refreshes the state and launches `kernel` through
    /// [`SyncedWorld::launch`](freyr_query::world::SyncedWorld::launch). Returns the launch number, or
    /// `None` when nothing matched.
    ///
    /// # Panics
    ///
    /// If a [`Res<T>`](crate::Res) view names a missing resource (before anything runs).
    pub(crate) fn launch_query<Q, F, V, K>(
        &mut self,
        label: Option<&'static str>,
        rows_per_task: usize,
        terms: &[TickTerm],
        kernel: K,
    ) -> Option<u64>
    where
        Q: QueryData,
        F: QueryFilter,
        V: ViewSet,
        K: Kernel<Q, V>,
    {
        self.guard("Query::each_async");
        let ticks = (terms, self.time.tick);
        let state = state_or_panic(self.sync.refresh::<Q, F>(&mut self.queries));
        let access = query_access::<Q, F, V>(&self.sync, state);
        let info = LaunchInfo {
            registry_id: self.id,
            profiler: &mut self.profiler,
            next_seq: &mut self.next_seq,
            label,
            trace: self.tick_profile.as_ref().and_then(|t| t.tracing()),
        };
        self.sync
            .launch::<Q, F, V, K>(state, access, (rows_per_task, ticks), kernel, info)
    }
}

/// A refreshed state, or the panic that [`Registry::query`] documents.
fn state_or_panic<T>(state: Result<T, QueryError>) -> T {
    state.unwrap_or_else(|e| panic!("freyr: {e}"))
}

/// The combined access of `Q` and the views `V`, against the current world.
fn query_access<Q: QueryData, F: QueryFilter, V: ViewSet>(
    sync: &SyncedWorld,
    state: &QueryState<Q, F>,
) -> Arc<Access> {
    let mut extra = Access::new();
    sync.view_access::<V>(&mut extra);
    if extra.reads().is_empty() && !extra.holds_world_ref() && extra.resources_empty() {
        state.shared_access()
    } else {
        let mut access = state.access().clone();
        access.extend(&extra);
        Arc::new(access)
    }
}
