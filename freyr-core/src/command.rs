//! Command buffers: structural changes recorded now and applied to a world later, in order.
//!
//! Recording allocates per buffer, not per command: a command is a small record in one `Vec`,
//! and the bundle it carries moves into the buffer's [`Arena`] (one growing allocation), from
//! which `apply` moves it into the world. Both keep their capacity when the buffer is emptied.

use core::any::Any;
use core::num::NonZeroU32;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::arena::Arena;
use crate::bundle::{Bundle, check_distinct};
use crate::entity::Entity;
use crate::recorded::{Command, Recorded, Removed, drop_recorded, remove_erased};
use crate::world::World;

/// Generation bit that marks a pending handle. World generations never have it
/// (they stay below 2^31), so a pending handle can never name a real entity.
const PENDING: u32 = 1 << 31;

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
const BLOCK: u64 = 64;

/// One past the last pending number handed out.
static NEXT_PENDING: AtomicU64 = AtomicU64::new(0);

/// The largest pending number plus one (63 bits: 32 in the index, 31 in the generation).
const PENDING_SPACE: u64 = 1 << 63;

/// A fresh block of `BLOCK` pending numbers; returns its first.
fn fresh_block() -> u64 {
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
fn too_many_spawns(held: u32, more: u32) -> ! {
    panic!(
        "freyr: command buffer spawn limit reached: a buffer records at most {} spawns between \
         applies, it holds {held} and {more} more were asked for; apply the buffer more often",
        u32::MAX
    )
}

/// The handle for pending number `n`.
fn pending_handle(n: u64) -> Entity {
    debug_assert!(n < PENDING_SPACE);
    let generation = PENDING | (n >> 32) as u32;
    Entity::from_parts(
        n as u32,
        NonZeroU32::new(generation).expect("the pending bit is set"),
    )
}

/// The pending number of `e`, if it is a pending handle.
fn pending_number(e: Entity) -> Option<u64> {
    let generation = e.generation();
    (generation & PENDING != 0)
        .then(|| (u64::from(generation & !PENDING) << 32) | u64::from(e.index()))
}

/// Drops a caught panic payload whose own `Drop` may panic: every further payload that raises
/// is dropped the same way, so nothing unwinds out of here. After 64 payloads in a row that
/// each panic when dropped, the last is leaked rather than looping forever.
pub(crate) fn drop_payload(payload: Box<dyn Any + Send>) {
    let mut payload = payload;
    for _ in 0..64 {
        match panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            Ok(()) => return,
            Err(next) => payload = next,
        }
    }
    core::mem::forget(payload);
}

/// What [`CommandBuffer::apply`] did.
///
/// # Examples
/// ```
/// use freyr::{CommandBuffer, World};
/// let mut world = World::new();
/// let mut commands = CommandBuffer::new();
/// let e = commands.spawn((1u8,));
/// commands.insert(e, (2u16,));
/// commands.despawn(e);
/// commands.despawn(e); // stale by then
/// let report = commands.apply(&mut world);
/// assert_eq!((report.applied, report.skipped_stale), (3, 1));
/// assert_eq!(report.spawned.len(), 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// Commands that took effect.
    pub applied: usize,
    /// Commands skipped because their target entity was stale (despawned, never spawned, or a
    /// pending handle from another buffer).
    pub skipped_stale: usize,
    /// Removals skipped because the entity lacked a component of the bundle.
    pub skipped_missing: usize,
    /// The real entities created by the buffer's spawns, in record order.
    pub spawned: Vec<Entity>,
}

/// Records spawn / despawn / insert / remove commands and applies them to a world later, in
/// record order.
///
/// [`spawn`](CommandBuffer::spawn) returns a *pending* handle that later commands of the
/// same buffer may target; `apply` maps it to the real entity. A pending handle never names a real
/// entity, so passing one to a world (or to another buffer) is reported as stale.
///
/// Recording allocates per buffer, not per command: the commands are plain records in one
/// list and their bundles are moved into one growing arena, and both keep their capacity when
/// the buffer is applied or cleared, so a reused buffer records without allocating.
///
/// # Examples
/// ```
/// use freyr::{CommandBuffer, World};
/// let mut world = World::new();
/// let mut commands = CommandBuffer::new();
/// let e = commands.spawn((1u32,));
/// commands.insert(e, ("tag",));
/// let report = commands.apply(&mut world);
/// let real = report.spawned[0];
/// assert_eq!(world.get::<&str>(real), Ok(&"tag"));
/// assert!(commands.is_empty());
/// ```
#[doc(alias = "Commands")]
#[doc(alias = "Deferred")]
pub struct CommandBuffer {
    /// The recorded commands, in order. Every bundle they carry is live in `arena`.
    commands: Vec<Command>,
    /// The recorded bundles.
    arena: Arena,
    /// Spawns recorded in this use of the buffer.
    spawns: u32,
    /// First pending number of each block this use took, in increasing order; spawn `k` has
    /// number `blocks[k / BLOCK] + k % BLOCK` (see [`BLOCK`]).
    blocks: Vec<u64>,
}

