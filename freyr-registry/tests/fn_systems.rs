//! Function systems: parameters, registration errors, ordering, parallel runs of disjoint
//! sequential bodies, panics.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use freyr_registry::systems::{
    EventReader, EventWriter, Query, QueryEntityError, Res, ResMut, ScheduleError, SystemConfig,
    Tick,
};
use freyr_registry::{Commands, Entity, EventCursor, Phase, Registry, With, Without};

struct Pos(f32);
struct Vel(f32);
struct Hp(u32);
struct Tag;
#[derive(Clone, Debug, PartialEq)]
struct Died(Entity);
struct Log(Vec<&'static str>);

fn log(name: &'static str) -> impl FnMut(ResMut<Log>) + Send + 'static {
    move |mut l: ResMut<Log>| l.0.push(name)
}

/// A system that adds one to every tagged `Hp` in tick `tick` and writes nothing in the others.
fn bump_tagged_hp_at(tick: u64) -> impl FnMut(Tick, Query<&mut Hp, With<Tag>>) + Send + 'static {
    move |t: Tick, mut q: Query<&mut Hp, With<Tag>>| {
        if t.tick == tick {
            q.each(|_, h| h.0 += 1);
        }
    }
}

/// Worker counts: every count CI's determinism rule names, natively; under Miri the inline run
/// and one parallel run (each pool's threads are seconds of interpretation).
const WORKERS: &[usize] = if cfg!(miri) {
    &[1, 3]
} else {
    &[1, 2, 3, 8, 16]
};

/// `Registry::order_sets`: every member of the first set runs before every member of the
/// second, members added before or after the order; a contradicting order is a cycle and
/// changes nothing; a name that never matches is reported when the graph is resolved.
#[test]
fn set_orders_hold_for_members_added_before_and_after() {
    for &workers in WORKERS {
        let mut registry = Registry::with_workers(workers);
        registry.insert_resource(Log(Vec::new()));
        let add = |registry: &mut Registry, name: &'static str, set: &str| {
            registry
                .add_fn_system_with(
                    Phase::Update,
                    SystemConfig::new(name).in_set(set),
                    log(name),
                )
                .unwrap();
        };
        add(&mut registry, "draw", "render");
        add(&mut registry, "step", "physics");
        registry
            .order_sets(Phase::Update, "physics", "render")
            .unwrap();
        add(&mut registry, "hud", "render");
        add(&mut registry, "collide", "physics");
        let err = registry.order_sets(Phase::Update, "render", "physics");
        assert!(matches!(err, Err(ScheduleError::Cycle { .. })), "{err:?}");
        registry.update(0.0);
        assert_eq!(
            registry.resource::<Log>().unwrap().0,
            ["step", "collide", "draw", "hud"],
            "{workers} workers"
        );
        registry
            .order_sets(Phase::Update, "physics", "audio")
            .unwrap();
        assert_eq!(
            registry.check_schedule(Phase::Update),
            Err(ScheduleError::UnknownName {
                system: "order_sets(physics, audio)".into(),
                name: "audio".into(),
            })
        );
    }
}

/// `Option<Res<T>>` / `Option<ResMut<T>>`: `None` while the resource is missing (no panic),
/// the resource once it is inserted, and the same access as `Res` / `ResMut` (a writer of the
/// optional resource still keeps registration order against a reader).
#[test]
fn optional_resources_are_none_while_missing_and_keep_their_access() {
    struct Bonus(u32);
    struct Total(u32);
    for &workers in WORKERS {
        let mut registry = Registry::with_workers(workers);
        registry.insert_resource(Log(Vec::new()));
        registry
            .add_fn_system(
                Phase::Update,
                "grow",
                |bonus: Option<ResMut<Bonus>>, mut log: ResMut<Log>| {
                    log.0
                        .push(if bonus.is_some() { "grow" } else { "no bonus" });
                    if let Some(mut b) = bonus {
                        b.0 += 1;
                    }
                },
            )
            .unwrap();
        registry
            .add_fn_system(
                Phase::Update,
                "sum",
                |bonus: Option<Res<Bonus>>, total: Option<ResMut<Total>>| {
                    if let (Some(b), Some(mut t)) = (bonus, total) {
                        t.0 += b.0;
                    }
                },
            )
            .unwrap();
        registry.update(0.0);
        registry.insert_resource(Bonus(1));
        registry.insert_resource(Total(0));
        registry.update(0.0);
        registry.update(0.0);
        // "grow" runs before "sum" each tick (they conflict on `Bonus`): 2, then 3.
        assert_eq!(
            registry.resource::<Total>().unwrap().0,
            5,
            "{workers} workers"
        );
        assert_eq!(
            registry.resource::<Log>().unwrap().0,
            ["no bonus", "grow", "grow"]
        );
    }
}

