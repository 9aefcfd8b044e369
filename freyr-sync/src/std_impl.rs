//! The production half of the sync shim: `std` and `crossbeam-queue`.

use std::io;
use std::time::{Duration, Instant};

pub use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
pub use std::sync::{Arc, Condvar, Mutex, MutexGuard};
pub use std::thread::{JoinHandle, yield_now};
pub use std::thread_local;

/// Slots in each worker's bounded queue. A full queue spills to the overflow
/// queue, so this bounds memory per worker (~40 KiB), not correctness. Under Miri the queues
/// are 64 slots, so the tests that fill one to make it spill stay within what Miri interprets
/// in seconds; the spill path is the same.
pub const QUEUE_CAPACITY: usize = if cfg!(miri) { 64 } else { 1024 };
/// `submit_indexed` splits a batch into at most `(workers - 1) * PIECES_PER_WORKER`
/// range tasks up front; idle threads split further on demand.
pub const PIECES_PER_WORKER: usize = 4;

/// A worker's bounded MPMC queue (`crossbeam_queue::ArrayQueue`): a pushed value is taken by
/// exactly one `pop`, and the taker happens-after the pusher.
///
/// # Examples
///
/// ```
/// let queue = freyr_sync::Queue::new(1);
/// assert_eq!(queue.push(7), Ok(()));
/// assert_eq!(queue.push(8), Err(8)); // full: handed back
/// assert_eq!(queue.pop(), Some(7));
/// assert!(queue.is_empty());
/// ```
pub struct Queue<T>(crossbeam_queue::ArrayQueue<T>);

