//! The parameters of a function system: what each one declares (its access) and what it
//! hands the system's body each run.
//!
//! Every parameter goes through three steps:
//!
//! 1. `init`, at registration: records the component and resource types it reads and writes in
//!    the system's [`SystemAccess`] (checked there for conflicts inside the system, and used to
//!    order the system against the others of its phase), and makes its state;
//! 2. `prepare`, on the thread that runs [`Registry::update`](crate::Registry::update), before
//!    the systems of a segment start: refreshes a query's matched archetypes, finds a
//!    resource (panicking, naming it and the system, when it is missing);
//! 3. `fetch`, on the worker that runs the system: builds the value the body receives.

use core::any::TypeId;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use freyr_core::{ChunkRef, Component, Entity, World};
use freyr_query::access::{AccessKind, TypeAccess};
use freyr_query::changed::{ArchetypeTicks, TickKind, TickTerm};
use freyr_query::commands::Commands;
use freyr_query::events::buffer::{EventBuffer, TaskOutput};
use freyr_query::events::{EventCursor, Events};
use freyr_query::fetch::QueryData;
use freyr_query::filter::QueryFilter;
use freyr_query::iter::each;
use freyr_query::iter::rows::fold_rows;
use freyr_query::state::{LayoutStamp, QueryState};
use freyr_query::world::SyncedWorld;
use hashbrown::HashMap;

use freyr_profile::profiler::Profiler;

/// Where an access entry lives: the world's components, the registry's resources, or the
/// system itself (its command buffer: two `Commands` in one system would alias it).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Domain {
    Component,
    Resource,
    Local,
}

/// One entry of a system's declared access.
#[derive(Copy, Clone, Debug)]
pub(crate) struct AccessEntry {
    pub(crate) domain: Domain,
    pub(crate) type_id: TypeId,
    pub(crate) name: &'static str,
    pub(crate) kind: AccessKind,
}

/// What a function system reads and writes, as its parameters declared it at registration:
/// component types (through queries), resource types (through `Res`, `ResMut`, event readers)
/// and the system's own command buffer.
///
/// Two systems of a phase *conflict* when one writes a component or resource type the other
/// reads or writes; conflicting systems never run at the same time, and run in registration
/// order unless `before`/`after` say otherwise.
///
/// # Examples
///
/// ```
/// use freyr::Phase;
/// use freyr::system::{Query, Res, SystemConfig};
///
/// struct Pos(f32);
/// struct Gravity(f32);
///
/// fn fall(mut q: Query<&mut Pos>, g: Res<Gravity>) {
///     q.each(|_, p| p.0 -= g.0);
/// }
///
/// let mut registry = freyr::Registry::with_workers(1);
/// registry.add_fn_system(Phase::Update, "fall", fall).unwrap();
/// let access = registry.system_access(Phase::Update, "fall").unwrap();
/// assert!(access.writes_component::<Pos>());
/// assert!(access.reads_resource::<Gravity>());
/// assert!(!access.writes_resource::<Gravity>());
/// ```
#[derive(Clone, Debug, Default)]
pub struct SystemAccess {
    pub(crate) entries: Vec<AccessEntry>,
}

impl SystemAccess {
    pub(crate) fn add(
        &mut self,
        domain: Domain,
        type_id: TypeId,
        name: &'static str,
        kind: AccessKind,
    ) {
        self.entries.push(AccessEntry {
            domain,
            type_id,
            name,
            kind,
        });
    }

    fn add_types(&mut self, types: &TypeAccess) {
        for (type_id, name, kind) in types.entries() {
            self.add(Domain::Component, type_id, name, kind);
        }
    }

    fn has(&self, domain: Domain, type_id: TypeId, write: bool) -> bool {
        self.entries.iter().any(|e| {
            e.domain == domain && e.type_id == type_id && (!write || e.kind == AccessKind::Write)
        })
    }

