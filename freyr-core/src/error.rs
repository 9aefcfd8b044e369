//! The error values of world operations. None of them is ever raised as a panic.
//!
//! Their `Display` texts follow the project's convention for errors: one line, starting with a
//! lowercase word, without a trailing period, naming the offending entity (as [`Entity`]'s
//! `Display` prints it, e.g. `7v2`) and type.

use core::fmt;

use crate::entity::Entity;

/// The entity handle is stale (its entity was despawned) or was never spawned in this world.
/// It carries the handle that was passed.
///
/// # Examples
/// ```
/// use freyr::{NoSuchEntity, World};
/// let mut world = World::new();
/// let e = world.spawn(());
/// world.despawn(e).unwrap();
/// let err = world.despawn(e).unwrap_err();
/// assert_eq!(err, NoSuchEntity(e));
/// assert_eq!(err.entity(), e);
/// assert_eq!(
///     err.to_string(),
///     "entity 0v1 does not exist (despawned or never spawned); check `contains` before using \
///      a stored handle"
/// );
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct NoSuchEntity(pub Entity);

impl NoSuchEntity {
    /// The handle that named no live entity.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn(());
    /// world.despawn(e).unwrap();
    /// assert_eq!(world.insert(e, (1u8,)).unwrap_err().entity(), e);
    /// ```
    #[inline]
    #[must_use]
    pub fn entity(self) -> Entity {
        self.0
    }
}

impl fmt::Display for NoSuchEntity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "entity {} does not exist (despawned or never spawned); check `contains` before \
             using a stored handle",
            self.0
        )
    }
}

impl std::error::Error for NoSuchEntity {}

/// Why a component access or removal failed. Both variants carry the entity handle that was
/// passed.
///
/// # Examples
/// ```
/// use freyr::{ComponentError, World};
/// let mut world = World::new();
/// let e = world.spawn((1u8,));
/// let missing = world.get::<u16>(e).unwrap_err();
/// assert_eq!(missing, ComponentError::MissingComponent { entity: e, component: "u16" });
/// assert_eq!(missing.to_string(), "entity 0v1 has no component of type `u16`");
/// world.despawn(e).unwrap();
/// assert_eq!(world.get::<u8>(e), Err(ComponentError::NoSuchEntity(e)));
/// assert_eq!(world.get::<u8>(e).unwrap_err().entity(), e);
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ComponentError {
    /// The entity handle is stale or was never spawned.
    NoSuchEntity(Entity),
    /// The entity lacks a component.
    MissingComponent {
        /// The entity.
        entity: Entity,
        /// The missing type's name (`core::any::type_name`).
        component: &'static str,
    },
}

impl ComponentError {
    /// The entity handle the failed call was given.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// let e = world.spawn((1u8,));
    /// assert_eq!(world.get::<u16>(e).unwrap_err().entity(), e);
    /// ```
    #[inline]
    #[must_use]
    pub fn entity(&self) -> Entity {
        match *self {
            ComponentError::NoSuchEntity(entity)
            | ComponentError::MissingComponent { entity, .. } => entity,
        }
    }
}

impl fmt::Display for ComponentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ComponentError::NoSuchEntity(entity) => fmt::Display::fmt(&NoSuchEntity(entity), f),
            ComponentError::MissingComponent { entity, component } => {
                write!(f, "entity {entity} has no component of type `{component}`")
            }
        }
    }
}

impl std::error::Error for ComponentError {}

impl From<NoSuchEntity> for ComponentError {
    fn from(error: NoSuchEntity) -> Self {
        ComponentError::NoSuchEntity(error.0)
    }
}
