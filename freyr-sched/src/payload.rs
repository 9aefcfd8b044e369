//! Panic payloads that are not re-raised: dropped without letting their own `Drop` unwind.

use core::any::Any;
use std::panic::{self, AssertUnwindSafe};

/// Drops a caught panic payload that will not be re-raised (a second panic of a group, say),
/// catching a panic from the payload's own `Drop` and dropping *that* payload the same way, so
/// nothing unwinds out of this call: a payload with a panicking `Drop` cannot abort the process
/// from inside an unwind, leave a worker half-way through completing a task, or replace the
/// panic being re-raised. After 64 payloads in a row whose drop panics again, the last one is
/// leaked rather than looping forever.
///
/// The panic hook still runs for a panic inside such a `Drop` (it prints, by default).
///
/// # Examples
/// ```
/// struct Nasty;
/// impl Drop for Nasty {
///     fn drop(&mut self) {
///         panic!("a payload that panics when dropped");
///     }
/// }
/// let payload = std::panic::catch_unwind(|| std::panic::panic_any(Nasty)).unwrap_err();
/// freyr::sched::drop_payload(payload); // returns normally
/// ```
pub fn drop_payload(payload: Box<dyn Any + Send + 'static>) {
    let mut payload = payload;
    for _ in 0..64 {
        match panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            Ok(()) => return,
            Err(next) => payload = next,
        }
    }
    core::mem::forget(payload);
}

/// The text of a panic payload: the message of a `&str` or `String` payload (what `panic!`
/// makes), and `"(a panic payload that is not a string)"` for any other payload type. The one
/// rule every Freyr report of a panic uses ([`GroupPanic`](crate::GroupPanic)'s `Display`, the
/// time tools' `JobPanic`).
///
/// # Examples
///
/// ```
/// use freyr::sched::panic_message;
///
/// let caught = std::panic::catch_unwind(|| panic!("no route to {}", 7)).unwrap_err();
/// assert_eq!(panic_message(&*caught), "no route to 7");
/// let other = std::panic::catch_unwind(|| std::panic::panic_any(7_u8)).unwrap_err();
/// assert_eq!(panic_message(&*other), "(a panic payload that is not a string)");
/// ```
pub fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(a panic payload that is not a string)"
    }
}

/// Keeps the first of several caught panics in `first`, dropping later ones with
/// [`drop_payload`]: the rule every Freyr tool follows when several callbacks of one call panic
/// (the first is re-raised, the others are dropped without unwinding).
///
/// # Examples
/// ```
/// use freyr::sched::keep_first;
/// let mut first = None;
/// keep_first(&mut first, Box::new("first"));
/// keep_first(&mut first, Box::new("second"));
/// assert_eq!(first.unwrap().downcast_ref::<&str>(), Some(&"first"));
/// ```
pub fn keep_first(
    first: &mut Option<Box<dyn Any + Send + 'static>>,
    payload: Box<dyn Any + Send + 'static>,
) {
    match first {
        None => *first = Some(payload),
        Some(_) => drop_payload(payload),
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind, panic_any};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::ThreadPool;

    static DROPPED: AtomicUsize = AtomicUsize::new(0);

    /// A panic payload whose own `Drop` panics.
    struct Nasty;

    impl Drop for Nasty {
        fn drop(&mut self) {
            DROPPED.fetch_add(1, Ordering::SeqCst);
            panic!("Nasty::drop");
        }
    }

    #[test]
    fn payloads_whose_drop_panics_neither_replace_the_first_nor_stop_the_pool() {
        for workers in [1, 2, 4] {
            let pool = ThreadPool::new(workers);
            let before = DROPPED.load(Ordering::SeqCst);
            let caught = catch_unwind(AssertUnwindSafe(|| {
                pool.parallel_for(64, 1, |_| panic_any(Nasty));
            }))
            .unwrap_err();
            assert!(caught.is::<Nasty>(), "workers = {workers}");
            // The 63 set-aside payloads were dropped, once each.
            assert_eq!(DROPPED.load(Ordering::SeqCst) - before, 63);
            super::drop_payload(caught);
            assert_eq!(DROPPED.load(Ordering::SeqCst) - before, 64);
            let hits = AtomicUsize::new(0);
            pool.parallel_for(100, 3, |_| {
                hits.fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(hits.load(Ordering::Relaxed), 100);
            let scoped = catch_unwind(AssertUnwindSafe(|| {
                pool.scope(|s| {
                    for _ in 0..8 {
                        s.spawn(|_| panic_any(Nasty));
                    }
                    panic_any(Nasty);
                })
            }))
            .unwrap_err();
            assert!(scoped.is::<Nasty>());
            super::drop_payload(scoped);
        }
    }
}
