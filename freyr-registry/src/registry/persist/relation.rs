//! The parent relation of a loaded world or an imported set, checked before anything changes.
//! A save or an export is written from a registry whose hierarchy methods keep the relation
//! consistent, but its bytes can be forged (or the relation broken through `world_mut`) with
//! a checksum that holds. A load or an import of a broken relation would leave a registry
//! whose walks loop forever (a cycle) or whose edits panic; it is refused instead, with
//! [`LoadError::Corrupt`], the registry unchanged.
//!
//! The rule (the one [`Registry::check_hierarchy`](crate::Registry::check_hierarchy) states):
//! every `ChildOf(p)` names a `p` whose [`Children`] lists the child exactly once, every child
//! listed has a `ChildOf` naming its parent, and following parents from any entity ends at a
//! root. For an import the references that leave the exported set are not checked: the import
//! drops them by its documented rule (a child whose parent was not exported becomes a root, a
//! child that was not exported leaves its parent's list).

use core::cell::Cell;

use freyr_core::{Archetype, ArchetypeId, ComponentId, Entity, World};
use hashbrown::{HashMap, HashSet};

use crate::hierarchy::{ChildOf, Children};
use freyr_persist::persist::LoadError;

/// What the check reads of a relation.
pub(super) trait Relation<'a> {
    /// Calls `f` with every entity of the relation (one with a `ChildOf` or a `Children`), its
    /// parent and its children.
    fn each(&self, f: impl FnMut(Entity, Option<Entity>, &'a [Entity]));
    /// `e`'s mark (a number below [`marks`](Relation::marks), one per entity), parent and
    /// children, if `e` is an entity of the relation.
    fn node(&self, e: Entity) -> Option<(usize, Option<Entity>, &'a [Entity])>;
    /// A bound on the marks.
    fn marks(&self) -> usize;
    /// The mark `e` has if it is an entity of the relation (any number below
    /// [`marks`](Relation::marks) otherwise).
    fn mark_of(&self, e: Entity) -> usize;
    /// Whether a reference to `e` is checked (false: it leaves an imported set).
    fn inside(&self, e: Entity) -> bool;
}

/// The relation of a (loaded) world, read in place: through its columns, and by entity through
/// its entity table (nothing is copied out; a mark is an entity index).
pub(super) struct WorldRelation<'w> {
    world: &'w World,
    ids: [Option<ComponentId>; 2],
    /// One more than the largest entity index of the relation.
    marks: usize,
    /// The chunk of the last [`node`](Relation::node) and its two columns: consecutive
    /// lookups (the children of one parent) mostly land in one chunk.
    last: Cell<Option<Columns<'w>>>,
}

/// A chunk (its archetype and index) and its `ChildOf` and `Children` columns.
type Columns<'w> = (
    (ArchetypeId, usize),
    Option<&'w [ChildOf]>,
    Option<&'w [Children]>,
);

impl<'w> WorldRelation<'w> {
    pub(super) fn new(world: &'w World) -> Self {
        let ids = [
            world.component_id::<ChildOf>(),
            world.component_id::<Children>(),
        ];
        let mut relation = WorldRelation {
            world,
            ids,
            marks: 0,
            last: Cell::new(None),
        };
        let mut marks = 0;
        relation.each(|e, _, _| marks = marks.max(e.index() as usize + 1));
        relation.marks = marks;
        relation
    }

    fn holds(&self, a: &Archetype) -> bool {
        self.ids.iter().flatten().any(|&id| a.has(id))
    }
}

