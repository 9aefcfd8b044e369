//! The model-checking half of the sync shim: `loom`, with a lock-free slot
//! array on loom's atomics standing in for the real queues (which have no
//! loom hooks; see `loom_slots.rs`), and shrunk constants.

use std::io;

use super::loom_slots::Slots;

pub use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
pub use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
pub use loom::thread::{JoinHandle, yield_now};
pub use loom::thread_local;

/// Tiny, so that a model with three submissions reaches the overflow path.
pub const QUEUE_CAPACITY: usize = 2;
/// Under loom a spin phase is spent before it starts: every spin round
/// would only multiply the interleavings, and spinning never decides
/// correctness (a thread that does not spin parks, and parking is checked).
pub struct SpinClock;

impl SpinClock {
    /// `false`: under loom no idle thread spins.
    pub const SPINS: bool = false;
    /// Starts a phase (already spent).
    pub fn start(_oversubscribed: bool) -> Self {
        SpinClock
    }
    /// Starts a shortened phase (already spent, like every phase here).
    pub fn start_shortened(_oversubscribed: bool, _halvings: u32) -> Self {
        SpinClock
    }
    /// Always `true`: the phase is spent before it starts.
    pub fn spent(&mut self) -> bool {
        true
    }
    /// `None`: no clock under loom.
    pub fn last_read(&self) -> Option<std::time::Instant> {
        None
    }
    /// A yield, so loom schedules another thread.
    pub fn pause(&mut self) {
        yield_now();
    }
}

/// Under loom no time passes: a hint that reads a stopwatch sees zero (and under loom no
/// thread spins, so the only hint that reads one, splitting a range for a spinning thread,
/// never runs).
pub struct Stopwatch;

impl Stopwatch {
    /// Starts timing (nothing to read).
    pub fn start() -> Self {
        Stopwatch
    }
    /// Always 0.
    pub fn elapsed_nanos(&self) -> u64 {
        0
    }
}

/// One piece per background worker: in a pool of two, a batch of two indices is one range task that
/// has to be split at run time (the path model 8 checks).
pub const PIECES_PER_WORKER: usize = 1;

/// Stand-in for `crossbeam_queue::ArrayQueue`: bounded, MPMC, lock-free,
/// with the real queue's release/acquire hand-off and nothing more
/// ([`Slots`]); the queue models in `loom-tests/` race pops on it directly.
pub struct Queue<T>(Slots<T>);

impl<T: Copy> Queue<T> {
    /// An empty queue of `capacity` slots.
    pub fn new(capacity: usize) -> Self {
        Queue(Slots::new(capacity))
    }
    /// Pushes `value`, handing it back when the queue is full.
    ///
    /// # Errors
    ///
    /// `value` itself, when every slot is taken.
    pub fn push(&self, value: T) -> Result<(), T> {
        self.0.push(value)
    }
    /// Takes the oldest value, or `None` when the queue is empty.
    pub fn pop(&self) -> Option<T> {
        self.0.pop()
    }
    /// Whether the queue looked empty at some moment during the call.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Slots of the overflow queue's stand-in. The production `SegQueue` is
/// unbounded; no model overflows more than this many tasks.
const OVERFLOW_CAPACITY: usize = 4;

/// Stand-in for `crossbeam_queue::SegQueue`: the same slots as [`Queue`]
/// (`SegQueue` hands values off the same way: release on publish, acquire
/// on take), bounded at a size no model reaches.
pub struct Injector<T>(Slots<T>);

impl<T: Copy> Injector<T> {
    /// An empty overflow stand-in.
    pub fn new() -> Self {
        Injector(Slots::new(OVERFLOW_CAPACITY))
    }
    /// Pushes `value`.
    ///
    /// # Panics
    ///
    /// If the model overflows more than the stand-in holds (shrink the model).
    pub fn push(&self, value: T) {
        assert!(
            self.0.push(value).is_ok(),
            "freyr-sync (loom): the overflow stand-in holds {OVERFLOW_CAPACITY} tasks; \
             shrink the model or raise OVERFLOW_CAPACITY"
        );
    }
    /// Takes a value, or `None` when there is none.
    pub fn pop(&self) -> Option<T> {
        self.0.pop()
    }
    /// Whether no value was published when it was read.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A fixed seed: loom replays executions, so nothing may vary between them.
pub fn lcg_seed() -> u64 {
    0x853c_49e6_748f_ea9b
}

/// Models run with small, explicit pool sizes; "auto" means 2.
pub fn available_parallelism() -> usize {
    2
}

/// A loop that retries because of another thread must yield under loom, so
/// loom schedules that thread and lets the retry's loads see newer values.
pub fn retry_hint() {
    yield_now();
}

/// Under loom every backoff step is a yield.
pub fn backoff(_step: u32) {
    yield_now();
}

/// Spawns a named loom thread (loom ignores the stack size).
pub fn spawn_worker<F>(name: String, stack_size: Option<usize>, f: F) -> io::Result<JoinHandle<()>>
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
pub fn pin_current_thread(_n: usize) -> bool {
    false
}

/// Under loom the start latch is a no-op: models start racing at once, and
/// start-up is not part of the protocol being checked.
pub struct StartLatch;

impl StartLatch {
    /// A latch (a no-op).
    pub fn new() -> Self {
        StartLatch
    }
    /// Nothing.
    pub fn started(&self) {}
    /// Returns at once.
    pub fn wait_for(&self, _n: usize) {}
}
