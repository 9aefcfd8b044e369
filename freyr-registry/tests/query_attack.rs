//! A hostile user against the query, change-filter, command and event contracts: change
//! filters with `since` in the past, now and the future (and `count` under a filter); a
//! `get_mut` or `&mut` run that writes nothing; a write in `each_async` whose entity its own
//! command moves at the sync point; a despawned entity's index reused in the same sync point;
//! stale handles whose slot has a new occupant, in every accessor; a panic in the middle of an
//! `each_async` task for 1, 2, 8 and 16 workers, by chunk and split. Hooks, calling-thread
//! panics and world swaps are in `query_attack_more.rs`.

mod query_support;

use query_support::*;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use freyr::{Entity, EventCursor, Registry, View, With, Without};
use freyr_core::{ComponentError, NoSuchEntity};

/// The entities of the chunks `Added<Hp>` since `since` visits, for entities without `Marked`.
fn added_unmarked(r: &mut Registry, since: u64) -> Vec<Entity> {
    let mut out = Vec::new();
    r.query_filtered::<Entity, Without<Marked>>()
        .filter_added::<Hp>(since)
        .each(|e, _| out.push(e));
    out
}

#[test]
fn since_in_the_past_now_and_the_future() {
    let mut r = Registry::with_workers(2);
    let ids = r.spawn_batch((0..2 * C as u32).map(|i| (Hp(i),)));
    for _ in 0..3 {
        r.update(0.0);
    }
    assert_eq!(r.tick(), 3);
    assert_eq!(
        changed_rows(&mut r, 0),
        0,
        "spawned at tick 0, nothing after"
    );
    // Write access granted at tick 3 to one entity of chunk 1, value untouched.
    let _ = r.get_mut::<Hp>(ids[C + 1]).unwrap();
    for (since, rows) in [
        (0, C),
        (2, C),
        (3, 0), // the current tick: stamps equal to `since` are not after it
        (4, 0),
        (u64::MAX / 2, 0),
        (u64::MAX, 0),
    ] {
        assert_eq!(changed_rows(&mut r, since), rows, "since {since}");
        let each = r
            .query::<&Hp>()
            .filter_changed::<Hp>(since)
            .each_async_reduce(|| 0usize, |n, _, _| n + 1, |a, b| a + b)
            .join(&mut r);
        assert_eq!(each, rows, "since {since}, async");
    }
    for since in [0, 3, u64::MAX] {
        assert!(added_unmarked(&mut r, since).is_empty(), "since {since}");
    }
    assert_eq!(r.get::<Hp>(ids[C + 1]), Ok(&Hp(C as u32 + 1)));

    // Reads stamp nothing: `get`, `world`, `&Hp` runs of every kind.
    r.update(0.0);
    assert_eq!(r.tick(), 4);
    let _ = r.get::<Hp>(ids[0]).unwrap();
    let _ = r.world().len();
    r.query::<&Hp>().each(|_, _| {});
    r.query::<&Hp>().each_with(|_, _, _| {});
    r.query::<&Hp>().each_async(|_, _| {});
    r.execute_tasks();
    assert_eq!(changed_rows(&mut r, 3), 0, "reads are not writes");
    // A `&mut Hp` run that writes nothing is still a grant of write access: every chunk.
    r.query::<&mut Hp>().each(|_, _| {});
    assert_eq!(changed_rows(&mut r, 3), 2 * C);
    assert_eq!(changed_rows(&mut r, 4), 0);

    // An insert that overwrites in place is a write, not an arrival: changed, not added.
    r.update(0.0);
    r.insert(ids[3], (Hp(3),)).unwrap();
    assert_eq!(changed_rows(&mut r, 4), C);
    assert!(added_unmarked(&mut r, 4).is_empty());
    // An insert that moves the entity is an arrival in its landing chunk and in the hole's.
    r.insert(ids[4], (Marked,)).unwrap();
    let mut landed = Vec::new();
    r.query_filtered::<Entity, With<Marked>>()
        .filter_added::<Hp>(4)
        .each(|e, _| landed.push(e));
    assert_eq!(landed, [ids[4]]);
    assert_eq!(added_unmarked(&mut r, 4).len(), C, "the hole in chunk 0");
}

