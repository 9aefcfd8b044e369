//! Access sets: what a query, a view or an in-flight launch reads and writes.
//!
//! Two levels are checked:
//!
//! - [`TypeAccess`] is a list of `(TypeId, type name, read/write)` built from the *types* in a
//!   query and its views. It needs no world, so conflicting access inside one query
//!   (`(&mut A, &A)`) is rejected before anything runs, naming `A`.
//! - [`Access`] holds [`ComponentId`] bitsets resolved against the registry's world, plus the
//!   resources read and whether the work holds a shared reference to the world. The registry keeps
//!   one per in-flight launch and checks every operation against them.

use core::any::TypeId;

use freyr_core::{ArchetypeId, ComponentId};

use crate::error::QueryError;

pub(crate) mod kind;
mod sets;

pub use self::kind::AccessKind;
pub use self::sets::{ArchetypeSet, ComponentSet};

/// One entry of a [`TypeAccess`] list.
#[derive(Copy, Clone, Debug)]
struct TypeEntry {
    type_id: TypeId,
    name: &'static str,
    kind: AccessKind,
}

/// The types a query (plus its views) reads and writes, checked for conflicts before anything
/// runs.
///
/// Conflicts are: two writes of the same type, or a write and a read of the same type. Two reads
/// of the same type are fine.
///
/// # Examples
///
/// ```
/// use freyr_query::access::{AccessKind, TypeAccess};
///
/// let mut ok = TypeAccess::new();
/// ok.add::<u32>(AccessKind::Read);
/// ok.add::<u32>(AccessKind::Read);
/// ok.add::<f32>(AccessKind::Write);
/// assert!(ok.check().is_ok());
///
/// let mut bad = TypeAccess::new();
/// bad.add::<f32>(AccessKind::Write);
/// bad.add::<f32>(AccessKind::Read);
/// let err = bad.check().unwrap_err();
/// assert!(err.to_string().contains("f32"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct TypeAccess {
    entries: Vec<TypeEntry>,
}

impl TypeAccess {
    /// An empty list.
    pub fn new() -> Self {
        TypeAccess {
            entries: Vec::new(),
        }
    }

    /// Records that `T` is accessed with `kind`.
    pub fn add<T: 'static>(&mut self, kind: AccessKind) {
        self.entries.push(TypeEntry {
            type_id: TypeId::of::<T>(),
            name: core::any::type_name::<T>(),
            kind,
        });
    }

    /// Appends every entry of `other`.
    pub fn extend(&mut self, other: &TypeAccess) {
        self.entries.extend_from_slice(&other.entries);
    }

    /// Number of entries recorded.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The recorded entries, in recording order: each type's id, name and access kind (what a
    /// function system's declared access is built from).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr_query::access::{AccessKind, TypeAccess};
    ///
    /// let mut access = TypeAccess::new();
    /// access.add::<u32>(AccessKind::Write);
    /// let entries: Vec<_> = access.entries().collect();
    /// assert_eq!(entries.len(), 1);
    /// assert_eq!(entries[0].0, core::any::TypeId::of::<u32>());
    /// assert_eq!(entries[0].2, AccessKind::Write);
    /// ```
    pub fn entries(&self) -> impl Iterator<Item = (TypeId, &'static str, AccessKind)> + '_ {
        self.entries.iter().map(|e| (e.type_id, e.name, e.kind))
    }

    /// Whether `T` is recorded, with any access.
    pub fn mentions<T: 'static>(&self) -> bool {
        let id = TypeId::of::<T>();
        self.entries.iter().any(|e| e.type_id == id)
    }

    /// Whether `T` is recorded with write access.
    pub fn writes<T: 'static>(&self) -> bool {
        let id = TypeId::of::<T>();
        self.entries
            .iter()
            .any(|e| e.type_id == id && e.kind == AccessKind::Write)
    }

    /// Checks the list for conflicting access.
    ///
    /// # Errors
    ///
    /// [`QueryError::KeptComponent`] if a type written is
    /// [`ChildOf`](freyr_core::ChildOf) or [`Children`](freyr_core::Children) (the registry
    /// keeps them; see [`freyr_core::is_kept`]), else [`QueryError::ConflictingAccess`] naming
    /// the first type (in recording order) that is written twice, or written and read.
    pub fn check(&self) -> Result<(), QueryError> {
        for (i, a) in self.entries.iter().enumerate() {
            if a.kind == AccessKind::Write && freyr_core::is_kept_type(a.type_id) {
                return Err(QueryError::KeptComponent { type_name: a.name });
            }
            for b in &self.entries[i + 1..] {
                if a.type_id == b.type_id
                    && (a.kind == AccessKind::Write || b.kind == AccessKind::Write)
                {
                    return Err(QueryError::ConflictingAccess {
                        type_name: a.name,
                        first: a.kind,
                        second: b.kind,
                    });
                }
            }
        }
        Ok(())
    }
}

