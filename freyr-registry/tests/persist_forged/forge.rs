//! Targeted semantic mutations of an export's or a save's body: each keeps the file readable
//! byte by byte (and the test re-frames it with a correct checksum) but makes its content wrong
//! in one named way. Deterministic: a mutation is its kind and a [`Rng`].

use super::model::{Archetype, Export, Group, Save};

/// SplitMix64: a seeded, reproducible stream.
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (at least 1).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub(crate) fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }

    /// A count near `n` that is not `n`: one more, one less, or far too many.
    fn wrong_count(&mut self, n: u64) -> u64 {
        match self.below(4) {
            1 if n > 0 => n - 1,
            2 if n != u64::MAX => u64::MAX,
            3 => n.wrapping_add(2 + self.next() % (1 << 40)),
            _ => n.wrapping_add(1),
        }
    }
}

/// The export kinds that apply to any export, forged already or not (they index no list):
/// what a test stacks on a first mutation.
pub(crate) const EXPORT_STACKABLE: &[usize] = &[3, 4, 5, 9, 10, 11, 12, 13, 14];

/// The export kinds whose file may still be a valid export: a set emptied (its entities then
/// arrive with no type), columns of two types with one encoding swapped, and counts a stacked
/// mutation can set right again.
pub(crate) const EXPORT_MAY_PASS: &[usize] = &[3, 4, 5, 12, 15, 19];

/// What each export mutation does, by kind.
pub(crate) const EXPORT_KINDS: &[&str] = &[
    "a type twice in a group's set",
    "a type index out of range",
    "a set not ascending",
    "a wrong group count",
    "a wrong set length",
    "a wrong member count",
    "a column of another length",
    "an entity in two groups",
    "an entity twice in a group",
    "an unknown type name",
    "a wrong version",
    "a type listed twice",
    "a wrong type count",
    "a wrong encoding",
    "a wrong layout",
    "a group with no types",
    "a group with no entities",
    "an invalid entity id",
    "a column too many",
    "a column of another type",
];

/// The index of a group (of `groups`) for which `ok` holds, from a random start; any if none.
fn pick<T>(items: &[T], rng: &mut Rng, ok: impl Fn(&T) -> bool) -> usize {
    let start = rng.below(items.len());
    (0..items.len())
        .map(|i| (start + i) % items.len())
        .find(|&i| ok(&items[i]))
        .unwrap_or(start)
}

fn recount(g: &mut Group) {
    g.set.count = g.set.items.len() as u64;
    g.members.count = g.members.items.len() as u64;
}

