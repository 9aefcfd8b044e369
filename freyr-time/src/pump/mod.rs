//! The async pump: latency-tolerant work launched from a system, whose
//! results are *drained* by that system, in launch order, inside its own
//! update, and never applied from the thread that produced them.
//!
//! Work runs on the pool ([`AsyncPump::launch`]) or on any other thread
//! that completes a [`Completer`] ([`AsyncPump::launch_external`]). Either
//! way, completion only stores the outcome. The owner's
//! [`drain`](AsyncPump::drain) delivers settled results in launch order (an
//! unsettled head holds younger results back), routes failures and stale
//! results to a discard path with the reason, and frees capacity.
//!
//! Staleness has two sources: [`invalidate`](AsyncPump::invalidate) bumps
//! an epoch, so results of older launches are discarded; and a launch's
//! context may address a target (an entity + generation handle) that is
//! checked with a caller-supplied liveness test at drain time, so a result
//! for a despawned entity is discarded rather than applied to the slot's
//! new occupant. The pump knows nothing of entities: the test is a closure.

use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

mod completer;
mod outcome;
mod state;

use crate::pool_job::{PoolJob, drop_quietly};
use freyr_sched::keep_first;
use freyr_sched::{PoolId, ThreadPool};

use self::completer::{Slot, SlotState};

pub use self::completer::Completer;
pub use self::outcome::{Discard, Launch, PumpError, PumpStats};

enum Source<R, E> {
    Pool(PoolJob<Result<R, E>>),
    External(Arc<Slot<R, E>>),
}

impl<R, E> Source<R, E> {
    fn is_settled(&self) -> bool {
        match self {
            Source::Pool(job) => job.is_done(),
            Source::External(slot) => slot.is_settled(),
        }
    }
}

struct Entry<R, C, E> {
    epoch: u64,
    context: C,
    source: Source<R, E>,
}

/// A capacity-limited pipeline of async launches, drained by its owner.
///
/// - Capacity (default 1): at most that many launches are in flight (launched
///   and not yet drained). A launch beyond it is *coalesced*: dropped and
///   remembered as one pending request ([`take_coalesced`](Self::take_coalesced)),
///   so the next launch snapshots fresh state instead of queueing stale work.
/// - [`drain`](Self::drain) delivers settled results in launch order to
///   `apply(context, result)`; everything else goes to
///   `discard(context, reason)`: errors, panics, abandoned completers,
///   results from before the last [`invalidate`](Self::invalidate), and
///   results whose context fails the liveness test. Only the owner (whoever
///   holds `&mut` to the pump) can drain: completion never applies anything.
/// - A panic of a callback does not stop a drain: every settled result is
///   still applied or discarded, then the first panic is re-raised.
/// - [`settle`](Self::settle) on shutdown cancels what has not started,
///   waits (helping the pool) for what runs, hands every launch to the
///   discard path with what became of it, refuses late completions, and
///   refuses later launches.
///
/// `C` is the per-launch context returned with the result (a tick stamp, an
/// entity handle, …); `E` the error type of rejections.
///
/// # Examples
///
/// ```
/// use freyr::ThreadPool;
/// use freyr::time::pump::{AsyncPump, Launch};
///
/// let pool = ThreadPool::new(2);
/// let mut pump: AsyncPump<u64, &str> = AsyncPump::with_capacity(2).unwrap();
/// pump.launch(&pool, "sum", vec![1, 2, 3], |v: Vec<u64>| Ok(v.iter().sum())).unwrap();
/// pump.launch(&pool, "max", vec![4, 9, 2], |v: Vec<u64>| Ok(*v.iter().max().unwrap())).unwrap();
/// let mut applied = Vec::new();
/// while pump.in_flight() > 0 {
///     pump.drain_all(|ctx, v| applied.push((ctx, v)), |_, why| panic!("{why:?}"));
/// }
/// assert_eq!(applied, [("sum", 6), ("max", 9)]); // launch order
/// ```
pub struct AsyncPump<R, C = (), E = String> {
    capacity: usize,
    epoch: u64,
    inflight: VecDeque<Entry<R, C, E>>,
    next_launch: u64,
    coalesced: bool,
    settled: bool,
    pool: Option<PoolId>,
    stats: PumpStats,
}

