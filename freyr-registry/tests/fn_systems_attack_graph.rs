//! Function systems under attack (the graph): orders through sets and across phases,
//! resources that vanish between segments, the shuffled-start mode, the printed graph, a
//! thousand systems, one function registered twice, when events become readable, and
//! `run_frame`. The running side is in `fn_systems_attack`.

mod fn_support;

use fn_support::*;
use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use freyr::system::{
    EventReader, EventWriter, GraphFormat, Local, Query, Res, ResMut, ScheduleError, SystemConfig,
    Tick,
};
use freyr::{Commands, EventCursor, Phase, Registry};

struct Log(Vec<u32>);
/// A log the test reads after the systems wrote it.
type Shared<T> = Arc<Mutex<Vec<T>>>;

/// `before`/`after` naming a system of another phase is an unknown name: `check_schedule`
/// reports it, `update` panics naming it after the earlier phases ran, and the registry runs
/// once the name exists in the phase.
#[test]
fn an_order_naming_a_system_of_another_phase_is_an_unknown_name() {
    let mut r = Registry::with_workers(2);
    let pre = Arc::new(AtomicUsize::new(0));
    let p = pre.clone();
    r.add_fn_system(Phase::PreUpdate, "early", move || {
        p.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    r.add_fn_system(Phase::PostUpdate, "x", || {}).unwrap();
    r.add_fn_system_with(Phase::Update, SystemConfig::new("a").before("x"), || {})
        .unwrap();
    r.add_fn_system_with(Phase::Update, SystemConfig::new("b").after("early"), || {})
        .unwrap();
    assert_eq!(
        r.check_schedule(Phase::Update),
        Err(ScheduleError::UnknownName {
            system: "a".into(),
            name: "x".into()
        })
    );
    assert!(r.check_schedule(Phase::PreUpdate).is_ok());
    assert!(r.check_schedule(Phase::PostUpdate).is_ok());
    let err = update(&mut r).unwrap_err();
    assert!(err.contains("`x`"), "{err}");
    assert_eq!(pre.load(Ordering::SeqCst), 1, "PreUpdate ran");
    r.add_fn_system(Phase::Update, "x", || {}).unwrap();
    assert_eq!(
        r.check_schedule(Phase::Update),
        Err(ScheduleError::UnknownName {
            system: "b".into(),
            name: "early".into()
        })
    );
    r.add_fn_system(Phase::Update, "early", || {}).unwrap();
    assert_eq!(update(&mut r), Ok(()));
    assert_eq!(pre.load(Ordering::SeqCst), 2);
}

/// Cycles that only set membership closes, a set order contradicting another before either
/// set has members, and a system ordered against itself: each is refused when the system or
/// order that closes it is added, with nothing added.
#[test]
fn cycles_through_sets_and_self_orders_are_refused() {
    let mut r = Registry::with_workers(2);
    r.add_fn_system_with(Phase::Update, SystemConfig::new("a").in_set("S"), || {})
        .unwrap();
    r.add_fn_system_with(
        Phase::Update,
        SystemConfig::new("b").after("S").in_set("T"),
        || {},
    )
    .unwrap();
    let err = r
        .add_fn_system_with(
            Phase::Update,
            SystemConfig::new("c").after("T").before("S"),
            || {},
        )
        .unwrap_err();
    match &err {
        ScheduleError::Cycle { systems } => {
            let got: HashSet<&str> = systems.iter().map(String::as_str).collect();
            assert_eq!(got, HashSet::from(["a", "b", "c"]), "{err}");
        }
        other => panic!("expected a cycle, got {other:?}"),
    }
    assert_eq!(r.system_count(Phase::Update), 2);

    // A set order contradicting another: no edge until both sets have members.
    r.order_sets(Phase::Update, "P", "Q").unwrap();
    r.order_sets(Phase::Update, "Q", "P").unwrap();
    r.add_fn_system_with(Phase::Update, SystemConfig::new("p").in_set("P"), || {})
        .unwrap();
    let err = r
        .add_fn_system_with(Phase::Update, SystemConfig::new("q").in_set("Q"), || {})
        .unwrap_err();
    assert!(matches!(err, ScheduleError::Cycle { .. }), "{err}");
    assert_eq!(r.system_count(Phase::Update), 3);
    assert!(matches!(
        r.check_schedule(Phase::Update),
        Err(ScheduleError::UnknownName { name, .. }) if name == "Q"
    ));

    // A system declared to run before (or after) itself.
    let mut r = Registry::with_workers(2);
    for config in [
        SystemConfig::new("me").before("me"),
        SystemConfig::new("me").after("me"),
    ] {
        let err = r
            .add_fn_system_with(Phase::Update, config, || {})
            .unwrap_err();
        assert_eq!(
            err,
            ScheduleError::Cycle {
                systems: vec!["me".into()]
            }
        );
    }
    assert_eq!(r.system_count(Phase::Update), 0);
}

/// A resource an exclusive system removes before a segment that needs it: a panic naming the
/// system and the type, after the earlier segment's commands; `Option` parameters see the
/// resource as the exclusive systems before their segment left it, within the same tick.
#[test]
fn a_resource_removed_between_segments_is_a_clear_error_and_options_follow_it() {
    let mut r = Registry::with_workers(2);
    r.insert_resource(Res1(5));
    r.add_fn_system(Phase::Update, "early", |mut c: Commands, x: Res<Res1>| {
        c.spawn((Marker(x.0),));
    })
    .unwrap();
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        r.remove_resource::<Res1>();
    });
    r.add_fn_system(Phase::Update, "needs it", |_: Res<Res1>| {})
        .unwrap();
    let err = update(&mut r).unwrap_err();
    assert!(err.contains("needs it") && err.contains("Res1"), "{err}");
    assert_eq!(
        r.query::<&Marker>().count(),
        1,
        "the first segment's commands"
    );

    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut r = Registry::with_workers(2);
    let log = seen.clone();
    let look = move |tag: u32| {
        let log = log.clone();
        move |x: Option<ResMut<Res1>>| {
            log.lock().unwrap().push((
                tag,
                x.map(|mut x| {
                    x.0 += 1;
                    x.0
                }),
            ));
        }
    };
    r.add_fn_system(Phase::Update, "before insert", look(0))
        .unwrap();
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        r.insert_resource(Res1(10));
    });
    r.add_fn_system(Phase::Update, "after insert", look(1))
        .unwrap();
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        r.remove_resource::<Res1>();
    });
    r.add_fn_system(Phase::Update, "after remove", look(2))
        .unwrap();
    r.update(0.0);
    r.update(0.0);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (0, None),
            (1, Some(11)),
            (2, None),
            (0, None),
            (1, Some(11)),
            (2, None)
        ]
    );
}

