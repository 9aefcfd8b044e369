//! Async systems: a system that owns an [`AsyncPump`] and is written as four methods, `collect`
//! (on the tick), `process` (off the tick), `apply` and `discard` (on the tick, in its own
//! update, in launch order). [`Registry::add_async_system`] wires the pump to the system's slot.

use core::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use freyr_time::{AsyncPump, Completer, Discard, Launch};

use super::async_progress::{AsyncProgress, SharedPump};

use freyr_profile::phase::Phase;
use freyr_sched::keep_first;

use super::Registry;
use super::System;

/// Where an [`AsyncSystem`]'s work runs: made by [`AsyncSystem::process`].
///
/// # Examples
///
/// ```
/// use freyr::time::pump::Process;
/// let on_pool: Process<u32, String> = Process::on_pool(|| Ok(6 * 7));
/// assert!(matches!(on_pool, Process::Pool(_)));
/// let elsewhere: Process<u32, String> = Process::elsewhere(|done| drop(done.complete(42)));
/// assert!(matches!(elsewhere, Process::Elsewhere(_)));
/// ```
pub enum Process<R, E> {
    /// The work, run on the registry's pool.
    Pool(Box<dyn FnOnce() -> Result<R, E> + Send>),
    /// A hand-off, called on the tick right after the launch with the [`Completer`] that any
    /// thread (a network thread, a file loader) finishes the work through. It should only pass
    /// the completer on; a completer dropped unfinished is discarded as
    /// [`Discard::Abandoned`].
    Elsewhere(Box<dyn FnOnce(Completer<R, E>) + Send>),
}

impl<R, E> Process<R, E> {
    /// Work for the registry's pool.
    pub fn on_pool(work: impl FnOnce() -> Result<R, E> + Send + 'static) -> Self {
        Process::Pool(Box::new(work))
    }

    /// Work completed by another thread through the completer `hand_off` receives.
    pub fn elsewhere(hand_off: impl FnOnce(Completer<R, E>) + Send + 'static) -> Self {
        Process::Elsewhere(Box::new(hand_off))
    }
}

impl<R, E> fmt::Debug for Process<R, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Process::Pool(_) => "Process::Pool(..)",
            Process::Elsewhere(_) => "Process::Elsewhere(..)",
        })
    }
}

/// A request as it was launched: the tick [`collect`](AsyncSystem::collect) ran at and the
/// request, handed back to [`apply`](AsyncSystem::apply) and [`discard`](AsyncSystem::discard)
/// (the age of what they integrate is `registry.tick() - tick`).
#[derive(Debug)]
pub struct Launched<Q> {
    /// The tick the request was collected and launched at.
    pub tick: u64,
    /// The request (shared with the work while it ran).
    pub request: Arc<Q>,
}

