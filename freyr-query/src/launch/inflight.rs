//! The registry's list of in-flight launches, and the rule deciding who waits for whom.
//!
//! # The soundness model
//!
//! A launch is registered here *before* its tasks are submitted and removed ("retired") only after
//! its task group completed. Raw chunk column pointers, and the archetype pointers `each_async`
//! tasks resolve them from on their worker, reach tasks only through a registered launch's job;
//! since every `&mut World` waits for all in-flight launches (the last row below), the world
//! those pointers lead into is alive and structurally unchanged while any task runs. Every
//! registry operation that touches the world first asks this list, through the registry's
//! wait-before-access API (`registry/world.rs`, which states the whole argument):
//!
//! | operation                                   | waits for in-flight launches that …        |
//! |---------------------------------------------|--------------------------------------------|
//! | query (`each`, `each_async`, …)             | write what it reads, or access what it writes, in an archetype both match (component views match every archetype) |
//! | `get_mut::<T>(e)`                           | read or write `T`, in `e`'s archetype      |
//! | `get::<T>(e)`                               | write `T`, in `e`'s archetype              |
//! | `world_hash`                                | write the hashed types                     |
//! | `world()`                                   | write anything                             |
//! | layout only (`contains`, `len`, `count`, a `get` that finds nothing) | (none)            |
//! | replace / remove / mutably borrow resource `R` | read `R`                                |
//! | spawn, despawn, insert, remove, `world_mut`, applying commands | (all of them)           |
//!
//! A query's access is confined to the archetypes it matched when it ran (or launched): rows of
//! different archetypes live in different chunks, and no entity changes archetype and no
//! archetype appears while a launch is in flight (that takes `&mut World`, the last row), so
//! two queries on disjoint archetypes never touch the same value, whatever their types.
//!
//! Waiting for a launch that was not waited for before is an *implicit sync point*; the profiler
//! counts them. Disjoint work never waits. A launch's panic, caught when it is waited for, is kept
//! with the launch and re-raised by the next explicit sync point (or `Reduction::join`).

use core::any::{Any, TypeId};
use core::cell::Cell;
use core::ptr::NonNull;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use freyr_core::{ArchetypeId, ComponentId};
use freyr_sched::{ThreadPool, keep_first};

use crate::access::Access;
use crate::launch::job::ErasedJob;
use freyr_profile::profiler::Profiler;

/// What a registry operation is about to do, for the conflict check.
pub enum OpAccess<'a> {
    /// Reads and writes the components in the access set.
    Components(&'a Access),
    /// Reads one component type, of an entity in the given archetype.
    ReadOne(ComponentId, ArchetypeId),
    /// Writes one component type, of an entity in the given archetype.
    WriteOne(ComponentId, ArchetypeId),
    /// Reads the whole world through `&World`.
    WorldRead,
    /// Writes (replaces, removes, mutably borrows) the resource with this type id.
    ResourceWrite(TypeId),
    /// Needs the world exclusively.
    Exclusive,
    /// Reads only the layout (which entities exist and where, archetypes, component ids), which
    /// in-flight work never changes, and no component value.
    Layout,
}

impl OpAccess<'_> {
    fn conflicts_with(&self, launch: &Access) -> bool {
        match self {
            OpAccess::Components(access) => access.conflicts_with(launch),
            OpAccess::ReadOne(id, archetype) => {
                launch.writes().contains(*id) && launch.may_touch(*archetype)
            }
            OpAccess::WriteOne(id, archetype) => {
                (launch.writes().contains(*id) || launch.reads().contains(*id))
                    && launch.may_touch(*archetype)
            }
            OpAccess::WorldRead => launch.writes_anything(),
            OpAccess::ResourceWrite(id) => launch.reads_resource(*id),
            OpAccess::Exclusive => true,
            OpAccess::Layout => false,
        }
    }
}

/// One registered launch.
pub(crate) struct Launch {
    pub(crate) seq: u64,
    access: Arc<Access>,
    /// Owned `Box<dyn ErasedJob>`, held as a raw pointer so that moving the registry never
    /// asserts uniqueness over memory the tasks are reading.
    job: NonNull<dyn ErasedJob>,
    pub(crate) tasks: usize,
    pub(crate) label: Option<&'static str>,
    /// Whether the group was waited for (the tasks are finished).
    waited: Cell<bool>,
    /// The first panic of the launch's tasks, caught when waited for, until re-raised.
    panic: Cell<Option<Box<dyn Any + Send>>>,
}

// SAFETY: the job is `Send` (`ErasedJob: Send`); the cells are only touched by the thread that
// owns the registry (the registry is not `Sync`).
unsafe impl Send for Launch {}

impl Launch {
    /// Registers a job.
    ///
    /// # Safety
    ///
    /// `job` must come from `Box::leak` (ownership passes to the launch, which frees it in
    /// `retire` or on drop after its group completed).
    pub(crate) unsafe fn new(
        seq: u64,
        access: Arc<Access>,
        job: NonNull<dyn ErasedJob>,
        tasks: usize,
        label: Option<&'static str>,
    ) -> Self {
        Launch {
            seq,
            access,
            job,
            tasks,
            label,
            waited: Cell::new(false),
            panic: Cell::new(None),
        }
    }

