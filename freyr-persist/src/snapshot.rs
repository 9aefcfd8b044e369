//! Snapshots of a whole registry for rollback: [`Snapshot`] (the world, the tick and the
//! registered resources) and [`SnapshotError`]. The registry's methods live in
//! `freyr-registry`'s `registry/snapshot.rs`, beside its `SnapshotRing` (the last ticks'
//! snapshots, buffers reused).

use core::any::{Any, TypeId};
use core::fmt;

use freyr_core::snapshot::{MissingSnapshotTypes, ParallelFor, SnapshotTypes, WorldSnapshot};
use freyr_sched::ThreadPool;

use freyr_query::resources::{AnyResource, ResourceOps, Resources};

/// The types a registry's snapshots copy: components (through freyr-core's [`SnapshotTypes`])
/// and resources, each registered or excluded.
///
/// Internal to the Freyr workspace (`freyr-registry` takes and restores snapshots with it),
/// not a stable API.
#[doc(hidden)]
#[derive(Default)]
pub struct SnapshotRegistry {
    /// The component types copied (freyr-core's table).
    pub components: SnapshotTypes,
    /// The resource types copied.
    pub resources: Vec<ResourceOps>,
    pub(crate) excluded_resources: Vec<TypeId>,
}

impl SnapshotRegistry {
    /// Registers resource type `R` to be copied.
    pub fn register_resource<R: Clone + Send + Sync + 'static>(&mut self) {
        self.register_resource_ops(ResourceOps::of::<R>());
    }

    /// Registers a resource type by its copy functions (an event store made on first send).
    pub fn register_resource_ops(&mut self, ops: ResourceOps) {
        let (type_id, name) = (ops.type_id, ops.name);
        if self.excluded_resources.contains(&type_id) {
            panic!(
                "freyr: register_snapshot_resource::<{name}>() after \
                 exclude_resource_from_snapshot::<{name}>(): a type is either copied or \
                 excluded; remove one of the two calls"
            );
        }
        if self.resources.iter().all(|r| r.type_id != type_id) {
            self.resources.push(ops);
        }
    }

    /// Leaves resource type `R` out of snapshots; panics if it was registered.
    pub fn exclude_resource<R: Send + Sync + 'static>(&mut self) {
        let (type_id, name) = (TypeId::of::<R>(), core::any::type_name::<R>());
        if self.resources.iter().any(|r| r.type_id == type_id) {
            panic!(
                "freyr: exclude_resource_from_snapshot::<{name}>() after \
                 register_snapshot_resource::<{name}>(): a type is either copied or excluded; \
                 remove one of the two calls"
            );
        }
        if !self.excluded_resources.contains(&type_id) {
            self.excluded_resources.push(type_id);
        }
    }

    /// Whether the resource type `type_id` was excluded (a restore leaves it as it is, even
    /// when the snapshot, taken by another registry, holds a value of it).
    pub fn excludes_resource(&self, type_id: TypeId) -> bool {
        self.excluded_resources.contains(&type_id)
    }

    /// Stored resources that are neither registered nor excluded, sorted by name; allocates
    /// nothing when there are none.
    pub fn unaccounted_resources(&self, resources: &Resources) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = resources
            .types()
            .filter(|(id, _)| {
                !self.excluded_resources.contains(id)
                    && self.resources.iter().all(|r| r.type_id != *id)
            })
            .map(|(_, name)| name)
            .collect();
        names.sort_unstable();
        names
    }
}

/// One registered resource in a snapshot: its value at the snapshot, or `None` if absent.
///
/// Internal to the Freyr workspace (`freyr-registry` takes and restores snapshots with it),
/// not a stable API.
#[doc(hidden)]
pub struct ResourceImage {
    /// How the resource is copied.
    pub ops: ResourceOps,
    /// Its value at the snapshot, or `None` if it was absent.
    pub value: Option<AnyResource>,
}

/// The deadline jobs of one result type in flight at a snapshot: a
/// [`JobsInFlight<R>`](freyr_time::JobsInFlight), with what a restore checks before it looks
/// inside.
///
/// Internal to the Freyr workspace (`freyr-registry` takes and restores snapshots with it),
/// not a stable API.
#[doc(hidden)]
pub struct JobsImage {
    /// The result type's id.
    pub type_id: TypeId,
    /// The result type's name, for errors.
    pub name: &'static str,
    /// The scheduler's latency K.
    pub latency: u64,
    /// How many jobs were in flight.
    pub len: usize,
    /// A `JobsInFlight<R>` for the result type `type_id`.
    pub jobs: Box<dyn Any + Send + Sync>,
}

