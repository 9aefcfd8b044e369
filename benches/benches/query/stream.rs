//! `stream_1m`: the memory floor. A STREAM-like in-place pass `a[i] += b[i] * s` over flat `f32`
//! arrays holding exactly the bytes of the 1M (Position, Velocity) loop (12 + 12 bytes per
//! entity), sequential and split in 1,954 parallel pieces.

use std::hint::black_box;

use freyr_sched::ThreadPool;
use rayon::prelude::*;

use crate::{BIG, CHUNK, CHUNK_TASKS, DT, Group, rayon_pool};

/// Floats per entity and per array (a `[f32; 3]`).
const LANES: usize = 3;
/// Floats per piece: one 512-entity chunk's worth.
const PIECE: usize = CHUNK * LANES;

pub(crate) struct Stream {
    a: Vec<f32>,
    b: Vec<f32>,
}

impl Stream {
    pub(crate) fn new() -> Self {
        let a = (0..BIG * LANES).map(|i| i as f32).collect();
        let b = (0..BIG * LANES).map(|i| (i % 7) as f32 * 0.25).collect();
        Stream { a, b }
    }

    #[inline(never)]
    pub(crate) fn run_seq(&mut self) {
        let s = black_box(DT);
        for (a, b) in self.a.iter_mut().zip(&self.b) {
            *a += b * s;
        }
    }

    /// Rayon, 1,954 pieces of one chunk's bytes (call inside `install`).
    #[inline(never)]
    pub(crate) fn run_rayon(&mut self) {
        let s = black_box(DT);
        self.a
            .par_chunks_mut(PIECE)
            .zip(self.b.par_chunks(PIECE))
            .for_each(|(a, b)| {
                for (a, b) in a.iter_mut().zip(b) {
                    *a += b * s;
                }
            });
    }

    /// Freyr `parallel_for`, one index per piece (grain 1).
    #[inline(never)]
    pub(crate) fn run_parallel_for(&mut self, pool: &ThreadPool) {
        let s = black_box(DT);
        let len = self.a.len();
        let a = SyncPtr(self.a.as_mut_ptr());
        let b = &self.b;
        pool.parallel_for(CHUNK_TASKS, 1, |i| {
            let start = i * PIECE;
            let end = (start + PIECE).min(len);
            // SAFETY: `parallel_for` calls every index in 0..CHUNK_TASKS exactly once, the pieces
            // [start, end) are disjoint and inside `a`, and `self.a` is borrowed mutably (so not
            // otherwise accessed) until `parallel_for` returns.
            let a = unsafe { core::slice::from_raw_parts_mut(a.get().add(start), end - start) };
            for (a, b) in a.iter_mut().zip(&b[start..end]) {
                *a += b * s;
            }
        });
    }
}

/// A raw pointer to hand disjoint pieces of one slice to `parallel_for`'s threads.
#[derive(Clone, Copy)]
struct SyncPtr(*mut f32);

impl SyncPtr {
    /// By method, so closures capture the whole `SyncPtr` (which is `Sync`), not the raw field.
    fn get(self) -> *mut f32 {
        self.0
    }
}

// SAFETY: only used to write disjoint pieces, one per `parallel_for` index (see `run_parallel_for`).
unsafe impl Sync for SyncPtr {}

pub(crate) fn register_seq(group: &mut Group<'_>) {
    let mut stream = Stream::new();
    group.bench_function("stream_1m/seq", |b| b.iter(|| stream.run_seq()));
}

pub(crate) fn register_par(group: &mut Group<'_>, n: usize) {
    let mut stream = Stream::new();
    let rayon = rayon_pool(n);
    group.bench_function(format!("stream_1m/par_rayon/w{n}"), |b| {
        rayon.install(|| b.iter(|| stream.run_rayon()))
    });
    drop(rayon);
    let pool = ThreadPool::new(n);
    group.bench_function(format!("stream_1m/par_for/w{n}"), |b| {
        b.iter(|| stream.run_parallel_for(&pool))
    });
}
