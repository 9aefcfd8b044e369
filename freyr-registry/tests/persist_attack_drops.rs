//! A hostile user against the snapshot and save contracts: `Drop`s that panic on values a load
//! or a ring restore replaces (each dropped once, the registry loaded or restored), a save
//! naming a type the target does not know, saves to a directory, and two saves racing to one
//! path. The combined-feature attacks are in `persist_attack`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Barrier;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use freyr::persist::{LoadError, SaveError};
use freyr::snapshot::{SnapshotError, SnapshotRing};
use freyr::{Entity, Phase, Registry, StableHash};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, StableHash, Serialize, Deserialize)]
struct Hp(u32);

fn run_to(r: &mut Registry, tick: u64) {
    while r.tick() < tick {
        r.update(0.1);
    }
}

/// What a refused load must leave as it was: the hash, the entity count, the tick and the
/// save bytes.
fn state(r: &Registry) -> (u64, usize, u64, Vec<u8>) {
    (
        r.world_hash::<(Hp,)>(),
        r.len(),
        r.tick(),
        r.save_to_vec().unwrap(),
    )
}

/// Values made and dropped; a value equal to `ARMED` panics in its first `Drop`.
static MADE: AtomicUsize = AtomicUsize::new(0);
static DROPPED: AtomicUsize = AtomicUsize::new(0);
static ARMED: AtomicU32 = AtomicU32::new(u32::MAX);
/// The tests that count `Bomb`s run one at a time.
static BOMBS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[derive(Debug, PartialEq, Serialize)]
struct Bomb(u32);

impl Bomb {
    fn new(v: u32) -> Bomb {
        MADE.fetch_add(1, Ordering::SeqCst);
        Bomb(v)
    }
}

impl Clone for Bomb {
    fn clone(&self) -> Bomb {
        Bomb::new(self.0)
    }
}

impl<'de> Deserialize<'de> for Bomb {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Bomb, D::Error> {
        u32::deserialize(d).map(Bomb::new)
    }
}

impl Drop for Bomb {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, Ordering::SeqCst);
        if ARMED
            .compare_exchange(self.0, u32::MAX, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            panic!("bomb {} went off", self.0);
        }
    }
}

fn live_bombs() -> usize {
    MADE.load(Ordering::SeqCst) - DROPPED.load(Ordering::SeqCst)
}

fn bombs(values: core::ops::Range<u32>) -> Registry {
    let mut r = Registry::with_workers(2);
    r.register_persistent::<Bomb>("attack.bomb", 1);
    r.spawn_batch(values.map(|v| (Bomb::new(v),)));
    r
}

fn bomb_values(r: &mut Registry) -> Vec<(Entity, u32)> {
    let mut out = Vec::new();
    r.query::<&Bomb>().each(|e, b| out.push((e, b.0)));
    out
}

#[test]
fn a_load_over_values_whose_drop_panics_drops_each_once_and_is_loaded() {
    let _one = BOMBS.lock().unwrap_or_else(|e| e.into_inner());
    let base = live_bombs();
    let mut source = bombs(0..300);
    let bytes = source.save_to_vec().unwrap();
    let want = bomb_values(&mut source);
    drop(source);
    assert_eq!(live_bombs(), base);

    let mut target = bombs(1000..1500);
    ARMED.store(1250, Ordering::SeqCst);
    let result = catch_unwind(AssertUnwindSafe(|| target.load_into(&bytes)));
    assert!(
        matches!(result, Err(_) | Ok(Ok(()))),
        "a load either loads or re-raises a Drop's panic: {result:?}"
    );
    assert_eq!(ARMED.load(Ordering::SeqCst), u32::MAX, "the bomb went off");
    assert_eq!(
        bomb_values(&mut target),
        want,
        "the registry is the loaded one"
    );
    assert_eq!(
        live_bombs(),
        base + 300,
        "the 500 replaced values dropped, each once"
    );
    // It goes on: spawns, saves and loads again.
    target.spawn((Bomb::new(7),));
    let again = target.save_to_vec().unwrap();
    target.load_into(&bytes).unwrap();
    target.load_into(&again).unwrap();
    assert_eq!(target.len(), 301);
    drop(target);
    assert_eq!(live_bombs(), base);
}

