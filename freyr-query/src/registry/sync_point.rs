//! Sync points: retiring launches, applying their commands in (launch, chunk, row, record)
//! order, destroying queued entities, and re-raising the first panic.

use core::any::Any;
use std::panic;

use freyr_core::NoSuchEntity;

use crate::launch::inflight::Retired;

use super::Registry;

impl Registry {
    /// The explicit sync point: waits for all launched work, applies every recorded command in
    /// (launch, chunk, row, record) order, then destroys the entities queued by
    /// [`destroy_entity`](Registry::destroy_entity).
    ///
    /// # Panics
    ///
    /// Re-raises the first panic of a callback of the retired launches (launch order), after
    /// applying the commands of every chunk that did not panic. The registry stays usable.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct Seed;
    /// struct Tree;
    ///
    /// let mut registry = Registry::with_workers(2);
    /// registry.spawn((Seed,));
    /// registry.query::<&Seed>().each_async_with(|e, _, ctx| {
    ///     ctx.commands().remove::<(Seed,)>(e);
    ///     ctx.commands().insert(e, (Tree,));
    /// });
    /// registry.execute_tasks();
    /// assert_eq!(registry.query::<&Tree>().count(), 1);
    /// assert_eq!(registry.query::<&Seed>().count(), 0);
    /// ```
    pub fn execute_tasks(&mut self) {
        self.guard("Registry::execute_tasks");
        if let Some(panic) = self.sync_point() {
            panic::resume_unwind(panic);
        }
    }

    /// Retires everything, applies deferred changes; returns the first callback panic.
    pub(super) fn sync_point(&mut self) -> Option<Box<dyn Any + Send>> {
        let traced = self
            .traced_tick()
            .map(|tick| (tick, std::time::Instant::now()));
        let retired = self.sync.retire_all();
        let mut first_panic = None;
        for r in retired {
            if let Some(p) = self.absorb(r) {
                first_panic.get_or_insert(p);
            }
        }
        self.apply_deferred();
        self.profiler.record_sync_point();
        if let Some((tick, start)) = traced {
            self.trace_sync(tick, start);
        }
        first_panic
    }

    /// Books a retired launch: profile, pending commands; returns its panic.
    fn absorb(&mut self, retired: Retired) -> Option<Box<dyn Any + Send>> {
        if let Some(label) = retired.label {
            self.profiler
                .record_label(label, retired.tasks, retired.wall);
        }
        if !retired.commands.is_empty() {
            self.pending.push((retired.seq, retired.commands));
        }
        if retired.panic.is_some() {
            self.profiler.record_panic();
        }
        if !retired.trace.is_empty() {
            self.trace_launch(retired.label, retired.seq, &retired.trace);
        }
        retired.panic
    }

    /// Retires one launch (for [`Reduction::join`](crate::Reduction::join)); re-raises its panic.
    pub(crate) fn retire_launch(&mut self, seq: u64) {
        self.guard("Reduction::join");
        if let Some(retired) = self.sync.retire_one(seq)
            && let Some(panic) = self.absorb(retired)
        {
            panic::resume_unwind(panic);
        }
    }

    /// Applies pending commands in launch order, then queued destructions.
    fn apply_deferred(&mut self) {
        debug_assert_eq!(self.sync.in_flight(), 0);
        let mut pending = core::mem::take(&mut self.pending);
        pending.sort_by_key(|(seq, _)| *seq);
        let world = self.sync.write(&self.profiler);
        let (mut applied, mut stale) = (0, 0);
        for (_, buffers) in &mut pending {
            for buffer in buffers.iter_mut() {
                let report = buffer.apply(world);
                applied += report.applied;
                stale += report.skipped_stale + report.skipped_missing;
            }
        }
        self.profiler.record_commands(applied, stale);
        let (mut destroyed, mut stale) = (0, 0);
        for entity in self.destroy_queue.drain(..) {
            match world.despawn(entity) {
                Ok(()) => destroyed += 1,
                Err(NoSuchEntity) => stale += 1,
            }
        }
        self.profiler.record_destroyed(destroyed, stale);
    }
}