    /// Whether the system reads or writes component `T`.
    pub fn reads_component<T: 'static>(&self) -> bool {
        self.has(Domain::Component, TypeId::of::<T>(), false)
    }

    /// Whether the system writes component `T`.
    pub fn writes_component<T: 'static>(&self) -> bool {
        self.has(Domain::Component, TypeId::of::<T>(), true)
    }

    /// Whether the system reads or writes resource `T`.
    pub fn reads_resource<T: 'static>(&self) -> bool {
        self.has(Domain::Resource, TypeId::of::<T>(), false)
    }

    /// Whether the system writes resource `T`.
    pub fn writes_resource<T: 'static>(&self) -> bool {
        self.has(Domain::Resource, TypeId::of::<T>(), true)
    }

    /// The first pair of entries of one type in one domain where at least one writes: the
    /// access the system cannot be granted.
    pub(crate) fn self_conflict(&self) -> Option<(AccessEntry, AccessEntry)> {
        for (i, a) in self.entries.iter().enumerate() {
            for b in &self.entries[i + 1..] {
                if a.domain == b.domain
                    && a.type_id == b.type_id
                    && (a.kind == AccessKind::Write || b.kind == AccessKind::Write)
                {
                    return Some((*a, *b));
                }
            }
        }
        None
    }

    /// The first type on which `self` and `other` conflict (components and resources only),
    /// by name, with the domain.
    pub(crate) fn conflict_with(&self, other: &SystemAccess) -> Option<(&'static str, bool)> {
        for a in &self.entries {
            if a.domain == Domain::Local {
                continue;
            }
            for b in &other.entries {
                if a.domain == b.domain
                    && a.type_id == b.type_id
                    && (a.kind == AccessKind::Write || b.kind == AccessKind::Write)
                {
                    return Some((a.name, a.domain == Domain::Resource));
                }
            }
        }
        None
    }
}

/// The registry's side of `prepare`: the world (quiesced: no launch in flight) and the
/// resources, each resource's pointer taken once per segment.
#[allow(
    unnameable_types,
    reason = "reached only through `SystemParam`'s methods, which the sealed trait keeps to this crate"
)]
pub struct Prepare<'a> {
    pub(crate) world: &'a World,
    pub(crate) sync: &'a mut SyncedWorld,
    pub(crate) profiler: &'a Profiler,
    /// One pointer per resource type per segment: taking a second `&mut` to the same resource
    /// would retire the pointer handed out first.
    pub(crate) resources: &'a mut HashMap<TypeId, NonNull<u8>>,
    pub(crate) system: &'a str,
}

impl Prepare<'_> {
    /// The resource `T`, as a pointer valid until the segment ends, or a panic naming the
    /// system and the type.
    fn resource<T: Send + Sync + 'static>(&mut self, what: &str) -> NonNull<T> {
        match self.try_resource::<T>() {
            Some(ptr) => ptr,
            None => panic!(
                "freyr: system `{}` takes {what}<{}>, but the resource is not in the registry; \
                 add it with Registry::insert_resource before the system runs",
                self.system,
                core::any::type_name::<T>()
            ),
        }
    }

    fn try_resource<T: Send + Sync + 'static>(&mut self) -> Option<NonNull<T>> {
        let id = TypeId::of::<T>();
        if let Some(ptr) = self.resources.get(&id) {
            return Some(ptr.cast());
        }
        let ptr = NonNull::from(self.sync.resource_mut::<T>(self.profiler)?);
        self.resources.insert(id, ptr.cast());
        Some(ptr)
    }
}

/// What one run of one system gets: the world, its layout, the tick, the system's previous
/// run and its command and event buffer.
#[allow(
    unnameable_types,
    reason = "reached only through `SystemParam`'s methods, which the sealed trait keeps to this crate"
)]
pub struct SystemContext<'w> {
    pub(crate) world: &'w World,
    pub(crate) stamp: LayoutStamp,
    pub(crate) tick: u64,
    pub(crate) dt: f32,
    pub(crate) last_run: Option<u64>,
    pub(crate) output: NonNull<TaskOutput>,
}

