//! Async-pump results addressed to entities, drained inside the owning system's update.
//!
//! An [`AsyncPump`] lives in the system that launches its work (a field of the system), so only
//! that system can drain it. [`Registry::drain_pump`] is the drain a system calls from its own
//! `update`: it checks each result's entity + generation handle against the world, so a result
//! for a despawned entity is discarded, never applied to the slot's next occupant.

use core::cell::RefCell;

use freyr_core::Entity;
use freyr_sched::{AsyncPump, Discard};

use super::Registry;

impl Registry {
    /// Drains `pump` from inside a system's update: every settled result, in launch order, goes
    /// to `apply(registry, entity, value)` if its entity (a generation-checked handle) is still
    /// alive, else to `discard(registry, entity, Discard::TargetGone(value))`; rejected,
    /// panicked, abandoned and stale results go to `discard` with their reason. Stops at the
    /// first launch still in flight; never blocks. Returns how many launches it retired.
    ///
    /// # Panics
    ///
    /// If called outside a system's update (results are applied in their owner's slot of the
    /// tick and nowhere else), or from inside a query callback.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Entity;
    /// use freyr::{Phase, Registry, System};
    /// use freyr::AsyncPump;
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
        let outcomes = RefCell::new(Vec::new());
        let retired = pump.drain(
            |&entity| self.contains(entity),
            |entity, value| outcomes.borrow_mut().push((entity, Ok(value))),
            |entity, why| outcomes.borrow_mut().push((entity, Err(why))),
        );
        for (entity, outcome) in outcomes.into_inner() {
            match outcome {
                // Checked again: an earlier apply may have despawned it.
                Ok(value) if self.contains(entity) => apply(self, entity, value),
                Ok(value) => discard(self, entity, Discard::TargetGone(value)),
                Err(why) => discard(self, entity, why),
            }
        }
        retired
    }
}
