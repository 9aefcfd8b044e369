//! `events`: one tick that sends an event per entity from a parallel query and reads them all in
//! a later system. `send_read_1m`: 1M entities; Freyr sends from `each_async_with` tasks (one
//! buffer per chunk, stored at the sync point in (launch, chunk, row) order) and reads with an
//! `EventCursor` in `PostUpdate`; bevy_ecs writes the same messages through a `MessageWriter`
//! (buffered events; `write_batch` from the query, since a `MessageWriter` cannot be shared by
//! `par_iter` tasks) and a later system reads them through a `MessageReader`. Each tick also
//! rotates the double buffers (`Messages::update` for bevy_ecs, the store's own rotation for
//! Freyr), so the memory stays that of two ticks.

use std::hint::black_box;

use freyr::{EventCursor, Phase, Registry};

use crate::Group;

/// The entities that send: one event per entity per tick.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
pub(crate) struct Emitter(pub u32);

/// The event (a bevy_ecs message under `compare`).
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::message::Message))]
pub(crate) struct Hit(pub u32);

const EVENTS: usize = 1_000_000;

/// Freyr: `EVENTS` emitters, a sending system in `Update` and a reading one in `PostUpdate`.
fn freyr_events(workers: usize) -> Registry {
    let mut registry = Registry::with_workers(workers);
    registry.add_event::<Hit>();
    registry.spawn_batch((0..EVENTS as u32).map(|i| (Emitter(i),)));
    registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        r.query::<&Emitter>()
            .each_async_with(|_, e, ctx| ctx.send(Hit(e.0)));
    });
    let mut cursor = EventCursor::default();
    registry.add_system(Phase::PostUpdate, move |r: &mut Registry, _: f32| {
        let sum = r
            .read_events::<Hit>(&mut cursor)
            .fold(0u64, |acc, h| acc + u64::from(h.0));
        black_box(sum);
    });
    registry
}

#[cfg(feature = "compare")]
mod peers {
    use super::*;
    use bevy_ecs::message::{MessageReader, MessageWriter, Messages};
    use bevy_ecs::schedule::IntoScheduleConfigs;
    use bevy_ecs::system::Query;

    fn writer(emitters: Query<&Emitter>, mut out: MessageWriter<Hit>) {
        out.write_batch(emitters.iter().map(|e| Hit(e.0)));
    }

    fn reader(mut hits: MessageReader<Hit>) {
        black_box(hits.read().fold(0u64, |acc, h| acc + u64::from(h.0)));
    }

    /// bevy_ecs: `EVENTS` emitters, a writer system and a reader system after it.
    pub(super) fn bevy_events() -> (bevy_ecs::world::World, bevy_ecs::schedule::Schedule) {
        let mut world = bevy_ecs::world::World::new();
        world.init_resource::<Messages<Hit>>();
        world
            .spawn_batch((0..EVENTS as u32).map(Emitter))
            .for_each(drop);
        let mut schedule = crate::bevy_schedule();
        schedule.add_systems((writer, reader.after(writer)));
        (world, schedule)
    }

    /// One bevy_ecs tick: the schedule, then the double-buffer swap.
    pub(super) fn bevy_tick(
        world: &mut bevy_ecs::world::World,
        schedule: &mut bevy_ecs::schedule::Schedule,
    ) {
        schedule.run(world);
        world.resource_mut::<Messages<Hit>>().update();
    }
}

pub(crate) fn register(group: &mut Group<'_>, n: usize) {
    let mut freyr = freyr_events(n);
    group.bench_function(format!("events/send_read_1m/freyr/w{n}"), |b| {
        b.iter(|| freyr.update(black_box(1.0 / 60.0)))
    });
    drop(freyr);
    #[cfg(feature = "compare")]
    {
        let (mut world, mut schedule) = peers::bevy_events();
        group.bench_function(format!("events/send_read_1m/bevy_ecs/w{n}"), |b| {
            b.iter(|| peers::bevy_tick(&mut world, &mut schedule))
        });
    }
}
