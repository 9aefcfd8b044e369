//! The executor of one segment: its runners claim ready systems, run each once, and count
//! down its successors (the soundness argument is in the parent module's docs); and what a
//! segment keeps from one run to the next: its counters, and the timings that choose between
//! running it on the calling thread alone and spreading it over the pool.

use super::*;

pub(super) const SKIPPED: u8 = 0;
pub(super) const RAN: u8 = 1;
pub(super) const PANICKED: u8 = 2;

/// What one segment keeps from run to run: the per-node counters, reset in place at the start
/// of each run instead of allocated, and the [`Chooser`].
#[derive(Default)]
pub(crate) struct SegmentRuns {
    left: Vec<AtomicU32>,
    poisoned: Vec<AtomicBool>,
    status: Vec<AtomicU8>,
    /// The nodes with no predecessor, in index order or shuffled (the shuffled-start mode).
    pub(super) roots: Vec<u32>,
    pub(super) chooser: Chooser,
}

impl SegmentRuns {
    /// Resets the counters for a run of `segment`: every node waits for all its
    /// predecessors, none is poisoned, none has run; the roots are listed in index order.
    pub(super) fn reset(&mut self, segment: &Segment) {
        let n = segment.nodes.len();
        self.left.resize_with(n, || AtomicU32::new(0));
        self.poisoned.resize_with(n, || AtomicBool::new(false));
        self.status.resize_with(n, || AtomicU8::new(SKIPPED));
        for (left, &preds) in self.left.iter_mut().zip(&segment.preds) {
            *left.get_mut() = preds;
        }
        for poisoned in &mut self.poisoned {
            *poisoned.get_mut() = false;
        }
        for status in &mut self.status {
            *status.get_mut() = SKIPPED;
        }
        self.roots.clear();
        self.roots
            .extend((0..n as u32).filter(|&v| segment.preds[v as usize] == 0));
    }

    /// How node `v` ended in the last run: [`SKIPPED`], [`RAN`] or [`PANICKED`].
    pub(super) fn status(&mut self, v: usize) -> u8 {
        *self.status[v].get_mut()
    }
}

/// Chooses how a segment runs: on the calling thread alone, in a topological order, or spread
/// over the pool. A pool run pays for waking the workers (a system call, then tens of µs
/// before a parked worker runs on a virtual machine) and loses to one thread on a segment of
/// small systems; a segment of heavy disjoint systems gains. The chooser keeps the smoothed
/// wall time of recent runs in each mode and takes the faster, trying the other again every
/// [`Chooser::PROBE_EVERY`] runs so a segment whose systems grow is spread again. Either
/// way the world is the same: the graph orders every conflicting pair, and commands and
/// events apply in registration order.
#[derive(Default)]
pub(crate) struct Chooser {
    /// Smoothed wall time (ns) of runs on the calling thread; 0 until one is measured.
    inline_ns: u64,
    /// Smoothed wall time (ns) of runs over the pool; 0 until one is measured.
    pool_ns: u64,
    /// Runs since the slower mode was last tried.
    since_probe: u32,
}

impl Chooser {
    /// How often the slower mode is tried again.
    pub(super) const PROBE_EVERY: u32 = 16;

    /// Whether the next run goes over the pool: first the pool, then the calling thread, then
    /// the faster of the two, with a probe of the other every `PROBE_EVERY` runs.
    pub(super) fn pool(&mut self) -> bool {
        if self.pool_ns == 0 {
            return true;
        }
        if self.inline_ns == 0 {
            return false;
        }
        let pool_faster = self.pool_ns <= self.inline_ns;
        self.since_probe += 1;
        if self.since_probe >= Self::PROBE_EVERY {
            self.since_probe = 0;
            return !pool_faster;
        }
        pool_faster
    }

    /// Records a run's wall time: a quarter weight for the new run.
    pub(super) fn record(&mut self, pool: bool, nanos: u64) {
        let slot = if pool {
            &mut self.pool_ns
        } else {
            &mut self.inline_ns
        };
        let nanos = nanos.max(1);
        *slot = if *slot == 0 {
            nanos
        } else {
            (*slot * 3 + nanos) / 4
        };
    }
}

/// The ready list: popped from the end, or at random in the shuffled-start mode.
pub(super) struct Ready {
    pub(super) list: Vec<u32>,
    pub(super) rng: Option<u64>,
}