/// A pointer a system's state keeps between `prepare` and `fetch` (which may run on another
/// thread).
#[allow(
    unnameable_types,
    reason = "reached only through `SystemParam`'s methods, which the sealed trait keeps to this crate"
)]
pub struct SendPtr<T>(Option<NonNull<T>>);

impl<T> Default for SendPtr<T> {
    fn default() -> Self {
        SendPtr(None)
    }
}

// SAFETY: the pointer is only dereferenced by `fetch`, under the executor's guarantee that
// systems with conflicting access never run at the same time; `T: Send + Sync` (required by
// every resource type) makes handing `&T` or `&mut T` to another thread sound.
unsafe impl<T: Send + Sync> Send for SendPtr<T> {}

mod sealed {
    #[allow(
        unnameable_types,
        reason = "the seal of `SystemParam`: other crates must not implement it"
    )]
    pub trait Sealed {}
}

/// A parameter of a function system: [`Query`], [`Res`], [`ResMut`],
/// [`Commands`](crate::Commands), [`EventWriter`], [`EventReader`], [`Local`], [`Tick`], and
/// tuples of these up to 8.
///
/// The trait is sealed: the soundness of running systems in parallel rests on every parameter
/// declaring exactly what it touches.
pub trait SystemParam: sealed::Sealed + Sized {
    /// Kept by the system between runs (a query's matched archetypes, an event cursor).
    #[doc(hidden)]
    type State: Send + 'static;
    /// What the body receives, borrowing from one run.
    #[doc(hidden)]
    type Item<'w>;
    /// Records the access and makes the state.
    #[doc(hidden)]
    fn init(access: &mut SystemAccess) -> Self::State;
    /// Runs on the updating thread before the system's segment starts.
    #[doc(hidden)]
    fn prepare(state: &mut Self::State, ctx: &mut Prepare<'_>);
    /// Builds the item.
    ///
    /// # Safety
    ///
    /// `prepare` ran for this segment; the executor runs no system whose access conflicts with
    /// this one's until the item is dropped, and no `&mut World` exists meanwhile.
    #[doc(hidden)]
    unsafe fn fetch<'w>(state: &'w mut Self::State, ctx: &'w SystemContext<'w>) -> Self::Item<'w>;
}