/// `Query::get`: one entity's items under the query's data, filter and change filters; a write
/// through it stamps the entity's chunk, so a later change filter sees it.
#[test]
fn query_get_reads_and_writes_one_entity_under_the_querys_rules() {
    for &workers in WORKERS {
        let mut registry = Registry::with_workers(workers);
        let a = registry.spawn((Pos(0.0), Vel(1.0)));
        let tagged = registry.spawn((Pos(0.0), Vel(1.0), Tag));
        let slow = registry.spawn((Pos(0.0),));
        let idle = registry.spawn((Pos(0.0), Hp(1)));
        let gone = registry.spawn((Pos(0.0), Vel(1.0)));
        registry.despawn(gone).unwrap();
        registry
            .add_fn_system(
                Phase::Update,
                "push",
                move |mut q: Query<(&mut Pos, &Vel), Without<Tag>>| {
                    let (p, v) = q.get(a).unwrap();
                    p.0 += v.0;
                    assert_eq!(q.get(tagged).err(), Some(QueryEntityError::NoMatch(tagged)));
                    assert_eq!(q.get(slow).err(), Some(QueryEntityError::NoMatch(slow)));
                    assert_eq!(
                        q.get(gone).err(),
                        Some(QueryEntityError::NoSuchEntity(gone))
                    );
                },
            )
            .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        registry
            .add_fn_system(Phase::Update, "watch", move |mut q: Query<&Pos>| {
                q.filter_changed::<Pos>();
                let passes = [a, idle].map(|e| q.get(e).is_ok());
                log.lock().unwrap().push(passes);
            })
            .unwrap();
        for _ in 0..4 {
            registry.update(0.1);
        }
        assert_eq!(registry.get::<Pos>(a).unwrap().0, 4.0);
        assert_eq!(registry.get::<Pos>(tagged).unwrap().0, 0.0);
        // The first two runs pass everything (nothing is older than the previous run's tick);
        // then only `a`'s chunk, which `push` wrote through `get` each tick.
        assert_eq!(
            *seen.lock().unwrap(),
            [[true, true], [true, true], [true, false], [true, false]],
            "{workers} workers"
        );
    }
}

#[test]
fn a_function_system_reads_writes_and_records_commands_and_events() {
    for &workers in WORKERS {
        let mut registry = Registry::with_workers(workers);
        let a = registry.spawn((Pos(0.0), Vel(1.0), Hp(1)));
        let b = registry.spawn((Pos(0.0), Vel(2.0), Hp(3)));
        registry
            .add_fn_system(
                Phase::Update,
                "integrate",
                |mut q: Query<(&mut Pos, &Vel)>, t: Tick| q.each(|_, (p, v)| p.0 += v.0 * t.dt),
            )
            .unwrap();
        registry
            .add_fn_system(
                Phase::Update,
                "harm",
                |mut q: Query<&mut Hp>, mut cmds: Commands, mut died: EventWriter<Died>| {
                    q.each(|e, hp| {
                        hp.0 -= 1;
                        if hp.0 == 0 {
                            cmds.despawn(e);
                            died.send(Died(e));
                        }
                    })
                },
            )
            .unwrap();
        registry.update(0.5);
        assert_eq!(registry.get::<Pos>(b).unwrap().0, 1.0);
        assert!(!registry.contains(a));
        let mut cursor = EventCursor::default();
        let died: Vec<Died> = registry.read_events::<Died>(&mut cursor).cloned().collect();
        assert_eq!(died, [Died(a)]);
    }
}

