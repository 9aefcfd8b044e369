//! Function systems under attack (running): each test tries to break one promise of the
//! rustdoc or of the guide's "Systems" chapter that `fn_systems`, `fn_systems_determinism` and
//! `fn_systems_rollback` do not already check — panics beside parallel systems (payloads and
//! outputs whose `Drop` panics included), the registry seen from an exclusive system while its
//! phase runs, accesses that cannot be granted, and the same world for every worker count
//! while systems spawn, despawn and panic. The graph's side is in `fn_systems_attack_graph`.

mod fn_support;

use fn_support::*;
use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use freyr::system::{
    EventReader, EventWriter, GraphFormat, Query, Res, ResMut, ScheduleError, SystemConfig, Tick,
};
use freyr::{Commands, Entity, EventCursor, Events, Phase, Registry, StableHash, With, Without};

#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
struct B(u32);
#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
struct C(u32);
#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
struct Age(u32);
#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
struct Tag;

/// A panic in a segment run over the pool: exactly the systems with a path from it are skipped
/// (by conflict or by declared order, transitively), the others run and their commands and
/// events apply; the exclusive system after the segment, the segment after it and the later
/// phases do not run; the next update runs everything, the same at every worker count.
#[test]
fn a_panic_skips_exactly_its_descendants_and_the_next_update_runs_everything() {
    let mut reference = None;
    for &workers in WORKERS {
        let mut r = Registry::with_workers(workers);
        r.add_event::<Ev>();
        r.spawn((A(0),));
        r.spawn((B(0),));
        r.spawn((C(0),));
        r.add_fn_system(
            Phase::Update,
            "bad",
            |t: Tick, mut q: Query<&mut A>, mut c: Commands, mut w: EventWriter<Ev>| {
                q.each(|_, a| a.0 += 1);
                c.spawn((Marker(1),));
                w.send(Ev(1));
                if t.tick == 0 {
                    panic!("bad at tick 0");
                }
            },
        )
        .unwrap();
        // Disjoint from `bad`, but declared after it: skipped.
        r.add_fn_system_with(
            Phase::Update,
            SystemConfig::new("declared after bad").after("bad"),
            |mut q: Query<&mut B>| q.each(|_, b| b.0 += 1),
        )
        .unwrap();
        // After the skipped one by conflict: skipped too (a path from `bad`).
        r.add_fn_system(Phase::Update, "after that", |mut q: Query<&mut B>| {
            q.each(|_, b| b.0 += 10)
        })
        .unwrap();
        // No path from `bad`: runs, its commands and events apply.
        r.add_fn_system(
            Phase::Update,
            "free",
            |mut q: Query<&mut C>, mut c: Commands, mut w: EventWriter<Ev>| {
                q.each(|_, x| x.0 += 1);
                c.spawn((Marker(2),));
                w.send(Ev(2));
            },
        )
        .unwrap();
        let barrier = Arc::new(AtomicUsize::new(0));
        let seen = barrier.clone();
        r.add_system(Phase::Update, move |_: &mut Registry, _: f32| {
            seen.fetch_add(1, Ordering::SeqCst);
        });
        r.add_fn_system(Phase::Update, "late", |mut c: Commands| {
            c.spawn((Marker(3),));
        })
        .unwrap();
        let post = Arc::new(AtomicUsize::new(0));
        let seen = post.clone();
        r.add_fn_system(Phase::PostUpdate, "post", move || {
            seen.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();

        let mut cursor = EventCursor::default();
        assert_eq!(update(&mut r), Err("bad at tick 0".to_owned()), "{workers}");
        let events: Vec<u64> = r.read_events::<Ev>(&mut cursor).map(|e| e.0).collect();
        assert_eq!(
            events,
            [2],
            "{workers} workers: only `free`'s events are stored"
        );
        let markers: Vec<u32> = rows::<Marker>(&mut r).iter().map(|m| m.1.0).collect();
        assert_eq!(markers, [2], "{workers} workers");
        assert_eq!(
            rows::<B>(&mut r)[0].1,
            B(0),
            "{workers} workers: both skipped"
        );
        assert_eq!(rows::<C>(&mut r)[0].1, C(1), "{workers} workers");
        assert_eq!(barrier.load(Ordering::SeqCst), 0, "the barrier after it");
        assert_eq!(post.load(Ordering::SeqCst), 0, "later phases");

        assert_eq!(update(&mut r), Ok(()), "{workers} workers");
        let events: Vec<u64> = r.read_events::<Ev>(&mut cursor).map(|e| e.0).collect();
        assert_eq!(events, [1, 2], "{workers} workers: registration order");
        let markers: Vec<u32> = rows::<Marker>(&mut r).iter().map(|m| m.1.0).collect();
        assert_eq!(markers, [2, 1, 2, 3], "{workers} workers");
        assert_eq!(rows::<A>(&mut r)[0].1, A(2));
        assert_eq!(rows::<B>(&mut r)[0].1, B(11), "{workers} workers");
        assert_eq!(barrier.load(Ordering::SeqCst), 1);
        assert_eq!(post.load(Ordering::SeqCst), 1);
        let world = r.world_hash::<(A, B, C, Marker)>();
        assert_eq!(*reference.get_or_insert(world), world, "{workers} workers");
    }
}

static DEFUSED: AtomicUsize = AtomicUsize::new(0);

/// A value whose `Drop` panics when armed (and not already unwinding).
#[derive(Clone, Debug)]
struct Bomb(bool);
impl Drop for Bomb {
    fn drop(&mut self) {
        if !self.0 {
            return;
        }
        DEFUSED.fetch_add(1, Ordering::SeqCst);
        if !std::thread::panicking() {
            panic!("a bomb's drop");
        }
    }
}

/// Systems that panic with a payload whose `Drop` panics, after recording commands and events
/// holding such values: the first panic in registration order is re-raised (not a `Drop`'s),
/// the disjoint system's commands apply, and the registry runs on.
#[test]
fn panicking_drops_of_payloads_and_discarded_outputs_are_contained() {
    for &workers in WORKERS {
        let mut r = Registry::with_workers(workers);
        r.add_event::<Bomb>();
        r.add_fn_system(
            Phase::Update,
            "first",
            |t: Tick, mut c: Commands, mut w: EventWriter<Bomb>| {
                // Armed in the run that panics: its outputs are discarded.
                c.spawn((Bomb(t.tick == 0),));
                w.send(Bomb(t.tick == 0));
                if t.tick == 0 {
                    panic!("first");
                }
            },
        )
        .unwrap();
        r.add_fn_system(Phase::Update, "second", |t: Tick, _: Query<&A>| {
            if t.tick == 0 {
                std::panic::panic_any(Bomb(true));
            }
        })
        .unwrap();
        r.add_fn_system(Phase::Update, "fine", |mut c: Commands| {
            c.spawn((Marker(7),));
        })
        .unwrap();
        let defused = DEFUSED.load(Ordering::SeqCst);
        assert_eq!(update(&mut r), Err("first".to_owned()), "{workers} workers");
        assert_eq!(
            DEFUSED.load(Ordering::SeqCst) - defused,
            3,
            "{workers} workers: the payload, the spawn and the event are dropped"
        );
        assert_eq!(r.query::<&Bomb>().count(), 0, "{workers} workers");
        assert_eq!(r.query::<&Marker>().count(), 1, "{workers} workers");
        assert_eq!(update(&mut r), Ok(()), "{workers} workers");
        assert_eq!(r.query::<&Bomb>().count(), 1, "{workers} workers");
        assert_eq!(r.query::<&Marker>().count(), 2, "{workers} workers");
    }
}

/// Spawns, despawns, inserts and removes through commands, events, change filters, and systems
/// that panic on some ticks: the same world (entity ids included), the same sum and the same
/// ticks failing at every worker count, with and without shuffled starts.
#[test]
fn spawning_despawning_and_panicking_systems_give_one_world_at_every_worker_count() {
    let run = |workers: usize, seed: Option<u64>| {
        let mut r = Registry::with_workers(workers);
        r.shuffle_system_starts(seed);
        r.register_hashable::<Age>();
        r.register_hashable::<Id>();
        r.register_hashable::<Tag>();
        r.insert_resource(Sum(0));
        r.add_event::<Ev>();
        r.add_fn_system(Phase::Update, "spawn", |t: Tick, mut c: Commands| {
            for k in 0..3 {
                let e = c.spawn((Age(0), Id(t.tick * 10 + k)));
                if k == 1 {
                    c.insert(e, (Tag,));
                }
            }
        })
        .unwrap();
        r.add_fn_system(Phase::Update, "age", |t: Tick, mut q: Query<&mut Age>| {
            q.each(|_, a| a.0 += 1);
            if t.tick % 5 == 3 {
                panic!("age fails");
            }
        })
        .unwrap();
        r.add_fn_system(
            Phase::Update,
            "reap",
            |mut q: Query<(Entity, &Age)>, mut c: Commands| {
                q.each(|_, (e, a)| {
                    if a.0 >= 4 {
                        c.despawn(e);
                        c.despawn(e); // the second is stale when applied
                    }
                });
            },
        )
        .unwrap();
        r.add_fn_system(
            Phase::Update,
            "tag",
            |mut q: Query<(Entity, &Id), Without<Tag>>, mut c: Commands| {
                q.each(|_, (e, id)| {
                    if id.0 % 3 == 0 {
                        c.insert(e, (Tag,));
                    }
                })
            },
        )
        .unwrap();
        r.add_fn_system(
            Phase::Update,
            "untag",
            |t: Tick, mut q: Query<Entity, With<Tag>>, mut c: Commands| {
                if t.tick.is_multiple_of(3) {
                    q.each(|e, _| c.remove::<(Tag,)>(e));
                }
            },
        )
        .unwrap();
        r.add_fn_system(
            Phase::Update,
            "count",
            |mut q: Query<&Id>, mut w: EventWriter<Ev>| {
                let mut n = 0;
                q.filter_changed::<Id>().each(|_, id| n += id.0);
                w.send(Ev(n));
            },
        )
        .unwrap();
        r.add_fn_system(
            Phase::PostUpdate,
            "tally",
            |t: Tick, mut ev: EventReader<Ev>, mut s: ResMut<Sum>| {
                for e in ev.read() {
                    s.0 = s.0.wrapping_mul(31).wrapping_add(e.0);
                }
                if t.tick == 7 {
                    panic!("tally fails");
                }
            },
        )
        .unwrap();
        let failed: Vec<bool> = (0..14).map(|_| update(&mut r).is_err()).collect();
        let hash = r.world_hash::<(Age, Id, Tag)>();
        let ids: Vec<(u64, Id)> = rows::<Id>(&mut r);
        (failed, hash, ids, r.resource::<Sum>().unwrap().0)
    };
    let reference = run(1, None);
    assert!(reference.0.iter().filter(|&&f| f).count() >= 3);
    assert!(!reference.2.is_empty());
    for &workers in WORKERS {
        for seed in [None, Some(1), Some(0xDEAD_BEEF)] {
            assert_eq!(
                run(workers, seed),
                reference,
                "{workers} workers, seed {seed:?}"
            );
        }
    }
}

/// An exclusive system that panics between two segments: the first segment's commands apply,
/// the second does not run, and the phase's function systems are all still there afterwards.
#[test]
fn a_panicking_exclusive_system_between_segments_keeps_the_schedule() {
    for &workers in &[1, 3] {
        let mut r = Registry::with_workers(workers);
        r.add_fn_system(Phase::Update, "a", |mut c: Commands| {
            c.spawn((Marker(1),));
        })
        .unwrap();
        r.add_fn_system(Phase::Update, "a2", |mut q: Query<&mut A>| {
            q.each(|_, a| a.0 += 1)
        })
        .unwrap();
        r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
            if r.tick() == 0 {
                panic!("exclusive fails");
            }
        });
        r.add_fn_system(Phase::Update, "b", |mut c: Commands| {
            c.spawn((Marker(2),));
        })
        .unwrap();
        assert_eq!(update(&mut r), Err("exclusive fails".to_owned()));
        let markers: Vec<u32> = rows::<Marker>(&mut r).iter().map(|m| m.1.0).collect();
        assert_eq!(markers, [1], "{workers} workers");
        assert_eq!(r.system_count(Phase::Update), 4);
        assert!(r.system_access(Phase::Update, "b").is_some());
        assert_eq!(update(&mut r), Ok(()));
        let markers: Vec<u32> = rows::<Marker>(&mut r).iter().map(|m| m.1.0).collect();
        assert_eq!(markers, [1, 1, 2], "{workers} workers");
        let dot = r.schedule_graph(Phase::Update, GraphFormat::Dot).unwrap();
        assert!(dot.contains("\"b\""), "{dot}");
    }
}

