//! [`Registry`]: the world, the pool, resources, systems, in-flight work and sync points.

use core::any::{Any, TypeId};
use core::cell::Cell;
use core::marker::PhantomData;
use core::ptr::NonNull;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use freyr_core::{Bundle, CommandBuffer, Component, ComponentError, Entity, NoSuchEntity, World};
use freyr_sched::{ThreadPool, resolve_worker_count};
use hashbrown::HashMap;

use crate::access::Access;
use crate::error::QueryError;
use crate::fetch::QueryData;
use crate::filter::QueryFilter;
use crate::hash::{HashComponents, hash_world};
use crate::launch::callback::inside_callback_of;
use crate::launch::inflight::{InFlight, OpAccess, Retired};
use crate::profiler::{ProfileReport, Profiler};
use crate::query::Query;
use crate::resources::Resources;
use crate::state::QueryState;
use crate::system::{Phase, System};

static NEXT_REGISTRY_ID: AtomicU64 = AtomicU64::new(1);

/// The world, owned through a raw pointer: tasks holding component views share `&World` while the
/// registry value itself may be moved, and a `Box` field would assert uniqueness on every move.
pub(crate) struct WorldBox(NonNull<World>);

// SAFETY: `WorldBox` owns its `World` like a `Box` would; `World` is `Send + Sync`.
unsafe impl Send for WorldBox {}

impl WorldBox {
    fn new(world: World) -> Self {
        WorldBox(NonNull::from(Box::leak(Box::new(world))))
    }

    #[inline]
    pub(crate) fn get(&self) -> &World {
        // SAFETY: the pointer is live until `Drop`; shared access is allowed alongside tasks'
        // shared access, and exclusive access goes through `get_mut(&mut self)`.
        unsafe { self.0.as_ref() }
    }

    #[inline]
    fn get_mut(&mut self) -> &mut World {
        // SAFETY: `&mut self` excludes other registry-side borrows; callers wait for every
        // in-flight launch first, so no task holds a reference into the world.
        unsafe { self.0.as_mut() }
    }
}

impl Drop for WorldBox {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `Box::leak` and is reclaimed once, here; the registry
        // retired all launches before its fields drop.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// Cached query states, keyed by `TypeId::of::<QueryState<Q, F>>()`.
pub(crate) type QueryCache = HashMap<TypeId, Box<dyn Any + Send>>;

/// The registry's state for `(Q, F)`, created on first use and refreshed against `world`.
///
/// # Panics
///
/// On conflicting access in `Q`, naming the type.
pub(crate) fn state_mut<'c, Q: QueryData, F: QueryFilter>(
    cache: &'c mut QueryCache,
    world: &World,
) -> &'c mut QueryState<Q, F> {
    match try_state_mut::<Q, F>(cache, world) {
        Ok(state) => state,
        Err(e) => panic!("freyr: {e}"),
    }
}

fn try_state_mut<'c, Q: QueryData, F: QueryFilter>(
    cache: &'c mut QueryCache,
    world: &World,
) -> Result<&'c mut QueryState<Q, F>, QueryError> {
    let entry = match cache.entry(TypeId::of::<QueryState<Q, F>>()) {
        hashbrown::hash_map::Entry::Occupied(e) => e.into_mut(),
        hashbrown::hash_map::Entry::Vacant(v) => {
            v.insert(Box::new(QueryState::<Q, F>::new(world)?))
        }
    };
    let state = entry
        .downcast_mut::<QueryState<Q, F>>()
        .expect("query cache entry stored under its own TypeId");
    state.update(world);
    Ok(state)
}

