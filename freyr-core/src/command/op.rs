//! Operations on a pair of entities that a layer above the world defines (the registry's
//! hierarchy edits are ones), recorded into a [`CommandBuffer`](crate::CommandBuffer) like any
//! command.

use crate::entity::Entity;
use crate::world::World;

use super::applied::AppliedCommand;

/// A structural change on two entities that a layer above the world defines, recorded with
/// [`CommandBuffer::op`](crate::CommandBuffer::op) and run when the buffer applies, in record
/// order with the other commands, both handles resolved (a pending handle of the same buffer
/// names the entity its spawn made).
///
/// Contract of `run`: it gets the world and the two resolved entities, both alive. It returns
/// `true` if it applied, `false` if it did not (the command is then counted as stale); it
/// pushes onto its last argument one [`AppliedCommand`] per structural change it made, in
/// order, for the buffer's observer (see
/// [`CommandBuffer::try_apply_observed`](crate::CommandBuffer::try_apply_observed)). If it
/// panics it must leave the world valid; the panic is kept and re-raised like a command's,
/// after the rest of the buffer ran. If either handle is stale when the buffer applies, `run`
/// is not called and the command counts as stale.
///
/// # Examples
///
/// ```
/// use freyr::storage::{AppliedCommand, BundleTypes, EntityOp};
/// use freyr::{CommandBuffer, Entity, World};
///
/// /// Copies `a`'s `u32` into `b`.
/// fn copy(world: &mut World, a: Entity, b: Entity, changes: &mut Vec<AppliedCommand>) -> bool {
///     let Ok(&v) = world.get::<u32>(a) else { return false };
///     let before = world.entity_location(b).expect("alive").0;
///     world.insert(b, (v,)).expect("alive");
///     changes.push(AppliedCommand::Insert { entity: b, before, types: BundleTypes::of::<(u32,)>() });
///     true
/// }
/// static COPY: EntityOp = EntityOp { name: "copy", run: copy };
///
/// let mut world = World::new();
/// let a = world.spawn((7u32,));
/// let mut commands = CommandBuffer::new();
/// let b = commands.spawn(());
/// commands.op(&COPY, a, b);
/// let report = commands.apply(&mut world);
/// assert_eq!(world.get::<u32>(report.spawned[0]), Ok(&7));
/// assert_eq!(report.applied, 2);
/// ```
pub struct EntityOp {
    /// What the operation is, for messages (`"set_parent"`).
    pub name: &'static str,
    /// Runs the operation (see the type's contract).
    pub run: fn(&mut World, Entity, Entity, &mut Vec<AppliedCommand>) -> bool,
}

impl core::fmt::Debug for EntityOp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("EntityOp")
            .field("name", &self.name)
            .finish()
    }
}
