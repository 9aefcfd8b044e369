//! Deadline jobs across a rollback: delivered results kept until their tick is confirmed,
//! re-delivered at their due tick after a [`rewind`](DeadlineScheduler::rewind), and jobs
//! requested at or after the rewound tick discarded.

use freyr_sched::ThreadPool;

use super::{DeadlineError, DeadlineScheduler, DeadlineStats, Delivered, JobTicket, Outcome};
use crate::pool_job::drop_quietly;

impl<R: Clone + Send + 'static> DeadlineScheduler<R> {
    /// Keeps a copy (`Clone`) of every result due at or after `tick` once it is delivered, so
    /// that a [`rewind`](Self::rewind) to a tick at or after `tick` can deliver it again. Call
    /// it with the tick of every snapshot you may go back to (the lowest one counts); results
    /// stay kept until [`confirm`](Self::confirm) drops them. Only deliveries after the call
    /// are copied: call it before the tick `tick` is collected (a snapshot of tick `tick`,
    /// taken between ticks, is).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(2);
    /// let mut jobs = DeadlineScheduler::new(2).unwrap();
    /// jobs.keep_results_from(0);
    /// jobs.request(&pool, 0, 20u64, |x| x + 1).unwrap();
    /// jobs.collect(&pool, 2, |_| {}).unwrap();
    /// assert_eq!(jobs.kept(), 1);
    /// ```
    pub fn keep_results_from(&mut self, tick: u64) {
        // Deliveries already made (due at or before the collected tick) were not copied: the
        // copies cover only the ticks after it.
        let covered = self
            .collected
            .map_or(tick, |c| tick.max(c.saturating_add(1)));
        self.keep_from = self.keep_from.min(covered);
        self.cloner = Some(Clone::clone);
    }
}

