//! What an observer of an apply is told about each command that ran: [`AppliedCommand`].

use crate::archetype::ArchetypeId;
use crate::bundle::BundleTypes;
use crate::entity::Entity;

/// One command as [`CommandBuffer::try_apply_observed`](crate::CommandBuffer::try_apply_observed)
/// reports it, right after it ran (also when it panicked part-way: read the world to see what
/// happened, e.g. a despawn whose `Drop` panicked still removed the entity). Stale commands and
/// removals of a missing component are not reported; an [`EntityOp`](crate::EntityOp) reports
/// each change it made.
///
/// # Examples
/// ```
/// use freyr::storage::AppliedCommand;
/// let mut world = freyr::World::new();
/// let mut commands = freyr::CommandBuffer::new();
/// let e = commands.spawn((1u8,));
/// commands.despawn(e);
/// let mut seen = Vec::new();
/// commands.try_apply_observed(&mut world, &mut |_, applied| seen.push(*applied));
/// assert!(matches!(seen[0], AppliedCommand::Spawn { .. }));
/// assert!(matches!(seen[1], AppliedCommand::Despawn { .. }));
/// ```
#[derive(Clone, Copy, Debug)]
pub enum AppliedCommand {
    /// `entity` was spawned with a bundle of `types`.
    Spawn {
        /// The new entity.
        entity: Entity,
        /// The bundle's component types.
        types: BundleTypes,
    },
    /// A bundle of `types` was inserted into `entity`, which was in archetype `before`.
    Insert {
        /// The target.
        entity: Entity,
        /// Its archetype before the insert.
        before: ArchetypeId,
        /// The bundle's component types.
        types: BundleTypes,
    },
    /// Components were removed from `entity`, which was in archetype `before`.
    Remove {
        /// The target.
        entity: Entity,
        /// Its archetype before the removal.
        before: ArchetypeId,
    },
    /// `entity`, which was in archetype `before`, was despawned.
    Despawn {
        /// The despawned entity.
        entity: Entity,
        /// Its archetype before the despawn.
        before: ArchetypeId,
    },
}
