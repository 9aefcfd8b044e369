//! A warm [`SnapshotRing`] allocates nothing per push while the world's layout stays the same:
//! every buffer (component table, allocator, columns, resources) is reused. Counted with a
//! global allocator that tallies every thread's allocations (its own test binary, one test,
//! since it installs the allocator and counts process-wide).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr::snapshot::SnapshotRing;
use freyr::{Phase, Registry};

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

/// Counts allocations and reallocations of every thread.
struct Counting;

// SAFETY: every call is forwarded to `System` unchanged; counting touches only an atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

#[derive(Clone, Copy)]
struct Pos([f32; 4]);
#[derive(Clone, Copy)]
struct Vel([f32; 4]);
/// Copied with `Clone` (no heap inside, so its clone does not allocate).
#[derive(Clone)]
struct Health {
    hp: u32,
    shield: u64,
}
struct Inputs(Vec<u8>);

/// `clone_from` reuses the kept value's memory (a derived `Clone` would allocate a new `Vec`).
impl Clone for Inputs {
    fn clone(&self) -> Self {
        Inputs(self.0.clone())
    }

    fn clone_from(&mut self, source: &Self) {
        self.0.clone_from(&source.0);
    }
}

#[test]
fn a_warm_ring_allocates_nothing_per_push() {
    let entities = if cfg!(miri) { 600 } else { 20_000 };
    let capacity = 8;
    for workers in [1, 3] {
        let mut registry = Registry::with_workers(workers);
        registry.register_snapshot_copy::<Pos>();
        registry.register_snapshot_copy::<Vel>();
        registry.register_snapshot_clone::<Health>();
        registry.register_snapshot_resource::<Inputs>();
        registry.insert_resource(Inputs(vec![0; 64]));
        registry.spawn_batch((0..entities).map(|i| {
            let health = Health { hp: i, shield: 0 };
            (Pos([i as f32; 4]), Vel([1.0; 4]), health)
        }));
        registry.spawn_batch((0..10).map(|_| (Pos([0.0; 4]),))); // a second archetype
        registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
            r.query::<(&mut Pos, &Vel, &mut Health)>()
                .each_async(|_, (p, v, h)| {
                    p.0[0] += v.0[0];
                    h.shield += u64::from(h.hp);
                });
            let tick = r.tick() as u8;
            r.resource_mut::<Inputs>().unwrap().0.fill(tick);
        });
        let mut ring = SnapshotRing::new(capacity);
        let mut per_push = Vec::new();
        for tick in 0..3 * capacity {
            let before = ALLOCATIONS.load(Ordering::SeqCst);
            ring.push(&registry).unwrap();
            let allocated = ALLOCATIONS.load(Ordering::SeqCst) - before;
            if tick >= capacity {
                per_push.push(allocated);
            }
            registry.update(0.016);
        }
        assert!(
            per_push.iter().all(|&n| n == 0),
            "{workers} workers: {per_push:?}"
        );
        // The ring still restores what it holds.
        let tick = registry.tick() - 2;
        ring.restore(&mut registry, tick).unwrap();
        assert_eq!(
            registry.resource::<Inputs>().unwrap().0[0],
            (tick - 1) as u8
        );
    }
}