impl<R: Send + 'static, C, E: Send + 'static> AsyncPump<R, C, E> {
    /// A pump of capacity 1 (coalescing).
    ///
    /// # Examples
    ///
    /// ```
    /// let pump: freyr::time::pump::AsyncPump<u8> = freyr::time::pump::AsyncPump::new();
    /// assert_eq!(pump.capacity(), 1);
    /// assert!(pump.is_ready());
    /// ```
    #[must_use]
    pub fn new() -> Self {
        AsyncPump {
            capacity: 1,
            epoch: 0,
            inflight: VecDeque::new(),
            next_launch: 0,
            coalesced: false,
            settled: false,
            pool: None,
            stats: PumpStats::default(),
        }
    }

    /// A pump that keeps up to `capacity` launches in flight.
    ///
    /// # Errors
    ///
    /// [`PumpError::ZeroCapacity`] if `capacity` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let pump = freyr::time::pump::AsyncPump::<u8>::with_capacity(3).unwrap();
    /// assert_eq!(pump.capacity(), 3);
    /// ```
    pub fn with_capacity(capacity: usize) -> Result<Self, PumpError> {
        if capacity == 0 {
            return Err(PumpError::ZeroCapacity);
        }
        Ok(AsyncPump {
            capacity,
            ..AsyncPump::new()
        })
    }

    /// Launches `work(inputs)` on `pool` with `context`, or coalesces it if
    /// the pump is at capacity (then `inputs` and `work` are dropped).
    /// `inputs` is moved in: the work reads only what it owns. A pool of
    /// one runs the work before returning; its result still waits for
    /// [`drain`](Self::drain).
    ///
    /// # Errors
    ///
    /// [`PumpError::Settled`] after [`settle`](Self::settle);
    /// [`PumpError::ForeignPool`] if `pool` is not the pool of earlier launches.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::pump::{AsyncPump, Launch};
    /// let pool = ThreadPool::new(2);
    /// let mut pump: AsyncPump<String> = AsyncPump::new();
    /// let launch = pump.launch(&pool, (), 42, |n: i32| Ok(n.to_string())).unwrap();
    /// assert!(matches!(launch, Launch::Started(0)));
    /// ```
    pub fn launch<I, F>(
        &mut self,
        pool: &ThreadPool,
        context: C,
        inputs: I,
        work: F,
    ) -> Result<Launch<R, E>, PumpError>
    where
        I: Send + 'static,
        F: FnOnce(I) -> Result<R, E> + Send + 'static,
    {
        self.check_open()?;
        let id = pool.id();
        if self.pool.is_some_and(|bound| bound != id) {
            return Err(PumpError::ForeignPool);
        }
        if !self.is_ready() {
            return Ok(self.coalesce());
        }
        self.pool = Some(id);
        let job = PoolJob::spawn(pool, move || work(inputs));
        Ok(Launch::Started(self.record(context, Source::Pool(job))))
    }

    /// Records a launch whose work happens elsewhere, and returns the
    /// [`Completer`] any thread uses to finish it, or coalesces it if the
    /// pump is at capacity.
    ///
    /// # Errors
    ///
    /// [`PumpError::Settled`] after [`settle`](Self::settle).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::time::pump::{AsyncPump, Launch};
    /// let mut pump: AsyncPump<Vec<u8>, &str> = AsyncPump::new();
    /// let Launch::External(file) = pump.launch_external("level.bin").unwrap() else {
    ///     unreachable!()
    /// };
    /// std::thread::spawn(move || file.complete(vec![1, 2, 3])).join().unwrap().unwrap();
    /// let mut loaded = None;
    /// pump.drain_all(|name, bytes| loaded = Some((name, bytes)), |_, _| unreachable!());
    /// assert_eq!(loaded, Some(("level.bin", vec![1, 2, 3])));
    /// ```
    pub fn launch_external(&mut self, context: C) -> Result<Launch<R, E>, PumpError> {
        self.check_open()?;
        if !self.is_ready() {
            return Ok(self.coalesce());
        }
        let slot = Slot::new();
        self.record(context, Source::External(Arc::clone(&slot)));
        Ok(Launch::External(Completer::new(slot)))
    }