/// The item type of parameter `P` for one run.
pub type ParamItem<'w, P> = <P as SystemParam>::Item<'w>;

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

    fn prepare(state: &mut Self::State, ctx: &mut Prepare<'_>) {
        match state {
            Some(state) => state.update(ctx.world),
            None => {
                let made = QueryState::<Data<Q>, F>::new(ctx.world)
                    .expect("freyr: the query's access was checked when the system was added");
                *state = Some(made);
            }
        }
    }

    unsafe fn fetch<'w>(state: &'w mut Self::State, ctx: &'w SystemContext<'w>) -> Query<'w, Q, F> {
        let state = state
            .as_mut()
            .expect("freyr: `prepare` made the query state");
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

    /// The change-filtered chunk walk of [`each`](Query::each) and
    /// [`each_chunk`](Query::each_chunk): calls `visit` with the matched columns and every
    /// chunk that passes this run's change filters, in (archetype, chunk) order, after stamping
    /// the chunk's written columns. Archetypes lacking a filtered type are skipped whole.
    fn for_each_selected_chunk(
        &mut self,
        mut visit: impl FnMut(<Data<Q> as QueryData>::Columns, ChunkRef<'w>),
    ) {
        let (world, tick) = (self.world, self.tick);
        let terms: Vec<TickTerm> = self
            .terms
            .iter()
            .filter(|(_, s)| *s)
            .map(|(t, _)| *t)
            .collect();
        let required: Vec<_> = self.terms.iter().map(|(t, _)| t.id).collect();
        let state = self.state();
        for (i, matched) in state.matched().iter().enumerate() {
            let archetype = world.archetype(matched.id);
            let has_all = required
                .iter()
                .all(|id| id.is_some_and(|id| archetype.column_index(id).is_some()));
            if !has_all {
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

    /// Number of entities the query matches (change filters ignored).
    pub fn count(&mut self) -> usize {
        let world = self.world;
        self.state()
            .matched_archetypes()
            .map(|id| world.archetype(id).len())
            .sum()
    }
}

// ---- resources -----------------------------------------------------------------------------

/// A function system's shared borrow of resource `T` (bevy's `Res<T>`); a missing resource
/// panics before the system runs, naming it. Not the same type as the view marker
/// [`freyr::Res`](crate::Res) of `Query::views`.
///
/// # Examples
///
/// ```
/// use freyr::{Phase, Registry};
/// use freyr::system::{Res, ResMut};
///
/// struct Rate(u32);
/// struct Total(u32);
///
/// let mut registry = Registry::with_workers(2);
/// registry.insert_resource(Rate(3));
/// registry.insert_resource(Total(0));
/// registry
///     .add_fn_system(Phase::Update, "add", |rate: Res<Rate>, mut total: ResMut<Total>| {
///         total.0 += rate.0;
///     })
///     .unwrap();
/// registry.update(0.0);
/// registry.update(0.0);
/// assert_eq!(registry.resource::<Total>().unwrap().0, 6);
/// ```
pub struct Res<'w, T> {
    value: &'w T,
}

impl<T> Deref for Res<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T: Send + Sync + 'static> sealed::Sealed for Res<'_, T> {}

impl<T: Send + Sync + 'static> SystemParam for Res<'_, T> {
    type State = SendPtr<T>;
    type Item<'w> = Res<'w, T>;

    fn init(access: &mut SystemAccess) -> Self::State {
        access.add(
            Domain::Resource,
            TypeId::of::<T>(),
            core::any::type_name::<T>(),
            AccessKind::Read,
        );
        SendPtr::default()
    }

    fn prepare(state: &mut Self::State, ctx: &mut Prepare<'_>) {
        state.0 = Some(ctx.resource::<T>("Res"));
    }

    unsafe fn fetch<'w>(state: &'w mut Self::State, _: &'w SystemContext<'w>) -> Res<'w, T> {
        let ptr = state.0.expect("freyr: `prepare` found the resource");
        Res {
            // SAFETY: the pointer is the resource's, taken this segment; no system writing `T`
            // runs until this borrow ends (they conflict), and nothing else touches resources
            // while the segment runs.
            value: unsafe { ptr.as_ref() },
        }
    }
}

/// A function system's exclusive borrow of resource `T` (bevy's `ResMut<T>`); see [`Res`].
pub struct ResMut<'w, T> {
    value: &'w mut T,
}

impl<T> Deref for ResMut<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> DerefMut for ResMut<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value
    }
}

impl<T: Send + Sync + 'static> sealed::Sealed for ResMut<'_, T> {}

impl<T: Send + Sync + 'static> SystemParam for ResMut<'_, T> {
    type State = SendPtr<T>;
    type Item<'w> = ResMut<'w, T>;

    fn init(access: &mut SystemAccess) -> Self::State {
        access.add(
            Domain::Resource,
            TypeId::of::<T>(),
            core::any::type_name::<T>(),
            AccessKind::Write,
        );
        SendPtr::default()
    }

    fn prepare(state: &mut Self::State, ctx: &mut Prepare<'_>) {
        state.0 = Some(ctx.resource::<T>("ResMut"));
    }

    unsafe fn fetch<'w>(state: &'w mut Self::State, _: &'w SystemContext<'w>) -> ResMut<'w, T> {
        let mut ptr = state.0.expect("freyr: `prepare` found the resource");
        ResMut {
            // SAFETY: as for `Res`, and no other system reading or writing `T` runs until this
            // borrow ends; within the system, `init` rejected a second borrow of `T`.
            value: unsafe { ptr.as_mut() },
        }
    }
}

