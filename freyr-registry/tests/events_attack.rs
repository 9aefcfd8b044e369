//! Attacks on the events contract: the read order is (launch, chunk, row, send) for any worker
//! count and shuffle seed, also from parallel function systems; a reader every tick in any
//! phase misses nothing (fixed-step catch-up included); panicking tasks, systems and event
//! `Drop`s lose only their own events; memory stays bounded for a type never read.

mod events_attack_support;

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use events_attack_support::{Bomb, Ev, ev, panics};
use freyr::system::{EventReader, EventWriter, Query, Tick};
use freyr::time::ManualClock;
use freyr::{EventCursor, Events, Phase, Registry};

struct A(u32);
struct B(u32);

type Log = Arc<Mutex<Vec<Ev>>>;

/// Three parallel writer systems (disjoint queries), an exclusive system launching an
/// `each_async_with` between two direct sends, readers in the phase before and the phase after
/// the writers. Returns what the reader before the writers saw, and what a reader outside
/// `update` saw.
fn fn_run(workers: usize, seed: Option<u64>) -> (Vec<Ev>, Vec<Ev>) {
    let mut r = Registry::with_workers(workers);
    r.shuffle_system_starts(seed);
    for i in 0..1500u32 {
        r.spawn((A(i),));
        r.spawn((B(i),));
    }
    let early: Log = Arc::default();
    let late: Log = Arc::default();
    let log = early.clone();
    r.add_fn_system(Phase::PreUpdate, "early", move |mut rd: EventReader<Ev>| {
        log.lock().unwrap().extend(rd.read().cloned());
    })
    .unwrap();
    r.add_fn_system(
        Phase::Update,
        "wa",
        |mut q: Query<&A>, mut w: EventWriter<Ev>, t: Tick| {
            q.each(|_, a| {
                if a.0 % 97 == 0 {
                    w.send(ev(1, t.tick, a.0));
                }
            })
        },
    )
    .unwrap();
    r.add_fn_system(
        Phase::Update,
        "wb",
        |mut q: Query<&B>, mut w: EventWriter<Ev>, t: Tick| {
            q.each(|_, b| {
                if b.0 % 101 == 0 {
                    w.send(ev(2, t.tick, b.0));
                }
            })
        },
    )
    .unwrap();
    r.add_fn_system(Phase::Update, "wc", |mut w: EventWriter<Ev>, t: Tick| {
        for n in 0..3 {
            w.send(ev(3, t.tick, n));
        }
    })
    .unwrap();
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        let tick = r.tick();
        r.send_event(ev(4, tick, 0));
        r.query::<&A>().each_async_with(move |_, a, ctx| {
            if a.0 % 89 == 0 {
                ctx.send(ev(5, tick, a.0));
                ctx.send(ev(6, tick, a.0));
            }
        });
        r.send_event(ev(4, tick, 1));
    });
    let log = late.clone();
    r.add_fn_system(Phase::PostUpdate, "late", move |mut rd: EventReader<Ev>| {
        log.lock().unwrap().extend(rd.read().cloned());
    })
    .unwrap();
    let mut outside = EventCursor::default();
    let mut read = Vec::new();
    for _ in 0..4 {
        r.update(1.0);
        read.extend(r.read_events::<Ev>(&mut outside).cloned());
    }
    assert_eq!(
        *late.lock().unwrap(),
        read,
        "the PostUpdate reader saw it all"
    );
    let early = early.lock().unwrap().clone();
    (early, read)
}

#[test]
fn fn_system_writers_give_one_order_for_every_worker_count_and_seed() {
    let (early, all) = fn_run(1, None);
    // Within a tick: the exclusive system's direct send, its query's events (chunk, row, send
    // order), its last direct send; the function systems' buffers by registration order.
    let tick0: Vec<&Ev> = all.iter().filter(|e| e.tick == 0).collect();
    let srcs: Vec<u32> = tick0.iter().map(|e| e.src).collect();
    let expected_a: Vec<u32> = (0..1500).filter(|i| i % 97 == 0).collect();
    let got_a: Vec<u32> = tick0.iter().filter(|e| e.src == 1).map(|e| e.n).collect();
    assert_eq!(got_a, expected_a, "row order inside a system");
    let q5: Vec<u32> = tick0.iter().filter(|e| e.src == 5).map(|e| e.n).collect();
    assert_eq!(q5, (0..1500).filter(|i| i % 89 == 0).collect::<Vec<_>>());
    // Send order inside a row: 5 then 6 for each entity.
    let pairs: Vec<u32> = tick0
        .iter()
        .filter(|e| e.src == 5 || e.src == 6)
        .map(|e| e.src)
        .collect();
    assert!(pairs.chunks(2).all(|p| p == [5, 6]), "{pairs:?}");
    let first4 = srcs.iter().position(|&s| s == 4).unwrap();
    let last4 = srcs.iter().rposition(|&s| s == 4).unwrap();
    assert!(
        srcs[first4 + 1..last4].iter().all(|&s| s == 5 || s == 6),
        "the query's events sit between the two direct sends: {srcs:?}"
    );
    assert_eq!(all.iter().filter(|e| e.tick == 3).count(), tick0.len());
    // The reader in the phase before the writers saw every tick but the last, in order.
    assert_eq!(early[..], all[..early.len()]);
    assert!(early.iter().all(|e| e.tick < 3));
    assert_eq!(early.len(), tick0.len() * 3);
    for workers in [1, 2, 3, 8, 16] {
        for seed in [None, Some(1), Some(0xdead_beef)] {
            let (e, a) = fn_run(workers, seed);
            assert_eq!(a, all, "{workers} workers, seed {seed:?}");
            assert_eq!(e, early, "{workers} workers, seed {seed:?}");
        }
    }
}

