//! The error values of world operations. None of them is ever raised as a panic.

use core::fmt;

/// The entity handle is stale (its entity was despawned) or was never spawned in this world.
///
/// # Examples
/// ```
/// use freyr::{NoSuchEntity, World};
/// let mut world = World::new();
/// let e = world.spawn(());
/// world.despawn(e).unwrap();
/// assert_eq!(world.despawn(e), Err(NoSuchEntity));
/// assert_eq!(NoSuchEntity.to_string(), "no such entity (despawned or never spawned)");
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct NoSuchEntity;

impl fmt::Display for NoSuchEntity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no such entity (despawned or never spawned)")
    }
}

impl std::error::Error for NoSuchEntity {}

/// Why a component access or removal failed.
///
/// # Examples
/// ```
/// use freyr::{ComponentError, World};
/// let mut world = World::new();
/// let e = world.spawn((1u8,));
/// assert_eq!(world.get::<u16>(e), Err(ComponentError::MissingComponent("u16")));
/// assert_eq!(
///     ComponentError::MissingComponent("u16").to_string(),
///     "entity has no component of type `u16`"
/// );
/// world.despawn(e).unwrap();
/// assert_eq!(world.get::<u8>(e), Err(ComponentError::NoSuchEntity));
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ComponentError {
    /// The entity handle is stale or was never spawned.
    NoSuchEntity,
    /// The entity lacks a component; the payload is the type's name.
    MissingComponent(&'static str),
}

impl fmt::Display for ComponentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ComponentError::NoSuchEntity => fmt::Display::fmt(&NoSuchEntity, f),
            ComponentError::MissingComponent(name) => {
                write!(f, "entity has no component of type `{name}`")
            }
        }
    }
}

impl std::error::Error for ComponentError {}

impl From<NoSuchEntity> for ComponentError {
    fn from(_: NoSuchEntity) -> Self {
        ComponentError::NoSuchEntity
    }
}
