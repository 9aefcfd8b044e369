//! Function systems across a rollback: what a system keeps from one run to the next that the
//! world's history decides — its event readers' cursors and the tick its change filters and
//! `Tick::last_run` compare with — is taken by a snapshot and restored with the world, so a
//! rolled-back and resimulated run ends as the uninterrupted one, at every worker count.

use freyr::snapshot::Snapshot;
use freyr::system::{EventReader, EventWriter, Query, Tick};
use freyr::{Entity, Events, Phase, Registry, StableHash};

#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
struct Hp(u32);
/// What the reader saw: event values summed, changed rows counted, previous runs seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, StableHash)]
struct Tally {
    hits: u64,
    changed: u64,
    last_runs: u64,
}
#[derive(Clone, Debug)]
struct Hit(u32);

fn registry(workers: usize) -> (Registry, Entity) {
    let mut r = Registry::with_workers(workers);
    r.add_event::<Hit>();
    r.register_snapshot_resource::<Events<Hit>>();
    r.register_snapshot_copy::<Hp>();
    r.register_snapshot_copy::<Tally>();
    r.register_hashable::<Hp>();
    r.register_hashable::<Tally>();
    r.spawn_batch((0..40).map(|i| (Hp(i),)));
    let tally = r.spawn((Tally::default(),));
    // Writes on two ticks of three, and says so with events: a reader that skipped events or
    // compared with the wrong tick would count differently.
    r.add_fn_system(
        Phase::Update,
        "damage",
        |mut q: Query<&mut Hp>, mut hits: EventWriter<Hit>, t: Tick| {
            if t.tick % 3 != 2 {
                q.each(|e, hp| {
                    if (e.index() as u64 + t.tick).is_multiple_of(5) {
                        hp.0 += 1;
                        hits.send(Hit(hp.0));
                    }
                });
            }
        },
    )
    .unwrap();
    r.add_fn_system(
        Phase::PostUpdate,
        "count",
        |mut hp: Query<&Hp>, mut tally: Query<&mut Tally>, mut hits: EventReader<Hit>, t: Tick| {
            let sum: u64 = hits.read().map(|h| u64::from(h.0)).sum();
            let mut changed = 0;
            hp.filter_changed::<Hp>().each(|_, _| changed += 1);
            tally.each(|_, tally| {
                tally.hits += sum;
                tally.changed += changed;
                tally.last_runs = tally
                    .last_runs
                    .wrapping_mul(7)
                    .wrapping_add(t.last_run.map_or(1, |l| l + 2));
            });
        },
    )
    .unwrap();
    (r, tally)
}

fn hash(r: &Registry) -> u64 {
    r.world_hash::<(Hp, Tally)>()
}

#[test]
fn a_resimulated_run_ends_as_the_uninterrupted_one() {
    let reference = {
        let (mut r, tally) = registry(1);
        for _ in 0..24 {
            r.update(0.1);
        }
        (hash(&r), *r.get::<Tally>(tally).unwrap())
    };
    assert!(reference.1.hits > 0 && reference.1.changed > 0);
    for workers in [1, 2, 3, 8, 16] {
        let (mut r, tally) = registry(workers);
        for _ in 0..7 {
            r.update(0.1);
        }
        let mut snapshot = Snapshot::new();
        r.snapshot_into(&mut snapshot).unwrap();
        // A branch that is thrown away: more ticks, more events, later previous runs.
        for _ in 0..6 {
            r.update(0.1);
        }
        r.restore(&snapshot).unwrap();
        for _ in 7..24 {
            r.update(0.1);
        }
        let got = (hash(&r), *r.get::<Tally>(tally).unwrap());
        assert_eq!(got, reference, "{workers} workers");
        // A second rollback to the same snapshot, from further ahead.
        r.restore(&snapshot).unwrap();
        for _ in 7..24 {
            r.update(0.1);
        }
        assert_eq!((hash(&r), *r.get::<Tally>(tally).unwrap()), reference);
    }
}

#[test]
fn a_system_added_after_the_snapshot_keeps_its_own_state() {
    // The snapshot holds the systems it saw; one added later keeps what it has (it is not
    // part of the history the snapshot recorded), and the older ones are restored.
    let (mut r, tally) = registry(2);
    r.update(0.1);
    let snapshot = r.snapshot().unwrap();
    r.update(0.1);
    r.add_fn_system(Phase::Update, "late", |_: Query<&Hp>| {})
        .unwrap();
    r.update(0.1);
    r.restore(&snapshot).unwrap();
    r.update(0.1);
    r.update(0.1);
    let (mut plain, plain_tally) = registry(2);
    for _ in 0..3 {
        plain.update(0.1);
    }
    assert_eq!(r.get::<Tally>(tally), plain.get::<Tally>(plain_tally));
}

#[test]
fn after_a_load_function_systems_run_as_in_a_fresh_program_that_loads_the_save() {
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Copy, serde::Serialize, serde::Deserialize)]
    struct Mark(u32);

    type Log = Arc<Mutex<Vec<(u32, Option<u64>)>>>;
    let program = |log: &Log| {
        let mut r = Registry::with_workers(2);
        r.register_persistent::<Mark>("mark", 1);
        let log = log.clone();
        r.add_fn_system(
            Phase::Update,
            "watch",
            move |mut q: Query<&Mark>, t: Tick| {
                let mut changed = 0;
                q.filter_changed::<Mark>().each(|_, _| changed += 1);
                log.lock().unwrap().push((changed, t.last_run));
            },
        )
        .unwrap();
        r
    };
    let ran: Log = Arc::default();
    let mut r = program(&ran);
    r.spawn_batch((0..40).map(|i| (Mark(i),)));
    for _ in 0..3 {
        r.update(0.1);
    }
    let save = r.save_to_vec().unwrap();
    for _ in 0..4 {
        r.update(0.1);
    }
    ran.lock().unwrap().clear();
    r.load_into(&save).unwrap();
    for _ in 0..3 {
        r.update(0.1);
    }
    let fresh: Log = Arc::default();
    let mut f = program(&fresh);
    f.load_into(&save).unwrap();
    for _ in 0..3 {
        f.update(0.1);
    }
    let (ran, fresh) = (ran.lock().unwrap(), fresh.lock().unwrap());
    assert_eq!(*ran, *fresh);
    // The first run after the load has no previous run and sees every row.
    assert_eq!(ran[0], (40, None));
}