/// A system whose work is a round trip off the tick, written as four methods over a pump it owns:
/// registered with [`Registry::add_async_system`], it owns an [`AsyncPump`] of
/// [`capacity`](AsyncSystem::capacity) launches and, in its slot of every update:
///
/// 1. drains the pump: every settled launch, in launch order, goes to
///    [`apply`](AsyncSystem::apply) (a result) or [`discard`](AsyncSystem::discard) (a
///    rejection, a panic of the work, an abandoned completer), each exactly once, even when one
///    of these calls panics (the first panic is re-raised after the drain, and nothing is
///    launched in that update);
/// 2. if the pump has room, calls [`collect`](AsyncSystem::collect) (full access to the
///    registry; `None` launches nothing) and launches what
///    [`process`](AsyncSystem::process) returns, stamped with the tick.
///
/// Results are applied only here, on the tick, after the results before them: the work itself
/// never touches the registry. With capacity 1 (the default) a slow round trip means the next
/// `collect` sees more changes at once (coalescing), never a deeper queue.
/// [`Registry::settle_systems`] on shutdown hands every launch still in flight to `discard`
/// ([`Discard::Unapplied`] for finished work, [`Discard::Cancelled`] for work never run).
///
/// The pump is not rewound by a [`restore`](Registry::restore) or a
/// [`load_into`](Registry::load_into): every launch made before one (its request was collected
/// from a world that was replaced) goes to `discard` as [`Discard::Stale`] when it settles,
/// never to `apply`, and counts against the capacity until then.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use freyr::{AsyncSystem, Phase, Registry};
/// use freyr::time::pump::{Launched, Process};
///
/// struct Total(u64);
///
/// /// Sums a snapshot of every value off the tick; applies the sum a tick later.
/// struct Summer;
/// impl AsyncSystem for Summer {
///     type Request = Vec<u64>;
///     type Result = u64;
///     type Error = String;
///     fn collect(&mut self, r: &mut Registry) -> Option<Vec<u64>> {
///         let mut values = Vec::new();
///         r.query::<&u64>().each(|_, v| values.push(*v));
///         Some(values)
///     }
///     fn process(&mut self, values: Arc<Vec<u64>>) -> Process<u64, String> {
///         Process::on_pool(move || Ok(values.iter().sum()))
///     }
///     fn apply(&mut self, r: &mut Registry, sum: u64, launched: &Launched<Vec<u64>>) {
///         assert!(launched.tick < r.tick()); // launched on an earlier tick
///         r.resource_mut::<Total>().unwrap().0 = sum;
///     }
/// }
///
/// let mut registry = Registry::with_workers(2);
/// registry.spawn_batch((1..=100u64).map(|v| (v,)));
/// registry.insert_resource(Total(0));
/// registry.add_async_system(Phase::Update, Summer);
/// registry.update(0.1); // collects and launches
/// // Applied in a later update, once the pool finished the work (the tick never waits for it).
/// while registry.resource::<Total>().unwrap().0 == 0 {
///     registry.update(0.1);
/// }
/// assert_eq!(registry.resource::<Total>().unwrap().0, 5050);
/// registry.settle_systems();
/// ```
pub trait AsyncSystem: Send + 'static {
    /// What `collect` snapshots from the world (owned: the work runs off the tick).
    type Request: Send + Sync + 'static;
    /// What the work produces.
    type Result: Send + 'static;
    /// How the work fails (a rejection, routed to `discard`).
    type Error: Send + fmt::Debug + 'static;

    /// On the tick, when the pump has room: builds a request from the current world, or
    /// `None` to launch nothing this update. Full access to the registry.
    fn collect(&mut self, registry: &mut Registry) -> Option<Self::Request>;

    /// Called on the tick right after `collect`; returns the work, which runs off the tick: on
    /// the pool ([`Process::on_pool`]) or on any thread that completes it
    /// ([`Process::elsewhere`]). The work sees only the request.
    fn process(&mut self, request: Arc<Self::Request>) -> Process<Self::Result, Self::Error>;

    /// On the tick, in this system's update, in launch order: integrates a result.
    fn apply(
        &mut self,
        registry: &mut Registry,
        result: Self::Result,
        launched: &Launched<Self::Request>,
    );

    /// On the tick, in this system's update, in launch order (or in
    /// [`Registry::settle_systems`]): a launch whose result will not be applied, with the
    /// reason. The default prints rejections, panics and abandoned completers to stderr with
    /// the system's name, and drops the rest quietly.
    fn discard(
        &mut self,
        registry: &mut Registry,
        why: Discard<Self::Result, Self::Error>,
        launched: &Launched<Self::Request>,
    ) {
        let _ = registry;
        let reason = match &why {
            Discard::Rejected(error) => format!("rejected: {error:?}"),
            Discard::Panicked(panic) => format!("{panic}"),
            Discard::Abandoned => "abandoned: its completer was dropped".to_owned(),
            _ => return,
        };
        eprintln!(
            "freyr: async system {}: the launch of tick {} was discarded ({reason})",
            self.name(),
            launched.tick
        );
    }

    /// Launches in flight at most (read once, at registration); 1 = coalescing.
    fn capacity(&self) -> usize {
        1
    }

    /// A name for diagnostics.
    fn name(&self) -> &str {
        core::any::type_name::<Self>()
    }
}

type Pump<S> = AsyncPump<
    <S as AsyncSystem>::Result,
    Launched<<S as AsyncSystem>::Request>,
    <S as AsyncSystem>::Error,
>;

/// The [`System`] an [`AsyncSystem`] runs as: the system and the pump it owns, shared with
/// its [`AsyncProgress`] handles. The pump is locked only around its own calls, never while
/// `collect`, `process`, `apply` or a hand-off runs.
struct AsyncDriver<S: AsyncSystem> {
    system: S,
    pump: Arc<SharedPump<Pump<S>>>,
    /// The registry's [`rewinds`](Registry::rewinds) the pump's launches were made under.
    rewinds: u64,
}