/// What an exclusive system sees of its own phase: the function systems are counted, their
/// access is there, the graph is printed or refused (never a wrong graph or a panic), and
/// turning the shuffled-start mode on takes effect for that phase too.
#[test]
fn an_exclusive_system_sees_its_own_phase_s_function_systems() {
    type Seen = (usize, bool, Result<bool, ScheduleError>);
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let mut r = Registry::with_workers(2);
    r.add_fn_system(Phase::Update, "f", |_: Query<&mut A>| {})
        .unwrap();
    let log = seen.clone();
    r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        let graph = catch_unwind(AssertUnwindSafe(|| {
            r.schedule_graph(Phase::Update, GraphFormat::Dot)
        }))
        .expect("schedule_graph does not panic from an exclusive system");
        log.lock().unwrap().push((
            r.system_count(Phase::Update),
            r.system_access(Phase::Update, "f").is_some(),
            graph.map(|dot| dot.contains("\"f\"")),
        ));
    });
    r.add_fn_system(Phase::Update, "g", |_: Query<&A>| {})
        .unwrap();
    r.update(0.0);
    let (count, access, graph) = seen.lock().unwrap()[0].clone();
    assert_eq!(count, 3, "the function systems are counted");
    assert!(access, "the running phase's systems have their access");
    assert!(
        matches!(graph, Ok(true) | Err(ScheduleError::DuringUpdate)),
        "{graph:?}"
    );
    // Outside the update the same calls see everything.
    assert_eq!(r.system_count(Phase::Update), 3);
}

