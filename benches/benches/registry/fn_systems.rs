//! Function systems beside bevy_ecs's multi-threaded executor.
//!
//! - `seq_64x256`: 64 systems, each writing its own component on its own 256 entities with a
//!   **sequential** body (`each`). `freyr_fn`: function systems (disjoint, so they run in
//!   parallel); `freyr_each`: the same bodies as exclusive `&mut Registry` systems (one after the
//!   other); `bevy_ecs`: 64 systems on the multi-threaded executor.
//! - `empty_1000`: 1,000 empty function systems (the executor's fixed cost) against 1,000 empty
//!   bevy_ecs systems.
//! - `schedule/freyr_fn`: ecs_bench_suite's three systems (`ab`, `cd`, `ce`) as function systems
//!   with sequential bodies; `ab` runs beside `cd`, `ce` after `cd` (they conflict on `C`).

use std::hint::black_box;
use std::mem::swap;

use freyr::system::Query;
use freyr::{Phase, Registry};

use crate::Group;
use crate::schedule::{A, B, C, D, E};

/// One float a system of `seq_64x256` updates.
pub(crate) trait Val: Send + Sync + 'static {
    fn step(&mut self);
    fn value(&self) -> f32;
}

macro_rules! comps {
    ($($t:ident),*) => {
        $(
            /// One of the 64 components of `seq_64x256`.
            #[derive(Clone, Copy, Debug)]
            #[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
            pub(crate) struct $t(pub(crate) f32);
            impl Val for $t {
                #[inline]
                fn step(&mut self) {
                    self.0 = self.0 * 0.999 + 1.0;
                }
                fn value(&self) -> f32 {
                    self.0
                }
            }
        )*
        /// Calls `$m!(T)` for each of the 64 types.
        macro_rules! each_comp {
            ($m:ident) => { $($m!($t);)* };
        }
    };
}
comps!(
    S0, S1, S2, S3, S4, S5, S6, S7, S8, S9, S10, S11, S12, S13, S14, S15, S16, S17, S18, S19, S20,
    S21, S22, S23, S24, S25, S26, S27, S28, S29, S30, S31, S32, S33, S34, S35, S36, S37, S38, S39,
    S40, S41, S42, S43, S44, S45, S46, S47, S48, S49, S50, S51, S52, S53, S54, S55, S56, S57, S58,
    S59, S60, S61, S62, S63
);

/// Entities per component in `seq_64x256`.
const ROWS: usize = 256;

fn fn_system<T: Val + freyr::Component>() -> impl FnMut(Query<&mut T>) + Send + 'static {
    |mut q: Query<&mut T>| q.each(|_, v| v.step())
}

fn seq_freyr(workers: usize, function: bool) -> Registry {
    let mut registry = Registry::with_workers(workers);
    macro_rules! add {
        ($t:ident) => {
            registry.spawn_batch((0..ROWS).map(|i| ($t(i as f32),)));
            if function {
                registry
                    .add_fn_system(Phase::Update, stringify!($t), fn_system::<$t>())
                    .unwrap();
            } else {
                registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
                    r.query::<&mut $t>().each(|_, v| v.step());
                });
            }
        };
    }
    each_comp!(add);
    registry.update(0.0);
    let mut sum = 0.0;
    registry.query::<&S63>().each(|_, v| sum += v.value());
    assert!(sum > 0.0, "the last system ran");
    registry
}

fn empty_freyr(workers: usize) -> Registry {
    let mut registry = Registry::with_workers(workers);
    for i in 0..1000 {
        registry
            .add_fn_system(Phase::Update, format!("e{i}"), || {})
            .unwrap();
    }
    registry.update(0.0);
    registry
}

