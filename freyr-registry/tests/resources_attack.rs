//! Hostile uses of resources by systems: a missing `Res<T>` in a segment of other systems
//! (nothing of the segment runs), resources inserted, replaced and removed between segments and
//! made at a sync point, 64 `ResMut` systems on a counter that is not atomic at 16 workers under
//! shuffled starts, accesses a system cannot be granted hidden in nested tuples, a `ResMut`
//! segment after launches that view the resource, zero-sized and large resources, and what the
//! world hash covers. Snapshots, restores and panicking `Clone`/`Drop`s are in
//! `resources_attack_more.rs`.

mod resources_attack_support;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use freyr::system::{EventWriter, Query, Res, ResMut, ScheduleError};
use freyr::{Commands, Events, Phase, Registry};

use resources_attack_support::*;

// ---- function systems ----------------------------------------------------------------------

/// A `Res<T>` whose resource is missing: `update` panics naming the system and the type before
/// any system of its segment runs (no write, no command of theirs lands: the world hash is
/// unchanged), after the earlier phase's work applied; the registry stays usable and ends the
/// same at every worker count.
#[test]
fn a_missing_resource_stops_its_whole_segment_before_anything_runs() {
    let mut hashes = Vec::new();
    for workers in [1, 2, 8] {
        for missing_mut in [false, true] {
            let mut r = Registry::with_workers(workers);
            r.register_hashable::<Pos>();
            r.insert_resource(Count(0));
            r.spawn_batch((0..600).map(|i| (Pos(i),)));
            let ran = Arc::new(AtomicUsize::new(0));
            r.add_fn_system(Phase::PreUpdate, "pre", |mut c: Commands| {
                c.spawn((Pos(10_000),));
            })
            .unwrap();
            let n = ran.clone();
            r.add_fn_system(Phase::Update, "move", move |mut q: Query<&mut Pos>| {
                n.fetch_add(1, Ordering::SeqCst);
                q.each(|_, p| p.0 += 1);
            })
            .unwrap();
            let n = ran.clone();
            r.add_fn_system(
                Phase::Update,
                "count",
                move |mut c: Commands, mut k: ResMut<Count>| {
                    n.fetch_add(1, Ordering::SeqCst);
                    c.spawn((Pos(20_000),));
                    k.0 += 1;
                },
            )
            .unwrap();
            let n = ran.clone();
            if missing_mut {
                r.add_fn_system(
                    Phase::Update,
                    "needs gravity",
                    move |mut g: ResMut<Gravity>| {
                        n.fetch_add(1, Ordering::SeqCst);
                        g.0 += 1;
                    },
                )
                .unwrap();
            } else {
                r.add_fn_system(Phase::Update, "needs gravity", move |g: Res<Gravity>| {
                    n.fetch_add(1, Ordering::SeqCst);
                    assert_eq!(g.0, 3);
                })
                .unwrap();
            }
            let n = ran.clone();
            r.add_fn_system(Phase::PostUpdate, "post", move |mut q: Query<&mut Pos>| {
                n.fetch_add(1, Ordering::SeqCst);
                q.each(|_, p| p.0 += 100);
            })
            .unwrap();
            let mut before = Registry::with_workers(1);
            before.register_hashable::<Pos>();
            before.spawn_batch((0..600).map(|i| (Pos(i),)));
            before.spawn((Pos(10_000),));

            let err = update(&mut r).unwrap_err();
            let param = if missing_mut { "ResMut<" } else { "Res<" };
            assert!(
                err.contains("needs gravity") && err.contains("Gravity") && err.contains(param),
                "{err}"
            );
            assert_eq!(
                ran.load(Ordering::SeqCst),
                0,
                "no system of the segment ran"
            );
            assert_eq!(r.resource::<Count>(), Some(&Count(0)));
            assert_eq!(hash(&r), hash(&before), "only PreUpdate's spawn landed");
            assert_eq!(r.len(), 601);

            // Usable afterwards, and the same again the next time it is missing.
            assert!(update(&mut r).unwrap_err().contains("needs gravity"));
            r.insert_resource(Gravity(3));
            update(&mut r).unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), 4);
            assert_eq!(r.resource::<Count>(), Some(&Count(1)));
            hashes.push(hash(&r));
        }
    }
    assert!(hashes.windows(2).all(|w| w[0] == w[1]), "{hashes:?}");
}

