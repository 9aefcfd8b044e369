//! The adaptive row path: each row loop measures both compiled copies over its first calls and
//! keeps the faster one.
//!
//! The AVX2 copy is usually the faster (wider vectors), but not always: a callback that calls an
//! out-of-line function compiled for the baseline target and receives a struct result in memory
//! can make the AVX2 copy move that result with 32-byte loads from 16-byte stores, which the
//! processor cannot forward (a 4x4 matrix inverse ran about 15% slower that way). So, under
//! [`RowPath::Adaptive`](super::RowPath::Adaptive), each loop (one monomorphised copy pair, named
//! by its address) alternates the two copies over its first [`PROBES`] calls per copy, keeps each
//! copy's best time per unit of work (rows, tasks or bytes), and from then on runs the faster one.
//! Both copies give the same bits, so the choice changes speed only, never a result.
//!
//! The table is fixed-size and lock-free; a loop that finds no free slot runs the AVX2 copy. All
//! atomics are relaxed: the table carries no data but its own hints.
//!
//! A build with one copy of each loop (a target with AVX2 and FMA, or not x86-64) never enters
//! the adaptive mode; the measuring half of this file is then used by its tests only.

use core::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Measured calls per copy before a loop decides.
pub(super) const PROBES: u32 = 8;
/// Slots in the table (distinct row loops that can be measured).
const SLOTS: usize = 512;
/// Slots tried from a loop's home slot before it gives up and runs the AVX2 copy.
const SEARCH: usize = 16;
/// A call shorter than this is not a sample: the clock's own cost would dominate it.
const MIN_SAMPLE_NS: u64 = 2_000;
/// The baseline copy is chosen only if its best time per unit is below this fraction (in
/// 1/1024) of the AVX2 copy's: a tie keeps the wider copy.
const BASELINE_MARGIN: u64 = 1_000;

/// Still measuring.
const MEASURING: u8 = 0;
/// Decided: the AVX2 copy.
const AVX2: u8 = 1;
/// Decided: the baseline copy.
const BASELINE: u8 = 2;

/// One row loop's measurements.
struct Slot {
    /// The loop's address; 0 while the slot is free.
    key: AtomicUsize,
    /// `MEASURING`, `AVX2` or `BASELINE`.
    state: AtomicU8,
    /// Measured calls started so far: the parity of each start names its copy, so the copies
    /// alternate even when several workers start calls before any finishes.
    started: AtomicU32,
    /// Measured calls finished so far (both copies).
    calls: AtomicU32,
    /// Best picoseconds per unit seen for [AVX2, baseline]; `u64::MAX` before any sample.
    best: [AtomicU64; 2],
}

impl Slot {
    /// A free slot.
    const fn free() -> Slot {
        Slot {
            key: AtomicUsize::new(0),
            state: AtomicU8::new(MEASURING),
            started: AtomicU32::new(0),
            calls: AtomicU32::new(0),
            best: [AtomicU64::new(u64::MAX), AtomicU64::new(u64::MAX)],
        }
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::free() }; SLOTS];

/// Which copy one call runs, and the measurement to finish after it if it is a probe.
pub struct Pick {
    /// Run the AVX2 copy (else the baseline one).
    pub avx2: bool,
    /// Set for a measured call.
    probe: Option<Probe>,
}

/// A measured call in flight: finished by [`Pick::finish`] after the copy returns. A copy that
/// unwinds never finishes its probe, so a panicking call is never a sample.
struct Probe {
    slot: &'static Slot,
    copy: usize,
    units: u64,
    start: Instant,
}