impl<R: Send + 'static> DeadlineScheduler<R> {
    /// Goes back to the start of tick `tick`, as a restore of a snapshot taken there does:
    ///
    /// - a job requested before `tick` and due at or after it is delivered (again) at its due
    ///   tick with the same ticket and the same result: a result already delivered is
    ///   re-delivered from the kept copy (see [`keep_results_from`](Self::keep_results_from)),
    ///   a job still in flight is delivered as before;
    /// - a job requested at or after `tick` is discarded (its result dropped once it finished,
    ///   a job not started yet skips its work), and job ids go back to the first discarded
    ///   one: the re-simulation's own requests get the tickets the first run gave them.
    ///
    /// The next [`collect`](Self::collect) may then be at `tick`. Returns how many jobs were
    /// discarded.
    ///
    /// # Errors
    ///
    /// - [`DeadlineError::ForeignPool`] if `pool` is not the scheduler's pool.
    /// - [`DeadlineError::RewindBeforeConfirmed`] if `tick` is before a tick passed to
    ///   [`confirm`](Self::confirm);
    /// - [`DeadlineError::ResultsNotKept`] if a result the rewind may need to deliver again
    ///   was delivered without a kept copy (results are kept from the lowest tick passed to
    ///   [`keep_results_from`](Self::keep_results_from), for deliveries after the call).
    ///
    /// Nothing changed on an error.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::DeadlineScheduler;
    /// let pool = ThreadPool::new(2);
    /// let mut jobs = DeadlineScheduler::new(2).unwrap();
    /// jobs.keep_results_from(1);
    /// let mut seen = Vec::new();
    /// for tick in 0..4u64 {
    ///     jobs.collect(&pool, tick, |d| seen.push((tick, d.ticket.id(), d.result.unwrap()))).unwrap();
    ///     jobs.request(&pool, tick, tick, |t| t * 10).unwrap();
    /// }
    /// // Back to the start of tick 1: job 0 (requested at 0, due at 2) comes again.
    /// assert_eq!(jobs.rewind(&pool, 1), Ok(3));
    /// jobs.collect(&pool, 1, |_| unreachable!()).unwrap();
    /// assert_eq!(jobs.request(&pool, 1, 1, |t| t * 10).unwrap().id(), 1);
    /// jobs.collect(&pool, 2, |d| seen.push((2, d.ticket.id(), d.result.unwrap()))).unwrap();
    /// assert_eq!(seen, [(2, 0, 0), (3, 1, 10), (2, 0, 0)]);
    /// ```
    pub fn rewind(&mut self, pool: &ThreadPool, tick: u64) -> Result<usize, DeadlineError> {
        if !self.pending.is_empty() {
            self.bind(pool)?;
        }
        self.check_rewind(tick)?;
        let mut first_discarded: Option<u64> = None;
        let mut note = |id: u64| {
            first_discarded = Some(first_discarded.map_or(id, |first| first.min(id)));
        };
        let mut discarded = 0;
        let (keep, drop): (Vec<_>, Vec<_>) = core::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| p.ticket.requested_at < tick);
        self.pending = keep.into();
        for pending in drop {
            note(pending.ticket.id);
            discarded += 1;
            pending.job.cancel();
            pending.job.wait(pool);
            drop_quietly(pending.job.take_result());
            drop_quietly(pending);
        }
        // Kept results are in (due, id) order, and with K fixed that is request order: those
        // requested at or after `tick` are a suffix.
        while self
            .kept
            .back()
            .is_some_and(|(ticket, _)| ticket.requested_at >= tick)
        {
            if let Some((ticket, result)) = self.kept.pop_back() {
                note(ticket.id);
                discarded += 1;
                drop_quietly(result);
            }
        }
        if let Some(first) = first_discarded {
            self.next_job = first;
        }
        self.collected = tick.checked_sub(1);
        Ok(discarded)
    }

    /// Drops the kept results due before `tick`: the ticks before it are confirmed, no rewind
    /// goes back before `tick` any more (a later one is refused). Returns how many were
    /// dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::deadline::{DeadlineError, DeadlineScheduler};
    /// let pool = ThreadPool::new(1);
    /// let mut jobs = DeadlineScheduler::new(1).unwrap();
    /// jobs.keep_results_from(0);
    /// jobs.request(&pool, 0, (), |()| 5u8).unwrap();
    /// jobs.collect(&pool, 1, |_| {}).unwrap();
    /// assert_eq!(jobs.confirm(2), 1);
    /// assert_eq!(jobs.kept(), 0);
    /// assert!(matches!(jobs.rewind(&pool, 1), Err(DeadlineError::RewindBeforeConfirmed { .. })));
    /// ```
    pub fn confirm(&mut self, tick: u64) -> usize {
        let mut dropped = 0;
        while self
            .kept
            .front()
            .is_some_and(|(ticket, _)| ticket.due < tick)
        {
            if let Some((_, result)) = self.kept.pop_front() {
                dropped += 1;
                drop_quietly(result);
            }
        }
        self.confirmed = Some(self.confirmed.map_or(tick, |c| c.max(tick)));
        if self.cloner.is_some() {
            self.keep_from = self.keep_from.max(tick);
        }
        dropped
    }

    /// Delivered results kept for a re-delivery.
    ///
    /// # Examples
    ///
    /// ```
    /// let jobs = freyr::time::deadline::DeadlineScheduler::<u8>::new(1).unwrap();
    /// assert_eq!(jobs.kept(), 0);
    /// ```
    #[must_use]
    pub fn kept(&self) -> usize {
        self.kept.len()
    }

    /// Whether a [`rewind`](Self::rewind) to `tick` would be accepted (the pool aside).
    ///
    /// # Errors
    ///
    /// As [`rewind`](Self::rewind): [`DeadlineError::RewindBeforeConfirmed`],
    /// [`DeadlineError::ResultsNotKept`].
    ///
    /// # Examples
    ///
    /// ```
    /// let mut jobs = freyr::time::deadline::DeadlineScheduler::<u8>::new(1).unwrap();
    /// jobs.confirm(3);
    /// assert!(jobs.check_rewind(3).is_ok());
    /// assert!(jobs.check_rewind(2).is_err());
    /// ```
    pub fn check_rewind(&self, tick: u64) -> Result<(), DeadlineError> {
        if let Some(confirmed) = self.confirmed
            && tick < confirmed
        {
            return Err(DeadlineError::RewindBeforeConfirmed { tick, confirmed });
        }
        // Jobs requested before `tick` and already delivered are due in
        // [tick, min(collected, tick + K - 1)]; every delivery due at or after `keep_from` was
        // kept, so the rewind is refused only if that range starts below `keep_from` and a job
        // was ever delivered (a scheduler does not count its deliveries per tick).
        let Some(collected) = self.collected else {
            return Ok(());
        };
        let last_due = collected.min(tick.saturating_add(self.latency.get() - 1));
        if tick <= last_due && self.keep_from > tick && self.stats.applied > 0 {
            return Err(DeadlineError::ResultsNotKept {
                tick,
                kept_from: self.keep_from,
            });
        }
        Ok(())
    }

    /// Delivers again, from the kept copies, every result due at `now` (only present after a
    /// rewind: forward, a result is kept as it is delivered).
    pub(super) fn redeliver(
        &mut self,
        now: u64,
        report: &mut DeadlineStats,
        apply: &mut impl FnMut(Delivered<R>),
    ) {
        let Some(cloner) = self.cloner else {
            return;
        };
        let start = self.kept.partition_point(|(ticket, _)| ticket.due < now);
        for (ticket, result) in self.kept.iter().skip(start) {
            if ticket.due != now {
                break;
            }
            report.applied += 1;
            report.panicked += u64::from(result.is_err());
            apply(Delivered {
                ticket: *ticket,
                result: cloner(result),
                stall: core::time::Duration::ZERO,
            });
        }
    }

    /// Keeps a copy of a result being delivered, if it is due at or after `keep_from`.
    pub(super) fn keep(&mut self, ticket: JobTicket, result: &Outcome<R>) {
        if let Some(cloner) = self.cloner
            && ticket.due >= self.keep_from
        {
            self.kept.push_back((ticket, cloner(result)));
        }
    }
}
