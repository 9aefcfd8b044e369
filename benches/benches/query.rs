//! Criterion bench group `query` (being written; see the issue for the workloads).
use criterion::{Criterion, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    c.bench_function("query/noop", |b| b.iter(|| std::hint::black_box(1u32)));
}

criterion_group!(benches, bench);
criterion_main!(benches);
