//! [`Query`]: a query built on the registry, and the ways to run it.

mod build;
mod change;
mod reduction;

use core::marker::PhantomData;
use std::sync::Arc;

use freyr_core::{CHUNK_CAPACITY, Entity};

use crate::registry::Registry;
use freyr_query::changed::TickTerm;
use freyr_query::commands::EachContext;
use freyr_query::error::QueryError;
use freyr_query::fetch::QueryData;
use freyr_query::filter::QueryFilter;
use freyr_query::iter::each;
use freyr_query::launch::job::{Kernel, Plain, Reduce, WithContext};
use freyr_query::launch::reduce::ReduceSlot;
use freyr_query::state::QueryState;
use freyr_query::view::ViewSet;

pub use self::reduction::Reduction;

/// The query's type parameters, for `PhantomData` (covariant, `Send`, `Sync`).
type QueryTypes<Q, F, V> = fn() -> (Q, F, V);

/// A query over the registry's entities: fetch `Q` (e.g. `(&mut Position, &Velocity)`) from every
/// entity whose archetype passes the filter `F`, with read-only views `V` for the `*_with`
/// callbacks.
///
/// Built by [`Registry::query`] / [`Registry::query_filtered`]; refined with
/// [`with_label`](Query::with_label), [`views`](Query::views) and
/// [`rows_per_task`](Query::rows_per_task); consumed by one of the run
/// methods:
///
/// | method                | where it runs                      | callback gets                         |
/// |-----------------------|------------------------------------|---------------------------------------|
/// | [`each`](Query::each)             | calling thread, in order | entity, items                         |
/// | [`each_chunk`](Query::each_chunk) | calling thread, in order | entities slice, column slices         |
/// | [`each_with`](Query::each_with)   | calling thread, in order | entity, items, [`EachContext`]            |
/// | [`each_async`](Query::each_async) | one task per chunk       | entity, items                         |
/// | [`each_async_with`](Query::each_async_with) | one task per chunk | entity, items, [`EachContext`]      |
/// | [`each_async_reduce`](Query::each_async_reduce) | one task per chunk | accumulator, entity, items  |
///
/// The `each_async*` methods run one task per chunk, or per [`rows_per_task`](Query::rows_per_task)
/// rows of a chunk when the query splits them.
///
/// Conflicting access inside the query (`(&mut A, &A)`) was rejected when the query was built.
/// Every run method first waits for in-flight work that conflicts with this query's access (an
/// implicit sync point): work that writes a component this query reads, or touches one it
/// writes, in an archetype both match. Disjoint work, by type or by archetype, keeps running.
///
/// # Examples
///
/// ```
/// use freyr::{Registry, Without};
///
/// struct Pos(f32);
/// struct Vel(f32);
/// struct Frozen;
///
/// let mut registry = Registry::with_workers(2);
/// let a = registry.spawn((Pos(0.0), Vel(1.0)));
/// let b = registry.spawn((Pos(0.0), Vel(1.0), Frozen));
/// registry
///     .query_filtered::<(&mut Pos, &Vel), Without<Frozen>>()
///     .with_label("Integrate")
///     .each(|_, (p, v)| p.0 += v.0);
/// assert_eq!(registry.get::<Pos>(a).unwrap().0, 1.0);
/// assert_eq!(registry.get::<Pos>(b).unwrap().0, 0.0);
/// ```
#[must_use = "a query does nothing until one of its run methods is called"]
pub struct Query<'r, Q: QueryData, F: QueryFilter = (), V: ViewSet = ()> {
    registry: &'r mut Registry,
    label: Option<&'static str>,
    rows_per_task: usize,
    /// The change filters ([`filter_changed`](Query::filter_changed),
    /// [`filter_added`](Query::filter_added)): every one must pass for a chunk to be visited.
    ticks: Vec<TickTerm>,
    _marker: PhantomData<QueryTypes<Q, F, V>>,
}

impl<'r, Q: QueryData, F: QueryFilter> Query<'r, Q, F, ()> {
    pub(crate) fn new(registry: &'r mut Registry) -> Self {
        Query {
            registry,
            label: None,
            rows_per_task: CHUNK_CAPACITY,
            ticks: Vec::new(),
            _marker: PhantomData,
        }
    }
}

