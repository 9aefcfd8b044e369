//! Events: the read order is (launch, chunk, row, send) for any worker count, a panicking task's
//! events are discarded, events are kept for the tick they were stored in and the next, and the
//! unread events survive a snapshot and restore.

use std::panic::{self, AssertUnwindSafe};

use freyr_registry::{EventCursor, Events, Phase, Registry};

#[derive(Clone, Debug, PartialEq, Eq)]
struct Ev(u32, u32);

#[derive(Clone, Copy)]
struct Id(u32);
struct Tag;

/// Spawns enough entities for several chunks, in two archetypes, and runs three ticks in which
/// an `each_async_with` query, a sequential `each_with` and a direct send all produce events.
fn run(workers: usize) -> Vec<Ev> {
    let mut registry = Registry::with_workers(workers);
    for i in 0..3000u32 {
        if i % 3 == 0 {
            registry.spawn((Id(i), Tag));
        } else {
            registry.spawn((Id(i),));
        }
    }
    registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        let tick = r.tick() as u32;
        r.send_event(Ev(tick, u32::MAX));
        r.query::<&Id>().each_async_with(move |_, id, ctx| {
            if id.0 % 7 == 0 {
                ctx.send(Ev(tick, id.0));
                ctx.send(Ev(tick, id.0 + 1));
            }
        });
        r.query::<&Id>().each_with(move |_, id, ctx| {
            if id.0 % 500 == 0 {
                ctx.send(Ev(tick + 100, id.0));
            }
        });
        r.send_event(Ev(tick, u32::MAX - 1));
    });
    let mut cursor = EventCursor::default();
    let mut read = Vec::new();
    for _ in 0..3 {
        registry.update(1.0);
        read.extend(registry.read_events::<Ev>(&mut cursor).cloned());
    }
    read
}

#[test]
fn event_order_is_the_same_for_any_worker_count() {
    let one = run(1);
    assert!(one.len() > 1000, "{} events", one.len());
    // Launch order: the direct send comes first, the sequential query's events after the
    // parallel one's, the last direct send last.
    assert_eq!(one[0], Ev(0, u32::MAX));
    let first_tick: Vec<&Ev> = one.iter().take_while(|e| e.0 != 1).collect();
    assert_eq!(*first_tick.last().unwrap(), &Ev(0, u32::MAX - 1));
    assert_eq!(first_tick[first_tick.len() - 2], &Ev(100, 2500));
    for workers in [2, 3, 8] {
        assert_eq!(run(workers), one, "{workers} workers");
    }
}

#[test]
fn a_panicking_tasks_events_are_discarded_with_its_commands() {
    let mut registry = Registry::with_workers(4);
    for i in 0..2048u32 {
        registry.spawn((Id(i),));
    }
    registry.query::<&Id>().each_async_with(|_, id, ctx| {
        ctx.send(Ev(0, id.0));
        if id.0 == 600 {
            panic!("task of chunk 1 fails");
        }
    });
    let result = panic::catch_unwind(AssertUnwindSafe(|| registry.execute_tasks()));
    assert!(result.is_err());
    let mut cursor = EventCursor::default();
    let read: Vec<u32> = registry
        .read_events::<Ev>(&mut cursor)
        .map(|e| e.1)
        .collect();
    // Chunk 1 (rows 512..1024) is gone whole; the other chunks' events are all there, in order.
    let expected: Vec<u32> = (0..512).chain(1024..2048).collect();
    assert_eq!(read, expected);
}

#[test]
fn events_are_kept_for_their_tick_and_the_next() {
    let mut registry = Registry::with_workers(2);
    let mut every_tick = EventCursor::default();
    let mut every_other = EventCursor::default();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for tick in 0..6u32 {
        registry.send_event(Ev(tick, 0));
        registry.update(1.0);
        a.extend(registry.read_events::<Ev>(&mut every_tick).map(|e| e.0));
        if tick % 3 == 2 {
            b.extend(registry.read_events::<Ev>(&mut every_other).map(|e| e.0));
        }
    }
    assert_eq!(a, [0, 1, 2, 3, 4, 5]);
    // Read after the updates of ticks 2 and 5 (the registry is then at ticks 3 and 6): only
    // what was stored at the tick before is still kept.
    assert_eq!(b, [2, 5]);
    assert_eq!(every_other, every_tick);
    let stored = registry.resource::<Events<Ev>>().unwrap();
    assert_eq!(stored.sent(), 6);
    assert!(
        stored.len() <= 2,
        "old halves are dropped: {}",
        stored.len()
    );
}

#[test]
fn unread_events_survive_a_snapshot_and_restore() {
    let mut registry = Registry::with_workers(2);
    let mut cursor = EventCursor::default();
    registry.send_event(Ev(1, 1));
    registry.execute_tasks();
    assert_eq!(registry.read_events::<Ev>(&mut cursor).count(), 1);
    registry.send_event(Ev(2, 2));
    registry.execute_tasks();
    let saved_cursor = cursor;
    let snapshot = registry
        .snapshot()
        .expect("the event store is registered for snapshots");
    let before: Vec<Ev> = registry.read_events::<Ev>(&mut cursor).cloned().collect();
    assert_eq!(before, [Ev(2, 2)]);
    registry.send_event(Ev(3, 3));
    registry.execute_tasks();
    registry.restore(&snapshot).unwrap();
    let mut cursor = saved_cursor;
    let after: Vec<Ev> = registry.read_events::<Ev>(&mut cursor).cloned().collect();
    assert_eq!(after, before);
    assert_eq!(registry.resource::<Events<Ev>>().unwrap().sent(), 2);
}