/// The resolved access of a query launch or a registry operation.
///
/// `reads` and `writes` are disjoint: a component both read and written is recorded as written.
/// They may be *confined* to a set of archetypes (a query touches only the rows of the archetypes
/// it matched; [`confine_to`](Access::confine_to)), or apply to every archetype (the default, and
/// what component views need: `View<T>` may look at any entity). `resources` lists the resource
/// types read. `world_ref` records that the work holds a shared reference to the world itself
/// (component views do), so nothing may take the world exclusively while it runs; structural
/// changes take it exclusively and conflict with every launch anyway.
///
/// Two accesses conflict when one writes a component the other reads or writes **and** some
/// archetype is in both their confinements: rows of different archetypes live in different
/// chunks, and no entity changes archetype while work is in flight (structural changes wait for
/// all of it), so work on disjoint archetypes never touches the same value.
///
/// # Examples
///
/// ```
/// use freyr::World;
/// use freyr_query::access::Access;
///
/// let mut world = World::new();
/// let a = world.register::<u32>();
/// let b = world.register::<f32>();
///
/// let mut writer = Access::new();
/// writer.add_write(a);
/// let mut reader = Access::new();
/// reader.add_read(a);
/// reader.add_read(b);
/// let mut other = Access::new();
/// other.add_read(b);
///
/// assert!(writer.conflicts_with(&reader));
/// assert!(!reader.conflicts_with(&other));
/// assert!(!writer.conflicts_with(&other));
///
/// // Confined to archetypes that no entity shares, the same writer and reader do not conflict.
/// let (x, y) = (world.spawn((1u32,)), world.spawn((1u32, 1.0f32)));
/// let in_x = world.entity_location(x).unwrap().0;
/// let in_y = world.entity_location(y).unwrap().0;
/// writer.confine_to(in_x);
/// reader.confine_to(in_y);
/// assert!(!writer.conflicts_with(&reader));
/// reader.confine_to(in_x);
/// assert!(writer.conflicts_with(&reader));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Access {
    reads: ComponentSet,
    writes: ComponentSet,
    /// `Some`: the component access touches only rows of these archetypes; `None`: any.
    archetypes: Option<ArchetypeSet>,
    resources: Vec<TypeId>,
    world_ref: bool,
}

impl Access {
    /// Access to nothing.
    pub fn new() -> Self {
        Access::default()
    }

    /// Records a read of `id` (ignored if `id` is already written).
    pub fn add_read(&mut self, id: ComponentId) {
        if !self.writes.contains(id) {
            self.reads.insert(id);
        }
    }

    /// Records a write of `id` (a read of `id` recorded earlier becomes this write).
    pub fn add_write(&mut self, id: ComponentId) {
        self.writes.insert(id);
        self.reads.remove(id);
    }

    /// Confines the component access to the archetypes passed to `confine_to` so far, adding
    /// `archetype`: the work touches only rows of those archetypes. Without any call the access
    /// applies to every archetype.
    pub fn confine_to(&mut self, archetype: ArchetypeId) {
        self.archetypes
            .get_or_insert_with(ArchetypeSet::new)
            .insert(archetype);
    }

    /// Confines the component access to no archetype at all, until
    /// [`confine_to`](Access::confine_to) adds some (a query that matched nothing touches
    /// nothing).
    pub fn confine_to_none(&mut self) {
        self.archetypes = Some(ArchetypeSet::new());
    }