impl<'w> Relation<'w> for WorldRelation<'w> {
    fn each(&self, mut f: impl FnMut(Entity, Option<Entity>, &'w [Entity])) {
        let [child_of, children] = self.ids;
        for a in self.world.archetypes().iter().filter(|a| self.holds(a)) {
            for chunk in a.chunks() {
                let parents = child_of.and_then(|id| chunk.column::<ChildOf>(id));
                let lists = children.and_then(|id| chunk.column::<Children>(id));
                for (row, &e) in chunk.entities().iter().enumerate() {
                    let parent = parents.map(|p| p[row].parent());
                    f(e, parent, lists.map_or(&[], |l| l[row].as_slice()));
                }
            }
        }
    }

    fn node(&self, e: Entity) -> Option<(usize, Option<Entity>, &'w [Entity])> {
        let (archetype, chunk, row) = self.world.entity_location(e)?;
        let (_, parents, lists) = match self.last.get() {
            Some(last) if last.0 == (archetype, chunk) => last,
            _ => {
                let a = self.world.archetype(archetype);
                if !self.holds(a) {
                    return None;
                }
                let c = a.chunk(chunk);
                let [child_of, children] = self.ids;
                let columns = (
                    (archetype, chunk),
                    child_of.and_then(|id| c.column::<ChildOf>(id)),
                    children.and_then(|id| c.column::<Children>(id)),
                );
                self.last.set(Some(columns));
                columns
            }
        };
        Some((
            e.index() as usize,
            parents.map(|p| p[row].parent()),
            lists.map_or(&[], |l| l[row].as_slice()),
        ))
    }

    fn marks(&self) -> usize {
        self.marks
    }

    fn mark_of(&self, e: Entity) -> usize {
        e.index() as usize
    }

    fn inside(&self, _: Entity) -> bool {
        true
    }
}

/// The relation of an imported set, by its old ids (any index a file names: looked up by
/// hash), among `exported`.
pub(super) struct ImportRelation<'a> {
    /// Each entity's parent and children, and its mark (its position here).
    pub(super) nodes: HashMap<Entity, (usize, Option<Entity>, &'a [Entity])>,
    pub(super) exported: HashSet<Entity>,
}

impl<'a> Relation<'a> for ImportRelation<'a> {
    fn each(&self, mut f: impl FnMut(Entity, Option<Entity>, &'a [Entity])) {
        for (&e, &(_, parent, children)) in &self.nodes {
            f(e, parent, children);
        }
    }

    fn node(&self, e: Entity) -> Option<(usize, Option<Entity>, &'a [Entity])> {
        self.nodes.get(&e).copied()
    }

    fn marks(&self) -> usize {
        self.nodes.len()
    }

    fn mark_of(&self, e: Entity) -> usize {
        self.nodes.get(&e).map_or(0, |n| n.0)
    }

    fn inside(&self, e: Entity) -> bool {
        self.exported.contains(&e)
    }
}

fn broken(what: &'static str) -> LoadError {
    LoadError::Corrupt { what }
}

/// Checks `relation` (see the module doc), in time linear in its entities and list entries:
/// every listed child (inside) must name the entity that lists it and be listed once in all,
/// and as many children must be listed as there are `ChildOf`s (inside): then each is listed
/// by its own parent, once. And a walk down from the roots must reach every child: one never
/// reached is on a cycle.
pub(super) fn check_relation<'a>(relation: &impl Relation<'a>) -> Result<(), LoadError> {
    let not_listed = "the hierarchy is broken: a child's parent does not list it exactly once";
    let mut listed = vec![false; relation.marks()];
    // Each listed child's own children, by its mark, for the walk down.
    let mut below: Vec<&'a [Entity]> = vec![&[]; relation.marks()];
    let (mut listed_count, mut children, mut failure) = (0usize, 0usize, None);
    let mut roots: Vec<&'a [Entity]> = Vec::new();
    relation.each(|e, parent, list| {
        if parent.is_some_and(|p| relation.inside(p)) {
            children += 1;
        } else if !list.is_empty() {
            roots.push(list);
        }
        for &c in list.iter().filter(|&&c| relation.inside(c)) {
            match relation.node(c) {
                Some((mark, parent, list)) if parent == Some(e) => {
                    if core::mem::replace(&mut listed[mark], true) {
                        failure.get_or_insert(not_listed);
                    }
                    below[mark] = list;
                    listed_count += 1;
                }
                _ => {
                    failure.get_or_insert(
                        "the hierarchy is broken: a listed child does not name its parent",
                    );
                }
            }
        }
    });
    if let Some(what) = failure {
        return Err(broken(what));
    }
    if listed_count != children {
        return Err(broken(not_listed));
    }
    // Down from the roots: each child is listed once, so each is reached at most once.
    let mut reached = 0usize;
    while let Some(list) = roots.pop() {
        for &c in list.iter().filter(|&&c| relation.inside(c)) {
            reached += 1;
            // Listed, so an entity of the relation (checked above).
            let list = below[relation.mark_of(c)];
            if !list.is_empty() {
                roots.push(list);
            }
        }
    }
    if reached != children {
        return Err(broken("the hierarchy is broken: its parents make a cycle"));
    }
    Ok(())
}
