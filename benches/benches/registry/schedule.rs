//! `schedule` (ecs_bench_suite): 10k entities each of (A, B), (A, B, C), (A, B, C, D) and
//! (A, B, C, E); three systems swap `a`/`b`, `c`/`d` and `c`/`e`.

use std::hint::black_box;
use std::mem::swap;

use freyr::{Phase, Registry};

use crate::Group;

/// Entities per archetype.
const PER: usize = 10_000;

macro_rules! components {
    ($($t:ident),*) => {$(
        /// One float of the schedule scenario.
        #[derive(Clone, Copy, Debug)]
        #[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
        pub(crate) struct $t(pub(crate) f32);
    )*};
}
components!(A, B, C, D, E);

/// Spawns the four archetypes through `extend`, a function taking one `Vec` of bundles per call.
macro_rules! four_archetypes {
    ($extend:expr) => {{
        $extend((0..PER).map(|_| (A(0.0), B(1.0))).collect::<Vec<_>>());
        $extend(
            (0..PER)
                .map(|_| (A(0.0), B(1.0), C(2.0)))
                .collect::<Vec<_>>(),
        );
        $extend(
            (0..PER)
                .map(|_| (A(0.0), B(1.0), C(2.0), D(3.0)))
                .collect::<Vec<_>>(),
        );
        $extend(
            (0..PER)
                .map(|_| (A(0.0), B(1.0), C(2.0), E(4.0)))
                .collect::<Vec<_>>(),
        );
    }};
}

/// Freyr: three systems in `Phase::Update`.
struct Freyr(Registry);

impl Freyr {
    fn new(workers: usize, parallel: bool) -> Self {
        let mut registry = Registry::with_workers(workers);
        four_archetypes!(|v: Vec<_>| registry.spawn_batch(v));
        if parallel {
            registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
                r.query::<(&mut A, &mut B)>()
                    .each_async(|_, (a, b)| swap(&mut a.0, &mut b.0));
            });
            registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
                r.query::<(&mut C, &mut D)>()
                    .each_async(|_, (c, d)| swap(&mut c.0, &mut d.0));
            });
            registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
                r.query::<(&mut C, &mut E)>()
                    .each_async(|_, (c, e)| swap(&mut c.0, &mut e.0));
            });
        } else {
            registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
                r.query::<(&mut A, &mut B)>()
                    .each(|_, (a, b)| swap(&mut a.0, &mut b.0));
            });
            registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
                r.query::<(&mut C, &mut D)>()
                    .each(|_, (c, d)| swap(&mut c.0, &mut d.0));
            });
            registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
                r.query::<(&mut C, &mut E)>()
                    .each(|_, (c, e)| swap(&mut c.0, &mut e.0));
            });
        }
        let mut freyr = Freyr(registry);
        freyr.run();
        freyr.check();
        freyr
    }

    #[inline(never)]
    fn run(&mut self) {
        self.0.update(black_box(1.0 / 60.0));
    }

    /// After an odd number of ticks every pair is swapped once: `a` holds 1.0 everywhere.
    fn check(&mut self) {
        let mut swapped = 0;
        self.0
            .query::<&A>()
            .each(|_, a| swapped += usize::from(a.0 == 1.0));
        assert_eq!(swapped, 4 * PER, "the ab system ran over every entity");
    }
}

#[cfg(feature = "compare")]
mod peers {
    use super::*;

    /// hecs has no scheduler: the three loops in order.
    pub(super) struct Hecs(hecs::World);

    impl Hecs {
        pub(super) fn new() -> Self {
            let mut world = hecs::World::new();
            four_archetypes!(|v: Vec<_>| world.spawn_batch(v).for_each(drop));
            Hecs(world)
        }

        #[inline(never)]
        pub(super) fn run(&mut self) {
            for (a, b) in self.0.query_mut::<(&mut A, &mut B)>() {
                swap(&mut a.0, &mut b.0);
            }
            for (c, d) in self.0.query_mut::<(&mut C, &mut D)>() {
                swap(&mut c.0, &mut d.0);
            }
            for (c, e) in self.0.query_mut::<(&mut C, &mut E)>() {
                swap(&mut c.0, &mut e.0);
            }
            black_box(&mut self.0);
        }
    }