/// The shuffled-start mode, turned on by an exclusive system of the phase it shuffles, takes
/// effect for that phase's later ticks.
#[test]
fn shuffled_starts_turned_on_from_an_exclusive_system_of_the_phase() {
    let orders = |seed: u64| {
        let hidden = Arc::new(Mutex::new(Vec::new()));
        let mut r = Registry::with_workers(1);
        r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
            r.shuffle_system_starts(Some(seed))
        });
        for k in 0..4u32 {
            let hidden = hidden.clone();
            r.add_fn_system(Phase::Update, format!("s{k}"), move || {
                hidden.lock().unwrap().push(k)
            })
            .unwrap();
        }
        for _ in 0..3 {
            r.update(0.0);
        }
        hidden.lock().unwrap().clone()
    };
    let distinct: HashSet<Vec<u32>> = (0..16).map(orders).collect();
    assert!(distinct.len() > 1, "the mode took effect: {distinct:?}");
}

/// Accesses that cannot be granted are refused at registration, naming the type, with nothing
/// added; the ones that can (filters on the written type, repeated reads, two readers of one
/// event type) are accepted and work.
#[test]
fn accesses_that_cannot_be_granted_are_refused_and_the_rest_work() {
    let mut r = Registry::with_workers(2);
    let name = |e: ScheduleError| match e {
        ScheduleError::ConflictingAccess { type_name, .. } => type_name,
        other => panic!("expected ConflictingAccess, got {other:?}"),
    };
    let e = r
        .add_fn_system(
            Phase::Update,
            "with/without",
            |_: Query<&mut A, With<B>>, _: Query<&mut A, Without<B>>| {},
        )
        .unwrap_err();
    assert!(name(e).contains("A"));
    let e = r
        .add_fn_system(Phase::Update, "one query", |_: Query<(&mut A, &A)>| {})
        .unwrap_err();
    assert!(name(e).contains("A"));
    let e = r
        .add_fn_system(Phase::Update, "option", |_: Query<(&mut A, Option<&A>)>| {})
        .unwrap_err();
    assert!(name(e).contains("A"));
    let e = r
        .add_fn_system(
            Phase::Update,
            "opt res",
            |_: Option<Res<Res1>>, _: ResMut<Res1>| {},
        )
        .unwrap_err();
    assert!(name(e).contains("Res1"));
    let e = r
        .add_fn_system(
            Phase::Update,
            "opt opt",
            |_: Option<ResMut<Res1>>, _: Option<Res<Res1>>| {},
        )
        .unwrap_err();
    assert!(name(e).contains("Res1"));
    let e = r
        .add_fn_system(
            Phase::Update,
            "events",
            |_: EventReader<Ev>, _: ResMut<Events<Ev>>| {},
        )
        .unwrap_err();
    assert!(name(e).contains("Events"));
    assert_eq!(r.system_count(Phase::Update), 0, "nothing was added");

    // What can be granted.
    r.insert_resource(Res1(3));
    r.add_event::<Ev>();
    r.spawn((A(1),));
    r.spawn((A(2), B(0)));
    let seen = Arc::new(Mutex::new(Vec::new()));
    r.add_fn_system(
        Phase::PreUpdate,
        "send",
        |mut w1: EventWriter<Ev>, mut w2: EventWriter<Ev>, mut c: Commands| {
            w1.send(Ev(1));
            w2.send(Ev(2));
            w1.send(Ev(3));
            c.spawn((C(0),));
        },
    )
    .unwrap();
    let log = seen.clone();
    r.add_fn_system(
        Phase::Update,
        "granted",
        move |mut none: Query<&mut Marker, Without<Marker>>,
              mut both: Query<(&A, Option<&B>)>,
              mut again: Query<&A, With<B>>,
              r1: Res<Res1>,
              r2: Res<Res1>,
              mut e1: EventReader<Ev>,
              mut e2: EventReader<Ev>| {
            let mut n = 0;
            none.each(|_, _| n += 1);
            let mut sum = 0;
            both.each(|_, (a, b)| sum += a.0 + b.map_or(0, |b| b.0 + 100));
            let mut tagged = 0;
            again.each(|_, a| tagged += a.0);
            let one: Vec<u64> = e1.read().map(|e| e.0).collect();
            let two: Vec<u64> = e2.read().map(|e| e.0).collect();
            log.lock()
                .unwrap()
                .push((n, sum, tagged, r1.0 + r2.0, one, two));
        },
    )
    .unwrap();
    r.update(0.0);
    r.update(0.0);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (0, 103, 2, 6, vec![1, 2, 3], vec![1, 2, 3]),
            (0, 103, 2, 6, vec![1, 2, 3], vec![1, 2, 3]),
        ]
    );
    assert_eq!(r.query::<&C>().count(), 2);

    // Disjoint filters are not looked at across systems either: the two are ordered.
    let mut r = Registry::with_workers(2);
    r.add_fn_system(Phase::Update, "w1", |_: Query<&mut A, With<B>>| {})
        .unwrap();
    r.add_fn_system(Phase::Update, "w2", |_: Query<&mut A, Without<B>>| {})
        .unwrap();
    let dot = r.schedule_graph(Phase::Update, GraphFormat::Dot).unwrap();
    assert!(
        dot.contains(r#""w1" -> "w2" [label="conflict on "#),
        "{dot}"
    );
}