/// Owns a [`World`], a [`ThreadPool`], [`Resources`] and systems, and runs queries on them with
/// sync points that keep parallel work race-free and deterministic.
///
/// - **Queries**: [`query`](Registry::query) and friends return a [`Query`]; its `each*` methods
///   run on the calling thread, its `each_async*` methods launch one task per chunk.
/// - **Sync points**: [`execute_tasks`](Registry::execute_tasks) and the end of each phase of
///   [`update`](Registry::update) wait for all launched work, apply recorded commands in
///   (launch, chunk, row, record) order, then destroy entities queued by
///   [`destroy_entity`](Registry::destroy_entity). Any operation that conflicts with in-flight
///   work waits for that work first (an implicit sync point); disjoint work is not waited for.
/// - **Systems**: [`add_system`](Registry::add_system) for a [`Phase`]; `update(dt)` runs
///   PreUpdate, Update, PostUpdate, each followed by a sync point.
///
/// The registry is `Send` but not `Sync`: it is driven from one thread at a time, and callbacks
/// (which must be `Sync` to run on workers) cannot capture it. Dropping it waits for all tasks.
///
/// # Examples
///
/// ```
/// use freyr_query::Registry;
///
/// struct Pos(f32);
/// struct Vel(f32);
///
/// let mut registry = Registry::with_workers(4);
/// let e = registry.spawn((Pos(0.0), Vel(1.0)));
/// registry
///     .query::<(&mut Pos, &Vel)>()
///     .each_async(|_, (p, v)| p.0 += v.0);
/// // `get::<Pos>` conflicts with the in-flight write of `Pos`, so it waits for it.
/// assert_eq!(registry.get::<Pos>(e).unwrap().0, 1.0);
/// registry.execute_tasks();
/// assert_eq!(registry.profile().implicit_syncs, 1);
/// ```
pub struct Registry {
    // Field order is drop order: in-flight work is retired in `Drop::drop`, before any field
    // drops; the pool drops (joining its threads) before the world it may have pointed into.
    pub(crate) inflight: InFlight,
    /// Command buffers awaiting the next sync point, tagged with their launch number.
    pub(crate) pending: Vec<(u64, Vec<CommandBuffer>)>,
    pub(crate) pool: ThreadPool,
    pub(crate) world: WorldBox,
    pub(crate) resources: Resources,
    pub(crate) queries: QueryCache,
    systems: [Vec<Box<dyn System>>; 3],
    destroy_queue: Vec<Entity>,
    pub(crate) profiler: Profiler,
    pub(crate) id: u64,
    pub(crate) next_seq: u64,
    pub(crate) phase: Option<Phase>,
    in_update: bool,
    /// Systems of the running phase (taken out of `systems` while they run).
    running_systems: usize,
    /// Explicitly `!Sync`: the registry is driven from one thread at a time, and a callback that
    /// must be `Sync` can therefore never capture `&Registry`.
    _not_sync: PhantomData<Cell<()>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    /// An empty registry with one worker per available CPU (`resolve_worker_count(0, detected)`).
    ///
    /// # Examples
    ///
    /// ```
    /// let registry = freyr_query::Registry::new();
    /// assert!(registry.workers() >= 1);
    /// assert!(registry.is_empty());
    /// ```
    pub fn new() -> Self {
        Registry::with_workers(0)
    }

    /// An empty registry whose pool has `workers` total parallelism, the calling thread included
    /// (0 = auto, 1 = everything inline; clamped to [`freyr_sched::MAX_WORKERS`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let registry = freyr_query::Registry::with_workers(3);
    /// assert_eq!(registry.workers(), 3);
    /// ```
    pub fn with_workers(workers: usize) -> Self {
        Registry::from_world(World::new(), workers)
    }

    /// A registry around an existing `world`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut world = freyr_core::World::new();
    /// let e = world.spawn((5u32,));
    /// let registry = freyr_query::Registry::from_world(world, 1);
    /// assert_eq!(registry.get::<u32>(e), Ok(&5));
    /// ```
    pub fn from_world(world: World, workers: usize) -> Self {
        let detected = std::thread::available_parallelism().map_or(1, |n| n.get());
        let pool = ThreadPool::new(resolve_worker_count(workers, detected));
        Registry::from_parts(world, pool)
    }