    /// bevy_ecs: three systems on the multi-threaded executor.
    pub(super) struct Bevy(bevy_ecs::world::World, bevy_ecs::schedule::Schedule);

    fn ab(mut q: bevy_ecs::system::Query<(&mut A, &mut B)>) {
        for (mut a, mut b) in q.iter_mut() {
            swap(&mut a.0, &mut b.0);
        }
    }

    fn cd(mut q: bevy_ecs::system::Query<(&mut C, &mut D)>) {
        for (mut c, mut d) in q.iter_mut() {
            swap(&mut c.0, &mut d.0);
        }
    }

    fn ce(mut q: bevy_ecs::system::Query<(&mut C, &mut E)>) {
        for (mut c, mut e) in q.iter_mut() {
            swap(&mut c.0, &mut e.0);
        }
    }

    impl Bevy {
        pub(super) fn new() -> Self {
            let mut world = bevy_ecs::world::World::new();
            four_archetypes!(|v: Vec<_>| world.spawn_batch(v).for_each(drop));
            let mut schedule = crate::bevy_schedule();
            schedule.add_systems((ab, cd, ce));
            schedule.run(&mut world);
            Bevy(world, schedule)
        }

        #[inline(never)]
        pub(super) fn run(&mut self) {
            self.1.run(&mut self.0);
        }
    }

    /// legion: three systems through its parallel `Schedule`, in a rayon pool of `n` threads.
    pub(super) struct Legion {
        world: legion::World,
        resources: legion::Resources,
        schedule: legion::Schedule,
        pool: rayon::ThreadPool,
    }

    impl Legion {
        pub(super) fn new(n: usize) -> Self {
            use legion::query::{IntoQuery, Write};
            use legion::systems::SystemBuilder;
            let mut world = legion::World::default();
            four_archetypes!(|v: Vec<_>| {
                world.extend(v);
            });
            let schedule = legion::Schedule::builder()
                .add_system(
                    SystemBuilder::new("ab")
                        .with_query(<(Write<A>, Write<B>)>::query())
                        .build(|_, world, _, q| {
                            q.for_each_mut(world, |(a, b)| swap(&mut a.0, &mut b.0))
                        }),
                )
                .add_system(
                    SystemBuilder::new("cd")
                        .with_query(<(Write<C>, Write<D>)>::query())
                        .build(|_, world, _, q| {
                            q.for_each_mut(world, |(c, d)| swap(&mut c.0, &mut d.0))
                        }),
                )
                .add_system(
                    SystemBuilder::new("ce")
                        .with_query(<(Write<C>, Write<E>)>::query())
                        .build(|_, world, _, q| {
                            q.for_each_mut(world, |(c, e)| swap(&mut c.0, &mut e.0))
                        }),
                )
                .build();
            Legion {
                world,
                resources: legion::Resources::default(),
                schedule,
                pool: crate::rayon_pool(n),
            }
        }

        #[inline(never)]
        pub(super) fn run(&mut self) {
            self.schedule
                .execute_in_thread_pool(&mut self.world, &mut self.resources, &self.pool);
        }
    }
}

pub(crate) fn register(group: &mut Group<'_>, n: usize) {
    let mut freyr = Freyr::new(n, true);
    group.bench_function(format!("schedule/freyr_each_async/w{n}"), |b| {
        b.iter(|| freyr.run())
    });
    drop(freyr);
    let mut freyr = Freyr::new(n, false);
    group.bench_function(format!("schedule/freyr_each/w{n}"), |b| {
        b.iter(|| freyr.run())
    });
    drop(freyr);
    #[cfg(feature = "compare")]
    {
        let mut hecs = peers::Hecs::new();
        group.bench_function(format!("schedule/hecs/w{n}"), |b| b.iter(|| hecs.run()));
        drop(hecs);
        let mut bevy = peers::Bevy::new();
        group.bench_function(format!("schedule/bevy_ecs/w{n}"), |b| b.iter(|| bevy.run()));
        drop(bevy);
        let mut legion = peers::Legion::new(n);
        group.bench_function(format!("schedule/legion/w{n}"), |b| b.iter(|| legion.run()));
    }
}
