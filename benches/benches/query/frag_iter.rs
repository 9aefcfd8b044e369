//! `frag_iter` (ecs_bench_suite): 26 archetypes (`A`..`Z`, each with `Data`) of 20 entities,
//! `data *= 2` over all of them on the calling thread.

use std::hint::black_box;

use freyr::Registry;

use crate::Group;

/// Entities per archetype.
const PER: usize = 20;

/// The iterated component.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
pub(crate) struct Data(pub f32);

macro_rules! letters {
    ($m:ident) => {
        $m!(
            A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z
        );
    };
}

macro_rules! declare {
    ($($t:ident),*) => {$(
        /// One of the 26 fragmenting components.
        #[allow(dead_code, reason = "the payload only sizes the component, as in ecs_bench_suite")]
        #[derive(Clone, Copy, Debug)]
        #[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
        pub(crate) struct $t(pub(crate) f32);
    )*};
}
letters!(declare);

struct Freyr(Registry);

impl Freyr {
    fn new() -> Self {
        let mut registry = Registry::with_workers(1);
        macro_rules! spawn {
            ($($t:ident),*) => {$(
                registry.spawn_batch((0..PER).map(|_| ($t(0.0), Data(1.0))));
            )*};
        }
        letters!(spawn);
        assert_eq!(registry.query::<&Data>().count(), 26 * PER);
        Freyr(registry)
    }

    #[inline(never)]
    fn run(&mut self) {
        self.0.query::<&mut Data>().each(|_, d| d.0 *= 2.0);
        black_box(&mut self.0);
    }
}

#[cfg(feature = "compare")]
struct Hecs(hecs::World);

#[cfg(feature = "compare")]
impl Hecs {
    fn new() -> Self {
        let mut world = hecs::World::new();
        macro_rules! spawn {
            ($($t:ident),*) => {$(
                world.spawn_batch((0..PER).map(|_| ($t(0.0), Data(1.0)))).for_each(drop);
            )*};
        }
        letters!(spawn);
        Hecs(world)
    }

    #[inline(never)]
    fn run(&mut self) {
        for d in self.0.query_mut::<&mut Data>() {
            d.0 *= 2.0;
        }
        black_box(&mut self.0);
    }
}

#[cfg(feature = "compare")]
struct Bevy(
    bevy_ecs::world::World,
    bevy_ecs::query::QueryState<&'static mut Data>,
);

#[cfg(feature = "compare")]
impl Bevy {
    fn new() -> Self {
        let mut world = bevy_ecs::world::World::new();
        macro_rules! spawn {
            ($($t:ident),*) => {$(
                world.spawn_batch((0..PER).map(|_| ($t(0.0), Data(1.0)))).for_each(drop);
            )*};
        }
        letters!(spawn);
        let query = world.query::<&mut Data>();
        Bevy(world, query)
    }

    #[inline(never)]
    fn run(&mut self) {
        for mut d in self.1.iter_mut(&mut self.0) {
            d.0 *= 2.0;
        }
        black_box(&mut self.0);
    }

    /// `contiguous_iter_mut`: one `Data` slice per table.
    #[inline(never)]
    fn run_contiguous(&mut self) {
        let tables = self
            .1
            .contiguous_iter_mut(&mut self.0)
            .expect("table components: the query is dense");
        for mut data in tables {
            for d in data.iter_mut() {
                d.0 *= 2.0;
            }
        }
        black_box(&mut self.0);
    }
}

#[cfg(feature = "compare")]
struct Legion(
    legion::World,
    legion::query::Query<legion::query::Write<Data>>,
);

#[cfg(feature = "compare")]
impl Legion {
    fn new() -> Self {
        use legion::query::{IntoQuery, Write};
        let mut world = legion::World::default();
        macro_rules! spawn {
            ($($t:ident),*) => {$(
                world.extend((0..PER).map(|_| ($t(0.0), Data(1.0))).collect::<Vec<_>>());
            )*};
        }
        letters!(spawn);
        let query = Write::<Data>::query();
        Legion(world, query)
    }

    #[inline(never)]
    fn run(&mut self) {
        self.1.for_each_mut(&mut self.0, |d| d.0 *= 2.0);
        black_box(&mut self.0);
    }
}

pub(crate) fn register(group: &mut Group<'_>) {
    let mut freyr = Freyr::new();
    group.bench_function("frag_iter/freyr", |b| b.iter(|| freyr.run()));
    #[cfg(feature = "compare")]
    {
        let mut hecs = Hecs::new();
        group.bench_function("frag_iter/hecs", |b| b.iter(|| hecs.run()));
        let mut bevy = Bevy::new();
        group.bench_function("frag_iter/bevy_ecs", |b| b.iter(|| bevy.run()));
        group.bench_function("frag_iter/bevy_ecs_contiguous", |b| {
            b.iter(|| bevy.run_contiguous())
        });
        let mut legion = Legion::new();
        group.bench_function("frag_iter/legion", |b| b.iter(|| legion.run()));
    }
}