#[test]
fn registration_errors_are_typed_and_leave_the_phase_unchanged() {
    let mut registry = Registry::with_workers(2);
    registry.insert_resource(Log(Vec::new()));
    let conflict = registry
        .add_fn_system(
            Phase::Update,
            "x",
            |_: Query<&mut Pos>, _: Query<&mut Pos>| {},
        )
        .unwrap_err();
    assert!(
        matches!(conflict, ScheduleError::ConflictingAccess { type_name, .. } if type_name.contains("Pos"))
    );
    let conflict = registry
        .add_fn_system(Phase::Update, "y", |_: Res<Log>, _: ResMut<Log>| {})
        .unwrap_err();
    assert!(conflict.to_string().contains("Log"), "{conflict}");
    let conflict = registry
        .add_fn_system(Phase::Update, "z", |_: Commands, _: Commands| {})
        .unwrap_err();
    assert!(matches!(conflict, ScheduleError::ConflictingAccess { .. }));
    assert_eq!(registry.system_count(Phase::Update), 0);

    registry
        .add_fn_system(Phase::Update, "a", log("a"))
        .unwrap();
    assert_eq!(
        registry.add_fn_system(Phase::Update, "a", log("a2")),
        Err(ScheduleError::DuplicateName { name: "a".into() })
    );
    registry
        .add_fn_system_with(
            Phase::Update,
            SystemConfig::new("b").after("a").before("c"),
            log("b"),
        )
        .unwrap();
    let cycle = registry
        .add_fn_system_with(Phase::Update, SystemConfig::new("c").before("a"), log("c"))
        .unwrap_err();
    match &cycle {
        ScheduleError::Cycle { systems } => {
            assert_eq!(systems.len(), 3);
            for s in ["a", "b", "c"] {
                assert!(systems.iter().any(|x| x == s), "{cycle}");
            }
        }
        other => panic!("expected a cycle, got {other:?}"),
    }
    assert_eq!(registry.system_count(Phase::Update), 2);
    // Across an exclusive system, an order pointing back is refused.
    registry.add_system(Phase::Update, |_: &mut Registry, _: f32| {});
    let back = registry
        .add_fn_system_with(
            Phase::Update,
            SystemConfig::new("late").before("a"),
            log("late"),
        )
        .unwrap_err();
    assert!(
        matches!(back, ScheduleError::AcrossExclusive { .. }),
        "{back}"
    );
    registry
        .add_fn_system_with(
            Phase::Update,
            SystemConfig::new("later").after("a"),
            log("later"),
        )
        .unwrap();
    // `b` still names `c`, which was never added.
    assert_eq!(
        registry.check_schedule(Phase::Update),
        Err(ScheduleError::UnknownName {
            system: "b".into(),
            name: "c".into()
        })
    );
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| registry.update(0.0)));
    let message = caught.unwrap_err();
    let text = message.downcast_ref::<String>().unwrap();
    assert!(text.contains("`c`"), "{text}");
    // The registry stays usable; adding `c` (after the exclusive system, so in its segment)
    // resolves the name.
    registry
        .add_fn_system(Phase::Update, "c", log("c"))
        .unwrap();
    registry.update(0.0);
    assert_eq!(
        registry.resource::<Log>().unwrap().0,
        ["a", "b", "later", "c"]
    );
    // From inside an update, adding is refused.
    let refused = Arc::new(Mutex::new(None));
    let seen = refused.clone();
    registry.add_system(Phase::PostUpdate, move |r: &mut Registry, _: f32| {
        *seen.lock().unwrap() = Some(r.add_fn_system(Phase::Update, "inner", || {}));
    });
    registry.update(0.0);
    assert_eq!(
        *refused.lock().unwrap(),
        Some(Err(ScheduleError::DuringUpdate))
    );
}

#[test]
fn conflicting_systems_keep_registration_order_and_before_after_override_it() {
    for &workers in WORKERS {
        let mut registry = Registry::with_workers(workers);
        registry.insert_resource(Log(Vec::new()));
        registry
            .add_fn_system(Phase::Update, "one", log("one"))
            .unwrap();
        registry
            .add_fn_system(Phase::Update, "two", log("two"))
            .unwrap();
        registry
            .add_fn_system_with(
                Phase::Update,
                SystemConfig::new("zero").before("one"),
                log("zero"),
            )
            .unwrap();
        registry
            .add_fn_system_with(
                Phase::Update,
                SystemConfig::new("mid").after("one").before("two"),
                log("mid"),
            )
            .unwrap();
        registry
            .add_fn_system_with(
                Phase::Update,
                SystemConfig::new("s1").in_set("early"),
                log("s1"),
            )
            .unwrap();
        registry
            .add_fn_system_with(
                Phase::Update,
                SystemConfig::new("s2").in_set("early"),
                log("s2"),
            )
            .unwrap();
        registry
            .add_fn_system_with(
                Phase::Update,
                SystemConfig::new("first").before("early").before("zero"),
                log("first"),
            )
            .unwrap();
        registry.update(0.0);
        assert_eq!(
            registry.resource::<Log>().unwrap().0,
            ["first", "zero", "one", "mid", "two", "s1", "s2"],
            "{workers} workers"
        );
    }
}

