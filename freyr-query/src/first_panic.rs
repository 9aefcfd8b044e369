//! The first of several panics: what a sync point re-raises once it has finished its work.

use core::any::Any;

use freyr_sched::drop_payload;

/// Keeps the first of several caught panics in `first`; a later one is dropped with
/// [`drop_payload`], which lets no panic of the payload's own `Drop` escape (one would
/// otherwise replace the panic being kept, or abort the process if it happened during an
/// unwind).
pub fn keep_first(first: &mut Option<Box<dyn Any + Send>>, payload: Box<dyn Any + Send>) {
    match first {
        None => *first = Some(payload),
        Some(_) => drop_payload(payload),
    }
}
