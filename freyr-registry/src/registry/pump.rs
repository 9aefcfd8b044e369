//! Async-pump results addressed to entities, drained inside the owning system's update.
//!
//! An [`AsyncPump`] lives in the system that launches its work (a field of the system), so only
//! that system can drain it. [`Registry::drain_pump`] is the drain a system calls from its own
//! `update`: it checks each result's entity + generation handle against the world, so a result
//! for a despawned entity is discarded, never applied to the slot's next occupant.

use std::panic::{self, AssertUnwindSafe};

use freyr_core::Entity;
use freyr_time::{AsyncPump, Discard};

use freyr_sched::keep_first;

use super::Registry;

impl Registry {
    /// Drains `pump` from inside a system's update: every settled result, in launch order, goes
    /// to `apply(registry, entity, value)` if its entity (a generation-checked handle) is still
    /// alive, else to `discard(registry, entity, Discard::TargetGone(value))`; rejected,
    /// panicked, abandoned and stale results go to `discard` with their reason. Each result's
    /// entity is checked right before it is handled, so an earlier `apply` that despawns it
    /// sends it to `discard`, and the pump's [`stats`](AsyncPump::stats) count it discarded,
    /// not applied. Stops at the first launch still in flight; never blocks. Returns how many
    /// launches it retired.
    ///
    /// The registry cannot tell which system owns `pump`: keeping the pump in its owning system
    /// (a field of that system) is what makes that system the only one that drains it.
    ///
    /// # Panics
    ///
    /// - If called outside any system's update (results are applied inside a system's slot of
    ///   the tick and nowhere else), or from inside a query callback.
    /// - Re-raises the first panic of `apply` or `discard`, once every settled result was
    ///   applied or discarded (each exactly once): a panicking call does not lose the results
    ///   behind it. A later panic is dropped with [`drop_payload`](freyr_sched::drop_payload).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Entity;
    /// use freyr::{Phase, Registry, System};
    /// use freyr::time::pump::AsyncPump;
    ///
    /// struct Label(String);
    ///
    /// /// Formats labels off the tick; applies them a tick or more later, in launch order.
    /// struct Labeler {
    ///     pump: AsyncPump<String, Entity>,
    ///     target: Entity,
    /// }
    /// impl System for Labeler {
    ///     fn update(&mut self, r: &mut Registry, _dt: f32) {
    ///         r.drain_pump(&mut self.pump, |r, e, text| r.get_mut::<Label>(e).unwrap().0 = text,
    ///             |_, _, why| panic!("{why:?}"));
    ///         if self.pump.is_ready() {
    ///             let tick = r.tick();
    ///             self.pump
    ///                 .launch(r.pool(), self.target, tick, |t: u64| Ok(format!("tick {t}")))
    ///                 .unwrap();
    ///         }
    ///     }
    /// }
    ///
    /// let mut registry = Registry::with_workers(1); // inline: work is done at launch
    /// let target = registry.spawn((Label(String::new()),));
    /// registry.add_system(Phase::Update, Labeler { pump: AsyncPump::new(), target });
    /// registry.update(0.1); // launches "tick 0"
    /// assert_eq!(registry.get::<Label>(target).unwrap().0, "");
    /// registry.update(0.1); // drains it, launches "tick 1"
    /// assert_eq!(registry.get::<Label>(target).unwrap().0, "tick 0");
    /// ```
    pub fn drain_pump<R, E>(
        &mut self,
        pump: &mut AsyncPump<R, Entity, E>,
        mut apply: impl FnMut(&mut Registry, Entity, R),
        mut discard: impl FnMut(&mut Registry, Entity, Discard<R, E>),
    ) -> usize
    where
        R: Send + 'static,
        E: Send + 'static,
    {
        self.guard("Registry::drain_pump");
        assert!(
            self.in_update && self.phase.is_some(),
            "freyr: Registry::drain_pump called outside a system's update; async results are \
             applied only in their owning system's update (keep the pump in that system and \
             drain it there)"
        );
        let mut retired = 0;
        let mut first_panic = None;
        // One result at a time: its entity is tested right before it is handled, after every
        // earlier result was applied (an earlier apply may have despawned it).
        while let Some((entity, verdict)) = pump.drain_one(|&entity| self.contains(entity)) {
            retired += 1;
            let call = panic::catch_unwind(AssertUnwindSafe(|| match verdict {
                Ok(value) => apply(self, entity, value),
                Err(why) => discard(self, entity, why),
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
}
