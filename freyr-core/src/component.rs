//! Component types, their per-world ids and the registry that assigns them.

use core::alloc::Layout;
use core::any::TypeId;
use core::hash::{BuildHasherDefault, Hasher};

use hashbrown::HashMap;

/// Anything that can be stored in an entity: every `Send + Sync + 'static` type.
///
/// Components need no registration; a world registers a type the first time it sees it.
/// Zero-sized types (tags) take no column bytes.
///
/// # Examples
/// ```
/// use freyr::World;
/// struct Player; // a tag
/// let mut world = World::new();
/// let e = world.spawn((Player, 3.5f32));
/// assert!(world.get::<Player>(e).is_ok());
/// assert_eq!(*world.get::<f32>(e).unwrap(), 3.5);
/// ```
pub trait Component: Send + Sync + 'static {}
impl<T: Send + Sync + 'static> Component for T {}

/// A component type's dense id inside one world, assigned in registration order from 0.
///
/// # Examples
/// ```
/// let mut world = freyr::World::new();
/// let a = world.register::<u8>();
/// let b = world.register::<u16>();
/// assert_eq!((a.index(), b.index()), (0, 1));
/// ```
#[derive(Copy, Clone, Eq, PartialEq, Hash, Ord, PartialOrd, Debug)]
pub struct ComponentId(u32);

impl ComponentId {
    /// The id as an index (`0..number of registered components`).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// assert_eq!(world.register::<u8>().index(), 0);
    /// ```
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Drops `count` consecutive values of the component type starting at the pointer.
pub(crate) type DropFn = unsafe fn(*mut u8, usize);

/// # Safety
/// `ptr` must point to `count` initialised, properly aligned values of `T` that are not used again.
unsafe fn drop_slice<T>(ptr: *mut u8, count: usize) {
    // SAFETY: the caller passes `count` live, aligned `T`s that it gives up; `drop_in_place` on a
    // slice keeps dropping the remaining elements if one element's `Drop` panics.
    unsafe { core::ptr::drop_in_place(core::ptr::slice_from_raw_parts_mut(ptr.cast::<T>(), count)) }
}

/// What a world knows about a component type.
///
/// # Examples
/// ```
/// let mut world = freyr::World::new();
/// let id = world.register::<[f32; 3]>();
/// let info = world.component_info(id);
/// assert_eq!(info.id(), id);
/// assert_eq!(info.name(), "[f32; 3]");
/// assert_eq!(info.layout().size(), 12);
/// assert_eq!(info.type_id(), core::any::TypeId::of::<[f32; 3]>());
/// ```
#[derive(Clone, Debug)]
pub struct ComponentInfo {
    id: ComponentId,
    type_id: TypeId,
    name: &'static str,
    layout: Layout,
    drop: Option<DropFn>,
}

impl ComponentInfo {
    pub(crate) fn of<T: Component>(id: ComponentId) -> ComponentInfo {
        ComponentInfo {
            id,
            type_id: TypeId::of::<T>(),
            name: core::any::type_name::<T>(),
            layout: Layout::new::<T>(),
            drop: core::mem::needs_drop::<T>().then_some(drop_slice::<T> as DropFn),
        }
    }

    /// The component's id in its world.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let id = world.register::<u8>();
    /// assert_eq!(world.component_info(id).id(), id);
    /// ```
    #[inline]
    pub fn id(&self) -> ComponentId {
        self.id
    }

    /// The Rust type id.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let id = world.register::<u8>();
    /// assert_eq!(world.component_info(id).type_id(), core::any::TypeId::of::<u8>());
    /// ```
    #[inline]
    pub fn type_id(&self) -> TypeId {
        self.type_id
    }

    /// The type name (`core::any::type_name`).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let id = world.register::<u8>();
    /// assert_eq!(world.component_info(id).name(), "u8");
    /// ```
    #[inline]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Size and alignment of one value.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let id = world.register::<u64>();
    /// assert_eq!(world.component_info(id).layout(), core::alloc::Layout::new::<u64>());
    /// ```
    #[inline]
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The slice drop function, `None` when the type needs no drop.
    #[inline]
    pub(crate) fn drop_fn(&self) -> Option<DropFn> {
        self.drop
    }
}

/// A hasher for `TypeId` keys: a `TypeId` is already a hash, so it passes the bits through.
#[derive(Default, Clone, Copy)]
pub(crate) struct TypeIdHasher(u64);

impl Hasher for TypeIdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // `TypeId` hashes through `write_u64`; fold anything else in.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A `HashMap` keyed by `TypeId`.
pub(crate) type TypeIdMap<V> = HashMap<TypeId, V, BuildHasherDefault<TypeIdHasher>>;

/// How many component types a world registers at most: 2^32, the `u32` ids.
pub(crate) const COMPONENT_LIMIT: u64 = 1 << 32;

/// The id of a new component type when `count` are registered.
///
/// # Panics
/// When `count` is [`COMPONENT_LIMIT`].
pub(crate) fn fresh_component_id(count: usize) -> ComponentId {
    match u32::try_from(count) {
        Ok(id) => ComponentId(id),
        Err(_) => panic!(
            "freyr: component type limit reached: a world registers at most {COMPONENT_LIMIT} \
             component types and {count} are registered; use fewer distinct component types"
        ),
    }
}

/// The per-world component registry: ids are dense and assigned in first-use order.
#[derive(Default)]
#[allow(
    unnameable_types,
    reason = "reached only through `Bundle`'s sealed supertrait, which other crates cannot call"
)]
pub struct Components {
    infos: Vec<ComponentInfo>,
    by_type: TypeIdMap<ComponentId>,
}

