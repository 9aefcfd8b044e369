//! Structural changes recorded from callbacks: [`Commands`], and the [`EachContext`] that carries them
//! together with a callback's read-only views.
//!
//! # Ordering
//!
//! Every query call that can record commands gets a launch number when it starts. An
//! `each_async` call records into one buffer per chunk; a synchronous `each_with` call into one
//! buffer. At the next sync point the buffers are applied in (launch number, chunk index) order,
//! and each buffer in record order — which, because a chunk's rows run in order on one thread, is
//! (row, record order). Worker count and completion order play no part, so the resulting world,
//! spawned entity ids included, is the same for every worker count.
//!
//! # Panics in callbacks
//!
//! If a callback panics, the buffer of the task it was processing (its chunk, or its piece of one
//! with `Query::rows_per_task`) is cleared: its commands (and
//! the events it sent, see [`EachContext::send`]) are discarded, never half-applied. The other tasks' commands are still applied at the sync point,
//! and then the panic is re-raised there.
//!
//! # Stale entities
//!
//! A command naming an entity that no longer exists when it is applied (despawned by an earlier
//! command, or never valid) is skipped and counted in
//! `ProfileReport::stale_commands`; it never touches the
//! slot's new occupant.

use freyr_core::{Bundle, CommandBuffer, Entity};

use crate::events::buffer::{EventBuffer, TaskOutput};

use crate::view::ViewSet;

/// Records spawns, despawns, inserts and removes from inside a callback; they apply at the next
/// sync point in (launch, chunk, row, record) order, whatever the worker count.
///
/// # Examples
///
/// ```
/// use freyr::Registry;
///
/// struct Egg(u32);
/// struct Chick(u32);
///
/// let mut registry = Registry::with_workers(4);
/// for i in 0..3 {
///     registry.spawn((Egg(i),));
/// }
/// registry.query::<&Egg>().each_async_with(|entity, egg, ctx| {
///     let cmds = ctx.commands();
///     cmds.despawn(entity);
///     cmds.spawn((Chick(egg.0),));
/// });
/// registry.execute_tasks();
/// assert_eq!(registry.query::<&Egg>().count(), 0);
/// assert_eq!(registry.query::<&Chick>().count(), 3);
/// ```
pub struct Commands<'a> {
    buffer: &'a mut CommandBuffer,
}

impl<'a> Commands<'a> {
    pub fn new(buffer: &'a mut CommandBuffer) -> Self {
        Commands { buffer }
    }

    /// Records a spawn. The returned handle is a pending handle: later commands recorded through
    /// this same `Commands` (the same chunk of the same launch) may use it; the real entity id is
    /// assigned when the buffer is applied.
    ///
    /// # Panics
    ///
    /// As [`CommandBuffer::spawn`]: if the bundle names a component type twice, or this
    /// chunk's buffer already holds `u32::MAX` spawns. When the commands are applied, a spawn
    /// that would pass one of the world's [capacity limits](freyr_core::World#capacity-limits)
    /// panics at the sync point instead. If the bundle names
    /// [`ChildOf`](freyr_core::ChildOf) or [`Children`](freyr_core::Children), which the
    /// registry keeps ([`freyr_core::is_kept`]), before anything is recorded: the hierarchy
    /// commands (`HierarchyCommands`) change them.
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        freyr_core::refuse_kept::<B>("Commands::spawn");
        self.buffer.spawn(bundle)
    }

    /// Records a despawn of `entity`, applied at the next sync point. Outside a callback,
    /// `Registry::despawn` despawns now and
    /// `Registry::destroy_entity` queues for the sync point.
    pub fn despawn(&mut self, entity: Entity) {
        self.buffer.despawn(entity);
    }

    /// Records inserting `bundle` into `entity` (overwriting components it already has).
    ///
    /// # Panics
    ///
    /// If the bundle names [`ChildOf`](freyr_core::ChildOf) or
    /// [`Children`](freyr_core::Children), before anything is recorded (as
    /// [`spawn`](Self::spawn)).
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        freyr_core::refuse_kept::<B>("Commands::insert");
        self.buffer.insert(entity, bundle);
    }

    /// Records removing the components of `B` from `entity`.
    ///
    /// # Panics
    ///
    /// If `B` names [`ChildOf`](freyr_core::ChildOf) or [`Children`](freyr_core::Children),
    /// before anything is recorded (as [`spawn`](Self::spawn)).
    pub fn remove<B: Bundle>(&mut self, entity: Entity) {
        freyr_core::refuse_kept::<B>("Commands::remove");
        self.buffer.remove::<B>(entity);
    }

    /// Records running `op` on `a` and `b` at the next sync point, in order with the other
    /// commands (see [`EntityOp`](freyr_core::EntityOp) for its contract). The registry's
    /// hierarchy commands (`set_parent`, `remove_parent`, `spawn_child` on this type, from
    /// `freyr::hierarchy::HierarchyCommands`) are recorded this way.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::storage::{AppliedCommand, EntityOp};
    /// use freyr::{Entity, Registry, World};
    ///
    /// fn add(world: &mut World, a: Entity, b: Entity, _: &mut Vec<AppliedCommand>) -> bool {
    ///     let x = *world.get::<u32>(a).unwrap();
    ///     *world.get_mut::<u32>(b).unwrap() += x;
    ///     true
    /// }
    /// static ADD: EntityOp = EntityOp { name: "add", run: add };
    ///
    /// let mut registry = Registry::with_workers(2);
    /// let total = registry.spawn((0u32,));
    /// for i in 1..=4u32 {
    ///     registry.spawn((i, "part"));
    /// }
    /// registry.query::<(&u32, &&str)>().each_with(|e, _, ctx| ctx.commands().op(&ADD, e, total));
    /// registry.execute_tasks();
    /// assert_eq!(registry.get::<u32>(total), Ok(&10));
    /// ```
    pub fn op(&mut self, op: &'static freyr_core::EntityOp, a: Entity, b: Entity) {
        self.buffer.op(op, a, b);
    }

    /// Number of commands recorded in this buffer so far.
    pub fn len(&self) -> usize {
        self.buffer.len()
    }

    /// Whether nothing was recorded in this buffer so far.
    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }
}