impl JobsImage {
    /// An image of no jobs (of the unit type), overwritten by the first capture into it.
    pub fn empty() -> JobsImage {
        JobsImage {
            type_id: TypeId::of::<()>(),
            name: "()",
            latency: 0,
            len: 0,
            jobs: Box::new(()),
        }
    }
}

/// A registry at one moment, taken by `Registry::snapshot` and
/// put back by `Registry::restore` (as often as wanted).
///
/// It holds a copy of the world (see [`WorldSnapshot`]), the [`tick`](Snapshot::tick), the
/// value (or absence) of every resource registered for snapshots, and the deadline jobs in
/// flight: for every registered result type, each job requested and not yet delivered (a
/// shared handle to it: taking a snapshot never waits for a job) and the next job id. A
/// restore delivers those jobs at their due ticks with their tickets and results, whatever
/// the registry did in between. Dropping it drops every copied value exactly once, and lets
/// go of its jobs (a job no registry holds any more is cancelled if not started, and its
/// result dropped once).
///
/// # Examples
///
/// ```
/// use freyr::Registry;
///
/// #[derive(Clone, Copy)]
/// struct Hp(u32);
///
/// let mut registry = Registry::with_workers(2);
/// registry.register_snapshot_copy::<Hp>();
/// let e = registry.spawn((Hp(10),));
/// let snapshot = registry.snapshot().unwrap();
/// assert_eq!(snapshot.tick(), 0);
/// registry.get_mut::<Hp>(e).unwrap().0 = 0;
/// registry.update(0.1);
/// registry.restore(&snapshot).unwrap();
/// assert_eq!((registry.get::<Hp>(e).unwrap().0, registry.tick()), (10, 0));
/// ```
pub struct Snapshot {
    /// The world.
    world: WorldSnapshot,
    /// The tick the snapshot was taken at.
    tick: u64,
    /// The registered resources.
    resources: Vec<ResourceImage>,
    /// The deadline jobs in flight, one image per result type registered at the snapshot.
    jobs: Vec<JobsImage>,
    /// What the function systems keep from run to run that the history decides (their
    /// previous run's tick, their event cursors), as words the registry writes and reads.
    systems: Vec<u64>,
    /// The resource types the snapshot's registry excluded: the snapshot says nothing of
    /// them, so a restore into a registry that copies one leaves its value as it is.
    excluded_resources: Vec<TypeId>,
    /// Set once the world and every resource were copied; cleared when a taking starts.
    complete: bool,
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot::new()
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("tick", &self.tick)
            .field("world", &self.world)
            .field("resources", &self.resources.len())
            .field("jobs_in_flight", &self.jobs_in_flight())
            .finish()
    }
}

impl Snapshot {
    /// An empty snapshot for `Registry::snapshot_into` to
    /// fill (restoring it is refused with [`SnapshotError::Incomplete`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let snapshot = freyr::snapshot::Snapshot::new();
    /// assert!(!snapshot.is_complete());
    /// ```
    pub fn new() -> Snapshot {
        Snapshot {
            world: WorldSnapshot::new(),
            tick: 0,
            resources: Vec::new(),
            jobs: Vec::new(),
            systems: Vec::new(),
            excluded_resources: Vec::new(),
            complete: false,
        }
    }

    /// The registry's `tick` when the snapshot was taken: the next
    /// tick to run after a restore.
    pub fn tick(&self) -> u64 {
        self.tick
    }

    /// Whether the snapshot holds a whole registry (false when new or when its taking panicked).
    pub fn is_complete(&self) -> bool {
        self.complete && self.world.is_complete()
    }

    /// The copy of the world.
    pub fn world(&self) -> &WorldSnapshot {
        &self.world
    }

    /// How many deadline jobs (of every result type) were in flight when the snapshot was
    /// taken: requested and not yet delivered. A restore delivers them.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    /// use freyr::time::deadline::Delivered;
    /// let mut registry = Registry::with_workers(2);
    /// registry.add_deadline_jobs(2, |_: &mut Registry, _: Delivered<u8>| {}).unwrap();
    /// registry.request_job((), |()| 1u8).unwrap();
    /// assert_eq!(registry.snapshot().unwrap().jobs_in_flight(), 1);
    /// ```
    pub fn jobs_in_flight(&self) -> usize {
        self.jobs.iter().map(|image| image.len).sum()
    }

    /// The images of the registered resources, in registration order. Internal to the Freyr
    /// workspace (`Registry::restore` reads them), not a stable API.
    #[doc(hidden)]
    pub fn resources(&self) -> &[ResourceImage] {
        &self.resources
    }

