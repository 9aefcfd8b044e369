//! Deadline jobs through the registry: requested at tick T on an owned snapshot, run on the
//! registry's pool, applied at exactly T + K by a fixed hook at the start of tick T + K, before
//! any system, in registration order of the result types and request order within one.

use core::any::{Any, TypeId};
use std::panic::{self, AssertUnwindSafe};

use freyr_sched::ThreadPool;
use freyr_time::{
    DeadlineError, DeadlineScheduler, DeadlineStats, Delivered, JobStatus, JobTicket, JobsInFlight,
};

use freyr_persist::snapshot::JobsImage;
use freyr_sched::keep_first;

use super::{ErasedApply, ErasedScheduler, Payload, Registry};

struct Typed<R> {
    jobs: DeadlineScheduler<R>,
    ready: Vec<Delivered<R>>,
}

impl<R: Send + 'static> Typed<R> {
    /// The jobs of an image of this result type (the registry looks images up by type).
    fn captured(image: &JobsImage) -> &JobsInFlight<R> {
        image
            .jobs
            .downcast_ref::<JobsInFlight<R>>()
            .expect("a snapshot's image of the jobs of result type R holds JobsInFlight<R>")
    }
}

impl<R: Clone + Send + 'static> ErasedScheduler for Typed<R> {
    fn collect(&mut self, pool: &ThreadPool, now: u64) -> Result<DeadlineStats, DeadlineError> {
        let ready = &mut self.ready;
        self.jobs.collect(pool, now, |done| ready.push(done))
    }

    fn settle(&mut self, pool: &ThreadPool) -> Result<usize, DeadlineError> {
        // Normally empty (collect hands everything to the appliers); dropped one at a time,
        // like the scheduler's own results, so a panicking `Drop` cannot abort the process.
        let mut first_panic = None;
        // Collected for this tick but not applied yet (settled from an apply callback of an
        // earlier result type): discarded and counted like the pending jobs.
        let collected = self.ready.len();
        for done in core::mem::take(&mut self.ready) {
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(move || drop(done))) {
                keep_first(&mut first_panic, payload);
            }
        }
        let settled = panic::catch_unwind(AssertUnwindSafe(|| self.jobs.settle(pool)));
        match (settled, first_panic) {
            (Ok(settled), None) => settled.map(|pending| pending + collected),
            (Ok(_), Some(payload)) => panic::resume_unwind(payload),
            (Err(payload), first) => {
                let mut first = first;
                keep_first(&mut first, payload);
                panic::resume_unwind(first.expect("a payload was just kept"))
            }
        }
    }

    fn capture_into(&self, now: u64, image: &mut JobsImage) {
        let type_id = TypeId::of::<R>();
        if image.type_id != type_id || !image.jobs.is::<JobsInFlight<R>>() {
            *image = JobsImage {
                type_id,
                name: core::any::type_name::<R>(),
                latency: self.jobs.latency(),
                len: 0,
                jobs: Box::new(JobsInFlight::<R>::new()),
            };
        }
        let jobs = image
            .jobs
            .downcast_mut::<JobsInFlight<R>>()
            .expect("checked above");
        // The registry collects every tick at its tick number and closes each tick it opens:
        // between ticks the current tick is never collected and nothing due before it is
        // pending.
        self.jobs
            .capture_into(now, jobs)
            .expect("a registry's schedulers are captured between ticks");
        image.latency = self.jobs.latency();
        image.len = jobs.len();
    }

    fn check_restore(&self, image: &JobsImage) -> Result<(), DeadlineError> {
        self.jobs.check_restore(Self::captured(image))
    }

    fn restore(
        &mut self,
        pool: &ThreadPool,
        tick: u64,
        image: Option<&JobsImage>,
    ) -> Result<usize, DeadlineError> {
        match image {
            Some(image) => self.jobs.restore(pool, Self::captured(image)),
            None => self.jobs.restart(pool, tick),
        }
    }

    #[cfg(feature = "persist")]
    fn pending(&self) -> usize {
        self.jobs.pending()
    }

    #[cfg(feature = "persist")]
    fn result_type(&self) -> &'static str {
        core::any::type_name::<R>()
    }

    fn result_type_id(&self) -> TypeId {
        TypeId::of::<R>()
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

type ApplyFn<R> = Box<dyn FnMut(&mut Registry, Delivered<R>) + Send>;

struct Apply<R>(ApplyFn<R>);

impl<R: Send + 'static> ErasedApply for Apply<R> {
    fn apply(&mut self, registry: &mut Registry, index: usize) -> Option<Payload> {
        let ready = core::mem::take(&mut registry.typed_mut::<R>(index).ready);
        let mut first_panic = None;
        for done in ready {
            let f = &mut self.0;
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| f(registry, done))) {
                keep_first(&mut first_panic, payload);
            }
        }
        first_panic
    }
}