#[test]
fn exclusive_systems_are_barriers_between_function_systems() {
    for &workers in WORKERS {
        let mut registry = Registry::with_workers(workers);
        registry.insert_resource(Log(Vec::new()));
        let e = registry.spawn((Hp(0),));
        registry
            .add_fn_system(Phase::Update, "before", |mut q: Query<&mut Hp>| {
                q.each(|_, h| h.0 += 1)
            })
            .unwrap();
        registry.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
            let hp = r.get::<Hp>(e).unwrap().0;
            r.resource_mut::<Log>()
                .unwrap()
                .0
                .push(if hp == 1 { "saw 1" } else { "wrong" });
            r.get_mut::<Hp>(e).unwrap().0 = 10;
        });
        registry
            .add_fn_system(
                Phase::Update,
                "after",
                |mut q: Query<&mut Hp>, mut l: ResMut<Log>| {
                    q.each(|_, h| {
                        if h.0 == 10 {
                            l.0.push("saw 10")
                        }
                    })
                },
            )
            .unwrap();
        registry.update(0.0);
        assert_eq!(registry.resource::<Log>().unwrap().0, ["saw 1", "saw 10"]);
    }
}

/// Two disjoint systems with sequential bodies run at the same time: each waits (bounded) for
/// the other to arrive.
#[test]
fn disjoint_sequential_bodies_run_at_the_same_time() {
    let mut registry = Registry::with_workers(2);
    registry.spawn((Pos(0.0),));
    registry.spawn((Hp(0),));
    let arrived = Arc::new(AtomicUsize::new(0));
    let met = Arc::new(AtomicUsize::new(0));
    for (name, pos) in [("a", true), ("b", false)] {
        let (arrived, met) = (arrived.clone(), met.clone());
        let rendezvous = move || {
            arrived.fetch_add(1, Ordering::SeqCst);
            let deadline = Instant::now() + Duration::from_secs(10);
            while arrived.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
                std::hint::spin_loop();
            }
            if arrived.load(Ordering::SeqCst) >= 2 {
                met.fetch_add(1, Ordering::SeqCst);
            }
        };
        if pos {
            let r = rendezvous;
            registry
                .add_fn_system(Phase::Update, name, move |mut q: Query<&mut Pos>| {
                    q.each(|_, p| p.0 += 1.0);
                    r();
                })
                .unwrap();
        } else {
            let r = rendezvous;
            registry
                .add_fn_system(Phase::Update, name, move |mut q: Query<&mut Hp>| {
                    q.each(|_, h| h.0 += 1);
                    r();
                })
                .unwrap();
        }
    }
    registry.update(0.0);
    assert_eq!(met.load(Ordering::SeqCst), 2);
}

#[test]
fn change_filters_compare_with_the_previous_run() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let mut registry = Registry::with_workers(2);
    let e = registry.spawn((Hp(1), Tag));
    registry.spawn((Hp(1),));
    registry
        .add_fn_system(
            Phase::Update,
            "watch",
            move |mut q: Query<&Hp, With<Tag>>| {
                let mut changed = 0;
                q.filter_changed::<Hp>().each(|_, _| changed += 1);
                let mut added = 0;
                q.clear_filters()
                    .filter_added::<Hp>()
                    .each(|_, _| added += 1);
                log.lock().unwrap().push((changed, added));
            },
        )
        .unwrap();
    registry
        .add_fn_system(Phase::PostUpdate, "writer", bump_tagged_hp_at(2))
        .unwrap();
    for _ in 0..5 {
        registry.update(0.0);
    }
    let _ = e;
    // Tick 0: first run (all). Tick 1: the spawn at tick 0 and the writer's stamps... the writer
    // stamps only when it writes (tick 2), so tick 3 sees it, tick 4 does not.
    assert_eq!(
        *seen.lock().unwrap(),
        [(1, 1), (1, 1), (0, 0), (1, 0), (0, 0)]
    );
}

