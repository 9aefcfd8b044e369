//! The parent-to-child pass gives the same bits for 1, 2, 3, 8 and 16 workers, goes down any
//! depth, skips what it documents it skips, and writes nothing when a callback panics.

use freyr::Registry;
use freyr::hash::StableHasher;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Local([f32; 3], f32);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Global([f32; 3], f32);

impl freyr::StableHash for Global {
    fn stable_hash(&self, h: &mut StableHasher) {
        for x in self.0 {
            x.stable_hash(h);
        }
        self.1.stable_hash(h);
    }
}

fn compose(p: &Global, l: &Local) -> Global {
    let (s, c) = p.1.sin_cos();
    let x = l.0[0] * c - l.0[1] * s + p.0[0];
    let y = l.0[0] * s + l.0[1] * c + p.0[1];
    Global([x, y, l.0[2] + p.0[2]], p.1 + l.1)
}

/// A forest of `roots` trees, each branching `fan` wide and `depth` deep, with values from a
/// fixed sequence.
fn build(workers: usize, roots: usize, fan: usize, depth: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_hashable::<Global>();
    r.exclude_from_hash::<Local>();
    r.register_hierarchy();
    let mut seed = 0x9e37_79b9_u32;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        (seed % 1000) as f32 / 97.0
    };
    for _ in 0..roots {
        let root = r.spawn((
            Local([next(), next(), next()], next()),
            Global([0.0; 3], 0.0),
        ));
        let mut level = vec![root];
        for _ in 0..depth {
            let mut below = Vec::new();
            for &p in &level {
                for _ in 0..fan {
                    let l = Local([next(), next(), next()], next() * 0.01);
                    below.push(r.spawn_child(p, (l, Global([0.0; 3], 0.0))).unwrap());
                }
            }
            level = below;
        }
    }
    r
}

#[test]
fn the_same_bits_for_every_worker_count() {
    let mut hashes = Vec::new();
    for workers in [1, 2, 3, 8, 16] {
        let mut r = build(workers, 40, 3, 4);
        let written = r.propagate::<Local, Global>(|l| Global(l.0, l.1), compose);
        assert_eq!(written, 40 * (1 + 3 + 9 + 27 + 81));
        // Twice: the second pass reads the same locals, so it writes the same values.
        r.propagate::<Local, Global>(|l| Global(l.0, l.1), compose);
        hashes.push((workers, r.world_hash_all().unwrap()));
    }
    for &(workers, hash) in &hashes {
        assert_eq!(hash, hashes[0].1, "{workers} workers differ from 1");
    }
}

#[test]
fn the_values_are_the_composition_down_the_tree() {
    let mut r = Registry::with_workers(3);
    let a = r.spawn((Local([1.0, 0.0, 0.0], 0.0), Global([0.0; 3], 0.0)));
    let b = r
        .spawn_child(a, (Local([0.0, 2.0, 0.0], 0.0), Global([0.0; 3], 0.0)))
        .unwrap();
    // No `Local`: the pass stops here, and `c`'s child is not reached.
    let c = r.spawn_child(a, (Global([9.0; 3], 9.0),)).unwrap();
    let c1 = r
        .spawn_child(c, (Local([1.0; 3], 0.0), Global([7.0; 3], 7.0)))
        .unwrap();
    // Disabled: skipped with its subtree.
    let d = r
        .spawn_child(b, (Local([5.0; 3], 0.0), Global([3.0; 3], 3.0)))
        .unwrap();
    r.disable(d).unwrap();
    let written = r.propagate::<Local, Global>(|l| Global(l.0, l.1), compose);
    assert_eq!(written, 2);
    assert_eq!(r.get::<Global>(a), Ok(&Global([1.0, 0.0, 0.0], 0.0)));
    assert_eq!(r.get::<Global>(b), Ok(&Global([1.0, 2.0, 0.0], 0.0)));
    assert_eq!(r.get::<Global>(c), Ok(&Global([9.0; 3], 9.0)));
    assert_eq!(r.get::<Global>(c1), Ok(&Global([7.0; 3], 7.0)));
    assert_eq!(r.get::<Global>(d), Ok(&Global([3.0; 3], 3.0)));
}

#[test]
fn a_deep_chain_propagates_without_recursion() {
    // Deep enough to overflow a recursive walk's stack; ThreadSanitizer (`--cfg freyr_tsan`,
    // CI's TSan step) walks a fifth of it (its instrumented frames are larger still).
    const DEPTH: u32 = if cfg!(freyr_tsan) { 20_000 } else { 100_000 };
    let mut r = Registry::with_workers(2);
    let mut at = r.spawn((Local([1.0, 0.0, 0.0], 0.0), Global([0.0; 3], 0.0)));
    for _ in 1..DEPTH {
        at = r
            .spawn_child(at, (Local([1.0, 0.0, 0.0], 0.0), Global([0.0; 3], 0.0)))
            .unwrap();
    }
    assert_eq!(
        r.propagate::<Local, Global>(|l| Global(l.0, l.1), compose),
        DEPTH as usize
    );
    assert_eq!(r.get::<Global>(at).unwrap().0[0], DEPTH as f32);
}

#[test]
fn a_panicking_callback_writes_nothing() {
    for workers in [1, 2, 8] {
        let mut r = build(workers, 8, 2, 3);
        r.propagate::<Local, Global>(|l| Global(l.0, l.1), compose);
        let before = r.world_hash_all().unwrap();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            r.propagate::<Local, Global>(
                |l| Global([l.0[0] + 1.0, 0.0, 0.0], 0.0),
                |p, l| {
                    assert!(l.1 < 0.05, "a bad local");
                    compose(p, l)
                },
            )
        }));
        assert!(outcome.is_err());
        assert_eq!(r.world_hash_all().unwrap(), before, "{workers} workers");
        // The registry stays usable.
        r.propagate::<Local, Global>(|l| Global(l.0, l.1), compose);
        assert_eq!(r.world_hash_all().unwrap(), before);
    }
}
