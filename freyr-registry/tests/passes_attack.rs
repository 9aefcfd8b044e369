//! A hostile user of two passes: event stores across snapshots and restores, and the hierarchy's
//! propagation pass (panics, disabled subtrees, edits between passes, deep chains, `L == G`).
//! The digest and hooks are attacked in `passes_attack_more.rs`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use freyr::{EventCursor, Events, Registry, StableHash};

#[derive(Clone, Debug, PartialEq)]
struct Ev(u32);

/// Reads every `Ev` still readable from `cursor`, as plain numbers.
fn read(r: &Registry, cursor: &mut EventCursor) -> Vec<u32> {
    r.read_events::<Ev>(cursor).map(|e| e.0).collect()
}

/// Runs ticks `from..to` of a fixed script on `r` (an `Ev(t)` sent at ticks 5, 6 and 9, and at
/// every tick a reader reads what is new), and returns what the reader read at each tick.
fn script(r: &mut Registry, cursor: &mut EventCursor, to: u64) -> Vec<(u64, Vec<u32>)> {
    let mut seen = Vec::new();
    while r.tick() < to {
        let t = r.tick();
        if matches!(t, 5 | 6 | 9) {
            r.send_event(Ev(t as u32));
        }
        r.execute_tasks();
        seen.push((t, read(r, cursor)));
        r.update(1.0);
    }
    seen
}

/// An event store first made after a snapshot (by the first sync point that stores an `Ev`):
/// a restore to that snapshot goes back to a moment when no `Ev` existed, so nothing of the
/// replaced timeline is readable afterwards, and the re-simulation reads what the
/// uninterrupted run read, tick by tick, each event kept for its tick and the next only.
#[test]
fn a_store_made_after_the_snapshot_is_gone_after_the_restore() {
    let mut reference = Registry::with_workers(1);
    let mut c = EventCursor::default();
    let expected = script(&mut reference, &mut c, 12);
    // Kept for its tick and the next: 5 at 5, 6 at 6 (5 was read), 9 at 9.
    assert_eq!(expected[5], (5, vec![5]));
    assert_eq!(expected[9], (9, vec![9]));

    let mut r = Registry::with_workers(2);
    let mut c = EventCursor::default();
    assert!(script(&mut r, &mut c, 3).iter().all(|(_, e)| e.is_empty()));
    let snapshot = r.snapshot().unwrap(); // tick 3: no `Events<Ev>` yet
    let mut c_snap = c;
    script(&mut r, &mut c, 11); // the replaced timeline: events at 5, 6, 9; now at tick 11
    r.restore(&snapshot).unwrap();
    assert_eq!(r.tick(), 3);
    // A fresh reader at tick 3 reads nothing: no `Ev` was stored before tick 5.
    let mut fresh = EventCursor::default();
    assert_eq!(
        read(&r, &mut fresh),
        Vec::<u32>::new(),
        "replaced timeline's events"
    );
    assert!(
        r.resource::<Events<Ev>>().is_none_or(|e| e.is_empty()),
        "the replaced timeline's store survives the restore"
    );
    let resim = script(&mut r, &mut c_snap, 12);
    assert_eq!(resim, expected[3..].to_vec());
}

/// Events sent in the tick a restore happens (before it, not yet stored, or stored): a restore
/// at a quiet point keeps no sent-but-unstored event, and events stored in the replaced ticks
/// of a store that was in the snapshot are gone; the numbering restarts where it was.
#[test]
fn events_stored_before_a_restore_in_the_same_tick_are_gone_with_it() {
    let mut r = Registry::with_workers(2);
    r.add_event::<Ev>();
    r.send_event(Ev(1));
    r.execute_tasks();
    r.update(1.0);
    let snapshot = r.snapshot().unwrap();
    let sent_then = r.resource::<Events<Ev>>().unwrap().sent();
    r.send_event(Ev(2));
    // Sent, not stored yet: no quiet point, the restore is refused and changes nothing.
    assert!(matches!(
        r.restore(&snapshot),
        Err(freyr::snapshot::SnapshotError::NotQuiet { .. })
    ));
    r.execute_tasks(); // stored at tick 1, the snapshot's tick
    assert_eq!(r.resource::<Events<Ev>>().unwrap().sent(), sent_then + 1);
    r.restore(&snapshot).unwrap();
    assert_eq!(r.resource::<Events<Ev>>().unwrap().sent(), sent_then);
    let mut c = EventCursor::default();
    assert_eq!(read(&r, &mut c), vec![1]);
    r.send_event(Ev(3));
    r.execute_tasks();
    assert_eq!(read(&r, &mut c), vec![3]);
    assert_eq!(c.position(), sent_then + 1);
}