    fn job(&self) -> &dyn ErasedJob {
        // SAFETY: `job` came from `Box::leak` and is only freed in `retire`, which consumes the
        // launch; until then shared access is what tasks have too.
        unsafe { self.job.as_ref() }
    }

    /// Waits for the launch's tasks (helping the pool), keeping the first panic.
    fn wait(&self, pool: &ThreadPool) {
        if self.waited.get() {
            return;
        }
        if let Err(panic) = self.job().group().try_wait(pool) {
            self.panic.set(Some(panic.into_payload()));
        }
        self.waited.set(true);
    }

    /// Waits, then frees the job. Returns its command buffers (chunk order), its wall time and
    /// the kept panic.
    fn retire(self, pool: &ThreadPool) -> Retired {
        self.wait(pool);
        // Only labelled launches are timed (their job stamps the wall time), and only their wall
        // time is booked, so unlabelled launches read no clock at all.
        let wall = self.job().wall().unwrap_or_default();
        // SAFETY: the group completed (waited above), so no task references the job any more;
        // `job` came from `Box::leak` and is reclaimed exactly once because `self` is consumed.
        let mut job = unsafe { Box::from_raw(self.job.as_ptr()) };
        let trace = job.take_trace();
        let mut panic = self.panic.take();
        // User code runs here (a reduction's `combine`, the callbacks' captures dropping): a
        // panic is kept like a task's, after it, so the sync point still does all its work.
        let commands = match std::panic::catch_unwind(AssertUnwindSafe(|| job.finish())) {
            Ok(commands) => commands,
            Err(payload) => {
                keep_first(&mut panic, payload);
                Vec::new()
            }
        };
        Retired {
            seq: self.seq,
            commands,
            wall,
            tasks: self.tasks,
            label: self.label,
            panic,
            trace,
        }
    }
}

/// What a retired launch leaves behind.
pub struct Retired {
    pub seq: u64,
    /// The tasks' commands and events, in task order.
    pub commands: Vec<crate::events::buffer::TaskOutput>,
    pub wall: Duration,
    pub tasks: usize,
    pub label: Option<&'static str>,
    pub panic: Option<Box<dyn Any + Send>>,
    /// The batch stamps of a traced launch (empty otherwise).
    pub trace: Vec<freyr_profile::tick::trace::TaskSpan>,
}

/// The in-flight launches, in launch order.
#[derive(Default)]
pub(crate) struct InFlight {
    launches: Vec<Launch>,
}

impl InFlight {
    pub(crate) fn push(&mut self, launch: Launch) {
        self.launches.push(launch);
    }

    pub(crate) fn len(&self) -> usize {
        self.launches.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.launches.is_empty()
    }

    /// Waits for every launch that conflicts with `op` (an implicit sync point when any of them
    /// had not been waited for yet). Disjoint launches keep running.
    pub(crate) fn wait_conflicting(
        &self,
        pool: &ThreadPool,
        op: &OpAccess<'_>,
        profiler: &Profiler,
    ) {
        let mut start = None;
        #[cfg(feature = "tracing")]
        let mut span = None;
        for launch in &self.launches {
            if !launch.waited.get() && op.conflicts_with(&launch.access) {
                start.get_or_insert_with(Instant::now);
                #[cfg(feature = "tracing")]
                span.get_or_insert_with(|| freyr_profile::spans::implicit_sync().entered());
                launch.wait(pool);
            }
        }
        if let Some(start) = start {
            profiler.record_implicit_sync(start.elapsed());
        }
    }

    /// Retires every launch in launch order.
    pub(crate) fn retire_all(&mut self, pool: &ThreadPool) -> Vec<Retired> {
        if self.launches.is_empty() {
            return Vec::new();
        }
        // Wait for all first, so a slow early launch does not delay helping with later ones.
        for launch in &self.launches {
            launch.wait(pool);
        }
        self.launches.drain(..).map(|l| l.retire(pool)).collect()
    }

    /// Retires the launch numbered `seq`, if it is still in flight.
    pub(crate) fn retire_one(&mut self, pool: &ThreadPool, seq: u64) -> Option<Retired> {
        let index = self.launches.iter().position(|l| l.seq == seq)?;
        Some(self.launches.remove(index).retire(pool))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        // The registry retires everything (waiting with the pool) before its fields drop; this is
        // the backstop if that path was cut short. It must not free a job under a running task,
        // so it spins until each group reports completion (the pool field drops after this one,
        // so its workers are still there to finish the tasks).
        for launch in self.launches.drain(..) {
            while !launch.job().group().is_done() {
                std::thread::yield_now();
            }
            // SAFETY: the group completed, so no task references the job; it came from
            // `Box::leak` and `launch` is consumed here, so it is reclaimed exactly once.
            drop(unsafe { Box::from_raw(launch.job.as_ptr()) });
        }
    }
}
