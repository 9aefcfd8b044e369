//! Cloning entities and subtrees, and prefabs: the types registered as cloneable, copied a
//! column at a time into a batch spawn, and the remap hooks that point a copy's `Entity`
//! fields at the other copies of its tree.

use core::any::TypeId;
use core::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use freyr_core::parts::ColumnValues;
use freyr_core::{AppliedCommand, BundleTypes, Component, ComponentId, Disabled, Entity, World};
use hashbrown::HashMap;

use super::super::Registry;
use super::edit::attach_in;
use super::{ChildOf, Children, subtree};

/// A remap hook: rewrites the `Entity` fields of one copy's value through the clone's
/// [`CloneMap`] (registered with [`Registry::register_cloneable_with_remap`]).
pub type CloneRemapFn<T> = fn(&mut T, &CloneMap<'_>);

/// Rewrites the value of one type on one copy in place (the type-erased remap hook).
type RemapErased = Arc<dyn Fn(&mut World, Entity, &CloneMap<'_>) + Send + Sync>;

/// Inserts clones of the source's value of one type into each target, remapped first,
/// recording each insert for the hooks.
type InsertErased =
    Arc<dyn Fn(&mut World, Entity, &[Entity], &CloneMaps, &mut Vec<AppliedCommand>) + Send + Sync>;

/// How one cloneable type is copied.
#[derive(Clone)]
struct CloneOps {
    /// `count` clones of the source's value, as a column to spawn.
    column: fn(&World, Entity, usize) -> ColumnValues<'static>,
    /// Inserts a clone of the source's value into each target (copy `i` of the set is
    /// `targets[i]`), recording each insert for the hooks (run once the clone is whole); the
    /// value is remapped before it is inserted, so the hooks see it final.
    insert: InsertErased,
    /// The type's remap hook over a value already spawned, if registered with one.
    remap: Option<RemapErased>,
}

impl CloneOps {
    fn of<T: Component + Clone>(remap: Option<CloneRemapFn<T>>) -> CloneOps {
        CloneOps {
            column: column_of::<T>,
            insert: Arc::new(move |world, source, targets, maps, changes| {
                insert_into::<T>(world, source, targets, remap, maps, changes);
            }),
            remap: remap.map(|remap| -> RemapErased {
                Arc::new(move |world: &mut World, e: Entity, map: &CloneMap<'_>| {
                    let value = world
                        .get_mut::<T>(e)
                        .expect("a copy has its source's types");
                    remap(value, map);
                })
            }),
        }
    }
}

fn column_of<T: Component + Clone>(
    world: &World,
    source: Entity,
    count: usize,
) -> ColumnValues<'static> {
    let value = world.get::<T>(source).expect("the source has the type");
    ColumnValues::new(vec![value.clone(); count])
}

fn insert_into<T: Component + Clone>(
    world: &mut World,
    source: Entity,
    targets: &[Entity],
    remap: Option<CloneRemapFn<T>>,
    maps: &CloneMaps,
    changes: &mut Vec<AppliedCommand>,
) {
    for (i, &t) in targets.iter().enumerate() {
        let mut value = world
            .get::<T>(source)
            .expect("the source has the type")
            .clone();
        if let Some(remap) = remap {
            remap(&mut value, &maps.instance(i));
        }
        let (before, _, _) = world.entity_location(t).expect("a clone was just spawned");
        world.insert(t, (value,)).expect("a clone was just spawned");
        changes.push(AppliedCommand::Insert {
            entity: t,
            before,
            types: BundleTypes::of::<(T,)>(),
        });
    }
}

/// The copies of one clone call: for each entity of the cloned set (by its index in the
/// set), its copy in each instance.
struct CloneMaps {
    index: HashMap<Entity, usize>,
    copies: Vec<Vec<Entity>>,
}

impl CloneMaps {
    fn instance(&self, instance: usize) -> CloneMap<'_> {
        CloneMap {
            maps: self,
            instance,
        }
    }
}

