//! [`SnapshotTypes`]: which component types a snapshot copies and how, and
//! [`MissingSnapshotTypes`], the error naming those it cannot copy.

use core::any::TypeId;
use core::fmt;

use crate::component::{Component, ComponentId, TypeIdMap};
use crate::world::World;

use super::columns::ValueOps;

/// Which component types a snapshot copies, and how: by `Clone`, by plain memory copy (`Copy`
/// types), or not at all (excluded). A type a live entity has must be registered: a forgotten
/// type must never diverge unseen, so [`World::snapshot`] refuses a world with one.
///
/// An excluded type is one the user states never lives at a snapshot point (a marker added
/// and removed within a tick, say): it may be registered in the world and be part of empty
/// archetypes, but a snapshot of a world in which a live entity has it is refused too. Rows
/// cannot be restored without one of their columns, and restoring the entity without it
/// would change its archetype, its row and every id after it.
///
/// # Examples
/// ```
/// use freyr::World;
/// use freyr::snapshot::SnapshotTypes;
///
/// #[derive(Clone, Copy)]
/// struct Pos(f32);
/// #[derive(Clone)]
/// struct Name(String);
///
/// let mut world = World::new();
/// let e = world.spawn((Pos(1.0), Name("a".into())));
/// let mut types = SnapshotTypes::new();
/// types.register_copy::<Pos>();
/// assert_eq!(world.snapshot(&types).unwrap_err().unregistered, [core::any::type_name::<Name>()]);
/// types.register_clone::<Name>();
/// let snapshot = world.snapshot(&types).unwrap();
/// world.despawn(e).unwrap();
/// let world = World::restore_from(&snapshot);
/// assert_eq!(world.get::<Name>(e).unwrap().0, "a");
/// ```
#[derive(Default)]
pub struct SnapshotTypes {
    pub(super) ops: TypeIdMap<ValueOps>,
    excluded: TypeIdMap<&'static str>,
}

impl SnapshotTypes {
    /// No type registered.
    pub fn new() -> SnapshotTypes {
        SnapshotTypes::default()
    }

    /// Copies `T` with `Clone`, value by value.
    ///
    /// # Panics
    /// If `T` was excluded.
    pub fn register_clone<T: Component + Clone>(&mut self) {
        self.set::<T>(ValueOps::clone::<T>(), "register_snapshot_clone");
    }

    /// Copies `T` with a plain memory copy: the fast path for `Copy` types.
    ///
    /// # Panics
    /// If `T` was excluded.
    pub fn register_copy<T: Component + Copy>(&mut self) {
        self.set::<T>(ValueOps::copy::<T>(), "register_snapshot_copy");
    }

    /// Marks `T` as never live at a snapshot point (see the type's documentation).
    ///
    /// # Panics
    /// If `T` was registered.
    pub fn exclude<T: Component>(&mut self) {
        let name = core::any::type_name::<T>();
        if self.ops.contains_key(&TypeId::of::<T>()) {
            panic!(
                "freyr: exclude_from_snapshot::<{name}>() after registering it for snapshots: \
                 a type is either copied or excluded; remove one of the two calls"
            );
        }
        self.excluded.insert(TypeId::of::<T>(), name);
    }

    fn set<T: Component>(&mut self, ops: ValueOps, what: &str) {
        let name = core::any::type_name::<T>();
        if self.excluded.contains_key(&TypeId::of::<T>()) {
            panic!(
                "freyr: {what}::<{name}>() after exclude_from_snapshot::<{name}>(): a type is \
                 either copied or excluded; remove one of the two calls"
            );
        }
        self.ops.insert(TypeId::of::<T>(), ops);
    }

    /// Whether `T` is registered (by clone or copy).
    pub fn is_registered<T: Component>(&self) -> bool {
        self.ops.contains_key(&TypeId::of::<T>())
    }

    /// Checks that a snapshot can copy every component type of `world`'s live entities;
    /// allocates nothing when it can. Reads only the layout.
    ///
    /// # Errors
    /// [`MissingSnapshotTypes`] naming every type it cannot copy, in component-id order.
    ///
    /// # Examples
    /// ```
    /// use freyr::World;
    /// use freyr::snapshot::SnapshotTypes;
    /// let mut world = World::new();
    /// world.spawn((1u8, 2u16));
    /// let mut types = SnapshotTypes::new();
    /// types.register_copy::<u8>();
    /// assert_eq!(types.check(&world).unwrap_err().unregistered, ["u16"]);
    /// types.register_copy::<u16>();
    /// assert!(types.check(&world).is_ok());
    /// ```
    pub fn check(&self, world: &World) -> Result<(), MissingSnapshotTypes> {
        let mut missing = MissingSnapshotTypes::default();
        let mut ids: Vec<(ComponentId, bool)> = Vec::new();
        for archetype in world.archetypes().iter().filter(|a| !a.is_empty()) {
            for &id in archetype.components() {
                let type_id = world.component_info(id).type_id();
                if self.ops.contains_key(&type_id) || ids.iter().any(|&(seen, _)| seen == id) {
                    continue;
                }
                ids.push((id, self.excluded.contains_key(&type_id)));
            }
        }
        if ids.is_empty() {
            return Ok(());
        }
        ids.sort_unstable();
        for (id, excluded) in ids {
            let name = world.component_info(id).name();
            match excluded {
                true => missing.excluded_live.push(name),
                false => missing.unregistered.push(name),
            }
        }
        Err(missing)
    }
}

/// A snapshot was refused: live entities have component types it cannot copy. Nothing was
/// copied, and a snapshot reused by [`World::snapshot_into`] kept its previous contents.
///
/// # Examples
/// ```
/// use freyr::World;
/// use freyr::snapshot::SnapshotTypes;
/// struct Secret(u32);
/// let mut world = World::new();
/// world.spawn((Secret(1),));
/// let err = world.snapshot(&SnapshotTypes::new()).unwrap_err();
/// assert!(err.to_string().contains("Secret"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MissingSnapshotTypes {
    /// Types neither registered nor excluded (`core::any::type_name`, in component-id order).
    pub unregistered: Vec<&'static str>,
    /// Excluded types that a live entity has (an excluded type must not be live at a snapshot).
    pub excluded_live: Vec<&'static str>,
}

impl MissingSnapshotTypes {
    /// Whether no type is named.
    pub fn is_empty(&self) -> bool {
        self.unregistered.is_empty() && self.excluded_live.is_empty()
    }
}

/// Writes `names` as "`a`, `b`".
fn list_names(f: &mut fmt::Formatter<'_>, names: &[&str]) -> fmt::Result {
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            write!(f, ", ")?;
        }
        write!(f, "`{name}`")?;
    }
    Ok(())
}

impl fmt::Display for MissingSnapshotTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.unregistered.is_empty() {
            write!(f, "a snapshot would not copy ")?;
            list_names(f, &self.unregistered)?;
            write!(
                f,
                "; register each with `register_snapshot_clone::<T>()` (or \
                 `register_snapshot_copy::<T>()` for a `Copy` type)"
            )?;
        }
        if !self.excluded_live.is_empty() {
            if !self.unregistered.is_empty() {
                write!(f, "; ")?;
            }
            write!(f, "live entities have ")?;
            list_names(f, &self.excluded_live)?;
            write!(
                f,
                ", excluded from snapshots; remove it before the snapshot or register it instead"
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for MissingSnapshotTypes {}
