//! Freyr scheduling: a work-stealing thread pool, task groups and
//! `parallel_for`, written against the loom-checkable sync shim `freyr-sync`.
//!
//! Goals, in order:
//! 1. **Correct under any interleaving**: every task runs exactly once, a
//!    wait returns only after its group's tasks ran, no wake-up is lost, a
//!    panic is delivered to the waiter. The protocol is written down in
//!    `PROTOCOL.md` next to the code (rendered here as the [`protocol`]
//!    module) and model-checked by `loom-tests/`.
//! 2. **Cheap dispatch**: a chunk task is a small `Copy` value in a bounded
//!    MPMC queue (no heap allocation per task), a batch costs one
//!    group-counter increment, an [`IndexedJob`]'s `run_batch` is inlined
//!    into the pool's batch loop (`submit_job`), and an idle pool parks
//!    (~0 CPU).
//! 3. **No surprises**: a pool of one runs everything inline; `grain == 0`
//!    is a clear panic, never a hang; dropping a pool joins its threads.
//!
//! This crate is the pool only. The time tools around the tick (fixed step,
//! deadline jobs, the async pump, work budgets, the overrun governor) live in
//! `freyr-time`, which builds on it.
//!
//! # Example
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use freyr::ThreadPool;
//! use freyr::sched::TaskGroup;
//!
//! let pool = ThreadPool::new(4); // the calling thread + 3 workers
//!
//! // Scoped tasks borrow from the stack.
//! let words = ["work", "stealing", "pool"];
//! let letters = AtomicUsize::new(0);
//! pool.scope(|s| {
//!     for w in &words {
//!         let letters = &letters;
//!         s.spawn(move |_| {
//!             letters.fetch_add(w.len(), Ordering::Relaxed);
//!         });
//!     }
//! });
//! assert_eq!(letters.load(Ordering::Relaxed), 16);
//!
//! // The allocation-free chunk path: one shared job, indexed tasks.
//! fn chunk(total: &AtomicUsize, i: usize) {
//!     total.fetch_add(i, Ordering::Relaxed);
//! }
//! let total = AtomicUsize::new(0);
//! let group = TaskGroup::new();
//! // SAFETY: `total` and `group` outlive the wait.
//! unsafe { pool.submit_indexed(&group, &total, 1954, chunk) };
//! group.wait(&pool);
//! assert_eq!(total.load(Ordering::Relaxed), 1954 * 1953 / 2);
//!
//! // parallel_for: chunks claimed from a shared cursor.
//! let hits: Vec<AtomicUsize> = (0..1000).map(|_| AtomicUsize::new(0)).collect();
//! pool.parallel_for(hits.len(), 64, |i| {
//!     hits[i].fetch_add(1, Ordering::Relaxed);
//! });
//! assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
//! ```
//!
//! # The loom cfg
//!
//! Built with `RUSTFLAGS="--cfg freyr_loom"`, every primitive of the protocol
//! comes from `loom` (through the `freyr-sync` crate), the queues become
//! lock-free stand-ins (a slot array on loom's atomics) of capacity 2, and
//! spinning is off. The cfg is not meant for users. The mutants that prove
//! each model can fail are patches in `loom-tests/mutants/`, applied by
//! `.ci/loom.sh` to a scratch copy of the sources: nothing of them is here.

mod group;
mod group_inner;
mod group_wait;
mod job;
mod lcg;
mod metrics;
mod parallel_for;
mod payload;
mod pool;
mod scope;
mod shared;
mod sleep;
mod spin;
mod task;
mod worker_count;

#[doc = include_str!("../PROTOCOL.md")]
pub mod protocol {}

pub use group::TaskGroup;
pub use group_inner::GroupPanic;
pub use job::IndexedJob;
pub use metrics::{PoolMetrics, WorkerMetrics};
pub use payload::{drop_payload, keep_first, panic_message};
pub use pool::{PoolId, ThreadPool, ThreadPoolBuilder};
pub use scope::Scope;
pub use shared::current_worker_index;
pub use worker_count::{MAX_WORKERS, resolve_worker_count};
