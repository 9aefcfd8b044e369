//! Where a registry restore copies to: a plain-copy world into its own chunk memory (nothing
//! kept aside), any other into the memory the last replaced world left
//! ([`Registry::spare_memory`]); every value dropped exactly once, a panicking `Clone` changing
//! nothing and a panicking `Drop` of a replaced value leaving the registry fully restored.
//! Small sizes under Miri.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr::storage::CHUNK_CAPACITY;
use freyr::{Entity, Registry};

/// Rows: at least two chunks, so more than one slab (slabs double from one chunk).
const N: u64 = if cfg!(miri) {
    CHUNK_CAPACITY as u64 + 18
} else {
    5000
};
/// A row in the second chunk (so the second slab) that no test moves.
const IN_SECOND_SLAB: usize = CHUNK_CAPACITY + 8;
const WORKERS: &[usize] = if cfg!(miri) { &[2] } else { &[1, 2, 3] };

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(u64);

static CLONES: AtomicUsize = AtomicUsize::new(0);
static DROPS: AtomicUsize = AtomicUsize::new(0);
static CLONE_PANICS_AT: AtomicUsize = AtomicUsize::new(usize::MAX);
static DROP_PANICS_AT: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The tests count `Name`s, so they run one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A heap value that counts its clones and drops; the clone (drop) numbered
/// `CLONE_PANICS_AT` (`DROP_PANICS_AT`) panics, the drop after counting itself.
#[derive(Debug, PartialEq)]
struct Name(Box<u64>);
impl Clone for Name {
    fn clone(&self) -> Self {
        let n = CLONES.fetch_add(1, Ordering::SeqCst);
        if n == CLONE_PANICS_AT.load(Ordering::SeqCst) {
            panic!("clone {n} fails");
        }
        Name(self.0.clone())
    }
}
impl Drop for Name {
    fn drop(&mut self) {
        let n = DROPS.fetch_add(1, Ordering::SeqCst);
        if n == DROP_PANICS_AT.load(Ordering::SeqCst) {
            panic!("drop {n} fails");
        }
    }
}

fn registry(workers: usize, names: bool) -> (Registry, Vec<Entity>) {
    let mut r = Registry::with_workers(workers);
    r.register_snapshot_copy::<Pos>();
    r.register_snapshot_clone::<Name>();
    let ids = match names {
        true => r.spawn_batch((0..N).map(|i| (Pos(i), Name(Box::new(i))))),
        false => r.spawn_batch((0..N).map(|i| (Pos(i),))),
    };
    (r, ids)
}

/// After the snapshot: values change, entities come and go, a tick passes.
fn advance(r: &mut Registry, ids: &[Entity]) {
    r.query::<&mut Pos>().each(|_, p| p.0 += 1000);
    r.despawn(ids[2]).unwrap();
    r.spawn_batch((0..N + CHUNK_CAPACITY as u64 + 88).map(|i| (Pos(i),))); // past the snapshot's slabs
    r.update(0.1);
}

fn pos_at(r: &Registry, e: Entity) -> *const Pos {
    r.get::<Pos>(e).unwrap()
}

