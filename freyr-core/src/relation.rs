//! The two components of the parent relation, [`ChildOf`] and [`Children`], and the check that
//! keeps them out of every door that writes a component by type.
//!
//! The registry's hierarchy methods (`set_parent`, `spawn_child`, `remove_parent`, despawn,
//! clone) keep the two sides together: a `ChildOf` on every child, naming a parent whose
//! `Children` lists it. A copy inserted, removed or overwritten on its own would break that
//! silently. The types live here, beside [`Disabled`](crate::Disabled), so that every layer that
//! hands out write access by type (the registry's `insert`/`spawn`/`remove`/`get_mut`, queries
//! and function systems, commands) can refuse them with a compare against a constant: see
//! [`refuse_kept`] and [`is_kept`]. [`World`](crate::World)'s own methods, which the registry's
//! hierarchy code is written with, do not refuse them: a `&mut World` (the registry's
//! `world_mut`) is the raw door.

use core::any::TypeId;

use crate::bundle::{Bundle, BundleTypes};
use crate::entity::Entity;

/// The parent of a child entity: on every entity that has a parent, naming it. Set with the
/// registry's `set_parent` or `spawn_child`, cleared with `remove_parent`. Readable like any
/// component (`&ChildOf` in a query, `Without<ChildOf>` for the roots); every door that writes
/// a component by type refuses it (the registry's `insert`, `spawn`, `remove` and `get_mut`,
/// queries and function systems that write it, commands; see [`is_kept`]).
///
/// # Examples
///
/// ```
/// use freyr::hierarchy::ChildOf;
///
/// let mut registry = freyr::Registry::with_workers(1);
/// let ship = registry.spawn(("ship",));
/// let turret = registry.spawn_child(ship, ("turret",)).unwrap();
/// assert_eq!(registry.get::<ChildOf>(turret).unwrap().parent(), ship);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ChildOf(Entity);

impl ChildOf {
    /// The parent.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let p = registry.spawn(());
    /// let c = registry.spawn_child(p, ()).unwrap();
    /// assert_eq!(registry.get::<freyr::hierarchy::ChildOf>(c).unwrap().parent(), p);
    /// ```
    pub fn parent(&self) -> Entity {
        self.0
    }

    /// A `ChildOf` naming `parent`, for the registry's hierarchy code. Any door but a
    /// `&mut World` refuses to insert it, so a value built here cannot reach a world that way.
    ///
    /// ```
    /// let e = freyr::Entity::from_bits((1 << 32) | 7).unwrap();
    /// assert_eq!(freyr::hierarchy::ChildOf::kept_by_registry(e).parent(), e);
    /// ```
    #[doc(hidden)]
    pub fn kept_by_registry(parent: Entity) -> ChildOf {
        ChildOf(parent)
    }
}

/// The children of a parent, in the order they were attached (a child attached again goes to
/// the end). On every entity that ever had a child; empty once they all left. Kept by the
/// registry's hierarchy methods; refused by every door that writes a component by type, as
/// [`ChildOf`] is.
///
/// # Examples
///
/// ```
/// use freyr::hierarchy::Children;
///
/// let mut registry = freyr::Registry::with_workers(1);
/// let p = registry.spawn(());
/// let a = registry.spawn_child(p, ()).unwrap();
/// let b = registry.spawn_child(p, ()).unwrap();
/// assert_eq!(registry.get::<Children>(p).unwrap().as_slice(), [a, b]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Children(Vec<Entity>);

impl Children {
    /// The children, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let p = registry.spawn(());
    /// let c = registry.spawn_child(p, ()).unwrap();
    /// let children = registry.get::<freyr::hierarchy::Children>(p).unwrap();
    /// assert_eq!(children.as_slice(), [c]);
    /// ```
    pub fn as_slice(&self) -> &[Entity] {
        &self.0
    }

    /// A list holding `children`, for the registry's hierarchy code (refused by every door but
    /// a `&mut World`, as [`ChildOf::kept_by_registry`]'s value is).
    ///
    /// ```
    /// let e = freyr::Entity::from_bits((1 << 32) | 7).unwrap();
    /// assert_eq!(freyr::hierarchy::Children::kept_by_registry(vec![e]).as_slice(), [e]);
    /// ```
    #[doc(hidden)]
    pub fn kept_by_registry(children: Vec<Entity>) -> Children {
        Children(children)
    }

    /// The list itself, for the registry's hierarchy code: a `&mut Children` is handed out by
    /// a `&mut World` only.
    ///
    /// ```
    /// let e = freyr::Entity::from_bits((1 << 32) | 7).unwrap();
    /// let mut list = freyr::hierarchy::Children::default();
    /// list.kept_list_mut().push(e);
    /// assert_eq!(list.as_slice(), [e]);
    /// ```
    #[doc(hidden)]
    pub fn kept_list_mut(&mut self) -> &mut Vec<Entity> {
        &mut self.0
    }
}

impl core::ops::Deref for Children {
    type Target = [Entity];
    fn deref(&self) -> &[Entity] {
        &self.0
    }
}

/// Whether `T` is [`ChildOf`] or [`Children`], the components the registry keeps. A compare of
/// constants: free once `T` is known.
///
/// # Examples
///
/// ```
/// use freyr::hierarchy::{ChildOf, Children};
///
/// assert!(freyr::hierarchy::is_kept::<ChildOf>() && freyr::hierarchy::is_kept::<Children>());
/// assert!(!freyr::hierarchy::is_kept::<u32>());
/// ```
#[inline]
pub fn is_kept<T: 'static>() -> bool {
    is_kept_type(TypeId::of::<T>())
}

/// [`is_kept`] for a type known by its id (for the crates that check a list of type ids).
///
/// # Examples
///
/// ```
/// use core::any::TypeId;
///
/// assert!(freyr_core::is_kept_type(TypeId::of::<freyr::hierarchy::ChildOf>()));
/// assert!(!freyr_core::is_kept_type(TypeId::of::<f32>()));
/// ```
#[doc(hidden)]
#[inline]
pub fn is_kept_type(t: TypeId) -> bool {
    t == TypeId::of::<ChildOf>() || t == TypeId::of::<Children>()
}

/// Panics, naming `call`, if bundle `B` names [`ChildOf`] or [`Children`]: what the registry's
/// `insert`, `spawn`, `spawn_batch`, `spawn_child` and `remove` and the commands that insert,
/// spawn and remove call before anything changes. Two compares of constants per component type
/// of `B`.
///
/// # Panics
///
/// If `B` names either type.
///
/// # Examples
///
/// ```
/// use freyr::hierarchy::ChildOf;
///
/// freyr_core::refuse_kept::<(u32, f32)>("Registry::insert"); // fine
/// let refused = std::panic::catch_unwind(|| freyr_core::refuse_kept::<(u32, ChildOf)>("Registry::insert"));
/// assert!(refused.is_err());
/// ```
#[doc(hidden)]
#[inline]
pub fn refuse_kept<B: Bundle>(call: &str) {
    if BundleTypes::of::<B>().iter().any(is_kept_type) {
        kept_refused(call);
    }
}

#[cold]
#[inline(never)]
fn kept_refused(call: &str) -> ! {
    panic!(
        "freyr: {call} cannot add, remove or overwrite `ChildOf` or `Children`: the registry \
         keeps both sides of the relation; use `set_parent`, `spawn_child` or `remove_parent` \
         (`HierarchyCommands` for commands)"
    )
}
