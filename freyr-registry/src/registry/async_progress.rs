//! [`AsyncProgress`]: what a fixed-step gate (or any thread) may read of an
//! [`AsyncSystem`](super::AsyncSystem)'s work while the system owns its pump.

use core::fmt;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use freyr_time::{AsyncPump, Gate};

/// The pump an async system shares with its [`AsyncProgress`] handles, and the counts last
/// published by its system (read when the pump is in use at the moment of asking).
pub(super) struct SharedPump<P> {
    pump: Mutex<P>,
    /// `(in flight, drainable)` as last published: one lock, so a reader never pairs one
    /// publication's count with another's (a drain from (2, 1) to (1, 0) read half-way as
    /// (1, 1) would say every launch settled while one still runs).
    published: Mutex<(usize, usize)>,
}

/// The counts a handle reads, for any pump type.
trait PumpCounts: Send + Sync {
    /// `(in flight, drainable)`.
    fn counts(&self) -> (usize, usize);
}

impl<R: Send, C: Send, E: Send> SharedPump<AsyncPump<R, C, E>> {
    pub(super) fn new(pump: AsyncPump<R, C, E>) -> Arc<Self> {
        Arc::new(SharedPump {
            pump: Mutex::new(pump),
            published: Mutex::new((0, 0)),
        })
    }

    /// The pump, for its system. The only panic that can cross the lock is one the pump
    /// re-raises once it is consistent again (a `discard` panic at the end of `settle`), so a
    /// poisoned lock still holds a sound pump.
    pub(super) fn lock(&self) -> MutexGuard<'_, AsyncPump<R, C, E>> {
        freyr_sync::lock_std(&self.pump)
    }

    /// Publishes `pump`'s counts for readers that find it in use.
    pub(super) fn publish(&self, pump: &AsyncPump<R, C, E>) {
        *freyr_sync::lock_std(&self.published) = (pump.in_flight(), pump.drainable());
    }
}

impl<R: Send, C: Send, E: Send> PumpCounts for SharedPump<AsyncPump<R, C, E>> {
    fn counts(&self) -> (usize, usize) {
        let live = match self.pump.try_lock() {
            Ok(pump) => Some((pump.in_flight(), pump.drainable())),
            Err(TryLockError::Poisoned(poisoned)) => {
                let pump = poisoned.into_inner();
                Some((pump.in_flight(), pump.drainable()))
            }
            // Its system is draining, launching or settling right now (a read from its own
            // work or `discard`, or from another thread): the counts it last published.
            Err(TryLockError::WouldBlock) => None,
        };
        live.unwrap_or_else(|| *freyr_sync::lock_std(&self.published))
    }
}

/// A read-only handle on the work of one [`AsyncSystem`](super::AsyncSystem), returned by
/// [`Registry::add_async_system`](super::Registry::add_async_system): how many launches are in
/// flight and how many have settled, so that the system's next update applies them. Cheap to
/// clone, `Send + Sync`; never blocks.
///
/// It is a fixed-step [`Gate`] that holds the next tick while any launch is still running
/// ([`all_settled`](Self::all_settled)): with it, every result is applied in the update right
/// after its launch's, whatever the work's speed (lockstep, the deterministic mode). A gate
/// with a different rule reads [`in_flight`](Self::in_flight) and
/// [`drainable`](Self::drainable) in a closure.
///
/// Read from the system's own work or `discard` (while its pump is in use), it answers the
/// counts of just before that use.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use freyr::time::ManualClock;
/// use freyr::time::pump::{Completer, Launched, Process};
/// use freyr::{AsyncSystem, Phase, Registry};
///
/// /// Hands each tick's request to a "network thread" (here: the test, through `outbox`).
/// struct Remote(Arc<Mutex<Vec<Completer<u64, String>>>>);
/// impl AsyncSystem for Remote {
///     type Request = u64;
///     type Result = u64;
///     type Error = String;
///     fn collect(&mut self, r: &mut Registry) -> Option<u64> {
///         Some(r.tick())
///     }
///     fn process(&mut self, _: Arc<u64>) -> Process<u64, String> {
///         let outbox = Arc::clone(&self.0);
///         Process::elsewhere(move |done| outbox.lock().unwrap().push(done))
///     }
///     fn apply(&mut self, r: &mut Registry, v: u64, launched: &Launched<u64>) {
///         assert_eq!(r.tick(), launched.tick + 1, "applied in the next tick");
///         r.insert_resource(v);
///     }
/// }
///
/// let outbox = Arc::new(Mutex::new(Vec::new()));
/// let clock = ManualClock::new();
/// let mut registry = Registry::with_workers(1);
/// registry.set_fixed_step(Duration::from_millis(10), clock.clone()).unwrap();
/// let progress = registry.add_async_system(Phase::Update, Remote(Arc::clone(&outbox)));
/// registry.add_gate(progress.clone()); // lockstep: wait for the remote's answer
/// clock.advance(Duration::from_millis(30));
/// assert_eq!(registry.run_frame().ran, 1); // tick 0 launches, tick 1 waits
/// assert_eq!((progress.in_flight(), progress.drainable()), (1, 0));
/// outbox.lock().unwrap().pop().unwrap().complete(7).unwrap();
/// assert!(progress.all_settled());
/// registry.run_frame(); // tick 1 applies, launches again
/// assert_eq!(registry.resource::<u64>().copied(), Some(7));
/// registry.settle_systems();
/// ```
#[derive(Clone)]
pub struct AsyncProgress {
    shared: Arc<dyn PumpCounts>,
}

impl AsyncProgress {
    pub(super) fn new<R: Send + 'static, C: Send + 'static, E: Send + 'static>(
        shared: Arc<SharedPump<AsyncPump<R, C, E>>>,
    ) -> AsyncProgress {
        AsyncProgress { shared }
    }

    /// Launches in flight: launched and not yet applied or discarded by the system's update.
    pub fn in_flight(&self) -> usize {
        self.shared.counts().0
    }

    /// Launches the system's next update will apply or discard: the settled ones in launch
    /// order, up to the first still running.
    pub fn drainable(&self) -> usize {
        self.shared.counts().1
    }

    /// Whether every launch in flight has settled (true when none is), so the system's next
    /// update applies or discards them all: the question a lockstep gate asks.
    pub fn all_settled(&self) -> bool {
        let (in_flight, drainable) = self.shared.counts();
        drainable == in_flight
    }
}

impl Gate for AsyncProgress {
    /// [`all_settled`](AsyncProgress::all_settled), whatever `next_tick`.
    fn may_advance(&mut self, _next_tick: u64) -> bool {
        self.all_settled()
    }
}

impl fmt::Debug for AsyncProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (in_flight, drainable) = self.shared.counts();
        f.debug_struct("AsyncProgress")
            .field("in_flight", &in_flight)
            .field("drainable", &drainable)
            .finish()
    }
}