/// Readers in every phase (before, beside and after the writer) and one outside `update`, run
/// through fixed-step frames that catch up several ticks at once: each reads every event once.
#[test]
fn readers_in_every_phase_miss_nothing_across_catch_up_ticks() {
    for workers in [1, 2, 8] {
        let clock = ManualClock::new();
        let mut r = Registry::with_workers(workers);
        r.set_fixed_step(Duration::from_millis(10), clock.clone())
            .unwrap();
        let logs: Vec<Log> = (0..4).map(|_| Log::default()).collect();
        for (i, phase) in [Phase::PreUpdate, Phase::Update, Phase::PostUpdate]
            .into_iter()
            .enumerate()
        {
            let log = logs[i].clone();
            r.add_fn_system(
                phase,
                format!("reader{i}"),
                move |mut rd: EventReader<Ev>| {
                    log.lock().unwrap().extend(rd.read().cloned());
                },
            )
            .unwrap();
        }
        // The writer sits in Update, between the readers of the phases around it; an
        // exclusive system in PostUpdate writes too (after the PostUpdate function system
        // read, or not: its events are read next tick either way).
        r.add_fn_system(
            Phase::Update,
            "writer",
            |mut w: EventWriter<Ev>, t: Tick| {
                w.send(ev(1, t.tick, 0));
                w.send(ev(1, t.tick, 1));
            },
        )
        .unwrap();
        r.add_system(Phase::PostUpdate, |r: &mut Registry, _: f32| {
            let tick = r.tick();
            r.send_event(ev(2, tick, 0));
        });
        let mut outside = EventCursor::default();
        for step in [35u64, 0, 80, 10, 5, 5, 200, 10] {
            clock.advance(Duration::from_millis(step));
            r.run_frame();
            // Read once per frame, not per tick: it sees only the last two ticks of a frame.
            logs[3]
                .lock()
                .unwrap()
                .extend(r.read_events::<Ev>(&mut outside).cloned());
        }
        let ticks = r.tick();
        assert!(ticks >= 20, "{ticks} ticks ran");
        let expected: Vec<Ev> = (0..ticks)
            .flat_map(|t| [ev(1, t, 0), ev(1, t, 1), ev(2, t, 0)])
            .collect();
        let outside = logs[3].lock().unwrap().clone();
        assert!(
            outside.len() < expected.len(),
            "the per-frame reader skipped ticks"
        );
        assert_eq!(outside[outside.len() - 6..], expected[expected.len() - 6..]);
        for (i, log) in logs[..3].iter().enumerate() {
            let seen = log.lock().unwrap().clone();
            assert_eq!(
                seen[..],
                expected[..seen.len()],
                "{workers} workers, reader {i}: in order, no gap, no repeat"
            );
            // A reader misses only what was stored after its last run.
            assert!(
                seen.len() + 3 >= expected.len(),
                "reader {i}: {}",
                seen.len()
            );
        }
    }
}

#[test]
fn retention_is_exactly_the_storing_tick_and_the_next() {
    let mut r = Registry::with_workers(2);
    r.add_event::<Ev>();
    // Stored by `execute_tasks` at tick 0, outside any update.
    r.send_event(ev(0, 0, 0));
    r.execute_tasks();
    let at = |r: &Registry| {
        let mut c = EventCursor::default();
        r.read_events::<Ev>(&mut c).cloned().collect::<Vec<_>>()
    };
    assert_eq!(at(&r), [ev(0, 0, 0)]);
    r.update(0.0); // tick 0 ran, no sends: now tick 1
    assert_eq!(at(&r), [ev(0, 0, 0)], "readable during tick T + 1");
    r.update(0.0); // now tick 2
    assert!(
        at(&r).is_empty(),
        "gone from T + 2 on, even with no send since"
    );
    // A send at tick 2 rotates the halves: only it is readable.
    r.send_event(ev(0, 2, 1));
    r.execute_tasks();
    assert_eq!(at(&r), [ev(0, 2, 1)]);
    // A cursor that had read nothing yet is at the end afterwards.
    let mut c = EventCursor::default();
    assert_eq!(r.read_events::<Ev>(&mut c).count(), 1);
    assert_eq!(c.position(), 2);
}

