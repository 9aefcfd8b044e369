//! Snapshot and restore of a whole registry: the types registered for snapshots, the quiet-point
//! checks, and [`Registry::snapshot`] / [`Registry::restore`].

use std::panic::{AssertUnwindSafe, catch_unwind};

use freyr_core::Component;

use freyr_persist::snapshot::{OnPool, ResourceImage, Snapshot, SnapshotError};
use freyr_query::launch::inflight::OpAccess;
use freyr_query::resources::AnyResource;
use freyr_sched::keep_first;

use super::Registry;

impl Registry {
    /// Registers component `T` for snapshots, copied with `Clone` value by value. Touches no
    /// entity and never waits.
    ///
    /// # Panics
    ///
    /// If `T` was excluded with [`exclude_from_snapshot`](Registry::exclude_from_snapshot); if
    /// `T` is [`ChildOf`](crate::hierarchy::ChildOf) or [`Children`](crate::hierarchy::Children)
    /// (use [`register_hierarchy`](Registry::register_hierarchy)).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_snapshot_clone::<String>();
    /// let e = registry.spawn((String::from("x"),));
    /// let snapshot = registry.snapshot().unwrap();
    /// registry.despawn(e).unwrap();
    /// registry.restore(&snapshot).unwrap();
    /// assert_eq!(registry.get::<String>(e).unwrap(), "x");
    /// ```
    pub fn register_snapshot_clone<T: Component + Clone>(&mut self) {
        self.guard("Registry::register_snapshot_clone");
        super::hierarchy::refuse_kept_registration::<T>("snapshots");
        self.snapshot_types.components.register_clone::<T>();
    }

    /// Registers component `T` for snapshots, copied as plain memory: the fast path for a
    /// `Copy` type (the bound is what allows it; a type is never copied bitwise otherwise).
    ///
    /// # Panics
    ///
    /// If `T` was excluded with [`exclude_from_snapshot`](Registry::exclude_from_snapshot); if
    /// `T` is [`ChildOf`](crate::hierarchy::ChildOf) or [`Children`](crate::hierarchy::Children)
    /// (use [`register_hierarchy`](Registry::register_hierarchy)).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_snapshot_copy::<[f32; 4]>();
    /// registry.spawn(([1.0f32; 4],));
    /// assert!(registry.snapshot().is_ok());
    /// ```
    pub fn register_snapshot_copy<T: Component + Copy>(&mut self) {
        self.guard("Registry::register_snapshot_copy");
        super::hierarchy::refuse_kept_registration::<T>("snapshots");
        self.snapshot_types.components.register_copy::<T>();
    }

    /// Marks component `T` as never live at a snapshot point (a marker added and removed
    /// within a tick): it may exist in empty archetypes, but a snapshot of a world in which a
    /// live entity has it is refused ([`SnapshotError::MissingTypes`] names it under
    /// `excluded_live`), since its rows could not be restored whole.
    ///
    /// # Panics
    ///
    /// If `T` was registered for snapshots, or is [`ChildOf`](crate::hierarchy::ChildOf) or
    /// [`Children`](crate::hierarchy::Children) (the relation is snapshot whole).
    ///
    /// # Examples
    ///
    /// ```
    /// struct Hit; // added and removed within a tick
    ///
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.exclude_from_snapshot::<Hit>();
    /// let e = registry.spawn((Hit,));
    /// assert!(registry.snapshot().is_err());
    /// registry.remove::<(Hit,)>(e).unwrap();
    /// assert!(registry.snapshot().is_ok());
    /// ```
    pub fn exclude_from_snapshot<T: Component>(&mut self) {
        self.guard("Registry::exclude_from_snapshot");
        super::hierarchy::refuse_kept_registration::<T>("snapshots");
        self.snapshot_types.components.exclude::<T>();
    }