/// A run that panicked is not the system's previous run for its change filters: the next run
/// still sees what changed since the last run that ended, so a change the panicking run saw is
/// not lost. Beside it, a disjoint system that panics nowhere moves on as usual; the same for
/// every worker count (the panicking run and the one after it may run on different threads).
#[test]
fn a_panicked_run_does_not_count_as_the_previous_run_for_change_filters() {
    for &workers in WORKERS {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let steady = Arc::new(Mutex::new(Vec::new()));
        let mut registry = Registry::with_workers(workers);
        registry.spawn((Hp(1), Tag));
        registry.spawn((Pos(0.0),));
        let log = seen.clone();
        registry
            .add_fn_system(Phase::Update, "watch", move |t: Tick, mut q: Query<&Hp>| {
                let mut changed = 0;
                q.filter_changed::<Hp>().each(|_, _| changed += 1);
                log.lock().unwrap().push(changed);
                if t.tick == 4 {
                    panic!("watch fails once");
                }
            })
            .unwrap();
        let log = steady.clone();
        registry
            .add_fn_system(Phase::Update, "steady", move |mut q: Query<&mut Pos>| {
                let mut changed = 0;
                q.filter_changed::<Pos>().each(|_, p| {
                    changed += 1;
                    p.0 += 1.0;
                });
                log.lock().unwrap().push(changed);
            })
            .unwrap();
        registry
            .add_fn_system(Phase::PostUpdate, "writer", bump_tagged_hp_at(3))
            .unwrap();
        for tick in 0..7 {
            let ran =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| registry.update(0.0)));
            assert_eq!(ran.is_err(), tick == 4, "tick {tick}, {workers} workers");
        }
        // Ticks 0 and 1: everything (no previous run, or one at tick 0). Tick 3's write (after
        // `watch` in that tick) is seen at tick 4, whose run panics, and again at tick 5.
        assert_eq!(
            *seen.lock().unwrap(),
            [1, 1, 0, 0, 1, 1, 0],
            "{workers} workers"
        );
        // `steady` writes what it visits, so each run sees its own previous write.
        assert_eq!(*steady.lock().unwrap(), [1; 7], "{workers} workers");
    }
}

#[test]
fn an_event_reader_reads_each_event_once() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let mut registry = Registry::with_workers(2);
    registry
        .add_fn_system(
            Phase::PreUpdate,
            "send",
            |t: Tick, mut w: EventWriter<Died>| {
                if t.tick.is_multiple_of(2) {
                    w.send(Died(Entity::from_bits(1 << 32).unwrap()));
                }
            },
        )
        .unwrap();
    registry
        .add_fn_system(Phase::Update, "read", move |mut r: EventReader<Died>| {
            log.lock().unwrap().push(r.read().count());
        })
        .unwrap();
    for _ in 0..4 {
        registry.update(0.0);
    }
    assert_eq!(*seen.lock().unwrap(), [1, 0, 1, 0]);
}

#[test]
fn a_missing_resource_panics_naming_it_and_the_system() {
    let mut registry = Registry::with_workers(2);
    registry
        .add_fn_system(Phase::Update, "needs", |_: Res<Log>| {})
        .unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| registry.update(0.0)));
    let payload = caught.unwrap_err();
    let text = payload.downcast_ref::<String>().unwrap();
    assert!(text.contains("needs") && text.contains("Log"), "{text}");
    registry.insert_resource(Log(Vec::new()));
    registry.update(0.0);
}