impl<S: AsyncSystem> AsyncDriver<S> {
    /// The next settled launch, if any (the pump locked for that call only).
    #[allow(clippy::type_complexity)]
    fn drain_one(
        &self,
    ) -> Option<(
        Launched<S::Request>,
        Result<S::Result, Discard<S::Result, S::Error>>,
    )> {
        let mut pump = self.pump.lock();
        let next = pump.drain_one(|_| true);
        self.pump.publish(&pump);
        next
    }

    fn drain(&mut self, registry: &mut Registry) {
        let mut first_panic = None;
        while let Some((launched, verdict)) = self.drain_one() {
            let system = &mut self.system;
            let call = panic::catch_unwind(AssertUnwindSafe(|| match verdict {
                Ok(value) => system.apply(registry, value, &launched),
                Err(why) => system.discard(registry, why, &launched),
            }));
            if let Err(payload) = call {
                keep_first(&mut first_panic, payload);
            }
        }
        if let Some(payload) = first_panic {
            panic::resume_unwind(payload);
        }
    }

    fn launch(&mut self, registry: &mut Registry, request: S::Request) {
        let request = Arc::new(request);
        let launched = Launched {
            tick: registry.tick(),
            request: Arc::clone(&request),
        };
        let process = self.system.process(request);
        let mut pump = self.pump.lock();
        let launch = match process {
            Process::Pool(work) => pump.launch(registry.pool(), launched, (), move |()| work()),
            Process::Elsewhere(hand_off) => match pump.launch_external(launched) {
                Ok(Launch::External(completer)) => {
                    self.pump.publish(&pump);
                    drop(pump);
                    hand_off(completer);
                    return;
                }
                other => other,
            },
        };
        self.pump.publish(&pump);
        // The pump had room (checked before `collect`), is not settled (checked too) and only
        // ever sees this registry's pool.
        if let Err(error) = launch {
            unreachable!("freyr: async system launch refused: {error}");
        }
    }
}

impl<S: AsyncSystem> System for AsyncDriver<S> {
    fn update(&mut self, registry: &mut Registry, _dt: f32) {
        // A restore or a load replaced the world the launches in flight were collected from.
        let rewinds = registry.rewinds();
        if rewinds != self.rewinds {
            self.rewinds = rewinds;
            let mut pump = self.pump.lock();
            pump.invalidate();
            self.pump.publish(&pump);
        }
        self.drain(registry);
        let ready = {
            let pump = self.pump.lock();
            !pump.is_settled() && pump.is_ready()
        };
        if !ready {
            return;
        }
        if let Some(request) = self.system.collect(registry) {
            self.launch(registry, request);
        }
    }

    fn name(&self) -> &str {
        self.system.name()
    }

    fn settle(&mut self, registry: &mut Registry) -> usize {
        let pool = Arc::clone(registry.shared_pool());
        let system = &mut self.system;
        let shared = &self.pump;
        let mut pump = shared.lock();
        // Published first: a handle read from `discard` finds the pump locked and reads these.
        shared.publish(&pump);
        let settled = panic::catch_unwind(AssertUnwindSafe(|| {
            pump.settle(&pool, |launched, why| {
                system.discard(registry, why, &launched)
            })
        }));
        shared.publish(&pump);
        drop(pump);
        match settled {
            Ok(handed) => {
                handed.expect("an async system's pump only ever sees its registry's pool")
            }
            Err(payload) => panic::resume_unwind(payload),
        }
    }
}

impl Registry {
    /// Registers an [`AsyncSystem`] to run in `phase`, after the systems already registered
    /// there, with a pump of [`capacity`](AsyncSystem::capacity) launches of its own. Returns
    /// a handle on that pump's progress: what a fixed-step gate needs to know whether the
    /// system's work is ready to be applied (see [`AsyncProgress`]; dropping it changes
    /// nothing).
    ///
    /// # Panics
    ///
    /// If the system's capacity is 0.
    ///
    /// # Examples
    ///
    /// See [`AsyncSystem`] and [`AsyncProgress`].
    pub fn add_async_system<S: AsyncSystem>(&mut self, phase: Phase, system: S) -> AsyncProgress {
        let capacity = system.capacity();
        let pump = AsyncPump::with_capacity(capacity).unwrap_or_else(|error| {
            panic!(
                "freyr: async system {} has capacity {capacity}: {error}",
                system.name()
            )
        });
        let pump = SharedPump::new(pump);
        let progress = AsyncProgress::new(Arc::clone(&pump));
        let rewinds = self.rewinds();
        self.add_system(
            phase,
            AsyncDriver {
                system,
                pump,
                rewinds,
            },
        );
        progress
    }
}