/// `count` is one of a query's run methods (the guide's table): it answers for the filters the
/// query was built with, change filters included, and grants no write access.
#[test]
fn count_honours_the_change_filters() {
    let mut r = Registry::with_workers(2);
    let ids = r.spawn_batch((0..3 * C as u32).map(|i| (Hp(i),)));
    r.update(0.0);
    r.get_mut::<Hp>(ids[2 * C]).unwrap().0 = 7;
    let mut rows = 0;
    r.query::<&Hp>()
        .filter_changed::<Hp>(0)
        .each(|_, _| rows += 1);
    assert_eq!(rows, C);
    assert_eq!(r.query::<&Hp>().filter_changed::<Hp>(0).count(), C);
    assert_eq!(r.query::<&Hp>().filter_changed::<Hp>(1).count(), 0);
    assert_eq!(r.query::<&Hp>().filter_added::<Hp>(0).count(), 0);
    assert_eq!(r.query::<&Hp>().filter_changed::<Marked>(0).count(), 0);
    // Counting a `&mut` query is no grant of write access.
    assert_eq!(r.query::<&mut Hp>().count(), 3 * C);
    assert_eq!(r.query::<&mut Hp>().filter_changed::<Hp>(0).count(), C);
    assert_eq!(changed_rows(&mut r, 0), C);
    // A spawn lands in the last chunk: added and changed there.
    r.spawn((Hp(0),));
    assert_eq!(r.query::<&Hp>().filter_added::<Hp>(0).count(), 1);
    assert_eq!(r.query::<&Hp>().filter_changed::<Hp>(0).count(), C + 1);
}

/// A write in `each_async` to an entity that its own command moves to another archetype at the
/// sync point: the moved row carries the written value and is still reported changed, to a
/// reader that last ran before the write, for any worker count; the hole its departure left is
/// reported added.
#[test]
fn an_async_write_moved_at_the_sync_point_is_still_changed() {
    for &workers in WORKERS {
        let mut r = Registry::with_workers(workers);
        let ids = r.spawn_batch((0..3 * C as u32 + 10).map(|i| (Hp(i),)));
        r.update(0.0);
        r.update(0.0);
        assert_eq!(r.tick(), 2);
        let target = ids[C + 5];
        let last = *ids.last().unwrap();
        r.query::<(Entity, &mut Hp)>()
            .each_async_with(move |e, (_, hp), ctx| {
                if e == target {
                    hp.0 = 9999;
                    ctx.commands().insert(e, (Marked,));
                }
            });
        r.execute_tasks();
        assert_eq!(r.get::<Hp>(target), Ok(&Hp(9999)));
        let marked = |r: &mut Registry, since| {
            let mut seen = Vec::new();
            r.query_filtered::<(Entity, &Hp), With<Marked>>()
                .filter_changed::<Hp>(since)
                .each(|_, (e, hp)| seen.push((e, *hp)));
            seen
        };
        assert_eq!(marked(&mut r, 1), [(target, Hp(9999))], "{workers}");
        // Two ticks later, for a reader that last ran at tick 1: still there.
        r.update(0.0);
        r.update(0.0);
        assert_eq!(marked(&mut r, 1), [(target, Hp(9999))], "{workers}");
        assert!(marked(&mut r, 2).is_empty(), "{workers}");
        // The last row filled the hole in chunk 1: that chunk was added at tick 2.
        let added = added_unmarked(&mut r, 1);
        assert_eq!(added.len(), C, "{workers}");
        assert!(
            added.contains(&last) && added.contains(&ids[C]),
            "{workers}"
        );
        assert!(added_unmarked(&mut r, 2).is_empty(), "{workers}");

        // Moved back by a command at tick 4: the row arrives in the last chunk of (Hp), so a
        // reader that last ran at tick 1 sees it there, with its value.
        r.query::<(Entity, &Marked)>().each_with(|e, _, ctx| {
            ctx.commands().remove::<(Marked,)>(e);
        });
        r.execute_tasks();
        let mut back = Vec::new();
        r.query_filtered::<(Entity, &Hp), Without<Marked>>()
            .filter_changed::<Hp>(3)
            .each(|_, (e, hp)| {
                if e == target {
                    back.push(*hp);
                }
            });
        assert_eq!(back, [Hp(9999)], "{workers}");
        r.world().check_invariants();
    }
}