    /// The deadline jobs in flight, one image per result type. Internal to the Freyr workspace
    /// (`Registry::restore` reads them), not a stable API.
    #[doc(hidden)]
    pub fn jobs(&self) -> &[JobsImage] {
        &self.jobs
    }

    /// The function systems' state words (see `Registry::restore`). Internal to the Freyr
    /// workspace, not a stable API.
    #[doc(hidden)]
    pub fn systems(&self) -> &[u64] {
        &self.systems
    }

    /// The function systems' state words to fill during a taking, kept for reuse. Internal to
    /// the Freyr workspace (`Registry::snapshot_into`), not a stable API.
    #[doc(hidden)]
    pub fn systems_mut(&mut self) -> &mut Vec<u64> {
        self.complete = false;
        &mut self.systems
    }

    /// The resource types the snapshot's registry excluded. Internal to the Freyr workspace
    /// (`Registry::restore` reads them), not a stable API.
    #[doc(hidden)]
    pub fn excluded_resources(&self) -> &[TypeId] {
        &self.excluded_resources
    }

    /// Records the resource types the snapshot's registry excludes (the buffer kept for
    /// reuse). Internal to the Freyr workspace (`Registry::snapshot_into`), not a stable API.
    #[doc(hidden)]
    pub fn set_excluded_resources(&mut self, registry: &SnapshotRegistry) {
        self.complete = false;
        self.excluded_resources.clear();
        self.excluded_resources
            .extend_from_slice(&registry.excluded_resources);
    }

    /// Starts a taking: marks the snapshot incomplete until [`finish_taking`] and hands out its
    /// parts to fill, their buffers kept for reuse. Internal to the Freyr workspace
    /// (`Registry::snapshot_into`), not a stable API.
    ///
    /// [`finish_taking`]: Snapshot::finish_taking
    #[doc(hidden)]
    pub fn start_taking(
        &mut self,
    ) -> (
        &mut WorldSnapshot,
        &mut Vec<ResourceImage>,
        &mut Vec<JobsImage>,
    ) {
        self.complete = false;
        (&mut self.world, &mut self.resources, &mut self.jobs)
    }

    /// Ends a taking whose parts are all filled: the snapshot is of `tick`, and complete.
    /// Internal to the Freyr workspace (`Registry::snapshot_into`), not a stable API.
    #[doc(hidden)]
    pub fn finish_taking(&mut self, tick: u64) {
        self.tick = tick;
        self.complete = true;
    }
}

/// Why a snapshot or a restore was refused. Nothing changed.
///
/// # Examples
///
/// ```
/// use freyr::Registry;
/// use freyr::snapshot::SnapshotError;
///
/// struct Secret(u8);
///
/// let mut registry = Registry::with_workers(1);
/// registry.spawn((Secret(1),));
/// registry.insert_resource(5u64);
/// match registry.snapshot().unwrap_err() {
///     SnapshotError::MissingTypes { components, resources } => {
///         assert_eq!(components.unregistered.len(), 1);
///         assert_eq!(resources, ["u64"]);
///     }
///     other => panic!("{other}"),
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotError {
    /// Live component types or stored resources that a snapshot would not copy: every such
    /// type is named (a forgotten type must never diverge unseen).
    MissingTypes {
        /// Component types of live entities neither registered nor excluded, and excluded
        /// ones a live entity has.
        components: MissingSnapshotTypes,
        /// Stored resource types neither registered nor excluded, sorted by name.
        resources: Vec<&'static str>,
    },
    /// Work is not finished: launches that no sync point retired yet (their commands and
    /// reduction results are only known once retired), or commands and destructions recorded
    /// but not applied. A snapshot of this moment would lose them; run a sync point
    /// (`execute_tasks`) first.
    NotQuiet {
        /// Launches not yet retired.
        launches_in_flight: usize,
        /// Command buffers of retired launches not yet applied.
        pending_command_buffers: usize,
        /// Entities queued by `destroy_entity`, not yet destroyed.
        queued_destructions: usize,
    },
    /// Called inside `update` (from a system): a tick is half run.
    /// Take snapshots and restore between ticks.
    InsideUpdate,
    /// The snapshot is incomplete: new, or its taking panicked.
    Incomplete,
    /// A `SnapshotRing` holds no snapshot of this tick.
    TickNotInRing {
        /// The tick asked for.
        tick: u64,
    },
    /// The snapshot (or the save) is of a tick before one passed to
    /// `Registry::confirm_tick`: the registry promised that no restore
    /// or load goes back before it.
    BeforeConfirmed {
        /// The snapshot's (or save's) tick.
        tick: u64,
        /// The highest confirmed tick.
        confirmed: u64,
    },
    /// The snapshot holds deadline jobs in flight that this registry could not deliver as the
    /// snapshot's timeline would have.
    JobsNotRestorable {
        /// The jobs' result type.
        result_type: &'static str,
        /// How many of them are in flight in the snapshot.
        jobs: usize,
        /// Why they cannot be delivered here.
        reason: JobsRefusal,
    },
}

