//! [`SyncedWorld`]: the world, the resources and the in-flight launches behind one API that
//! hands out access only together with the wait it needs.
//!
//! # The soundness argument
//!
//! `each_async` tasks run on pool threads while the registry goes on with other work. They hold
//! raw pointers into the world (archetypes, chunk columns, the world itself for `View<T>`
//! views) and into the resources (`Res<T>` views). The one rule that keeps this free of data
//! races and use-after-free:
//!
//! > **No reference to the world, a column or a resource is taken before waiting for the
//! > in-flight launches that conflict with it.**
//!
//! This file is where that rule is kept; nothing outside it can reach the world or the
//! resources another way, because the fields below are private:
//!
//! 1. A launch is registered in `inflight` (by [`SyncedWorld::launch`]) *before* its tasks are
//!    submitted, with the access set it was checked with, and leaves it only when its task
//!    group has completed (`retire_*`). Its pointers were taken from a `&World` returned by
//!    [`read`](SyncedWorld::read) for that same access set.
//! 2. `&World` is only returned by [`read`](SyncedWorld::read), after waiting for every
//!    in-flight launch whose access conflicts with the caller's declared [`OpAccess`] (the
//!    table in [`inflight`](crate::launch::inflight) says which). The caller then touches only
//!    what it declared.
//! 3. `&mut World` is only returned by [`write`](SyncedWorld::write), after waiting for *every*
//!    in-flight launch: so no task runs while the world is structurally changed (or replaced,
//!    swapped or taken; the caches built from it check its [`WorldId`](freyr_core::WorldId)),
//!    and every archetype and column pointer a task holds stays valid while it runs.
//! 4. A resource is replaced, removed or mutably borrowed only after waiting for the launches
//!    that read it ([`resource_mut`](SyncedWorld::resource_mut) and friends); launches never
//!    write resources, so shared borrows never wait.
//! 5. Layout questions that in-flight work cannot change — which entities exist and where,
//!    which archetypes exist, component ids — are answered without waiting
//!    ([`component_id`](SyncedWorld::component_id), [`refresh`](SyncedWorld::refresh), …):
//!    tasks never change the layout (only `&mut World` does, point 3), and these answers read
//!    no component value. The `&World` used for them is only passed to the id-resolving and
//!    archetype-matching methods of the `unsafe` traits [`QueryData`] and [`ViewSet`] and the
//!    sealed `HashComponents` (freyr-persist, through
//!    [`resolve_access`](SyncedWorld::resolve_access)), whose contracts forbid reading component
//!    values.
//! 6. The registry retires every launch before the world is dropped (its `Drop`), and
//!    `InFlight`'s own `Drop` is the backstop that never frees a job under a running task.
//! 7. The world's layout (which archetypes, chunks and slabs exist, and how many rows each
//!    holds) changes only through `&mut World` — `World` has no interior mutability — and so
//!    only through [`write`](SyncedWorld::write), which bumps `epoch` each time. A
//!    [`LayoutStamp`] (world id, epoch) is made only here, next to the `&World` it describes
//!    ([`read_with_layout`](SyncedWorld::read_with_layout)): while the stamp is current, every
//!    column and entity pointer read from that world's chunks still points at the same rows,
//!    so a query may keep them between runs ([`QueryState`]'s run cache) and skip re-reading them.

use core::any::TypeId;
use core::ptr::NonNull;
use std::sync::Arc;

use freyr_core::{ArchetypeId, Component, ComponentId, Entity, World};
use freyr_sched::ThreadPool;

use crate::access::Access;
use crate::changed::TickTerm;
use crate::error::QueryError;
use crate::fetch::QueryData;
use crate::filter::QueryFilter;
use crate::launch::inflight::{InFlight, OpAccess, Retired};
use crate::launch::job::Kernel;
use crate::launch::spans::Spans;
use crate::launch::{self, LaunchCtx};
use crate::resources::Resources;
use crate::state::{LayoutStamp, QueryState};
use crate::view::ViewSet;

use crate::cache::QueryCache;
use freyr_profile::profiler::Profiler;

/// The world, owned through a raw pointer: tasks holding component views share `&World` while
/// the registry value itself may be moved, and a `Box` field would assert uniqueness on every
/// move.
struct WorldBox(NonNull<World>);

// SAFETY: `WorldBox` owns its `World` like a `Box` would; `World` is `Send + Sync`.
unsafe impl Send for WorldBox {}

impl WorldBox {
    fn new(world: World) -> Self {
        WorldBox(NonNull::from(Box::leak(Box::new(world))))
    }

