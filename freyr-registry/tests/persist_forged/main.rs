//! Forged files: exports and saves with a correct checksum whose content is wrong (a type
//! named twice in one set, indices out of range, counts that disagree with their lists, an
//! entity in two places, unknown names and versions, ...). `import` and `load_into` refuse each
//! with a typed error and leave the registry as it was: entity count, world hash, tick, next
//! ids, and every value of a drop-counting component dropped exactly once. An import spawns in
//! export order whatever the archetypes. Small sizes under Miri.

mod forge;
mod model;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use forge::{
    EXPORT_KINDS, EXPORT_MAY_PASS, EXPORT_STACKABLE, Rng, SAVE_KINDS, SAVE_MAY_PASS,
    SAVE_STACKABLE, forge_export, forge_save,
};
use freyr::persist::LoadError;
use freyr::persist::bytemuck::{Pod, Zeroable};
use freyr::{Entity, Registry, StableHash};
use model::{Export, Framed, Save, frame, unframe};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone, Copy, Debug, PartialEq, StableHash, Serialize, Deserialize)]
struct Hp(u32);
#[derive(Clone, Debug, PartialEq, StableHash, Serialize, Deserialize)]
struct Name(String);
#[derive(Clone, Copy, Debug, PartialEq, StableHash, Pod, Zeroable)]
#[bytemuck(crate = "freyr::persist::bytemuck")]
#[repr(C)]
struct Pos([f32; 2]);
/// Not persistent: an entity with only this is exported with no type.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Local(u8);

/// Values of `Tally` made (constructed, cloned or decoded) less those dropped.
static LIVE: AtomicI64 = AtomicI64::new(0);
/// The tests of this file count `Tally` values one at a time.
static COUNTING: Mutex<()> = Mutex::new(());

/// A persistent component whose values are counted: a leak or a double drop shows in [`LIVE`].
#[derive(Debug, PartialEq, StableHash)]
struct Tally(u32);

impl Tally {
    fn new(v: u32) -> Tally {
        LIVE.fetch_add(1, Ordering::Relaxed);
        Tally(v)
    }
}

