//! Events on the registry: adding a store, sending from systems, storing the tasks' events at a
//! sync point, reading with a cursor. The order and retention rules are in
//! [`Events`](crate::Events).

use core::any::TypeId;
use std::panic::{self, AssertUnwindSafe};

use freyr_sched::keep_first;

use freyr_query::events::buffer::{EventStores, TaskOutput};
use freyr_query::events::{EventCursor, Events};
use freyr_query::resources::{ResourceOps, Resources};

use super::Registry;

impl Registry {
    /// Makes the store of event type `E` (the resource [`Events<E>`]) and registers it for
    /// snapshots, if it is not there yet. Optional: the first sync point that stores an `E` does
    /// the same; adding it first lets readers and snapshots see the (empty) store before any
    /// event was sent. A store excluded with
    /// [`exclude_resource_from_snapshot`](Registry::exclude_resource_from_snapshot) is not
    /// registered (by either): restores then leave it as it is.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Events, Registry};
    ///
    /// #[derive(Clone)]
    /// struct Goal;
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.add_event::<Goal>();
    /// assert!(registry.resource::<Events<Goal>>().unwrap().is_empty());
    /// assert!(registry.snapshot().is_ok());
    /// ```
    pub fn add_event<E: Clone + Send + Sync + 'static>(&mut self) {
        self.guard("Registry::add_event");
        if !self.contains_resource::<Events<E>>() {
            self.insert_resource(Events::<E>::default());
        }
        EventStores::register_snapshot_resource(self, ResourceOps::of::<Events<E>>());
    }

    /// Sends `event` from a system: it takes the next launch number (like an `each_with` call,
    /// so it reads after the events of every query launched before it and before those of every
    /// query launched after) and is stored at the next sync point.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{EventCursor, Registry};
    ///
    /// #[derive(Clone, Debug, PartialEq)]
    /// struct Said(&'static str);
    ///
    /// let mut registry = Registry::with_workers(2);
    /// registry.send_event(Said("hello"));
    /// registry.send_event(Said("world"));
    /// let mut cursor = EventCursor::default();
    /// assert_eq!(registry.read_events::<Said>(&mut cursor).count(), 0); // not stored yet
    /// registry.execute_tasks();
    /// let said: Vec<_> = registry.read_events::<Said>(&mut cursor).cloned().collect();
    /// assert_eq!(said, [Said("hello"), Said("world")]);
    /// ```
    pub fn send_event<E: Clone + Send + Sync + 'static>(&mut self, event: E) {
        self.guard("Registry::send_event");
        let latest = self.next_seq.wrapping_sub(1);
        match self.pending.last_mut() {
            // Nothing was launched since the last pending entry: appending keeps the order.
            Some((seq, outputs)) if *seq == latest && !outputs.is_empty() => {
                outputs
                    .last_mut()
                    .expect("checked non-empty")
                    .events
                    .send(event);
            }
            _ => {
                let seq = self.next_seq;
                self.next_seq += 1;
                let mut output = TaskOutput::default();
                output.events.send(event);
                self.pending.push((seq, vec![output]));
            }
        }
    }

    /// The events of type `E` stored since `cursor`, in order, that are still kept at this
    /// [`tick`](Registry::tick) (stored at this tick or the one before); `cursor` moves past
    /// every stored event. Reads nothing if no `E` was ever stored.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{EventCursor, Registry};
    ///
    /// #[derive(Clone)]
    /// struct Tock;
    ///
    /// let mut registry = Registry::with_workers(1);
    /// let mut late = EventCursor::default();
    /// registry.send_event(Tock);
    /// registry.update(1.0); // stored at tick 0
    /// // tick 1: still kept
    /// let mut cursor = EventCursor::default();
    /// assert_eq!(registry.read_events::<Tock>(&mut cursor).count(), 1);
    /// registry.update(1.0); // from tick 2 on: gone
    /// assert_eq!(registry.read_events::<Tock>(&mut late).count(), 0);
    /// assert_eq!(late, cursor);
    /// ```
    pub fn read_events<E: Clone + Send + Sync + 'static>(
        &self,
        cursor: &mut EventCursor,
    ) -> impl Iterator<Item = &E> + use<'_, E> {
        let now = self.tick();
        self.resource::<Events<E>>()
            .map(|events| events.read(cursor, now))
            .into_iter()
            .flatten()
    }

    /// Stores the events of the pending outputs, in (launch, task, send) order. A panic (an
    /// expired event's `Drop`) stops none of it: every output is stored, then the first panic
    /// is returned, for the sync point to re-raise with its others.
    pub(super) fn store_pending_events(
        &mut self,
        pending: &mut [(u64, Vec<TaskOutput>)],
    ) -> Option<Box<dyn core::any::Any + Send>> {
        let mut first_panic = None;
        for (_, outputs) in pending.iter_mut() {
            for output in outputs.iter_mut() {
                if !output.events.is_empty() {
                    let stored = panic::catch_unwind(AssertUnwindSafe(|| {
                        output.events.flush_into(self);
                    }));
                    if let Err(p) = stored {
                        keep_first(&mut first_panic, p);
                    }
                }
            }
        }
        first_panic
    }
}

/// A sync point stores the tasks' events in the registry's resources, at its tick.
impl EventStores for Registry {
    fn tick(&self) -> u64 {
        Registry::tick(self)
    }

    fn resources_for_write(&mut self, store: TypeId) -> &mut Resources {
        self.sync.resources_for_write(store, &self.profiler)
    }

    /// Registers the store, unless `Events<E>` was excluded from snapshots on purpose
    /// (`exclude_resource_from_snapshot`): then restores leave it as it is.
    fn register_snapshot_resource(&mut self, ops: ResourceOps) {
        if !self.snapshot_types.excludes_resource(ops.type_id) {
            self.snapshot_types.register_resource_ops(ops);
        }
    }
}
