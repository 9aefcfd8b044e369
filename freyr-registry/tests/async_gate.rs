//! A fixed-step gate reads an async system's work through the [`AsyncProgress`] that
//! `add_async_system` returns: with it as the gate, a tick waits for the work launched by the
//! tick before, so every result is applied exactly one tick after its launch however slow the
//! work (lockstep). The handle never blocks, even when read from the system's own work.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use freyr_registry::{AsyncProgress, AsyncSystem, Launched, Phase, Process, Registry};
use freyr_time::{Discard, ManualClock};

static MADE: AtomicUsize = AtomicUsize::new(0);
static DROPPED: AtomicUsize = AtomicUsize::new(0);

/// A result, tallied: made once by the work, dropped once by whoever ends up with it.
struct Echo(u64);
impl Echo {
    fn new(tick: u64) -> Echo {
        MADE.fetch_add(1, Ordering::SeqCst);
        Echo(tick)
    }
}
impl Drop for Echo {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, Ordering::SeqCst);
    }
}

/// Echoes its launch tick from the pool once the test released that tick's work
/// (`released > tick`); records `(launch tick, apply tick)`.
struct Slow {
    released: Arc<AtomicU64>,
    applied: Arc<Mutex<Vec<(u64, u64)>>>,
}

impl AsyncSystem for Slow {
    type Request = u64;
    type Result = Echo;
    type Error = String;
    fn collect(&mut self, registry: &mut Registry) -> Option<u64> {
        Some(registry.tick())
    }
    fn process(&mut self, tick: Arc<u64>) -> Process<Echo, String> {
        let released = Arc::clone(&self.released);
        Process::on_pool(move || {
            while released.load(Ordering::Acquire) <= *tick {
                std::thread::yield_now();
            }
            Ok(Echo::new(*tick))
        })
    }
    fn apply(&mut self, registry: &mut Registry, echo: Echo, launched: &Launched<u64>) {
        assert_eq!(echo.0, launched.tick);
        let at = registry.tick();
        self.applied.lock().unwrap().push((launched.tick, at));
    }
}

fn wait_until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out: {what}"
        );
        std::thread::yield_now();
    }
}

#[test]
fn a_gate_on_the_progress_holds_each_tick_until_the_work_before_it_settled() {
    let released = Arc::new(AtomicU64::new(0));
    let applied = Arc::new(Mutex::new(Vec::new()));
    let clock = ManualClock::new();
    let mut registry = Registry::with_workers(3);
    registry
        .set_fixed_step(Duration::from_millis(10), clock.clone())
        .unwrap();
    let progress = registry.add_async_system(
        Phase::Update,
        Slow {
            released: Arc::clone(&released),
            applied: Arc::clone(&applied),
        },
    );
    registry.add_gate(progress.clone());
    assert!(progress.all_settled(), "nothing launched yet");

    clock.advance(Duration::from_millis(20)); // ticks 0 and 1 due
    let frame = registry.run_frame();
    assert_eq!(
        (frame.ran, frame.held),
        (1, true),
        "tick 1 waits for tick 0's work"
    );
    assert_eq!((progress.in_flight(), progress.drainable()), (1, 0));
    assert!(!progress.all_settled());
    let frame = registry.run_frame();
    assert_eq!((frame.ran, frame.held), (0, true), "still waiting");

    released.store(1, Ordering::Release);
    wait_until("tick 0's work", || progress.all_settled());
    assert_eq!((progress.in_flight(), progress.drainable()), (1, 1));
    let frame = registry.run_frame();
    assert_eq!((frame.ran, frame.held), (1, false));
    assert_eq!(*applied.lock().unwrap(), [(0, 1)]);
    assert_eq!(progress.in_flight(), 1, "tick 1's launch");

    // Released ahead: whatever the work's speed, each result lands one tick after its launch.
    released.store(u64::MAX, Ordering::Release);
    for _ in 0..4 {
        clock.advance(Duration::from_millis(10));
        wait_until("the work in flight", || progress.all_settled());
        let frame = registry.run_frame();
        assert_eq!((frame.ran, frame.held), (1, false));
    }
    let applied = applied.lock().unwrap().clone();
    assert_eq!(registry.tick(), 6);
    assert_eq!(applied, (0..5).map(|t| (t, t + 1)).collect::<Vec<_>>());
    assert_eq!(registry.held_ticks(), 2);
    // The last launch is still in flight; settling hands it to `discard`.
    assert_eq!(registry.settle_systems(), 1);
    assert_eq!(progress.in_flight(), 0);
    drop(registry);
    assert_eq!(
        DROPPED.load(Ordering::SeqCst),
        MADE.load(Ordering::SeqCst),
        "every result dropped exactly once"
    );
}

/// Reads its own progress from its work (run inline under the pump on a one-worker pool)
/// and from `apply` and `discard`.
struct Introspect {
    progress: Arc<OnceLock<AsyncProgress>>,
    seen: Arc<Mutex<Vec<(&'static str, usize)>>>,
}

impl AsyncSystem for Introspect {
    type Request = ();
    type Result = usize;
    type Error = String;
    fn collect(&mut self, _: &mut Registry) -> Option<()> {
        Some(())
    }
    fn process(&mut self, _: Arc<()>) -> Process<usize, String> {
        let progress = Arc::clone(&self.progress);
        Process::on_pool(move || Ok(progress.get().unwrap().in_flight()))
    }
    fn apply(&mut self, _: &mut Registry, in_work: usize, _: &Launched<()>) {
        let now = self.progress.get().unwrap().in_flight();
        self.seen
            .lock()
            .unwrap()
            .extend([("work", in_work), ("apply", now)]);
    }
    fn discard(&mut self, _: &mut Registry, why: Discard<usize, String>, _: &Launched<()>) {
        assert!(matches!(why, Discard::Unapplied(0)), "{why:?}");
        let now = self.progress.get().unwrap().in_flight();
        self.seen.lock().unwrap().push(("discard", now));
    }
    fn capacity(&self) -> usize {
        2
    }
}

#[test]
fn the_progress_never_blocks_even_from_the_systems_own_work() {
    let progress = Arc::new(OnceLock::new());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut registry = Registry::with_workers(1); // the work runs inline, in `launch`
    let handle = registry.add_async_system(
        Phase::Update,
        Introspect {
            progress: Arc::clone(&progress),
            seen: Arc::clone(&seen),
        },
    );
    progress.set(handle.clone()).unwrap();
    registry.update(0.1); // launches; the work reads the counts from before its launch
    assert_eq!((handle.in_flight(), handle.drainable()), (1, 1));
    registry.update(0.1); // applies (the pump unlocked), launches again
    assert_eq!(registry.settle_systems(), 1);
    assert_eq!(
        *seen.lock().unwrap(),
        [("work", 0), ("apply", 0), ("discard", 1)],
        "the settle's discard reads the counts from before the settle (its work read 0)"
    );
    assert!(handle.all_settled());
}
