//! The handle through which any thread (an I/O callback, a GPU readback, a
//! thread of its own) completes one async-pump launch.

use core::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// What a launch's slot holds.
pub(crate) enum SlotState<R, E> {
    /// Not completed yet.
    Waiting,
    /// Completed with a value or rejected with an error.
    Done(Result<R, E>),
    /// The [`Completer`] was dropped without completing.
    Abandoned,
    /// The pump gave up on the launch (`settle`); a late completion is refused.
    Cancelled,
}

/// The shared slot between a [`Completer`] and its pump entry.
pub(crate) struct Slot<R, E> {
    state: Mutex<SlotState<R, E>>,
}

impl<R, E> Slot<R, E> {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Slot {
            state: Mutex::new(SlotState::Waiting),
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, SlotState<R, E>> {
        freyr_sync::lock_std(&self.state)
    }

    /// Whether the slot left `Waiting`.
    pub(crate) fn is_settled(&self) -> bool {
        !matches!(*self.lock(), SlotState::Waiting)
    }

    /// Takes the final state, leaving `Cancelled` behind.
    pub(crate) fn take(&self) -> SlotState<R, E> {
        core::mem::replace(&mut *self.lock(), SlotState::Cancelled)
    }

    /// Marks a waiting slot cancelled; returns whether it was waiting.
    pub(crate) fn cancel(&self) -> bool {
        let mut state = self.lock();
        if matches!(*state, SlotState::Waiting) {
            *state = SlotState::Cancelled;
            true
        } else {
            false
        }
    }

    /// Fills a waiting slot; hands `outcome` back if the slot was cancelled.
    fn fill(&self, outcome: Result<R, E>) -> Result<(), Result<R, E>> {
        let mut state = self.lock();
        if matches!(*state, SlotState::Waiting) {
            *state = SlotState::Done(outcome);
            Ok(())
        } else {
            Err(outcome)
        }
    }
}

/// Completes one [`AsyncPump`](crate::AsyncPump) launch from any thread.
///
/// Returned by [`AsyncPump::launch_external`](crate::AsyncPump::launch_external).
/// Completing only *stores* the outcome: nothing is applied until the
/// pump's owner drains it, in launch order. Dropping a completer without
/// completing delivers [`Discard::Abandoned`](crate::Discard::Abandoned).
///
/// # Examples
///
/// ```
/// use freyr::time::pump::{AsyncPump, Launch};
/// let mut pump: AsyncPump<u32> = AsyncPump::new();
/// let Ok(Launch::External(completer)) = pump.launch_external(()) else { unreachable!() };
/// let io = std::thread::spawn(move || completer.complete(7));
/// assert!(io.join().unwrap().is_ok());
/// let mut got = None;
/// pump.drain_all(|(), v| got = Some(v), |(), _| unreachable!());
/// assert_eq!(got, Some(7));
/// ```
pub struct Completer<R, E = String> {
    slot: Option<Arc<Slot<R, E>>>,
}

impl<R, E> Completer<R, E> {
    pub(crate) fn new(slot: Arc<Slot<R, E>>) -> Self {
        Completer { slot: Some(slot) }
    }

    /// Completes the launch with `value`.
    ///
    /// # Errors
    ///
    /// Hands `value` back if the pump no longer wants it (it was settled).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::time::pump::{AsyncPump, Launch};
    /// let mut pump: AsyncPump<&str> = AsyncPump::new();
    /// let Ok(Launch::External(c)) = pump.launch_external(()) else { unreachable!() };
    /// assert_eq!(c.complete("done"), Ok(()));
    /// ```
    pub fn complete(mut self, value: R) -> Result<(), R> {
        match self.finish(Ok(value)) {
            Ok(()) => Ok(()),
            Err(Ok(value)) => Err(value),
            Err(Err(_)) => unreachable!("fill hands back what it was given"),
        }
    }

    /// Rejects the launch with `error`; the owner's discard path gets
    /// [`Discard::Rejected`](crate::Discard::Rejected).
    ///
    /// # Errors
    ///
    /// Hands `error` back if the pump no longer wants it (it was settled).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::time::pump::{AsyncPump, Discard, Launch};
    /// let mut pump: AsyncPump<u8> = AsyncPump::new();
    /// let Ok(Launch::External(c)) = pump.launch_external(()) else { unreachable!() };
    /// c.reject(String::from("socket closed")).unwrap();
    /// let mut why = None;
    /// pump.drain_all(|(), _| unreachable!(), |(), d| why = Some(d));
    /// assert!(matches!(why, Some(Discard::Rejected(e)) if e == "socket closed"));
    /// ```
    pub fn reject(mut self, error: E) -> Result<(), E> {
        match self.finish(Err(error)) {
            Ok(()) => Ok(()),
            Err(Err(error)) => Err(error),
            Err(Ok(_)) => unreachable!("fill hands back what it was given"),
        }
    }

    /// Whether the pump still wants an outcome (it was not settled).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::pump::{AsyncPump, Launch};
    /// let mut pump: AsyncPump<u8> = AsyncPump::new();
    /// let Ok(Launch::External(c)) = pump.launch_external(()) else { unreachable!() };
    /// assert!(c.is_wanted());
    /// pump.settle(&ThreadPool::new(1), |(), _| {}).unwrap();
    /// assert!(!c.is_wanted());
    /// ```
    #[must_use]
    pub fn is_wanted(&self) -> bool {
        self.slot
            .as_ref()
            .is_some_and(|slot| matches!(*slot.lock(), SlotState::Waiting))
    }

    fn finish(&mut self, outcome: Result<R, E>) -> Result<(), Result<R, E>> {
        match self.slot.take() {
            Some(slot) => slot.fill(outcome),
            None => Err(outcome),
        }
    }
}

impl<R, E> Drop for Completer<R, E> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let mut state = slot.lock();
            if matches!(*state, SlotState::Waiting) {
                *state = SlotState::Abandoned;
            }
        }
    }
}

impl<R, E> fmt::Debug for Completer<R, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completer")
            .field("wanted", &self.is_wanted())
            .finish()
    }
}
