//! Pending handles: the entities a buffer's spawns return before `apply` makes them real,
//! numbered from one process-wide space so a handle from another buffer, or from an earlier use
//! of this one, never resolves.

use core::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::entity::Entity;

/// Generation bit that marks a pending handle. World generations never have it
/// (they stay below 2^31), so a pending handle can never name a real entity.
pub(super) const PENDING: u32 = 1 << 31;

/// Pending handles are numbered from one process-wide 63-bit space, handed out in blocks of
/// this many numbers to the buffer that spawns:
///
/// ```text
///  pending handle = Entity { index: n & 0xFFFF_FFFF, generation: PENDING | (n >> 32) }
///  n: 63 bits, never reused  ──  a buffer use owns the blocks it took (`blocks`); its spawn
///                                 k has number blocks[k / BLOCK] + k % BLOCK
/// ```
///
/// A number is issued once, so a handle from an earlier use of a buffer (or from another
/// buffer) never resolves in a later use: it is stale forever. The space lasts for 2^63
/// spawns (three centuries at a billion spawns a second); exhausting it panics.
pub(super) const BLOCK: u64 = 64;

/// One past the last pending number handed out.
static NEXT_PENDING: AtomicU64 = AtomicU64::new(0);

/// The largest pending number plus one (63 bits: 32 in the index, 31 in the generation).
const PENDING_SPACE: u64 = 1 << 63;

/// A fresh block of `BLOCK` pending numbers; returns its first.
pub(super) fn fresh_block() -> u64 {
    NEXT_PENDING
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            n.checked_add(BLOCK).filter(|&end| end <= PENDING_SPACE)
        })
        .unwrap_or_else(|_| {
            panic!(
                "freyr: pending-handle space exhausted: the process numbered {PENDING_SPACE} \
                 command-buffer spawns (2^63), and the numbers are never reused; restart the \
                 process"
            )
        })
}

/// The panic of a buffer whose spawn count would pass `u32::MAX`.
#[cold]
#[inline(never)]
pub(super) fn too_many_spawns(held: u32, more: u32) -> ! {
    panic!(
        "freyr: command buffer spawn limit reached: a buffer records at most {} spawns between \
         applies, it holds {held} and {more} more were asked for; apply the buffer more often",
        u32::MAX
    )
}

/// The handle for pending number `n`.
pub(super) fn pending_handle(n: u64) -> Entity {
    debug_assert!(n < PENDING_SPACE);
    let generation = PENDING | (n >> 32) as u32;
    Entity::from_parts(
        n as u32,
        NonZeroU32::new(generation).expect("the pending bit is set"),
    )
}

/// The pending number of `e`, if it is a pending handle.
pub(super) fn pending_number(e: Entity) -> Option<u64> {
    let generation = e.generation();
    (generation & PENDING != 0)
        .then(|| (u64::from(generation & !PENDING) << 32) | u64::from(e.index()))
}

#[cfg(test)]
#[cfg(test)]
mod numbering {
    use super::*;
    use crate::command::CommandBuffer;
    use crate::world::World;

    #[test]
    fn pending_numbers_round_trip_through_handles() {
        for n in [
            0,
            1,
            BLOCK - 1,
            u64::from(u32::MAX),
            1 << 40,
            PENDING_SPACE - 1,
        ] {
            assert_eq!(pending_number(pending_handle(n)), Some(n));
        }
        let mut world = World::new();
        assert_eq!(pending_number(world.spawn(())), None);
    }

    #[test]
    fn a_use_resolves_only_its_own_numbers() {
        let mut a = CommandBuffer::new();
        let handles: Vec<_> = (0..3 * BLOCK as u32).map(|_| a.spawn(())).collect();
        for (k, h) in handles.iter().enumerate() {
            assert_eq!(a.spawn_of(*h), Some(k));
        }
        let mut b = CommandBuffer::new();
        let other = b.spawn(());
        assert_eq!(a.spawn_of(other), None);
        a.clear();
        assert!(handles.iter().all(|h| a.spawn_of(*h).is_none()));
    }

    #[test]
    fn a_stale_handle_stays_stale_after_more_uses_than_a_31_bit_tag_space() {
        let mut world = World::new();
        let mut old = CommandBuffer::new();
        let stale = old.spawn(());
        old.clear();
        // As if 2^31 buffer uses had each spawned since: a 31-bit tag counter would have
        // wrapped around to `stale`'s tag by now.
        NEXT_PENDING.fetch_add((1 << 31) * BLOCK, Ordering::Relaxed);
        let mut fresh = CommandBuffer::new();
        fresh.spawn(());
        fresh.despawn(stale);
        let report = fresh.apply(&mut world);
        assert_eq!((report.applied, report.skipped_stale), (1, 1));
        assert_eq!(world.len(), 1);
    }
}