/// A reader kept for thousands of ticks that reads only now and then: it gets exactly the
/// events of the tick it reads at and the one before, in order, never one twice, and its
/// cursor always ends at the number of events stored so far.
#[test]
fn a_cursor_kept_for_thousands_of_ticks_reads_what_is_kept() {
    let mut r = Registry::with_workers(2);
    let mut c = EventCursor::default();
    let mut stored: Vec<(u64, u32)> = Vec::new(); // (tick, value)
    let mut last_read = 0u64;
    let mut read_so_far: Vec<u32> = Vec::new();
    let mut n = 0u32;
    for t in 0..5000u64 {
        assert_eq!(r.tick(), t);
        // Some ticks send nothing, some several.
        for _ in 0..(t * 7 % 4) {
            r.send_event(Ev(n));
            stored.push((t, n));
            n += 1;
        }
        r.execute_tasks();
        if t % 3 == 0 || t % 11 == 0 {
            let got = read(&r, &mut c);
            let want: Vec<u32> = stored
                .iter()
                .filter(|&&(st, v)| st + 1 >= t && v >= last_read as u32)
                .map(|&(_, v)| v)
                .collect();
            assert_eq!(got, want, "tick {t}");
            assert_eq!(c.position(), u64::from(n), "tick {t}");
            last_read = c.position();
            read_so_far.extend(got);
        }
        r.update(1.0);
    }
    let mut sorted = read_so_far.clone();
    sorted.dedup();
    assert_eq!(sorted, read_so_far, "nothing read twice");
    assert!(read_so_far.len() > 1000);
}

// ---- The propagation pass ----

#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
struct PL(u64);
#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
struct PG(u64);
/// A second value type, computed from the same locals.
#[derive(Clone, Copy, Debug, PartialEq, StableHash)]
struct PD(u64);

const SENTINEL: u64 = 0xdead_beef_dead_beef;

fn at_root(l: &PL) -> PG {
    PG(l.0 ^ 0x5555)
}

fn at_child(p: &PG, l: &PL) -> PG {
    PG(p.0.wrapping_mul(31).rotate_left(7) ^ l.0)
}

fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

fn fresh(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_hashable::<PL>();
    r.register_hashable::<PG>();
    r.register_hashable::<PD>();
    r.register_hierarchy();
    r.register_disabled();
    r
}

/// What the pass documents, by a walk through `get`, `children` and `is_disabled`: every
/// entity it must write, with its value (`G` computed from the parent's by `child`).
fn expected<G: freyr::Component + Copy>(
    r: &mut Registry,
    root: impl Fn(&PL) -> G,
    child: impl Fn(&G, &PL) -> G,
) -> Vec<(freyr::Entity, G)> {
    let mut roots = Vec::new();
    r.query::<(&PL, &G)>().each(|e, _| roots.push(e));
    roots.retain(|&e| r.parent(e).is_none() && !r.is_disabled(e));
    let mut out = Vec::new();
    for e in roots {
        let mut stack = vec![(e, root(r.get::<PL>(e).unwrap()))];
        while let Some((e, g)) = stack.pop() {
            out.push((e, g));
            for &c in r.children(e).iter().rev() {
                let (Ok(l), Ok(_)) = (r.get::<PL>(c), r.get::<G>(c)) else {
                    continue;
                };
                if r.is_disabled(c) {
                    continue;
                }
                stack.push((c, child(&g, l)));
            }
        }
    }
    out
}

/// Sets every `G` to `sentinel`, runs the pass, and checks that exactly the documented entities
/// got their documented values and every other one kept the sentinel (a stale slot kept from an
/// earlier pass would write a row it no longer names).
fn pass_and_check<G: freyr::Component + Copy + PartialEq + core::fmt::Debug>(
    r: &mut Registry,
    sentinel: G,
    root: impl Fn(&PL) -> G + Sync + Copy,
    child: impl Fn(&G, &PL) -> G + Sync + Copy,
    what: &str,
) {
    r.query::<&mut G>().each(|_, g| *g = sentinel);
    let want = expected::<G>(r, root, child);
    let written = r.propagate::<PL, G>(root, child);
    assert_eq!(written, want.len(), "{what}: count");
    let mut untouched = 0;
    r.query::<&G>()
        .each(|_, g| untouched += usize::from(*g == sentinel));
    for &(e, g) in &want {
        assert_eq!(r.get::<G>(e), Ok(&g), "{what}: {e:?}");
    }
    assert_eq!(
        untouched + want.len(),
        r.query::<&G>().count(),
        "{what}: stray writes"
    );
}

