//! Applying a buffer: [`CommandBuffer::apply`] and [`CommandBuffer::try_apply`] run the
//! commands in record order, finish every one even when a `Drop` panics, and say what they did
//! ([`ApplyReport`]).

use core::any::Any;
use std::panic::{self, AssertUnwindSafe};

use crate::archetype::ArchetypeId;
use crate::entity::Entity;
use crate::recorded::{Command, Removed, drop_recorded};
use crate::world::World;

use super::CommandBuffer;
pub use super::applied::AppliedCommand;
use super::pending::pending_number;

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

/// What observes an apply: called after each command with the world as it left it.
pub(crate) type ApplyObserver<'a> = &'a mut dyn FnMut(&World, &AppliedCommand);

impl CommandBuffer {
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
        self.apply_inner(world, None)
    }

    /// Like [`try_apply`](CommandBuffer::try_apply), and calls `observe` after each command
    /// that took effect (or panicked part-way), in record order, outside the world operation:
    /// the world is valid and readable then. A panic of `observe` is kept like a command's.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let mut commands = freyr::CommandBuffer::new();
    /// commands.spawn((1u8,));
    /// commands.spawn((2u8,));
    /// let mut count = 0;
    /// let (report, panic) = commands.try_apply_observed(&mut world, &mut |_, _| count += 1);
    /// assert_eq!((report.applied, count), (2, 2));
    /// assert!(panic.is_none());
    /// ```
    pub fn try_apply_observed(
        &mut self,
        world: &mut World,
        observe: ApplyObserver<'_>,
    ) -> (ApplyReport, Option<Box<dyn Any + Send>>) {
        self.apply_inner(world, Some(observe))
    }

    fn apply_inner(
        &mut self,
        world: &mut World,
        mut observe: Option<ApplyObserver<'_>>,
    ) -> (ApplyReport, Option<Box<dyn Any + Send>>) {
        let commands = core::mem::take(&mut self.commands);
        // Spawn `k`'s entity, `None` if that spawn panicked: a spawn keeps its number either
        // way, so later handles still resolve to their own spawns.
        let mut spawned: Vec<Option<Entity>> = Vec::with_capacity(self.spawns as usize);
        let mut report = ApplyReport::default();
        let mut first_panic = None;
        // The structural changes an `Op` command reports, for the observer.
        let mut changes: Vec<AppliedCommand> = Vec::new();
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
            let before = observe
                .as_ref()
                .and_then(|_| rest.buffer.target(command, &spawned))
                .and_then(|e| Some((e, world.entity_location(e)?.0)));
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                rest.buffer
                    .apply_one(command, world, &mut spawned, &mut changes)
            }));
            if let Some(observe) = observe.as_mut()
                && matches!(outcome, Ok(Some(true)) | Err(_))
            {
                let reports = applied(command, before, &spawned)
                    .into_iter()
                    .chain(changes.drain(..));
                for applied in reports {
                    if let Err(panic) =
                        panic::catch_unwind(AssertUnwindSafe(|| observe(world, &applied)))
                    {
                        match first_panic {
                            None => first_panic = Some(panic),
                            Some(_) => drop_payload(panic),
                        }
                    }
                }
            }
            changes.clear();
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
        changes: &mut Vec<AppliedCommand>,
    ) -> Option<bool> {
        let resolve = |e: Entity, spawned: &[Option<Entity>]| self.resolve(e, spawned);
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
            Command::Op(a, b, op) => match (resolve(a, spawned), resolve(b, spawned)) {
                (Some(a), Some(b)) if world.contains(a) && world.contains(b) => {
                    (op.run)(world, a, b, changes)
                }
                _ => false,
            },
        })
    }
}

impl CommandBuffer {
    /// The real entity `e` names: itself, or the entity its pending spawn made.
    fn resolve(&self, e: Entity, spawned: &[Option<Entity>]) -> Option<Entity> {
        match pending_number(e) {
            None => Some(e),
            Some(_) => self
                .spawn_of(e)
                .and_then(|k| spawned.get(k).copied().flatten()),
        }
    }

    /// The entity a non-spawn command targets, resolved.
    fn target(&self, command: Command, spawned: &[Option<Entity>]) -> Option<Entity> {
        match command {
            Command::Spawn(_) => None,
            Command::Despawn(e)
            | Command::Insert(e, _)
            | Command::Remove(e, _)
            | Command::Op(e, ..) => self.resolve(e, spawned),
        }
    }
}

/// The report of a command that ran: `before` is its target and that target's archetype before
/// it ran; a spawn's entity is the last one made.
fn applied(
    command: Command,
    before: Option<(Entity, ArchetypeId)>,
    spawned: &[Option<Entity>],
) -> Option<AppliedCommand> {
    Some(match command {
        Command::Spawn(r) => AppliedCommand::Spawn {
            entity: (*spawned.last()?)?,
            types: (r.ops.types)(),
        },
        Command::Insert(_, r) => {
            let (entity, before) = before?;
            AppliedCommand::Insert {
                entity,
                before,
                types: (r.ops.types)(),
            }
        }
        Command::Remove(..) => {
            let (entity, before) = before?;
            AppliedCommand::Remove { entity, before }
        }
        Command::Despawn(_) => {
            let (entity, before) = before?;
            AppliedCommand::Despawn { entity, before }
        }
        // An operation reports its own changes.
        Command::Op(..) => return None,
    })
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
