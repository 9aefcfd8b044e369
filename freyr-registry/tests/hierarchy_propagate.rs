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
    // Miri gives `sin_cos` a random error on each call (as a real libm may differ between
    // machines); the bits compared here must come from arithmetic it does exactly.
    let (s, c) = if cfg!(miri) {
        (p.1 * 0.5, 1.0 - p.1 * 0.25)
    } else {
        p.1.sin_cos()
    };
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

// Determinism is a native concern; Miri checks the parallel writes through the tests below,
// at 1 and 2 workers (a 16-worker pool is minutes under Miri).
#[test]
#[cfg_attr(miri, ignore)]
fn the_same_bits_for_every_worker_count() {
    let mut hashes = Vec::new();
    let (roots, depth) = (40, 4);
    for workers in [1, 2, 3, 8, 16] {
        let mut r = build(workers, roots, 3, depth);
        let written = r.propagate::<Local, Global>(|l| Global(l.0, l.1), compose);
        let per_tree: usize = (0..=depth).map(|d| 3usize.pow(d as u32)).sum();
        assert_eq!(written, roots * per_tree);
        // Twice: the second pass reads the same locals, so it writes the same values.
        r.propagate::<Local, Global>(|l| Global(l.0, l.1), compose);
        hashes.push((workers, r.world_hash_all().unwrap()));
    }
    for &(workers, hash) in &hashes {
        assert_eq!(hash, hashes[0].1, "{workers} workers differ from 1");
    }
}

#[test]
// Reaches the writes as the tests Miri runs do; native only, to keep CI's Miri lane short.
#[cfg_attr(miri, ignore)]
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
// Reaches the writes as the tests Miri runs do; native only, to keep CI's Miri lane short.
#[cfg_attr(miri, ignore)]
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
// Reaches the writes as the tests Miri runs do; native only, to keep CI's Miri lane short.
#[cfg_attr(miri, ignore)]
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

/// A small forest on two workers (smaller under Miri), for the tests of what a pass does
/// around it.
fn small_forest() -> Registry {
    if cfg!(miri) {
        build(2, 3, 2, 2)
    } else {
        build(2, 8, 3, 3)
    }
}

/// The written chunks are stamped changed at the registry's tick, as `get_mut` stamps them:
/// a change filter sees every written entity, and an entity the pass did not reach is unseen.
#[test]
fn the_written_chunks_are_stamped_changed() {
    let mut r = small_forest();
    let outside = r.spawn((Global([0.0; 3], 0.0),)); // no `Local`: not written
    r.update(0.0);
    let since = r.tick();
    r.update(0.0);
    let written = r.propagate::<Local, Global>(|l| Global(l.0, l.1), compose);
    let mut seen = Vec::new();
    r.query::<&Global>()
        .filter_changed::<Global>(since)
        .each(|e, _| seen.push(e));
    assert_eq!(seen.len(), written);
    assert!(!seen.contains(&outside));
}

/// A pass writes values in place and moves no row, so it leaves the world's layout current: a
/// query run before and after it reads its runs once, and sees the values the pass wrote.
#[test]
fn a_pass_keeps_the_layout_and_queries_see_its_values() {
    let mut r = small_forest();
    let mut before = 0.0;
    r.query::<&Global>().each(|_, g| before += g.1);
    let reads = |r: &Registry| {
        r.query_state::<&Global, ()>()
            .expect("the query ran")
            .layouts_read()
    };
    let read_before = reads(&r);
    let written = r.propagate::<Local, Global>(|l| Global(l.0, l.1), compose);
    assert!(written > 0);
    let (mut through_query, mut through_get) = (Vec::new(), Vec::new());
    r.query::<&Global>()
        .each(|e, g| through_query.push((e, *g)));
    for &(e, _) in &through_query {
        through_get.push((e, *r.get::<Global>(e).unwrap()));
    }
    assert_eq!(reads(&r), read_before, "the pass ended no layout");
    assert_eq!(through_query, through_get);
    assert_ne!(through_query.iter().map(|(_, g)| g.1).sum::<f32>(), before);
}

