//! Cloning entities and subtrees, and prefabs: the types registered as cloneable, copied a
//! column at a time into a batch spawn.

use core::any::TypeId;
use core::fmt;

use freyr_core::parts::ColumnValues;
use freyr_core::{Component, ComponentId, Disabled, Entity, World};
use hashbrown::HashMap;

use super::super::Registry;
use super::{ChildOf, Children, subtree};

/// How one cloneable type is copied.
#[derive(Clone, Copy)]
struct CloneOps {
    /// `count` clones of the source's value, as a column to spawn.
    column: fn(&World, Entity, usize) -> ColumnValues<'static>,
    /// Inserts a clone of the source's value into each target, through the registry (its
    /// hooks run).
    insert: fn(&mut Registry, Entity, &[Entity]),
}

fn column_of<T: Component + Clone>(
    world: &World,
    source: Entity,
    count: usize,
) -> ColumnValues<'static> {
    let value = world.get::<T>(source).expect("the source has the type");
    ColumnValues::new(vec![value.clone(); count])
}

fn insert_into<T: Component + Clone>(registry: &mut Registry, source: Entity, targets: &[Entity]) {
    for &t in targets {
        let value = registry
            .get::<T>(source)
            .expect("the source has the type")
            .clone();
        registry
            .insert(t, (value,))
            .expect("a clone was just spawned");
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
        self.cloners.by_type.insert(
            TypeId::of::<T>(),
            CloneOps {
                column: column_of::<T>,
                insert: insert_into::<T>,
            },
        );
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
    /// are (an `Entity` inside one still names what it named).
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
    /// clones per type, no row moves); when hooks are registered, the copies are filled
    /// through [`insert`](Registry::insert) instead, so the hooks see every component.
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
                    Some(ops) => plan.push((id, *ops)),
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
        // The copies of node `j` (tree order: a parent before its children).
        let mut copies: Vec<Vec<Entity>> = Vec::with_capacity(nodes.len());
        let hooked = !self.hooks.is_empty();
        for (j, plan) in plans.iter().enumerate() {
            let node = nodes[j];
            // The index of the node's parent in `nodes`, for every node but the source.
            let parent = (j > 0).then(|| {
                let p = self
                    .world()
                    .get::<ChildOf>(node)
                    .expect("a descendant has a parent")
                    .0;
                nodes[..j]
                    .iter()
                    .position(|&n| n == p)
                    .expect("parents come first")
            });
            let has_children = tree
                && self
                    .world()
                    .get::<Children>(node)
                    .is_ok_and(|c| !c.is_empty());
            let spawned = if hooked {
                let spawned: Vec<Entity> = (0..count).map(|_| self.spawn(())).collect();
                for (_, ops) in plan {
                    (ops.insert)(self, node, &spawned);
                }
                if let Some(p) = parent {
                    for (i, &e) in spawned.iter().enumerate() {
                        self.insert(e, (ChildOf(copies[p][i]),))
                            .expect("just spawned");
                    }
                }
                if has_children {
                    for &e in &spawned {
                        self.insert(e, (Children(Vec::new()),))
                            .expect("just spawned");
                    }
                }
                spawned
            } else {
                let world = self.world_mut();
                let mut columns: Vec<(ComponentId, ColumnValues<'static>)> = plan
                    .iter()
                    .map(|&(id, ops)| (id, (ops.column)(world, node, count)))
                    .collect();
                if let Some(p) = parent {
                    let id = world.register::<ChildOf>();
                    let parents: Vec<ChildOf> = copies[p].iter().map(|&e| ChildOf(e)).collect();
                    columns.push((id, ColumnValues::new(parents)));
                }
                if has_children {
                    let id = world.register::<Children>();
                    let lists: Vec<Children> = (0..count).map(|_| Children(Vec::new())).collect();
                    columns.push((id, ColumnValues::new(lists)));
                }
                world.spawn_columns(count, columns)
            };
            if let Some(p) = parent {
                let world = self.world_mut();
                for (i, &e) in spawned.iter().enumerate() {
                    world
                        .get_mut::<Children>(copies[p][i])
                        .expect("a copied parent has Children")
                        .0
                        .push(e);
                }
            }
            copies.push(spawned);
        }
        Ok(copies.swap_remove(0))
    }
}