/// What a clone made of each entity of the cloned set, in one copy: a remap hook
/// ([`Registry::register_cloneable_with_remap`]) reads it to point the copy's `Entity` fields
/// at the copies. An entity outside the cloned set (outside the subtree, or any entity but the
/// source for [`Registry::clone_entity`]) has no copy: [`get`](CloneMap::get) is `None`, and
/// the hook decides (keep the original reference, or clear it).
///
/// # Examples
///
/// ```
/// use freyr::Entity;
/// use freyr::hierarchy::CloneMap;
///
/// #[derive(Clone)]
/// struct Target(Entity);
///
/// let mut registry = freyr::Registry::with_workers(1);
/// registry.register_cloneable::<&'static str>();
/// // References inside the tree follow the copy; references out of it stay.
/// registry.register_cloneable_with_remap::<Target>(|t, map: &CloneMap| {
///     t.0 = map.get(t.0).unwrap_or(t.0);
/// });
/// let ship = registry.spawn(("ship",));
/// let gun = registry.spawn_child(ship, ("gun",)).unwrap();
/// registry.insert(gun, (Target(ship),)).unwrap();
/// let copy = registry.clone_tree(ship).unwrap();
/// let gun_copy = registry.children(copy)[0];
/// assert_eq!(registry.get::<Target>(gun_copy).unwrap().0, copy);
/// ```
#[derive(Clone, Copy)]
pub struct CloneMap<'a> {
    maps: &'a CloneMaps,
    instance: usize,
}

impl CloneMap<'_> {
    /// The copy of `original` made by this clone (in this instance, for a prefab), or `None`
    /// if `original` is not part of the cloned set.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Entity;
    /// use freyr::hierarchy::CloneMap;
    ///
    /// #[derive(Clone)]
    /// struct Me(Option<Entity>);
    ///
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_cloneable_with_remap::<Me>(|m, map: &CloneMap| {
    ///     m.0 = m.0.and_then(|e| map.get(e));
    /// });
    /// let other = registry.spawn(());
    /// let e = registry.spawn((Me(None),));
    /// registry.insert(e, (Me(Some(e)),)).unwrap();
    /// let f = registry.spawn((Me(Some(other)),));
    /// let (e2, f2) = (registry.clone_entity(e).unwrap(), registry.clone_entity(f).unwrap());
    /// assert_eq!(registry.get::<Me>(e2).unwrap().0, Some(e2)); // itself: remapped
    /// assert_eq!(registry.get::<Me>(f2).unwrap().0, None); // outside the clone
    /// ```
    #[must_use]
    pub fn get(&self, original: Entity) -> Option<Entity> {
        let &j = self.maps.index.get(&original)?;
        Some(self.maps.copies[j][self.instance])
    }
}

/// The cloneable types, by `TypeId`.
#[derive(Default)]
pub(crate) struct Cloners {
    by_type: HashMap<TypeId, CloneOps>,
}

/// Why a clone or a prefab instantiation was refused. Nothing was spawned.
///
/// # Examples
///
/// ```
/// use freyr::hierarchy::CloneError;
///
/// struct Socket; // not cloneable
///
/// let mut registry = freyr::Registry::with_workers(1);
/// let e = registry.spawn((Socket,));
/// let err = registry.clone_entity(e).unwrap_err();
/// assert!(matches!(err, CloneError::NotCloneable { entity, .. } if entity == e));
/// assert!(err.to_string().contains("Socket"));
/// assert_eq!(registry.len(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloneError {
    /// The source (an entity or a prefab) is not alive in this registry.
    NoSuchEntity(Entity),
    /// An entity of the source has a component of a type not registered with
    /// [`Registry::register_cloneable`].
    NotCloneable {
        /// The entity holding it (the source or one of its descendants).
        entity: Entity,
        /// The type's name.
        type_name: &'static str,
    },
}

impl fmt::Display for CloneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloneError::NoSuchEntity(e) => write!(
                f,
                "freyr: clone refused: the source {e:?} is not alive in this registry"
            ),
            CloneError::NotCloneable { entity, type_name } => write!(
                f,
                "freyr: clone refused: {entity:?} has a `{type_name}`, which is not registered \
                 as cloneable (Registry::register_cloneable); nothing was spawned"
            ),
        }
    }
}

impl std::error::Error for CloneError {}

impl Registry {
    /// Registers `T` as cloneable: [`clone_entity`](Registry::clone_entity),
    /// [`clone_tree`](Registry::clone_tree) and [`instantiate`](Registry::instantiate) copy
    /// it with `Clone`. Registering again changes nothing. The relation ([`ChildOf`],
    /// [`Children`]) and [`Disabled`] need no registration.
    ///
    /// # Examples
    ///
    /// ```
    /// #[derive(Clone, Debug, PartialEq)]
    /// struct Name(String);
    ///
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_cloneable::<Name>();
    /// let e = registry.spawn((Name("crate".into()),));
    /// let copy = registry.clone_entity(e).unwrap();
    /// assert_eq!(registry.get::<Name>(copy), Ok(&Name("crate".into())));
    /// ```
    pub fn register_cloneable<T: Component + Clone>(&mut self) {
        self.guard("Registry::register_cloneable");
        self.cloners
            .by_type
            .insert(TypeId::of::<T>(), CloneOps::of::<T>(None));
    }

