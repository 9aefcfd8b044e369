//! The `Query` parameter: a function system's query, with filters and change filters.

use super::*;
use freyr_core::{Archetype, ComponentId};

// ---- Query ---------------------------------------------------------------------------------

/// The borrow and the types a [`Query`] stands for (covariant, neither `Send` nor `Sync` by
/// itself).
type QueryMarker<'w, Q, F> = (&'w mut (), fn() -> (Q, F));

/// A function system's query: fetch `Q` (e.g. `(&mut Pos, &Vel)`) from every entity whose
/// archetype passes the filter `F` ([`With`](crate::With), [`Without`](crate::Without)).
///
/// Run on the system's worker, on the system's own thread of execution: [`each`](Query::each)
/// and [`each_chunk`](Query::each_chunk) walk archetype creation order, then chunk, then row.
/// The change filters [`filter_changed`](Query::filter_changed) and
/// [`filter_added`](Query::filter_added) compare against the system's previous run.
///
/// # Examples
///
/// ```
/// use freyr::{Phase, Registry, Without};
/// use freyr::system::Query;
///
/// struct Pos(f32);
/// struct Vel(f32);
/// struct Frozen;
///
/// fn integrate(mut q: Query<(&mut Pos, &Vel), Without<Frozen>>) {
///     q.each(|_, (p, v)| p.0 += v.0);
/// }
///
/// let mut registry = Registry::with_workers(2);
/// let a = registry.spawn((Pos(0.0), Vel(1.0)));
/// let b = registry.spawn((Pos(0.0), Vel(1.0), Frozen));
/// registry.add_fn_system(Phase::Update, "integrate", integrate).unwrap();
/// registry.update(0.1);
/// assert_eq!(registry.get::<Pos>(a).unwrap().0, 1.0);
/// assert_eq!(registry.get::<Pos>(b).unwrap().0, 0.0);
/// ```
pub struct Query<'w, Q, F = ()> {
    world: &'w World,
    stamp: LayoutStamp,
    /// The system's `QueryState<Q, F>` (erased: the struct names no bound, so a signature
    /// `Query<(&mut A, &B)>` is well-formed for every lifetime the elision gives it).
    state: NonNull<()>,
    tick: u64,
    last_run: Option<u64>,
    /// The change filters set on this query for this run.
    terms: Vec<(TickTerm, bool)>,
    _marker: PhantomData<QueryMarker<'w, Q, F>>,
}

/// The query data a function system's [`Query`] names, with the lifetimes its signature gave
/// it: `&'a mut T` stands for [`QueryData`] `&'static mut T`, and so on for `&T`, `Option`s,
/// [`Entity`] and tuples up to 12. A closure's `|q: Query<&mut Pos>|` names a `&'a mut Pos`
/// with a lifetime of its own, which this maps back.
pub trait QueryParamData {
    /// The query data.
    type Data: QueryData;
}

impl QueryParamData for Entity {
    type Data = Entity;
}
impl<T: Component> QueryParamData for &T {
    type Data = &'static T;
}
impl<T: Component> QueryParamData for &mut T {
    type Data = &'static mut T;
}
impl<T: Component> QueryParamData for Option<&T> {
    type Data = Option<&'static T>;
}
impl<T: Component> QueryParamData for Option<&mut T> {
    type Data = Option<&'static mut T>;
}

macro_rules! query_param_tuple {
    ($($name:ident $idx:tt),*) => {
        impl<$($name: QueryParamData),*> QueryParamData for ($($name,)*) {
            type Data = ($($name::Data,)*);
        }
    };
}
freyr_query::tuples::tuples_up_to_12!(query_param_tuple);

type Data<Q> = <Q as QueryParamData>::Data;

impl<Q: QueryParamData + 'static, F: QueryFilter> sealed::Sealed for Query<'_, Q, F> {}

impl<Q: QueryParamData + 'static, F: QueryFilter> SystemParam for Query<'_, Q, F> {
    type State = Option<QueryState<Data<Q>, F>>;
    type Item<'w> = Query<'w, Q, F>;

    fn init(access: &mut SystemAccess) -> Self::State {
        access.add_types(&QueryState::<Data<Q>, F>::type_access());
        None
    }