#[test]
fn a_ring_restore_whose_replaced_value_panics_still_forgets_the_replaced_timeline() {
    let _one = BOMBS.lock().unwrap_or_else(|e| e.into_inner());
    let base = live_bombs();
    let mut r = Registry::with_workers(2);
    r.register_snapshot_clone::<Bomb>();
    let e = r.spawn((Bomb::new(0),));
    r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        let t = r.tick() as u32;
        *r.get_mut::<Bomb>(e).unwrap() = Bomb::new(100 + t);
    });
    let mut ring = SnapshotRing::new(16);
    for _ in 0..10 {
        ring.push(&r).unwrap();
        r.update(0.1);
    }
    assert_eq!(ring.ticks(), (0..10).collect::<Vec<u64>>());
    // The live value (written at tick 9) goes off when the restore replaces it.
    ARMED.store(109, Ordering::SeqCst);
    let result = catch_unwind(AssertUnwindSafe(|| ring.restore(&mut r, 5)));
    assert!(result.is_err(), "the Drop's panic is re-raised");
    assert_eq!(ARMED.load(Ordering::SeqCst), u32::MAX);
    assert_eq!(r.tick(), 5, "the registry was restored before the panic");
    assert_eq!(r.get::<Bomb>(e).unwrap().0, 104);
    assert_eq!(
        ring.ticks(),
        (0..=5).collect::<Vec<u64>>(),
        "the ticks after 5 belong to the replaced timeline"
    );
    assert_eq!(
        ring.restore(&mut r, 8),
        Err(SnapshotError::TickNotInRing { tick: 8 })
    );
    assert_eq!(r.tick(), 5);
    drop((r, ring));
    assert_eq!(live_bombs(), base, "every value dropped once");
}

