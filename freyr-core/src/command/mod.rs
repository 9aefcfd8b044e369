//! Command buffers: structural changes recorded now and applied to a world later, in order.
//!
//! Recording allocates per buffer, not per command: a command is a small record in one `Vec`,
//! and the bundle it carries moves into the buffer's [`Arena`] (one growing allocation), from
//! which `apply` moves it into the world. Both keep their capacity when the buffer is emptied.

pub(crate) mod applied;
pub(crate) mod apply;
pub(crate) mod op;
mod pending;

use crate::arena::Arena;
use crate::bundle::{Bundle, check_distinct};
use crate::entity::Entity;
use crate::recorded::{Command, Recorded, drop_recorded, remove_erased};

use self::pending::{BLOCK, fresh_block, pending_handle, pending_number, too_many_spawns};

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
    /// `Op` commands recorded in this use of the buffer.
    ops: usize,
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
            ops: 0,
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

    /// The existing entities the recorded despawns name, in record order (despawns of pending
    /// handles, which name entities this buffer spawns, are left out). The registry reads them
    /// before a sync point applies the buffer, to despawn the children of a despawned parent.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn(());
    /// let mut commands = freyr::CommandBuffer::new();
    /// let pending = commands.spawn(());
    /// commands.despawn(pending);
    /// commands.despawn(e);
    /// assert_eq!(commands.despawned_entities().collect::<Vec<_>>(), [e]);
    /// ```
    pub fn despawned_entities(&self) -> impl Iterator<Item = Entity> + '_ {
        self.commands.iter().filter_map(|c| match *c {
            Command::Despawn(e) if pending_number(e).is_none() => Some(e),
            _ => None,
        })
    }

    /// Whether no command is recorded.
    ///
    /// # Examples
    /// ```
    /// assert!(freyr::CommandBuffer::new().is_empty());
    /// ```
    #[inline]
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
        self.ops = 0;
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
                Command::Op(a, b, _) => {
                    for e in [a, b] {
                        if let Some(k) = other.spawn_of(*e) {
                            *e = self.handle_of(offset + k as u32);
                        }
                    }
                }
            }
            self.commands.push(command);
        }
        self.spawns = total;
        self.ops += other.ops;
        other.reset();
        // Keep `other`'s allocation for its next round.
        other.commands = taken;
    }
}

impl CommandBuffer {
    /// Records running `op` on `a` and `b` (real handles or pending handles of this buffer).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::storage::{AppliedCommand, EntityOp};
    /// use freyr::{CommandBuffer, Entity, World};
    ///
    /// fn swap(world: &mut World, a: Entity, b: Entity, _: &mut Vec<AppliedCommand>) -> bool {
    ///     let x = *world.get::<u8>(a).unwrap();
    ///     let y = core::mem::replace(world.get_mut::<u8>(b).unwrap(), x);
    ///     *world.get_mut::<u8>(a).unwrap() = y;
    ///     true
    /// }
    /// static SWAP: EntityOp = EntityOp { name: "swap", run: swap };
    ///
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn((1u8,)), world.spawn((2u8,)));
    /// world.despawn(b).unwrap();
    /// let mut commands = CommandBuffer::new();
    /// commands.op(&SWAP, a, b); // `b` is stale: not run
    /// let report = commands.apply(&mut world);
    /// assert_eq!((report.applied, report.skipped_stale), (0, 1));
    /// ```
    pub fn op(&mut self, op: &'static self::op::EntityOp, a: Entity, b: Entity) {
        self.commands.push(Command::Op(a, b, op));
        self.ops += 1;
    }

    /// Number of [`op`](CommandBuffer::op) commands recorded since the buffer was last
    /// applied or cleared.
    ///
    /// # Examples
    ///
    /// ```
    /// let commands = freyr::CommandBuffer::new();
    /// assert_eq!(commands.ops(), 0);
    /// ```
    #[inline]
    pub fn ops(&self) -> usize {
        self.ops
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::World;

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
