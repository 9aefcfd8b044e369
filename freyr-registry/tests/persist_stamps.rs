//! Change stamps across a save and a load: a loaded registry answers every `filter_changed` and
//! `filter_added` as the saved one did, through `save_to_vec`, `save_into` and a file; its next
//! writes stamp as the saved registry's would have; a damaged stamps section is a typed error
//! and changes nothing, and so is a file of the format before stamps were saved; an import
//! stamps what it spawns as added at the import tick. Small sizes under Miri.

use freyr::persist::LoadError;
use freyr::persist::bytemuck::{Pod, Zeroable};
use freyr::{Entity, Registry};
use serde::{Deserialize, Serialize};

/// Enough rows for three chunks of the main archetype (fewer under Miri: still two).
const N: u64 = if cfg!(miri) { 700 } else { 1300 };
/// The tick of the save.
const SAVED_AT: u64 = 12;

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Hp(u32);
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[bytemuck(crate = "freyr::persist::bytemuck")]
#[repr(C)]
struct Pos(u64);

fn register(r: &mut Registry) {
    r.register_persistent::<Hp>("stamps.hp", 1);
    r.register_persistent_pod::<Pos>("stamps.pos", 1);
}

fn empty(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    register(&mut r);
    r
}

/// Advances `r` to tick `tick` (`update` closes one tick each).
fn advance_to(r: &mut Registry, tick: u64) {
    while r.tick() < tick {
        r.update(0.0);
    }
}

/// A registry with writes at ticks 2, 5 and 9 to different chunks, components and
/// archetypes, advanced to [`SAVED_AT`]. Returns it and its first batch's ids.
fn written() -> (Registry, Vec<Entity>) {
    let mut r = empty(2);
    let ids = r.spawn_batch((0..N).map(|i| (Hp(i as u32), Pos(i))));
    r.spawn_batch((0..40u32).map(|i| (Hp(i),)));
    advance_to(&mut r, 2);
    r.get_mut::<Hp>(ids[3]).unwrap().0 += 1; // chunk 0, Hp
    advance_to(&mut r, 5);
    r.get_mut::<Pos>(ids[ids.len() - 1]).unwrap().0 += 1; // the last chunk, Pos
    r.spawn((Hp(7), Pos(7))); // a row arrives in the last chunk
    advance_to(&mut r, 9);
    r.remove::<(Pos,)>(ids[600]).unwrap(); // into (Hp,); the last row fills its hole
    assert!(r.world().entity_location(ids[600]).is_some());
    advance_to(&mut r, SAVED_AT);
    (r, ids)
}

/// Every stamp of the world: per archetype, its `(changed, added)` ticks per chunk and column.
fn stamps(r: &Registry) -> Vec<(Vec<u64>, Vec<u64>)> {
    let world = r.world();
    world
        .archetypes()
        .iter()
        .map(|a| {
            let (mut changed, mut added) = (Vec::new(), Vec::new());
            a.stamps_into(&mut changed, &mut added);
            (changed, added)
        })
        .collect()
}

/// What every filter yields for `since` (read-only queries: they stamp nothing), each list in
/// iteration order: `Changed<Hp>`, `Changed<Pos>`, `Added<Hp>`, `Added<Pos>`.
fn filters(r: &mut Registry, since: u64) -> [Vec<Entity>; 4] {
    let mut out: [Vec<Entity>; 4] = Default::default();
    r.query::<&Hp>()
        .filter_changed::<Hp>(since)
        .each(|e, _| out[0].push(e));
    r.query::<&Pos>()
        .filter_changed::<Pos>(since)
        .each(|e, _| out[1].push(e));
    r.query::<&Hp>()
        .filter_added::<Hp>(since)
        .each(|e, _| out[2].push(e));
    r.query::<&Pos>()
        .filter_added::<Pos>(since)
        .each(|e, _| out[3].push(e));
    out
}

/// Every filter's answer for every `since` from 0 to `last`.
fn answers(r: &mut Registry, last: u64) -> Vec<[Vec<Entity>; 4]> {
    (0..=last).map(|since| filters(r, since)).collect()
}

