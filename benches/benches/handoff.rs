//! Criterion bench `handoff`: what handing work to a second thread and waiting for it costs, on
//! this machine, with no scheduler in the way, beside what Freyr's and rayon's scopes cost for the
//! same fork-join. It is the floor under every two-thread speed-up a report quotes: a tick whose
//! parallel part takes `t` on one thread can take no less than `t / 2` plus one hand-off on two.
//!
//! Every row runs two threads, each doing the same fixed piece of work (`work`, a chain of
//! dependent multiply-adds of about a microsecond), so each row's time minus `work_once` is the
//! cost of the hand-off there and back:
//! - `handoff/work_once`: the piece once, on the calling thread (no hand-off: the ideal of a
//!   two-thread split);
//! - `handoff/bare_signal`: the calling thread writes a sequence number into one atomic word, does
//!   its piece and spins until a second thread (spinning on that word) has done its own piece and
//!   written the number back into another: two cache lines moving between the cores, nothing else;
//! - `handoff/freyr_scope`: `ThreadPool::scope` on a pool of two (the calling thread and one
//!   worker), spawning one piece and doing the other;
//! - `handoff/rayon_scope`: `rayon::scope` inside `install` on a pool of two threads, the same.
//!
//! Between iterations every row's second thread is spinning (criterion runs the iterations back
//! to back), so no row pays for a parked thread's wake-up. On a machine whose cores do not share
//! a cache (or a VM whose virtual cores stop sharing one for a while) `bare_signal` itself grows:
//! compare rows from one run only.
//!
//! `cargo bench -p freyr-benches --bench handoff`

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use freyr_sched::ThreadPool;

/// Dependent multiply-adds per piece: about a microsecond on a 3 GHz core (each waits for the
/// last; `black_box` keeps the chain from being folded).
const STEPS: u64 = 700;

/// One piece of work: a chain of `STEPS` dependent multiply-adds.
#[inline(never)]
fn work() -> u64 {
    let mut x = 1u64;
    for i in 0..STEPS {
        x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
    }
    x
}

/// A word on its own cache line, so the two signals do not share one.
#[repr(align(128))]
struct Line(AtomicU64);

/// Two threads handing a sequence number back and forth through two words.
struct Signal {
    go: Line,
    done: Line,
}

/// The value of `go` that tells the helper to stop.
const STOP: u64 = u64::MAX;

impl Signal {
    /// The helper's loop: spins on `go`, does a piece for each new number and writes the number
    /// into `done`, until `go` is [`STOP`].
    fn help(&self) {
        let mut seen = 0;
        loop {
            let go = self.go.0.load(Ordering::Acquire);
            if go == STOP {
                return;
            }
            if go == seen {
                std::hint::spin_loop();
                continue;
            }
            seen = go;
            black_box(work());
            self.done.0.store(go, Ordering::Release);
        }
    }

    /// One fork-join: hands a piece to the helper, does one, waits for the helper's.
    #[inline(never)]
    fn fork_join(&self, seq: u64) {
        self.go.0.store(seq, Ordering::Release);
        black_box(work());
        while self.done.0.load(Ordering::Acquire) != seq {
            std::hint::spin_loop();
        }
    }
}

#[inline(never)]
fn freyr_scope(pool: &ThreadPool) {
    pool.scope(|s| {
        s.spawn(|_| {
            black_box(work());
        });
        black_box(work());
    });
}

#[inline(never)]
fn rayon_scope() {
    rayon::scope(|s| {
        s.spawn(|_| {
            black_box(work());
        });
        black_box(work());
    });
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("handoff");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    group.bench_function("work_once", |b| b.iter(work));

    group.bench_function("bare_signal", |b| {
        let signal = Signal {
            go: Line(AtomicU64::new(0)),
            done: Line(AtomicU64::new(0)),
        };
        /// Stops the helper however the measuring loop ends, so the scope's join returns.
        struct Stop<'a>(&'a Signal);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.go.0.store(STOP, Ordering::Release);
            }
        }
        std::thread::scope(|threads| {
            threads.spawn(|| signal.help());
            let _stop = Stop(&signal);
            let mut seq = 0;
            b.iter(|| {
                seq += 1;
                signal.fork_join(seq);
            });
        });
    });

    let freyr = ThreadPool::new(2);
    assert_eq!(freyr.workers(), 2);
    group.bench_function("freyr_scope", |b| b.iter(|| freyr_scope(&freyr)));
    drop(freyr);

    let rayon = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .thread_name(|i| format!("rayon-handoff-{i}"))
        .build()
        .expect("rayon pool");
    group.bench_function("rayon_scope", |b| rayon.install(|| b.iter(rayon_scope)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
