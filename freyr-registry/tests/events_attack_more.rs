//! Attacks on events with snapshots, restores and saves: unread events come back, stores made
//! since are removed (in this registry or another), panicking `Clone`s and `Drop`s of events
//! change nothing or finish the restore, a cursor kept across a restore skips no new event, and
//! a load to an earlier tick keeps the two-tick retention.

mod events_attack_support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use events_attack_support::{Bomb, Brittle, Ev, ev, panics};
use freyr::system::{EventReader, EventWriter, Tick};
use freyr::{EventCursor, Events, Phase, Registry};

#[derive(Clone, Debug, PartialEq)]
struct Other(u32);

fn read_all<E: Clone + Send + Sync + 'static>(r: &Registry) -> Vec<E> {
    let mut c = EventCursor::default();
    r.read_events::<E>(&mut c).cloned().collect()
}

#[test]
fn restore_brings_back_unread_events_and_removes_later_stores_here_and_elsewhere() {
    let mut a = Registry::with_workers(2);
    a.send_event(ev(0, 0, 1));
    a.send_event(ev(0, 0, 2));
    a.execute_tasks();
    let snap = a.snapshot().unwrap();
    // After the snapshot: more of `Ev`, and a store of `Other` made by a send.
    a.send_event(ev(0, 0, 3));
    a.send_event(Other(1));
    a.update(0.0);
    assert_eq!(read_all::<Other>(&a), [Other(1)]);
    a.restore(&snap).unwrap();
    assert_eq!(read_all::<Ev>(&a), [ev(0, 0, 1), ev(0, 0, 2)]);
    assert!(read_all::<Other>(&a).is_empty());
    assert!(
        a.resource::<Events<Other>>().is_none(),
        "made after the snapshot"
    );

    // Another registry, other worker count, its own stores of both types.
    let mut b = Registry::with_workers(8);
    b.add_event::<Other>();
    for n in 0..5 {
        b.send_event(Other(n));
        b.send_event(ev(1, 0, n));
    }
    b.update(0.0);
    b.restore(&snap).unwrap();
    assert_eq!(b.tick(), 0);
    assert_eq!(read_all::<Ev>(&b), [ev(0, 0, 1), ev(0, 0, 2)]);
    assert!(
        read_all::<Other>(&b).is_empty(),
        "nothing of the replaced timeline stays readable"
    );
    // Both go on alike: same numbers, same reads.
    for r in [&mut a, &mut b] {
        r.send_event(ev(2, 0, 0));
        r.update(0.0);
    }
    let (sa, sb) = (
        a.resource::<Events<Ev>>().unwrap().sent(),
        b.resource::<Events<Ev>>().unwrap().sent(),
    );
    assert_eq!((sa, sb), (3, 3));
    assert_eq!(read_all::<Ev>(&a), read_all::<Ev>(&b));
    // `b` registered the store for snapshots: a new snapshot there holds it.
    let snap_b = b.snapshot().unwrap();
    b.send_event(ev(3, 0, 0));
    b.update(0.0);
    b.restore(&snap_b).unwrap();
    assert_eq!(b.resource::<Events<Ev>>().unwrap().sent(), 3);
}

/// A cursor not rewound with the world, past the end of the restored store, reads the events
/// the resimulated timeline stores: it neither skips them (they are numbered below its
/// position) nor reads again what it read before the snapshot.
#[test]
fn a_cursor_kept_across_a_restore_to_an_earlier_tick_skips_no_new_event() {
    let mut r = Registry::with_workers(2);
    let mut cursor = EventCursor::default();
    r.send_event(ev(0, 0, 0));
    r.update(0.0);
    let snap = r.snapshot().unwrap();
    assert_eq!(r.read_events::<Ev>(&mut cursor).count(), 1);
    for n in 0..5 {
        r.send_event(ev(1, 1, n));
    }
    r.update(0.0);
    assert_eq!(r.read_events::<Ev>(&mut cursor).count(), 5);
    assert_eq!(cursor.position(), 6);
    r.restore(&snap).unwrap();
    // The resimulated tick 1 sends two events, numbered 1 and 2: below the cursor's position.
    r.send_event(ev(2, 1, 0));
    r.send_event(ev(2, 1, 1));
    r.update(0.0);
    let read: Vec<Ev> = r.read_events::<Ev>(&mut cursor).cloned().collect();
    assert_eq!(read, [ev(2, 1, 0), ev(2, 1, 1)]);
    assert_eq!(cursor.position(), 3);
    r.send_event(ev(2, 2, 0));
    r.update(0.0);
    let read: Vec<Ev> = r.read_events::<Ev>(&mut cursor).cloned().collect();
    assert_eq!(read, [ev(2, 2, 0)]);
    // Restored twice (the same snapshot): a cursor behind the snapshot point keeps its place.
    let mut behind = EventCursor::default();
    r.restore(&snap).unwrap();
    r.send_event(ev(3, 1, 0));
    r.execute_tasks();
    assert_eq!(r.read_events::<Ev>(&mut behind).count(), 2);
    r.restore(&snap).unwrap();
    let read: Vec<Ev> = r.read_events::<Ev>(&mut behind).cloned().collect();
    assert!(
        read.is_empty(),
        "{read:?}: the event before the snapshot is not read twice"
    );
    r.send_event(ev(4, 1, 0));
    r.execute_tasks();
    let read: Vec<Ev> = r.read_events::<Ev>(&mut behind).cloned().collect();
    assert_eq!(read, [ev(4, 1, 0)]);
}