/// One random edit of the forest: spawns (roots, children, entities without a local), despawns
/// (whole subtrees), reparenting, detaching, disabling and enabling, and removing or giving
/// back a local or a value. Rows move between chunks and archetypes with every edit.
fn edit(r: &mut Registry, live: &mut Vec<freyr::Entity>, seed: &mut u64) {
    live.retain(|&e| r.contains(e));
    let pick = |seed: &mut u64, live: &[freyr::Entity]| live[xorshift(seed) as usize % live.len()];
    let op = if live.len() < 4 {
        0
    } else {
        xorshift(seed) % 10
    };
    let v = xorshift(seed) % 1000;
    match op {
        0 => live.push(r.spawn((PL(v), PG(0), PD(0)))),
        1 | 2 => {
            let p = pick(seed, live);
            live.push(r.spawn_child(p, (PL(v), PG(0), PD(0))).unwrap());
        }
        3 => drop(r.despawn(pick(seed, live))),
        4 => {
            let (a, b) = (pick(seed, live), pick(seed, live));
            let _ = r.set_parent(a, b); // a cycle is refused
        }
        5 => drop(r.remove_parent(pick(seed, live))),
        6 => drop(r.disable(pick(seed, live))),
        7 => drop(r.enable(pick(seed, live))),
        8 => {
            let e = pick(seed, live);
            let local = v.is_multiple_of(2);
            if local && r.get::<PL>(e).is_ok() {
                r.remove::<(PL,)>(e).unwrap();
            } else if local {
                r.insert(e, (PL(v),)).unwrap();
            } else if r.get::<PG>(e).is_ok() {
                r.remove::<(PG,)>(e).unwrap();
            } else {
                r.insert(e, (PG(0),)).unwrap();
            }
        }
        _ => {
            let p = pick(seed, live);
            live.push(r.spawn_child(p, (PG(0),)).unwrap()); // no local: stops the pass there
        }
    }
}

/// Trees edited between passes, passes of two value types interleaved: every pass writes
/// exactly what a walk of the current forest gives (the lists kept from the last pass of each
/// type leak no stale slot), and the worlds are the same bits for 1, 2, 8 and 16 workers.
#[test]
fn passes_between_edits_write_exactly_the_current_forest() {
    let rounds = if cfg!(miri) { 3 } else { 60 };
    let mut hashes: Vec<Vec<u64>> = Vec::new();
    for workers in [1, 2, 8, 16] {
        let mut r = fresh(workers);
        let mut live = Vec::new();
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut per_round = Vec::new();
        for round in 0..rounds {
            for _ in 0..(xorshift(&mut seed) % 40) {
                edit(&mut r, &mut live, &mut seed);
            }
            if round % 5 == 0 {
                // Many more rows: the next passes' lists must grow, then shrink again.
                for _ in 0..300 {
                    edit(&mut r, &mut live, &mut seed);
                }
            }
            let what = format!("{workers} workers, round {round}");
            pass_and_check(&mut r, PG(SENTINEL), at_root, at_child, &what);
            pass_and_check(&mut r, PD(SENTINEL), |_| PD(0), |p, _| PD(p.0 + 1), &what);
            r.check_hierarchy();
            per_round.push(r.world_hash_all().unwrap());
        }
        hashes.push(per_round);
    }
    for h in &hashes[1..] {
        assert_eq!(h, &hashes[0], "the same bits for every worker count");
    }
}

/// A forest of `n` roots, each with a chain of three below; returns the roots.
fn forest(workers: usize, n: u64) -> (Registry, Vec<freyr::Entity>) {
    let mut r = fresh(workers);
    let mut roots = Vec::new();
    for i in 0..n {
        let root = r.spawn((PL(i), PG(0)));
        let mut at = root;
        for k in 0..3 {
            at = r.spawn_child(at, (PL(i * 10 + k), PG(0))).unwrap();
        }
        roots.push(root);
    }
    (r, roots)
}