    /// The archetypes the component access is confined to (`None`: every archetype).
    pub fn archetypes(&self) -> Option<&ArchetypeSet> {
        self.archetypes.as_ref()
    }

    /// Records a read of the resource `T`.
    pub fn add_resource_read<T: 'static>(&mut self) {
        let id = TypeId::of::<T>();
        if !self.resources.contains(&id) {
            self.resources.push(id);
        }
    }

    /// Records that the work holds a shared reference to the world.
    pub fn set_world_ref(&mut self) {
        self.world_ref = true;
    }

    /// Adds everything `other` accesses. The result is confined to the union of both
    /// confinements, or to nothing if either applies to every archetype; an access without
    /// component reads or writes (resources only) leaves the confinement as it is.
    pub fn extend(&mut self, other: &Access) {
        let other_touches = !other.reads.is_empty() || !other.writes.is_empty();
        let self_touches = !self.reads.is_empty() || !self.writes.is_empty();
        if other_touches {
            self.archetypes = if self_touches {
                match (self.archetypes.take(), &other.archetypes) {
                    (Some(mut mine), Some(theirs)) => {
                        mine.union_with(theirs);
                        Some(mine)
                    }
                    _ => None,
                }
            } else {
                other.archetypes.clone()
            };
        }
        self.writes.union_with(&other.writes);
        let mut reads = other.reads.clone();
        reads.union_with(&self.reads);
        // Keep `reads` and `writes` disjoint.
        reads.remove_all(&self.writes);
        self.reads = reads;
        for r in &other.resources {
            if !self.resources.contains(r) {
                self.resources.push(*r);
            }
        }
        self.world_ref |= other.world_ref;
    }

    /// Components written.
    pub fn writes(&self) -> &ComponentSet {
        &self.writes
    }

    /// Components read and not written.
    pub fn reads(&self) -> &ComponentSet {
        &self.reads
    }

    /// Whether the resource `id` is read.
    pub fn reads_resource(&self, id: TypeId) -> bool {
        self.resources.contains(&id)
    }

    /// Whether no resource is read.
    pub fn resources_empty(&self) -> bool {
        self.resources.is_empty()
    }

    /// Whether the work holds a shared reference to the world.
    pub fn holds_world_ref(&self) -> bool {
        self.world_ref
    }

    /// Whether anything is written.
    pub fn writes_anything(&self) -> bool {
        !self.writes.is_empty()
    }

    /// Whether running `self` and `other` at the same time could race: one writes a component the
    /// other reads or writes, in an archetype both may touch. Resources are only ever read by
    /// launches, so they never conflict here.
    pub fn conflicts_with(&self, other: &Access) -> bool {
        self.conflicting_component(other).is_some()
    }

    /// Whether the access may touch rows of `archetype` (it is unconfined, or confined to a set
    /// holding it).
    pub fn may_touch(&self, archetype: ArchetypeId) -> bool {
        self.archetypes
            .as_ref()
            .is_none_or(|set| set.contains(archetype))
    }

    /// Whether the two confinements share an archetype (an unconfined access shares every one,
    /// an access confined to no archetype none).
    pub fn shares_archetypes(&self, other: &Access) -> bool {
        match (&self.archetypes, &other.archetypes) {
            (Some(a), Some(b)) => a.intersects(b),
            (Some(a), None) | (None, Some(a)) => !a.is_empty(),
            (None, None) => true,
        }
    }

    /// The index of the lowest component id on which `self` and `other` conflict (`None` when
    /// they touch no archetype in common).
    pub fn conflicting_component(&self, other: &Access) -> Option<usize> {
        if !self.shares_archetypes(other) {
            return None;
        }
        [
            self.writes.first_common(&other.writes),
            self.writes.first_common(&other.reads),
            self.reads.first_common(&other.writes),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use freyr_core::World;

    fn ids(n: usize) -> Vec<ComponentId> {
        struct C<const N: usize>;
        let mut world = World::new();
        let all = [
            world.register::<C<0>>(),
            world.register::<C<1>>(),
            world.register::<C<2>>(),
            world.register::<C<3>>(),
        ];
        all[..n].to_vec()
    }

    #[test]
    fn a_write_replaces_a_read_of_the_same_component() {
        let c = ids(2);
        let mut a = Access::new();
        a.add_read(c[0]);
        a.add_write(c[0]);
        a.add_read(c[0]);
        assert!(a.writes().contains(c[0]));
        assert!(!a.reads().contains(c[0]));
        let mut reader = Access::new();
        reader.add_read(c[0]);
        assert!(a.conflicts_with(&reader) && reader.conflicts_with(&a));
        assert_eq!(a.conflicting_component(&reader), Some(c[0].index()));
    }

    #[test]
    fn extend_keeps_reads_and_writes_disjoint() {
        let c = ids(3);
        let mut a = Access::new();
        a.add_write(c[1]);
        let mut b = Access::new();
        b.add_read(c[1]);
        b.add_read(c[2]);
        b.add_resource_read::<u8>();
        b.set_world_ref();
        a.extend(&b);
        assert!(a.writes().contains(c[1]) && !a.reads().contains(c[1]));
        assert!(a.reads().contains(c[2]));
        assert!(a.reads_resource(TypeId::of::<u8>()) && a.holds_world_ref());
        assert!(!a.resources_empty());
    }

    /// Archetype ids `0..n` of a world (the empty archetype and `n - 1` one-component ones).
    fn archetypes(n: usize) -> Vec<ArchetypeId> {
        let mut world = World::new();
        world.spawn((1u8,));
        world.spawn((1u16,));
        world.spawn((1u32,));
        let ids: Vec<_> = world.archetypes().iter().map(|a| a.id()).collect();
        ids[..n].to_vec()
    }

    #[test]
    fn extend_keeps_or_drops_the_confinement() {
        let c = ids(2);
        let x = archetypes(4);
        let confined = |read: bool, archetype: usize| {
            let mut a = Access::new();
            if read {
                a.add_read(c[0]);
            } else {
                a.add_write(c[0]);
            }
            a.confine_to(x[archetype]);
            a
        };
        // Both confined: the union.
        let mut a = confined(false, 1);
        a.extend(&confined(true, 2));
        let set = a.archetypes().expect("still confined");
        assert!(set.contains(x[1]) && set.contains(x[2]) && !set.contains(x[3]));
        assert!(!a.conflicts_with(&confined(true, 3)));
        assert!(a.conflicts_with(&confined(true, 2)));
        // A resource-only access (a `Res<T>` view) leaves the confinement alone.
        let mut res = Access::new();
        res.add_resource_read::<u8>();
        let mut b = confined(false, 1);
        b.extend(&res);
        assert_eq!(b.archetypes().map(|s| s.contains(x[1])), Some(true));
        // An unconfined component access (a `View<T>` view) makes the whole access unconfined.
        let mut view = Access::new();
        view.add_read(c[1]);
        view.set_world_ref();
        let mut d = confined(true, 1);
        d.extend(&view);
        assert!(d.archetypes().is_none());
        let mut writer = Access::new();
        writer.add_write(c[1]);
        writer.confine_to(x[3]);
        assert!(
            d.conflicts_with(&writer),
            "the view may read c[1] in any archetype"
        );
        // Confined to nothing, an access conflicts with nothing.
        let mut nothing = Access::new();
        nothing.add_write(c[0]);
        nothing.confine_to_none();
        assert!(!nothing.conflicts_with(&confined(false, 1)));
        let mut view_c0 = Access::new();
        view_c0.add_read(c[0]);
        assert!(!nothing.conflicts_with(&view_c0) && !view_c0.conflicts_with(&nothing));
        assert!(confined(false, 1).conflicts_with(&view_c0));
    }

    #[test]
    fn component_sets_grow_and_intersect() {
        let c = ids(4);
        let mut s = ComponentSet::new();
        assert!(s.is_empty());
        s.insert(c[3]);
        let mut t = ComponentSet::new();
        t.insert(c[0]);
        assert_eq!(s.first_common(&t), None);
        t.insert(c[3]);
        assert_eq!(s.first_common(&t), Some(c[3].index()));
        s.remove(c[3]);
        assert!(s.is_empty());
    }
}