/// A cursor from another event type or another registry shares no history with the store it
/// reads: it reads everything still kept there.
#[test]
fn a_cursor_from_another_type_or_registry_reads_everything_kept() {
    let mut r = Registry::with_workers(1);
    for n in 0..10 {
        r.send_event(Other(n));
    }
    r.send_event(ev(0, 0, 0));
    r.execute_tasks();
    let mut c = EventCursor::default();
    assert_eq!(r.read_events::<Other>(&mut c).count(), 10);
    assert_eq!(c.position(), 10);
    // Used for `Ev` (one stored, the cursor past it): reads it, nothing skipped.
    let read: Vec<Ev> = r.read_events::<Ev>(&mut c).cloned().collect();
    assert_eq!(read, [ev(0, 0, 0)]);
    assert_eq!(c.position(), 1);
    r.send_event(ev(0, 0, 1));
    r.execute_tasks();
    let read: Vec<Ev> = r.read_events::<Ev>(&mut c).cloned().collect();
    assert_eq!(read, [ev(0, 0, 1)]);
    // Another registry with more `Ev`s: the cursor (at 2) reads all four.
    let mut other = Registry::with_workers(2);
    for n in 0..4 {
        other.send_event(ev(9, 0, n));
    }
    other.execute_tasks();
    let read: Vec<u32> = other.read_events::<Ev>(&mut c).map(|e| e.n).collect();
    assert_eq!(read, [0, 1, 2, 3]);
    // A cursor made at a position is trusted anywhere.
    let mut at = EventCursor::at(3);
    let read: Vec<u32> = other.read_events::<Ev>(&mut at).map(|e| e.n).collect();
    assert_eq!(read, [3]);
}

static FUSE: AtomicBool = AtomicBool::new(false);

/// A panicking `Clone` of an event while a snapshot copies the store or a restore copies it
/// back: the registry is unchanged, its events all readable.
#[test]
fn a_panicking_event_clone_in_snapshot_or_restore_changes_nothing() {
    FUSE.store(false, Ordering::SeqCst);
    let mut r = Registry::with_workers(2);
    for n in 0..3 {
        r.send_event(Brittle(n, &FUSE));
    }
    r.update(0.0);
    FUSE.store(true, Ordering::SeqCst);
    let msg = panics(|| drop(r.snapshot()));
    assert!(msg.contains("clone of brittle 0"), "{msg}");
    let ids = |r: &Registry| -> Vec<u32> {
        let mut c = EventCursor::default();
        r.read_events::<Brittle>(&mut c).map(|b| b.0).collect()
    };
    assert_eq!(ids(&r), [0, 1, 2]);
    FUSE.store(false, Ordering::SeqCst);
    let snap = r.snapshot().unwrap();
    r.send_event(Brittle(3, &FUSE));
    r.execute_tasks(); // stored at tick 1, with the others
    FUSE.store(true, Ordering::SeqCst);
    let msg = panics(|| drop(r.restore(&snap)));
    assert!(msg.contains("clone of brittle"), "{msg}");
    assert_eq!(ids(&r), [0, 1, 2, 3], "unchanged by the failed restore");
    assert_eq!(r.resource::<Events<Brittle>>().unwrap().sent(), 4);
    FUSE.store(false, Ordering::SeqCst);
    r.restore(&snap).unwrap();
    assert_eq!(ids(&r), [0, 1, 2]);
    assert_eq!(r.resource::<Events<Brittle>>().unwrap().sent(), 3);
}

static RESTORE_DROPS: AtomicUsize = AtomicUsize::new(0);

/// An event whose `Drop` panics in the store a restore replaces: the restore finishes, the
/// panic comes after, every replaced event is dropped once.
#[test]
fn a_panicking_event_drop_in_a_replaced_store_finishes_the_restore() {
    let drops = &RESTORE_DROPS;
    let mut r = Registry::with_workers(2);
    r.send_event(Bomb {
        armed: false,
        id: 0,
        drops,
    });
    r.execute_tasks();
    let snap = r.snapshot().unwrap(); // holds an unarmed clone
    r.send_event(Bomb {
        armed: true,
        id: 1,
        drops,
    });
    r.send_event(Bomb {
        armed: false,
        id: 2,
        drops,
    });
    r.execute_tasks();
    let before = drops.load(Ordering::SeqCst);
    let msg = panics(|| drop(r.restore(&snap)));
    assert!(msg.contains("bomb 1"), "{msg}");
    assert_eq!(
        drops.load(Ordering::SeqCst) - before,
        3,
        "0, 1 and 2 dropped"
    );
    let mut c = EventCursor::default();
    let ids: Vec<u32> = r.read_events::<Bomb>(&mut c).map(|b| b.id).collect();
    assert_eq!(ids, [0]);
    assert_eq!(c.position(), 1);
    drop(r);
    drop(snap);
}