    #[inline]
    fn get(&self) -> &World {
        // SAFETY: the pointer is live until `Drop`; shared access is allowed alongside tasks'
        // shared access, and exclusive access goes through `get_mut(&mut self)`.
        unsafe { self.0.as_ref() }
    }

    #[inline]
    fn get_mut(&mut self) -> &mut World {
        // SAFETY: `&mut self` excludes other registry-side borrows; the only caller,
        // `SyncedWorld::write`, waited for every in-flight launch first, so no task holds a
        // reference into the world.
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

/// The world, the resources, the pool and the in-flight launches: the only way to reach the
/// first two is through a method that waits for the conflicting launches first (see the module
/// documentation for the argument).
pub struct SyncedWorld {
    // Field order is drop order: the in-flight backstop drops while the pool can still finish
    // tasks, and the pool joins its threads before the world they may point into is freed. A
    // pool shared with other registries (`Registry::with_pool`) outlives this one instead; the
    // argument does not need the join: every task that points into this world belongs to a
    // launch in `inflight`, and the registry retires (waits for) all of them before any field
    // drops.
    inflight: InFlight,
    pool: Arc<ThreadPool>,
    world: WorldBox,
    resources: Resources,
    /// How many times `&mut World` was handed out (point 7): the layout can have changed only
    /// when this did. Never decreases.
    epoch: u64,
    /// The registry's simulation tick: what grants of write access stamp (set on the world at
    /// every [`write`](SyncedWorld::write)).
    change_tick: u64,
}

impl SyncedWorld {
    /// The wait-before-access world over `world`, launching on `pool`.
    ///
    /// # Safety
    ///
    /// The owner keeps the discipline of the points above, which its methods cannot check
    /// alone: a `&World` from [`read`](SyncedWorld::read) and its siblings is used only for
    /// what the [`OpAccess`] it was asked with names, and a launch's access covers what its
    /// kernel touches. The registry is that owner; this type is public only so that it can sit
    /// in `freyr-registry`, a crate above this one.
    pub unsafe fn new(world: World, pool: Arc<ThreadPool>) -> Self {
        SyncedWorld {
            inflight: InFlight::default(),
            pool,
            world: WorldBox::new(world),
            resources: Resources::new(),
            epoch: 0,
            change_tick: 0,
        }
    }

    /// The pool. Work submitted directly (`parallel_for`, `scope`) blocks until done and never
    /// reaches the world through this type.
    pub fn pool(&self) -> &ThreadPool {
        &self.pool
    }

    /// The pool's shared handle (for another registry on the same pool).
    pub fn shared_pool(&self) -> &Arc<ThreadPool> {
        &self.pool
    }

    /// Number of launches not yet retired.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// Waits for the in-flight launches that conflict with `op` (an implicit sync point if any
    /// had not been waited for).
    #[inline]
    fn wait(&self, op: &OpAccess<'_>, profiler: &Profiler) {
        if !self.inflight.is_empty() {
            self.inflight.wait_conflicting(&self.pool, op, profiler);
        }
    }

    // ---- the three doors: read, write, launch (points 1-3) -----------------------------------

    /// The world, for an operation that touches exactly what `op` declares, after waiting for
    /// every in-flight launch that conflicts with `op`.
    #[inline]
    pub fn read(&self, op: &OpAccess<'_>, profiler: &Profiler) -> &World {
        self.wait(op, profiler);
        self.world.get()
    }

    /// The world and the resources, as [`read`](SyncedWorld::read); `op` covers the resources
    /// the caller reads too.
    #[inline]
    pub fn read_with_resources(
        &self,
        op: &OpAccess<'_>,
        profiler: &Profiler,
    ) -> (&World, &Resources) {
        self.wait(op, profiler);
        (self.world.get(), &self.resources)
    }

    /// As [`read`](SyncedWorld::read), with the stamp of the world's current layout (point 7).
    #[inline]
    pub fn read_with_layout(
        &self,
        op: &OpAccess<'_>,
        profiler: &Profiler,
    ) -> (&World, LayoutStamp) {
        self.wait(op, profiler);
        let world = self.world.get();
        let stamp = LayoutStamp::new(world.id(), self.epoch);
        (world, stamp)
    }

    /// The world, exclusively, after waiting for every in-flight launch. Ends the current
    /// layout (point 7): stamps taken before no longer match.
    #[inline]
    pub fn write(&mut self, profiler: &Profiler) -> &mut World {
        self.wait(&OpAccess::Exclusive, profiler);
        self.epoch += 1;
        let world = self.world.get_mut();
        world.set_change_tick(self.change_tick);
        world
    }

    /// Sets the tick that grants of write access stamp from now on (the registry's tick).
    pub fn set_change_tick(&mut self, tick: u64) {
        self.change_tick = tick;
    }

    /// `entity`'s `T`, mutably, after waiting for every launch that reads or writes `T` in
    /// `entity`'s archetype. The world stays shared: tasks holding views into it stay valid.
    pub fn component_mut<T: Component>(
        &mut self,
        entity: Entity,
        profiler: &Profiler,
    ) -> Result<&mut T, freyr_core::ComponentError> {
        use freyr_core::ComponentError;
        let world = self.world.get();
        let (archetype, chunk, row) = world
            .entity_location(entity)
            .ok_or(ComponentError::NoSuchEntity(entity))?;
        let missing = ComponentError::MissingComponent {
            entity,
            component: core::any::type_name::<T>(),
        };
        let id = world.component_id::<T>().ok_or(missing)?;
        self.wait(&OpAccess::WriteOne(id, archetype), profiler);
        let archetype = world.archetype(archetype);
        let column = archetype.column_index(id).ok_or(missing)?;
        archetype.mark_changed(chunk, column, self.change_tick);
        let ptr = archetype.chunk(chunk).column_ptr(column).cast::<T>();
        // SAFETY:
        // - `(chunk, row)` is `entity`'s live location, so the row is initialised and in bounds,
        //   and the column holds `T` (`id` is `T`'s id);
        // - every in-flight launch reading or writing `T` in this entity's archetype was waited
        //   for (the others are confined to archetypes without this row, which cannot move
        //   while they run), and no new one can start while the returned borrow of `self`
        //   lives; the world is only reached through `&World` here (never `&mut World`), so
        //   tasks holding component views stay valid, and no `ChunkRef::column` slice of this
        //   column is alive (the `ChunkRef` rule);
        // - the pointer has the chunk allocation's provenance, so writing through it is allowed.
        Ok(unsafe { &mut *ptr.as_ptr().add(row) })
    }

    /// Launches `kernel` over `state`'s archetypes with `access` (which covers `Q` and `V`):
    /// waits for the conflicting launches, takes the spans and views from the world and the
    /// resources, registers the launch, then submits its tasks. Returns its number, or `None`
    /// when nothing matched (the kernel already finished).
    ///
    /// # Panics
    ///
    /// If a [`Res<T>`](crate::Res) view names a missing resource (before anything runs).
    pub fn launch<Q, F, V, K>(
        &mut self,
        state: &QueryState<Q, F>,
        access: Arc<Access>,
        (rows_per_task, ticks): (usize, (&[TickTerm], u64)),
        kernel: K,
        ctx: LaunchInfo<'_>,
    ) -> Option<u64>
    where
        Q: QueryData,
        F: QueryFilter,
        V: ViewSet,
        K: Kernel<Q, V>,
    {
        self.wait(&OpAccess::Components(&access), ctx.profiler);
        let world = self.world.get();
        let views = V::fetch(world, &self.resources).unwrap_or_else(|e| panic!("freyr: {e}"));
        // Write access is granted here, on the launching thread: the chunks the tasks will visit
        // are stamped now, in (archetype, chunk) order, whatever the worker count.
        let spans = Spans::new(world, state, rows_per_task, ticks);
        let ctx = LaunchCtx {
            registry_id: ctx.registry_id,
            pool: &self.pool,
            inflight: &mut self.inflight,
            profiler: ctx.profiler,
            next_seq: ctx.next_seq,
            label: ctx.label,
            trace: ctx.trace,
        };
        // SAFETY: `spans` and `views` come from the boxed world and the current resources, after
        // waiting for every in-flight launch that conflicts with `access`, which covers `Q` and
        // `V`; `launch` registers the launch in `self.inflight`, so every later `write` and every
        // conflicting `read` waits for it, and so does `retire_all` before the world drops.
        unsafe { launch::launch::<Q, V, K>(ctx, access, spans, views, kernel) }
    }

    // ---- retiring ----------------------------------------------------------------------------

    /// Waits for and retires every launch, in launch order.
    pub fn retire_all(&mut self) -> Vec<Retired> {
        self.inflight.retire_all(&self.pool)
    }

    /// Waits for and retires launch `seq`, if it is still in flight.
    pub fn retire_one(&mut self, seq: u64) -> Option<Retired> {
        self.inflight.retire_one(&self.pool, seq)
    }

    // ---- resources (point 4) -----------------------------------------------------------------

    /// The resources, shared. Never waits: launches only read resources.
    pub fn resources(&self) -> &Resources {
        &self.resources
    }

    /// The resources, to write resource `store`, after waiting for the launches that read it.
    pub fn resources_for_write(&mut self, store: TypeId, profiler: &Profiler) -> &mut Resources {
        self.wait(&OpAccess::ResourceWrite(store), profiler);
        &mut self.resources
    }

    /// Stores a resource, after waiting for the launches that read its type.
    pub fn insert_resource<T: Send + Sync + 'static>(
        &mut self,
        value: T,
        profiler: &Profiler,
    ) -> Option<T> {
        self.wait(&OpAccess::ResourceWrite(TypeId::of::<T>()), profiler);
        self.resources.insert(value)
    }

    /// The resource `T`, mutably, after waiting for the launches that read it.
    pub fn resource_mut<T: Send + Sync + 'static>(
        &mut self,
        profiler: &Profiler,
    ) -> Option<&mut T> {
        self.wait(&OpAccess::ResourceWrite(TypeId::of::<T>()), profiler);
        self.resources.get_mut::<T>()
    }