impl<T> Queue<T> {
    /// An empty queue of `capacity` (> 0) slots.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0.
    pub fn new(capacity: usize) -> Self {
        Queue(crossbeam_queue::ArrayQueue::new(capacity))
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

/// The unbounded overflow queue (`crossbeam_queue::SegQueue`) that takes what a full
/// [`Queue`] refuses; it hands values off as [`Queue`] does.
///
/// # Examples
///
/// ```
/// let overflow = freyr_sync::Injector::default();
/// overflow.push(3);
/// assert!(!overflow.is_empty());
/// assert_eq!(overflow.pop(), Some(3));
/// assert_eq!(overflow.pop(), None);
/// ```
pub struct Injector<T>(crossbeam_queue::SegQueue<T>);

impl<T> Default for Injector<T> {
    fn default() -> Self {
        Injector::new()
    }
}

impl<T> Injector<T> {
    /// An empty overflow queue.
    pub fn new() -> Self {
        Injector(crossbeam_queue::SegQueue::new())
    }
    /// Pushes `value` (never full).
    pub fn push(&self, value: T) {
        self.0.push(value);
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

/// A seed for a new producer's LCG: distinct per call, cheap, not crypto.
///
/// # Examples
///
/// ```
/// assert_ne!(freyr_sync::lcg_seed(), freyr_sync::lcg_seed());
/// ```
pub fn lcg_seed() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0x853c_49e6_748f_ea9b);
    // A Weyl sequence through the golden ratio, then a splitmix64 finaliser,
    // so consecutive threads start far apart in the LCG's cycle.
    let mut z = NEXT.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The machine's parallelism (1 when it cannot be determined).
///
/// # Examples
///
/// ```
/// assert!(freyr_sync::available_parallelism() >= 1);
/// ```
pub fn available_parallelism() -> usize {
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
/// `spin_loop` hints per round between two searches. What a hint costs depends on the core: a
/// few cycles on older ones, about 30 ns on the AMD EPYC virtual machine of the last
/// measurements. There, 16 hints a round (about 0.5 µs) made a spinning worker see new work
/// about 0.25 µs after it was pushed on average, and a group waiter see its group done as late
/// after the last task ended: a pool scope that hands one spawn to a spinning worker and
/// waits for it took 0.45–0.49 µs from the scope's start to the worker's start and 0.29–0.32 µs
/// from the worker's end to the scope's return, against 0.31–0.32 µs and 0.15–0.20 µs with two
/// hints (runs in turn; a scratch timer around `ThreadPool::scope`). Two cost the same as one
/// there. A spinner now reads the queues' lines several times as often; it writes none of
/// them until it finds a task, so the busy threads' pushes pay one transfer each, as before.
/// (Four hints once made
/// ThreadSanitizer runs split ranges after every index; the pace rule for spinners now reads
/// its clock at doubling counts, and two hints passed 25 runs of those tests, 10 of them beside
/// two busy loops.)
const HINTS_PER_ROUND: u32 = 2;

/// Times one spin phase of an idle pool thread: when it is spent, and how to wait between
/// two search rounds.
///
/// # Examples
///
/// ```
/// let mut clock = freyr_sync::SpinClock::start(false);
/// while !clock.spent() {
///     clock.pause();
/// }
/// assert!(clock.spent());
/// ```
pub struct SpinClock {
    start: Instant,
    /// The clock's last reading: the phase's start, then each [`spent`](Self::spent) check's.
    last: Instant,
    budget: Duration,
    yielding: bool,
}

impl SpinClock {
    /// Whether idle threads spin in this build at all (`true` here; the loom build never
    /// spins, so a model explores no time-bound loop).
    pub const SPINS: bool = true;
    /// Starts a phase; `oversubscribed` (more pool threads than cores) picks the shorter,
    /// yielding budget.
    pub fn start(oversubscribed: bool) -> Self {
        SpinClock::start_shortened(oversubscribed, 0)
    }
    /// Starts a phase whose budget is the full one halved `halvings` times (a thread whose
    /// recent phases found nothing; 0: the full budget; 31 or more: no time at all, so the
    /// phase is its one search round).
    ///
    /// ```
    /// let mut clock = freyr_sync::SpinClock::start_shortened(false, 40);
    /// assert!(clock.spent());
    /// ```
    pub fn start_shortened(oversubscribed: bool, halvings: u32) -> Self {
        // Under Miri every phase is its one search round (the budget of a worker whose phases
        // keep finding nothing): Miri interprets each round of every idle thread, and a spin
        // loop is safe code, while the searches and the park that follow are what it checks.
        let full = if cfg!(miri) {
            Duration::ZERO
        } else if oversubscribed {
            SPIN_BUDGET_OVERSUBSCRIBED
        } else {
            SPIN_BUDGET
        };
        let start = Instant::now();
        SpinClock {
            start,
            last: start,
            budget: full
                .checked_div(1 << halvings.min(31))
                .unwrap_or(Duration::ZERO),
            yielding: oversubscribed,
        }
    }
    /// Whether the phase used its budget (reads the clock).
    pub fn spent(&mut self) -> bool {
        self.last = Instant::now();
        self.last.duration_since(self.start) >= self.budget
    }
    /// When the phase last read the clock (its start, or its last [`spent`](Self::spent)
    /// check), for a caller that needs a time close to now without reading the clock again:
    /// a thread that finds work in a search round takes this as the moment it found it, at
    /// most one round early. `None` where the build has no clock (loom).
    ///
    /// ```
    /// let before = std::time::Instant::now();
    /// let mut clock = freyr_sync::SpinClock::start(false);
    /// let started = clock.last_read().unwrap();
    /// assert!(started >= before);
    /// clock.spent();
    /// assert!(clock.last_read().unwrap() >= started);
    /// ```
    #[inline]
    pub fn last_read(&self) -> Option<Instant> {
        Some(self.last)
    }
    /// Waits between two search rounds.
    pub fn pause(&mut self) {
        if self.yielding {
            yield_now();
        } else {
            for _ in 0..HINTS_PER_ROUND {
                std::hint::spin_loop();
            }
        }
    }
}

/// A start time for a scheduling hint that needs one (how long a range's indices take, to
/// decide whether handing half of it to an idle thread is worth the hand-off).
///
/// # Examples
///
/// ```
/// let watch = freyr_sync::Stopwatch::start();
/// std::thread::sleep(std::time::Duration::from_millis(1));
/// assert!(watch.elapsed_nanos() >= 1_000_000);
/// ```
pub struct Stopwatch(Instant);

impl Stopwatch {
    /// Starts timing now.
    #[inline]
    pub fn start() -> Self {
        Stopwatch(Instant::now())
    }
    /// Nanoseconds since [`start`](Self::start), saturating at `u64::MAX`.
    #[inline]
    pub fn elapsed_nanos(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Called before a loop retries because of another thread. Nothing here: the loom half
/// yields (see its docs); a real retry needs no pause, it searches again at once.
///
/// # Examples
///
/// ```
/// freyr_sync::retry_hint(); // returns at once
/// ```
#[inline]
pub fn retry_hint() {}

/// One step of the blocking backoff used where no pool is at hand
/// (`TaskGroup`'s `Drop`): yield a few times, then sleep briefly.
///
/// # Examples
///
/// ```
/// let start = std::time::Instant::now();
/// freyr_sync::backoff(100); // a late step sleeps
/// assert!(start.elapsed() >= std::time::Duration::from_micros(50));
/// ```
pub fn backoff(step: u32) {
    if step < 16 {
        yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// Spawns a named worker thread with `stack_size` bytes of stack (the platform's default
/// for `None`).
///
/// # Errors
///
/// The OS error when the thread cannot be spawned.
///
/// # Examples
///
/// ```
/// let handle = freyr_sync::spawn_worker("w-0".into(), None, || {
///     assert_eq!(std::thread::current().name(), Some("w-0"));
/// })
/// .unwrap();
/// handle.join().unwrap();
/// ```
pub fn spawn_worker<F>(name: String, stack_size: Option<usize>, f: F) -> io::Result<JoinHandle<()>>
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
/// core count); returns whether pinning succeeded. Pinning is a best effort: on failure the
/// thread stays unpinned.
///
/// # Examples
///
/// ```
/// let pinned = std::thread::spawn(|| freyr_sync::pin_current_thread(0)).join().unwrap();
/// let _ = pinned; // `false` where the OS refuses
/// ```
pub fn pin_current_thread(n: usize) -> bool {
    match core_affinity::get_core_ids() {
        Some(cores) if !cores.is_empty() => core_affinity::set_for_current(cores[n % cores.len()]),
        _ => false,
    }
}

/// Lets `ThreadPool::try_build` return only once every worker thread runs
/// (and has its name), so thread counts and names are observable at once.
///
/// # Examples
///
/// ```
/// use freyr_sync::{Arc, StartLatch};
///
/// let latch = Arc::new(StartLatch::default());
/// let threads: Vec<_> = (0..3)
///     .map(|_| {
///         let latch = Arc::clone(&latch);
///         std::thread::spawn(move || latch.started())
///     })
///     .collect();
/// latch.wait_for(3); // returns once all three started
/// threads.into_iter().for_each(|t| t.join().unwrap());
/// ```
pub struct StartLatch {
    started: Mutex<usize>,
    all_started: Condvar,
}

impl Default for StartLatch {
    fn default() -> Self {
        StartLatch::new()
    }
}

impl StartLatch {
    /// A latch no worker has passed yet.
    pub fn new() -> Self {
        StartLatch {
            started: Mutex::new(0),
            all_started: Condvar::new(),
        }
    }
    /// Called by each worker as it starts.
    pub fn started(&self) {
        *crate::lock(&self.started) += 1;
        self.all_started.notify_all();
    }
    /// Blocks until `n` workers called [`started`](Self::started).
    pub fn wait_for(&self, n: usize) {
        let mut started = crate::lock(&self.started);
        while *started < n {
            started = crate::wait(&self.all_started, started);
        }
    }
}