/// A function system's `count` counts what its `each` visits: the chunks that pass the change
/// filters of this run (it used to count every match), and it stamps nothing.
#[test]
fn count_counts_what_each_visits() {
    let seen: Arc<Mutex<Vec<(usize, usize, usize)>>> = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let mut registry = Registry::with_workers(2);
    // Three chunks' worth of `A` alone, and a few with `B` beside (another archetype).
    registry.spawn_batch((0..1200).map(|i| (A(i),)));
    registry.spawn_batch((0..10).map(|i| (A(i), B(i))));
    registry
        .add_fn_system(Phase::Update, "watch", move |mut q: Query<&A>| {
            let all = q.count();
            let changed = q.filter_changed::<A>().count();
            let mut visited = 0;
            q.each(|_, _| visited += 1);
            log.lock().unwrap().push((all, changed, visited));
        })
        .unwrap();
    registry
        .add_fn_system(
            Phase::PostUpdate,
            "writer",
            |t: Tick, mut q: Query<&mut A, With<B>>| {
                if t.tick == 1 {
                    q.each(|_, a| a.0 += 1);
                }
            },
        )
        .unwrap();
    for _ in 0..4 {
        registry.update(0.0);
    }
    // The first run's filters are not active yet (it sees every row); the writer's stamps at
    // tick 1 are seen by the run at tick 2 (the `B` archetype's 10 rows), and by no later one.
    let runs = seen.lock().unwrap().clone();
    for &(all, changed, visited) in &runs {
        assert_eq!(all, 1210);
        assert_eq!(changed, visited, "{runs:?}");
    }
    assert_eq!(runs[2].1, 10, "{runs:?}");
    assert_eq!(runs[3].1, 0, "{runs:?}");
}
