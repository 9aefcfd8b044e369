//! Deadline jobs across a snapshot and its restore, and across a load: a snapshot holds every
//! job in flight (requested and not delivered) and the next job id of every result type, so a
//! restore (backward, forward, or into another registry) delivers from the snapshot's tick on
//! exactly what the snapshot's timeline delivered; a save holds no job, so a load starts with
//! none. Either is refused up front, with a typed error, when it could not be exact.

use std::panic::{self, AssertUnwindSafe};

use freyr_persist::snapshot::{JobsImage, JobsRefusal, SnapshotError};
use freyr_sched::keep_first;

use super::{Payload, Registry};

impl Registry {
    /// Captures every result type's jobs in flight at the start of the current tick into
    /// `images`, one per registered type in registration order, reusing their buffers.
    pub(crate) fn capture_jobs(&self, images: &mut Vec<JobsImage>) {
        let schedulers = &self.time.deadlines.schedulers;
        images.truncate(schedulers.len());
        while images.len() < schedulers.len() {
            images.push(JobsImage::empty());
        }
        for (scheduler, image) in schedulers.iter().zip(images.iter_mut()) {
            scheduler.capture_into(self.time.tick, image);
        }
    }

    /// Refuses, before anything changes, a restore (`images`: the snapshot's jobs) or a load
    /// (no jobs) to `tick` that could not deliver what its timeline would have: `tick` is
    /// before a confirmed tick, or the snapshot holds jobs of a result type that is not
    /// registered here, registered with another latency, or settled.
    pub(crate) fn check_restore_jobs(
        &self,
        tick: u64,
        images: &[JobsImage],
    ) -> Result<(), SnapshotError> {
        let deadlines = &self.time.deadlines;
        if let Some(confirmed) = deadlines.confirmed
            && tick < confirmed
        {
            return Err(SnapshotError::BeforeConfirmed { tick, confirmed });
        }
        for image in images.iter().filter(|image| image.len > 0) {
            let refused = |reason| SnapshotError::JobsNotRestorable {
                result_type: image.name,
                jobs: image.len,
                reason,
            };
            let Some(&index) = deadlines.index.get(&image.type_id) else {
                return Err(refused(JobsRefusal::NotRegistered));
            };
            deadlines.schedulers[index]
                .check_restore(image)
                .map_err(|error| refused(JobsRefusal::Refused(error)))?;
        }
        Ok(())
    }

    /// The deadline part of a restore (`images`: the snapshot's jobs) or a load (`None`) to
    /// `tick`, once [`check_restore_jobs`](Registry::check_restore_jobs) accepted it: every
    /// result type discards its pending jobs and takes the snapshot's jobs of its type (none
    /// for a load, or a type the snapshot has no record of: its job ids then go on from its
    /// own count). Returns the first panic of a discarded result's `Drop`, caught so that every
    /// type is restored first; each discarded result is dropped exactly once.
    pub(crate) fn restore_jobs(
        &mut self,
        tick: u64,
        images: Option<&[JobsImage]>,
    ) -> Option<Payload> {
        let pool = self.sync.pool();
        let deadlines = &mut self.time.deadlines;
        deadlines.rewinds += 1;
        let mut first_panic = None;
        // In registration order, like every other pass over the schedulers.
        for scheduler in &mut deadlines.schedulers {
            let type_id = scheduler.result_type_id();
            let image = images.and_then(|images| images.iter().find(|i| i.type_id == type_id));
            match panic::catch_unwind(AssertUnwindSafe(|| scheduler.restore(pool, tick, image))) {
                Ok(restored) => {
                    if let Err(error) = restored {
                        panic!(
                            "freyr: the deadline jobs cannot go to tick {tick} after they were \
                             checked: {error}"
                        );
                    }
                }
                Err(payload) => keep_first(&mut first_panic, payload),
            }
        }
        first_panic
    }

    /// The deadline jobs in flight now, per result type (those with any), for a save's
    /// refusal.
    #[cfg(feature = "persist")]
    pub(crate) fn jobs_in_flight(&self) -> Vec<(&'static str, usize)> {
        self.time
            .deadlines
            .schedulers
            .iter()
            .filter(|scheduler| scheduler.pending() > 0)
            .map(|scheduler| (scheduler.result_type(), scheduler.pending()))
            .collect()
    }

    /// Confirms the ticks before `tick`: from now on a [`restore`](Registry::restore) or a
    /// [`load_into`](Registry::load_into) to a tick before it is refused with
    /// [`SnapshotError::BeforeConfirmed`] (a load with
    /// [`LoadError::Snapshot`](crate::persist::LoadError::Snapshot)), changing nothing. A
    /// rollback loop calls it as the inputs of the ticks before `tick` become final: a
    /// snapshot from before then belongs to a timeline that the final inputs replaced, and
    /// restoring it by mistake is caught instead of silently diverging. Confirming never
    /// lowers the confirmed tick.
    ///
    /// Nothing else depends on it: a snapshot holds the deadline jobs it needs (see
    /// [`restore`](Registry::restore)), so a registry that never confirms keeps nothing extra.
    ///
    /// # Panics
    ///
    /// From inside a query callback.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    /// use freyr::snapshot::SnapshotError;
    ///
    /// let mut registry = Registry::with_workers(2);
    /// let old = registry.snapshot().unwrap(); // tick 0
    /// registry.update(0.1);
    /// registry.update(0.1);
    /// registry.confirm_tick(2);
    /// assert_eq!(
    ///     registry.restore(&old),
    ///     Err(SnapshotError::BeforeConfirmed { tick: 0, confirmed: 2 })
    /// );
    /// assert_eq!(registry.tick(), 2, "nothing changed");
    /// ```
    pub fn confirm_tick(&mut self, tick: u64) {
        self.guard("Registry::confirm_tick");
        let confirmed = &mut self.time.deadlines.confirmed;
        *confirmed = Some(confirmed.map_or(tick, |c| c.max(tick)));
    }
}
