//! The profiler and the world hash, read through the registry.

use freyr_persist::hash::{HashComponents, hash_world};
use freyr_profile::profiler::{ProfileReport, Profiler};
use freyr_query::access::Access;
use freyr_query::launch::inflight::OpAccess;

use super::Registry;

impl Registry {
    /// A snapshot of the profiler (since creation or the last
    /// [`reset_profile`](Registry::reset_profile)).
    pub fn profile(&self) -> ProfileReport {
        let mut report = self.profiler.report(&self.sync.pool().metrics());
        report.time = self.time.stats;
        report
    }

    /// Clears the profiler's counters. With the tick profiler on, a tick in progress is
    /// recorded from the reset on (its record counts the work after the reset only), and the
    /// next record's dropped ticks are those counted after the reset.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.execute_tasks();
    /// assert_eq!(registry.profile().sync_points, 1);
    /// registry.reset_profile();
    /// assert_eq!(registry.profile().sync_points, 0);
    /// ```
    pub fn reset_profile(&mut self) {
        self.profiler = Profiler::new(self.sync.pool().metrics());
        self.time.stats = freyr_profile::profiler::TimeStats::default();
        if self.tick_profile.is_some() {
            let base = self.profile();
            if let Some(profile) = &mut self.tick_profile {
                profile.rebase(base);
            }
        }
    }

    /// Number of implicit sync points so far (operations that waited for conflicting work).
    pub fn implicit_syncs(&self) -> u64 {
        self.profiler.implicit_syncs()
    }

    /// A hash of the whole world: every live entity in id order with the presence and value of
    /// each component type in `C` (a tuple of [`StableHash`](crate::StableHash) components).
    /// Independent of storage layout, worker count and run; equal worlds hash equal. Waits for
    /// in-flight work that writes a hashed type.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Registry, StableHash};
    /// use freyr::hash::StableHasher;
    ///
    /// struct Pos(f32);
    /// impl StableHash for Pos {
    ///     fn stable_hash(&self, h: &mut StableHasher) {
    ///         self.0.stable_hash(h);
    ///     }
    /// }
    ///
    /// let build = |x| {
    ///     let mut registry = Registry::with_workers(1);
    ///     registry.spawn((Pos(x),));
    ///     registry.world_hash::<(Pos,)>()
    /// };
    /// assert_eq!(build(1.0), build(1.0));
    /// assert_ne!(build(1.0), build(2.0));
    /// ```
    pub fn world_hash<C: HashComponents>(&self) -> u64 {
        self.guard("Registry::world_hash");
        let mut access = Access::new();
        // SAFETY: `HashComponents::access` resolves component ids only; its contract (a sealed trait
        // implemented in freyr-persist for component tuples) forbids reading component values.
        unsafe { self.sync.resolve_access(C::access, &mut access) };
        hash_world::<C>(
            self.sync
                .read(&OpAccess::Components(&access), &self.profiler),
        )
    }
}
