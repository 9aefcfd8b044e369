//! `chunk_tasks_1954`: the cost of dispatch alone. Freyr: `each_async` with an empty callback
//! over 1M entities (1,954 chunk tasks) and the sync point; rayon: `par_iter` over 1,954 items.

use std::hint::black_box;

use freyr::Registry;
use freyr_benches::{Position, Velocity, pos_vel};
use rayon::prelude::*;

use crate::{BIG, CHUNK_TASKS, Group, rayon_pool};

struct Freyr(Registry);

impl Freyr {
    fn new(workers: usize) -> Self {
        let mut registry = Registry::with_workers(workers);
        registry.spawn_batch((0..BIG).map(pos_vel));
        let mut freyr = Freyr(registry);
        freyr.run();
        let tasks = freyr.0.profile().tasks;
        assert_eq!(tasks, CHUNK_TASKS as u64, "a 1M query launches 1,954 tasks");
        freyr
    }

    #[inline(never)]
    fn run(&mut self) {
        self.0
            .query::<(&mut Position, &Velocity)>()
            .each_async(|_, _| {});
        self.0.execute_tasks();
    }
}

/// Rayon `par_iter` over 1,954 items (call inside `install`).
#[inline(never)]
fn rayon_run() {
    (0..CHUNK_TASKS).into_par_iter().for_each(|i| {
        black_box(i);
    });
}

pub(crate) fn register(group: &mut Group<'_>, n: usize) {
    let mut freyr = Freyr::new(n);
    group.bench_function(format!("chunk_tasks_1954/freyr_each_async/w{n}"), |b| {
        b.iter(|| freyr.run())
    });
    drop(freyr);
    let rayon = rayon_pool(n);
    group.bench_function(format!("chunk_tasks_1954/rayon_par_iter/w{n}"), |b| {
        rayon.install(|| b.iter(rayon_run))
    });
}
