//! Worker-count resolution: a pure function, testable without threads.

/// The largest pool [`resolve_worker_count`] returns: 256 workers (the
/// calling thread plus 255 background threads).
pub const MAX_WORKERS: usize = 256;

/// Resolves a requested worker count against the detected parallelism.
///
/// The count is the *total* parallelism including the calling thread, so a
/// pool of `n` spawns `n - 1` background threads.
///
/// - `requested == 0` means "auto": use `detected` (what
///   `std::thread::available_parallelism` reported; pass 1 when unknown).
/// - `1` means inline: no background threads, no synchronisation.
/// - Anything larger is taken as is.
///
/// The result is clamped to `1..=MAX_WORKERS`, so a bogus `detected` of 0
/// still yields a working pool.
///
/// # Examples
///
/// ```
/// use freyr::sched::{MAX_WORKERS, resolve_worker_count};
/// assert_eq!(resolve_worker_count(0, 8), 8); // auto
/// assert_eq!(resolve_worker_count(1, 8), 1); // inline
/// assert_eq!(resolve_worker_count(3, 8), 3); // oversubscription is allowed
/// assert_eq!(resolve_worker_count(0, 0), 1); // detection failed
/// assert_eq!(resolve_worker_count(10_000, 8), MAX_WORKERS);
/// ```
#[must_use]
pub fn resolve_worker_count(requested: usize, detected: usize) -> usize {
    let wanted = if requested == 0 { detected } else { requested };
    wanted.clamp(1, MAX_WORKERS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_means_the_detected_parallelism() {
        assert_eq!(resolve_worker_count(0, 1), 1);
        assert_eq!(resolve_worker_count(0, 2), 2);
        assert_eq!(resolve_worker_count(0, 64), 64);
    }

    #[test]
    fn zero_with_failed_detection_falls_back_to_inline() {
        assert_eq!(resolve_worker_count(0, 0), 1);
    }

    #[test]
    fn explicit_counts_ignore_detection() {
        assert_eq!(resolve_worker_count(1, 16), 1);
        assert_eq!(resolve_worker_count(8, 2), 8);
        assert_eq!(resolve_worker_count(MAX_WORKERS, 2), MAX_WORKERS);
    }

    #[test]
    fn counts_are_clamped_to_the_maximum() {
        assert_eq!(resolve_worker_count(MAX_WORKERS + 1, 2), MAX_WORKERS);
        assert_eq!(resolve_worker_count(0, usize::MAX), MAX_WORKERS);
        assert_eq!(resolve_worker_count(usize::MAX, 0), MAX_WORKERS);
    }
}