/// A relation broken through `world_mut` (a child listed by two parents of different trees)
/// cannot make two tasks write one row: a child is reached only from the parent its `ChildOf`
/// names.
#[test]
fn a_child_listed_by_a_second_parent_is_written_once_from_its_own() {
    use freyr::hierarchy::Children;
    let workers_list: &[usize] = if cfg!(miri) { &[1, 2] } else { &[1, 2, 8] };
    for &workers in workers_list {
        let mut r = Registry::with_workers(workers);
        let a = r.spawn((Local([1.0, 0.0, 0.0], 0.0), Global([0.0; 3], 0.0)));
        let b = r.spawn((Local([50.0, 0.0, 0.0], 0.0), Global([0.0; 3], 0.0)));
        let c = r
            .spawn_child(a, (Local([2.0, 0.0, 0.0], 0.0), Global([0.0; 3], 0.0)))
            .unwrap();
        let listed = r.get::<Children>(a).unwrap().clone();
        r.world_mut().insert(b, (listed,)).unwrap();
        let written = r.propagate::<Local, Global>(|l| Global(l.0, l.1), compose);
        assert_eq!(written, 3, "{workers} workers");
        assert_eq!(r.get::<Global>(c).unwrap().0, [3.0, 0.0, 0.0]);
    }
}

/// A replaced value whose `Drop` panics: every other tree is still written, nothing is
/// dropped twice or leaked, and the panic reaches the caller.
#[test]
fn a_panicking_drop_of_a_replaced_value_loses_nothing() {
    use std::sync::atomic::{AtomicIsize, Ordering};
    static LIVE: AtomicIsize = AtomicIsize::new(0);
    struct Tracked(u32, bool);
    impl Tracked {
        fn new(v: u32, bomb: bool) -> Tracked {
            LIVE.fetch_add(1, Ordering::SeqCst);
            Tracked(v, bomb)
        }
    }
    impl Drop for Tracked {
        fn drop(&mut self) {
            LIVE.fetch_sub(1, Ordering::SeqCst);
            if self.1 {
                panic!("boom");
            }
        }
    }
    struct L(u32);
    {
        let mut r = Registry::with_workers(2);
        let mut roots = Vec::new();
        for i in 0..16u32 {
            let root = r.spawn((L(i), Tracked::new(0, i == 5)));
            let child = r.spawn_child(root, (L(1), Tracked::new(0, false))).unwrap();
            roots.push((root, child));
        }
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            r.propagate::<L, Tracked>(
                |l| Tracked::new(l.0 * 10, false),
                |p, l| Tracked::new(p.0 + l.0, false),
            )
        }));
        let err = outcome.unwrap_err();
        assert_eq!(err.downcast_ref::<&str>(), Some(&"boom"));
        for (i, &(root, child)) in roots.iter().enumerate() {
            let i = i as u32;
            // The bomb's own slot got its new value; its tree's later values were dropped.
            assert_eq!(r.get::<Tracked>(root).unwrap().0, i * 10, "root {i}");
            let expect = if i == 5 { 0 } else { i * 10 + 1 };
            assert_eq!(r.get::<Tracked>(child).unwrap().0, expect, "child {i}");
        }
        r.check_hierarchy();
        assert_eq!(LIVE.load(Ordering::SeqCst), 32);
    }
    assert_eq!(LIVE.load(Ordering::SeqCst), 0);
}

