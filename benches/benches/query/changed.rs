//! `changed_50k`: a `Changed<Position>` query over 50k (Position, Velocity) entities of which one
//! was written since the reader's last tick (one of 98 chunks changed), counting the rows it
//! yields, on the calling thread. Freyr's filter skips an unchanged chunk with one comparison and
//! yields the changed chunk whole (512 rows); bevy_ecs's `Changed<T>` (feature `compare`) checks
//! every row's tick and yields the one row.

use std::hint::black_box;

use freyr::Registry;
use freyr_benches::{Position, pos_vel};

use crate::Group;

const N: usize = 50_000;

struct Freyr {
    registry: Registry,
    since: u64,
}

impl Freyr {
    fn new() -> Self {
        let mut registry = Registry::with_workers(1);
        let ids = registry.spawn_batch((0..N).map(pos_vel));
        let since = registry.tick();
        registry.update(0.0);
        registry.get_mut::<Position>(ids[N / 2]).unwrap().0[0] += 1.0;
        let mut freyr = Freyr { registry, since };
        assert_eq!(freyr.run(), freyr_core::CHUNK_CAPACITY);
        freyr
    }

    #[inline(never)]
    fn run(&mut self) -> usize {
        let mut rows = 0;
        self.registry
            .query::<&Position>()
            .filter_changed::<Position>(self.since)
            .each_chunk(|entities, _| rows += entities.len());
        black_box(rows)
    }
}

#[cfg(feature = "compare")]
struct Bevy(
    bevy_ecs::world::World,
    bevy_ecs::query::QueryState<&'static Position, bevy_ecs::query::Changed<Position>>,
);

#[cfg(feature = "compare")]
impl Bevy {
    fn new() -> Self {
        let mut world = bevy_ecs::world::World::new();
        let ids: Vec<_> = world.spawn_batch((0..N).map(pos_vel)).collect();
        let query = world.query_filtered::<&Position, bevy_ecs::query::Changed<Position>>();
        // Everything spawned so far is before the reader's last tick.
        world.clear_trackers();
        world.get_mut::<Position>(ids[N / 2]).unwrap().0[0] += 1.0;
        let mut bevy = Bevy(world, query);
        assert_eq!(bevy.run(), 1);
        bevy
    }

    #[inline(never)]
    fn run(&mut self) -> usize {
        let rows = self.1.iter(&self.0).count();
        black_box(rows)
    }
}

pub(crate) fn register(group: &mut Group<'_>) {
    let mut freyr = Freyr::new();
    group.bench_function("changed_50k/freyr", |b| b.iter(|| freyr.run()));
    #[cfg(feature = "compare")]
    {
        let mut bevy = Bevy::new();
        group.bench_function("changed_50k/bevy_ecs", |b| b.iter(|| bevy.run()));
    }
}
