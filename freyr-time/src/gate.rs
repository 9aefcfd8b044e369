//! Fixed-step gates: predicates that hold the next tick while the work it
//! depends on is not ready.

use core::fmt;

/// A predicate consulted before each fixed step: may tick `next_tick` run now?
///
/// A gate answers `false` while outstanding work that tick `next_tick` needs
/// is not ready (a worker's step, a streamed chunk, a peer's input). The
/// loop then *holds* the tick (it runs it on a later frame, with the same
/// number) instead of running it without the work; the hold is counted.
/// Any `FnMut(u64) -> bool + Send` closure is a gate.
///
/// # Examples
///
/// ```
/// use freyr::time::Gate;
/// let mut even_only = |next_tick: u64| next_tick % 2 == 0;
/// assert!(even_only.may_advance(4));
/// assert!(!even_only.may_advance(5));
/// ```
pub trait Gate: Send {
    /// Whether tick `next_tick` may run now.
    fn may_advance(&mut self, next_tick: u64) -> bool;
}

impl<F: FnMut(u64) -> bool + Send> Gate for F {
    fn may_advance(&mut self, next_tick: u64) -> bool {
        self(next_tick)
    }
}

/// Names a gate registered on a [`Gates`] set, to remove it again.
///
/// # Examples
///
/// ```
/// let mut gates = freyr::time::Gates::new();
/// let id = gates.add(|_tick: u64| true);
/// assert!(gates.remove(id));
/// assert!(!gates.remove(id)); // already gone
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GateId(u64);

/// The gates registered on a loop, asked in registration order.
///
/// [`may_advance`](Self::may_advance) is `true` when every gate agrees; it
/// stops at the first gate that says `false`, so gates after it are not asked
/// for that tick. An empty set always agrees.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use freyr::time::Gates;
///
/// // Work for tick t is ready once `ready_through >= t`.
/// let ready_through = Arc::new(AtomicU64::new(2));
/// let mut gates = Gates::new();
/// let ready = Arc::clone(&ready_through);
/// gates.add(move |next: u64| next <= ready.load(Ordering::Acquire));
/// assert!(gates.may_advance(2));
/// assert!(!gates.may_advance(3));
/// ready_through.store(3, Ordering::Release);
/// assert!(gates.may_advance(3));
/// ```
#[derive(Default)]
pub struct Gates {
    gates: Vec<(GateId, Box<dyn Gate>)>,
    next_id: u64,
}

impl Gates {
    /// An empty set.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut gates = freyr::time::Gates::new();
    /// assert!(gates.is_empty());
    /// assert!(gates.may_advance(0));
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Gates::default()
    }

    /// Registers `gate` after the ones already registered.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut gates = freyr::time::Gates::new();
    /// gates.add(|next: u64| next < 10);
    /// assert_eq!(gates.len(), 1);
    /// assert!(!gates.may_advance(10));
    /// ```
    pub fn add(&mut self, gate: impl Gate + 'static) -> GateId {
        let id = GateId(self.next_id);
        self.next_id += 1;
        self.gates.push((id, Box::new(gate)));
        id
    }

    /// Unregisters the gate `id`; returns whether it was registered.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut gates = freyr::time::Gates::new();
    /// let never = gates.add(|_: u64| false);
    /// assert!(!gates.may_advance(0));
    /// assert!(gates.remove(never));
    /// assert!(gates.may_advance(0));
    /// ```
    pub fn remove(&mut self, id: GateId) -> bool {
        let before = self.gates.len();
        self.gates.retain(|(gate, _)| *gate != id);
        self.gates.len() != before
    }

    /// Whether every gate lets tick `next_tick` run (asked in registration
    /// order, stopping at the first refusal).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut gates = freyr::time::Gates::new();
    /// gates.add(|next: u64| next >= 1);
    /// gates.add(|next: u64| next <= 5);
    /// assert!(!gates.may_advance(0));
    /// assert!(gates.may_advance(3));
    /// assert!(!gates.may_advance(6));
    /// ```
    pub fn may_advance(&mut self, next_tick: u64) -> bool {
        self.gates
            .iter_mut()
            .all(|(_, gate)| gate.may_advance(next_tick))
    }

    /// The number of registered gates.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(freyr::time::Gates::new().len(), 0);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.gates.len()
    }

    /// Whether no gate is registered.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(freyr::time::Gates::new().is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.gates.is_empty()
    }
}

impl fmt::Debug for Gates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gates")
            .field("len", &self.gates.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_are_asked_in_order_and_stop_at_the_first_refusal() {
        use std::sync::{Arc, Mutex};
        let asked = Arc::new(Mutex::new(Vec::new()));
        let mut gates = Gates::new();
        for name in ["a", "b", "c"] {
            let asked = Arc::clone(&asked);
            gates.add(move |next: u64| {
                asked.lock().unwrap().push((name, next));
                name != "b"
            });
        }
        assert!(!gates.may_advance(7));
        assert_eq!(*asked.lock().unwrap(), [("a", 7), ("b", 7)]);
    }

    #[test]
    fn removing_one_gate_keeps_the_others() {
        let mut gates = Gates::new();
        let a = gates.add(|_: u64| false);
        let b = gates.add(|next: u64| next != 3);
        assert!(gates.remove(a));
        assert!(gates.may_advance(2));
        assert!(!gates.may_advance(3));
        assert!(gates.remove(b));
        assert!(gates.is_empty());
    }
}
