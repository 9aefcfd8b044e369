//! [`Resources`]: typed singletons stored next to the world.

use core::any::{Any, TypeId};

use hashbrown::HashMap;

/// A map from type to one value of that type ("resource"): configuration, a spatial grid built at
/// tick start, a tick counter.
///
/// The registry wraps this map and checks resource access against in-flight work: a launch may
/// read a resource through a [`Res`](crate::Res) view, and replacing, removing or mutably borrowing
/// that resource first waits for the launch.
///
/// # Examples
///
/// ```
/// // Internal: the facade does not export it; the registry's `insert_resource` and `resource`
/// // are the API.
/// use freyr_query::Resources;
///
/// struct Gravity(f32);
///
/// let mut resources = Resources::new();
/// assert!(resources.insert(Gravity(9.8)).is_none());
/// resources.get_mut::<Gravity>().unwrap().0 = 1.6;
/// assert_eq!(resources.get::<Gravity>().unwrap().0, 1.6);
/// assert_eq!(resources.remove::<Gravity>().unwrap().0, 1.6);
/// assert!(resources.get::<Gravity>().is_none());
/// ```
#[derive(Default)]
pub struct Resources {
    map: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

impl Resources {
    /// An empty map.
    pub fn new() -> Self {
        Resources::default()
    }

    /// Stores `value`, returning the previous value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        self.map
            .insert(TypeId::of::<T>(), Box::new(value))
            .map(|old| {
                *old.downcast::<T>()
                    .expect("resource stored under its own TypeId")
            })
    }

    /// The value of type `T`, if present.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map.get(&TypeId::of::<T>()).map(|b| {
            b.downcast_ref::<T>()
                .expect("resource stored under its own TypeId")
        })
    }

    /// The value of type `T`, mutably, if present.
    pub fn get_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        self.map.get_mut(&TypeId::of::<T>()).map(|b| {
            b.downcast_mut::<T>()
                .expect("resource stored under its own TypeId")
        })
    }

    /// Removes and returns the value of type `T`.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        self.map.remove(&TypeId::of::<T>()).map(|old| {
            *old.downcast::<T>()
                .expect("resource stored under its own TypeId")
        })
    }

    /// Whether a value of type `T` is stored.
    pub fn contains<T: Send + Sync + 'static>(&self) -> bool {
        self.map.contains_key(&TypeId::of::<T>())
    }

    /// Number of resources stored.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no resource is stored.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_replaces_and_returns_old_value() {
        let mut r = Resources::new();
        assert_eq!(r.insert(1u32), None);
        assert_eq!(r.insert(2u32), Some(1));
        assert_eq!(r.insert(5u64), None);
        assert_eq!(r.len(), 2);
        assert_eq!(r.get::<u32>(), Some(&2));
        assert!(r.contains::<u64>());
        assert_eq!(r.remove::<u64>(), Some(5));
        assert!(!r.contains::<u64>());
        assert!(!r.is_empty());
    }
}