// ---- commands and events -------------------------------------------------------------------

impl sealed::Sealed for Commands<'_> {}

/// [`Commands`](crate::Commands) as a function system's parameter: structural changes recorded
/// into the system's own buffer, applied at the phase's sync point in system order (then
/// record order), whatever the worker count. One per system.
impl SystemParam for Commands<'_> {
    type State = ();
    type Item<'w> = Commands<'w>;

    fn init(access: &mut SystemAccess) {
        access.add(
            Domain::Local,
            TypeId::of::<Commands<'static>>(),
            "freyr::Commands",
            AccessKind::Write,
        );
    }

    fn prepare(_: &mut (), _: &mut Prepare<'_>) {}

    unsafe fn fetch<'w>(_: &'w mut (), ctx: &'w SystemContext<'w>) -> Commands<'w> {
        // SAFETY: the output is this system's own, alive for the run; `init` admits one
        // `Commands` per system, and event writers reach only the `events` field (through a
        // raw projection, never a reference to the whole output).
        let buffer = unsafe { &mut (*ctx.output.as_ptr()).commands };
        Commands::new(buffer)
    }
}

/// The borrow and the event type an [`EventWriter`] stands for.
type WriterMarker<'w, E> = (&'w mut EventBuffer, fn(E));

/// Sends events of type `E` from a function system: stored at the phase's sync point in
/// system order (then send order), and read with [`EventReader`] or
/// [`Registry::read_events`](crate::Registry::read_events).
///
/// # Examples
///
/// ```
/// use freyr::{EventCursor, Phase, Registry};
/// use freyr::system::EventWriter;
///
/// #[derive(Clone)]
/// struct Ping(u32);
///
/// let mut registry = Registry::with_workers(2);
/// registry
///     .add_fn_system(Phase::Update, "ping", |mut w: EventWriter<Ping>| w.send(Ping(7)))
///     .unwrap();
/// registry.update(0.0);
/// let mut cursor = EventCursor::default();
/// let got: Vec<u32> = registry.read_events::<Ping>(&mut cursor).map(|p| p.0).collect();
/// assert_eq!(got, [7]);
/// ```
pub struct EventWriter<'w, E> {
    buffer: NonNull<EventBuffer>,
    _marker: PhantomData<WriterMarker<'w, E>>,
}

impl<E: Clone + Send + Sync + 'static> EventWriter<'_, E> {
    /// Sends `event`.
    pub fn send(&mut self, event: E) {
        // SAFETY: the buffer is the running system's own, alive for `'w`; every writer of the
        // system points at it, and each `send` holds the only reference for its duration (the
        // writer is neither `Send` nor `Sync`, so all sends happen on the system's thread, one
        // at a time).
        unsafe { self.buffer.as_mut().send(event) }
    }
}

impl<E: Clone + Send + Sync + 'static> sealed::Sealed for EventWriter<'_, E> {}

impl<E: Clone + Send + Sync + 'static> SystemParam for EventWriter<'_, E> {
    type State = ();
    type Item<'w> = EventWriter<'w, E>;

    fn init(_: &mut SystemAccess) {}

    fn prepare(_: &mut (), _: &mut Prepare<'_>) {}

    unsafe fn fetch<'w>(_: &'w mut (), ctx: &'w SystemContext<'w>) -> EventWriter<'w, E> {
        // SAFETY: a raw projection to the output's `events` field: no reference to the output
        // is made, so the `Commands` borrow of its `commands` field stays valid.
        let events = unsafe { core::ptr::addr_of_mut!((*ctx.output.as_ptr()).events) };
        EventWriter {
            // SAFETY: a field of a live, non-null output.
            buffer: unsafe { NonNull::new_unchecked(events) },
            _marker: PhantomData,
        }
    }
}