/// The shuffled-start mode: state hidden outside the ECS (an `AtomicU64`) shows up as a
/// difference between seeds; one seed gives one result at one worker; every order of three
/// independent systems is drawn; and conflicting systems keep their order under every seed at
/// every worker count.
#[test]
fn shuffled_starts_expose_hidden_state_and_never_break_the_graph() {
    let hidden_total = |seed: Option<u64>| {
        let hidden = Arc::new(AtomicU64::new(1));
        let mut r = Registry::with_workers(1);
        r.shuffle_system_starts(seed);
        r.insert_resource(Sum(0));
        for k in 1..=5u64 {
            let hidden = hidden.clone();
            r.add_fn_system(Phase::Update, format!("h{k}"), move || {
                let v = hidden.load(Ordering::SeqCst);
                hidden.store(v.wrapping_mul(31).wrapping_add(k), Ordering::SeqCst);
            })
            .unwrap();
        }
        let h = hidden.clone();
        r.add_fn_system(Phase::PostUpdate, "read", move |mut s: ResMut<Sum>| {
            s.0 = h.load(Ordering::SeqCst);
        })
        .unwrap();
        r.update(0.0);
        r.resource::<Sum>().unwrap().0
    };
    let plain = hidden_total(None);
    assert_eq!(hidden_total(None), plain);
    let totals: HashSet<u64> = (0..16).map(|s| hidden_total(Some(s))).collect();
    assert!(totals.len() > 1, "a hash difference for some seed");
    for seed in 0..4 {
        assert_eq!(
            hidden_total(Some(seed)),
            hidden_total(Some(seed)),
            "reproducible"
        );
    }

    let order = |seed: u64| {
        let hidden = Arc::new(Mutex::new(Vec::new()));
        let mut r = Registry::with_workers(1);
        r.shuffle_system_starts(Some(seed));
        for k in 0..3u32 {
            let hidden = hidden.clone();
            r.add_fn_system(Phase::Update, format!("o{k}"), move || {
                hidden.lock().unwrap().push(k)
            })
            .unwrap();
        }
        r.update(0.0);
        hidden.lock().unwrap().clone()
    };
    let orders: HashSet<Vec<u32>> = (0..64).map(order).collect();
    assert_eq!(orders.len(), 6, "every order is drawn: {orders:?}");

    for &workers in &[1, 2, 4] {
        for seed in 0..16 {
            let mut r = Registry::with_workers(workers);
            r.shuffle_system_starts(Some(seed));
            r.insert_resource(Log(Vec::new()));
            for k in 0..6u32 {
                if k % 2 == 0 {
                    r.add_fn_system(Phase::Update, format!("c{k}"), move |mut l: ResMut<Log>| {
                        l.0.push(k)
                    })
                    .unwrap();
                } else {
                    r.add_fn_system(Phase::Update, format!("f{k}"), move |mut l: Local<u32>| {
                        *l += k
                    })
                    .unwrap();
                }
            }
            r.add_fn_system_with(
                Phase::Update,
                SystemConfig::new("first").before("c0"),
                |mut l: ResMut<Log>| l.0.push(99),
            )
            .unwrap();
            r.update(0.0);
            r.update(0.0);
            assert_eq!(
                r.resource::<Log>().unwrap().0,
                [99, 0, 2, 4, 99, 0, 2, 4],
                "{workers} workers, seed {seed}"
            );
        }
    }
}