/// A function system that panics loses its events whole; its independent neighbours keep
/// theirs, in registration order; the same for every worker count.
#[test]
fn a_panicking_fn_system_loses_its_events_and_only_them() {
    let mut reference = None;
    for workers in [1, 2, 3, 8, 16] {
        let mut r = Registry::with_workers(workers);
        r.shuffle_system_starts(Some(workers as u64));
        for name in ["a", "b", "c", "d"] {
            let src = name.as_bytes()[0] as u32;
            r.add_fn_system(Phase::Update, name, move |mut w: EventWriter<Ev>| {
                for n in 0..50 {
                    w.send(ev(src, 0, n));
                }
                if src == b'c' as u32 {
                    panic!("system c fails after sending");
                }
            })
            .unwrap();
        }
        let msg = panics(|| r.update(0.0));
        assert!(msg.contains("system c fails"), "{msg}");
        let mut c = EventCursor::default();
        let read: Vec<u32> = r.read_events::<Ev>(&mut c).map(|e| e.src).collect();
        let mut expected = vec![b'a' as u32; 50];
        expected.extend([b'b' as u32; 50]);
        expected.extend([b'd' as u32; 50]);
        assert_eq!(read, expected, "{workers} workers");
        // The registry goes on: the next tick's panic loses c's events again, the rest stays.
        let _ = panics(|| r.update(0.0));
        let again: Vec<u32> = r.read_events::<Ev>(&mut c).map(|e| e.src).collect();
        assert_eq!(again, expected);
        let sent = r.resource::<Events<Ev>>().unwrap().sent();
        assert_eq!(sent, 300);
        match &reference {
            None => reference = Some(read),
            Some(x) => assert_eq!(x, &read),
        }
    }
}

/// A panicking `each_async_with` task and a panicking exclusive system in one phase: the
/// other tasks' and the direct sends before the panic are kept.
#[test]
fn a_panicking_task_inside_a_system_keeps_the_other_tasks_events() {
    for workers in [1, 4] {
        let mut r = Registry::with_workers(workers);
        for i in 0..1600u32 {
            r.spawn((A(i),));
        }
        r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
            r.send_event(ev(0, 0, 0));
            r.query::<&A>().each_async_with(|_, a, ctx| {
                ctx.send(ev(1, 0, a.0));
                if a.0 == 1000 {
                    panic!("task of chunk 1 fails");
                }
            });
            r.send_event(ev(0, 0, 1));
        });
        let msg = panics(|| r.update(0.0));
        assert!(msg.contains("chunk 1 fails"), "{msg}");
        let mut c = EventCursor::default();
        let read: Vec<Ev> = r.read_events::<Ev>(&mut c).cloned().collect();
        let mut expected = vec![ev(0, 0, 0)];
        expected.extend((0..512).chain(1024..1600).map(|n| ev(1, 0, n)));
        expected.push(ev(0, 0, 1));
        assert_eq!(read, expected, "{workers} workers");
    }
}

static EXPIRY_DROPS: AtomicUsize = AtomicUsize::new(0);