impl Components {
    /// The id of `T`, registering it if new.
    pub fn register<T: Component>(&mut self) -> ComponentId {
        let next = self.infos.len();
        let infos = &mut self.infos;
        *self.by_type.entry(TypeId::of::<T>()).or_insert_with(|| {
            let id = fresh_component_id(next);
            infos.push(ComponentInfo::of::<T>(id));
            id
        })
    }

    /// The id of the type with `type_id`, if registered.
    #[inline]
    pub(crate) fn id_of(&self, type_id: TypeId) -> Option<ComponentId> {
        self.by_type.get(&type_id).copied()
    }

    /// The info of a registered component.
    #[inline]
    pub(crate) fn info(&self, id: ComponentId) -> &ComponentInfo {
        &self.infos[id.index()]
    }

    /// Number of registered components.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.infos.len()
    }

    /// Every registered component, in id order.
    pub(crate) fn infos(&self) -> &[ComponentInfo] {
        &self.infos
    }

    /// A registry holding exactly `infos` (ids `0..infos.len()`, as read by
    /// [`infos`](Components::infos)).
    pub(crate) fn from_infos(infos: &[ComponentInfo]) -> Components {
        let mut by_type = TypeIdMap::default();
        by_type.reserve(infos.len());
        for (index, info) in infos.iter().enumerate() {
            debug_assert_eq!(info.id.index(), index);
            by_type.insert(info.type_id, info.id);
        }
        Components {
            infos: infos.to_vec(),
            by_type,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::ComponentId;

    /// A raw id, for unit tests of id-set algebra.
    pub(crate) fn id(index: u32) -> ComponentId {
        ComponentId(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn the_last_component_id_is_handed_out() {
        assert_eq!(fresh_component_id(0).index(), 0);
        assert_eq!(
            fresh_component_id(COMPONENT_LIMIT as usize - 1).index(),
            u32::MAX as usize
        );
    }

    // 2^32 distinct Rust types cannot be made, so the registry's count is passed to the check
    // that `register` runs.
    #[test]
    #[cfg(target_pointer_width = "64")]
    #[should_panic(
        expected = "freyr: component type limit reached: a world registers at most \
                               4294967296 component types and 4294967296 are registered; use \
                               fewer distinct component types"
    )]
    fn registering_past_the_limit_panics_with_what_to_do() {
        fresh_component_id(COMPONENT_LIMIT as usize);
    }

    #[test]
    fn ids_are_dense_in_first_use_order() {
        let mut components = Components::default();
        let a = components.register::<u8>();
        let b = components.register::<String>();
        assert_eq!(components.register::<u8>(), a);
        assert_eq!((a.index(), b.index()), (0, 1));
        assert_eq!(components.id_of(TypeId::of::<String>()), Some(b));
        assert_eq!(components.id_of(TypeId::of::<u16>()), None);
        assert!(components.info(b).drop_fn().is_some());
        assert!(components.info(a).drop_fn().is_none());
        assert_eq!(components.len(), 2);
    }
}

/// The marker of a disabled entity: it keeps its id and its components, but queries skip it
/// unless they name `Disabled` themselves (`With<Disabled>`, `Option<&Disabled>`,
/// `Without<Disabled>`). Added and removed by `Registry::disable` and `Registry::enable`;
/// direct access by id (`get`, `get_mut`, `insert`) still reaches a disabled entity.
///
/// # Examples
///
/// ```
/// use freyr::hierarchy::Disabled;
/// use freyr::With;
///
/// let mut registry = freyr::Registry::with_workers(1);
/// let a = registry.spawn((1u32,));
/// let b = registry.spawn((2u32,));
/// registry.disable(b).unwrap();
/// assert_eq!(registry.query::<&u32>().count(), 1);
/// assert_eq!(registry.query_filtered::<&u32, With<Disabled>>().count(), 1);
/// assert_eq!(registry.get::<u32>(b), Ok(&2));
/// # let _ = a;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Disabled;