    /// Removes the resource `T`, after waiting for the launches that read it.
    pub fn remove_resource<T: Send + Sync + 'static>(&mut self, profiler: &Profiler) -> Option<T> {
        self.wait(&OpAccess::ResourceWrite(TypeId::of::<T>()), profiler);
        self.resources.remove::<T>()
    }

    /// The world and the resources, both exclusively, after waiting for every in-flight
    /// launch (for restoring a snapshot, which replaces both). Ends the current layout.
    pub fn write_all(&mut self, profiler: &Profiler) -> (&mut World, &mut Resources) {
        self.wait(&OpAccess::Exclusive, profiler);
        self.epoch += 1;
        (self.world.get_mut(), &mut self.resources)
    }

    // ---- the layout, which in-flight work never changes (point 5) ----------------------------

    /// `T`'s component id, if registered.
    pub fn component_id<T: Component>(&self) -> Option<ComponentId> {
        self.world.get().component_id::<T>()
    }

    /// Where `entity` lives, if it is alive.
    pub fn entity_location(&self, entity: Entity) -> Option<(ArchetypeId, usize, usize)> {
        self.world.get().entity_location(entity)
    }

    /// Whether `entity` is alive.
    pub fn contains(&self, entity: Entity) -> bool {
        self.world.get().contains(entity)
    }

    /// Number of live entities.
    pub fn len(&self) -> usize {
        self.world.get().len()
    }

    /// Whether no entity is alive.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of entities in archetype `id`.
    pub fn archetype_len(&self, id: ArchetypeId) -> usize {
        self.world.get().archetype(id).len()
    }

    /// The world's identity (it changes when the world is replaced, swapped or taken).
    pub fn world_id(&self) -> freyr_core::WorldId {
        self.world.get().id()
    }

    /// The cached state of `(Q, F)`, created on first use, refreshed against the current world
    /// (rebuilt if the world was replaced since).
    ///
    /// # Errors
    ///
    /// On conflicting access in `Q`.
    pub fn refresh<'c, Q: QueryData, F: QueryFilter>(
        &self,
        cache: &'c mut QueryCache,
    ) -> Result<&'c mut QueryState<Q, F>, QueryError> {
        cache.state_mut::<Q, F>(self.world.get())
    }

    /// `V`'s resolved access (component ids and resources it reads).
    pub fn view_access<V: ViewSet>(&self, access: &mut Access) {
        V::access(self.world.get(), access);
    }

    /// An access resolved against the world by `resolve` (the component ids a hash reads),
    /// without waiting for in-flight work.
    ///
    /// # Safety
    ///
    /// `resolve` reads only the world's layout (component ids, archetypes), never a component
    /// value: in-flight tasks may be writing them (point 5 above).
    pub unsafe fn resolve_access(&self, resolve: fn(&World, &mut Access), access: &mut Access) {
        resolve(self.world.get(), access);
    }
}

/// The registry's bookkeeping a launch updates.
pub struct LaunchInfo<'a> {
    pub registry_id: u64,
    pub profiler: &'a mut Profiler,
    pub next_seq: &'a mut u64,
    pub label: Option<&'static str>,
    /// The tick trace's epoch when this launch is traced (its tasks stamp their batches).
    pub trace: Option<std::time::Instant>,
}
