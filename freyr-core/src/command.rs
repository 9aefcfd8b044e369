//! Command buffers: structural changes recorded now and applied to a world later, in order.

use core::num::NonZeroU32;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::bundle::{Bundle, check_distinct};
use crate::entity::Entity;
use crate::error::ComponentError;
use crate::world::World;

/// Generation bit that marks a pending handle. World generations never have it
/// (they stay below 2^31), so a pending handle can never name a real entity.
const PENDING: u32 = 1 << 31;

/// Source of pending tags: each buffer (and each use of a buffer, after `apply`/`clear`)
/// gets a fresh tag, so a pending handle is only ever resolved by the buffer use that made it.
static NEXT_TAG: AtomicU32 = AtomicU32::new(0);

fn fresh_tag() -> NonZeroU32 {
    let n = NEXT_TAG.fetch_add(1, Ordering::Relaxed);
    NonZeroU32::new(PENDING | (n & !PENDING)).expect("pending bit is set")
}

/// A bundle with its type erased, for recording.
trait ErasedBundle: Send + Sync {
    fn spawn(self: Box<Self>, world: &mut World) -> Entity;
    fn insert(self: Box<Self>, world: &mut World, entity: Entity) -> bool;
}

impl<B: Bundle> ErasedBundle for B {
    fn spawn(self: Box<Self>, world: &mut World) -> Entity {
        world.spawn(*self)
    }

    fn insert(self: Box<Self>, world: &mut World, entity: Entity) -> bool {
        world.insert(entity, *self).is_ok()
    }
}

/// How a recorded removal ran.
enum Removed {
    Done,
    Stale,
    Missing,
}

fn remove_erased<B: Bundle>(world: &mut World, entity: Entity) -> Removed {
    match world.remove::<B>(entity) {
        Ok(_) => Removed::Done,
        Err(ComponentError::NoSuchEntity) => Removed::Stale,
        Err(ComponentError::MissingComponent(_)) => Removed::Missing,
    }
}

enum Command {
    Spawn(Box<dyn ErasedBundle>),
    Despawn(Entity),
    Insert(Entity, Box<dyn ErasedBundle>),
    Remove(Entity, fn(&mut World, Entity) -> Removed),
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
pub struct CommandBuffer {
    commands: Vec<Command>,
    /// Pending handles issued so far: handle `k` is `Entity { index: k, generation: tag }`.
    spawns: u32,
    tag: NonZeroU32,
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
            spawns: 0,
            tag: fresh_tag(),
        }
    }

    /// Records spawning `bundle`; returns a pending handle for later commands of this buffer.
    ///
    /// # Panics
    /// If `bundle` names a component type twice (nothing is recorded).
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
        let pending = Entity::from_parts(self.spawns, self.tag);
        self.spawns = self
            .spawns
            .checked_add(1)
            .expect("freyr: too many spawns in one buffer");
        self.commands.push(Command::Spawn(Box::new(bundle)));
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
        self.commands
            .push(Command::Insert(entity, Box::new(bundle)));
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
        self.commands.clear();
    }

    fn reset(&mut self) {
        self.spawns = 0;
        self.tag = fresh_tag();
    }

    /// Moves every command of `other` to the end of this buffer, re-numbering `other`'s
    /// pending handles (its spawns are appended after this buffer's). Handles that `other` returned
    /// keep working only through this buffer. `other` is left empty.
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
        let (from, to) = (other.tag, self.tag);
        let remap = |e: &mut Entity| {
            if e.generation() == from.get() {
                *e = Entity::from_parts(e.index() + offset, to);
            }
        };
        for mut command in other.commands.drain(..) {
            match &mut command {
                Command::Spawn(_) => {}
                Command::Despawn(e) | Command::Insert(e, _) | Command::Remove(e, _) => remap(e),
            }
            self.commands.push(command);
        }
        self.spawns = self
            .spawns
            .checked_add(other.spawns)
            .expect("freyr: too many spawns in one buffer");
        other.reset();
    }

    /// Applies every command to `world` in record order and empties the buffer (it stays
    /// reusable). Commands whose target is stale are skipped and counted; removals of a missing
    /// component are skipped and counted.
    ///
    /// If a command panics (a component's `Drop`), the world stays valid, the rest of the
    /// commands are dropped unapplied, the buffer is left empty, and the panic continues.
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
        let mut commands = core::mem::take(&mut self.commands);
        let (tag, spawns) = (self.tag, self.spawns as usize);
        self.reset();
        let mut report = ApplyReport {
            spawned: Vec::with_capacity(spawns),
            ..ApplyReport::default()
        };
        for command in commands.drain(..) {
            let resolve = |e: Entity, spawned: &[Entity]| -> Option<Entity> {
                if e.generation() == tag.get() {
                    spawned.get(e.index() as usize).copied()
                } else {
                    Some(e)
                }
            };
            let done = match command {
                Command::Spawn(bundle) => {
                    let entity = bundle.spawn(world);
                    report.spawned.push(entity);
                    true
                }
                Command::Despawn(e) => {
                    resolve(e, &report.spawned).is_some_and(|e| world.despawn(e).is_ok())
                }
                Command::Insert(e, bundle) => match resolve(e, &report.spawned) {
                    Some(e) => bundle.insert(world, e),
                    None => false,
                },
                Command::Remove(e, remove) => {
                    match resolve(e, &report.spawned).map(|e| remove(world, e)) {
                        Some(Removed::Done) => true,
                        Some(Removed::Missing) => {
                            report.skipped_missing += 1;
                            continue;
                        }
                        Some(Removed::Stale) | None => false,
                    }
                }
            };
            if done {
                report.applied += 1;
            } else {
                report.skipped_stale += 1;
            }
        }
        // Keep the allocation for the next round.
        self.commands = commands;
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_handles_never_collide_with_world_generations() {
        let mut commands = CommandBuffer::new();
        let p = commands.spawn(());
        assert!(p.generation() > Entity::MAX_GENERATION);
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