impl<'r, Q: QueryData, F: QueryFilter, V: ViewSet> Query<'r, Q, F, V> {
    /// Names this query's work for the profiler (wall time, calls and tasks per label).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct Hp(u32);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.spawn((Hp(3),));
    /// registry.query::<&mut Hp>().with_label("Regen").each(|_, hp| hp.0 += 1);
    /// assert_eq!(registry.profile().label("Regen").unwrap().calls, 1);
    /// ```
    pub fn with_label(mut self, label: &'static str) -> Self {
        self.label = Some(label);
        self
    }

    /// Splits every chunk into tasks of at most `rows` rows for the `each_async*` methods
    /// (default: one task per chunk, [`CHUNK_CAPACITY`] rows). For callbacks heavy enough that a
    /// few chunks would leave workers idle (ecs_bench_suite's `heavy_compute`: 1,000 entities,
    /// two chunks) — the same knob as bevy_ecs's fixed batch size or hecs's `into_iter_batched`.
    /// A chunk of `len` rows becomes `len.div_ceil(rows)` tasks of near-equal length (they
    /// differ by at most one row), so workers stay evenly loaded: 488 rows at 64 a task are 8
    /// tasks of 61, not 7 of 64 and one of 40.
    ///
    /// The split depends only on `rows` and the chunk lengths, never on the worker count: tasks
    /// still run (chunk, row) order's pieces, commands still apply in (launch, chunk, row,
    /// record) order, and a reduction folds each piece and combines them in that order, so its
    /// result stays bit-identical for every worker count (changing `rows` may change a float
    /// reduction's rounding, as any regrouping does). The synchronous methods run on the calling
    /// thread and ignore it. Values of `CHUNK_CAPACITY` or more mean one task per chunk.
    ///
    /// # Panics
    ///
    /// If `rows` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct Mass(f64);
    ///
    /// let total = |workers| {
    ///     let mut registry = Registry::with_workers(workers);
    ///     registry.spawn_batch((0..1000).map(|i| (Mass(1.0 / (1.0 + i as f64)),)));
    ///     registry
    ///         .query::<&mut Mass>()
    ///         .rows_per_task(64) // 16 tasks instead of 2
    ///         .each_async(|_, m| m.0 *= 2.0);
    ///     registry
    ///         .query::<&Mass>()
    ///         .rows_per_task(64)
    ///         .each_async_reduce(|| 0.0, |acc, _, m| acc + m.0, |a, b| a + b)
    ///         .join(&mut registry)
    /// };
    /// assert_eq!(total(1).to_bits(), total(8).to_bits());
    /// assert!((total(2) - 2.0 * (1..=1000).map(|i| 1.0 / i as f64).sum::<f64>()).abs() < 1e-9);
    /// ```
    pub fn rows_per_task(mut self, rows: usize) -> Self {
        assert!(
            rows >= 1,
            "freyr: Query::rows_per_task(0): a task needs at least one row (use CHUNK_CAPACITY, \
             the default, for one task per chunk)"
        );
        self.rows_per_task = rows;
        self
    }