/// A counter that is not atomic (read, wait, write), written by 64 `ResMut` systems with a
/// `Res` reader after each: at 1 to 16 workers, in order and with shuffled starts, the writers
/// never overlap each other or a reader, run in registration order, and every reader sees the
/// exact count of the writers registered before it.
#[test]
fn sixty_four_resmut_systems_run_one_at_a_time_in_registration_order() {
    struct Counter {
        n: u64,
        order: Vec<u32>,
    }
    const K: u32 = 64;
    const TICKS: u64 = 3;
    for workers in [1, 2, 8, 16] {
        for seed in [None, Some(1), Some(7), Some(0xdead_beef)] {
            let mut r = Registry::with_workers(workers);
            r.shuffle_system_starts(seed);
            r.insert_resource(Counter {
                n: 0,
                order: Vec::new(),
            });
            let writing = Arc::new(AtomicBool::new(false));
            let reading = Arc::new(AtomicUsize::new(0));
            let seen: Arc<Vec<AtomicU64>> = Arc::new((0..K).map(|_| AtomicU64::new(0)).collect());
            for k in 0..K {
                let (w, rd) = (writing.clone(), reading.clone());
                r.add_fn_system(
                    Phase::Update,
                    format!("w{k}"),
                    move |mut c: ResMut<Counter>| {
                        assert!(!w.swap(true, Ordering::SeqCst), "two writers at once");
                        assert_eq!(rd.load(Ordering::SeqCst), 0, "a writer beside a reader");
                        let n = c.n;
                        for _ in 0..(k % 5) * 40 {
                            std::hint::spin_loop();
                        }
                        if k % 8 == 0 {
                            std::thread::yield_now();
                        }
                        c.n = n + 1;
                        c.order.push(k);
                        w.store(false, Ordering::SeqCst);
                    },
                )
                .unwrap();
                let (w, rd, seen) = (writing.clone(), reading.clone(), seen.clone());
                r.add_fn_system(Phase::Update, format!("r{k}"), move |c: Res<Counter>| {
                    rd.fetch_add(1, Ordering::SeqCst);
                    assert!(!w.load(Ordering::SeqCst), "a reader beside a writer");
                    seen[k as usize].store(c.n, Ordering::SeqCst);
                    std::hint::spin_loop();
                    rd.fetch_sub(1, Ordering::SeqCst);
                })
                .unwrap();
            }
            for tick in 0..TICKS {
                update(&mut r).unwrap_or_else(|e| panic!("{workers}/{seed:?}: {e}"));
                for (k, s) in seen.iter().enumerate() {
                    assert_eq!(
                        s.load(Ordering::SeqCst),
                        tick * u64::from(K) + k as u64 + 1,
                        "workers {workers}, seed {seed:?}, reader {k}"
                    );
                }
            }
            let c = r.resource::<Counter>().unwrap();
            assert_eq!(c.n, TICKS * u64::from(K));
            let expected: Vec<u32> = (0..TICKS).flat_map(|_| 0..K).collect();
            assert_eq!(c.order, expected, "workers {workers}, seed {seed:?}");
        }
    }
}

/// `Res<T>` beside `ResMut<T>` (or two `ResMut<T>`) hidden in nested tuples is refused like a
/// flat pair, naming the type, with nothing added; two `Res<T>` are granted.
#[test]
fn a_conflicting_resource_pair_in_nested_tuples_is_refused() {
    let mut r = Registry::with_workers(2);
    let refused = |e: ScheduleError| match e {
        ScheduleError::ConflictingAccess { type_name, .. } => type_name,
        other => panic!("expected ConflictingAccess, got {other:?}"),
    };
    let e = r
        .add_fn_system(
            Phase::Update,
            "s",
            |_: (Res<Count>,), _: (Query<&Pos>, (ResMut<Count>,))| {},
        )
        .unwrap_err();
    assert!(refused(e).contains("Count"));
    let e = r
        .add_fn_system(
            Phase::Update,
            "s",
            |_: ResMut<Count>, _: ((Option<ResMut<Count>>,),)| {},
        )
        .unwrap_err();
    assert!(refused(e).contains("Count"));
    let e = r
        .add_fn_system(Phase::Update, "s", |_: ResMut<Count>, _: ResMut<Count>| {})
        .unwrap_err();
    assert!(refused(e).contains("Count"));
    assert_eq!(r.system_count(Phase::Update), 0, "nothing was added");

    r.insert_resource(Count(4));
    let seen = Arc::new(AtomicU64::new(0));
    let s = seen.clone();
    r.add_fn_system(
        Phase::Update,
        "s",
        move |a: Res<Count>, b: (Option<Res<Count>>,)| {
            s.store(a.0 + b.0.map_or(0, |b| b.0), Ordering::SeqCst);
        },
    )
    .unwrap();
    update(&mut r).unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 8);
}

