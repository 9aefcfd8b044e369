//! Sync points: retiring launches, applying their commands in (launch, chunk, row, record)
//! order, destroying queued entities, and re-raising the first panic.

use core::any::Any;
use std::panic::{self, AssertUnwindSafe};

use freyr_core::{AppliedCommand, Entity, NoSuchEntity};

use freyr_query::launch::inflight::Retired;
use freyr_sched::keep_first;

use super::Registry;

impl Registry {
    /// The explicit sync point: waits for all launched work, applies every recorded command in
    /// (launch, chunk, row, record) order, then destroys the entities queued by
    /// [`destroy_entity`](Registry::destroy_entity), then runs the component
    /// [hooks](crate::hooks) those operations triggered (and applies their commands), then
    /// stores the sent [events](crate::Events) in the same order.
    ///
    /// # Panics
    ///
    /// Re-raises the first panic of user code — a callback or a reduction's `combine` of the
    /// retired launches (launch order), then a component's `Drop` while commands apply or
    /// entities are destroyed, or a command that would pass one of the world's [capacity
    /// limits](freyr_core::World#capacity-limits) — after applying the commands of every task
    /// that did not panic and
    /// running every queued destruction. The registry stays usable. See
    /// [the panic contract](Registry#panics-in-user-code).
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
    #[doc(alias = "apply_deferred")]
    #[doc(alias = "flush")]
    #[doc(alias = "maintain")]
    pub fn execute_tasks(&mut self) {
        self.guard("Registry::execute_tasks");
        if let Some(panic) = self.sync_point() {
            panic::resume_unwind(panic);
        }
    }

    /// Retires everything, applies deferred changes; returns the first panic (see the panic
    /// contract on [`Registry`]): of the retired launches' callbacks and reductions in launch
    /// order, then of the commands in the order they apply, then of the destructions. Later
    /// panics are dropped without letting their payload's `Drop` unwind.
    pub(super) fn sync_point(&mut self) -> Option<Box<dyn Any + Send>> {
        #[cfg(feature = "tracing")]
        let _sync = freyr_profile::spans::sync().entered();
        let traced = self
            .traced_tick()
            .map(|tick| (tick, std::time::Instant::now()));
        let retired = self.sync.retire_all();
        let mut first_panic = None;
        for r in retired {
            if let Some(p) = self.absorb(r) {
                keep_first(&mut first_panic, p);
            }
        }
        if let Some(p) = self.apply_deferred() {
            keep_first(&mut first_panic, p);
        }
        self.profiler.record_sync_point();
        if let Some((tick, start)) = traced {
            self.trace_sync(tick, start);
        }
        first_panic
    }

    /// Whether a sync point now would have nothing to wait for and nothing to apply.
    pub(super) fn sync_is_quiet(&self) -> bool {
        self.sync.in_flight() == 0 && self.pending.is_empty() && self.destroy_queue.is_empty()
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

    /// Applies pending commands in launch order, then queued destructions, then the hooks they
    /// triggered (in that order), then stores the events. A panic (a component's `Drop`, a hook)
    /// stops none of it: everything remaining still runs, and the first panic is returned.
    fn apply_deferred(&mut self) -> Option<Box<dyn Any + Send>> {
        debug_assert_eq!(self.sync.in_flight(), 0);
        if self.sync_is_quiet() {
            // Nothing to apply, so the world is not borrowed exclusively: its layout stays
            // current, and the queries' cached runs stay valid into the next tick.
            return None;
        }
        let mut pending = core::mem::take(&mut self.pending);
        pending.sort_by_key(|(seq, _)| *seq);
        let world = self.sync.write(&self.profiler);
        let doomed = super::hierarchy::doomed_by_commands(
            world,
            pending
                .iter()
                .flat_map(|(_, b)| b.iter().map(|b| &b.commands)),
        );
        let mut first_panic = None;
        let (mut applied, mut stale) = (0, 0);
        let hooks = &self.hooks;
        let mut log = crate::hooks::HookLog::new();
        // The children recorded hierarchy edits attached, with the parent each got: a parent
        // despawned in this sync point takes them too (see `expand_destructions`).
        let mut attached: Vec<(Entity, Entity)> = Vec::new();
        let mut ops = 0;
        let mut observe_commands = |w: &freyr_core::World, a: &AppliedCommand| {
            super::hierarchy::note_attached(&mut attached, w, a);
            if !hooks.is_empty() {
                hooks.observe(&mut log, w, a);
            }
        };
        for (_, buffers) in &mut pending {
            for buffer in buffers.iter_mut() {
                ops += buffer.commands.ops();
                let (report, panic) = if hooks.is_empty() && buffer.commands.ops() == 0 {
                    buffer.commands.try_apply(world)
                } else {
                    buffer
                        .commands
                        .try_apply_observed(world, &mut observe_commands)
                };
                applied += report.applied;
                stale += report.skipped_stale + report.skipped_missing;
                if let Some(p) = panic {
                    keep_first(&mut first_panic, p);
                }
            }
        }
        self.profiler.record_commands(applied, stale);
        let mut observe = |w: &freyr_core::World, a: &AppliedCommand| hooks.observe(&mut log, w, a);
        let (mut destroyed, mut stale) = (0, 0);
        let mut queue = core::mem::take(&mut self.destroy_queue);
        if !doomed.is_empty()
            || !attached.is_empty()
            || (!queue.is_empty() && world.component_id::<super::hierarchy::ChildOf>().is_some())
        {
            queue = super::hierarchy::expand_destructions(world, doomed, attached, queue);
        }
        for entity in queue.drain(..) {
            let before = world
                .entity_location(entity)
                .filter(|_| !hooks.is_empty())
                .map(|l| l.0);
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| world.despawn(entity)));
            if let Some(before) = before {
                observe(world, &AppliedCommand::Despawn { entity, before });
            }
            match outcome {
                Ok(Ok(())) => destroyed += 1,
                Ok(Err(NoSuchEntity(_))) => stale += 1,
                // The entity is gone (a panicking `Drop` does not keep it alive).
                Err(p) => {
                    destroyed += 1;
                    keep_first(&mut first_panic, p);
                }
            }
        }
        self.destroy_queue = queue;
        self.profiler.record_destroyed(destroyed, stale);
        let hooks_ran = !log.is_empty();
        if hooks_ran
            && let Some(p) =
                self.hooks
                    .run(&mut log, world, super::hierarchy::apply_keeping_relation)
        {
            keep_first(&mut first_panic, p);
        }
        if let Some(p) = self.store_pending_events(&mut pending) {
            keep_first(&mut first_panic, p);
        }
        if ops > 0 || hooks_ran {
            self.register_relation_if_used();
        }
        first_panic
    }
}