    /// A registry around an existing `world` and `pool` (e.g. one built with
    /// [`ThreadPool::builder`] for pinning or thread names).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = freyr_sched::ThreadPool::builder().workers(2).build();
    /// let registry = freyr_query::Registry::from_parts(freyr_core::World::new(), pool);
    /// assert_eq!(registry.workers(), 2);
    /// ```
    pub fn from_parts(world: World, pool: ThreadPool) -> Self {
        let profiler = Profiler::new(pool.metrics());
        Registry {
            inflight: InFlight::default(),
            pending: Vec::new(),
            pool,
            world: WorldBox::new(world),
            resources: Resources::new(),
            queries: QueryCache::default(),
            systems: Default::default(),
            destroy_queue: Vec::new(),
            profiler,
            id: NEXT_REGISTRY_ID.fetch_add(1, Ordering::Relaxed),
            next_seq: 0,
            phase: None,
            in_update: false,
            running_systems: 0,
            _not_sync: PhantomData,
        }
    }

    /// Total parallelism of the pool, the calling thread included.
    pub fn workers(&self) -> usize {
        self.pool.workers()
    }

    /// The pool, for work that is not a query (`parallel_for`, `scope`); both block until done.
    pub fn pool(&self) -> &ThreadPool {
        &self.pool
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Golden rule 3: a callback of this registry must not drive it.
    #[inline]
    pub(crate) fn guard(&self, what: &str) {
        if inside_callback_of(self.id) {
            guard_failed(what);
        }
    }

    #[inline]
    fn wait_for(&self, op: OpAccess<'_>) {
        if !self.inflight.is_empty() {
            self.inflight
                .wait_conflicting(&self.pool, &op, &self.profiler);
        }
    }

    /// Number of launches not yet retired by a sync point.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_query::Registry;
    ///
    /// struct A(u8);
    ///
    /// let mut registry = Registry::with_workers(2);
    /// registry.spawn((A(0),));
    /// registry.query::<&mut A>().each_async(|_, a| a.0 += 1);
    /// assert_eq!(registry.in_flight(), 1);
    /// registry.execute_tasks();
    /// assert_eq!(registry.in_flight(), 0);
    /// ```
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    // ---- world access -------------------------------------------------------------------------

    /// The world, shared. Waits for in-flight work that writes any component.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// registry.spawn((1u8,));
    /// assert_eq!(registry.world().len(), 1);
    /// ```
    pub fn world(&self) -> &World {
        self.guard("Registry::world");
        self.wait_for(OpAccess::WorldRead);
        self.world.get()
    }

    /// The world, exclusively. Waits for all in-flight work (it may change anything). Recorded
    /// commands stay pending until the next sync point.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// let e = registry.world_mut().spawn((1u8,));
    /// assert!(registry.contains(e));
    /// ```
    pub fn world_mut(&mut self) -> &mut World {
        self.guard("Registry::world_mut");
        self.wait_for(OpAccess::Exclusive);
        self.world.get_mut()
    }

    /// Spawns an entity now (waiting for all in-flight work first).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// let e = registry.spawn((1u8, 2.0f32));
    /// assert_eq!(registry.get::<f32>(e), Ok(&2.0));
    /// ```
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        self.world_mut().spawn(bundle)
    }

    /// Spawns one entity per bundle now, filling chunks directly; returns them in order.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// let es = registry.spawn_batch((0..3u32).map(|i| (i,)));
    /// assert_eq!(es.len(), 3);
    /// assert_eq!(registry.get::<u32>(es[2]), Ok(&2));
    /// ```
    pub fn spawn_batch<B: Bundle, I: IntoIterator<Item = B>>(&mut self, iter: I) -> Vec<Entity> {
        self.world_mut().spawn_batch(iter)
    }

    /// Despawns `entity` now (waiting for all in-flight work first). See also
    /// [`destroy_entity`](Registry::destroy_entity), which defers to the next sync point.
    ///
    /// # Errors
    ///
    /// [`NoSuchEntity`] if the handle is stale.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// let e = registry.spawn((1u8,));
    /// assert!(registry.despawn(e).is_ok());
    /// assert!(registry.despawn(e).is_err());
    /// ```
    pub fn despawn(&mut self, entity: Entity) -> Result<(), NoSuchEntity> {
        self.world_mut().despawn(entity)
    }