/// A resource replaced (its old value dropped), removed and inserted again by exclusive systems
/// between segments, and made at a phase's sync point by an event writer: each segment's
/// systems see the resource as it is when their segment starts, never a value that was
/// replaced, at every worker count.
#[test]
fn resources_are_looked_up_again_when_each_segment_starts() {
    let mut logs = Vec::new();
    for workers in [1, 2, 8] {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut r = Registry::with_workers(workers);
        r.insert_resource(Table(vec![1, 2, 3]));
        let reader = |tag: u64| {
            let log = log.clone();
            move |t: Option<Res<Table>>, e: Option<Res<Events<Ping>>>| {
                let sum = t.map(|t| t.0.iter().sum::<u64>());
                log.lock().unwrap().push((tag, sum, e.is_some()));
            }
        };
        // Several readers per segment, so they may run on several threads.
        for tag in [0, 1, 2] {
            r.add_fn_system(Phase::PreUpdate, format!("pre{tag}"), reader(tag))
                .unwrap();
        }
        r.add_fn_system(Phase::PreUpdate, "send", |mut w: EventWriter<Ping>| {
            w.send(Ping)
        })
        .unwrap();
        r.add_fn_system(Phase::Update, "a", reader(10)).unwrap();
        r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
            let old = r.insert_resource(Table(vec![100; 64]));
            assert!(old.is_some());
            drop(old); // its memory is freed before the next segment
        });
        for tag in [20, 21] {
            r.add_fn_system(Phase::Update, format!("b{tag}"), reader(tag))
                .unwrap();
        }
        r.add_fn_system(Phase::Update, "grow", |mut t: ResMut<Table>| t.0.push(1))
            .unwrap();
        r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
            assert_eq!(r.remove_resource::<Table>().map(|t| t.0.len()), Some(65));
        });
        r.add_fn_system(Phase::Update, "c", reader(30)).unwrap();
        r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
            assert!(r.insert_resource(Table(vec![7])).is_none());
        });
        r.add_fn_system(Phase::Update, "d", reader(40)).unwrap();
        for _ in 0..2 {
            update(&mut r).unwrap();
        }
        let mut got = log.lock().unwrap().clone();
        // The readers of one segment run in any order.
        for range in [0..3, 4..6, 8..11, 12..14] {
            got[range].sort_unstable();
        }
        logs.push(got);
    }
    let update = |table: u64| {
        [
            (10, Some(table), true),
            (20, Some(6400), true),
            (21, Some(6400), true),
            (30, None, true),
            (40, Some(7), true),
        ]
    };
    let mut expected = vec![
        (0, Some(6), false),
        (1, Some(6), false),
        (2, Some(6), false),
    ];
    expected.extend(update(6));
    expected.extend([(0, Some(7), true), (1, Some(7), true), (2, Some(7), true)]);
    expected.extend(update(7));
    assert_eq!(logs[0], expected);
    assert!(logs.windows(2).all(|w| w[0] == w[1]), "{logs:?}");
}

// ---- in-flight readers, odd sizes, the hash ------------------------------------------------

/// An exclusive system launches `each_async` work that reads a resource through a view; the
/// next segment's `ResMut` system of that resource (which shrinks it, freeing its memory)
/// starts only once that work is done, and every row saw the whole resource.
#[test]
fn a_resmut_segment_waits_for_launches_that_view_the_resource() {
    #[derive(Debug, PartialEq)]
    struct Sum(u64);
    for workers in [2, 8] {
        let mut r = Registry::with_workers(workers);
        r.insert_resource(Table((1..=64).collect()));
        r.spawn_batch((0..4000).map(|_| (Sum(0),)));
        r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
            r.query::<&mut Sum>()
                .views::<(freyr::Res<Table>,)>()
                .each_async_with(|_, sum, ctx| {
                    let (table,) = ctx.views();
                    for _ in 0..20 {
                        std::hint::spin_loop();
                    }
                    sum.0 += table.0.iter().sum::<u64>();
                });
        });
        r.add_fn_system(Phase::Update, "shrink", |mut t: ResMut<Table>| {
            t.0 = vec![1];
            t.0.shrink_to_fit();
        })
        .unwrap();
        r.update(0.0);
        assert_eq!(r.query::<&Sum>().count(), 4000);
        let mut sums = Vec::new();
        r.query::<&Sum>().each(|_, s| sums.push(s.0));
        assert!(sums.iter().all(|&s| s == 64 * 65 / 2), "workers {workers}");
        r.update(0.0);
        let mut sums = Vec::new();
        r.query::<&Sum>().each(|_, s| sums.push(s.0));
        assert!(sums.iter().all(|&s| s == 64 * 65 / 2 + 1));
    }
}