/// `e` with mutation `kind` (an index into [`EXPORT_KINDS`]). `e` has at least one group.
pub(crate) fn forge_export(e: &Export, kind: usize, rng: &mut Rng) -> Export {
    let mut f = e.clone();
    let types = f.types.list.len() as u32;
    let groups = &mut f.groups.items;
    let typed = pick(groups, rng, |g| !g.set.items.is_empty());
    let pair = pick(groups, rng, |g| g.set.items.len() >= 2);
    let crowd = pick(groups, rng, |g| g.members.items.len() >= 2);
    let any = rng.below(groups.len());
    match kind {
        0 => {
            let g = &mut groups[typed];
            let i = rng.below(g.set.items.len());
            match g.set.items.len() >= 2 && rng.coin() {
                true => {
                    let j = (i + 1 + rng.below(g.set.items.len() - 1)) % g.set.items.len();
                    g.set.items[j] = g.set.items[i];
                    g.blobs[j] = g.blobs[i].clone();
                }
                false if !g.set.items.is_empty() => {
                    g.set.items.insert(i + 1, g.set.items[i]);
                    g.blobs.insert(i + 1, g.blobs[i].clone());
                }
                false => g.set.items.push(0),
            }
            recount(g);
        }
        1 => {
            let g = &mut groups[typed];
            let j = rng.below(g.set.items.len());
            let bad = [types, types + 1 + rng.below(9) as u32, u32::MAX][rng.below(3)];
            match g.set.items.get_mut(j) {
                Some(i) => *i = bad,
                None => g.set.items.push(bad),
            }
            recount(g);
        }
        2 => {
            let g = &mut groups[pair];
            let n = g.set.items.len();
            if n >= 2 {
                let i = rng.below(n - 1);
                g.set.items.swap(i, i + 1);
                g.blobs.swap(i, i + 1);
            } else {
                g.set.items.insert(0, types.saturating_sub(1));
                recount(g);
            }
        }
        3 => f.groups.count = rng.wrong_count(f.groups.count),
        4 => {
            let g = &mut groups[any];
            g.set.count = rng.wrong_count(g.set.count);
        }
        5 => {
            let g = &mut groups[any];
            g.members.count = rng.wrong_count(g.members.count);
        }
        6 => {
            let g = &mut groups[typed];
            match g.members.items.len() >= 2 && rng.coin() {
                true => drop(g.members.items.pop()),
                false => g.members.items.push(g.members.items[0] + (1 << 40)),
            }
            recount(g);
        }
        7 => {
            let from = rng.below(groups.len());
            let to = (from + 1) % groups.len();
            let e = groups[from].members.items[rng.below(groups[from].members.items.len())];
            let m = &mut groups[to].members.items;
            let k = rng.below(m.len());
            m[k] = e;
        }
        8 => {
            let m = &mut groups[crowd].members.items;
            let (i, j) = (rng.below(m.len()), rng.below(m.len()));
            m[j] = m[(i + usize::from(i == j)) % m.len()];
            if m.len() == 1 {
                m.push(m[0]);
                let g = &mut groups[crowd];
                recount(g);
            }
        }
        9 => f.types.list[rng.below(types as usize)].name = b"test.nowhere".to_vec(),
        10 => f.types.list[rng.below(types as usize)].version += 1 + rng.below(3) as u32,
        11 => {
            let t = f.types.list[rng.below(types as usize)].clone();
            f.types.list.insert(rng.below(types as usize + 1), t);
            f.types.count = f.types.count.wrapping_add(1);
        }
        12 => f.types.count = rng.wrong_count(u64::from(f.types.count)) as u32,
        13 => f.types.list[rng.below(types as usize)].encoding ^= 1 + 2 * rng.coin() as u32,
        14 => {
            let t = &mut f.types.list[rng.below(types as usize)];
            match rng.coin() {
                true => t.size += 1,
                false => t.align *= 2,
            }
        }
        15 => {
            let g = &mut groups[typed];
            g.set.items.clear();
            g.blobs.clear();
            recount(g);
        }
        16 => {
            let g = &mut groups[any];
            g.members.items.clear();
            g.blobs.iter_mut().for_each(Vec::clear);
            recount(g);
        }
        17 => {
            let m = &mut groups[any].members.items;
            let k = rng.below(m.len());
            m[k] &= u64::from(u32::MAX);
        }
        18 => {
            let g = &mut groups[typed];
            let extra = g.blobs.first().cloned().unwrap_or_default();
            g.blobs.push(extra);
        }
        _ => {
            let g = &mut groups[pair];
            if g.blobs.len() >= 2 {
                let i = rng.below(g.blobs.len() - 1);
                g.blobs.swap(i, i + 1);
            } else {
                g.blobs = vec![vec![0xFF; 3]; g.blobs.len()];
            }
        }
    }
    f
}

/// The save kinds that apply to any save, forged already or not (see [`EXPORT_STACKABLE`]).
pub(crate) const SAVE_STACKABLE: &[usize] = &[3, 4, 9, 10, 11, 12, 13, 14, 15, 16, 21];

/// The save kinds whose file may still be a valid save: another tick, a free slot's
/// generation changed, and counts a stacked mutation can set right again.
pub(crate) const SAVE_MAY_PASS: &[usize] = &[3, 4, 5, 12, 15, 16, 21, 25];

/// What each save mutation does, by kind.
pub(crate) const SAVE_KINDS: &[&str] = &[
    "a type twice in an archetype",
    "a type index out of range",
    "an archetype's types not ascending",
    "a wrong archetype count",
    "a wrong type-list length",
    "a wrong row count",
    "a column of another length",
    "an entity in two archetypes",
    "an entity twice in an archetype",
    "an unknown type name",
    "a wrong version",
    "a type listed twice",
    "a wrong type count",
    "a wrong encoding",
    "a wrong layout",
    "a wrong live count",
    "a wrong entity slot",
    "a wrong free list",
    "a chunk id used twice",
    "wrong slabs",
    "two archetypes with one set",
    "another tick",
    "a column too many",
    "a wrong stamps archetype count",
    "a stamps list of another length",
    "another stamp tick",
];

