//! Freyr scheduling: a work-stealing thread pool, task groups and `parallel_for`.