impl Pick {
    /// Records the call's time if it was a probe.
    #[inline(always)]
    pub fn finish(self) {
        if let Some(probe) = self.probe {
            let ns = u64::try_from(probe.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            record(probe.slot, probe.copy, probe.units, ns);
        }
    }
}

/// The copy for one call of the loop at `key` that does `units` of work.
#[inline(always)]
pub fn pick(key: usize, units: usize) -> Pick {
    let Some(slot) = find(key) else {
        return Pick {
            avx2: true,
            probe: None,
        };
    };
    match slot.state.load(Ordering::Relaxed) {
        AVX2 => Pick {
            avx2: true,
            probe: None,
        },
        BASELINE => Pick {
            avx2: false,
            probe: None,
        },
        _ => start_probe(slot, units),
    }
}

/// A measured call: the copies alternate by the parity of the calls started (not finished: two
/// workers running equal tasks in step would otherwise both read the same count, and one copy
/// would never be measured).
#[cold]
#[inline(never)]
fn start_probe(slot: &'static Slot, units: usize) -> Pick {
    if units == 0 {
        return Pick {
            avx2: true,
            probe: None,
        };
    }
    let copy = (slot.started.fetch_add(1, Ordering::Relaxed) & 1) as usize;
    Pick {
        avx2: copy == 0,
        probe: Some(Probe {
            slot,
            copy,
            units: units as u64,
            start: Instant::now(),
        }),
    }
}

/// The loop's slot, claiming a free one on its first call; `None` when the table is full.
#[inline(always)]
fn find(key: usize) -> Option<&'static Slot> {
    let home = home(key);
    for i in 0..SEARCH {
        let slot = &TABLE[(home + i) % SLOTS];
        match slot.key.load(Ordering::Relaxed) {
            k if k == key => return Some(slot),
            0 => return claim(key, home + i),
            _ => {}
        }
    }
    None
}

/// Claims a free slot from `from` on (another loop may take it first: then searches on).
#[cold]
#[inline(never)]
fn claim(key: usize, from: usize) -> Option<&'static Slot> {
    for i in from..home(key) + SEARCH {
        let slot = &TABLE[i % SLOTS];
        match slot
            .key
            .compare_exchange(0, key, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => return Some(slot),
            Err(k) if k == key => return Some(slot),
            Err(_) => {}
        }
    }
    None
}

/// The slot a key tries first (Fibonacci hashing of the address).
#[inline(always)]
fn home(key: usize) -> usize {
    ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 55) as usize % SLOTS
}

/// Adds one measured call of `copy` (0: AVX2, 1: baseline) that did `units` of work in `ns`, and
/// decides once both copies had [`PROBES`] calls.
fn record(slot: &Slot, copy: usize, units: u64, ns: u64) {
    if ns >= MIN_SAMPLE_NS {
        let per_unit = ns.saturating_mul(1000) / units.max(1);
        slot.best[copy].fetch_min(per_unit, Ordering::Relaxed);
    }
    let calls = slot.calls.fetch_add(1, Ordering::Relaxed) + 1;
    if calls >= 2 * PROBES {
        let avx2 = slot.best[0].load(Ordering::Relaxed);
        let baseline = slot.best[1].load(Ordering::Relaxed);
        slot.state.store(decide(avx2, baseline), Ordering::Relaxed);
    }
}

/// The decision from the two copies' best picoseconds per unit (`u64::MAX`: no sample, every
/// call too short to matter): the baseline copy only if it is clearly faster.
fn decide(avx2: u64, baseline: u64) -> u8 {
    if baseline == u64::MAX || avx2 == u64::MAX {
        return AVX2;
    }
    if (baseline as u128) * 1024 < (avx2 as u128) * BASELINE_MARGIN as u128 {
        BASELINE
    } else {
        AVX2
    }
}

/// How many measured loops run each copy: `(avx2, baseline)`, decided loops only.
pub(crate) fn decided() -> (usize, usize) {
    let mut counts = (0, 0);
    for slot in &TABLE {
        match slot.state.load(Ordering::Relaxed) {
            AVX2 => counts.0 += 1,
            BASELINE => counts.1 += 1,
            _ => {}
        }
    }
    counts
}