/// An event whose `Drop` panics when its half expires: the panic is re-raised by the sync
/// point, but the events stored there (of that type and others) are all kept, numbered on
/// from the old ones, and the store goes on rotating normally; every value is dropped once.
#[test]
fn a_panicking_event_drop_at_expiry_keeps_the_new_events() {
    let drops = &EXPIRY_DROPS;
    let mut r = Registry::with_workers(2);
    let mk = |armed, id| Bomb { armed, id, drops };
    r.send_event(mk(true, 0));
    r.send_event(mk(false, 1));
    r.update(0.0); // stored at tick 0
    r.update(0.0); // tick 1: no send
    // Tick 2: storing rotates out the tick-0 half, whose first event panics in `Drop`.
    r.send_event(mk(false, 2));
    r.send_event(ev(9, 2, 0));
    r.send_event(mk(false, 3));
    let msg = panics(|| r.execute_tasks());
    assert!(msg.contains("bomb 0"), "{msg}");
    assert_eq!(
        drops.load(Ordering::SeqCst),
        2,
        "both expired events dropped"
    );
    let mut c = EventCursor::default();
    let ids: Vec<u32> = r.read_events::<Bomb>(&mut c).map(|b| b.id).collect();
    assert_eq!(
        ids,
        [2, 3],
        "the events stored by the panicking sync point are kept"
    );
    assert_eq!(c.position(), 4, "numbering goes on from the expired events");
    let mut c2 = EventCursor::default();
    assert_eq!(
        r.read_events::<Ev>(&mut c2).cloned().collect::<Vec<_>>(),
        [ev(9, 2, 0)],
        "another type stored at the same sync point"
    );
    // The store rotates normally after the panic.
    r.send_event(mk(false, 4));
    r.update(0.0); // stored at tick 2
    assert_eq!(
        r.read_events::<Bomb>(&mut c)
            .map(|b| b.id)
            .collect::<Vec<_>>(),
        [4]
    );
    r.send_event(mk(false, 5));
    r.update(0.0); // stored at tick 3
    let read: Vec<u32> = r.read_events::<Bomb>(&mut c).map(|b| b.id).collect();
    assert_eq!(read, [5]);
    r.send_event(mk(false, 6));
    r.update(0.0); // stored at tick 4: the tick-2 half (2, 3, 4) goes
    let read: Vec<u32> = r.read_events::<Bomb>(&mut c).map(|b| b.id).collect();
    assert_eq!(read, [6]);
    assert_eq!(drops.load(Ordering::SeqCst), 5);
    assert_eq!(r.resource::<Events<Bomb>>().unwrap().sent(), 7);
    drop(r);
    assert_eq!(drops.load(Ordering::SeqCst), 7, "each value dropped once");
}

/// An event type sent every tick and never read holds at most two ticks' worth of events,
/// over thousands of ticks; every value it ever held is dropped.
#[test]
fn a_never_read_event_type_stays_bounded() {
    let held = Arc::new(());
    let mut r = Registry::with_workers(2);
    for i in 0..64u32 {
        r.spawn((A(i),));
    }
    let token = held.clone();
    r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        let token = token.clone();
        r.query::<&A>()
            .each_async_with(move |_, _, ctx| ctx.send(token.clone()));
    });
    for tick in 0..3000u64 {
        r.update(0.0);
        let events = r.resource::<Events<Arc<()>>>().unwrap();
        assert!(events.len() <= 128, "tick {tick}: {} held", events.len());
        assert_eq!(events.sent(), 64 * (tick + 1));
        assert!(Arc::strong_count(&held) <= 128 + 2);
    }
    drop(r);
    assert_eq!(Arc::strong_count(&held), 1);
}

/// `add_event` twice (and after events were stored) neither resets the store nor its numbers.
#[test]
fn add_event_twice_keeps_the_store() {
    let mut r = Registry::with_workers(1);
    r.add_event::<Ev>();
    r.send_event(ev(0, 0, 1));
    r.execute_tasks();
    r.add_event::<Ev>();
    r.add_event::<Ev>();
    let mut c = EventCursor::default();
    assert_eq!(r.read_events::<Ev>(&mut c).count(), 1);
    let snap = r.snapshot().unwrap();
    r.send_event(ev(0, 0, 2));
    r.execute_tasks();
    r.restore(&snap).unwrap();
    assert_eq!(r.resource::<Events<Ev>>().unwrap().sent(), 1);
}

/// Sends from an exclusive system, around launches and around its own `execute_tasks`: the
/// events stored mid-update are readable by later systems of the same phase and tick.
#[test]
fn send_event_inside_an_exclusive_system_mid_update() {
    let seen: Log = Arc::default();
    let mut r = Registry::with_workers(4);
    for i in 0..600u32 {
        r.spawn((A(i),));
    }
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        r.query::<&A>().each_async_with(|_, a, ctx| {
            if a.0 % 300 == 0 {
                ctx.send(ev(1, 0, a.0));
            }
        });
        r.send_event(ev(2, 0, 0)); // after the launch above
        r.execute_tasks(); // stored now, at this tick
        r.send_event(ev(2, 0, 1));
    });
    let log = seen.clone();
    r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        let mut c = EventCursor::default();
        log.lock()
            .unwrap()
            .extend(r.read_events::<Ev>(&mut c).cloned());
    });
    r.update(0.0);
    assert_eq!(
        *seen.lock().unwrap(),
        [ev(1, 0, 0), ev(1, 0, 300), ev(2, 0, 0)],
        "the event sent after execute_tasks is not stored until the phase ends"
    );
    let mut c = EventCursor::default();
    assert_eq!(r.read_events::<Ev>(&mut c).count(), 4);
    assert!(
        panic::catch_unwind(AssertUnwindSafe(|| r.update(0.0))).is_ok(),
        "no panic"
    );
}