impl Default for CommandBuffer {
    fn default() -> Self {
        CommandBuffer::new()
    }
}

impl core::fmt::Debug for CommandBuffer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CommandBuffer")
            .field("len", &self.commands.len())
            .field("spawns", &self.spawns)
            .finish()
    }
}

impl CommandBuffer {
    /// An empty buffer.
    ///
    /// # Examples
    /// ```
    /// let commands = freyr::CommandBuffer::new();
    /// assert!(commands.is_empty());
    /// ```
    pub fn new() -> CommandBuffer {
        CommandBuffer {
            commands: Vec::new(),
            arena: Arena::new(),
            spawns: 0,
            blocks: Vec::new(),
        }
    }

    /// Records spawning `bundle`; returns a pending handle for later commands of this buffer.
    ///
    /// # Panics
    /// If `bundle` names a component type twice (nothing is recorded). If the buffer already
    /// holds `u32::MAX` spawns since it was last applied or cleared, or the process has numbered
    /// 2^63 pending handles (never in practice); nothing is recorded then either.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let mut commands = freyr::CommandBuffer::new();
    /// let pending = commands.spawn((1u8,));
    /// assert!(!world.contains(pending));
    /// let spawned = commands.apply(&mut world).spawned;
    /// assert_eq!(world.get::<u8>(spawned[0]), Ok(&1));
    /// ```
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        check_distinct::<B>();
        let spawns = self
            .spawns
            .checked_add(1)
            .unwrap_or_else(|| too_many_spawns(self.spawns, 1));
        let pending = self.handle_of(self.spawns);
        // Everything that can fail comes first: once the bundle is in the arena, the command
        // that owns it is recorded and counted.
        self.commands.reserve(1);
        let recorded = Recorded::new(&mut self.arena, bundle);
        self.commands.push(Command::Spawn(recorded));
        self.spawns = spawns;
        pending
    }

    /// Records despawning `entity` (a real handle or a pending handle of this buffer).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn(());
    /// let mut commands = freyr::CommandBuffer::new();
    /// commands.despawn(e);
    /// commands.apply(&mut world);
    /// assert!(!world.contains(e));
    /// ```
    pub fn despawn(&mut self, entity: Entity) {
        self.commands.push(Command::Despawn(entity));
    }

    /// Records inserting `bundle` into `entity`.
    ///
    /// # Panics
    /// If `bundle` names a component type twice (nothing is recorded).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn(());
    /// let mut commands = freyr::CommandBuffer::new();
    /// commands.insert(e, (5u8,));
    /// commands.apply(&mut world);
    /// assert_eq!(world.get::<u8>(e), Ok(&5));
    /// ```
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        check_distinct::<B>();
        // As in `spawn`: room for the command first, so a stored bundle always has its command.
        self.commands.reserve(1);
        let recorded = Recorded::new(&mut self.arena, bundle);
        self.commands.push(Command::Insert(entity, recorded));
    }

    /// Records removing (and dropping) bundle `B` from `entity`.
    ///
    /// # Panics
    /// If `B` names a component type twice (nothing is recorded).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((5u8, 6u16));
    /// let mut commands = freyr::CommandBuffer::new();
    /// commands.remove::<(u8,)>(e);
    /// commands.apply(&mut world);
    /// assert!(world.get::<u8>(e).is_err());
    /// assert_eq!(world.get::<u16>(e), Ok(&6));
    /// ```
    pub fn remove<B: Bundle>(&mut self, entity: Entity) {
        check_distinct::<B>();
        self.commands
            .push(Command::Remove(entity, remove_erased::<B>));
    }

    /// Number of recorded commands.
    ///
    /// # Examples
    /// ```
    /// let mut commands = freyr::CommandBuffer::new();
    /// commands.spawn(());
    /// assert_eq!(commands.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Whether no command is recorded.
    ///
    /// # Examples
    /// ```
    /// assert!(freyr::CommandBuffer::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// Discards every recorded command, dropping the recorded values. Pending handles issued so
    /// far become meaningless (stale if used later).
    ///
    /// # Examples
    /// ```
    /// let mut commands = freyr::CommandBuffer::new();
    /// commands.spawn((String::from("dropped"),));
    /// commands.clear();
    /// assert!(commands.is_empty());
    /// ```
    pub fn clear(&mut self) {
        self.reset();
        let commands = core::mem::take(&mut self.commands);
        // Empties the buffer when the drops are done, also if one panicked.
        let mut reset = Emptied {
            buffer: self,
            commands,
        };
        // SAFETY: every bundle the commands carry is live in the arena, and they are given up:
        // `Emptied` forgets the commands and clears the arena afterwards.
        unsafe { drop_recorded(&reset.commands, &reset.buffer.arena) };
        reset.commands.clear();
    }

    fn reset(&mut self) {
        self.spawns = 0;
        self.blocks.clear();
    }

    /// The pending handle of spawn `k` of this use, taking fresh blocks as needed.
    fn handle_of(&mut self, k: u32) -> Entity {
        let block = (u64::from(k) / BLOCK) as usize;
        while self.blocks.len() <= block {
            self.blocks.push(fresh_block());
        }
        pending_handle(self.blocks[block] + u64::from(k) % BLOCK)
    }

    /// The spawn number of `e` in this use, if `e` is one of its pending handles.
    fn spawn_of(&self, e: Entity) -> Option<usize> {
        let n = pending_number(e)?;
        // Blocks are taken in increasing order, so `blocks` is sorted.
        let block = self
            .blocks
            .partition_point(|&start| start <= n)
            .checked_sub(1)?;
        let offset = n - self.blocks[block];
        (offset < BLOCK)
            .then(|| block * BLOCK as usize + offset as usize)
            .filter(|&k| k < self.spawns as usize)
    }

    /// Moves every command of `other` to the end of this buffer, re-numbering `other`'s
    /// pending handles (its spawns are appended after this buffer's). Handles that `other` returned
    /// keep working only through this buffer. `other` is left empty.
    ///
    /// # Panics
    /// If the two buffers together would hold more than `u32::MAX` spawns, before anything
    /// moves.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let (mut a, mut b) = (freyr::CommandBuffer::new(), freyr::CommandBuffer::new());
    /// a.spawn((1u8,));
    /// let e = b.spawn((2u8,));
    /// b.insert(e, (3u16,));
    /// a.append(&mut b);
    /// let report = a.apply(&mut world);
    /// assert_eq!(world.get::<u16>(report.spawned[1]), Ok(&3));
    /// ```
    pub fn append(&mut self, other: &mut CommandBuffer) {
        let offset = self.spawns;
        let total = offset
            .checked_add(other.spawns)
            .unwrap_or_else(|| too_many_spawns(offset, other.spawns));
        // Whatever can fail happens before a bundle moves: the handle blocks for every spawn
        // of `other` (so `handle_of` below only reads them) and room for the commands.
        if let Some(last) = total.checked_sub(1).filter(|_| other.spawns > 0) {
            self.handle_of(last);
        }
        self.commands.reserve(other.commands.len());
        let shift = self.arena.append(&mut other.arena);
        // From here nothing panics: every bundle of `other` now lives in this arena.
        let mut taken = core::mem::take(&mut other.commands);
        for mut command in taken.drain(..) {
            match &mut command {
                Command::Spawn(r) => r.offset += shift,
                Command::Insert(e, r) => {
                    r.offset += shift;
                    if let Some(k) = other.spawn_of(*e) {
                        *e = self.handle_of(offset + k as u32);
                    }
                }
                Command::Despawn(e) | Command::Remove(e, _) => {
                    if let Some(k) = other.spawn_of(*e) {
                        *e = self.handle_of(offset + k as u32);
                    }
                }
            }
            self.commands.push(command);
        }
        self.spawns = total;
        other.reset();
        // Keep `other`'s allocation for its next round.
        other.commands = taken;
    }

    /// Applies every command to `world` in record order and empties the buffer (it stays
    /// reusable). Commands whose target is stale are skipped and counted; removals of a missing
    /// component are skipped and counted.
    ///
    /// # Panics
    ///
    /// If a command panics (a component's `Drop`, run by a despawn, a remove or an insert that
    /// replaces a value), the world stays valid and every *remaining* command is still applied;
    /// then the first such panic is re-raised (later ones are dropped). The buffer is left empty
    /// either way, and every recorded value is dropped exactly once (or moved into the world).
    ///
    /// A spawn, insert or remove that would pass one of the world's [capacity
    /// limits](crate::World#capacity-limits) panics the same way: that command is not applied
    /// (its bundle is dropped), the others are, and the limit's panic is re-raised.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let old = world.spawn(());
    /// world.despawn(old).unwrap();
    /// let mut commands = freyr::CommandBuffer::new();
    /// commands.insert(old, (1u8,));
    /// let report = commands.apply(&mut world);
    /// assert_eq!((report.applied, report.skipped_stale), (0, 1));
    /// ```
    pub fn apply(&mut self, world: &mut World) -> ApplyReport {
        match self.try_apply(world) {
            (report, None) => report,
            (_, Some(panic)) => panic::resume_unwind(panic),
        }
    }

    /// Like [`apply`](CommandBuffer::apply), but returns the first panic of a command instead of
    /// re-raising it, with the report of everything applied (for a caller that has more to do
    /// before re-raising it, such as a sync point applying several buffers). A command that
    /// panicked is counted in no field of the report (its change may have happened: a despawn
    /// whose `Drop` panicked still removed the entity).
    ///
    /// # Examples
    /// ```
    /// struct Bomb;
    /// impl Drop for Bomb {
    ///     fn drop(&mut self) {
    ///         panic!("boom");
    ///     }
    /// }
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((Bomb,));
    /// let mut commands = freyr::CommandBuffer::new();
    /// commands.despawn(e);
    /// commands.spawn((7u8,));
    /// let (report, panic) = commands.try_apply(&mut world);
    /// assert_eq!(report.applied, 1); // the spawn after the panicking despawn still ran
    /// assert_eq!(panic.unwrap().downcast_ref::<&str>(), Some(&"boom"));
    /// assert_eq!(world.len(), 1);
    /// ```
    pub fn try_apply(&mut self, world: &mut World) -> (ApplyReport, Option<Box<dyn Any + Send>>) {
        let commands = core::mem::take(&mut self.commands);
        // Spawn `k`'s entity, `None` if that spawn panicked: a spawn keeps its number either
        // way, so later handles still resolve to their own spawns.
        let mut spawned: Vec<Option<Entity>> = Vec::with_capacity(self.spawns as usize);
        let mut report = ApplyReport::default();
        let mut first_panic = None;
        // Should anything unwind out of the loop, the bundles of the commands not yet run are
        // dropped and the buffer is emptied all the same.
        let mut rest = Unapplied {
            buffer: &*self,
            commands: &commands,
            next: 0,
        };
        while let Some(&command) = rest.commands.get(rest.next) {
            // This command's bundle is consumed by `apply_one`, whatever happens in it.
            rest.next += 1;
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                rest.buffer.apply_one(command, world, &mut spawned)
            }));
            match outcome {
                Ok(Some(true)) => report.applied += 1,
                Ok(Some(false)) => report.skipped_stale += 1,
                Ok(None) => report.skipped_missing += 1,
                Err(panic) => match first_panic {
                    None => first_panic = Some(panic),
                    Some(_) => drop_payload(panic),
                },
            }
        }
        drop(rest);
        report.spawned = spawned.into_iter().flatten().collect();
        self.reset();
        // Every bundle was moved out or dropped; keep the allocations for the next round.
        self.arena.clear();
        self.commands = commands;
        self.commands.clear();
        (report, first_panic)
    }

    /// Applies one command: `Some(true)` if it took effect, `Some(false)` if its target was
    /// stale, `None` for a removal of a missing component. The command's bundle is moved out
    /// of the arena (into the world, or dropped) on every path, panics included.
    ///
    /// The command must be one of this buffer's, not yet applied (its bundle live in the arena).
    fn apply_one(
        &self,
        command: Command,
        world: &mut World,
        spawned: &mut Vec<Option<Entity>>,
    ) -> Option<bool> {
        let resolve = |e: Entity, spawned: &[Option<Entity>]| -> Option<Entity> {
            match pending_number(e) {
                None => Some(e),
                Some(_) => self
                    .spawn_of(e)
                    .and_then(|k| spawned.get(k).copied().flatten()),
            }
        };
        Some(match command {
            Command::Spawn(r) => {
                spawned.push(None);
                // SAFETY: the command is unapplied, so its bundle is live in the arena; it is
                // moved out here, once.
                let entity = unsafe { (r.ops.spawn)(&self.arena, r.offset, world) };
                *spawned.last_mut().expect("pushed above") = Some(entity);
                true
            }
            Command::Despawn(e) => resolve(e, spawned).is_some_and(|e| world.despawn(e).is_ok()),
            Command::Insert(e, r) => match resolve(e, spawned) {
                // SAFETY: as for the spawn: the live bundle is moved out (inserted) once.
                Some(e) => unsafe { (r.ops.insert)(&self.arena, r.offset, world, e) },
                None => {
                    // SAFETY: the command is unapplied, so its bundle is live in the arena; the
                    // target is stale, so the bundle is dropped here, once.
                    unsafe { (r.ops.drop)(&self.arena, r.offset) };
                    false
                }
            },
            Command::Remove(e, remove) => match resolve(e, spawned).map(|e| remove(world, e)) {
                Some(Removed::Done) => true,
                Some(Removed::Missing) => return None,
                Some(Removed::Stale) | None => false,
            },
        })
    }
}