fn schedule_freyr(workers: usize) -> Registry {
    let mut registry = Registry::with_workers(workers);
    let per = 10_000;
    registry.spawn_batch((0..per).map(|_| (A(0.0), B(1.0))));
    registry.spawn_batch((0..per).map(|_| (A(0.0), B(1.0), C(2.0))));
    registry.spawn_batch((0..per).map(|_| (A(0.0), B(1.0), C(2.0), D(3.0))));
    registry.spawn_batch((0..per).map(|_| (A(0.0), B(1.0), C(2.0), E(4.0))));
    registry
        .add_fn_system(Phase::Update, "ab", |mut q: Query<(&mut A, &mut B)>| {
            q.each(|_, (a, b)| swap(&mut a.0, &mut b.0))
        })
        .unwrap();
    registry
        .add_fn_system(Phase::Update, "cd", |mut q: Query<(&mut C, &mut D)>| {
            q.each(|_, (c, d)| swap(&mut c.0, &mut d.0))
        })
        .unwrap();
    registry
        .add_fn_system(Phase::Update, "ce", |mut q: Query<(&mut C, &mut E)>| {
            q.each(|_, (c, e)| swap(&mut c.0, &mut e.0))
        })
        .unwrap();
    registry.update(0.0);
    let mut swapped = 0;
    registry
        .query::<&A>()
        .each(|_, a| swapped += usize::from(a.0 == 1.0));
    assert_eq!(swapped, 4 * per, "the ab system ran over every entity");
    registry
}

#[cfg(feature = "compare")]
mod peers {
    use super::*;

    fn bevy_system<
        T: Val + bevy_ecs::component::Component<Mutability = bevy_ecs::component::Mutable>,
    >(
        mut q: bevy_ecs::system::Query<&mut T>,
    ) {
        for mut v in q.iter_mut() {
            v.step();
        }
    }

    /// bevy_ecs: 64 systems on the multi-threaded executor.
    pub(super) fn seq_bevy() -> (bevy_ecs::world::World, bevy_ecs::schedule::Schedule) {
        let mut world = bevy_ecs::world::World::new();
        let mut schedule = crate::bevy_schedule();
        macro_rules! add {
            ($t:ident) => {
                world
                    .spawn_batch((0..ROWS).map(|i| ($t(i as f32),)))
                    .for_each(drop);
                schedule.add_systems(bevy_system::<$t>);
            };
        }
        each_comp!(add);
        schedule.run(&mut world);
        (world, schedule)
    }

    /// bevy_ecs: 1,000 empty systems on the multi-threaded executor.
    pub(super) fn empty_bevy() -> (bevy_ecs::world::World, bevy_ecs::schedule::Schedule) {
        let mut world = bevy_ecs::world::World::new();
        let mut schedule = crate::bevy_schedule();
        for _ in 0..1000 {
            schedule.add_systems(|| {});
        }
        schedule.run(&mut world);
        (world, schedule)
    }
}

pub(crate) fn register(group: &mut Group<'_>, n: usize) {
    for (name, function) in [("freyr_fn", true), ("freyr_each", false)] {
        let mut registry = seq_freyr(n, function);
        group.bench_function(format!("seq_64x256/{name}/w{n}"), |b| {
            b.iter(|| registry.update(black_box(0.0)))
        });
    }
    let mut registry = empty_freyr(n);
    group.bench_function(format!("empty_1000/freyr_fn/w{n}"), |b| {
        b.iter(|| registry.update(black_box(0.0)))
    });
    drop(registry);
    let mut registry = schedule_freyr(n);
    group.bench_function(format!("schedule/freyr_fn/w{n}"), |b| {
        b.iter(|| registry.update(black_box(1.0 / 60.0)))
    });
    drop(registry);
    #[cfg(feature = "compare")]
    {
        let (mut world, mut schedule) = peers::seq_bevy();
        group.bench_function(format!("seq_64x256/bevy_ecs/w{n}"), |b| {
            b.iter(|| schedule.run(&mut world))
        });
        let (mut world, mut schedule) = peers::empty_bevy();
        group.bench_function(format!("empty_1000/bevy_ecs/w{n}"), |b| {
            b.iter(|| schedule.run(&mut world))
        });
    }
}