/// `root` or `child` panicking for one tree only (one worker's share): nothing is written, a
/// panic of the callbacks is re-raised, the registry stays usable, and the next pass gives what
/// a pass of an untouched registry gives — at 1, 2, 8 and 16 workers.
#[test]
fn a_callback_panicking_in_one_tree_writes_nothing_at_any_worker_count() {
    for workers in [1, 2, 8, 16] {
        for in_root in [false, true] {
            let (mut r, _) = forest(workers, 40);
            r.propagate::<PL, PG>(at_root, at_child);
            r.query::<&mut PG>().each(|_, g| g.0 = g.0.wrapping_add(1)); // not a pass's values
            let before = r.digest().unwrap();
            let hash = r.world_hash_all().unwrap();
            let caught = catch_unwind(AssertUnwindSafe(|| {
                r.propagate::<PL, PG>(
                    |l| {
                        assert!(!in_root || l.0 != 37, "root of tree 37");
                        at_root(l)
                    },
                    |p, l| {
                        assert!(in_root || l.0 != 171, "child of tree 17");
                        assert!(in_root || l.0 != 292, "child of tree 29");
                        at_child(p, l)
                    },
                )
            }));
            let payload = caught.expect_err("the panic reaches the caller");
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            assert!(msg.contains("tree"), "{workers} workers: re-raised {msg:?}");
            assert_eq!(
                r.world_hash_all().unwrap(),
                hash,
                "{workers} workers: written"
            );
            assert_eq!(r.digest().unwrap(), before);
            // Usable, and the same as a registry that never saw the panic.
            let (mut clean, _) = forest(workers, 40);
            clean.propagate::<PL, PG>(at_root, at_child);
            assert_eq!(r.propagate::<PL, PG>(at_root, at_child), 160);
            assert_eq!(r.world_hash_all(), clean.world_hash_all());
            r.check_hierarchy();
        }
    }
}

/// A `G` whose `Drop` panics for one old value in the middle of a chain (and in a second
/// tree): as documented, that entity and those written before it in its tree get their new
/// values, the rest of its tree keeps its old values, every other tree is written, one panic
/// is re-raised, and no value is dropped twice or leaked; at 1, 2, 8 and 16 workers.
#[test]
fn a_panicking_drop_mid_chain_keeps_the_rest_of_that_tree_only() {
    use std::sync::atomic::{AtomicIsize, Ordering};
    static LIVE: AtomicIsize = AtomicIsize::new(0);
    struct Bomb(u64, bool);
    impl Bomb {
        fn new(v: u64, armed: bool) -> Bomb {
            LIVE.fetch_add(1, Ordering::SeqCst);
            Bomb(v, armed)
        }
    }
    impl Drop for Bomb {
        fn drop(&mut self) {
            LIVE.fetch_sub(1, Ordering::SeqCst);
            if self.1 {
                panic!("bomb {}", self.0);
            }
        }
    }
    for workers in [1, 2, 8, 16] {
        {
            let mut r = Registry::with_workers(workers);
            let mut chains = Vec::new();
            for t in 0..12u64 {
                let root = r.spawn((PL(t), Bomb::new(0, false)));
                let mut chain = vec![root];
                for k in 1..5u64 {
                    // Trees 3 and 9 hold an armed old value at depth 2.
                    let armed = (t == 3 || t == 9) && k == 2;
                    let at = *chain.last().unwrap();
                    chain.push(r.spawn_child(at, (PL(1), Bomb::new(0, armed))).unwrap());
                }
                chains.push(chain);
            }
            let caught = catch_unwind(AssertUnwindSafe(|| {
                r.propagate::<PL, Bomb>(
                    |l| Bomb::new(l.0 * 100, false),
                    |p, l| Bomb::new(p.0 + l.0, false),
                )
            }));
            let payload = caught.expect_err("the drop's panic reaches the caller");
            let msg = payload.downcast_ref::<String>().unwrap();
            assert!(msg == "bomb 0", "{workers} workers: {msg}");
            for (t, chain) in chains.iter().enumerate() {
                let t = t as u64;
                for (k, &e) in chain.iter().enumerate() {
                    let k = k as u64;
                    let new = t * 100 + k;
                    let want = if (t == 3 || t == 9) && k > 2 { 0 } else { new };
                    assert_eq!(
                        r.get::<Bomb>(e).unwrap().0,
                        want,
                        "{workers}: tree {t} depth {k}"
                    );
                }
            }
            assert_eq!(LIVE.load(Ordering::SeqCst), 60, "{workers} workers");
            // The next pass writes everything.
            assert_eq!(
                r.propagate::<PL, Bomb>(|l| Bomb::new(l.0, false), |p, _| Bomb::new(p.0, false)),
                60
            );
            assert_eq!(LIVE.load(Ordering::SeqCst), 60);
        }
        assert_eq!(LIVE.load(Ordering::SeqCst), 0, "{workers} workers: leaked");
    }
}