/// Forgets every measurement and decision: the next calls measure again.
pub(crate) fn reset() {
    for slot in &TABLE {
        slot.state.store(MEASURING, Ordering::Relaxed);
        slot.started.store(0, Ordering::Relaxed);
        slot.calls.store(0, Ordering::Relaxed);
        for best in &slot.best {
            best.store(u64::MAX, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key no real function has (odd, and far from code addresses), one per test.
    fn fake_key(n: usize) -> usize {
        usize::MAX - 2 * n
    }

    #[test]
    fn the_faster_copy_wins_after_the_probes_and_a_tie_keeps_avx2() {
        assert_eq!(decide(100, 90), BASELINE);
        assert_eq!(decide(100, 99), AVX2, "within the margin: the wider copy");
        assert_eq!(decide(90, 100), AVX2);
        assert_eq!(decide(u64::MAX, 10), AVX2, "no AVX2 sample");
        assert_eq!(decide(10, u64::MAX), AVX2, "no baseline sample");
    }

    #[test]
    fn a_loop_alternates_copies_then_keeps_the_one_that_measured_faster() {
        let key = fake_key(1);
        let slot = find(key).expect("an empty table has room");
        let mut seen = [0u32; 2];
        for _ in 0..2 * PROBES {
            let pick = pick(key, 100);
            let probe = pick.probe.as_ref().expect("still measuring");
            assert_eq!(probe.copy == 0, pick.avx2);
            seen[probe.copy] += 1;
            // The baseline copy takes 10 us per call, the AVX2 one 20 us.
            let ns = if pick.avx2 { 20_000 } else { 10_000 };
            record(probe.slot, probe.copy, probe.units, ns);
        }
        assert_eq!(seen, [PROBES, PROBES], "the copies alternate");
        assert_eq!(slot.state.load(Ordering::Relaxed), BASELINE);
        for _ in 0..3 {
            let pick = pick(key, 100);
            assert!(
                !pick.avx2 && pick.probe.is_none(),
                "decided: no more probes"
            );
        }
    }

    #[test]
    fn calls_started_before_any_finishes_still_alternate_copies() {
        // Two workers running equal tasks in step: each pair of calls starts before either
        // finishes. Both copies must still be measured, and the faster one chosen.
        let key = fake_key(4);
        for _ in 0..PROBES {
            let a = pick(key, 100);
            let b = pick(key, 100);
            assert_ne!(
                a.avx2, b.avx2,
                "calls in flight together run different copies"
            );
            for pick in [a, b] {
                let probe = pick.probe.as_ref().expect("still measuring");
                let ns = if pick.avx2 { 20_000 } else { 10_000 };
                record(probe.slot, probe.copy, probe.units, ns);
            }
        }
        let slot = find(key).unwrap();
        assert_eq!(slot.state.load(Ordering::Relaxed), BASELINE);
    }

    #[test]
    fn calls_too_short_to_time_or_without_work_decide_for_avx2() {
        let key = fake_key(2);
        assert!(pick(key, 0).probe.is_none(), "no work: not a probe");
        for _ in 0..2 * PROBES {
            let pick = pick(key, 1);
            let probe = pick.probe.as_ref().expect("still measuring");
            record(probe.slot, probe.copy, probe.units, MIN_SAMPLE_NS - 1);
        }
        assert_eq!(find(key).unwrap().state.load(Ordering::Relaxed), AVX2);
    }

    #[test]
    fn a_probe_that_unwinds_is_not_a_sample() {
        let key = fake_key(3);
        let result = std::panic::catch_unwind(|| {
            let pick = pick(key, 10);
            assert!(pick.probe.is_some());
            panic!("the copy unwinds before finish");
        });
        assert!(result.is_err());
        let slot = find(key).unwrap();
        assert_eq!(slot.calls.load(Ordering::Relaxed), 0);
        assert_eq!(slot.best[0].load(Ordering::Relaxed), u64::MAX);
    }

    #[test]
    fn keys_that_share_a_home_slot_get_slots_of_their_own() {
        let a = fake_key(10);
        let b = (1..)
            .map(|n| fake_key(10 + n))
            .find(|&k| home(k) == home(a))
            .expect("some key shares the home slot");
        let sa = find(a).unwrap() as *const Slot;
        let sb = find(b).unwrap() as *const Slot;
        assert_ne!(sa, sb, "a collision probes on to a free slot");
        assert_eq!(
            find(a).unwrap() as *const Slot,
            sa,
            "the same loop, the same slot"
        );
        assert_eq!(find(b).unwrap() as *const Slot, sb);
    }
}