impl Clone for Tally {
    fn clone(&self) -> Tally {
        Tally::new(self.0)
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Serialize for Tally {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Tally {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tally, D::Error> {
        u32::deserialize(d).map(Tally::new)
    }
}

/// Forged files a test tries: 4,000; under Miri one of each kind of forgery (`kinds`).
fn cases(kinds: usize) -> usize {
    if cfg!(miri) { kinds } else { 4000 }
}

/// Registers the persistent types, in table order, or reversed.
fn persistent(r: &mut Registry, reversed: bool) {
    let mut steps: [fn(&mut Registry); 4] = [
        |r| r.register_persistent::<Hp>("test.hp", 1),
        |r| r.register_persistent::<Name>("test.name", 1),
        |r| r.register_persistent_pod::<Pos>("test.pos", 1),
        |r| r.register_persistent::<Tally>("test.tally", 1),
    ];
    if reversed {
        steps.reverse();
    }
    steps.iter().for_each(|step| step(r));
}

/// Gives `e` the components whose bits are set in `mask` (Hp, Name, Pos, Tally, Local).
fn dress(r: &mut Registry, e: Entity, mask: usize, v: u32) {
    if mask & 1 != 0 {
        r.insert(e, (Hp(v),)).unwrap();
    }
    if mask & 2 != 0 {
        r.insert(e, (Name(format!("n{v}")),)).unwrap();
    }
    if mask & 4 != 0 {
        r.insert(e, (Pos([v as f32, 1.0]),)).unwrap();
    }
    if mask & 8 != 0 {
        r.insert(e, (Tally::new(v),)).unwrap();
    }
    if mask & 16 != 0 {
        r.insert(e, (Local(v as u8),)).unwrap();
    }
}

/// A registry of `n` entities with random sets of components (with `Local` if `local`), some
/// despawned, and its live entities in a random order.
fn populated(rng: &mut Rng, n: usize, local: bool) -> (Registry, Vec<Entity>) {
    let mut r = Registry::with_workers(1);
    persistent(&mut r, rng.coin());
    let mut live = Vec::new();
    for i in 0..n {
        let e = r.spawn(());
        dress(&mut r, e, rng.below(if local { 32 } else { 16 }), i as u32);
        live.push(e);
    }
    for _ in 0..n / 5 {
        let e = live.swap_remove(rng.below(live.len()));
        r.despawn(e).unwrap();
    }
    for i in (1..live.len()).rev() {
        live.swap(i, rng.below(i + 1));
    }
    (r, live)
}

/// What must not change when a file is refused.
#[derive(Debug, PartialEq)]
struct State {
    len: usize,
    hash: u64,
    tick: u64,
    next: Vec<Entity>,
    /// `Tally` values alive anywhere, less those in `r`.
    tallies_elsewhere: i64,
}

fn tallies(r: &mut Registry) -> i64 {
    let mut n = 0;
    r.query::<&Tally>().each(|_, _| n += 1);
    n
}

fn state(r: &mut Registry) -> State {
    State {
        len: r.len(),
        hash: r.world_hash::<(Hp, Name, Pos, Tally)>(),
        tick: r.tick(),
        next: r.world().next_spawn_ids(3),
        tallies_elsewhere: LIVE.load(Ordering::Relaxed) - tallies(r),
    }
}

/// A registry to import into: a few entities of its own, a freed id, and, if `hooked`, a hook
/// (so the import goes through `Registry::insert`).
fn receiver(hooked: bool, reversed: bool) -> Registry {
    let mut r = Registry::with_workers(1);
    persistent(&mut r, reversed);
    r.spawn((Hp(100), Tally::new(100)));
    let gone = r.spawn((Name("gone".into()),));
    r.spawn((Pos([0.0, 0.0]),));
    r.despawn(gone).unwrap();
    if hooked {
        r.on_add::<Hp>(|_, _| {});
    }
    r
}

/// Every entity of `r` in iteration order (archetypes in creation order, rows in order).
fn every_row(r: &Registry) -> Vec<Entity> {
    let world = r.world();
    let chunks = world.archetypes().iter().flat_map(|a| a.chunks());
    chunks.flat_map(|c| c.entities().to_vec()).collect()
}

/// Re-frames `body` as `like` with a correct checksum.
fn reframed(like: &Framed, body: Vec<u8>) -> Vec<u8> {
    frame(&Framed {
        magic: like.magic,
        version: like.version,
        body,
    })
}

#[test]
fn an_import_spawns_in_export_order_whatever_the_archetypes() {
    let _counting = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let mut a = Registry::with_workers(1);
    persistent(&mut a, false);
    let x = a.spawn((Hp(1),));
    let y = a.spawn((Hp(2), Name("y".into())));
    let z = a.spawn((Hp(3),));
    let w = a.spawn((Local(4),));
    let v = a.spawn((Name("v".into()), Pos([5.0, 5.0])));
    let u = a.spawn((Hp(6), Tally::new(6)));
    let t = a.spawn((Local(7),));
    let orders = [
        vec![x, y, z],
        vec![x, y, z, w, v, u, t],
        vec![t, u, z, v, y, w, x],
    ];
    // Under Miri the last order alone: every archetype, interleaved (each import is a second
    // of interpretation).
    let orders = if cfg!(miri) {
        &orders[2..]
    } else {
        &orders[..]
    };
    for exported in orders {
        let bytes = a.export(exported).unwrap();
        for (hooked, reversed) in [(false, false), (true, false), (false, true)] {
            for fresh in [true, false] {
                let mut b = match fresh {
                    true => {
                        let mut b = Registry::with_workers(1);
                        persistent(&mut b, reversed);
                        b
                    }
                    false => receiver(hooked, reversed),
                };
                let next = b.world().next_spawn_ids(exported.len());
                let map = b.import(&bytes).unwrap();
                let olds: Vec<Entity> = map.pairs().iter().map(|&(old, _)| old).collect();
                let news: Vec<Entity> = map.pairs().iter().map(|&(_, new)| new).collect();
                assert_eq!(&olds, exported, "pairs in export order");
                assert_eq!(news, next, "new ids: the next spawns', in export order");
                if fresh {
                    assert!(news.windows(2).all(|p| p[0].index() < p[1].index()));
                }
                // Within each archetype (but the empty one), the imported rows come in export
                // order, after the rows it had.
                let world = b.world();
                for archetype in world.archetypes().iter().filter(|a| !a.is_empty()) {
                    let rows: Vec<Entity> = archetype
                        .chunks()
                        .flat_map(|c| c.entities().to_vec())
                        .collect();
                    let imported: Vec<Entity> =
                        news.iter().copied().filter(|e| rows.contains(e)).collect();
                    if archetype.components().is_empty() || imported.is_empty() {
                        continue;
                    }
                    assert_eq!(rows[rows.len() - imported.len()..], imported[..]);
                }
                assert_eq!(b.get::<Hp>(map.get(z).unwrap()), Ok(&Hp(3)));
                assert_eq!(b.get::<Name>(map.get(y).unwrap()).unwrap().0, "y");
            }
        }
        // With and without hooks: the same ids, rows and world.
        let (mut plain, mut hooked) = (receiver(false, false), receiver(true, false));
        assert_eq!(
            plain.import(&bytes).unwrap(),
            hooked.import(&bytes).unwrap()
        );
        assert_eq!(every_row(&plain), every_row(&hooked));
        assert_eq!(state(&mut plain), state(&mut hooked));
    }
}

/// A valid export of entities in four groups, the last with every persistent type.
fn four_groups() -> (Registry, Vec<u8>) {
    let mut a = Registry::with_workers(1);
    persistent(&mut a, false);
    let e1 = a.spawn((Hp(1),));
    let e2 = a.spawn((Name("two".into()),));
    let e3 = a.spawn((Hp(3), Name("three".into())));
    let e4 = a.spawn((Hp(4), Name("four".into()), Pos([4.0, 4.0]), Tally::new(4)));
    let bytes = a.export(&[e1, e2, e3, e4]).unwrap();
    (a, bytes)
}

#[test]
fn a_forged_group_naming_a_type_twice_is_refused_before_anything_is_spawned() {
    let _counting = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let (_a, bytes) = four_groups();
    let framed = unframe(&bytes);
    let export = Export::read(&framed.body);
    assert_eq!(
        reframed(&framed, export.write()),
        bytes,
        "the model is exact"
    );
    // The last group's types [0, 1, 2, 3] become [0, 1, 2, 1] (Name twice, its column
    // repeated so every column decodes): only the set is wrong.
    let mut forged = export.clone();
    let last = forged.groups.items.last_mut().unwrap();
    assert_eq!(last.set.items, [0, 1, 2, 3]);
    last.set.items[3] = 1;
    last.blobs[3] = last.blobs[1].clone();
    let forged = reframed(&framed, forged.write());
    for hooked in [false, true] {
        let mut b = receiver(hooked, false);
        let before = state(&mut b);
        let result = catch_unwind(AssertUnwindSafe(|| b.import(&forged)));
        let result = result.unwrap_or_else(|_| panic!("hooked {hooked}: the import panicked"));
        assert!(
            matches!(result, Err(LoadError::Corrupt { .. })),
            "hooked {hooked}: {result:?}"
        );
        assert_eq!(state(&mut b), before, "hooked {hooked}");
        // The file it was forged from still imports.
        assert_eq!(b.import(&bytes).unwrap().len(), 4);
    }
}

/// Imports every forged export into the same receivers; returns (refused, accepted).
fn forge_imports(seed: u64, cases: usize) -> (usize, usize) {
    let mut rng = Rng(seed);
    let (mut refused, mut accepted) = (0, 0);
    let mut per_kind = vec![0usize; EXPORT_KINDS.len()];
    let mut receivers = [receiver(false, false), receiver(true, true)];
    let mut base = None;
    for case in 0..cases {
        if case % 50 == 0 {
            let (a, live) = populated(&mut rng, if cfg!(miri) { 8 } else { 40 }, true);
            let bytes = a.export(&live).unwrap();
            let framed = unframe(&bytes);
            let export = Export::read(&framed.body);
            assert_eq!(
                reframed(&framed, export.write()),
                bytes,
                "the model is exact"
            );
            base = Some((framed, export));
        }
        let (framed, export) = base.as_ref().unwrap();
        let kind = case % EXPORT_KINDS.len();
        let mut forged = forge_export(export, kind, &mut rng);
        if rng.below(4) == 0 {
            let more = EXPORT_STACKABLE[rng.below(EXPORT_STACKABLE.len())];
            forged = forge_export(&forged, more, &mut rng);
        }
        let file = reframed(framed, forged.write());
        let b = &mut receivers[case % 2];
        let before = state(b);
        let result = catch_unwind(AssertUnwindSafe(|| b.import(&file)));
        let what = EXPORT_KINDS[kind];
        match result.unwrap_or_else(|_| panic!("case {case} ({what}): import panicked")) {
            Err(_) => {
                assert_eq!(
                    state(b),
                    before,
                    "case {case} ({what}): refused, yet changed"
                );
                refused += 1;
                per_kind[kind] += 1;
            }
            Ok(map) => {
                // What a file allows (a set emptied, columns of like encodings swapped) is a
                // valid import: the world stays whole, no value leaks or drops twice.
                b.world().check_invariants();
                let after = state(b);
                assert_eq!(after.len, before.len + map.len(), "case {case} ({what})");
                assert_eq!(after.tallies_elsewhere, before.tallies_elsewhere);
                accepted += 1;
                *b = receiver(case % 2 == 1, case % 2 == 1);
            }
        }
    }
    println!("forged imports: {cases} cases, {refused} refused, {accepted} accepted");
    for (k, (kind, &n)) in EXPORT_KINDS.iter().zip(&per_kind).enumerate() {
        println!("  {n:5} refused: {kind}");
        let tried = cases / EXPORT_KINDS.len() + usize::from(k < cases % EXPORT_KINDS.len());
        if !EXPORT_MAY_PASS.contains(&k) {
            assert_eq!(n, tried, "every file with {kind} is refused");
        }
    }
    (refused, accepted)
}

#[test]
fn forged_imports_are_typed_errors_and_change_nothing() {
    let _counting = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let cases = cases(EXPORT_KINDS.len());
    let (refused, accepted) = forge_imports(0x5EED_1AB5, cases);
    assert_eq!(refused + accepted, cases);
    assert!(refused >= cases * 9 / 10, "{refused} of {cases} refused");
}

/// Loads every forged save into the same receiver; returns (refused, accepted).
fn forge_loads(seed: u64, cases: usize) -> (usize, usize) {
    let mut rng = Rng(seed);
    let (mut refused, mut accepted) = (0, 0);
    let mut per_kind = vec![0usize; SAVE_KINDS.len()];
    let mut b = receiver(false, true);
    let mut base = None;
    for case in 0..cases {
        if case % 50 == 0 {
            let (a, _) = populated(&mut rng, if cfg!(miri) { 8 } else { 40 }, false);
            let bytes = a.save_to_vec().unwrap();
            let framed = unframe(&bytes);
            let save = Save::read(&framed.body);
            assert_eq!(reframed(&framed, save.write()), bytes, "the model is exact");
            base = Some((framed, save));
        }
        let (framed, save) = base.as_ref().unwrap();
        let kind = case % SAVE_KINDS.len();
        let mut forged = forge_save(save, kind, &mut rng);
        if rng.below(4) == 0 {
            let more = SAVE_STACKABLE[rng.below(SAVE_STACKABLE.len())];
            forged = forge_save(&forged, more, &mut rng);
        }
        let file = reframed(framed, forged.write());
        let before = state(&mut b);
        let result = catch_unwind(AssertUnwindSafe(|| b.load_into(&file)));
        let what = SAVE_KINDS[kind];
        match result.unwrap_or_else(|_| panic!("case {case} ({what}): load panicked")) {
            Err(_) => {
                assert_eq!(
                    state(&mut b),
                    before,
                    "case {case} ({what}): refused, yet changed"
                );
                refused += 1;
                per_kind[kind] += 1;
            }
            Ok(()) => {
                // Another tick, or a change the world cannot tell from a real one: a valid
                // load, and a whole world whose every value is counted once.
                b.world().check_invariants();
                let after = state(&mut b);
                assert_eq!(after.tallies_elsewhere, before.tallies_elsewhere);
                accepted += 1;
                b = receiver(false, true);
            }
        }
    }
    println!("forged loads: {cases} cases, {refused} refused, {accepted} accepted");
    for (k, (kind, &n)) in SAVE_KINDS.iter().zip(&per_kind).enumerate() {
        println!("  {n:5} refused: {kind}");
        let tried = cases / SAVE_KINDS.len() + usize::from(k < cases % SAVE_KINDS.len());
        if !SAVE_MAY_PASS.contains(&k) {
            assert_eq!(n, tried, "every file with {kind} is refused");
        }
    }
    (refused, accepted)
}

#[test]
fn forged_loads_are_typed_errors_and_change_nothing() {
    let _counting = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let cases = cases(SAVE_KINDS.len());
    let (refused, accepted) = forge_loads(0x10AD_F00D, cases);
    assert_eq!(refused + accepted, cases);
    assert!(refused >= cases * 9 / 10, "{refused} of {cases} refused");
}