/// Disabled subtrees toggled between passes: a disabled entity and everything below it are
/// neither written nor read, and come back on the pass after `enable`; a disabled root is no
/// root, and a forest whose only root is disabled has no root at all (the pass writes nothing,
/// even with lists kept from a larger pass).
#[test]
fn disabled_subtrees_toggled_between_passes_and_zero_roots() {
    for workers in [1, 2, 8] {
        let (mut r, roots) = forest(workers, 20);
        let mut seed = 99u64;
        for round in 0..30 {
            let e = roots[xorshift(&mut seed) as usize % roots.len()];
            let below = r.children(e).to_vec();
            let target = if round % 2 == 0 { e } else { below[0] };
            if r.is_disabled(target) {
                r.enable(target).unwrap();
            } else {
                r.disable(target).unwrap();
            }
            let what = format!("{workers} workers, round {round}");
            pass_and_check(&mut r, PG(SENTINEL), at_root, at_child, &what);
        }
        for &e in &roots {
            r.disable(e).unwrap();
        }
        let before = r.world_hash_all().unwrap();
        assert_eq!(r.propagate::<PL, PG>(at_root, at_child), 0);
        assert_eq!(
            r.world_hash_all().unwrap(),
            before,
            "no root: nothing written"
        );
        pass_and_check(&mut r, PG(SENTINEL), at_root, at_child, "all disabled");
        for &e in &roots {
            r.enable(e).unwrap();
        }
        pass_and_check(&mut r, PG(SENTINEL), at_root, at_child, "all enabled again");
        // No entity at all, then a pass of a type never stored.
        let mut empty = fresh(workers);
        assert_eq!(empty.propagate::<PL, PG>(at_root, at_child), 0);
        empty.spawn((PL(1),));
        assert_eq!(empty.propagate::<PL, PG>(at_root, at_child), 0);
    }
}

/// `L` and `G` the same type: each value becomes its parent's new value combined with its own
/// old one (every read of the compute sees the old values, the writes come after), the same
/// for every worker count.
#[test]
fn local_and_global_of_one_type_read_old_values_and_write_new_ones() {
    let mut results = Vec::new();
    for workers in [1, 2, 8, 16] {
        let mut r = fresh(workers);
        let mut chains = Vec::new();
        for t in 0..10u64 {
            let mut chain = vec![r.spawn((PL(t + 1),))];
            for k in 0..600u64 {
                let at = *chain.last().unwrap();
                chain.push(r.spawn_child(at, (PL(k % 7 + 1),)).unwrap());
            }
            chains.push(chain);
        }
        let old: Vec<Vec<u64>> = chains
            .iter()
            .map(|c| c.iter().map(|&e| r.get::<PL>(e).unwrap().0).collect())
            .collect();
        assert_eq!(
            r.propagate::<PL, PL>(|l| PL(l.0 * 2), |p, l| PL(p.0 + l.0)),
            6010
        );
        for (chain, old) in chains.iter().zip(&old) {
            let mut acc = 0;
            for (i, (&e, &o)) in chain.iter().zip(old).enumerate() {
                acc = if i == 0 { o * 2 } else { acc + o };
                assert_eq!(r.get::<PL>(e), Ok(&PL(acc)), "{workers} workers, link {i}");
            }
        }
        results.push(r.world_hash_all().unwrap());
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]));
}

/// A chain of 100,000 links, cut by a disabled link half-way and passed at 16 workers: no
/// stack overflow, the part above the cut is written, the part below is not; enabled again,
/// all of it is.
#[test]
#[cfg_attr(miri, ignore)]
fn a_hundred_thousand_link_chain_cut_by_a_disabled_link() {
    const DEPTH: usize = if cfg!(freyr_tsan) { 20_000 } else { 100_000 };
    let mut r = fresh(16);
    let mut chain = vec![r.spawn((PL(1), PG(0)))];
    for _ in 1..DEPTH {
        let at = *chain.last().unwrap();
        chain.push(r.spawn_child(at, (PL(1), PG(0))).unwrap());
    }
    let cut = chain[DEPTH / 2];
    r.disable(cut).unwrap();
    let count = |p: &PG, l: &PL| PG(p.0 + l.0);
    assert_eq!(r.propagate::<PL, PG>(|l| PG(l.0), count), DEPTH / 2);
    assert_eq!(
        r.get::<PG>(chain[DEPTH / 2 - 1]),
        Ok(&PG((DEPTH / 2) as u64))
    );
    assert_eq!(r.get::<PG>(*chain.last().unwrap()), Ok(&PG(0)));
    r.enable(cut).unwrap();
    assert_eq!(r.propagate::<PL, PG>(|l| PG(l.0), count), DEPTH);
    assert_eq!(r.get::<PG>(*chain.last().unwrap()), Ok(&PG(DEPTH as u64)));
}