    /// As [`register_cloneable`](Registry::register_cloneable), with a hook that rewrites the
    /// `Entity` fields of each copy through the clone's [`CloneMap`], as
    /// `register_persistent_with_remap` does for an import: a reference to an entity of the
    /// cloned set (the subtree of [`clone_tree`](Registry::clone_tree) and
    /// [`instantiate`](Registry::instantiate), the source itself for
    /// [`clone_entity`](Registry::clone_entity)) can be pointed at its copy in the same
    /// instance; a reference out of the set has no copy ([`CloneMap::get`] is `None`) and the
    /// hook decides. The hook runs once per copy, after every copy of the call is spawned and
    /// before any hook of the registry sees the value. Registering again replaces the hook.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Entity;
    /// use freyr::hierarchy::CloneMap;
    ///
    /// /// The crew member a turret is manned by.
    /// #[derive(Clone)]
    /// struct MannedBy(Entity);
    ///
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_cloneable::<&'static str>();
    /// registry.register_cloneable_with_remap::<MannedBy>(|m, map: &CloneMap| {
    ///     m.0 = map.get(m.0).unwrap_or(m.0);
    /// });
    /// let ship = registry.spawn(("ship",));
    /// let crew = registry.spawn_child(ship, ("crew",)).unwrap();
    /// registry.spawn_child(ship, (MannedBy(crew),)).unwrap();
    /// let ships = registry.instantiate(ship, 2).unwrap();
    /// for copy in ships {
    ///     let [crew, turret] = registry.children(copy) else { panic!() };
    ///     let (crew, turret) = (*crew, *turret);
    ///     assert_eq!(registry.get::<MannedBy>(turret).unwrap().0, crew);
    /// }
    /// ```
    pub fn register_cloneable_with_remap<T: Component + Clone>(&mut self, remap: CloneRemapFn<T>) {
        self.guard("Registry::register_cloneable_with_remap");
        self.cloners
            .by_type
            .insert(TypeId::of::<T>(), CloneOps::of::<T>(Some(remap)));
    }

    /// Spawns a copy of `source`'s components now (waiting for in-flight work first); returns
    /// it. The copy has no parent and no children, and is enabled (the [`Disabled`] marker is
    /// not copied, so a disabled template makes enabled copies).
    ///
    /// # Errors
    ///
    /// [`CloneError::NoSuchEntity`] if `source` is not alive; [`CloneError::NotCloneable`]
    /// naming the first component type (in component-id order) not registered with
    /// [`register_cloneable`](Registry::register_cloneable). Nothing is spawned on error.
    ///
    /// # Panics
    ///
    /// If a `Clone`, a remap hook or a registry hook panics: the copies made so far are
    /// despawned (children first) before the panic propagates; after a registry hook's panic
    /// through the hooks, each with the children a hook gave it, and after a `Clone`'s or a
    /// remap hook's without them (no hook saw those copies arrive). When hooks are registered,
    /// the clone is one operation for them, as a `spawn_batch` is: each copy is linked to its
    /// parent's copy and then filled, and once every copy is whole the hooks run for all of it,
    /// in that order, so an edit a hook records (a child spawned under a copy, a copy
    /// despawned, a move elsewhere) applies to a whole clone.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_cloneable::<u32>();
    /// let e = registry.spawn((7u32,));
    /// let c = registry.clone_entity(e).unwrap();
    /// assert_ne!(c, e);
    /// assert_eq!(registry.get::<u32>(c), Ok(&7));
    /// ```
    pub fn clone_entity(&mut self, source: Entity) -> Result<Entity, CloneError> {
        self.guard("Registry::clone_entity");
        Ok(self.copies(source, 1, false)?[0])
    }

