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

use freyr_core::ComponentId;

use crate::error::QueryError;

/// How a query element or view touches one type.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AccessKind {
    /// Shared access: `&T`, `Option<&T>`, a component view, a resource.
    Read,
    /// Exclusive access: `&mut T`, `Option<&mut T>`.
    Write,
}

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
    /// [`QueryError::ConflictingAccess`] naming the first type (in recording order) that is
    /// written twice, or written and read.
    pub fn check(&self) -> Result<(), QueryError> {
        for (i, a) in self.entries.iter().enumerate() {
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

/// A growable bitset over [`ComponentId`]s.
///
/// ```text
///  words[0]                          words[1]
///  bit 0 .. bit 63                   bit 64 .. bit 127     bit i set <=> ComponentId(i) in set
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ComponentSet {
    words: Vec<u64>,
}

impl ComponentSet {
    /// An empty set.
    pub fn new() -> Self {
        ComponentSet { words: Vec::new() }
    }

    /// Adds `id`.
    pub fn insert(&mut self, id: ComponentId) {
        let i = id.index();
        let word = i / 64;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1u64 << (i % 64);
    }

    /// Removes `id`.
    pub fn remove(&mut self, id: ComponentId) {
        let i = id.index();
        if let Some(w) = self.words.get_mut(i / 64) {
            *w &= !(1u64 << (i % 64));
        }
    }

    /// Whether `id` is in the set.
    pub fn contains(&self, id: ComponentId) -> bool {
        let i = id.index();
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The lowest id in both sets, if any.
    pub fn first_common(&self, other: &ComponentSet) -> Option<usize> {
        for (i, (a, b)) in self.words.iter().zip(&other.words).enumerate() {
            let both = a & b;
            if both != 0 {
                return Some(i * 64 + both.trailing_zeros() as usize);
            }
        }
        None
    }

    /// Adds every id of `other`.
    pub fn union_with(&mut self, other: &ComponentSet) {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }
}

/// The resolved access of a query launch or a registry operation.
///
/// `reads` and `writes` are disjoint: a component both read and written is recorded as written.
/// `resources` lists the resource types read. `world_ref` records that the work holds a shared
/// reference to the world itself (component views do), so nothing may take the world exclusively
/// while it runs; structural changes take it exclusively and conflict with every launch anyway.
///
/// # Examples
///
/// ```
/// use freyr_core::World;
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
/// ```
#[derive(Clone, Debug, Default)]
pub struct Access {
    reads: ComponentSet,
    writes: ComponentSet,
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

    /// Adds everything `other` accesses.
    pub fn extend(&mut self, other: &Access) {
        self.writes.union_with(&other.writes);
        let mut reads = other.reads.clone();
        reads.union_with(&self.reads);
        // Keep `reads` and `writes` disjoint.
        for (r, w) in reads.words.iter_mut().zip(&self.writes.words) {
            *r &= !w;
        }
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
    /// other reads or writes. Resources are only ever read by launches, so they never conflict here.
    pub fn conflicts_with(&self, other: &Access) -> bool {
        self.conflicting_component(other).is_some()
    }

    /// The index of the lowest component id on which `self` and `other` conflict.
    pub fn conflicting_component(&self, other: &Access) -> Option<usize> {
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
