//! What a [`CommandBuffer`](crate::CommandBuffer) records: each command as a small plain
//! record, its bundle moved into the buffer's [`Arena`], and one table of type-erased
//! operations per bundle type that later moves the bundle into the world (or drops it).
//!
//! Ownership rule: a recorded bundle is live in the arena from `Recorded::new` until exactly
//! one of `BundleOps::spawn`, `insert` or `drop` runs on it; the buffer, not the command, decides
//! when (`apply` runs each command once, `clear` and `Drop` drop the rest).

use crate::arena::Arena;
use crate::bundle::Bundle;
use crate::column::for_each_finishing_on_panic;
use crate::entity::Entity;
use crate::error::ComponentError;
use crate::world::World;

/// What a recorded bundle can be asked to do, its type erased: one table per bundle type,
/// shared by every command that records that type. Each entry moves the bundle out of the arena
/// (or drops it there), so each is called at most once per recorded bundle.
///
/// Safety of every entry: the offset holds a live bundle of the type the table was made for
/// (as [`Recorded`] pairs them), which the caller gives up.
pub(crate) struct BundleOps {
    /// Moves the bundle at the offset out of the arena and spawns it.
    pub(crate) spawn: unsafe fn(&Arena, usize, &mut World) -> Entity,
    /// Moves the bundle at the offset out of the arena and inserts it into the entity; false
    /// if the entity is stale (the bundle is dropped).
    pub(crate) insert: unsafe fn(&Arena, usize, &mut World, Entity) -> bool,
    /// Drops the bundle at the offset in place.
    pub(crate) drop: unsafe fn(&Arena, usize),
    /// The bundle's component types.
    pub(crate) types: fn() -> crate::bundle::BundleTypes,
}

/// The [`BundleOps`] of bundle type `B`.
struct OpsOf<B>(core::marker::PhantomData<B>);

impl<B: Bundle> OpsOf<B> {
    const OPS: BundleOps = BundleOps {
        spawn: spawn_recorded::<B>,
        insert: insert_recorded::<B>,
        drop: Arena::drop_at::<B>,
        types: crate::bundle::BundleTypes::of::<B>,
    };
}

/// # Safety
/// A `B` recorded at `offset` of `arena` and not yet moved out or dropped; it is moved out here.
unsafe fn spawn_recorded<B: Bundle>(arena: &Arena, offset: usize, world: &mut World) -> Entity {
    // SAFETY: the caller guarantees a live `B` at `offset`, given up to this call.
    world.spawn(unsafe { arena.take::<B>(offset) })
}

/// # Safety
/// As for [`spawn_recorded`].
unsafe fn insert_recorded<B: Bundle>(
    arena: &Arena,
    offset: usize,
    world: &mut World,
    entity: Entity,
) -> bool {
    // SAFETY: as in `spawn_recorded`.
    world
        .insert(entity, unsafe { arena.take::<B>(offset) })
        .is_ok()
}

/// A bundle recorded in a buffer's arena: where it is and how to use it.
#[derive(Copy, Clone)]
pub(crate) struct Recorded {
    pub(crate) ops: &'static BundleOps,
    pub(crate) offset: usize,
}

impl Recorded {
    /// Moves `bundle` into `arena`.
    pub(crate) fn new<B: Bundle>(arena: &mut Arena, bundle: B) -> Recorded {
        Recorded {
            ops: &OpsOf::<B>::OPS,
            offset: arena.push(bundle),
        }
    }
}

/// How a recorded removal ran.
pub(crate) enum Removed {
    /// The bundle was removed (and dropped).
    Done,
    /// The target entity was stale.
    Stale,
    /// The entity lacked a component of the bundle.
    Missing,
}

/// Removes (and drops) bundle `B` from `entity`: a `Remove` command's operation.
pub(crate) fn remove_erased<B: Bundle>(world: &mut World, entity: Entity) -> Removed {
    match world.remove::<B>(entity) {
        Ok(_) => Removed::Done,
        Err(ComponentError::NoSuchEntity(_)) => Removed::Stale,
        Err(ComponentError::MissingComponent { .. }) => Removed::Missing,
    }
}

/// One recorded command. Its bundle, if any, lives in the buffer's arena: a command is plain
/// data, and whoever consumes it moves the bundle out or drops it (exactly once).
#[derive(Copy, Clone)]
pub(crate) enum Command {
    Spawn(Recorded),
    Despawn(Entity),
    Insert(Entity, Recorded),
    Remove(Entity, fn(&mut World, Entity) -> Removed),
    /// An operation defined above the world, on two entities (see `EntityOp`).
    Op(Entity, Entity, &'static crate::command::op::EntityOp),
}

impl Command {
    /// The bundle this command carries, if any.
    pub(crate) fn recorded(&self) -> Option<Recorded> {
        match *self {
            Command::Spawn(r) | Command::Insert(_, r) => Some(r),
            Command::Despawn(_) | Command::Remove(..) | Command::Op(..) => None,
        }
    }
}

/// Drops the bundles of `commands` still in `arena`, even if one's `Drop` panics (the rest are
/// still dropped and the panic continues; a second panic aborts, as for a `Vec`).
///
/// # Safety
/// Every bundle `commands` carries is live in `arena` and given up by the caller.
pub(crate) unsafe fn drop_recorded(commands: &[Command], arena: &Arena) {
    for_each_finishing_on_panic(commands.len(), |i| {
        if let Some(r) = commands[i].recorded() {
            // SAFETY: the bundle is live and given up (caller contract); index `i` is visited
            // once.
            unsafe { (r.ops.drop)(arena, r.offset) };
        }
    });
}