/// Zero-sized resources (a unit struct and `()`) through `Res`, `ResMut` and `Option`, copied by
/// snapshots and removed by a restore to before they existed.
#[test]
fn zero_sized_resources_work_everywhere() {
    #[derive(Clone, Debug, PartialEq)]
    struct Flag;
    let mut r = Registry::with_workers(4);
    r.register_snapshot_resource::<Flag>();
    r.register_snapshot_resource::<()>();
    r.register_snapshot_resource::<Count>();
    r.insert_resource(Count(0));
    let before = r.snapshot().unwrap();
    r.insert_resource(Flag);
    r.insert_resource(());
    for k in 0..4 {
        r.add_fn_system(
            Phase::Update,
            format!("read{k}"),
            |f: Res<Flag>, u: Option<Res<()>>, mut c: ResMut<Count>| {
                let _: &Flag = &f;
                c.0 += u64::from(u.is_some());
            },
        )
        .unwrap();
    }
    r.add_fn_system(
        Phase::Update,
        "write",
        |mut f: ResMut<Flag>, mut u: ResMut<()>| {
            *f = Flag;
            *u = ();
        },
    )
    .unwrap();
    r.update(0.0);
    assert_eq!(r.resource::<Count>(), Some(&Count(4)));
    let with = r.snapshot().unwrap();
    r.restore(&before).unwrap();
    assert!(!r.contains_resource::<Flag>() && !r.contains_resource::<()>());
    assert!(update(&mut r).unwrap_err().contains("Flag"));
    r.restore(&with).unwrap();
    assert_eq!(r.resource::<Flag>(), Some(&Flag));
    assert_eq!(r.resource::<()>(), Some(&()));
    r.update(0.0);
    assert_eq!(r.resource::<Count>(), Some(&Count(8)));
    assert_eq!(r.remove_resource::<()>(), Some(()));
}

/// A large resource held inline (a 128 KiB array, moved by value) and one of 16 MiB on the
/// heap: inserted, written by a system, copied by a snapshot and restored exactly.
#[test]
fn large_resources_round_trip() {
    #[derive(Clone)]
    struct Inline([u64; 16 * 1024]);
    #[derive(Clone)]
    struct Heap(Vec<u8>);
    let mut r = Registry::with_workers(2);
    r.register_snapshot_resource::<Inline>();
    r.register_snapshot_resource::<Heap>();
    r.insert_resource(Inline([3; 16 * 1024]));
    r.insert_resource(Heap(vec![5; 16 << 20]));
    r.add_fn_system(Phase::Update, "inline", |mut i: ResMut<Inline>| {
        i.0.iter_mut().enumerate().for_each(|(k, v)| *v += k as u64);
    })
    .unwrap();
    r.add_fn_system(Phase::Update, "heap", |mut h: ResMut<Heap>| {
        let n = h.0.len();
        h.0[n - 1] = 9;
    })
    .unwrap();
    r.update(0.0);
    let snapshot = r.snapshot().unwrap();
    r.update(0.0);
    r.resource_mut::<Heap>().unwrap().0.truncate(1);
    r.restore(&snapshot).unwrap();
    let inline = &r.resource::<Inline>().unwrap().0;
    assert!(inline.iter().enumerate().all(|(k, &v)| v == 3 + k as u64));
    let heap = &r.resource::<Heap>().unwrap().0;
    assert_eq!(heap.len(), 16 << 20);
    assert_eq!((heap[0], heap[heap.len() - 1]), (5, 9));
}

/// The world hash is of the world: entities and their hashable components. Resources are not
/// in it (compare them yourself): two registries that differ only in a resource hash equal, and
/// a registry hashes the same before and after a resource changes.
#[test]
fn the_world_hash_does_not_cover_resources() {
    let make = |count: u64| {
        let mut r = Registry::with_workers(2);
        r.register_hashable::<Pos>();
        r.spawn_batch((0..100).map(|i| (Pos(i),)));
        r.insert_resource(Count(count));
        r
    };
    let (mut a, b) = (make(1), make(2));
    assert_eq!(hash(&a), hash(&b));
    assert_eq!(a.digest().unwrap(), b.digest().unwrap());
    let h = hash(&a);
    a.insert_resource(Table(vec![1]));
    a.resource_mut::<Count>().unwrap().0 = 99;
    assert_eq!(hash(&a), h);
}