/// A panicking system: the systems that do not depend on it still run and their commands
/// apply; its own commands are discarded, its successors skipped; the first panic in
/// registration order is re-raised after the phase's sync point, the same for every worker
/// count, and the registry stays usable.
#[test]
fn a_panicking_system_is_contained_and_re_raised() {
    for &workers in WORKERS {
        let mut registry = Registry::with_workers(workers);
        registry.insert_resource(Log(Vec::new()));
        let e = registry.spawn((Hp(0),));
        registry
            .add_fn_system(
                Phase::Update,
                "bad",
                |mut q: Query<&mut Hp>, mut c: Commands| {
                    c.spawn((Tag,));
                    q.each(|_, h| h.0 += 1);
                    panic!("bad system");
                },
            )
            .unwrap();
        registry
            .add_fn_system(Phase::Update, "also bad", |_: Query<&Pos>| panic!("second"))
            .unwrap();
        // Conflicts with `bad` (Hp): after it, so skipped.
        registry
            .add_fn_system(
                Phase::Update,
                "after bad",
                |mut q: Query<&mut Hp>, mut l: ResMut<Log>| {
                    q.each(|_, h| h.0 += 100);
                    l.0.push("after bad");
                },
            )
            .unwrap();
        // Disjoint: runs, and its commands apply.
        registry
            .add_fn_system(Phase::Update, "fine", |mut c: Commands| {
                c.spawn((Pos(1.0),));
            })
            .unwrap();
        let post = Arc::new(AtomicUsize::new(0));
        let p = post.clone();
        registry.add_system(Phase::PostUpdate, move |_: &mut Registry, _: f32| {
            p.fetch_add(1, Ordering::Relaxed);
        });
        let caught =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| registry.update(0.0)));
        assert_eq!(
            caught.unwrap_err().downcast_ref::<&str>(),
            Some(&"bad system")
        );
        assert_eq!(registry.get::<Hp>(e).unwrap().0, 1);
        assert_eq!(registry.query::<&Tag>().count(), 0);
        assert_eq!(registry.query::<&Pos>().count(), 1);
        assert!(registry.resource::<Log>().unwrap().0.is_empty());
        assert_eq!(post.load(Ordering::Relaxed), 0, "later phases do not run");
        assert_eq!(registry.tick(), 1);
        assert_eq!(registry.in_flight(), 0);
    }
}

#[test]
fn the_profiler_books_each_system_and_the_trace_shows_it_on_a_worker() {
    use freyr_registry::TickProfileConfig;
    let mut registry = Registry::with_workers(2);
    registry.spawn((Pos(0.0),));
    registry
        .add_fn_system(Phase::Update, "integrate", |mut q: Query<&mut Pos>| {
            q.each(|_, p| p.0 += 1.0)
        })
        .unwrap();
    registry
        .add_fn_system(Phase::Update, "idle", || {})
        .unwrap();
    registry.update(0.0); // profiler off: nothing booked
    assert!(registry.profile().label("integrate").is_none());
    registry.enable_tick_profile(TickProfileConfig {
        trace_ticks: 1..2,
        ..Default::default()
    });
    registry.update(0.0);
    assert_eq!(registry.profile().label("integrate").unwrap().calls, 1);
    assert_eq!(registry.profile().label("idle").unwrap().calls, 1);
    let events = registry.tick_profile().unwrap().trace_events();
    assert_eq!(events.iter().filter(|e| e.name == "integrate").count(), 1);
}

#[test]
fn schedule_graph_names_every_edge_s_reason() {
    use freyr_registry::systems::GraphFormat;
    let mut registry = Registry::with_workers(2);
    registry
        .add_fn_system(Phase::Update, "a", |_: Query<&mut Pos>| {})
        .unwrap();
    registry
        .add_fn_system(Phase::Update, "b", |_: Query<&Pos>| {})
        .unwrap();
    registry.add_system(Phase::Update, |_: &mut Registry, _: f32| {});
    registry
        .add_fn_system_with(Phase::Update, SystemConfig::new("c").after("d"), || {})
        .unwrap();
    registry.add_fn_system(Phase::Update, "d", || {}).unwrap();
    let dot = registry
        .schedule_graph(Phase::Update, GraphFormat::Dot)
        .unwrap();
    assert!(dot.contains(r#""a" -> "b" [label="conflict on "#), "{dot}");
    assert!(dot.contains(r#""d" -> "c" [label="after d"]"#), "{dot}");
    assert!(dot.contains(r#"-> "d" [label="barrier"]"#), "{dot}");
    assert!(dot.contains(r#""b" -> "exclusive 0"#), "{dot}");
    assert!(
        !dot.contains(r#""a" -> "exclusive 0"#),
        "only the segment's sinks: {dot}"
    );
    let mermaid = registry
        .schedule_graph(Phase::Update, GraphFormat::Mermaid)
        .unwrap();
    assert!(mermaid.contains("-->|after d|"), "{mermaid}");
}