    /// Registers resource `R` for snapshots: a restore puts back its value at the snapshot, or
    /// removes it if it was absent then. It is copied with `Clone`, and with `clone_from` into
    /// a reused snapshot's kept value: implement `clone_from` for a resource that holds heap
    /// memory (a derived `Clone` does not) and a warm [`SnapshotRing`](crate::SnapshotRing)
    /// allocates nothing for it.
    ///
    /// # Panics
    ///
    /// If `R` was excluded with
    /// [`exclude_resource_from_snapshot`](Registry::exclude_resource_from_snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_snapshot_resource::<u64>();
    /// registry.insert_resource(1u64);
    /// let snapshot = registry.snapshot().unwrap();
    /// registry.insert_resource(2u64);
    /// registry.restore(&snapshot).unwrap();
    /// assert_eq!(registry.resource::<u64>(), Some(&1));
    /// ```
    pub fn register_snapshot_resource<R: Clone + Send + Sync + 'static>(&mut self) {
        self.guard("Registry::register_snapshot_resource");
        self.snapshot_types.register_resource::<R>();
    }

    /// Leaves resource `R` out of snapshots on purpose (a socket, a cache, telemetry): a
    /// restore keeps its current value.
    ///
    /// # Panics
    ///
    /// If `R` was registered with
    /// [`register_snapshot_resource`](Registry::register_snapshot_resource).
    ///
    /// # Examples
    ///
    /// ```
    /// struct Socket(u16);
    ///
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.insert_resource(Socket(9000));
    /// assert!(registry.snapshot().is_err());
    /// registry.exclude_resource_from_snapshot::<Socket>();
    /// assert!(registry.snapshot().is_ok());
    /// ```
    pub fn exclude_resource_from_snapshot<R: Send + Sync + 'static>(&mut self) {
        self.guard("Registry::exclude_resource_from_snapshot");
        self.snapshot_types.exclude_resource::<R>();
    }

    /// A snapshot of this moment: the world (component ids, archetypes in creation order,
    /// rows in order, the entity allocator), the [`tick`](Registry::tick), every resource
    /// registered for snapshots, and the deadline jobs in flight (shared with the registry,
    /// never waited for: see [`Snapshot`]). The copying runs on the registry's pool. Reads
    /// only.
    ///
    /// # Errors
    ///
    /// - [`SnapshotError::InsideUpdate`] from inside [`update`](Registry::update);
    /// - [`SnapshotError::NotQuiet`] while launches are in flight or commands or destructions
    ///   wait for a sync point (it does not wait: a launch's commands are known only once a
    ///   sync point retires it);
    /// - [`SnapshotError::MissingTypes`] naming every live component type and stored resource
    ///   type that is neither registered nor excluded.
    ///
    /// # Panics
    ///
    /// From inside a query callback of this registry; re-raises a panic of a `Clone` (the
    /// registry is untouched and every value cloned before it is dropped exactly once).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    /// use freyr::snapshot::SnapshotError;
    ///
    /// #[derive(Clone, Copy)]
    /// struct A(u8);
    ///
    /// let mut registry = Registry::with_workers(2);
    /// registry.register_snapshot_copy::<A>();
    /// registry.spawn((A(0),));
    /// registry.query::<&mut A>().each_async(|_, a| a.0 += 1);
    /// assert!(matches!(registry.snapshot(), Err(SnapshotError::NotQuiet { .. })));
    /// registry.execute_tasks();
    /// assert_eq!(registry.snapshot().unwrap().world().len(), 1);
    /// ```
    pub fn snapshot(&self) -> Result<Snapshot, SnapshotError> {
        let mut snapshot = Snapshot::new();
        self.snapshot_into(&mut snapshot)?;
        Ok(snapshot)
    }

    /// As [`snapshot`](Registry::snapshot), into `snapshot`, reusing its buffers: nothing is
    /// allocated when the world's layout did not change since it was last filled (a
    /// [`SnapshotRing`](crate::SnapshotRing) does this per tick). On an error `snapshot` is left
    /// as it was; after a panicking `Clone` it is incomplete.
    ///
    /// # Errors
    ///
    /// As [`snapshot`](Registry::snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::snapshot::Snapshot;
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_snapshot_copy::<u32>();
    /// registry.spawn((1u32,));
    /// let mut snapshot = Snapshot::new();
    /// registry.snapshot_into(&mut snapshot).unwrap();
    /// registry.update(0.1);
    /// registry.snapshot_into(&mut snapshot).unwrap();
    /// assert_eq!(snapshot.tick(), 1);
    /// ```
    pub fn snapshot_into(&self, snapshot: &mut Snapshot) -> Result<(), SnapshotError> {
        self.guard("Registry::snapshot");
        self.check_quiet()?;
        let world = self.sync.read(&OpAccess::Exclusive, &self.profiler);
        let resources = self.sync.resources();
        let missing = self.snapshot_types.unaccounted_resources(resources);
        let components = self.snapshot_types.components.check(world);
        if !missing.is_empty() || components.is_err() {
            return Err(SnapshotError::MissingTypes {
                components: components.err().unwrap_or_default(),
                resources: missing,
            });
        }
        snapshot.set_excluded_resources(&self.snapshot_types);
        let (world_image, images, jobs) = snapshot.start_taking();
        // Shape the resource images like the registered list; their values are filled once
        // the world is copied.
        let registered = &self.snapshot_types.resources;
        images.truncate(registered.len());
        for (i, ops) in registered.iter().enumerate() {
            if images.len() == i {
                images.push(ResourceImage {
                    ops: *ops,
                    value: None,
                });
            }
            let image = &mut images[i];
            if image.ops.type_id != ops.type_id {
                image.value = None;
            }
            image.ops = *ops;
        }
        let types = &self.snapshot_types.components;
        let pool = OnPool(self.sync.pool());
        world
            .snapshot_into(world_image, types, &pool)
            .expect("the component types were checked above");
        for image in images.iter_mut() {
            (image.ops.save)(resources, &mut image.value);
        }
        self.capture_jobs(jobs);
        self.save_fn_systems(snapshot.systems_mut());
        snapshot.finish_taking(self.time.tick);
        Ok(())
    }

    /// Puts the registry back to the moment of `snapshot`: the world (a new world, with a fresh
    /// identity: every query cache rebuilds, including [`QueryState`](crate::QueryState)s held
    /// outside), the [`tick`](Registry::tick), and the resources registered for snapshots: the
    /// value each had at the snapshot, or none if it was absent then (a type registered after
    /// the snapshot was taken, such as an event store first made since, was absent then and is
    /// removed; resources this registry excludes are left as they are, also when the snapshot
    /// is of another registry that registered them, and so are those the snapshot's registry
    /// excluded, of which the snapshot says nothing; one that registry registered and this
    /// one did not is registered here too). The copying runs on the registry's pool.
    ///
    /// The deadline jobs go to the snapshot's tick with it, backward or forward: the
    /// registry's jobs in flight are discarded and the snapshot's become its jobs in flight,
    /// so from the snapshot's tick on it delivers exactly what the snapshot's timeline
    /// delivered (the same ticket ids, results and ticks) and numbers its next requests as
    /// that timeline did. This holds for a snapshot of another registry too, if it registered
    /// the same result types with the same latencies (tickets then carry this registry's
    /// scheduler ids). A discarded job no snapshot holds is cancelled if not started, and its
    /// result dropped once.
    ///
    /// Function systems go back with the world in what its history decides: each system's
    /// previous run (the tick its change filters and [`Tick::last_run`](crate::systems::Tick)
    /// compare with) and its event readers' cursors, matched by phase and name (a system added
    /// after the snapshot keeps what it has). Not rewound: [`Local`](crate::systems::Local)
    /// values, exclusive systems and what they hold (async pumps, their epochs: see
    /// [`rewinds`](Registry::rewinds)), the profiler, the fixed-step clock, launch numbers and
    /// other never-reissued counters.
    ///
    /// # Errors
    ///
    /// Nothing changed on an error:
    /// - [`SnapshotError::InsideUpdate`], [`SnapshotError::NotQuiet`] (as for
    ///   [`snapshot`](Registry::snapshot)), [`SnapshotError::Incomplete`];
    /// - [`SnapshotError::BeforeConfirmed`] if the snapshot's tick is before a tick passed to
    ///   [`confirm_tick`](Registry::confirm_tick);
    /// - [`SnapshotError::JobsNotRestorable`] if the snapshot holds deadline jobs in flight of
    ///   a result type this registry has not registered, registered with another latency, or
    ///   settled ([`settle_jobs`](Registry::settle_jobs)).
    ///
    /// # Panics
    ///
    /// From inside a query callback of this registry. Re-raises a panic of a `Clone` while
    /// copying out of the snapshot (the registry is then unchanged), or of a `Drop` of the
    /// replaced world's values, resources or discarded deadline results (the registry is then
    /// fully restored, and every discarded value dropped once).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// let mut registry = Registry::with_workers(2);
    /// registry.register_snapshot_copy::<u16>();
    /// let snapshot = registry.snapshot().unwrap();
    /// let a = registry.spawn((1u16,));
    /// registry.restore(&snapshot).unwrap();
    /// assert!(!registry.contains(a));
    /// assert_eq!(registry.spawn((2u16,)), a, "the same id again");
    /// ```
    pub fn restore(&mut self, snapshot: &Snapshot) -> Result<(), SnapshotError> {
        self.restore_then(snapshot, &mut || {})
    }

    /// [`restore`](Registry::restore), calling `restored` once the registry is fully restored
    /// and before any replaced value is dropped (so before a `Drop` can panic): a
    /// [`SnapshotRing`](crate::snapshot::SnapshotRing) forgets the replaced timeline's ticks
    /// there, even when the restore then re-raises a `Drop`'s panic.
    pub(crate) fn restore_then(
        &mut self,
        snapshot: &Snapshot,
        restored: &mut dyn FnMut(),
    ) -> Result<(), SnapshotError> {
        self.guard("Registry::restore");
        self.check_quiet()?;
        if !snapshot.is_complete() {
            return Err(SnapshotError::Incomplete);
        }
        self.check_restore_jobs(snapshot.tick(), snapshot.jobs())?;
        // Every clone first, so a panicking `Clone` changes nothing. A type this registry
        // excludes (registered by the registry the snapshot was taken of) is left as it is.
        let kept =
            |image: &&ResourceImage| !self.snapshot_types.excludes_resource(image.ops.type_id);
        let values: Vec<Option<AnyResource>> = snapshot
            .resources()
            .iter()
            .filter(kept)
            .map(|image| image.value.as_deref().map(image.ops.clone_out))
            .collect();
        let pool = self.sync.shared_pool().clone();
        let (current, resources) = self.sync.write_all(&self.profiler);
        let old_world =
            snapshot
                .world()
                .restore_over(current, &OnPool(&pool), &mut self.spare_slabs);
        self.spare_slabs.clear();
        let mut old_values = Vec::with_capacity(self.snapshot_types.resources.len());
        for (image, value) in snapshot.resources().iter().filter(kept).zip(values) {
            let (type_id, name) = (image.ops.type_id, image.ops.name);
            old_values.push(match value {
                Some(value) => resources.insert_any(type_id, name, value),
                None => resources.remove_any(type_id),
            });
        }
        // A type registered since was absent at the snapshot (present, it would have refused
        // the snapshot unregistered, and an excluded type cannot be registered): removed, as an
        // event store first made after the snapshot must be, or the replaced timeline's events
        // would stay readable and keep their ticks. A type the snapshot's registry excluded
        // (another registry's snapshot) may have been present there: the snapshot says nothing
        // of it, so this registry's value is left as it is.
        for ops in &self.snapshot_types.resources {
            let taken = |image: &ResourceImage| image.ops.type_id == ops.type_id;
            let excluded_there = snapshot.excluded_resources().contains(&ops.type_id);
            if !excluded_there && !snapshot.resources().iter().any(taken) {
                old_values.push(resources.remove_any(ops.type_id));
            }
        }
        // A resource the snapshot's registry copied and this one neither registers nor excludes
        // (an event store first made there) is registered here too: its value came from the
        // snapshot, so this registry's next snapshot copies it instead of refusing it.
        for image in snapshot.resources() {
            if !self.snapshot_types.excludes_resource(image.ops.type_id) {
                self.snapshot_types.register_resource_ops(image.ops);
            }
        }
        let jobs_panic = self.rewind_time(snapshot.tick(), Some(snapshot.jobs()));
        self.load_fn_systems(snapshot.systems());
        restored();
        // User `Drop`s run last, with the registry already restored. Each group is dropped
        // outside any unwinding (a panic of the resources' `Drop`s must not be unwinding
        // while the world's values drop: a second panic would abort); the first panic is
        // re-raised once all are dropped. Each replaced resource is dropped on its own: a second
        // panicking `Drop` within one `Vec`'s drop would run while the first unwinds, and abort.
        let mut first_panic = None;
        for value in old_values {
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| drop(value))) {
                keep_first(&mut first_panic, payload);
            }
        }
        if let Some(old_world) = old_world {
            let spare = &mut self.spare_slabs;
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| old_world.recycle_into(spare))) {
                keep_first(&mut first_panic, payload);
            }
        }
        if let Some(payload) = jobs_panic {
            keep_first(&mut first_panic, payload);
        }
        if let Some(payload) = first_panic {
            std::panic::resume_unwind(payload);
        }
        Ok(())
    }

    /// Refuses a snapshot or restore that is not at a quiet point.
    pub(super) fn check_quiet(&self) -> Result<(), SnapshotError> {
        if self.in_update {
            return Err(SnapshotError::InsideUpdate);
        }
        let (launches, buffers, destructions) = (
            self.sync.in_flight(),
            self.pending.iter().map(|(_, b)| b.len()).sum::<usize>(),
            self.destroy_queue.len(),
        );
        if launches + buffers + destructions > 0 {
            return Err(SnapshotError::NotQuiet {
                launches_in_flight: launches,
                pending_command_buffers: buffers,
                queued_destructions: destructions,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_ids_and_launch_numbers_are_never_rewound() {
        let mut registry = Registry::with_workers(2);
        registry.register_snapshot_copy::<u32>();
        registry.spawn((1u32,));
        let snapshot = registry.snapshot().unwrap();
        registry.query::<&mut u32>().each_async(|_, v| *v += 1);
        registry.execute_tasks();
        let (id, seq) = (registry.id(), registry.next_seq);
        assert!(seq > 0);
        registry.restore(&snapshot).unwrap();
        assert_eq!((registry.id(), registry.next_seq), (id, seq));
        let other = Registry::with_workers(1);
        assert_ne!(other.id(), id, "registry ids are never reissued");
    }
}