/// `s` with mutation `kind` (an index into [`SAVE_KINDS`]). `s` has a non-empty archetype
/// with a type.
pub(crate) fn forge_save(s: &Save, kind: usize, rng: &mut Rng) -> Save {
    let mut f = s.clone();
    let types = f.types.list.len() as u32;
    let all = &mut f.archetypes.items;
    let full = |a: &Archetype| !a.ids.items.is_empty() && !a.entities.items.is_empty();
    let typed = pick(all, rng, full);
    let pair = pick(all, rng, |a| a.ids.items.len() >= 2);
    let other = pick(all, rng, |a| !a.entities.items.is_empty() && !full(a));
    let crowd = pick(all, rng, |a| a.entities.items.len() >= 2);
    let any = rng.below(all.len());
    let fix = |a: &mut Archetype| {
        a.ids.count = a.ids.items.len() as u64;
        a.entities.count = a.entities.items.len() as u64;
    };
    match kind {
        0 => {
            let a = &mut all[typed];
            let i = rng.below(a.ids.items.len());
            a.ids.items.insert(i + 1, a.ids.items[i]);
            a.blobs.insert(i + 1, a.blobs[i].clone());
            fix(a);
        }
        1 => {
            let a = &mut all[typed];
            let j = rng.below(a.ids.items.len());
            a.ids.items[j] = [types, types + 1 + rng.below(9) as u32, u32::MAX][rng.below(3)];
        }
        2 => {
            let a = &mut all[pair];
            if a.ids.items.len() >= 2 {
                a.ids.items.swap(0, 1);
                a.blobs.swap(0, 1);
            } else {
                a.ids.items.reverse();
            }
        }
        3 => f.archetypes.count = rng.wrong_count(f.archetypes.count),
        4 => {
            let a = &mut all[any];
            a.ids.count = rng.wrong_count(a.ids.count);
        }
        5 => {
            let a = &mut all[typed];
            a.entities.count = rng.wrong_count(a.entities.count);
        }
        6 => {
            let a = &mut all[typed];
            a.entities.items.pop();
            fix(a);
        }
        7 => {
            let e = all[typed].entities.items[rng.below(all[typed].entities.items.len())];
            let to = if other == typed { crowd } else { other };
            let m = &mut all[to].entities.items;
            match m.is_empty() {
                true => m.push(e),
                false => {
                    let k = rng.below(m.len());
                    m[k] = e;
                }
            }
            fix(&mut all[to]);
        }
        8 => {
            let a = &mut all[crowd];
            let m = &mut a.entities.items;
            let (i, j) = (rng.below(m.len()), rng.below(m.len()));
            match m.len() >= 2 {
                true => m[j] = m[(i + usize::from(i == j)) % m.len()],
                false => m.extend(m.first().copied()),
            }
            fix(a);
        }
        9 => f.types.list[rng.below(types as usize)].name = b"test.nowhere".to_vec(),
        10 => f.types.list[rng.below(types as usize)].version += 1 + rng.below(3) as u32,
        11 => {
            let t = f.types.list[rng.below(types as usize)].clone();
            f.types.list.push(t);
            f.types.count = f.types.count.wrapping_add(1);
        }
        12 => f.types.count = rng.wrong_count(u64::from(f.types.count)) as u32,
        13 => f.types.list[rng.below(types as usize)].encoding ^= 1 + 2 * rng.coin() as u32,
        14 => f.types.list[rng.below(types as usize)].size += 1,
        15 => f.len = rng.wrong_count(f.len),
        16 => {
            let k = rng.below(f.slots.len());
            f.slots[k] = match rng.below(3) {
                0 => f.slots[k] ^ 1,
                1 => f.slots[k] ^ (1 << 31),
                _ => rng.next() as u32,
            };
        }
        17 => {
            let live = all[typed].entities.items[0] as u32;
            match f.free.first().copied() {
                Some(free) if rng.coin() => f.free.push(free),
                _ => f.free.push(live),
            }
        }
        18 => {
            let a = &mut all[typed];
            match f.free_chunks.first().copied() {
                Some(free) if rng.coin() => a.chunk_ids[0] = free,
                _ => f.free_chunks.push(a.chunk_ids[0]),
            }
        }
        19 => {
            let a = &mut all[typed];
            a.slabs[0] = if rng.coin() { 0 } else { a.slabs[0] + 1 };
        }
        20 => {
            let a = all[typed].clone();
            all.push(a);
            f.archetypes.count = f.archetypes.count.wrapping_add(1);
        }
        21 => f.tick = rng.next() >> rng.below(64),
        22 => {
            let a = &mut all[typed];
            a.blobs.push(a.blobs[0].clone());
        }
        23 => f.stamps.count = rng.wrong_count(f.stamps.count),
        24 => {
            let (changed, added) = &mut f.stamps.items[typed];
            let list = if rng.coin() { changed } else { added };
            match list.pop() {
                Some(t) if rng.coin() => list.extend([t, t, t]),
                Some(_) => {}
                None => list.push(rng.next()),
            }
        }
        _ => {
            let (changed, added) = &mut f.stamps.items[typed];
            let list = if rng.coin() { changed } else { added };
            if let Some(t) = list.first_mut() {
                *t = rng.next() >> rng.below(64);
            }
        }
    }
    f
}