    /// Delivers settled results in launch order: `apply(context, value)`
    /// for a successful, current result whose context passes `is_live`;
    /// `discard(context, reason)` for every other (see [`Discard`]). Stops
    /// at the first launch still in flight (younger results wait behind
    /// it). Never blocks. Returns how many launches it retired.
    ///
    /// # Panics
    ///
    /// Re-raises the first panic of `is_live`, `apply` or `discard`, once
    /// every settled launch was retired: a panicking call does not stop the
    /// drain, so each settled result still reaches `apply` or `discard`
    /// exactly once (a result whose `is_live` test panicked is dropped and
    /// counted discarded, as [`drain_one`](Self::drain_one) says). A later
    /// panic is dropped with [`drop_payload`](freyr_sched::drop_payload).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::pump::{AsyncPump, Discard};
    /// // Targets are (index, generation) handles; slot 1 was reused.
    /// let generations = [0u32, 1];
    /// let is_live = |&(index, generation): &(usize, u32)| generations[index] == generation;
    /// let pool = ThreadPool::new(1);
    /// let mut pump: AsyncPump<i32, (usize, u32)> = AsyncPump::with_capacity(2).unwrap();
    /// pump.launch(&pool, (0, 0), 10, |x: i32| Ok(x)).unwrap();
    /// pump.launch(&pool, (1, 0), 20, |x: i32| Ok(x)).unwrap(); // generation 0 is gone
    /// let (mut applied, mut gone) = (Vec::new(), Vec::new());
    /// pump.drain(is_live, |t, v| applied.push((t, v)), |t, why| gone.push((t, why)));
    /// assert_eq!(applied, [((0, 0), 10)]);
    /// assert_eq!(gone, [((1, 0), Discard::TargetGone(20))]);
    /// ```
    pub fn drain(
        &mut self,
        mut is_live: impl FnMut(&C) -> bool,
        mut apply: impl FnMut(C, R),
        mut discard: impl FnMut(C, Discard<R, E>),
    ) -> usize {
        let mut retired = 0;
        let mut first_panic = None;
        loop {
            let next = panic::catch_unwind(AssertUnwindSafe(|| self.drain_one(&mut is_live)));
            let (context, verdict) = match next {
                Ok(Some(next)) => next,
                Ok(None) => break,
                Err(payload) => {
                    retired += 1;
                    keep_first(&mut first_panic, payload);
                    continue;
                }
            };
            retired += 1;
            let call = panic::catch_unwind(AssertUnwindSafe(|| match verdict {
                Ok(value) => apply(context, value),
                Err(why) => discard(context, why),
            }));
            if let Err(payload) = call {
                keep_first(&mut first_panic, payload);
            }
        }
        if let Some(payload) = first_panic {
            panic::resume_unwind(payload);
        }
        retired
    }