/// Reads the events of type `E` stored since this system's previous read, with a cursor the
/// system keeps (bevy's `EventReader`). Reads the resource [`Events<E>`]: it conflicts with a
/// system taking `ResMut<Events<E>>`, not with writers (their events are stored at the sync
/// point).
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use freyr::{Phase, Registry};
/// use freyr::system::{EventReader, EventWriter};
///
/// #[derive(Clone)]
/// struct Hit(u32);
///
/// let log = Arc::new(Mutex::new(Vec::new()));
/// let seen = log.clone();
/// let mut registry = Registry::with_workers(2);
/// registry.add_event::<Hit>();
/// registry
///     .add_fn_system(Phase::PreUpdate, "hit", |mut w: EventWriter<Hit>| w.send(Hit(1)))
///     .unwrap();
/// registry
///     .add_fn_system(Phase::Update, "count", move |mut r: EventReader<Hit>| {
///         seen.lock().unwrap().push(r.read().count());
///     })
///     .unwrap();
/// registry.update(0.0);
/// registry.update(0.0);
/// assert_eq!(*log.lock().unwrap(), [1, 1]);
/// ```
pub struct EventReader<'w, E> {
    events: Option<&'w Events<E>>,
    cursor: &'w mut EventCursor,
    now: u64,
}

impl<'w, E: Clone + Send + Sync + 'static> EventReader<'w, E> {
    /// The events stored since the previous read that are still kept, in order; the cursor
    /// moves past them.
    pub fn read(&mut self) -> impl Iterator<Item = &'w E> + use<'w, '_, E> {
        let now = self.now;
        let cursor = &mut *self.cursor;
        self.events
            .map(move |events| events.read(cursor, now))
            .into_iter()
            .flatten()
    }
}

impl<E: Clone + Send + Sync + 'static> sealed::Sealed for EventReader<'_, E> {}

impl<E: Clone + Send + Sync + 'static> SystemParam for EventReader<'_, E> {
    type State = (EventCursor, SendPtr<Events<E>>);
    type Item<'w> = EventReader<'w, E>;

    fn init(access: &mut SystemAccess) -> Self::State {
        access.add(
            Domain::Resource,
            TypeId::of::<Events<E>>(),
            core::any::type_name::<Events<E>>(),
            AccessKind::Read,
        );
        (EventCursor::default(), SendPtr::default())
    }

    fn prepare(state: &mut Self::State, ctx: &mut Prepare<'_>) {
        state.1 = SendPtr(ctx.try_resource::<Events<E>>());
    }

    unsafe fn fetch<'w>(
        state: &'w mut Self::State,
        ctx: &'w SystemContext<'w>,
    ) -> EventReader<'w, E> {
        // SAFETY: as for `Res<Events<E>>`.
        let events = state.1.0.map(|ptr| unsafe { ptr.as_ref() });
        EventReader {
            events,
            cursor: &mut state.0,
            now: ctx.tick,
        }
    }
}

// ---- local state and the tick --------------------------------------------------------------

/// State the system keeps between its runs, starting from `T::default()` (bevy's `Local`).
///
/// # Examples
///
/// ```
/// use freyr::{Phase, Registry};
/// use freyr::system::{Local, ResMut};
///
/// struct Seen(u32);
///
/// let mut registry = Registry::with_workers(1);
/// registry.insert_resource(Seen(0));
/// registry
///     .add_fn_system(Phase::Update, "count", |mut n: Local<u32>, mut s: ResMut<Seen>| {
///         *n += 1;
///         s.0 = *n;
///     })
///     .unwrap();
/// registry.update(0.0);
/// registry.update(0.0);
/// assert_eq!(registry.resource::<Seen>().unwrap().0, 2);
/// ```
pub struct Local<'w, T> {
    value: &'w mut T,
}

impl<T> Deref for Local<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> DerefMut for Local<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value
    }
}

impl<T: Default + Send + 'static> sealed::Sealed for Local<'_, T> {}