/// One sync point despawns an entity, spawns one that takes its index, and — in a later
/// launch and through `destroy_entity` — names the despawned handle again. The newcomer is never
/// confused with it: the later commands are stale, the hooks name the right handles, the
/// newcomer's chunk is added, and every accessor reports the old handle as gone.
#[test]
fn an_index_reused_in_the_same_sync_point_is_a_different_entity() {
    let mut r = Registry::with_workers(3);
    let log: Arc<Mutex<Vec<(&'static str, Entity)>>> = Arc::default();
    let (l1, l2) = (log.clone(), log.clone());
    r.on_add::<Id>(move |e, _| l1.lock().unwrap().push(("add", e)));
    r.on_remove::<Id>(move |e, _| l2.lock().unwrap().push(("remove", e)));
    let ids = r.spawn_batch((0..10).map(|i| (Id(i), Hp(i))));
    r.update(0.0);
    log.lock().unwrap().clear();
    let victim = ids[3];
    r.query::<&Id>().each_with(move |e, _, ctx| {
        if e == victim {
            ctx.commands().despawn(e);
            ctx.commands().spawn((Id(100), Hp(100)));
        }
    });
    r.query::<&Id>().each_async_with(move |e, _, ctx| {
        if e.index() == 0 {
            ctx.commands().insert(victim, (Marked,));
            ctx.commands().remove::<(Hp,)>(victim);
            ctx.commands().despawn(victim);
        }
    });
    r.destroy_entity(victim);
    let before = r.profile();
    r.execute_tasks();
    let after = r.profile();

    let mut newcomers = Vec::new();
    r.query::<(Entity, &Id)>().each(|_, (e, id)| {
        if id.0 == 100 {
            newcomers.push(e);
        }
    });
    let [newcomer] = newcomers[..] else {
        panic!("one newcomer: {newcomers:?}")
    };
    assert_eq!(newcomer.index(), victim.index(), "the index is reused");
    assert_ne!(newcomer, victim);
    assert!(!r.contains(victim) && r.contains(newcomer));
    assert_eq!(r.get::<Hp>(newcomer), Ok(&Hp(100)));
    assert!(r.get::<Marked>(newcomer).is_err(), "a stale insert landed");
    assert_eq!(after.commands_applied - before.commands_applied, 2);
    assert_eq!(after.stale_commands - before.stale_commands, 3 + 1);
    assert_eq!(after.destroyed, before.destroyed);
    assert_eq!(
        *log.lock().unwrap(),
        [("remove", victim), ("add", newcomer)]
    );
    // The newcomer's chunk was added at tick 1.
    assert!(added_unmarked(&mut r, 0).contains(&newcomer));

    // Every accessor: the old handle is gone, named in the error, and the occupant untouched.
    assert_eq!(
        r.get::<Id>(victim),
        Err(ComponentError::NoSuchEntity(victim))
    );
    assert_eq!(
        r.get_mut::<Id>(victim).map(|_| ()),
        Err(ComponentError::NoSuchEntity(victim))
    );
    assert_eq!(r.insert(victim, (Marked,)), Err(NoSuchEntity(victim)));
    assert_eq!(
        r.remove::<(Hp,)>(victim),
        Err(ComponentError::NoSuchEntity(victim))
    );
    assert_eq!(r.despawn(victim), Err(NoSuchEntity(victim)));
    let text = r.get::<Id>(victim).unwrap_err().to_string();
    assert!(text.contains(&victim.to_string()), "{text}");
    // A view of another entity's component does not see the occupant through the old handle.
    let seen: Arc<Mutex<Vec<Option<u32>>>> = Arc::default();
    let s = seen.clone();
    r.query_filtered::<&Id, With<Hp>>()
        .views::<(View<Id>,)>()
        .each_async_with(move |e, _, ctx| {
            if e == newcomer {
                let (ids,) = ctx.views();
                s.lock().unwrap().push(ids.get(victim).map(|i| i.0));
                s.lock().unwrap().push(ids.get(newcomer).map(|i| i.0));
            }
        });
    r.execute_tasks();
    assert_eq!(*seen.lock().unwrap(), [None, Some(100)]);
    assert_eq!(r.get::<Id>(newcomer), Ok(&Id(100)));
    assert_eq!(r.get::<Hp>(newcomer), Ok(&Hp(100)));
    r.world().check_invariants();
}

/// What one panicking row in the middle of an `each_async` chunk leaves, for one worker count:
/// the panic message, the world hash, every `Hp`, the rows changed since the launch's tick - 1,
/// the events read, the commands applied and skipped, then the hash after a clean second run.
type PanicRun = (String, u64, Vec<u32>, usize, Vec<u32>, u64, u64);

/// Rows per task of the split runs: a quarter chunk.
const SPLIT: usize = C / 4;

/// The rows whose task panics: chunk 1 whole, or its first quarter when split.
fn lost_rows(split: bool) -> core::ops::Range<usize> {
    C..if split { C + SPLIT } else { 2 * C }
}

fn panic_mid_chunk(workers: usize, split: bool) -> PanicRun {
    let mut r = Registry::with_workers(workers);
    let n = 4 * C as u32 + 3;
    r.spawn_batch((0..n).map(|i| (Hp(i), Id(i))));
    r.update(0.0);
    let bad = C as u32 + 7;
    // The launch returns; the panic waits for the sync point, whatever the worker count.
    let launched = panic::catch_unwind(AssertUnwindSafe(|| {
        r.query::<(&mut Hp, &Id)>()
            .rows_per_task(if split { SPLIT } else { C })
            .each_async_with(move |_, (hp, id), ctx| {
                hp.0 += 1_000_000;
                if id.0 % 50 == 0 {
                    ctx.commands().spawn((Id(n + id.0), Hp(0)));
                    ctx.send(Ev(id.0));
                }
                if id.0 == bad {
                    panic!("row {bad} fails");
                }
            });
    }));
    assert!(
        launched.is_ok(),
        "{workers} workers: the launch itself panicked"
    );
    let payload = panic::catch_unwind(AssertUnwindSafe(|| r.execute_tasks())).unwrap_err();
    let profile = r.profile();
    let mut hp = Vec::new();
    r.query::<&Hp>().each(|_, h| hp.push(h.0));
    let changed = changed_rows(&mut r, 0);
    let mut cursor = EventCursor::default();
    let events: Vec<u32> = r.read_events::<Ev>(&mut cursor).map(|e| e.0).collect();
    let hash = r.world_hash::<(Hp, Id)>();
    r.world().check_invariants();
    // Usable after: a launch without the panic completes every row.
    r.query::<&mut Hp>().each_async(|_, hp| hp.0 += 1);
    r.update(0.0);
    let mut again = Vec::new();
    r.query::<&Hp>().each(|_, h| again.push(h.0 - 1));
    assert_eq!(again, hp, "{workers} workers: the second run");
    (
        message(payload),
        hash,
        hp,
        changed,
        events,
        profile.commands_applied,
        r.world_hash::<(Hp, Id)>(),
    )
}

#[test]
fn a_panic_mid_chunk_in_each_async_is_the_same_for_every_worker_count() {
    for split in [false, true] {
        let one = panic_mid_chunk(1, split);
        let n = 4 * C as u32 + 3;
        let bad = C as u32 + 7;
        let lost = lost_rows(split);
        assert_eq!(one.0, format!("row {bad} fails"));
        // Rows before the panic in its task wrote, rows after it did not; every other task ran.
        let expected: Vec<u32> = (0..n)
            .map(|i| {
                let untouched = i > bad && lost.contains(&(i as usize));
                if untouched { i } else { i + 1_000_000 }
            })
            .chain(
                (0..n)
                    .filter(|i| i % 50 == 0 && !lost.contains(&(*i as usize)))
                    .map(|_| 0),
            )
            .collect();
        assert_eq!(one.2, expected, "split {split}");
        // Write access was granted to every chunk at the launch, the panicking one included;
        // the spawned rows landed after them.
        assert_eq!(one.3, expected.len(), "split {split}");
        // The panicking task lost its events with its commands; the rest are in order.
        let events: Vec<u32> = (0..n)
            .filter(|i| i % 50 == 0 && !lost.contains(&(*i as usize)))
            .collect();
        assert_eq!(one.4, events, "split {split}");
        assert_eq!(one.5, events.len() as u64, "split {split}");
        for &workers in &WORKERS[1..] {
            assert_eq!(
                panic_mid_chunk(workers, split),
                one,
                "{workers} workers, split {split}"
            );
        }
    }
}