    /// Retires the oldest launch if it has settled, and returns its context
    /// with `Ok(value)` (a successful, current result whose context passes
    /// `is_live`: the caller applies it now) or `Err(reason)` (see
    /// [`Discard`]); `None` if nothing is in flight or the oldest launch is
    /// still running. The [`stats`](Self::stats) count an `Ok` as applied
    /// and an `Err` as discarded, so a caller that checks the target with
    /// `is_live` right before applying keeps them exact. The building block
    /// of [`drain`](Self::drain) for a caller that must apply each result
    /// before testing the next one's target (e.g. a registry whose apply may
    /// despawn the next target).
    ///
    /// # Panics
    ///
    /// If `is_live` panics: the launch is retired, its result dropped and
    /// counted discarded (and stale), and the panic propagates.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::pump::{AsyncPump, Discard};
    /// let pool = ThreadPool::new(1);
    /// let mut pump: AsyncPump<u8, u32> = AsyncPump::with_capacity(2).unwrap();
    /// pump.launch(&pool, 7, (), |()| Ok(1)).unwrap();
    /// pump.launch(&pool, 8, (), |()| Ok(2)).unwrap();
    /// assert_eq!(pump.drain_one(|_| true), Some((7, Ok(1))));
    /// assert_eq!(pump.drain_one(|&target| target != 8), Some((8, Err(Discard::TargetGone(2)))));
    /// assert_eq!(pump.drain_one(|_| true), None);
    /// let stats = pump.stats();
    /// assert_eq!((stats.applied, stats.discarded, stats.stale), (1, 1, 1));
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn drain_one(
        &mut self,
        is_live: impl FnOnce(&C) -> bool,
    ) -> Option<(C, Result<R, Discard<R, E>>)> {
        if !self.inflight.front()?.source.is_settled() {
            return None;
        }
        let entry = self.inflight.pop_front()?;
        let outcome = match entry.source {
            Source::Pool(job) => match job.take_result() {
                Some(Ok(outcome)) => Ok(outcome),
                Some(Err(panic)) => Err(Discard::Panicked(panic)),
                None => Err(Discard::Cancelled),
            },
            Source::External(slot) => match slot.take() {
                SlotState::Done(outcome) => Ok(outcome),
                SlotState::Abandoned => Err(Discard::Abandoned),
                SlotState::Waiting | SlotState::Cancelled => Err(Discard::Cancelled),
            },
        };
        let verdict = match outcome {
            Ok(Ok(value)) if entry.epoch != self.epoch => Err(Discard::Stale(value)),
            Ok(Ok(value)) => {
                match panic::catch_unwind(AssertUnwindSafe(|| is_live(&entry.context))) {
                    Ok(true) => Ok(value),
                    Ok(false) => Err(Discard::TargetGone(value)),
                    Err(payload) => {
                        self.stats.discarded += 1;
                        self.stats.stale += 1;
                        drop_quietly(value);
                        drop_quietly(entry.context);
                        panic::resume_unwind(payload);
                    }
                }
            }
            Ok(Err(error)) => Err(Discard::Rejected(error)),
            Err(why) => Err(why),
        };
        match &verdict {
            Ok(_) => self.stats.applied += 1,
            Err(why) => self.count_discard(why),
        }
        Some((entry.context, verdict))
    }

    /// [`drain`](Self::drain) with every context considered alive.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::pump::AsyncPump;
    /// let pool = ThreadPool::new(1);
    /// let mut pump: AsyncPump<u8> = AsyncPump::new();
    /// pump.launch(&pool, (), 5u8, |x| Ok(x + 1)).unwrap();
    /// let mut got = 0;
    /// assert_eq!(pump.drain_all(|(), v| got = v, |_, _| {}), 1);
    /// assert_eq!(got, 6);
    /// ```
    pub fn drain_all(
        &mut self,
        apply: impl FnMut(C, R),
        discard: impl FnMut(C, Discard<R, E>),
    ) -> usize {
        self.drain(|_| true, apply, discard)
    }