/// Why a registry cannot take over a snapshot's deadline jobs of one result type.
///
/// # Examples
///
/// ```
/// use freyr::Registry;
/// use freyr::snapshot::{JobsRefusal, SnapshotError};
/// use freyr::time::deadline::Delivered;
///
/// let mut a = Registry::with_workers(2);
/// a.add_deadline_jobs(2, |_: &mut Registry, _: Delivered<u8>| {}).unwrap();
/// a.request_job((), |()| 1u8).unwrap();
/// let snapshot = a.snapshot().unwrap();
/// let mut b = Registry::with_workers(2); // no deadline jobs of `u8`
/// let Err(SnapshotError::JobsNotRestorable { reason, jobs, .. }) = b.restore(&snapshot) else {
///     panic!("refused")
/// };
/// assert_eq!((reason, jobs), (JobsRefusal::NotRegistered, 1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobsRefusal {
    /// The registry has no deadline jobs of that result type registered.
    NotRegistered,
    /// The registry's scheduler of that type refused them: registered with another latency
    /// ([`DeadlineError::LatencyMismatch`](freyr_time::DeadlineError::LatencyMismatch)), or
    /// settled ([`DeadlineError::Settled`](freyr_time::DeadlineError::Settled)).
    Refused(freyr_time::DeadlineError),
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::MissingTypes {
                components,
                resources,
            } => {
                write!(f, "{components}")?;
                if !resources.is_empty() {
                    if !components.is_empty() {
                        write!(f, "; ")?;
                    }
                    write!(f, "a snapshot would not copy the resources ")?;
                    for (i, name) in resources.iter().enumerate() {
                        write!(f, "{}`{name}`", if i > 0 { ", " } else { "" })?;
                    }
                    write!(
                        f,
                        "; register each with `register_snapshot_resource::<R>()`, or leave it \
                         out on purpose with `exclude_resource_from_snapshot::<R>()`"
                    )?;
                }
                Ok(())
            }
            SnapshotError::NotQuiet {
                launches_in_flight,
                pending_command_buffers,
                queued_destructions,
            } => write!(
                f,
                "not a quiet point: {launches_in_flight} launches in flight, \
                 {pending_command_buffers} command buffers and {queued_destructions} \
                 destructions not applied; call `execute_tasks()` first"
            ),
            SnapshotError::InsideUpdate => write!(
                f,
                "called inside `update` (a tick is half run); take snapshots and restore \
                 between ticks"
            ),
            SnapshotError::Incomplete => {
                write!(
                    f,
                    "the snapshot is incomplete (never taken, or its taking panicked)"
                )
            }
            SnapshotError::TickNotInRing { tick } => {
                write!(f, "the snapshot ring holds no snapshot of tick {tick}")
            }
            SnapshotError::BeforeConfirmed { tick, confirmed } => write!(
                f,
                "tick {tick} is before tick {confirmed}, which was confirmed with \
                 `confirm_tick`: no restore or load goes back before it; restore a later \
                 snapshot, or load into a registry that did not confirm it"
            ),
            SnapshotError::JobsNotRestorable {
                result_type,
                jobs,
                reason,
            } => {
                write!(
                    f,
                    "the snapshot holds {jobs} deadline jobs of result type `{result_type}` in \
                     flight that this registry cannot deliver: "
                )?;
                match reason {
                    JobsRefusal::NotRegistered => write!(
                        f,
                        "it has no deadline jobs of that type; register them with \
                         `add_deadline_jobs::<{result_type}>(latency, apply)` first"
                    ),
                    JobsRefusal::Refused(error) => write!(f, "{error}"),
                }
            }
        }
    }
}

impl std::error::Error for SnapshotError {}

/// The registry's pool as a [`ParallelFor`]: the snapshot's copying, spread over the workers.
///
/// Internal to the Freyr workspace (`freyr-registry` takes and restores snapshots with it),
/// not a stable API.
#[doc(hidden)]
pub struct OnPool<'a>(pub &'a ThreadPool);

impl ParallelFor for OnPool<'_> {
    fn parallel_for(&self, count: usize, f: &(dyn Fn(usize) + Sync)) {
        let grain = (count / (self.0.workers() * 4)).max(1);
        self.0.parallel_for(count, grain, f);
    }
}
