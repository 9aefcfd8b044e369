//! The per-task output of a callback: its [`CommandBuffer`] and its [`EventBuffer`], which travel
//! together from the task to the sync point (and are discarded together if the task panics).

use core::any::{Any, TypeId};

use freyr_core::CommandBuffer;

/// What one task (or one `each_with` call, or a run of direct sends) leaves for the sync point.
#[derive(Default)]
pub(crate) struct TaskOutput {
    pub(crate) commands: CommandBuffer,
    pub(crate) events: EventBuffer,
}

impl TaskOutput {
    /// Whether the task recorded nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.commands.is_empty() && self.events.is_empty()
    }
}

/// The events one task sent, per event type in send order. Types are kept in first-send order,
/// found by a linear search (a task sends few event types); the last type used is checked first.
#[derive(Default)]
pub(crate) struct EventBuffer {
    lists: Vec<(TypeId, Box<dyn EventList>)>,
    last: usize,
}

impl EventBuffer {
    /// Appends `event` to the list of its type.
    #[inline]
    pub(crate) fn send<E: Clone + Send + Sync + 'static>(&mut self, event: E) {
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
        let list = self.lists[index].1.as_any_mut();
        list.downcast_mut::<Vec<E>>()
            .expect("the list of a type id holds that type")
            .push(event);
    }

    /// Whether no event was sent.
    pub(crate) fn is_empty(&self) -> bool {
        self.lists.iter().all(|(_, l)| l.is_empty())
    }

    /// Moves every list into its store in `registry` (made on first use), in type order of
    /// first send; the buffer is left empty.
    pub(crate) fn flush_into(&mut self, registry: &mut crate::Registry) {
        for (_, list) in &mut self.lists {
            list.flush_into(registry);
        }
        self.lists.clear();
        self.last = 0;
    }
}

/// A type-erased `Vec<E>` of sent events.
pub(crate) trait EventList: Send {
    fn is_empty(&self) -> bool;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Appends the events to the registry's `Events<E>` (added if missing), emptying the list.
    fn flush_into(&mut self, registry: &mut crate::Registry);
}

impl<E: Clone + Send + Sync + 'static> EventList for Vec<E> {
    fn is_empty(&self) -> bool {
        Vec::is_empty(self)
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn flush_into(&mut self, registry: &mut crate::Registry) {
        registry.store_events(self.drain(..));
    }
}