    /// Spawns a copy of `source` and its descendants now; returns the copy of `source`, a
    /// root. The copies keep the tree's shape and child order: their [`ChildOf`] and
    /// [`Children`] name the copies, never the originals. Other components are cloned as they
    /// are (an `Entity` inside one still names what it named), unless their type has a remap
    /// hook ([`register_cloneable_with_remap`](Registry::register_cloneable_with_remap)).
    ///
    /// # Errors
    ///
    /// As [`clone_entity`](Registry::clone_entity), over every entity of the tree.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_cloneable::<&'static str>();
    /// let ship = registry.spawn(("ship",));
    /// registry.spawn_child(ship, ("turret",)).unwrap();
    /// let copy = registry.clone_tree(ship).unwrap();
    /// let turret = registry.children(copy)[0];
    /// assert_eq!(registry.get::<&str>(turret), Ok(&"turret"));
    /// assert_eq!(registry.parent(turret), Some(copy));
    /// ```
    pub fn clone_tree(&mut self, source: Entity) -> Result<Entity, CloneError> {
        self.guard("Registry::clone_tree");
        Ok(self.copies(source, 1, true)?[0])
    }

    /// Instantiates the prefab `prefab` (an entity and its descendants, typically disabled so
    /// queries do not see the template) `count` times in one batch now; returns the `count`
    /// roots, in order. Each copy is as [`clone_tree`](Registry::clone_tree) makes it. Every
    /// entity of the template is copied with one batch spawn of `count` rows (one column of
    /// clones per type, no row moves); when hooks are registered, the copies are filled one
    /// type at a time instead, and the hooks see every component once the batch is whole.
    ///
    /// # Errors
    ///
    /// [`CloneError::NoSuchEntity`] if `prefab` is not alive (despawned);
    /// [`CloneError::NotCloneable`] as for `clone_entity`. Nothing is spawned on error.
    ///
    /// # Examples
    ///
    /// ```
    /// #[derive(Clone)]
    /// struct Hp(u32);
    ///
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_cloneable::<Hp>();
    /// let jet = registry.spawn((Hp(100),));
    /// registry.spawn_child(jet, (Hp(10),)).unwrap();
    /// registry.disable(jet).unwrap();
    /// let jets = registry.instantiate(jet, 3).unwrap();
    /// assert_eq!(jets.len(), 3);
    /// assert_eq!(registry.children(jets[2]).len(), 1);
    /// assert_eq!(registry.query::<&Hp>().count(), 3 * 2 + 1); // the template child is enabled
    /// ```
    pub fn instantiate(&mut self, prefab: Entity, count: usize) -> Result<Vec<Entity>, CloneError> {
        self.guard("Registry::instantiate");
        self.copies(prefab, count, true)
    }

    fn copies(
        &mut self,
        source: Entity,
        count: usize,
        tree: bool,
    ) -> Result<Vec<Entity>, CloneError> {
        let world = self.world();
        if !world.contains(source) {
            return Err(CloneError::NoSuchEntity(source));
        }
        let nodes = if tree {
            subtree(world, source)
        } else {
            vec![source]
        };
        // Every node's (component id, ops), checked before anything is spawned.
        let skip = [
            TypeId::of::<ChildOf>(),
            TypeId::of::<Children>(),
            TypeId::of::<Disabled>(),
        ];
        let mut plans: Vec<Vec<(ComponentId, CloneOps)>> = Vec::with_capacity(nodes.len());
        for &node in &nodes {
            let (archetype, _, _) = world.entity_location(node).expect("a listed node is alive");
            let mut plan = Vec::new();
            for &id in world.archetype(archetype).components() {
                let info = world.component_info(id);
                if skip.contains(&info.type_id()) {
                    continue;
                }
                match self.cloners.by_type.get(&info.type_id()) {
                    Some(ops) => plan.push((id, ops.clone())),
                    None => {
                        return Err(CloneError::NotCloneable {
                            entity: node,
                            type_name: info.name(),
                        });
                    }
                }
            }
            plans.push(plan);
        }
        if count == 0 {
            return Ok(Vec::new());
        }
        if tree && nodes.len() > 1 {
            self.register_hierarchy();
        }
        let mut maps = CloneMaps {
            index: nodes.iter().enumerate().map(|(j, &n)| (n, j)).collect(),
            copies: Vec::with_capacity(nodes.len()),
        };
        let mut announced = false;
        let made = panic::catch_unwind(AssertUnwindSafe(|| {
            self.make_copies(&nodes, &plans, count, tree, &mut maps, &mut announced);
        }));
        if let Err(payload) = made {
            // A `Clone`, a remap hook or a registry hook panicked: the copies made so far are
            // despawned (children first), so no half-made copy is left. Once the hooks saw the
            // copies, each goes with its hooks, as a subtree: it leaves whatever parent a hook
            // gave it, and takes the children a hook gave it. Before that (a `Clone` or a
            // remap hook panicked), no hook saw them arrive and none sees them go.
            for &e in maps.copies.iter().rev().flat_map(|c| c.iter().rev()) {
                let gone = panic::catch_unwind(AssertUnwindSafe(|| {
                    if announced {
                        self.despawn(e)
                    } else {
                        self.world_mut().despawn(e)
                    }
                }));
                if let Err(p) = gone {
                    freyr_sched::drop_payload(p);
                }
            }
            panic::resume_unwind(payload);
        }
        Ok(maps.copies.swap_remove(0))
    }