    /// Adds read-only views for the `*_with` callbacks: a tuple of [`View<T>`](crate::View)
    /// (random access to any entity's `T`) and [`Res<T>`](crate::Res) (a resource).
    ///
    /// # Panics
    ///
    /// If the query writes a viewed component type (naming it); see
    /// [`try_views`](Query::try_views).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Registry, View};
    ///
    /// struct Pos(f32);
    /// struct Chase(freyr::Entity);
    /// struct Gap(f32);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// let target = registry.spawn((Pos(10.0),));
    /// let hunter = registry.spawn((Pos(4.0), Chase(target), Gap(0.0)));
    /// registry
    ///     .query::<(&Pos, &Chase, &mut Gap)>()
    ///     .views::<(View<Pos>,)>()
    ///     .each_with(|_, (pos, chase, gap), ctx| {
    ///         let (positions,) = ctx.views();
    ///         gap.0 = positions.get(chase.0).unwrap().0 - pos.0;
    ///     });
    /// assert_eq!(registry.get::<Gap>(hunter).unwrap().0, 6.0);
    /// ```
    pub fn views<V2: ViewSet>(self) -> Query<'r, Q, F, V2> {
        match self.try_views::<V2>() {
            Ok(q) => q,
            Err(e) => panic!("freyr: {e}"),
        }
    }

    /// Like [`views`](Query::views), reporting a conflict as an error.
    ///
    /// # Errors
    ///
    /// [`QueryError::ConflictingAccess`] if the query writes a type that `V2` reads.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Registry, View};
    ///
    /// struct Pos(f32);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// let err = registry
    ///     .query::<&mut Pos>()
    ///     .try_views::<(View<Pos>,)>()
    ///     .err()
    ///     .unwrap();
    /// assert!(err.to_string().contains("Pos"));
    /// ```
    pub fn try_views<V2: ViewSet>(self) -> Result<Query<'r, Q, F, V2>, QueryError> {
        let mut types = QueryState::<Q, F>::type_access();
        V2::type_access(&mut types);
        types.check()?;
        Ok(Query {
            registry: self.registry,
            label: self.label,
            rows_per_task: self.rows_per_task,
            ticks: self.ticks,
            _marker: PhantomData,
        })
    }

    /// Number of entities the query matches: with change filters
    /// ([`filter_changed`](Query::filter_changed), [`filter_added`](Query::filter_added)), the
    /// rows of the chunks that pass them, as many as [`each`](Query::each) would visit. Waits
    /// for nothing: in-flight work never changes which entities exist. Grants no write access,
    /// so it stamps nothing, even for a `&mut T` query.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Registry, With};
    ///
    /// struct A;
    /// struct B;
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.spawn((A,));
    /// registry.spawn((A, B));
    /// assert_eq!(registry.query::<&A>().count(), 2);
    /// assert_eq!(registry.query_filtered::<&A, With<B>>().count(), 1);
    /// registry.update(0.0); // now tick 1
    /// assert_eq!(registry.query::<&A>().filter_added::<A>(0).count(), 0);
    /// ```
    pub fn count(self) -> usize {
        self.registry.query_count::<Q, F>(&self.ticks)
    }

    /// Calls `f(entity, items)` for every matching entity, on the calling thread, in archetype
    /// creation order, then chunk order, then row order.
    ///
    /// The callback borrows nothing from the registry and may capture anything, `&mut` state
    /// included; to change the world's structure it uses [`each_with`](Query::each_with)'s
    /// commands.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct Id(u32);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.spawn_batch((0..5).map(|i| (Id(i),)));
    /// let mut order = Vec::new();
    /// registry.query::<&Id>().each(|_, id| order.push(id.0));
    /// assert_eq!(order, [0, 1, 2, 3, 4]);
    /// ```
    #[inline]
    #[doc(alias = "for_each")]
    #[doc(alias = "iter")]
    pub fn each<C>(self, mut f: C)
    where
        C: for<'w> FnMut(Entity, Q::Item<'w>),
    {
        let (label, terms, tick) = (self.label, self.ticks, self.registry.tick());
        self.registry
            .run_sync::<Q, F>("Query::each", label, |world, state, stamp| {
                if !terms.is_empty() {
                    // SAFETY: as below; the chunk pointers are read from `world` itself.
                    unsafe { each::each_row_selected(world, state, (&terms, tick), &mut f) };
                    return;
                }
                // SAFETY: `run_sync` refreshed the state against `world`, waited for the in-flight
                // work that conflicts with it, and holds the registry mutably for the whole call;
                // `stamp` is `world`'s current layout, so the runs point at its rows and ticks,
                // which stay in place until the call returns (no `&mut World` can be taken
                // meanwhile).
                unsafe { each::each_row::<Q, C>(state.runs(world, stamp), tick, &mut f) }
            });
    }

    /// Calls `f(entities, columns)` once per matching chunk, on the calling thread, in order; the
    /// columns are slices (`&[T]` / `&mut [T]` / `Option<&[T]>`), so loops over them vectorise.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// #[derive(Clone, Copy)]
    /// struct Pos(f32);
    /// #[derive(Clone, Copy)]
    /// struct Vel(f32);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.spawn_batch((0..1000).map(|_| (Pos(0.0), Vel(2.0))));
    /// let mut calls = 0;
    /// registry
    ///     .query::<(&mut Pos, &Vel)>()
    ///     .each_chunk(|entities, (pos, vel)| {
    ///         calls += 1;
    ///         assert_eq!(entities.len(), pos.len());
    ///         for (p, v) in pos.iter_mut().zip(vel) {
    ///             p.0 += v.0;
    ///         }
    ///     });
    /// assert_eq!(calls, 2); // 512 + 488
    /// let mut sum = 0.0;
    /// registry.query::<&Pos>().each(|_, p| sum += p.0);
    /// assert_eq!(sum, 2000.0);
    /// ```
    #[inline]
    pub fn each_chunk<C>(self, mut f: C)
    where
        C: for<'w> FnMut(&'w [Entity], Q::Slice<'w>),
    {
        let (label, terms, tick) = (self.label, self.ticks, self.registry.tick());
        self.registry
            .run_sync::<Q, F>("Query::each_chunk", label, |world, state, _| {
                // SAFETY: as in `each`.
                unsafe { each::each_chunk(world, state, (&terms, tick), &mut f) }
            });
    }

    /// Like [`each`](Query::each), with a [`EachContext`] giving the views `V` and a commands handle.
    /// The commands apply at the next sync point, after those of earlier launches.
    ///
    /// # Panics
    ///
    /// If a [`Res<T>`](crate::Res) view names a missing resource (before anything runs). If `f`
    /// panics, the panic propagates at once and this call's commands are discarded.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct Hp(i32);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// let dead = registry.spawn((Hp(0),));
    /// let alive = registry.spawn((Hp(5),));
    /// registry.query::<&Hp>().each_with(|e, hp, ctx| {
    ///     if hp.0 <= 0 {
    ///         ctx.commands().despawn(e);
    ///     }
    /// });
    /// assert!(registry.contains(dead)); // deferred to the sync point
    /// registry.execute_tasks();
    /// assert!(!registry.contains(dead));
    /// assert!(registry.contains(alive));
    /// ```
    #[doc(alias = "for_each_with")]
    pub fn each_with<C>(self, mut f: C)
    where
        C: for<'w> FnMut(Entity, Q::Item<'w>, &mut EachContext<'w, V>),
    {
        let (label, terms, tick) = (self.label, self.ticks, self.registry.tick());
        self.registry
            .run_with::<Q, F, V>(label, |world, state, views, commands| {
                let ticks = (&terms[..], tick);
                // SAFETY: as in `each`; `run_with` fetched the views from this world and the
                // resources after waiting for the work that conflicts with them too.
                unsafe { each::each_row_with(world, state, views, ticks, commands, &mut f) };
            });
    }

    /// Launches one task per non-empty matching chunk and returns at once. Work on the calling
    /// thread overlaps it; a sync point ([`Registry::execute_tasks`], or the end of the phase)
    /// waits for it, and so does any later operation that conflicts with it (an implicit sync
    /// point).
    ///
    /// The callback sees only its own entity's items and what it captured: it must be
    /// `Fn + Send + Sync + 'static`, so it cannot capture `&mut` state or the registry:
    ///
    /// ```compile_fail
    /// # use freyr::Registry;
    /// # struct Pos(f32);
    /// let mut registry = Registry::with_workers(2);
    /// let mut count = 0;
    /// registry.query::<&Pos>().each_async(|_, _| count += 1); // error: captures `&mut count`
    /// ```
    ///
    /// ```compile_fail
    /// # use freyr::Registry;
    /// # struct Pos(f32);
    /// let mut registry = Registry::with_workers(2);
    /// let other = registry.spawn((Pos(0.0),));
    /// registry.query::<&mut Pos>().each_async(|_, p| {
    ///     p.0 = registry.get::<Pos>(other).unwrap().0; // error: the registry is borrowed
    /// });
    /// ```
    ///
    /// ```compile_fail
    /// # use freyr::Registry;
    /// # struct Pos(f32);
    /// let mut registry = Registry::with_workers(2);
    /// let shared: &'static Registry = Box::leak(Box::new(Registry::with_workers(1)));
    /// registry.query::<&Pos>().each_async(move |_, _| {
    ///     let _ = shared.len(); // error: `Registry` is not `Sync`
    /// });
    /// ```
    ///
    /// A panic in the callback is caught; the chunk's remaining rows are skipped and the panic is
    /// re-raised at the next sync point.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct Pos(f32);
    /// struct Vel(f32);
    ///
    /// let mut registry = Registry::with_workers(4);
    /// registry.spawn_batch((0..10_000).map(|_| (Pos(0.0), Vel(1.5))));
    /// let dt = 2.0;
    /// registry
    ///     .query::<(&mut Pos, &Vel)>()
    ///     .each_async(move |_, (p, v)| p.0 += v.0 * dt);
    /// registry.execute_tasks();
    /// let mut ok = true;
    /// registry.query::<&Pos>().each(|_, p| ok &= p.0 == 3.0);
    /// assert!(ok);
    /// ```
    #[doc(alias = "par_iter")]
    #[doc(alias = "par_for_each")]
    pub fn each_async<C>(self, f: C)
    where
        C: for<'w> Fn(Entity, Q::Item<'w>) + Send + Sync + 'static,
    {
        self.launch(Plain(f));
    }

    /// Like [`each_async`](Query::each_async), with a [`EachContext`] giving the views `V` and a
    /// per-chunk commands handle. Commands apply at the sync point in (launch, chunk, row, record)
    /// order; a panicking chunk's commands are discarded.
    ///
    /// # Panics
    ///
    /// If a [`Res<T>`](crate::Res) view names a missing resource (before anything runs).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Registry, Res};
    ///
    /// struct Hp(i32);
    /// struct Poison(i32);
    ///
    /// let mut registry = Registry::with_workers(3);
    /// registry.insert_resource(Poison(2));
    /// registry.spawn_batch((0..100).map(|i| (Hp(i % 4),)));
    /// registry
    ///     .query::<&mut Hp>()
    ///     .views::<(Res<Poison>,)>()
    ///     .each_async_with(|e, hp, ctx| {
    ///         let (poison,) = ctx.views();
    ///         hp.0 -= poison.0;
    ///         if hp.0 < 0 {
    ///             ctx.commands().despawn(e);
    ///         }
    ///     });
    /// registry.execute_tasks();
    /// assert_eq!(registry.len(), 50);
    /// ```
    #[doc(alias = "par_for_each_with")]
    pub fn each_async_with<C>(self, f: C)
    where
        C: for<'w> Fn(Entity, Q::Item<'w>, &mut EachContext<'w, V>) + Send + Sync + 'static,
    {
        self.launch(WithContext(f));
    }

    /// A deterministic parallel reduction: each chunk folds its rows in order starting from
    /// `identity()`, and the chunk results are combined in chunk order when the launch is retired.
    /// The result is bit-identical for every worker count, float sums included.
    ///
    /// Returns a [`Reduction`] handle; [`Reduction::join`] waits for this launch only.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct Energy(f32);
    ///
    /// let sum_with = |workers| {
    ///     let mut registry = Registry::with_workers(workers);
    ///     registry.spawn_batch((0..5000).map(|i| (Energy(1.0 / (i as f32 + 1.0)),)));
    ///     registry
    ///         .query::<&Energy>()
    ///         .each_async_reduce(|| 0.0f32, |acc, _, e| acc + e.0, |a, b| a + b)
    ///         .join(&mut registry)
    /// };
    /// assert_eq!(sum_with(1).to_bits(), sum_with(3).to_bits());
    /// ```
    pub fn each_async_reduce<A, I, Fo, Co>(self, identity: I, fold: Fo, combine: Co) -> Reduction<A>
    where
        A: Send + 'static,
        I: Fn() -> A + Send + Sync + 'static,
        Fo: for<'w> Fn(A, Entity, Q::Item<'w>) -> A + Send + Sync + 'static,
        Co: Fn(A, A) -> A + Send + Sync + 'static,
    {
        let slot = ReduceSlot::pending();
        let id = self.registry.id();
        let kernel = Reduce {
            identity,
            fold,
            combine,
            out: Arc::clone(&slot),
        };
        let seq = self.launch(kernel);
        Reduction::new(slot, seq, id)
    }

    fn launch<K: Kernel<Q, V>>(self, kernel: K) -> Option<u64> {
        let (label, rows) = (self.label, self.rows_per_task);
        self.registry
            .launch_query::<Q, F, V, K>(label, rows, &self.ticks, kernel)
    }
}
