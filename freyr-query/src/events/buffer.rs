//! The per-task output of a callback: its [`CommandBuffer`] and its [`EventBuffer`], which travel
//! together from the task to the sync point (and are discarded together if the task panics).

use core::any::{Any, TypeId};
use std::panic::AssertUnwindSafe;

use freyr_core::CommandBuffer;

use crate::resources::{ResourceOps, Resources};

use super::Events;

/// What one task (or one `each_with` call, or a run of direct sends) leaves for the sync point.
#[derive(Default)]
pub struct TaskOutput {
    /// The commands the task recorded.
    pub commands: CommandBuffer,
    /// The events the task sent.
    pub events: EventBuffer,
}

impl TaskOutput {
    /// Whether the task recorded nothing.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty() && self.events.is_empty()
    }
}

/// The events one task sent, per event type in send order. Types are kept in first-send order,
/// found by a linear search (a task sends few event types); the last type used is checked first.
#[derive(Default)]
pub struct EventBuffer {
    lists: Vec<(TypeId, Box<dyn EventList>)>,
    last: usize,
}

impl EventBuffer {
    /// Appends `event` to the list of its type.
    #[inline]
    pub fn send<E: Clone + Send + Sync + 'static>(&mut self, event: E) {
        let id = TypeId::of::<E>();
        let index = match self.lists.get(self.last) {
            Some((t, _)) if *t == id => self.last,
            _ => match self.lists.iter().position(|(t, _)| *t == id) {
                Some(i) => i,
                None => {
                    self.lists.push((id, Box::new(Vec::<E>::new())));
                    self.lists.len() - 1
                }
            },
        };
        self.last = index;
        let list: &mut dyn EventList = &mut *self.lists[index].1;
        debug_assert!(
            list.as_any_mut().is::<Vec<E>>(),
            "the list of a type id holds that type"
        );
        // SAFETY: entries are only ever pushed above, as `(TypeId::of::<E>(), Box<Vec<E>>)`,
        // and never changed but by `flush_into`, which clears them all; so the list stored
        // beside `E`'s type id (the one found) is a `Vec<E>`, and the data pointer of the
        // trait object points to it. The borrow of `self.lists` it comes from is exclusive.
        // Checked downcasting cost two virtual calls per event (a fifth of a 1M-event send).
        let list = unsafe { &mut *(list as *mut dyn EventList).cast::<Vec<E>>() };
        list.push(event);
    }

    /// Whether no event was sent.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.lists.iter().all(|(_, l)| l.is_empty())
    }

    /// Moves every list into its store in `stores` (made on first use), in type order of
    /// first send; the buffer is left empty.
    ///
    /// # Panics
    ///
    /// Re-raises the first panic of a store (an expired event's `Drop`), after every list was
    /// stored.
    pub fn flush_into(&mut self, stores: &mut dyn EventStores) {
        let mut first_panic = None;
        for (_, list) in &mut self.lists {
            let stored =
                std::panic::catch_unwind(AssertUnwindSafe(|| list.flush_into(&mut *stores)));
            if let Err(p) = stored {
                freyr_sched::keep_first(&mut first_panic, p);
            }
        }
        self.lists.clear();
        self.last = 0;
        if let Some(p) = first_panic {
            std::panic::resume_unwind(p);
        }
    }
}

/// A type-erased `Vec<E>` of sent events.
pub(crate) trait EventList: Send {
    /// Whether the list holds no event.
    fn is_empty(&self) -> bool;
    /// The list, for the typed downcast of `send`.
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Appends the events to the store `Events<E>` (added if missing), emptying the list.
    fn flush_into(&mut self, stores: &mut dyn EventStores);
}

/// Where a sync point stores the tasks' events: the registry, whose resources hold one
/// [`Events<E>`] per event type, made (and registered for snapshots) on first use.
pub trait EventStores {
    /// The tick the events are stored at.
    fn tick(&self) -> u64;
    /// The resources, after waiting for the launches that read resource `store`.
    fn resources_for_write(&mut self, store: TypeId) -> &mut Resources;
    /// Registers a store made on first use for snapshots (unless its type was excluded).
    fn register_snapshot_resource(&mut self, ops: ResourceOps);
}

impl<E: Clone + Send + Sync + 'static> EventList for Vec<E> {
    fn is_empty(&self) -> bool {
        Vec::is_empty(self)
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn flush_into(&mut self, stores: &mut dyn EventStores) {
        let tick = stores.tick();
        let store = TypeId::of::<Events<E>>();
        if !stores.resources_for_write(store).contains::<Events<E>>() {
            stores
                .resources_for_write(store)
                .insert(Events::<E>::default());
            stores.register_snapshot_resource(ResourceOps::of::<Events<E>>());
        }
        stores
            .resources_for_write(store)
            .get_mut::<Events<E>>()
            .expect("added above")
            .extend_at(tick, self.drain(..));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Holds a count on a shared `Arc`, to show every sent value is dropped once.
    #[derive(Clone)]
    struct Counted(#[allow(dead_code)] std::sync::Arc<()>);

    /// Events of several types, a zero-sized one and one owning heap memory among them, sent
    /// interleaved, land in their own lists in send order; every owned value is dropped once.
    /// Small: runs under Miri, which checks the unchecked downcast in `send`.
    #[test]
    fn interleaved_types_land_in_their_own_lists_in_order() {
        #[derive(Clone, Debug, PartialEq)]
        struct Unit;
        let counter = std::sync::Arc::new(());
        let mut buffer = EventBuffer::default();
        assert!(buffer.is_empty());
        for i in 0..20u32 {
            buffer.send(i);
            if i % 3 == 0 {
                buffer.send(format!("s{i}"));
                buffer.send(Unit);
            }
            buffer.send(Counted(counter.clone()));
            buffer.send(u64::from(i) << 40);
        }
        assert!(!buffer.is_empty());
        fn list<T: 'static>(buffer: &mut EventBuffer, i: usize) -> &mut Vec<T> {
            buffer.lists[i].1.as_any_mut().downcast_mut().unwrap()
        }
        let kinds: Vec<TypeId> = buffer.lists.iter().map(|(t, _)| *t).collect();
        let expected = [
            TypeId::of::<u32>(),
            TypeId::of::<String>(),
            TypeId::of::<Unit>(),
            TypeId::of::<Counted>(),
            TypeId::of::<u64>(),
        ];
        assert_eq!(kinds, expected);
        assert_eq!(*list::<u32>(&mut buffer, 0), (0..20).collect::<Vec<u32>>());
        let want: Vec<String> = (0..20).step_by(3).map(|i| format!("s{i}")).collect();
        assert_eq!(*list::<String>(&mut buffer, 1), want);
        assert_eq!(list::<Unit>(&mut buffer, 2).len(), 7);
        assert_eq!(list::<Counted>(&mut buffer, 3).len(), 20);
        assert_eq!(std::sync::Arc::strong_count(&counter), 21);
        assert_eq!(list::<u64>(&mut buffer, 4)[19], 19 << 40);
        drop(buffer);
        assert_eq!(
            std::sync::Arc::strong_count(&counter),
            1,
            "each dropped once"
        );
    }
}