#[test]
fn a_save_with_more_types_than_the_target_knows_is_refused_by_name() {
    let mut a = Registry::with_workers(1);
    a.register_persistent::<Hp>("attack.hp", 1);
    a.register_persistent::<u64>("attack.extra", 1);
    a.spawn((Hp(1),));
    let gone = a.spawn((Hp(2), 5u64));
    a.despawn(gone).unwrap(); // the world still knows the type: the save lists it
    let bytes = a.save_to_vec().unwrap();
    let mut b = Registry::with_workers(1);
    b.register_persistent::<Hp>("attack.hp", 1);
    b.register_hashable::<Hp>();
    b.spawn((Hp(3),));
    let before = state(&b);
    match b.load_into(&bytes) {
        Err(LoadError::UnknownType { name }) => assert_eq!(name, "attack.extra"),
        other => panic!("{other:?}"),
    }
    assert_eq!(state(&b), before);
    b.register_persistent::<u64>("attack.extra", 1);
    b.load_into(&bytes).unwrap();
    assert_eq!(b.len(), 1);
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("freyr-attack-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_save_to_a_directory_is_an_io_error_and_leaves_no_temporary() {
    let dir = scratch("dir");
    let target = dir.join("world.save");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("inside"), b"kept").unwrap();
    let empty = dir.join("empty.save");
    std::fs::create_dir(&empty).unwrap();
    let mut r = Registry::with_workers(1);
    r.register_persistent::<Hp>("attack.hp", 1);
    r.spawn((Hp(1),));
    for path in [&target, &empty, &dir.join("world.save/")] {
        match r.save(path) {
            Err(SaveError::Io(_)) => {}
            other => panic!("a save to the directory {path:?}: {other:?}"),
        }
    }
    for path in [dir.join(".."), std::path::PathBuf::from("/")] {
        assert!(matches!(r.save(&path), Err(SaveError::Io(_))), "{path:?}");
    }
    assert_eq!(
        files(&dir),
        ["empty.save", "world.save"],
        "no temporary left"
    );
    assert_eq!(std::fs::read(target.join("inside")).unwrap(), b"kept");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_saves_racing_to_one_path_leave_one_whole_save() {
    let dir = scratch("race");
    let path = dir.join("world.save");
    let mut small = Registry::with_workers(1);
    small.register_persistent::<Hp>("attack.hp", 1);
    small.spawn((Hp(1),));
    let mut large = Registry::with_workers(1);
    large.register_persistent::<Hp>("attack.hp", 1);
    large.register_persistent::<String>("attack.name", 1);
    large.spawn_batch((0..20_000u32).map(|i| (Hp(i), format!("entity {i}"))));
    let saves = [small.save_to_vec().unwrap(), large.save_to_vec().unwrap()];
    let mut registries = vec![small, large];
    for round in 0..40 {
        let barrier = Barrier::new(2);
        let (back, results): (Vec<Registry>, Vec<Result<(), SaveError>>) =
            std::thread::scope(|s| {
                let handles: Vec<_> = registries
                    .drain(..)
                    .map(|r| {
                        let (barrier, path) = (&barrier, &path);
                        s.spawn(move || {
                            barrier.wait();
                            let saved = r.save(path);
                            (r, saved)
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).unzip()
            });
        registries = back;
        for result in &results {
            assert!(result.is_ok(), "round {round}: {result:?}");
        }
        let written = std::fs::read(&path).unwrap();
        assert!(
            saves.contains(&written),
            "round {round}: the file is neither save ({} bytes)",
            written.len()
        );
        assert_eq!(
            files(&dir),
            ["world.save"],
            "round {round}: no temporary left"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A resource whose `Drop` panics when its value equals `FUSE_ARMED`.
static FUSE_ARMED: AtomicU32 = AtomicU32::new(u32::MAX);

#[derive(Clone)]
struct Fuse(u32);

impl Drop for Fuse {
    fn drop(&mut self) {
        if FUSE_ARMED
            .compare_exchange(self.0, u32::MAX, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            panic!("fuse {} went off", self.0);
        }
    }
}

#[test]
fn a_restore_whose_replaced_resource_and_component_both_panic_in_drop_does_not_abort() {
    let _one = BOMBS.lock().unwrap_or_else(|e| e.into_inner());
    let base = live_bombs();
    let mut r = Registry::with_workers(2);
    r.register_snapshot_clone::<Bomb>();
    r.register_snapshot_resource::<Fuse>();
    r.insert_resource(Fuse(0));
    let e = r.spawn((Bomb::new(0),));
    r.spawn_batch((1..200).map(|v| (Bomb::new(v),)));
    r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
        let t = r.tick() as u32;
        *r.get_mut::<Bomb>(e).unwrap() = Bomb::new(1000 + t);
        r.insert_resource(Fuse(1000 + t));
    });
    let snapshot = r.snapshot().unwrap();
    run_to(&mut r, 4);
    // Both replaced values go off: the resource's first, then the component's.
    ARMED.store(1003, Ordering::SeqCst);
    FUSE_ARMED.store(1003, Ordering::SeqCst);
    let result = catch_unwind(AssertUnwindSafe(|| r.restore(&snapshot)));
    assert!(result.is_err(), "a Drop's panic is re-raised");
    assert_eq!(ARMED.load(Ordering::SeqCst), u32::MAX, "the bomb went off");
    assert_eq!(
        FUSE_ARMED.load(Ordering::SeqCst),
        u32::MAX,
        "the fuse went off"
    );
    assert_eq!(r.tick(), 0, "the registry is restored");
    assert_eq!(r.get::<Bomb>(e).unwrap().0, 0);
    assert_eq!(r.resource::<Fuse>().unwrap().0, 0);
    assert_eq!(
        live_bombs(),
        base + 200 + 200,
        "the world and the snapshot's copies, no more"
    );
    // It goes on, and restores again.
    run_to(&mut r, 2);
    r.restore(&snapshot).unwrap();
    drop((r, snapshot));
    assert_eq!(live_bombs(), base, "every value dropped once");
}