/// Every entity's values, in iteration order.
fn values(r: &mut Registry) -> Vec<(Entity, u64, Option<u64>)> {
    let mut out = Vec::new();
    r.query::<(&Pos, Option<&Name>)>()
        .each(|e, (p, n)| out.push((e, p.0, n.map(|n| *n.0))));
    out
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn a_plain_copy_world_is_restored_in_its_own_memory() {
    let _one = lock();
    for &workers in WORKERS {
        let (mut r, ids) = registry(workers, false);
        let snapshot = r.snapshot().unwrap();
        let (at_s, address) = (values(&mut r), pos_at(&r, ids[IN_SECOND_SLAB]));
        for _ in 0..3 {
            advance(&mut r, &ids);
            r.restore(&snapshot).unwrap();
            assert_eq!(values(&mut r), at_s, "{workers} workers");
            assert_eq!(pos_at(&r, ids[IN_SECOND_SLAB]), address, "the same slab");
            assert_eq!(r.spare_memory(), 0, "no second world's memory is kept");
            assert_eq!(r.tick(), 0);
        }
    }
}

#[test]
fn values_with_drop_glue_are_restored_into_the_last_replaced_memory() {
    let _one = lock();
    for &workers in WORKERS {
        let (clones, drops) = (CLONES.load(Ordering::SeqCst), DROPS.load(Ordering::SeqCst));
        let (mut r, ids) = registry(workers, true);
        let snapshot = r.snapshot().unwrap();
        let at_s = values(&mut r);
        let mut seen = vec![pos_at(&r, ids[IN_SECOND_SLAB])];
        for _ in 0..4 {
            advance(&mut r, &ids);
            r.restore(&snapshot).unwrap();
            assert_eq!(values(&mut r), at_s, "{workers} workers");
            assert!(r.spare_memory() > 0, "the replaced world's slabs are kept");
            seen.push(pos_at(&r, ids[IN_SECOND_SLAB]));
        }
        // The first restore's slabs are fresh (the world it replaces is still alive); each
        // later one copies into the slabs of the world replaced one restore before.
        assert_eq!((seen[2], seen[3], seen[4]), (seen[0], seen[1], seen[0]));
        let kept = r.spare_memory();
        assert_eq!(r.release_spare_memory(), kept);
        assert_eq!(r.spare_memory(), 0);
        drop((r, snapshot));
        let made = N as usize + (CLONES.load(Ordering::SeqCst) - clones);
        let dropped = DROPS.load(Ordering::SeqCst) - drops;
        assert_eq!(dropped, made, "each value once, {workers} workers");
    }
}

#[test]
fn a_panicking_clone_changes_nothing() {
    let _one = lock();
    let (clones, drops) = (CLONES.load(Ordering::SeqCst), DROPS.load(Ordering::SeqCst));
    let (mut r, ids) = registry(2, true);
    let snapshot = r.snapshot().unwrap();
    let at_s = values(&mut r);
    advance(&mut r, &ids);
    r.restore(&snapshot).unwrap(); // leaves a replaced world's memory to take
    advance(&mut r, &ids);
    let (current, tick, kept) = (values(&mut r), r.tick(), r.spare_memory());
    assert!(kept > 0);
    CLONE_PANICS_AT.store(
        CLONES.load(Ordering::SeqCst) + N as usize / 2,
        Ordering::SeqCst,
    );
    let run = catch_unwind(AssertUnwindSafe(|| r.restore(&snapshot)));
    CLONE_PANICS_AT.store(usize::MAX, Ordering::SeqCst);
    assert!(run.is_err(), "the panic is re-raised");
    assert_eq!((values(&mut r), r.tick()), (current, tick), "unchanged");
    r.restore(&snapshot).unwrap();
    assert_eq!(values(&mut r), at_s);
    drop((r, snapshot));
    let made = N as usize + (CLONES.load(Ordering::SeqCst) - clones) - 1;
    assert_eq!(
        DROPS.load(Ordering::SeqCst) - drops,
        made,
        "each value once"
    );
}

#[test]
fn a_panicking_drop_of_a_replaced_value_leaves_the_registry_restored() {
    let _one = lock();
    let (clones, drops) = (CLONES.load(Ordering::SeqCst), DROPS.load(Ordering::SeqCst));
    let (mut r, ids) = registry(2, true);
    let snapshot = r.snapshot().unwrap();
    let at_s = values(&mut r);
    advance(&mut r, &ids);
    DROP_PANICS_AT.store(DROPS.load(Ordering::SeqCst) + 10, Ordering::SeqCst);
    let run = catch_unwind(AssertUnwindSafe(|| r.restore(&snapshot)));
    DROP_PANICS_AT.store(usize::MAX, Ordering::SeqCst);
    assert!(run.is_err(), "the panic is re-raised");
    assert_eq!(
        (values(&mut r), r.tick()),
        (at_s.clone(), 0),
        "fully restored"
    );
    // The replaced world's other values were dropped all the same (and the one despawned).
    assert_eq!(DROPS.load(Ordering::SeqCst) - drops, N as usize);
    advance(&mut r, &ids);
    r.restore(&snapshot).unwrap();
    assert_eq!(values(&mut r), at_s);
    drop((r, snapshot));
    let made = N as usize + (CLONES.load(Ordering::SeqCst) - clones);
    assert_eq!(
        DROPS.load(Ordering::SeqCst) - drops,
        made,
        "each value once"
    );
}