    /// Inserts `bundle` into `entity` now (waiting for all in-flight work first).
    ///
    /// # Errors
    ///
    /// [`NoSuchEntity`] if the handle is stale.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// let e = registry.spawn((1u8,));
    /// registry.insert(e, (2u16,)).unwrap();
    /// assert_eq!(registry.get::<u16>(e), Ok(&2));
    /// ```
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) -> Result<(), NoSuchEntity> {
        self.world_mut().insert(entity, bundle)
    }

    /// Removes the components of `B` from `entity` now (waiting for all in-flight work first).
    ///
    /// # Errors
    ///
    /// [`ComponentError`] if the handle is stale or the entity lacks a component of `B`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// let e = registry.spawn((1u8, 2u16));
    /// assert_eq!(registry.remove::<(u16,)>(e), Ok((2,)));
    /// assert!(registry.get::<u16>(e).is_err());
    /// ```
    pub fn remove<B: Bundle>(&mut self, entity: Entity) -> Result<B, ComponentError> {
        self.world_mut().remove::<B>(entity)
    }

    /// `entity`'s `T`. Waits only for in-flight work that writes `T` in `entity`'s archetype.
    ///
    /// # Errors
    ///
    /// [`ComponentError::NoSuchEntity`] for a stale handle,
    /// [`ComponentError::MissingComponent`] if the entity has no `T`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// let e = registry.spawn((3i64,));
    /// assert_eq!(registry.get::<i64>(e), Ok(&3));
    /// assert!(registry.get::<u8>(e).is_err());
    /// ```
    pub fn get<T: Component>(&self, entity: Entity) -> Result<&T, ComponentError> {
        self.guard("Registry::get");
        let world = self.world.get();
        if let (Some(id), Some((archetype, _, _))) =
            (world.component_id::<T>(), world.entity_location(entity))
        {
            self.wait_for(OpAccess::ReadOne(id, archetype));
        }
        world.get::<T>(entity)
    }

    /// `entity`'s `T`, mutably. Waits only for in-flight work that reads or writes `T` in
    /// `entity`'s archetype.
    ///
    /// # Errors
    ///
    /// As [`get`](Registry::get).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// let e = registry.spawn((3i64,));
    /// *registry.get_mut::<i64>(e).unwrap() += 1;
    /// assert_eq!(registry.get::<i64>(e), Ok(&4));
    /// ```
    pub fn get_mut<T: Component>(&mut self, entity: Entity) -> Result<&mut T, ComponentError> {
        self.guard("Registry::get_mut");
        let world = self.world.get();
        let (archetype, chunk, row) = world
            .entity_location(entity)
            .ok_or(ComponentError::NoSuchEntity)?;
        let missing = ComponentError::MissingComponent(core::any::type_name::<T>());
        let id = world.component_id::<T>().ok_or(missing)?;
        self.wait_for(OpAccess::WriteOne(id, archetype));
        let archetype = world.archetype(archetype);
        let column = archetype.column_index(id).ok_or(missing)?;
        let ptr = archetype.chunk(chunk).column_ptr(column).cast::<T>();
        // SAFETY:
        // - `(chunk, row)` is `entity`'s live location, so the row is initialised and in bounds,
        //   and the column holds `T` (`id` is `T`'s id);
        // - every in-flight launch reading or writing `T` in this entity's archetype was waited
        //   for (the others are confined to archetypes without this row, which cannot move
        //   while they run), and no new one can start while the returned borrow of `self`
        //   lives; the world is only reached through
        //   `&World` here (never `&mut World`), so tasks holding component views stay valid;
        // - the pointer has the chunk allocation's provenance, so writing through it is allowed.
        Ok(unsafe { &mut *ptr.as_ptr().add(row) })
    }

    /// Whether `entity` is alive. Never waits.
    pub fn contains(&self, entity: Entity) -> bool {
        self.world.get().contains(entity)
    }

    /// Number of live entities. Never waits.
    pub fn len(&self) -> usize {
        self.world.get().len()
    }

    /// Whether no entity is alive. Never waits.
    pub fn is_empty(&self) -> bool {
        self.world.get().is_empty()
    }

    /// Queues `entity` for destruction at the next sync point (after that sync point's commands).
    /// A handle that is stale by then is skipped and counted as a stale command.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// let e = registry.spawn((1u8,));
    /// registry.destroy_entity(e);
    /// assert!(registry.contains(e));
    /// registry.execute_tasks();
    /// assert!(!registry.contains(e));
    /// ```
    pub fn destroy_entity(&mut self, entity: Entity) {
        self.guard("Registry::destroy_entity");
        self.destroy_queue.push(entity);
    }

    // ---- resources ----------------------------------------------------------------------------

    /// Stores a resource, returning the previous value of its type. Waits for in-flight work
    /// that reads that resource.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// assert_eq!(registry.insert_resource(1u32), None);
    /// assert_eq!(registry.insert_resource(2u32), Some(1));
    /// ```
    pub fn insert_resource<T: Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        self.guard("Registry::insert_resource");
        self.wait_for(OpAccess::ResourceWrite(TypeId::of::<T>()));
        self.resources.insert(value)
    }

    /// The resource of type `T`. Never waits (in-flight work only reads resources).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// registry.insert_resource(7u8);
    /// assert_eq!(registry.resource::<u8>(), Some(&7));
    /// assert_eq!(registry.resource::<u16>(), None);
    /// ```
    pub fn resource<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.resources.get::<T>()
    }

    /// The resource of type `T`, mutably. Waits for in-flight work that reads it.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// registry.insert_resource(7u8);
    /// *registry.resource_mut::<u8>().unwrap() += 1;
    /// assert_eq!(registry.resource::<u8>(), Some(&8));
    /// ```
    pub fn resource_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        self.guard("Registry::resource_mut");
        self.wait_for(OpAccess::ResourceWrite(TypeId::of::<T>()));
        self.resources.get_mut::<T>()
    }

    /// Removes and returns the resource of type `T`. Waits for in-flight work that reads it.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// registry.insert_resource(7u8);
    /// assert_eq!(registry.remove_resource::<u8>(), Some(7));
    /// assert!(!registry.contains_resource::<u8>());
    /// ```
    pub fn remove_resource<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        self.guard("Registry::remove_resource");
        self.wait_for(OpAccess::ResourceWrite(TypeId::of::<T>()));
        self.resources.remove::<T>()
    }

    /// Whether a resource of type `T` is stored.
    pub fn contains_resource<T: Send + Sync + 'static>(&self) -> bool {
        self.resources.contains::<T>()
    }

    // ---- queries ------------------------------------------------------------------------------

    /// A query fetching `Q` from every entity that has its required components.
    ///
    /// The query's state (resolved ids, matched archetypes) is cached per `(Q, F)` type in the
    /// registry, so building a query on every call costs one map lookup plus the archetypes
    /// created since the last call.
    ///
    /// # Panics
    ///
    /// If `Q` accesses a type mutably twice, or mutably and immutably, naming the type; see
    /// [`try_query`](Registry::try_query).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_query::Registry;
    ///
    /// struct Pos(f32);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// let e = registry.spawn((Pos(1.0),));
    /// registry.query::<(freyr_core::Entity, &mut Pos)>().each(|_, (id, p)| {
    ///     assert_eq!(id, e);
    ///     p.0 = 5.0;
    /// });
    /// assert_eq!(registry.get::<Pos>(e).unwrap().0, 5.0);
    /// ```
    pub fn query<Q: QueryData>(&mut self) -> Query<'_, Q> {
        self.query_filtered::<Q, ()>()
    }

    /// A query fetching `Q` from every entity whose archetype passes the filter `F`
    /// ([`With`](crate::With), [`Without`](crate::Without), tuples of them).
    ///
    /// # Panics
    ///
    /// As [`query`](Registry::query).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_query::{Registry, With, Without};
    ///
    /// struct Pos(f32);
    /// struct Ai;
    /// struct Dead;
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.spawn((Pos(1.0), Ai));
    /// registry.spawn((Pos(2.0), Ai, Dead));
    /// registry.spawn((Pos(3.0),));
    /// let n = registry.query_filtered::<&Pos, (With<Ai>, Without<Dead>)>().count();
    /// assert_eq!(n, 1);
    /// ```
    pub fn query_filtered<Q: QueryData, F: QueryFilter>(&mut self) -> Query<'_, Q, F> {
        match self.try_query_filtered::<Q, F>() {
            Ok(q) => q,
            Err(e) => panic!("freyr: {e}"),
        }
    }

    /// Like [`query`](Registry::query), reporting conflicting access as an error.
    ///
    /// # Errors
    ///
    /// [`QueryError::ConflictingAccess`] naming the type accessed in conflicting ways.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_query::{QueryError, Registry};
    ///
    /// struct Pos(f32);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// match registry.try_query::<(&mut Pos, &mut Pos)>() {
    ///     Err(QueryError::ConflictingAccess { type_name, .. }) => assert!(type_name.ends_with("Pos")),
    ///     _ => unreachable!(),
    /// }
    /// assert!(registry.try_query::<(&Pos, &Pos)>().is_ok());
    /// ```
    pub fn try_query<Q: QueryData>(&mut self) -> Result<Query<'_, Q>, QueryError> {
        self.try_query_filtered::<Q, ()>()
    }

    /// Like [`query_filtered`](Registry::query_filtered), reporting conflicting access as an
    /// error.
    ///
    /// # Errors
    ///
    /// As [`try_query`](Registry::try_query).
    pub fn try_query_filtered<Q: QueryData, F: QueryFilter>(
        &mut self,
    ) -> Result<Query<'_, Q, F>, QueryError> {
        self.guard("Registry::query");
        try_state_mut::<Q, F>(&mut self.queries, self.world.get())?;
        Ok(Query::new(self))
    }

    /// The cached state of `(Q, F)`, if a query of that type was built before.
    pub fn query_state<Q: QueryData, F: QueryFilter>(&self) -> Option<&QueryState<Q, F>> {
        self.queries
            .get(&TypeId::of::<QueryState<Q, F>>())
            .and_then(|s| s.downcast_ref())
    }

    // ---- sync points --------------------------------------------------------------------------

    /// The explicit sync point: waits for all launched work, applies every recorded command in
    /// (launch, chunk, row, record) order, then destroys the entities queued by
    /// [`destroy_entity`](Registry::destroy_entity).
    ///
    /// # Panics
    ///
    /// Re-raises the first panic of a callback of the retired launches (launch order), after
    /// applying the commands of every chunk that did not panic. The registry stays usable.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_query::Registry;
    ///
    /// struct Seed;
    /// struct Tree;
    ///
    /// let mut registry = Registry::with_workers(2);
    /// registry.spawn((Seed,));
    /// registry.query::<&Seed>().each_async_with(|e, _, ctx| {
    ///     ctx.commands().remove::<(Seed,)>(e);
    ///     ctx.commands().insert(e, (Tree,));
    /// });
    /// registry.execute_tasks();
    /// assert_eq!(registry.query::<&Tree>().count(), 1);
    /// assert_eq!(registry.query::<&Seed>().count(), 0);
    /// ```
    pub fn execute_tasks(&mut self) {
        self.guard("Registry::execute_tasks");
        if let Some(panic) = self.sync_point() {
            panic::resume_unwind(panic);
        }
    }

    /// Retires everything, applies deferred changes; returns the first callback panic.
    fn sync_point(&mut self) -> Option<Box<dyn Any + Send>> {
        let retired = self.inflight.retire_all(&self.pool);
        let mut first_panic = None;
        for r in retired {
            if let Some(p) = self.absorb(r) {
                first_panic.get_or_insert(p);
            }
        }
        self.apply_deferred();
        self.profiler.record_sync_point();
        first_panic
    }

    /// Books a retired launch: profile, pending commands; returns its panic.
    fn absorb(&mut self, retired: Retired) -> Option<Box<dyn Any + Send>> {
        if let Some(label) = retired.label {
            self.profiler
                .record_label(label, retired.tasks, retired.wall);
        }
        if !retired.commands.is_empty() {
            self.pending.push((retired.seq, retired.commands));
        }
        if retired.panic.is_some() {
            self.profiler.record_panic();
        }
        retired.panic
    }

    /// Retires one launch (for [`Reduction::join`](crate::Reduction::join)); re-raises its panic.
    pub(crate) fn retire_launch(&mut self, seq: u64) {
        self.guard("Reduction::join");
        if let Some(retired) = self.inflight.retire_one(&self.pool, seq)
            && let Some(panic) = self.absorb(retired)
        {
            panic::resume_unwind(panic);
        }
    }

    /// Applies pending commands in launch order, then queued destructions.
    fn apply_deferred(&mut self) {
        debug_assert!(self.inflight.is_empty());
        let mut pending = core::mem::take(&mut self.pending);
        pending.sort_by_key(|(seq, _)| *seq);
        let world = self.world.get_mut();
        let (mut applied, mut stale) = (0, 0);
        for (_, buffers) in &mut pending {
            for buffer in buffers.iter_mut() {
                let report = buffer.apply(world);
                applied += report.applied;
                stale += report.skipped_stale + report.skipped_missing;
            }
        }
        self.profiler.record_commands(applied, stale);
        let (mut destroyed, mut stale) = (0, 0);
        for entity in self.destroy_queue.drain(..) {
            match world.despawn(entity) {
                Ok(()) => destroyed += 1,
                Err(NoSuchEntity) => stale += 1,
            }
        }
        self.profiler.record_destroyed(destroyed, stale);
    }

    // ---- systems and phases -------------------------------------------------------------------

    /// Registers `system` to run in `phase`, after the systems already registered there.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_query::{Phase, Registry};
    ///
    /// struct Log(Vec<&'static str>);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.insert_resource(Log(Vec::new()));
    /// registry.add_system(Phase::PostUpdate, |r: &mut Registry, _: f32| {
    ///     r.resource_mut::<Log>().unwrap().0.push("post")
    /// });
    /// registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
    ///     r.resource_mut::<Log>().unwrap().0.push("update a")
    /// });
    /// registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
    ///     r.resource_mut::<Log>().unwrap().0.push("update b")
    /// });
    /// registry.update(0.016);
    /// assert_eq!(registry.resource::<Log>().unwrap().0, ["update a", "update b", "post"]);
    /// ```
    pub fn add_system<S: System>(&mut self, phase: Phase, system: S) {
        self.systems[phase.index()].push(Box::new(system));
    }

    /// Number of systems registered for `phase`.
    pub fn system_count(&self, phase: Phase) -> usize {
        let running = if self.phase == Some(phase) {
            self.running_systems
        } else {
            0
        };
        self.systems[phase.index()].len() + running
    }

    /// The phase currently running, if inside [`update`](Registry::update).
    pub fn current_phase(&self) -> Option<Phase> {
        self.phase
    }

    /// Runs one tick: for each phase (PreUpdate, Update, PostUpdate), its systems in registration
    /// order, then a sync point (wait for all tasks, apply commands, destroy queued entities).
    ///
    /// # Panics
    ///
    /// - If called from a system during an update (updates do not nest), or from a callback.
    /// - Re-raises a system's panic, or the first callback panic of a phase, after that phase's
    ///   sync point ran; later phases of the tick do not run. The registry stays usable.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_query::{Phase, Registry};
    ///
    /// struct Age(u32);
    ///
    /// let mut registry = Registry::with_workers(2);
    /// let e = registry.spawn((Age(0),));
    /// registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
    ///     r.query::<&mut Age>().each_async(|_, a| a.0 += 1);
    /// });
    /// for _ in 0..3 {
    ///     registry.update(1.0);
    /// }
    /// assert_eq!(registry.get::<Age>(e).unwrap().0, 3);
    /// ```
    pub fn update(&mut self, dt: f32) {
        self.guard("Registry::update");
        assert!(
            !self.in_update,
            "freyr: Registry::update called from a system while an update is running; \
             updates do not nest (use execute_tasks for a sync point inside a system)"
        );
        self.in_update = true;
        let result = panic::catch_unwind(AssertUnwindSafe(|| self.run_phases(dt)));
        self.in_update = false;
        self.phase = None;
        if let Err(panic) = result {
            panic::resume_unwind(panic);
        }
    }

    fn run_phases(&mut self, dt: f32) {
        for phase in Phase::ALL {
            let start = Instant::now();
            self.phase = Some(phase);
            let mut systems = core::mem::take(&mut self.systems[phase.index()]);
            self.running_systems = systems.len();
            let ran = panic::catch_unwind(AssertUnwindSafe(|| {
                for system in systems.iter_mut() {
                    system.update(self, dt);
                }
            }));
            self.running_systems = 0;
            // Systems added while the phase ran go after the existing ones.
            let added = core::mem::replace(&mut self.systems[phase.index()], systems);
            self.systems[phase.index()].extend(added);
            let sync_start = Instant::now();
            let task_panic = self.sync_point();
            let sync = sync_start.elapsed();
            self.profiler.record_phase(phase, start.elapsed(), sync);
            match (ran, task_panic) {
                (Err(system_panic), _) => panic::resume_unwind(system_panic),
                (Ok(()), Some(task_panic)) => panic::resume_unwind(task_panic),
                (Ok(()), None) => {}
            }
        }
    }

    // ---- profiling and hashing ----------------------------------------------------------------

    /// A snapshot of the profiler (since creation or the last
    /// [`reset_profile`](Registry::reset_profile)).
    pub fn profile(&self) -> ProfileReport {
        self.profiler.report(&self.pool.metrics())
    }

    /// Clears the profiler's counters.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr_query::Registry::with_workers(1);
    /// registry.execute_tasks();
    /// assert_eq!(registry.profile().sync_points, 1);
    /// registry.reset_profile();
    /// assert_eq!(registry.profile().sync_points, 0);
    /// ```
    pub fn reset_profile(&mut self) {
        self.profiler = Profiler::new(self.pool.metrics());
    }

    /// Number of implicit sync points so far (operations that waited for conflicting work).
    pub fn implicit_syncs(&self) -> u64 {
        self.profiler.implicit_syncs()
    }

    /// A hash of the whole world: every live entity in id order with the presence and value of
    /// each component type in `C` (a tuple of [`StableHash`](crate::StableHash) components).
    /// Independent of storage layout, worker count and run; equal worlds hash equal. Waits for
    /// in-flight work that writes a hashed type.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_query::{Registry, StableHash, StableHasher};
    ///
    /// struct Pos(f32);
    /// impl StableHash for Pos {
    ///     fn stable_hash(&self, h: &mut StableHasher) {
    ///         self.0.stable_hash(h);
    ///     }
    /// }
    ///
    /// let build = |x| {
    ///     let mut registry = Registry::with_workers(1);
    ///     registry.spawn((Pos(x),));
    ///     registry.world_hash::<(Pos,)>()
    /// };
    /// assert_eq!(build(1.0), build(1.0));
    /// assert_ne!(build(1.0), build(2.0));
    /// ```
    pub fn world_hash<C: HashComponents>(&self) -> u64 {
        self.guard("Registry::world_hash");
        let world = self.world.get();
        if !self.inflight.is_empty() {
            let mut access = Access::new();
            C::access(world, &mut access);
            self.wait_for(OpAccess::Components(&access));
        }
        hash_world::<C>(world)
    }
}

#[cold]
#[inline(never)]
fn guard_failed(what: &str) -> ! {
    panic!(
        "freyr: {what} called from inside a query callback of the same registry \
         (golden rule 3: callbacks must not drive the registry; record commands instead)"
    )
}

impl Drop for Registry {
    fn drop(&mut self) {
        if inside_callback_of(self.id) {
            // The last owner dropped the registry from inside one of its own tasks: waiting would
            // wait for ourselves, and freeing would free memory under the running tasks.
            eprintln!(
                "freyr: a Registry was dropped from inside one of its own callbacks; aborting"
            );
            std::process::abort();
        }
        // Wait for every task before any field (the world, the job memory) is freed. Panics are
        // dropped: re-raising in Drop could abort during unwinding.
        for retired in self.inflight.retire_all(&self.pool) {
            let payload = retired.panic;
            let _ = panic::catch_unwind(AssertUnwindSafe(move || drop(payload)));
        }
    }
}