impl Ready {
    fn pop(&mut self) -> Option<u32> {
        match &mut self.rng {
            Some(rng) if !self.list.is_empty() => {
                let pick = (graph::split_mix(rng) % self.list.len() as u64) as usize;
                Some(self.list.swap_remove(pick))
            }
            _ => self.list.pop(),
        }
    }
}

/// One segment's run, shared by its runners.
pub(super) struct Exec<'a> {
    /// The phase's first node: node `v` of the segment is at `base + segment.nodes[v]`.
    pub(super) base: NonNull<FnNode>,
    pub(super) segment: &'a Segment,
    pub(super) world: NonNull<World>,
    pub(super) stamp: LayoutStamp,
    pub(super) tick: u64,
    pub(super) dt: f32,
    /// Per node: predecessors not finished yet.
    pub(super) left: &'a [AtomicU32],
    /// Per node: a predecessor panicked or was skipped; the node is skipped.
    pub(super) poisoned: &'a [AtomicBool],
    pub(super) status: &'a [AtomicU8],
    pub(super) panics: Mutex<Vec<(u32, Payload)>>,
    /// The nodes with no predecessor, claimed in order through `next_root`.
    pub(super) roots: &'a [u32],
    pub(super) next_root: AtomicUsize,
    /// Nodes readied by a predecessor's end, not started yet.
    pub(super) ready: Mutex<Ready>,
    /// Runners running.
    pub(super) active: AtomicUsize,
    pub(super) workers: usize,
    /// Whether to time each system (the tick profiler is on).
    pub(super) timed: bool,
}

// SAFETY: the nodes reached through `base` are disjoint (one per segment member: `nodes`
// holds distinct indices), and a node is dereferenced only by the runner that claimed it — a
// root through `next_root` (each index handed out once), any other node by popping it from
// `ready`, where it was pushed once (its count reached zero once); the world pointer is only
// read, under the module's argument. The rest is atomics and locks.
unsafe impl Sync for Exec<'_> {}

impl<'a> Exec<'a> {
    /// An execution of `segment` over `runs`' counters (reset for this run).
    ///
    /// # Safety
    ///
    /// `base` points at the first element of the phase's node list, every index of
    /// `segment.nodes` is in bounds of that list, and nothing else reaches those nodes while the
    /// execution lives (its runners dereference `base + segment.nodes[v]`).
    pub(super) unsafe fn new(
        segment: &'a Segment,
        runs: &'a SegmentRuns,
        base: NonNull<FnNode>,
        world: NonNull<World>,
        (stamp, tick, dt): (LayoutStamp, u64, f32),
        workers: usize,
        timed: bool,
    ) -> Exec<'a> {
        Exec {
            base,
            segment,
            world,
            stamp,
            tick,
            dt,
            left: &runs.left,
            poisoned: &runs.poisoned,
            status: &runs.status,
            panics: Mutex::new(Vec::new()),
            roots: &runs.roots,
            next_root: AtomicUsize::new(0),
            ready: Mutex::new(Ready {
                list: Vec::new(),
                rng: None,
            }),
            active: AtomicUsize::new(0),
            workers,
            timed,
        }
    }

    /// Runs node `v` unless a predecessor failed, catching its panic.
    pub(super) fn run_node(&self, v: u32) {
        let v = v as usize;
        if self.poisoned[v].load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: `segment.nodes[v]` is in bounds of the phase's node list, which nothing else
        // reaches meanwhile (the contract of `new`), and node `v` is run once, by this thread
        // (see `Sync` above).
        let node = unsafe { &mut *self.base.as_ptr().add(self.segment.nodes[v]) };
        let ctx = SystemContext {
            // SAFETY: the world is alive and not mutably borrowed for the segment.
            world: unsafe { self.world.as_ref() },
            stamp: self.stamp,
            tick: self.tick,
            dt: self.dt,
            last_run: node.last_run,
            output: NonNull::from(&mut node.output),
        };
        #[cfg(feature = "tracing")]
        let _span = freyr_profile::spans::system(node.label).entered();
        let system = &mut node.system;
        let start = self.timed.then(std::time::Instant::now);
        // SAFETY: `prepare` ran for this segment; the graph orders every system whose access
        // conflicts with this one's, so none runs meanwhile.
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| unsafe { system.run(&ctx) }));
        node.timing = start.map(|start| graph::RunTiming {
            start,
            end: std::time::Instant::now(),
            worker: freyr_sched::current_worker_index(),
        });
        match outcome {
            Ok(()) => self.status[v].store(RAN, Ordering::Relaxed),
            Err(payload) => {
                self.status[v].store(PANICKED, Ordering::Relaxed);
                self.poisoned[v].store(true, Ordering::Relaxed);
                self.panics
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((v as u32, payload));
            }
        }
    }

    /// Counts `v`'s successors down; returns how many became ready (pushed on `ready`).
    #[inline]
    pub(super) fn finish(&self, v: u32) -> usize {
        let failed = self.poisoned[v as usize].load(Ordering::Relaxed);
        let mut readied = 0;
        for (w, _) in &self.segment.succ[v as usize] {
            if failed {
                self.poisoned[*w as usize].store(true, Ordering::Relaxed);
            }
            // AcqRel: the last predecessor to count down sees every earlier one's writes, and
            // publishes them with the push below.
            if self.left[*w as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
                readied += 1;
                if self.workers > 1 && self.segment.nodes.len() > 1 {
                    self.ready
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .list
                        .push(*w);
                }
            }
        }
        readied
    }
}