    /// Nothing on the updating thread: the state is refreshed in [`fetch`](Self::fetch), on
    /// the thread that runs the system, so the refreshes of a segment's queries run in parallel
    /// like their bodies.
    const PREPARES: bool = false;

    fn prepare(_: &mut Self::State, _: &mut Prepare<'_>) {}

    unsafe fn fetch<'w>(state: &'w mut Self::State, ctx: &'w SystemContext<'w>) -> Query<'w, Q, F> {
        // The world is only read while the segment runs (no `&mut World` exists), and the
        // state is this system's own: refreshing it here reads what `prepare` would have.
        let state = match state {
            Some(state) => {
                state.update(ctx.world);
                state
            }
            None => state.insert(
                QueryState::<Data<Q>, F>::new(ctx.world)
                    .expect("freyr: the query's access was checked when the system was added"),
            ),
        };
        Query {
            world: ctx.world,
            stamp: ctx.stamp,
            state: NonNull::from(state).cast(),
            tick: ctx.tick,
            last_run: ctx.last_run,
            terms: Vec::new(),
            _marker: PhantomData,
        }
    }
}

impl<'w, Q: QueryParamData, F: QueryFilter> Query<'w, Q, F> {
    fn state(&mut self) -> &mut QueryState<Data<Q>, F> {
        // SAFETY: `state` was made from `&'w mut QueryState<Data<Q>, F>` in `fetch`, and this
        // query is its only user for `'w`.
        unsafe { self.state.cast::<QueryState<Data<Q>, F>>().as_mut() }
    }

    /// The "since" tick of a change filter: changes stamped at the tick of the system's
    /// previous run or later pass (a system that ran early in tick `t` still sees what a later
    /// system wrote in `t`). `None` on the first run, or when that run was at tick 0:
    /// everything passes.
    fn since(&self) -> Option<u64> {
        self.last_run.and_then(|t| t.checked_sub(1))
    }

    fn term<T: Component>(&mut self, kind: TickKind) -> &mut Self {
        let since = self.since();
        let id = self.world.component_id::<T>();
        self.terms.push((
            TickTerm {
                id,
                kind,
                since: since.unwrap_or(0),
            },
            since.is_some(),
        ));
        self
    }

    /// Visits only the chunks whose `T` column was granted write access since this system's
    /// previous run (bevy's `Changed<T>`, at chunk granularity: a chunk that passes is visited
    /// whole; see [`Query::filter_changed`](crate::Query::filter_changed) for the rules).
    /// On the system's first run every chunk holding `T` passes. The filter holds for the
    /// rest of this run's calls on this query.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use freyr::{Phase, Registry};
    /// use freyr::system::Query;
    ///
    /// struct Hp(u32);
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = seen.clone();
    /// let mut registry = Registry::with_workers(1);
    /// let e = registry.spawn((Hp(10),));
    /// registry
    ///     .add_fn_system(Phase::Update, "watch", move |mut q: Query<&Hp>| {
    ///         let mut n = 0;
    ///         q.filter_changed::<Hp>().each(|_, _| n += 1);
    ///         log.lock().unwrap().push(n);
    ///     })
    ///     .unwrap();
    /// registry.update(0.0); // first run: everything
    /// registry.update(0.0);
    /// registry.update(0.0); // nothing written since tick 1
    /// registry.get_mut::<Hp>(e).unwrap().0 = 5;
    /// registry.update(0.0);
    /// assert_eq!(*seen.lock().unwrap(), [1, 1, 0, 1]);
    /// ```
    pub fn filter_changed<T: Component>(&mut self) -> &mut Self {
        self.term::<T>(TickKind::Changed)
    }

    /// Visits only the chunks in which a row arrived since this system's previous run (bevy's
    /// `Added<T>`, at chunk granularity), with the rules of
    /// [`filter_changed`](Query::filter_changed).
    pub fn filter_added<T: Component>(&mut self) -> &mut Self {
        self.term::<T>(TickKind::Added)
    }

    /// Drops the change filters set on this query.
    pub fn clear_filters(&mut self) -> &mut Self {
        self.terms.clear();
        self
    }