/// What a `*_with` callback gets besides its entity and items: the query's read-only views and a
/// [`Commands`] handle.
///
/// # Examples
///
/// ```
/// use freyr::{Registry, Res};
///
/// struct Speed(f32);
/// struct Pos(f32);
///
/// let mut registry = Registry::with_workers(1);
/// registry.insert_resource(Speed(2.0));
/// let e = registry.spawn((Pos(1.0),));
/// registry
///     .query::<&mut Pos>()
///     .views::<(Res<Speed>,)>()
///     .each_with(|_, pos, ctx| {
///         let (speed,) = ctx.views();
///         pos.0 *= speed.0;
///     });
/// assert_eq!(registry.get::<Pos>(e).unwrap().0, 2.0);
/// ```
#[doc(alias = "Context")]
pub struct EachContext<'a, V: ViewSet = ()> {
    views: V::Item<'a>,
    commands: Commands<'a>,
    events: &'a mut EventBuffer,
}

impl<'a, V: ViewSet> EachContext<'a, V> {
    pub fn new(views: V::Item<'a>, output: &'a mut TaskOutput) -> Self {
        EachContext {
            views,
            commands: Commands::new(&mut output.commands),
            events: &mut output.events,
        }
    }

    /// The views named by `Query::views`, as a tuple.
    #[inline]
    pub fn views(&self) -> V::Item<'a> {
        self.views
    }

    /// The commands handle of this chunk (async) or this call (sync).
    #[inline]
    pub fn commands(&mut self) -> &mut Commands<'a> {
        &mut self.commands
    }

    /// Sends `event` through this task's buffer: it is stored at the next sync point in
    /// (launch, chunk, row, send) order, the order commands apply in, whatever the worker count,
    /// and read with `Registry::read_events`. If the task
    /// panics, its events are discarded with its commands. See [`Events`](crate::Events).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{EventCursor, Registry};
    ///
    /// #[derive(Clone)]
    /// struct Crossed(u32);
    /// struct Pos(u32);
    ///
    /// let mut registry = Registry::with_workers(4);
    /// for i in 0..100 {
    ///     registry.spawn((Pos(i),));
    /// }
    /// registry.query::<&Pos>().each_async_with(|_, pos, ctx| {
    ///     if pos.0 % 10 == 0 {
    ///         ctx.send(Crossed(pos.0));
    ///     }
    /// });
    /// registry.execute_tasks();
    /// let mut cursor = EventCursor::default();
    /// let seen: Vec<u32> = registry.read_events::<Crossed>(&mut cursor).map(|c| c.0).collect();
    /// assert_eq!(seen, [0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    /// ```
    #[inline]
    pub fn send<E: Clone + Send + Sync + 'static>(&mut self, event: E) {
        self.events.send(event);
    }
}
