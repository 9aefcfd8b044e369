//! The production half of the sync shim: `std` and `crossbeam-queue`.

use std::io;
use std::sync::atomic::AtomicU64 as StdAtomicU64;
use std::time::{Duration, Instant};

pub(crate) use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};
pub(crate) use std::thread::{JoinHandle, yield_now};
pub(crate) use std::thread_local;

/// Slots in each worker's bounded queue. A full queue spills to the overflow
/// queue, so this bounds memory per worker (~40 KiB), not correctness.
pub(crate) const QUEUE_CAPACITY: usize = 1024;
/// `submit_indexed` splits a batch into at most `(workers - 1) * PIECES_PER_WORKER`
/// range tasks up front; idle threads split further on demand.
pub(crate) const PIECES_PER_WORKER: usize = 4;

/// A worker's bounded MPMC queue.
pub(crate) struct Queue<T>(crossbeam_queue::ArrayQueue<T>);

impl<T> Queue<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        Queue(crossbeam_queue::ArrayQueue::new(capacity))
    }
    /// Pushes `value`, handing it back when the queue is full.
    pub(crate) fn push(&self, value: T) -> Result<(), T> {
        self.0.push(value)
    }
    pub(crate) fn pop(&self) -> Option<T> {
        self.0.pop()
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The unbounded overflow queue that takes what a full [`Queue`] refuses.
pub(crate) struct Injector<T>(crossbeam_queue::SegQueue<T>);

impl<T> Injector<T> {
    pub(crate) fn new() -> Self {
        Injector(crossbeam_queue::SegQueue::new())
    }
    pub(crate) fn push(&self, value: T) {
        self.0.push(value);
    }
    pub(crate) fn pop(&self) -> Option<T> {
        self.0.pop()
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A seed for a new producer's LCG: distinct per call, cheap, not crypto.
pub(crate) fn lcg_seed() -> u64 {
    static NEXT: StdAtomicU64 = StdAtomicU64::new(0x853c_49e6_748f_ea9b);
    // A Weyl sequence through the golden ratio, then a splitmix64 finaliser,
    // so consecutive threads start far apart in the LCG's cycle.
    let mut z = NEXT.fetch_add(0x9e37_79b9_7f4a_7c15, std::sync::atomic::Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The machine's parallelism (1 when it cannot be determined).
pub(crate) fn available_parallelism() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The spin phase's budget when every spinning thread has a core: long
/// enough that back-to-back batches (a submit a few µs after the last wait)
/// find a worker awake, short enough that a pool idle between ticks costs
/// a few µs of CPU per tick (`idle_cpu` in the benches measured 5, 10, 20
/// and 40 µs; past 10 µs the idle cost grows with no gain).
const SPIN_BUDGET: Duration = Duration::from_micros(10);
/// The budget when the pool has more threads than cores: a spinning thread
/// then takes a core from one with work, so it yields each round and gives
/// up sooner.
const SPIN_BUDGET_OVERSUBSCRIBED: Duration = Duration::from_micros(5);
/// `spin_loop` hints per round between two searches (~50 ns).
const HINTS_PER_ROUND: u32 = 16;

/// Times one spin phase (see `spin.rs`): when it is spent, and how to wait
/// between two search rounds.
pub(crate) struct SpinClock {
    start: Instant,
    budget: Duration,
    yielding: bool,
}

impl SpinClock {
    /// Starts a phase; `oversubscribed` picks the shorter, yielding budget.
    pub(crate) fn start(oversubscribed: bool) -> Self {
        SpinClock {
            start: Instant::now(),
            budget: if oversubscribed {
                SPIN_BUDGET_OVERSUBSCRIBED
            } else {
                SPIN_BUDGET
            },
            yielding: oversubscribed,
        }
    }
    /// Whether the phase used its budget.
    pub(crate) fn spent(&self) -> bool {
        self.start.elapsed() >= self.budget
    }
    /// Waits between two search rounds.
    pub(crate) fn pause(&mut self) {
        if self.yielding {
            yield_now();
        } else {
            for _ in 0..HINTS_PER_ROUND {
                std::hint::spin_loop();
            }
        }
    }
}

/// Nothing: the loom half yields here (see its docs); a real retry needs
/// no pause, it searches again at once.
#[inline]
pub(crate) fn retry_hint() {}

/// One step of the blocking backoff used where no pool is at hand
/// (`TaskGroup`'s `Drop`): yield a few times, then sleep briefly.
pub(crate) fn backoff(step: u32) {
    if step < 16 {
        yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// Spawns a named worker thread.
pub(crate) fn spawn_worker<F>(
    name: String,
    stack_size: Option<usize>,
    f: F,
) -> io::Result<JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    let mut builder = std::thread::Builder::new().name(name);
    if let Some(size) = stack_size {
        builder = builder.stack_size(size);
    }
    builder.spawn(f)
}

/// Pins the calling thread to the `n`-th core the OS reports (modulo the
/// core count); returns whether pinning succeeded.
pub(crate) fn pin_current_thread(n: usize) -> bool {
    match core_affinity::get_core_ids() {
        Some(cores) if !cores.is_empty() => core_affinity::set_for_current(cores[n % cores.len()]),
        _ => false,
    }
}

/// Lets `ThreadPool::try_build` return only once every worker thread runs
/// (and has its name), so thread counts and names are observable at once.
pub(crate) struct StartLatch {
    started: Mutex<usize>,
    all_started: Condvar,
}

impl StartLatch {
    pub(crate) fn new() -> Self {
        StartLatch {
            started: Mutex::new(0),
            all_started: Condvar::new(),
        }
    }
    /// Called by each worker as it starts.
    pub(crate) fn started(&self) {
        *super::lock(&self.started) += 1;
        self.all_started.notify_all();
    }
    /// Blocks until `n` workers called [`started`](Self::started).
    pub(crate) fn wait_for(&self, n: usize) {
        let mut started = super::lock(&self.started);
        while *started < n {
            started = super::wait(&self.all_started, started);
        }
    }
}
