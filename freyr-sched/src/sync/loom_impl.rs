//! The model-checking half of the sync shim: `loom`, with a loom
//! `Mutex<VecDeque>` standing in for crossbeam's queues (which have no loom
//! hooks) and shrunk constants.

use std::collections::VecDeque;
use std::io;

pub(crate) use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
pub(crate) use loom::thread::{JoinHandle, yield_now};
pub(crate) use loom::thread_local;

/// Tiny, so that a model with three submissions reaches the overflow path.
pub(crate) const QUEUE_CAPACITY: usize = 2;
/// No spinning under loom: every spin round is just more interleavings.
pub(crate) const SPIN_ROUNDS: u32 = 0;

/// [`SPIN_ROUNDS`] as a call, so a loop over a zero count is not flagged as
/// an empty range in the loom build.
#[inline]
pub(crate) fn spin_rounds() -> u32 {
    SPIN_ROUNDS
}
/// One piece per background worker: in a pool of two, a batch of two indices is one range task that
/// has to be split at run time (the path model 8 checks).
pub(crate) const PIECES_PER_WORKER: usize = 1;

/// Stand-in for `crossbeam_queue::ArrayQueue`: bounded, MPMC, linearizable.
pub(crate) struct Queue<T> {
    items: Mutex<VecDeque<T>>,
    capacity: usize,
}

impl<T: Copy> Queue<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        Queue {
            items: Mutex::new(VecDeque::with_capacity(capacity)),
            capacity,
        }
    }
    pub(crate) fn push(&self, value: T) -> Result<(), T> {
        let mut items = super::lock(&self.items);
        if items.len() == self.capacity {
            return Err(value);
        }
        items.push_back(value);
        Ok(())
    }
    #[cfg(not(freyr_mutant = "pop_not_atomic"))]
    pub(crate) fn pop(&self) -> Option<T> {
        super::lock(&self.items).pop_front()
    }
    /// MUTANT: reads the front, releases the lock, then removes it — two
    /// threads can both read the same last task.
    #[cfg(freyr_mutant = "pop_not_atomic")]
    pub(crate) fn pop(&self) -> Option<T> {
        let front = super::lock(&self.items).front().copied();
        if front.is_some() {
            super::lock(&self.items).pop_front();
        }
        front
    }
    pub(crate) fn is_empty(&self) -> bool {
        super::lock(&self.items).is_empty()
    }
}

/// Stand-in for `crossbeam_queue::SegQueue`: unbounded, MPMC.
pub(crate) struct Injector<T>(Mutex<VecDeque<T>>);

impl<T> Injector<T> {
    pub(crate) fn new() -> Self {
        Injector(Mutex::new(VecDeque::new()))
    }
    pub(crate) fn push(&self, value: T) {
        super::lock(&self.0).push_back(value);
    }
    pub(crate) fn pop(&self) -> Option<T> {
        super::lock(&self.0).pop_front()
    }
    pub(crate) fn is_empty(&self) -> bool {
        super::lock(&self.0).is_empty()
    }
}

/// A fixed seed: loom replays executions, so nothing may vary between them.
pub(crate) fn lcg_seed() -> u64 {
    0x853c_49e6_748f_ea9b
}

/// Models run with small, explicit pool sizes; "auto" means 2.
pub(crate) fn available_parallelism() -> usize {
    2
}

/// A spin round under loom is a yield, so loom can schedule the other threads.
pub(crate) fn spin_hint(_round: u32) {
    yield_now();
}

/// Under loom every backoff step is a yield.
pub(crate) fn backoff(_step: u32) {
    yield_now();
}

/// Spawns a named loom thread (loom ignores the stack size).
pub(crate) fn spawn_worker<F>(
    name: String,
    stack_size: Option<usize>,
    f: F,
) -> io::Result<JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    let mut builder = loom::thread::Builder::new().name(name);
    if let Some(size) = stack_size {
        builder = builder.stack_size(size);
    }
    builder.spawn(f)
}

/// No pinning inside a model.
pub(crate) fn pin_current_thread(_n: usize) -> bool {
    false
}

/// Under loom the start latch is a no-op: models start racing at once, and
/// start-up is not part of the protocol being checked.
pub(crate) struct StartLatch;

impl StartLatch {
    pub(crate) fn new() -> Self {
        StartLatch
    }
    pub(crate) fn started(&self) {}
    pub(crate) fn wait_for(&self, _n: usize) {}
}