    /// Spawns and fills the copies of `nodes` (tree order), recording each node's copies in
    /// `maps` as soon as they exist.
    fn make_copies(
        &mut self,
        nodes: &[Entity],
        plans: &[Vec<(ComponentId, CloneOps)>],
        count: usize,
        tree: bool,
        maps: &mut CloneMaps,
        announced: &mut bool,
    ) {
        let hooked = !self.hooks.is_empty();
        // With hooks: what the copies went through, for the hooks to see once the clone is
        // whole (one operation, as a `spawn_batch` is: no hook's commands run in the middle).
        let mut changes = Vec::new();
        if hooked {
            // Every copy first (node by node, the ids the column path allocates), so a value
            // is remapped before its insert and the hooks see it final.
            let world = self.world_mut();
            for _ in nodes {
                maps.copies
                    .push((0..count).map(|_| world.spawn(())).collect());
            }
        }
        // The copies of node `j` (tree order: a parent before its children).
        for (j, plan) in plans.iter().enumerate() {
            let node = nodes[j];
            // The index of the node's parent in `nodes`, for every node but the source.
            let parent = (j > 0).then(|| {
                let p = self
                    .world()
                    .get::<ChildOf>(node)
                    .expect("a descendant has a parent")
                    .parent();
                maps.index[&p]
            });
            let has_children = tree
                && self
                    .world()
                    .get::<Children>(node)
                    .is_ok_and(|c| !c.is_empty());
            if hooked {
                let world = self.world_mut();
                if let Some(p) = parent {
                    // The relation first, both sides at once (as `set_parent` links them), then
                    // the components, in the order the hooks then see them.
                    for (i, &e) in maps.copies[j].iter().enumerate() {
                        attach_in(world, maps.copies[p][i], &[e], &mut changes);
                    }
                }
                let spawned = &maps.copies[j];
                for (_, ops) in plan {
                    (ops.insert)(world, node, spawned, maps, &mut changes);
                }
                continue;
            }
            // The column path: one batch spawn of `count` rows per node.
            let world = self.world_mut();
            let mut columns: Vec<(ComponentId, ColumnValues<'static>)> = plan
                .iter()
                .map(|(id, ops)| (*id, (ops.column)(world, node, count)))
                .collect();
            if let Some(p) = parent {
                let id = world.register::<ChildOf>();
                let parents: Vec<ChildOf> = maps.copies[p]
                    .iter()
                    .map(|&e| ChildOf::kept_by_registry(e))
                    .collect();
                columns.push((id, ColumnValues::new(parents)));
            }
            if has_children {
                let id = world.register::<Children>();
                let lists: Vec<Children> = (0..count).map(|_| Children::default()).collect();
                columns.push((id, ColumnValues::new(lists)));
            }
            maps.copies.push(world.spawn_columns(count, columns));
            if let Some(p) = parent {
                let world = self.world_mut();
                for (i, &e) in maps.copies[j].iter().enumerate() {
                    world
                        .get_mut::<Children>(maps.copies[p][i])
                        .expect("a copied parent has Children")
                        .kept_list_mut()
                        .push(e);
                }
            }
        }
        if hooked {
            // Every copy is made, linked and filled: the hooks see it all, in that order, and
            // an edit one records (a child spawned under a copy, a copy despawned) applies to
            // a whole clone that nothing here touches afterwards.
            *announced = true;
            self.after_direct_all(&changes);
        } else {
            // The column path spawned clones as they are; now every copy exists, remap them.
            let world = self.world_mut();
            for (j, plan) in plans.iter().enumerate() {
                for remap in plan.iter().filter_map(|(_, ops)| ops.remap.as_ref()) {
                    for (i, &e) in maps.copies[j].iter().enumerate() {
                        remap(world, e, &maps.instance(i));
                    }
                }
            }
        }
    }
}