/// The printed graph of a phase without systems, of one with exclusive systems only, and of
/// barriers around function systems; every Mermaid edge names a declared node; quotes in names
/// are escaped.
#[test]
fn schedule_graph_of_empty_phases_and_barriers() {
    let mut r = Registry::with_workers(2);
    assert_eq!(
        r.schedule_graph(Phase::Update, GraphFormat::Dot).unwrap(),
        "digraph \"Update\" {\n}\n"
    );
    assert_eq!(
        r.schedule_graph(Phase::Update, GraphFormat::Mermaid)
            .unwrap(),
        "flowchart TD\n"
    );
    r.add_system(Phase::Update, |_: &mut Registry, _: f32| {});
    r.add_system(Phase::Update, |_: &mut Registry, _: f32| {});
    let dot = r.schedule_graph(Phase::Update, GraphFormat::Dot).unwrap();
    let lines: Vec<&str> = dot.lines().collect();
    assert_eq!(lines.len(), 5, "{dot}");
    assert!(lines[1].starts_with("  \"exclusive 0: "), "{dot}");
    assert!(lines[2].starts_with("  \"exclusive 1: "), "{dot}");
    assert!(
        lines[3].starts_with("  \"exclusive 0: ") && lines[3].contains("-> \"exclusive 1: "),
        "{dot}"
    );
    assert!(lines[3].ends_with("[label=\"barrier\"];"), "{dot}");

    // Function systems between and after the barriers.
    r.add_fn_system(Phase::Update, "say \"hi\"", |_: Query<&mut A>| {})
        .unwrap();
    r.add_fn_system(Phase::Update, "look", |_: Query<&A>| {})
        .unwrap();
    r.add_fn_system(Phase::Update, "alone", || {}).unwrap();
    let dot = r.schedule_graph(Phase::Update, GraphFormat::Dot).unwrap();
    assert!(
        dot.contains(r#""say \"hi\"" -> "look" [label="conflict on "#),
        "{dot}"
    );
    assert!(
        dot.contains(r#" -> "say \"hi\"" [label="barrier"]"#),
        "{dot}"
    );
    assert!(dot.contains(r#" -> "alone" [label="barrier"]"#), "{dot}");
    assert!(
        !dot.contains(r#" -> "look" [label="barrier"]"#),
        "only roots: {dot}"
    );
    assert_eq!(dot.matches("conflict on").count(), 1, "{dot}");
    let mermaid = r
        .schedule_graph(Phase::Update, GraphFormat::Mermaid)
        .unwrap();
    let declared: HashSet<String> = mermaid
        .lines()
        .filter_map(|l| l.trim().split_once('[').map(|(id, _)| id.to_owned()))
        .collect();
    assert_eq!(declared.len(), 5, "{mermaid}");
    for line in mermaid.lines().filter(|l| l.contains("-->")) {
        let (from, rest) = line.trim().split_once(" -->").unwrap();
        let to = rest.rsplit(' ').next().unwrap();
        assert!(declared.contains(from) && declared.contains(to), "{line}");
    }
    assert!(mermaid.contains("say #quot;hi#quot;"), "{mermaid}");
    r.update(0.0);

    // A name ending in a backslash must not escape its closing quote.
    let mut r = Registry::with_workers(2);
    r.add_fn_system(Phase::Update, "dir\\", |_: Query<&mut A>| {})
        .unwrap();
    r.add_fn_system(Phase::Update, "next", |_: Query<&A>| {})
        .unwrap();
    let dot = r.schedule_graph(Phase::Update, GraphFormat::Dot).unwrap();
    assert!(dot.contains(r#"  "dir\\";"#), "{dot}");
    assert!(dot.contains(r#""dir\\" -> "next""#), "{dot}");
}

/// A thousand disjoint systems spawning through commands: the entities come out in system
/// registration order, with the same ids at every worker count. A thousand systems writing one
/// resource: they run in registration order, and the graph is the chain, one edge per pair of
/// neighbours, not one per conflicting pair.
#[test]
fn a_thousand_systems() {
    let mut reference = None;
    for &workers in WORKERS {
        let mut r = Registry::with_workers(workers);
        for i in 0..1000u64 {
            r.add_fn_system(Phase::Update, format!("s{i}"), move |mut c: Commands| {
                c.spawn((Id(i),));
            })
            .unwrap();
        }
        r.update(0.0);
        let ids = rows::<Id>(&mut r);
        let values: Vec<u64> = ids.iter().map(|(_, id)| id.0).collect();
        assert_eq!(values, (0..1000).collect::<Vec<_>>(), "{workers} workers");
        assert_eq!(
            *reference.get_or_insert(ids.clone()),
            ids,
            "{workers} workers"
        );
    }

    let mut r = Registry::with_workers(2);
    r.insert_resource(Log(Vec::new()));
    for i in 0..1000u32 {
        r.add_fn_system(Phase::Update, format!("w{i}"), move |mut l: ResMut<Log>| {
            l.0.push(i)
        })
        .unwrap();
    }
    let dot = r.schedule_graph(Phase::Update, GraphFormat::Dot).unwrap();
    assert_eq!(dot.matches("conflict on").count(), 999);
    assert!(dot.contains(r#""w0" -> "w1" [label="conflict on "#));
    assert!(!dot.contains(r#""w0" -> "w2" "#));
    r.update(0.0);
    assert_eq!(
        r.resource::<Log>().unwrap().0,
        (0..1000).collect::<Vec<_>>()
    );
}

fn bump(mut s: ResMut<Sum>) {
    s.0 += 1;
}

fn count_runs(mut n: Local<u64>, mut log: ResMut<Log>) {
    *n += 1;
    log.0.push(*n as u32);
}

/// One function registered under two names, and under one name in two phases: every
/// registration runs, each with its own `Local`.
#[test]
fn one_function_registered_twice() {
    let mut r = Registry::with_workers(2);
    r.insert_resource(Sum(0));
    r.insert_resource(Log(Vec::new()));
    r.add_fn_system(Phase::Update, "bump", bump).unwrap();
    r.add_fn_system(Phase::Update, "bump again", bump).unwrap();
    r.add_fn_system(Phase::PostUpdate, "bump", bump).unwrap();
    assert_eq!(
        r.add_fn_system(Phase::Update, "bump", bump),
        Err(ScheduleError::DuplicateName {
            name: "bump".into()
        })
    );
    r.add_fn_system(Phase::Update, "runs", count_runs).unwrap();
    r.add_fn_system(Phase::Update, "runs again", count_runs)
        .unwrap();
    r.update(0.0);
    r.update(0.0);
    assert_eq!(r.resource::<Sum>().unwrap().0, 6);
    assert_eq!(r.resource::<Log>().unwrap().0, [1, 1, 2, 2]);
    assert_eq!(r.system_count(Phase::Update), 4);
}

/// When events sent by a function system are readable: by later phases in the same tick; by
/// readers of the same phase (registered before or after the writer, or an exclusive system
/// after it) and of earlier phases in the next tick — each event once, at every worker count.
#[test]
fn events_are_readable_after_the_phase_s_sync_point() {
    for &workers in WORKERS {
        let seen: Shared<(u64, &'static str, Vec<u64>)> = Arc::default();
        let reader = |name: &'static str| {
            let seen = seen.clone();
            move |t: Tick, mut ev: EventReader<Ev>| {
                let got = ev.read().map(|e| e.0).collect();
                seen.lock().unwrap().push((t.tick, name, got));
            }
        };
        let mut r = Registry::with_workers(workers);
        r.add_event::<Ev>();
        r.add_fn_system(Phase::PreUpdate, "pre", reader("pre"))
            .unwrap();
        r.add_fn_system(Phase::Update, "before", reader("before"))
            .unwrap();
        r.add_fn_system(Phase::Update, "write", |t: Tick, mut w: EventWriter<Ev>| {
            w.send(Ev(t.tick))
        })
        .unwrap();
        r.add_fn_system(Phase::Update, "after", reader("after"))
            .unwrap();
        let log = seen.clone();
        let mut cursor = EventCursor::default();
        r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
            let got = r.read_events::<Ev>(&mut cursor).map(|e| e.0).collect();
            log.lock().unwrap().push((r.tick(), "exclusive", got));
        });
        r.add_fn_system(Phase::PostUpdate, "post", reader("post"))
            .unwrap();
        for _ in 0..3 {
            r.update(0.0);
        }
        let mut got = seen.lock().unwrap().clone();
        got.sort();
        let mut want = Vec::new();
        for t in 0..3u64 {
            let prev: Vec<u64> = t.checked_sub(1).into_iter().collect();
            for name in ["after", "before", "exclusive", "pre"] {
                want.push((t, name, prev.clone()));
            }
            want.push((t, "post", vec![t]));
        }
        want.sort();
        assert_eq!(got, want, "{workers} workers");
    }
}

/// `run_frame` drives function systems like `update`: one run per due tick, with the fixed
/// `dt`, the tick and the previous run; a tick whose system panics ends the frame, and the
/// next frame goes on from the tick after it.
#[test]
fn run_frame_drives_function_systems_tick_by_tick() {
    use std::time::Duration;
    let clock = freyr::time::ManualClock::new();
    let seen: Shared<(u64, f32, Option<u64>)> = Arc::default();
    let log = seen.clone();
    let mut r = Registry::with_workers(2);
    r.set_fixed_step(Duration::from_millis(10), clock.clone())
        .unwrap();
    r.add_fn_system(Phase::Update, "clock", move |t: Tick| {
        log.lock().unwrap().push((t.tick, t.dt, t.last_run));
        if t.tick == 4 {
            panic!("tick 4");
        }
    })
    .unwrap();
    r.add_fn_system(Phase::Update, "other", |mut q: Query<&mut A>| {
        q.each(|_, a| a.0 += 1)
    })
    .unwrap();
    r.spawn((A(0),));
    clock.advance(Duration::from_millis(35));
    assert_eq!(r.run_frame().ran, 3);
    clock.advance(Duration::from_millis(30));
    let frame = catch_unwind(AssertUnwindSafe(|| r.run_frame()));
    assert!(frame.is_err(), "tick 4 panics");
    assert_eq!(r.tick(), 5);
    let dt = 0.01f32;
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (0, dt, None),
            (1, dt, Some(0)),
            (2, dt, Some(1)),
            (3, dt, Some(2)),
            (4, dt, Some(3)),
        ]
    );
    assert_eq!(
        rows::<A>(&mut r)[0].1,
        A(5),
        "`other` ran in the panicking tick"
    );
    // The tick the panic cut off is still due (5 ms were left before it): two ticks now, the
    // first of which compares with the last run that ended.
    clock.advance(Duration::from_millis(10));
    assert_eq!(r.run_frame().ran, 2);
    assert_eq!(
        seen.lock().unwrap()[5..],
        [(5, dt, Some(3)), (6, dt, Some(5))]
    );
}