impl Registry {
    /// Registers deadline jobs with result type `R` and latency `latency` ticks (K): a job
    /// requested with [`request_job`](Registry::request_job) at tick T is handed to `apply` at
    /// the start of tick T + K, before any system runs, in request order; if it is not finished
    /// then, the tick waits while this thread runs the pool's queued tasks (the stall, the late
    /// job and the tasks helped are recorded in [`ProfileReport::time`](crate::ProfileReport)).
    /// A job that panicked is delivered as `Err(JobPanic)` in its place. K never adapts to the
    /// machine's speed.
    ///
    /// `R: Clone` so that a snapshot can share a job in flight: a [`Snapshot`](crate::Snapshot)
    /// holds every job in flight when it is taken (without waiting for it), and the registry
    /// that delivers such a job while a snapshot still holds it delivers a copy of its result;
    /// see [`restore`](Registry::restore). (Wrap a result that is costly to copy in an `Arc`.)
    /// A copy whose `Clone` panics is delivered as `Err(JobPanic)` in its place, and the
    /// tick's other deliveries are made. Dropping the registry (or the last snapshot holding
    /// a job) drops each result in flight once; a panic of its `Drop` is caught there and not
    /// re-raised.
    ///
    /// Result types are collected in the order they were registered. If an `apply` call
    /// panics, every other delivery of the tick is still applied (each exactly once, at its
    /// tick), then the first panic is re-raised from [`update`](Registry::update) before any
    /// system of the tick runs.
    ///
    /// After [`settle_jobs`](Registry::settle_jobs), registering still succeeds, but the new
    /// result type is settled from the start: its [`request_job`](Registry::request_job) calls
    /// are refused like every other type's.
    ///
    /// # Errors
    ///
    /// [`DeadlineError::ZeroLatency`] if `latency` is 0.
    ///
    /// # Panics
    ///
    /// If deadline jobs with result type `R` are already registered.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    /// use freyr::time::deadline::Delivered;
    ///
    /// struct Score(u64);
    ///
    /// let mut registry = Registry::with_workers(2);
    /// let e = registry.spawn((Score(0),));
    /// registry
    ///     .add_deadline_jobs(2, move |r: &mut Registry, done: Delivered<u64>| {
    ///         assert_eq!(r.tick(), done.ticket.due());
    ///         r.get_mut::<Score>(e).unwrap().0 = done.result.unwrap();
    ///     })
    ///     .unwrap();
    /// registry.request_job(vec![1u64, 2, 3], |v: Vec<u64>| v.iter().sum::<u64>()).unwrap();
    /// registry.update(0.1); // tick 0
    /// registry.update(0.1); // tick 1
    /// assert_eq!(registry.get::<Score>(e).unwrap().0, 0);
    /// registry.update(0.1); // tick 2 = 0 + K: applied before its systems
    /// assert_eq!(registry.get::<Score>(e).unwrap().0, 6);
    /// ```
    pub fn add_deadline_jobs<R: Clone + Send + 'static>(
        &mut self,
        latency: u64,
        apply: impl FnMut(&mut Registry, Delivered<R>) + Send + 'static,
    ) -> Result<(), DeadlineError> {
        let mut jobs = DeadlineScheduler::<R>::new(latency)?;
        let deadlines = &mut self.time.deadlines;
        if deadlines.settled {
            // Nothing is pending, so settling cannot fail or panic; it only refuses requests.
            jobs.settle(self.sync.pool())
                .expect("an empty scheduler settles on any pool");
        }
        assert!(
            !deadlines.index.contains_key(&TypeId::of::<R>()),
            "freyr: deadline jobs with result type {} are already registered; one scheduler \
             per result type (wrap the result in a new type for a second latency)",
            core::any::type_name::<R>()
        );
        deadlines
            .index
            .insert(TypeId::of::<R>(), deadlines.schedulers.len());
        deadlines.schedulers.push(Box::new(Typed {
            jobs,
            ready: Vec::new(),
        }));
        deadlines.appliers.push(Box::new(Apply(Box::new(apply))));
        Ok(())
    }

    /// Requests `job(inputs)` at the current [`tick`](Registry::tick) T, to be applied at
    /// T + K by the callback registered for `R`. `inputs` is moved in (an owned snapshot: the
    /// `'static` bound keeps references into the live world out); the job runs on the
    /// registry's pool.
    ///
    /// # Errors
    ///
    /// [`DeadlineError::Settled`] after [`settle_jobs`](Registry::settle_jobs).
    ///
    /// # Panics
    ///
    /// If no deadline jobs with result type `R` are registered, or from inside a query callback.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    /// let mut registry = Registry::with_workers(2);
    /// registry.add_deadline_jobs(3, |_: &mut Registry, _: freyr::time::deadline::Delivered<u8>| {}).unwrap();
    /// registry.update(0.1);
    /// let ticket = registry.request_job((), |()| 7u8).unwrap();
    /// assert_eq!((ticket.requested_at(), ticket.due()), (1, 4));
    /// ```
    pub fn request_job<R, I, F>(&mut self, inputs: I, job: F) -> Result<JobTicket, DeadlineError>
    where
        R: Send + 'static,
        I: Send + 'static,
        F: FnOnce(I) -> R + Send + 'static,
    {
        self.guard("Registry::request_job");
        let index = self.scheduler_index::<R>();
        let now = self.time.tick;
        let pool = self.sync.pool();
        let typed = Self::downcast_mut::<R>(&mut self.time.deadlines.schedulers[index]);
        let ticket = typed.jobs.request(pool, now, inputs, job)?;
        self.time.stats.deadlines.requested += 1;
        Ok(ticket)
    }

    /// Where the job `ticket` of result type `R` stands.
    ///
    /// # Errors
    ///
    /// [`DeadlineError::ForeignTicket`] if the ticket was issued by another registry (or another
    /// scheduler).
    ///
    /// # Panics
    ///
    /// If no deadline jobs with result type `R` are registered.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    /// use freyr::time::deadline::{DeadlineError, Delivered, JobStatus};
    /// let mut a = Registry::with_workers(1);
    /// let mut b = Registry::with_workers(1);
    /// for r in [&mut a, &mut b] {
    ///     r.add_deadline_jobs(1, |_: &mut Registry, _: Delivered<u8>| {}).unwrap();
    /// }
    /// let ticket = a.request_job((), |()| 1u8).unwrap();
    /// assert_eq!(a.job_status::<u8>(&ticket), Ok(JobStatus::Finished));
    /// assert!(matches!(b.job_status::<u8>(&ticket), Err(DeadlineError::ForeignTicket { .. })));
    /// ```
    pub fn job_status<R: Send + 'static>(
        &self,
        ticket: &JobTicket,
    ) -> Result<JobStatus, DeadlineError> {
        let index = self.scheduler_index::<R>();
        let typed = self.time.deadlines.schedulers[index]
            .as_any()
            .downcast_ref::<Typed<R>>()
            .expect("scheduler stored under its own result type");
        typed.jobs.status(ticket)
    }

    /// Shutdown of the deadline jobs: waits (helping the pool) for every job in flight,
    /// discards their results, and refuses later requests with [`DeadlineError::Settled`], for
    /// every result type: those registered before and those registered after (see
    /// [`add_deadline_jobs`](Registry::add_deadline_jobs)). Returns how many were discarded.
    /// Called from an apply callback, it also discards (and counts) the deliveries of the
    /// tick that later result types were about to apply.
    ///
    /// The results are dropped one at a time, each behind its own panic guard, so a result
    /// whose `Drop` panics neither stops the others from being dropped nor aborts the process.
    ///
    /// # Panics
    ///
    /// Re-raises the first panic of a result's `Drop` once every result of every type was
    /// dropped (each exactly once) and every type is settled; the count is then not returned.
    /// From inside a query callback.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    /// use freyr::time::deadline::{DeadlineError, Delivered};
    /// let mut registry = Registry::with_workers(2);
    /// registry.add_deadline_jobs(2, |_: &mut Registry, _: Delivered<u8>| {}).unwrap();
    /// registry.request_job((), |()| 1u8).unwrap();
    /// assert_eq!(registry.settle_jobs(), 1);
    /// assert_eq!(registry.request_job((), |()| 2u8).unwrap_err(), DeadlineError::Settled);
    /// // A type registered after the shutdown is refused too.
    /// registry.add_deadline_jobs(1, |_: &mut Registry, _: Delivered<u16>| {}).unwrap();
    /// assert_eq!(registry.request_job((), |()| 3u16).unwrap_err(), DeadlineError::Settled);
    /// ```
    pub fn settle_jobs(&mut self) -> usize {
        self.guard("Registry::settle_jobs");
        let pool = self.sync.pool();
        self.time.deadlines.settled = true;
        let mut discarded = 0;
        let mut first_panic = None;
        for scheduler in &mut self.time.deadlines.schedulers {
            match panic::catch_unwind(AssertUnwindSafe(|| scheduler.settle(pool))) {
                Ok(settled) => {
                    discarded +=
                        settled.expect("a registry's schedulers only ever see its own pool");
                }
                Err(payload) => keep_first(&mut first_panic, payload),
            }
        }
        if let Some(payload) = first_panic {
            panic::resume_unwind(payload);
        }
        discarded
    }

    /// The tick-start hook: collects every scheduler at the current tick (helping the pool for
    /// late jobs), then applies the deliveries in registration order, all of them even when a
    /// callback panics (the first panic is re-raised afterwards).
    pub(crate) fn collect_deadlines(&mut self) {
        if self.time.deadlines.schedulers.is_empty() {
            return;
        }
        let now = self.time.tick;
        let pool = self.sync.pool();
        let mut refused = None;
        for scheduler in &mut self.time.deadlines.schedulers {
            // The registry collects every tick, with its own pool, at its own tick number,
            // and a restore or a load puts every scheduler at the restored tick with nothing
            // due before it: a refusal is a broken invariant, reported after the other types
            // were collected.
            match scheduler.collect(pool, now) {
                Ok(report) => self.time.stats.deadlines.add(&report),
                Err(error) => refused = refused.or(Some(error)),
            }
        }
        if let Some(error) = refused {
            panic!("freyr: a deadline collect at tick {now} was refused: {error}");
        }
        let mut appliers = core::mem::take(&mut self.time.deadlines.appliers);
        let mut first_panic = None;
        for (index, applier) in appliers.iter_mut().enumerate() {
            if let Some(payload) = applier.apply(self, index) {
                keep_first(&mut first_panic, payload);
            }
        }
        // Types registered while applying go after the existing ones, like their schedulers.
        let added = core::mem::replace(&mut self.time.deadlines.appliers, appliers);
        self.time.deadlines.appliers.extend(added);
        if let Some(payload) = first_panic {
            panic::resume_unwind(payload);
        }
    }

    /// How many times this registry was [`restore`](Registry::restore)d. A system that keeps
    /// an [`AsyncPump`](freyr_time::AsyncPump) compares it with the count it saw last and
    /// [`invalidate`](freyr_time::AsyncPump::invalidate)s the pump when it moved: the pump is
    /// not rewindable (its epoch only moves forward), and a result launched before a restore
    /// is then discarded as stale instead of applied to the restored world.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let snapshot = registry.snapshot().unwrap();
    /// registry.restore(&snapshot).unwrap();
    /// assert_eq!(registry.rewinds(), 1);
    /// ```
    #[must_use]
    pub fn rewinds(&self) -> u64 {
        self.time.deadlines.rewinds
    }

    fn scheduler_index<R: 'static>(&self) -> usize {
        match self.time.deadlines.index.get(&TypeId::of::<R>()) {
            Some(&index) => index,
            None => panic!(
                "freyr: no deadline jobs with result type {} are registered; call \
                 Registry::add_deadline_jobs::<{0}>(latency, apply) first",
                core::any::type_name::<R>()
            ),
        }
    }

    fn typed_mut<R: Send + 'static>(&mut self, index: usize) -> &mut Typed<R> {
        Self::downcast_mut::<R>(&mut self.time.deadlines.schedulers[index])
    }

    fn downcast_mut<R: Send + 'static>(scheduler: &mut Box<dyn ErasedScheduler>) -> &mut Typed<R> {
        scheduler
            .as_any_mut()
            .downcast_mut::<Typed<R>>()
            .expect("scheduler stored under its own result type")
    }
}