impl<T: Default + Send + 'static> SystemParam for Local<'_, T> {
    type State = T;
    type Item<'w> = Local<'w, T>;

    fn init(_: &mut SystemAccess) -> T {
        T::default()
    }

    fn prepare(_: &mut T, _: &mut Prepare<'_>) {}

    unsafe fn fetch<'w>(state: &'w mut T, _: &'w SystemContext<'w>) -> Local<'w, T> {
        Local { value: state }
    }
}

/// The registry's tick as a function system sees it: the tick running, the `dt` passed to
/// [`update`](crate::Registry::update), and the tick of this system's previous run.
///
/// # Examples
///
/// ```
/// use freyr::{Phase, Registry};
/// use freyr::system::{ResMut, Tick};
///
/// struct Clock(f32, u64);
///
/// let mut registry = Registry::with_workers(1);
/// registry.insert_resource(Clock(0.0, 0));
/// registry
///     .add_fn_system(Phase::Update, "clock", |t: Tick, mut c: ResMut<Clock>| {
///         c.0 += t.dt;
///         c.1 = t.tick;
///     })
///     .unwrap();
/// registry.update(0.25);
/// registry.update(0.25);
/// let clock = registry.resource::<Clock>().unwrap();
/// assert_eq!((clock.0, clock.1), (0.5, 1));
/// ```
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Tick {
    /// The tick running ([`Registry::tick`](crate::Registry::tick)).
    pub tick: u64,
    /// The `dt` of this update.
    pub dt: f32,
    /// The tick of this system's previous run; `None` on its first.
    pub last_run: Option<u64>,
}

impl sealed::Sealed for Tick {}

impl SystemParam for Tick {
    type State = ();
    type Item<'w> = Tick;

    fn init(_: &mut SystemAccess) {}

    fn prepare(_: &mut (), _: &mut Prepare<'_>) {}

    unsafe fn fetch<'w>(_: &'w mut (), ctx: &'w SystemContext<'w>) -> Tick {
        Tick {
            tick: ctx.tick,
            dt: ctx.dt,
            last_run: ctx.last_run,
        }
    }
}

// ---- tuples --------------------------------------------------------------------------------

macro_rules! tuple_param {
    ($($P:ident $s:ident),*) => {
        impl<$($P: SystemParam),*> sealed::Sealed for ($($P,)*) {}

        #[allow(non_snake_case, unused_variables, clippy::unused_unit)]
        impl<$($P: SystemParam),*> SystemParam for ($($P,)*) {
            type State = ($($P::State,)*);
            type Item<'w> = ($($P::Item<'w>,)*);

            fn init(access: &mut SystemAccess) -> Self::State {
                ($($P::init(access),)*)
            }

            fn prepare(state: &mut Self::State, ctx: &mut Prepare<'_>) {
                let ($($s,)*) = state;
                $($P::prepare($s, ctx);)*
            }

            unsafe fn fetch<'w>(
                state: &'w mut Self::State,
                ctx: &'w SystemContext<'w>,
            ) -> Self::Item<'w> {
                let ($($s,)*) = state;
                // SAFETY: the caller's contract, for each element.
                ($(unsafe { $P::fetch($s, ctx) },)*)
            }
        }
    };
}

tuple_param!();
tuple_param!(P0 s0);
tuple_param!(P0 s0, P1 s1);
tuple_param!(P0 s0, P1 s1, P2 s2);
tuple_param!(P0 s0, P1 s1, P2 s2, P3 s3);
tuple_param!(P0 s0, P1 s1, P2 s2, P3 s3, P4 s4);
tuple_param!(P0 s0, P1 s1, P2 s2, P3 s3, P4 s4, P5 s5);
tuple_param!(P0 s0, P1 s1, P2 s2, P3 s3, P4 s4, P5 s5, P6 s6);
tuple_param!(P0 s0, P1 s1, P2 s2, P3 s3, P4 s4, P5 s5, P6 s6, P7 s7);
