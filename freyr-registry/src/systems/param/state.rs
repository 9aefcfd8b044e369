//! The other parameters: resources, commands and events, local state and the tick.

use super::*;

// ---- resources -----------------------------------------------------------------------------

/// A function system's shared borrow of resource `T` (bevy's `Res<T>`); a missing resource
/// panics before the system runs, naming it. A system that runs with or without the resource
/// takes `Option<Res<T>>` (and `Option<ResMut<T>>`): `None` while it is missing, with the same
/// access declared. Not the same type as the view marker [`freyr::Res`](crate::Res) of
/// `Query::views`.
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

    const PREPARES: bool = true;

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

impl<T: Send + Sync + 'static> sealed::Sealed for Option<Res<'_, T>> {}

/// `Option<Res<T>>`: the resource if it is in the registry when the system's segment starts.
///
/// # Examples
///
/// ```
/// use freyr::{Phase, Registry};
/// use freyr::system::{Res, ResMut};
///
/// struct Bonus(u32);
/// struct Total(u32);
///
/// let mut registry = Registry::with_workers(2);
/// registry.insert_resource(Total(0));
/// registry
///     .add_fn_system(Phase::Update, "add", |bonus: Option<Res<Bonus>>, mut t: ResMut<Total>| {
///         t.0 += 1 + bonus.map_or(0, |b| b.0);
///     })
///     .unwrap();
/// registry.update(0.0);
/// registry.insert_resource(Bonus(10));
/// registry.update(0.0);
/// assert_eq!(registry.resource::<Total>().unwrap().0, 12);
/// ```
impl<T: Send + Sync + 'static> SystemParam for Option<Res<'_, T>> {
    type State = SendPtr<T>;
    type Item<'w> = Option<Res<'w, T>>;

    fn init(access: &mut SystemAccess) -> Self::State {
        <Res<'_, T> as SystemParam>::init(access)
    }

    const PREPARES: bool = true;

    fn prepare(state: &mut Self::State, ctx: &mut Prepare<'_>) {
        state.0 = ctx.try_resource::<T>();
    }

    unsafe fn fetch<'w>(state: &'w mut Self::State, _: &'w SystemContext<'w>) -> Self::Item<'w> {
        state.0.map(|ptr| Res {
            // SAFETY: as for `Res`.
            value: unsafe { ptr.as_ref() },
        })
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

    const PREPARES: bool = true;

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

impl<T: Send + Sync + 'static> sealed::Sealed for Option<ResMut<'_, T>> {}

/// `Option<ResMut<T>>`: the resource if it is in the registry when the system's segment
/// starts; see `Option<Res<T>>`.
impl<T: Send + Sync + 'static> SystemParam for Option<ResMut<'_, T>> {
    type State = SendPtr<T>;
    type Item<'w> = Option<ResMut<'w, T>>;

    fn init(access: &mut SystemAccess) -> Self::State {
        <ResMut<'_, T> as SystemParam>::init(access)
    }

    const PREPARES: bool = true;

    fn prepare(state: &mut Self::State, ctx: &mut Prepare<'_>) {
        state.0 = ctx.try_resource::<T>();
    }

    unsafe fn fetch<'w>(state: &'w mut Self::State, _: &'w SystemContext<'w>) -> Self::Item<'w> {
        state.0.map(|mut ptr| ResMut {
            // SAFETY: as for `ResMut`.
            value: unsafe { ptr.as_mut() },
        })
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

    const PREPARES: bool = false;

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

    const PREPARES: bool = false;

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

    const PREPARES: bool = true;

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

    fn save_state(state: &Self::State, out: &mut Vec<u64>) {
        out.push(state.0.position());
    }

    fn load_state<'a>(state: &mut Self::State, words: &'a [u64]) -> &'a [u64] {
        let (&position, rest) = words
            .split_first()
            .expect("freyr: a snapshot holds a cursor for each event reader");
        state.0 = EventCursor::at(position);
        rest
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

    const PREPARES: bool = false;

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

    const PREPARES: bool = false;

    fn prepare(_: &mut (), _: &mut Prepare<'_>) {}

    unsafe fn fetch<'w>(_: &'w mut (), ctx: &'w SystemContext<'w>) -> Tick {
        Tick {
            tick: ctx.tick,
            dt: ctx.dt,
            last_run: ctx.last_run,
        }
    }
}
