//! The executor of one segment: its runners claim ready systems, run each once, and count
//! down its successors (the soundness argument is in the parent module's docs). What a segment
//! keeps from run to run (its counters, the choice between one thread and the pool) is in
//! `crate::systems::runs`.

use super::*;
use crate::shares::Share;
use crate::systems::runs::SegmentRuns;

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
    pub(super) panics: Mutex<Vec<(u32, Payload)>>,
    /// The nodes that ran and left work for the updating thread (see `SegmentRuns::report`).
    pub(super) report: &'a Mutex<Vec<u32>>,
    /// The nodes with no predecessor, claimed through `shares`.
    pub(super) roots: &'a [u32],
    /// The runners' shares of `roots`, one per runner started with the segment.
    pub(super) shares: &'a [Share],
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
// root through its share (the shares split the root list into disjoint ranges, and each index
// of a range is handed out once, from one end or the other, by a compare-exchange on the
// range's one word: `Share::claim`), any other node by popping it from `ready`, where it was
// pushed once (its count reached zero once); the world pointer is only read, under the
// module's argument. The rest is atomics and locks.
unsafe impl Sync for Exec<'_> {}

impl<'a> Exec<'a> {
    /// An execution of `segment` over `runs`' counters (reset for this run), claiming `roots`
    /// (the segment's, or their shuffled copy).
    ///
    /// # Safety
    ///
    /// `base` points at the first element of the phase's node list, every index of
    /// `segment.nodes` is in bounds of that list, and nothing else reaches those nodes while the
    /// execution lives (its runners dereference `base + segment.nodes[v]`).
    pub(super) unsafe fn new(
        segment: &'a Segment,
        (runs, roots): (&'a SegmentRuns, &'a [u32]),
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
            panics: Mutex::new(Vec::new()),
            report: &runs.report,
            roots,
            shares: &runs.shares,
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
            Ok(()) => {
                node.last_run = Some(self.tick);
                if !node.output.is_empty() || node.timing.is_some() {
                    self.report
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(v as u32);
                }
            }
            Err(payload) => {
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

/// Claims roots, from the front of its own share `home` first and then from the back of the
/// others' (a runner started later, `home` `None`, has no share of its own), then pops ready
/// nodes, running each until none is left; starts more runners when several nodes became ready
/// and workers are idle.
pub(super) fn runner<'s>(exec: &'s Exec<'_>, scope: &'s Scope<'s, '_>, home: Option<usize>) {
    let spawn_for = |mut readied: usize| {
        while readied > 1 && exec.active.load(Ordering::Relaxed) < exec.workers {
            exec.active.fetch_add(1, Ordering::Relaxed);
            scope.spawn(move |s| runner(exec, s, None));
            readied -= 1;
        }
    };
    let run = |v: u32| {
        exec.run_node(v);
        spawn_for(exec.finish(v));
    };
    // Roots in batches: one claim per batch, not per system (1,000 empty systems would
    // otherwise pass one cache line between the workers 1,000 times).
    let batch = (exec.roots.len() / (exec.workers * 8)).clamp(1, 64) as u32;
    Share::drain(exec.shares, home, batch, |i| run(exec.roots[i]));
    // A segment without edges readies no node: every node is a root.
    while exec.roots.len() < exec.segment.nodes.len() {
        let next = exec.ready.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let Some(v) = next else { break };
        exec.run_node(v);
        spawn_for(exec.finish(v));
    }
    exec.active.fetch_sub(1, Ordering::Relaxed);
}