/// Pops ready nodes and runs them until none is left, starting more runners when several
/// became ready and workers are idle.
pub(super) fn runner<'s>(exec: &'s Exec<'_>, scope: &'s Scope<'s, '_>) {
    let spawn_for = |mut readied: usize| {
        while readied > 1 && exec.active.load(Ordering::Relaxed) < exec.workers {
            exec.active.fetch_add(1, Ordering::Relaxed);
            scope.spawn(move |s| runner(exec, s));
            readied -= 1;
        }
    };
    // Roots first, a batch per claim: one contended add per batch, not per system (1,000
    // empty systems would otherwise pass one cache line between the workers 1,000 times).
    let batch = (exec.roots.len() / (exec.workers * 8)).clamp(1, 64);
    loop {
        let start = exec.next_root.fetch_add(batch, Ordering::Relaxed);
        if start >= exec.roots.len() {
            break;
        }
        for &v in &exec.roots[start..(start + batch).min(exec.roots.len())] {
            exec.run_node(v);
            spawn_for(exec.finish(v));
        }
    }
    loop {
        let next = exec.ready.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let Some(v) = next else { break };
        exec.run_node(v);
        spawn_for(exec.finish(v));
    }
    exec.active.fetch_sub(1, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::Chooser;

    /// The modes a chooser picks over `runs` runs, recording `pool_ns` or `inline_ns` for each.
    fn picks(chooser: &mut Chooser, runs: usize, pool_ns: u64, inline_ns: u64) -> Vec<bool> {
        (0..runs)
            .map(|_| {
                let pool = chooser.pool();
                chooser.record(pool, if pool { pool_ns } else { inline_ns });
                pool
            })
            .collect()
    }

    #[test]
    fn the_pool_first_then_one_thread_then_the_faster_with_probes() {
        let mut c = Chooser::default();
        let p = Chooser::PROBE_EVERY as usize;
        // The pool is slower: after one run of each, the calling thread, but for the probes.
        let modes = picks(&mut c, 2 + 4 * p, 50_000, 30_000);
        assert_eq!(modes[..2], [true, false]);
        let pooled: Vec<usize> = (2..modes.len()).filter(|&i| modes[i]).collect();
        assert_eq!(
            pooled.len(),
            4,
            "one probe of the pool per {p} runs: {pooled:?}"
        );
        assert!(pooled.windows(2).all(|w| w[1] - w[0] == p));
        // The systems grow: the pool gets faster than one thread, and the chooser follows
        // once the probes have measured it.
        let modes = picks(&mut c, 8 * p, 10_000, 60_000);
        assert!(modes[6 * p..].iter().filter(|&&pool| pool).count() >= 2 * p - 2);
        // A single slow run does not flip the choice at once.
        let mut c = Chooser::default();
        picks(&mut c, 2, 10_000, 30_000);
        c.record(true, 40_000);
        assert!(c.pool());
    }
}
