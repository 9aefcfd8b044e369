//! Golden rule 3 at run time: which registry's callback is running on this thread.
//!
//! Callbacks cannot name the registry (it is mutably borrowed while a synchronous callback runs,
//! and `each_async` callbacks must be `'static + Send + Sync`, which `&Registry` is not). A
//! registry reachable through shared ownership (`Arc<Mutex<Registry>>` captured by a callback)
//! is caught here instead: every registry operation that waits or mutates checks this marker and
//! panics with a clear message rather than deadlocking on its own tasks.

use std::cell::Cell;

thread_local! {
    /// Id of the registry whose callback runs on this thread, 0 if none.
    static CURRENT: Cell<u64> = const { Cell::new(0) };
}

/// Marks this thread as running a callback of registry `id` until dropped (restoring the previous
/// marker, so a callback that drives a different registry nests correctly).
pub struct CallbackScope {
    previous: u64,
}

impl CallbackScope {
    #[inline]
    pub fn enter(id: u64) -> Self {
        CallbackScope {
            previous: CURRENT.with(|c| c.replace(id)),
        }
    }
}

impl Drop for CallbackScope {
    #[inline]
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

/// Whether a callback of registry `id` is running on this thread.
pub fn inside_callback_of(id: u64) -> bool {
    CURRENT.with(|c| c.get()) == id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_restore() {
        assert!(!inside_callback_of(7));
        {
            let _a = CallbackScope::enter(7);
            assert!(inside_callback_of(7));
            {
                let _b = CallbackScope::enter(9);
                assert!(inside_callback_of(9));
                assert!(!inside_callback_of(7));
            }
            assert!(inside_callback_of(7));
        }
        assert!(!inside_callback_of(7));
    }
}