    /// Calls `f(entity, items)` for every matching entity, in archetype creation order, then
    /// chunk order, then row order, stamping the written columns changed.
    pub fn each<C>(&mut self, mut f: C)
    where
        C: for<'a> FnMut(Entity, <Data<Q> as QueryData>::Item<'a>),
    {
        let (world, stamp, tick) = (self.world, self.stamp, self.tick);
        if self.terms.is_empty() {
            let state = self.state();
            // SAFETY: `prepare` refreshed the state against `world`, whose layout is `stamp`
            // for the whole segment (no `&mut World` exists while systems run); the executor
            // runs no system whose access conflicts with this query's until this one ends.
            unsafe { each::each_row::<Data<Q>, C>(state.runs(world, stamp), tick, &mut f) };
            return;
        }
        self.for_each_selected_chunk(|columns, chunk| {
            let ptrs = Data::<Q>::ptrs(columns, chunk);
            // SAFETY: the chunk's rows are initialised and stay in place for the segment;
            // access is exclusive as for the unfiltered walk above.
            unsafe {
                fold_rows::<Data<Q>, ()>(ptrs, 0, chunk.entities(), (), |(), e, item| f(e, item))
            };
        });
    }

    /// Calls `f(entities, columns)` once per matching chunk, in order; the columns are slices.
    /// Change filters apply as for [`each`](Query::each).
    pub fn each_chunk<C>(&mut self, mut f: C)
    where
        C: for<'a> FnMut(&'a [Entity], <Data<Q> as QueryData>::Slice<'a>),
    {
        self.for_each_selected_chunk(|columns, chunk| {
            let ptrs = Data::<Q>::ptrs(columns, chunk);
            let entities = chunk.entities();
            // SAFETY: as in `each`: all `len` rows are initialised, the slices do not outlive
            // the call, access is exclusive.
            f(entities, unsafe { Data::<Q>::slice(ptrs, entities.len()) });
        });
    }

    /// The items of one entity, if this query matches it (bevy's `Query::get_mut`): the
    /// entity's archetype has `Q`'s components and passes the filter `F`, and its chunk passes
    /// the change filters set on this query for this run. A query that writes stamps the
    /// entity's chunk changed, as a visit of [`each`](Query::each) does. The item borrows the
    /// query, so one entity's `&mut` items are alive at a time.
    ///
    /// # Errors
    /// [`QueryEntityError::NoSuchEntity`] for a stale handle, and
    /// [`QueryEntityError::NoMatch`] for a live entity this query does not match.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Entity, Phase, Registry};
    /// use freyr::system::{Query, QueryEntityError, Res};
    ///
    /// struct Hp(u32);
    /// struct Target(Entity);
    ///
    /// let mut registry = Registry::with_workers(2);
    /// let goblin = registry.spawn((Hp(10),));
    /// let rock = registry.spawn(((),));
    /// registry.insert_resource(Target(goblin));
    /// registry
    ///     .add_fn_system(Phase::Update, "strike", |mut q: Query<&mut Hp>, t: Res<Target>| {
    ///         q.get(t.0).unwrap().0 -= 3;
    ///     })
    ///     .unwrap();
    /// registry.update(0.1);
    /// assert_eq!(registry.get::<Hp>(goblin).unwrap().0, 7);
    /// registry
    ///     .add_fn_system(Phase::Update, "miss", move |mut q: Query<&mut Hp>| {
    ///         assert_eq!(q.get(rock).err(), Some(QueryEntityError::NoMatch(rock)));
    ///     })
    ///     .unwrap();
    /// registry.update(0.1);
    /// assert_eq!(registry.get::<Hp>(goblin).unwrap().0, 4);
    /// ```
    pub fn get(
        &mut self,
        entity: Entity,
    ) -> Result<<Data<Q> as QueryData>::Item<'_>, QueryEntityError> {
        let (world, tick) = (self.world, self.tick);
        let (id, chunk, row) = world
            .entity_location(entity)
            .ok_or(QueryEntityError::NoSuchEntity(entity))?;
        let (terms, required) = self.active_terms();
        let state = self.state();
        let no_match = QueryEntityError::NoMatch(entity);
        let i = state
            .matched()
            .iter()
            .position(|m| m.id == id)
            .ok_or(no_match)?;
        let archetype = world.archetype(id);
        if !has_all(archetype, &required) {
            return Err(no_match);
        }
        let select =
            ArchetypeTicks::new(archetype, &terms, state.written(i), tick).ok_or(no_match)?;
        if !select.select(chunk) {
            return Err(no_match);
        }
        let ptrs = Data::<Q>::ptrs(state.matched()[i].columns, archetype.chunk(chunk));
        // SAFETY: `ptrs` are the columns of the entity's live chunk, `row` is its row (located
        // just now; no `&mut World` exists while systems run, so nothing moves it for the
        // segment); the executor runs no system whose access conflicts with this query's until
        // this one ends, and the item borrows `self` mutably, so no other item of this query
        // (this row's included) is alive while it is.
        Ok(unsafe { Data::<Q>::item(ptrs, row) })
    }

    /// The change filters that apply this run (those of a system that has run before), and
    /// the component of every filter set (an archetype lacking one is skipped whole).
    fn active_terms(&self) -> (Vec<TickTerm>, Vec<Option<ComponentId>>) {
        let terms = self
            .terms
            .iter()
            .filter(|(_, s)| *s)
            .map(|(t, _)| *t)
            .collect();
        (terms, self.terms.iter().map(|(t, _)| t.id).collect())
    }

    /// The change-filtered chunk walk of [`each`](Query::each) and
    /// [`each_chunk`](Query::each_chunk): calls `visit` with the matched columns and every
    /// chunk that passes this run's change filters, in (archetype, chunk) order, after stamping
    /// the chunk's written columns. Archetypes lacking a filtered type are skipped whole.
    fn for_each_selected_chunk(
        &mut self,
        mut visit: impl FnMut(<Data<Q> as QueryData>::Columns, ChunkRef<'w>),
    ) {
        let (world, tick) = (self.world, self.tick);
        let (terms, required) = self.active_terms();
        let state = self.state();
        for (i, matched) in state.matched().iter().enumerate() {
            let archetype = world.archetype(matched.id);
            if !has_all(archetype, &required) {
                continue;
            }
            let Some(select) = ArchetypeTicks::new(archetype, &terms, state.written(i), tick)
            else {
                continue;
            };
            for (index, chunk) in archetype.chunks().enumerate() {
                if select.select(index) {
                    visit(matched.columns, chunk);
                }
            }
        }
    }

    /// Number of entities [`each`](Query::each) would visit now: the query's matches, in the
    /// chunks that pass its change filters (as the registry's
    /// [`Query::count`](crate::query::Query::count) counts). Stamps nothing.
    pub fn count(&mut self) -> usize {
        let world = self.world;
        let (terms, required) = self.active_terms();
        let state = self.state();
        let mut rows = 0;
        for matched in state.matched() {
            let archetype = world.archetype(matched.id);
            if !has_all(archetype, &required) {
                continue;
            }
            let Some(ticks) = ArchetypeTicks::new(archetype, &terms, &[], 0) else {
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
}

/// Whether `archetype` has every component in `required` (an unregistered one: no archetype).
fn has_all(archetype: &Archetype, required: &[Option<ComponentId>]) -> bool {
    required
        .iter()
        .all(|id| id.is_some_and(|id| archetype.column_index(id).is_some()))
}

/// Why [`Query::get`] has no items for an entity.
///
/// # Examples
///
/// ```
/// use freyr::system::QueryEntityError;
///
/// let mut registry = freyr::Registry::new();
/// let e = registry.spawn((1u8,));
/// registry.despawn(e).unwrap();
/// let text = QueryEntityError::NoSuchEntity(e).to_string();
/// assert!(text.contains("no longer alive"), "{text}");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryEntityError {
    /// The handle is stale (its entity was despawned) or was never spawned.
    NoSuchEntity(Entity),
    /// The entity is alive, but the query does not match it: its archetype lacks a component
    /// of the query or fails its filter, or its chunk fails a change filter of this run.
    NoMatch(Entity),
}

impl core::fmt::Display for QueryEntityError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            QueryEntityError::NoSuchEntity(e) => {
                write!(f, "entity {e} is no longer alive (or was never spawned)")
            }
            QueryEntityError::NoMatch(e) => write!(
                f,
                "entity {e} does not match the query (a component missing, a filter, or a \
                 change filter of this run)"
            ),
        }
    }
}

impl std::error::Error for QueryEntityError {}