    /// Shutdown: cancels every launch that has not started, waits (running
    /// the pool's queued tasks on this thread) for pool work that has,
    /// makes late [`Completer`]s fail, and hands every launch still in
    /// flight to `discard`, in launch order, with what became of it:
    /// [`Discard::Cancelled`] only for a launch that never ran (or an
    /// external one never completed); [`Discard::Panicked`] (with the
    /// message), [`Discard::Rejected`] or [`Discard::Abandoned`] for one that
    /// failed; [`Discard::Unapplied`] (with the value) for one that finished.
    /// Refuses later launches. Returns how many launches it handed to
    /// `discard`. Calling it again does nothing more.
    ///
    /// # Errors
    ///
    /// [`PumpError::ForeignPool`] if `pool` is not the pool of the pump's launches.
    ///
    /// # Panics
    ///
    /// Re-raises the first panic of `discard` once every launch was handed
    /// to it (each exactly once); a later panic is dropped with
    /// [`drop_payload`](freyr_sched::drop_payload).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::pump::{AsyncPump, Discard, PumpError};
    /// let pool = ThreadPool::new(1); // runs each launch before `launch` returns
    /// let mut pump: AsyncPump<u8> = AsyncPump::with_capacity(2).unwrap();
    /// pump.launch(&pool, (), (), |()| Ok(1)).unwrap();
    /// pump.launch(&pool, (), (), |()| -> Result<u8, String> { panic!("bad frame") }).unwrap();
    /// let mut why = Vec::new();
    /// assert_eq!(pump.settle(&pool, |(), d| why.push(d)), Ok(2));
    /// assert_eq!(why[0], Discard::Unapplied(1));
    /// assert!(matches!(&why[1], Discard::Panicked(p) if p.message() == "bad frame"));
    /// assert_eq!(pump.launch(&pool, (), (), |()| Ok(2)).unwrap_err(), PumpError::Settled);
    /// ```
    pub fn settle(
        &mut self,
        pool: &ThreadPool,
        mut discard: impl FnMut(C, Discard<R, E>),
    ) -> Result<usize, PumpError> {
        if self.pool.is_some_and(|bound| bound != pool.id()) && !self.inflight.is_empty() {
            return Err(PumpError::ForeignPool);
        }
        self.settled = true;
        self.coalesced = false;
        for entry in &self.inflight {
            match &entry.source {
                Source::Pool(job) => job.cancel(),
                Source::External(slot) => {
                    slot.cancel();
                }
            }
        }
        let handed = self.inflight.len();
        let mut first_panic = None;
        while let Some(entry) = self.inflight.pop_front() {
            let why = match entry.source {
                Source::Pool(job) => {
                    job.wait(pool);
                    match job.take_result() {
                        Some(Ok(Ok(value))) => Discard::Unapplied(value),
                        Some(Ok(Err(error))) => Discard::Rejected(error),
                        Some(Err(panic)) => Discard::Panicked(panic),
                        None => Discard::Cancelled,
                    }
                }
                Source::External(slot) => match slot.take() {
                    SlotState::Done(Ok(value)) => Discard::Unapplied(value),
                    SlotState::Done(Err(error)) => Discard::Rejected(error),
                    SlotState::Abandoned => Discard::Abandoned,
                    SlotState::Waiting | SlotState::Cancelled => Discard::Cancelled,
                },
            };
            self.count_discard(&why);
            let context = entry.context;
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| discard(context, why))) {
                keep_first(&mut first_panic, payload);
            }
        }
        if let Some(payload) = first_panic {
            panic::resume_unwind(payload);
        }
        Ok(handed)
    }

    fn check_open(&self) -> Result<(), PumpError> {
        if self.settled {
            Err(PumpError::Settled)
        } else {
            Ok(())
        }
    }

    fn coalesce(&mut self) -> Launch<R, E> {
        self.coalesced = true;
        self.stats.coalesced += 1;
        Launch::Coalesced
    }

    fn record(&mut self, context: C, source: Source<R, E>) -> u64 {
        let id = self.next_launch;
        self.next_launch += 1;
        self.stats.launched += 1;
        self.inflight.push_back(Entry {
            epoch: self.epoch,
            context,
            source,
        });
        id
    }

    fn count_discard(&mut self, why: &Discard<R, E>) {
        self.stats.discarded += 1;
        match why {
            Discard::Rejected(_) | Discard::Abandoned => self.stats.rejected += 1,
            Discard::Panicked(_) => self.stats.panicked += 1,
            Discard::Stale(_) | Discard::TargetGone(_) => self.stats.stale += 1,
            Discard::Unapplied(_) | Discard::Cancelled => {}
        }
    }
}