impl Drop for CommandBuffer {
    fn drop(&mut self) {
        // SAFETY: every bundle the commands carry is live in the arena and given up: the
        // buffer is going away.
        unsafe { drop_recorded(&self.commands, &self.arena) };
    }
}

/// Empties a buffer whose commands were taken out and whose bundles are being dropped: puts
/// the (cleared) command list back and clears the arena, also when a `Drop` panicked.
struct Emptied<'a> {
    buffer: &'a mut CommandBuffer,
    commands: Vec<Command>,
}

impl Drop for Emptied<'_> {
    fn drop(&mut self) {
        self.commands.clear();
        self.buffer.commands = core::mem::take(&mut self.commands);
        self.buffer.arena.clear();
    }
}

/// The commands of an `apply` from `next` on, whose bundles are still in the arena: dropped
/// if the loop is left early, so none leaks.
struct Unapplied<'a> {
    buffer: &'a CommandBuffer,
    commands: &'a [Command],
    next: usize,
}

impl Drop for Unapplied<'_> {
    fn drop(&mut self) {
        // SAFETY: commands from `next` on were not applied, so their bundles are live in the
        // buffer's arena; the apply gives them up.
        unsafe { drop_recorded(&self.commands[self.next..], &self.buffer.arena) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(
        expected = "freyr: command buffer spawn limit reached: a buffer records at \
                               most 4294967295 spawns between applies, it holds 4294967295 and \
                               1 more were asked for; apply the buffer more often"
    )]
    fn spawning_past_the_buffer_limit_panics_with_what_to_do() {
        let mut commands = CommandBuffer::new();
        // 2^32 - 1 recorded spawns are out of reach of a test; the count is what is checked.
        commands.spawns = u32::MAX;
        commands.spawn(());
    }

    #[test]
    #[should_panic(
        expected = "freyr: command buffer spawn limit reached: a buffer records at \
                               most 4294967295 spawns between applies, it holds 4294967295 and \
                               2 more were asked for"
    )]
    fn appending_past_the_buffer_limit_panics_with_what_to_do() {
        let mut commands = CommandBuffer::new();
        commands.spawns = u32::MAX;
        let mut other = CommandBuffer::new();
        other.spawn(());
        other.spawn(());
        commands.append(&mut other);
    }

    #[test]
    fn pending_handles_never_collide_with_world_generations() {
        let mut commands = CommandBuffer::new();
        let p = commands.spawn(());
        assert!(p.generation() > Entity::MAX_GENERATION);
        assert_eq!(commands.spawn_of(p), Some(0));
        let mut world = World::new();
        assert!(!world.contains(p));
        assert_eq!(commands.apply(&mut world).spawned.len(), 1);
    }

    #[test]
    fn pending_from_before_clear_is_stale() {
        let mut world = World::new();
        let mut commands = CommandBuffer::new();
        let p = commands.spawn((1u8,));
        commands.clear();
        commands.spawn((2u8,));
        commands.despawn(p);
        let report = commands.apply(&mut world);
        assert_eq!((report.applied, report.skipped_stale), (1, 1));
        assert_eq!(world.len(), 1);
    }
}

#[cfg(test)]
mod numbering {
    use super::*;

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
