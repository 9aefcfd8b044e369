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

    /// The first component write of a type the registry keeps ([`freyr_core::is_kept`]).
    pub(crate) fn writes_kept(&self) -> Option<&AccessEntry> {
        self.entries.iter().find(|e| {
            e.domain == Domain::Component
                && e.kind == AccessKind::Write
                && freyr_core::is_kept_type(e.type_id)
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

/// The registry's side of `prepare`: the resources, each resource's pointer taken once per
/// segment (no launch is in flight).
#[allow(
    unnameable_types,
    reason = "reached only through `SystemParam`'s methods, which the sealed trait keeps to this crate"
)]
pub struct Prepare<'a> {
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
    /// Whether [`prepare`](Self::prepare) does anything. The updating thread calls `prepare`
    /// only for systems with a parameter that does: it need not touch the others, whose state
    /// then stays in the cache of the worker that ran them last.
    #[doc(hidden)]
    const PREPARES: bool;
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
    /// Appends what of the state the world's history decides (an event reader's cursor) to
    /// `out`, for a snapshot. Nothing by default.
    #[doc(hidden)]
    fn save_state(state: &Self::State, out: &mut Vec<u64>) {
        let _ = (state, out);
    }
    /// Reads back, from the front of `words`, what `save_state` wrote; returns the rest.
    #[doc(hidden)]
    fn load_state<'a>(state: &mut Self::State, words: &'a [u64]) -> &'a [u64] {
        let _ = state;
        words
    }
}

/// The item type of parameter `P` for one run.
pub type ParamItem<'w, P> = <P as SystemParam>::Item<'w>;

mod query;
mod state;

pub use self::query::{Query, QueryEntityError, QueryParamData};
pub use self::state::{EventReader, EventWriter, Local, Res, ResMut, Tick};

// ---- tuples --------------------------------------------------------------------------------

macro_rules! tuple_param {
    ($($P:ident $s:ident),*) => {
        impl<$($P: SystemParam),*> sealed::Sealed for ($($P,)*) {}

        #[allow(non_snake_case, unused_variables, clippy::unused_unit)]
        impl<$($P: SystemParam),*> SystemParam for ($($P,)*) {
            type State = ($($P::State,)*);
            type Item<'w> = ($($P::Item<'w>,)*);

            const PREPARES: bool = false $(|| $P::PREPARES)*;

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

            fn save_state(state: &Self::State, out: &mut Vec<u64>) {
                let ($($s,)*) = state;
                $($P::save_state($s, out);)*
            }

            fn load_state<'a>(state: &mut Self::State, words: &'a [u64]) -> &'a [u64] {
                let ($($s,)*) = state;
                $(let words = $P::load_state($s, words);)*
                words
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