/// Passes of two value types in turn (each keeps its own lists between passes) give what a
/// first pass of each gives.
#[test]
fn passes_of_two_value_types_in_turn_keep_apart() {
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Depth(u32);
    impl freyr::StableHash for Depth {
        fn stable_hash(&self, h: &mut StableHasher) {
            self.0.stable_hash(h);
        }
    }
    let (roots, depth) = if cfg!(miri) { (2, 2) } else { (5, 3) };
    let mut r = build(2, roots, 2, depth);
    let mut fresh = build(2, roots, 2, depth);
    for reg in [&mut r, &mut fresh] {
        reg.register_hashable::<Depth>();
        let mut all = Vec::new();
        reg.query::<&Local>().each(|e, _| all.push(e));
        for e in all {
            reg.insert(e, (Depth(0),)).unwrap();
        }
    }
    for _ in 0..3 {
        r.propagate::<Local, Global>(|l| Global(l.0, l.1), compose);
        r.propagate::<Local, Depth>(|_| Depth(0), |p, _| Depth(p.0 + 1));
    }
    fresh.propagate::<Local, Global>(|l| Global(l.0, l.1), compose);
    fresh.propagate::<Local, Depth>(|_| Depth(0), |p, _| Depth(p.0 + 1));
    assert_eq!(r.world_hash_all().unwrap(), fresh.world_hash_all().unwrap());
    let mut deepest = 0;
    r.query::<&Depth>().each(|_, d| deepest = deepest.max(d.0));
    assert_eq!(deepest as usize, depth);
}

/// Every written value is the one a plain recursive walk through `get` and `children` computes,
/// over a forest whose entities lie in several archetypes (some carry a tag, some lack `Local`,
/// some are disabled) and span many chunks, so the walk crosses chunk and archetype boundaries
/// between a parent and its children and between siblings.
#[test]
#[cfg_attr(miri, ignore)]
fn every_value_matches_a_walk_through_get_across_chunks_and_archetypes() {
    use freyr::hierarchy::Disabled;
    #[derive(Clone, Copy)]
    struct Tag;
    fn expected(
        r: &Registry,
        e: freyr::Entity,
        parent: Option<&Global>,
        out: &mut Vec<(freyr::Entity, Global)>,
    ) {
        if r.get::<Disabled>(e).is_ok() {
            return;
        }
        let (Ok(l), Ok(_)) = (r.get::<Local>(e), r.get::<Global>(e)) else {
            return;
        };
        let g = match parent {
            None => Global(l.0, l.1),
            Some(p) => compose(p, l),
        };
        out.push((e, g));
        for &c in r.children(e) {
            expected(r, c, Some(&g), out);
        }
    }
    for workers in [1, 2, 8] {
        let mut r = Registry::with_workers(workers);
        r.register_hierarchy();
        let mut roots = Vec::new();
        let mut k = 0u32;
        for t in 0..30u32 {
            let root = r.spawn((Local([t as f32, 1.0, 0.5], 0.25), Global([0.0; 3], 0.0)));
            roots.push(root);
            // Three chains of 40 and a fan of 20 under each root, spawned interleaved so a
            // chain's links lie apart in memory.
            let mut tips = vec![root; 3];
            for depth in 0..40 {
                for tip in &mut tips {
                    k += 1;
                    let l = Local(
                        [(k % 7) as f32, (k % 5) as f32 * 0.5, 1.0],
                        0.01 * depth as f32,
                    );
                    *tip = match k % 11 {
                        0 => r
                            .spawn_child(*tip, (l, Global([0.0; 3], 0.0), Tag))
                            .unwrap(),
                        // No `Local`: stops the pass for the rest of this chain.
                        5 if depth > 30 => r.spawn_child(*tip, (Global([1.0; 3], 1.0),)).unwrap(),
                        _ => r.spawn_child(*tip, (l, Global([0.0; 3], 0.0))).unwrap(),
                    };
                    if k.is_multiple_of(97) {
                        r.disable(*tip).unwrap();
                    }
                }
            }
            for i in 0..20u32 {
                r.spawn_child(
                    root,
                    (Local([i as f32, 0.0, 0.0], 0.0), Global([0.0; 3], 0.0)),
                )
                .unwrap();
            }
        }
        let written = r.propagate::<Local, Global>(|l| Global(l.0, l.1), compose);
        let mut want = Vec::new();
        for &root in &roots {
            expected(&r, root, None, &mut want);
        }
        assert_eq!(written, want.len(), "{workers} workers");
        assert!(written > 30 * 100, "{written}");
        for (e, g) in want {
            assert_eq!(r.get::<Global>(e), Ok(&g), "{e:?} at {workers} workers");
        }
    }
}