/// Function-system readers are rewound by a restore: resimulating ticks reads what the first
/// run read, for every worker count.
#[test]
fn fn_system_readers_resimulate_the_same_reads() {
    type Reads = Vec<(u64, u64, u32)>;
    type Seen = std::sync::Arc<std::sync::Mutex<Reads>>;
    let run = |workers: usize| -> (Reads, Reads) {
        let seen = Seen::default();
        let log = seen.clone();
        let mut r = Registry::with_workers(workers);
        r.add_fn_system(
            Phase::PreUpdate,
            "read",
            move |mut rd: EventReader<Ev>, t: Tick| {
                let mut log = log.lock().unwrap();
                log.extend(rd.read().map(|e| (t.tick, e.tick, e.n)));
            },
        )
        .unwrap();
        r.add_fn_system(Phase::Update, "write", |mut w: EventWriter<Ev>, t: Tick| {
            w.send(ev(0, t.tick, t.tick as u32 * 10));
            w.send(ev(0, t.tick, t.tick as u32 * 10 + 1));
        })
        .unwrap();
        for _ in 0..3 {
            r.update(0.0);
        }
        let snap = r.snapshot().unwrap();
        let mark = seen.lock().unwrap().len();
        for _ in 0..4 {
            r.update(0.0);
        }
        let first = seen.lock().unwrap()[mark..].to_vec();
        r.restore(&snap).unwrap();
        let mark = seen.lock().unwrap().len();
        for _ in 0..4 {
            r.update(0.0);
        }
        let again = seen.lock().unwrap()[mark..].to_vec();
        (first, again)
    };
    let (first, again) = run(1);
    assert_eq!(first, again);
    // Ticks 3..=6 each read the two events of the tick before.
    let expected: Reads = (3..7u64)
        .flat_map(|t| {
            [
                (t, t - 1, (t as u32 - 1) * 10),
                (t, t - 1, (t as u32 - 1) * 10 + 1),
            ]
        })
        .collect();
    assert_eq!(first, expected);
    for workers in [2, 3, 8, 16] {
        assert_eq!(run(workers), (first.clone(), again.clone()), "{workers}");
    }
}

/// A save holds no events; a load to an earlier tick must not leave the later timeline's
/// events readable, and events stored after it are kept for their tick and the next only.
#[test]
fn a_load_to_an_earlier_tick_keeps_the_two_tick_retention() {
    let mut saved = Registry::with_workers(1);
    for _ in 0..3 {
        saved.update(0.0);
    }
    let bytes = saved.save_to_vec().unwrap();

    let mut r = Registry::with_workers(2);
    for _ in 0..50 {
        r.update(0.0);
    }
    r.send_event(ev(0, 50, 0));
    r.update(0.0); // stored at tick 50
    let mut cursor = EventCursor::default();
    assert_eq!(r.read_events::<Ev>(&mut cursor).count(), 1);
    let position = cursor.position();
    r.load_into(&bytes).unwrap();
    assert_eq!(r.tick(), 3);
    assert!(
        read_all::<Ev>(&r).is_empty(),
        "tick 50's events are not readable at tick 3"
    );
    r.send_event(ev(1, 3, 0));
    r.update(0.0); // stored at tick 3
    assert_eq!(read_all::<Ev>(&r), [ev(1, 3, 0)], "tick 4 reads tick 3's");
    let read: Vec<Ev> = r.read_events::<Ev>(&mut cursor).cloned().collect();
    assert_eq!(
        read,
        [ev(1, 3, 0)],
        "numbers go on: the kept cursor skips nothing"
    );
    assert_eq!(cursor.position(), position + 1);
    r.update(0.0);
    assert!(read_all::<Ev>(&r).is_empty(), "gone at tick 5 = T + 2");
    assert!(r.resource::<Events<Ev>>().unwrap().len() <= 1);
}

/// An event store left out of snapshots on purpose: sending still works (the first store
/// does not try to register it), snapshots leave it as it is.
#[test]
fn an_excluded_event_store_is_kept_out_of_snapshots() {
    let mut r = Registry::with_workers(2);
    r.exclude_resource_from_snapshot::<Events<Other>>();
    r.send_event(Other(1));
    r.execute_tasks();
    assert_eq!(read_all::<Other>(&r), [Other(1)]);
    let snap = r.snapshot().unwrap();
    r.send_event(Other(2));
    r.execute_tasks();
    r.restore(&snap).unwrap();
    assert_eq!(read_all::<Other>(&r), [Other(1), Other(2)], "left as it is");
    r.add_event::<Other>(); // keeps the store, does not register it
    assert!(r.snapshot().is_ok());
    assert_eq!(read_all::<Other>(&r).len(), 2);
}