/// The save of `r` loaded into a new registry through each route: `save_to_vec` and
/// `load_into`, `save_into` a used buffer and `load_into`, `save` to a file and `load_file`
/// (not under Miri).
fn loaded_three_ways(r: &Registry) -> Vec<Registry> {
    let mut out = Vec::new();
    let mut a = empty(1);
    a.load_into(&r.save_to_vec().unwrap()).unwrap();
    out.push(a);
    let mut buffer = vec![0xAB; 100];
    r.save_into(&mut buffer).unwrap();
    let mut b = empty(3);
    b.spawn((Hp(1),)); // a registry that held a world of its own
    b.load_into(&buffer).unwrap();
    out.push(b);
    if cfg!(miri) {
        return out; // no file system under Miri's isolation
    }
    let dir = std::env::temp_dir().join(format!("freyr-stamps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("stamps.save");
    r.save(&path).unwrap();
    let mut c = empty(2);
    c.load_file(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    out.push(c);
    out
}

#[test]
fn a_loaded_registry_answers_every_change_filter_as_the_saved_one() {
    let (mut a, ids) = written();
    let expected = answers(&mut a, SAVED_AT);
    // The writes show: the filters are not all empty for an early `since`, and the write at
    // tick 2 is seen from `since` 1 but not 2.
    assert!(expected[1].iter().all(|list| !list.is_empty()));
    assert!(expected[1][0].contains(&ids[3]));
    assert!(!expected[2][0].contains(&ids[3]));
    assert!(expected[SAVED_AT as usize].iter().all(Vec::is_empty));
    for (route, mut b) in loaded_three_ways(&a).into_iter().enumerate() {
        assert_eq!(b.tick(), SAVED_AT, "route {route}");
        assert_eq!(stamps(&b), stamps(&a), "route {route}: every stamp");
        assert_eq!(answers(&mut b, SAVED_AT), expected, "route {route}");
    }
}

#[test]
fn writes_after_a_load_stamp_as_the_saved_registry_continuing() {
    let (mut a, ids) = written();
    for (route, mut b) in loaded_three_ways(&a).into_iter().enumerate() {
        let mut c = empty(1);
        c.load_into(&a.save_to_vec().unwrap()).unwrap();
        // The same writes in the saved registry's continuation (a copy of it, `c`, so that
        // each route starts from the same state) and in the loaded one.
        for r in [&mut c, &mut b] {
            r.get_mut::<Pos>(ids[5]).unwrap().0 += 1; // at tick 12
            r.query::<&mut Hp>().each(|_, hp| hp.0 += 1); // every Hp chunk, at tick 12
            advance_to(r, SAVED_AT + 2);
            r.spawn((Hp(9),)); // at tick 14
            r.despawn(ids[0]).unwrap(); // the last row of chunk 0's archetype fills its hole
            advance_to(r, SAVED_AT + 4);
        }
        assert_eq!(stamps(&b), stamps(&c), "route {route}");
        assert_eq!(
            answers(&mut b, SAVED_AT + 4),
            answers(&mut c, SAVED_AT + 4),
            "route {route}"
        );
        // The writes after the load show, and nothing is stamped after them.
        assert!(
            !filters(&mut b, SAVED_AT + 1)[2].is_empty(),
            "route {route}"
        );
        let after = filters(&mut b, SAVED_AT + 2);
        assert!(after.iter().all(Vec::is_empty), "route {route}");
    }
    // And the continuation of the loaded copy is the saved registry's own.
    let mut c = empty(1);
    c.load_into(&a.save_to_vec().unwrap()).unwrap();
    for r in [&mut a, &mut c] {
        r.get_mut::<Hp>(ids[1]).unwrap().0 += 1;
        advance_to(r, SAVED_AT + 3);
    }
    assert_eq!(stamps(&c), stamps(&a));
    assert_eq!(answers(&mut c, SAVED_AT + 3), answers(&mut a, SAVED_AT + 3));
}

/// Bytes of the stamps section of a save of `r`: the archetype count, then per archetype two
/// counted lists of one tick per allocated chunk and column.
fn stamps_section_len(r: &Registry) -> usize {
    let per_archetype: usize = r
        .world()
        .archetypes()
        .iter()
        .map(|a| 16 + 16 * a.chunk_ids().len() * a.components().len())
        .sum();
    8 + per_archetype
}

/// The state a failed load must leave: tick, stamps and answers.
type State = (u64, Vec<(Vec<u64>, Vec<u64>)>, Vec<[Vec<Entity>; 4]>);

fn state(r: &mut Registry) -> State {
    (r.tick(), stamps(r), answers(r, 4))
}

/// A registry that a failed load must leave as it is: its own entities and stamps.
fn bystander() -> Registry {
    let mut r = empty(1);
    let e = r.spawn((Hp(1), Pos(1)));
    advance_to(&mut r, 3);
    r.get_mut::<Hp>(e).unwrap().0 += 1;
    r
}

#[test]
fn a_truncated_or_flipped_stamps_section_is_a_typed_error_and_changes_nothing() {
    let (a, _) = written();
    let save = a.save_to_vec().unwrap();
    let section = stamps_section_len(&a);
    let (start, end) = (save.len() - 8 - section, save.len() - 8);
    // The section is where this test thinks: the body ends with the archetype count, then
    // the first archetype's changed list count.
    let count = u64::from_le_bytes(save[start..start + 8].try_into().unwrap());
    assert_eq!(count, a.world().archetypes().len() as u64);
    let mut r = bystander();
    let before = state(&mut r);
    for cut in (start..end).step_by(if cfg!(miri) { 97 } else { 1 }) {
        let err = r.load_into(&save[..cut]).unwrap_err();
        assert!(
            matches!(err, LoadError::Truncated { .. }),
            "cut {cut}: {err}"
        );
    }
    let bits: Vec<usize> = if cfg!(miri) {
        vec![start * 8, start * 8 + 9, end * 8 - 1]
    } else {
        (start * 8..end * 8).collect()
    };
    let mut damaged = save.clone();
    for bit in bits {
        damaged[bit / 8] ^= 1 << (bit % 8);
        let err = r.load_into(&damaged).unwrap_err();
        assert!(
            matches!(err, LoadError::ChecksumMismatch { .. }),
            "bit {bit}: {err}"
        );
        damaged[bit / 8] ^= 1 << (bit % 8);
    }
    assert_eq!(state(&mut r), before, "nothing changed");
}

/// CRC-64/NVME (reflected polynomial `0x9A6C9329AC4BC9B5`, all-ones start and end), bit by
/// bit: the save's checksum, to forge files whose checksum holds.
fn crc64_nvme(bytes: &[u8]) -> u64 {
    let mut crc = u64::MAX;
    for &b in bytes {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x9A6C_9329_AC4B_C9B5
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A file of `body` under `header`'s magic and version, its length and checksum made to hold:
/// the checksum sums the magic and version, the body, then the body length.
fn forge(header: &[u8], body: &[u8]) -> Vec<u8> {
    let mut file = header[..12].to_vec();
    file.extend_from_slice(&(body.len() as u64).to_le_bytes());
    file.extend_from_slice(body);
    let summed = [&file[..12], body, &file[12..20]].concat();
    file.extend_from_slice(&crc64_nvme(&summed).to_le_bytes());
    file
}

#[test]
#[cfg_attr(
    miri,
    ignore = "a bit-by-bit CRC of every forged file takes many minutes under Miri; safe parsing only"
)]
fn stamps_sections_that_do_not_fit_the_world_are_corrupt_even_when_the_checksum_holds() {
    let (a, _) = written();
    let save = a.save_to_vec().unwrap();
    // The forging is right: the real file forged again is the real file.
    let body = &save[20..save.len() - 8];
    assert_eq!(forge(&save, body), save);
    let start = body.len() - stamps_section_len(&a);
    let archetypes = a.world().archetypes().len() as u64;
    let mut r = bystander();
    let before = state(&mut r);
    let corrupt = |r: &mut Registry, body: &[u8], what: &str| {
        let err = r.load_into(&forge(&save, body)).unwrap_err();
        assert!(
            matches!(err, LoadError::Corrupt { .. }),
            "{what}: {err:?} is not Corrupt"
        );
    };
    // No stamps section at all (a body shaped as before stamps were saved).
    corrupt(&mut r, &body[..start], "no section");
    // Another archetype count.
    for count in [archetypes - 1, archetypes + 1, u64::MAX] {
        let mut b = body.to_vec();
        b[start..start + 8].copy_from_slice(&count.to_le_bytes());
        corrupt(&mut r, &b, "archetype count");
    }
    // Each non-empty list one tick short (its count one less, its last tick gone), and one
    // tick long.
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let mut lists = Vec::new(); // (offset of the count, count)
    let mut at = start + 8;
    while at < body.len() {
        let n = word(body, at);
        lists.push((at, n));
        at += 8 + 8 * n as usize;
    }
    assert_eq!((at, lists.len() as u64), (body.len(), 2 * archetypes));
    let mut shortened = 0;
    for &(at, n) in lists.iter().filter(|&&(_, n)| n > 0) {
        let end = at + 8 + 8 * n as usize;
        let mut short = body.to_vec();
        short[at..at + 8].copy_from_slice(&(n - 1).to_le_bytes());
        short.drain(end - 8..end);
        corrupt(&mut r, &short, "a short list");
        let mut long = body.to_vec();
        long[at..at + 8].copy_from_slice(&(n + 1).to_le_bytes());
        long.splice(end..end, [0; 8]);
        corrupt(&mut r, &long, "a long list");
        shortened += 1;
    }
    assert!(shortened >= 4, "two archetypes with chunks, two lists each");
    // A tick too many after the section.
    let mut b = body.to_vec();
    b.extend_from_slice(&[0; 8]);
    corrupt(&mut r, &b, "trailing bytes");
    assert_eq!(state(&mut r), before, "nothing changed");
}

/// A save of the format before stamps were saved (version 4): a registry with `hp` (u32,
/// version 1) holding one entity, saved at tick 1.
const VERSION_4_SAVE: &str = concat!(
    "465245595253415604000000c000000000000000010000000000000001000000020000000000000068700100",
    "0000000000000400000000000000040000000000000001000000000000000000000000000000000000000100",
    "0000000000000100000000000000000000000000000002000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000100000000000000000000000100000000000000010000000100",
    "000000000000000000000100000000000000000000000100000002000000000000000107a3d9181544e0d998",
);

#[test]
fn a_save_of_the_format_before_stamps_is_refused_by_version() {
    let bytes: Vec<u8> = (0..VERSION_4_SAVE.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&VERSION_4_SAVE[i..i + 2], 16).unwrap())
        .collect();
    let mut r = Registry::with_workers(1);
    r.register_persistent::<u32>("hp", 1);
    let e = r.spawn((5u32,));
    let err = r.load_into(&bytes).unwrap_err();
    assert!(
        matches!(
            err,
            LoadError::UnsupportedFormat {
                found: 4,
                supported: 5
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("format version 4"));
    assert_eq!((r.len(), r.get::<u32>(e), r.tick()), (1, Ok(&5), 0));
}

#[test]
fn an_import_stamps_what_it_spawns_as_added_and_changed_at_the_import_tick() {
    let (a, ids) = written();
    let moving = [ids[1], ids[650], ids[600]];
    let bytes = a.export(&moving).unwrap();
    // With and without hooks (they import by batch spawn, or by spawn and insert).
    for hooked in [false, true] {
        let mut b = empty(2);
        if hooked {
            b.on_add::<Hp>(|_, _| {});
        }
        let own = b.spawn((Hp(0), Pos(0)));
        advance_to(&mut b, 7);
        let map = b.import(&bytes).unwrap();
        let imported: Vec<Entity> = moving.iter().map(|&e| map.get(e).unwrap()).collect();
        let at = |b: &mut Registry, since: u64| filters(b, since);
        let before = at(&mut b, 6);
        for e in &imported {
            assert!(
                before[0].contains(e) && before[2].contains(e),
                "{hooked}: Hp"
            );
        }
        for e in &imported[..2] {
            assert!(
                before[1].contains(e) && before[3].contains(e),
                "{hooked}: Pos"
            );
        }
        // Nothing is stamped after the import tick; `own` shares a chunk with imported rows.
        assert!(at(&mut b, 7).iter().all(Vec::is_empty), "{hooked}");
        assert!(before[2].contains(&own), "{hooked}: chunk granularity");
    }
}
