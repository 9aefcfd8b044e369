//! [`Resources`]: typed singletons stored next to the world.

use core::any::{Any, TypeId};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

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
    /// Each value with its type's name (for errors that name a resource type).
    map: HashMap<TypeId, (Box<dyn Any + Send + Sync>, &'static str)>,
}

/// A resource value, type-erased.
pub type AnyResource = Box<dyn Any + Send + Sync>;

impl Drop for Resources {
    /// Drops every value, each on its own: a panicking `Drop` neither stops the values after it
    /// from being dropped (the map's own drop would leak them) nor, with a second one, aborts
    /// the process. The first panic is re-raised once all are dropped, unless the thread is
    /// already unwinding (then it is dropped, as re-raising would abort).
    fn drop(&mut self) {
        let mut first = None;
        for (_, (value, _)) in self.map.drain() {
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| drop(value))) {
                freyr_sched::keep_first(&mut first, payload);
            }
        }
        if let Some(payload) = first {
            if std::thread::panicking() {
                freyr_sched::drop_payload(payload);
            } else {
                resume_unwind(payload);
            }
        }
    }
}

impl Resources {
    /// An empty map.
    pub fn new() -> Self {
        Resources::default()
    }

    /// Stores `value`, returning the previous value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        let name = core::any::type_name::<T>();
        self.map
            .insert(TypeId::of::<T>(), (Box::new(value), name))
            .map(|(old, _)| {
                *old.downcast::<T>()
                    .expect("resource stored under its own TypeId")
            })
    }

    /// The value of type `T`, if present.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map.get(&TypeId::of::<T>()).map(|(b, _)| {
            b.downcast_ref::<T>()
                .expect("resource stored under its own TypeId")
        })
    }

    /// The value of type `T`, mutably, if present.
    pub fn get_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        self.map.get_mut(&TypeId::of::<T>()).map(|(b, _)| {
            b.downcast_mut::<T>()
                .expect("resource stored under its own TypeId")
        })
    }

    /// Removes and returns the value of type `T`.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        self.map.remove(&TypeId::of::<T>()).map(|(old, _)| {
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

    /// Every stored resource's type id and type name (in no particular order).
    pub fn types(&self) -> impl Iterator<Item = (TypeId, &'static str)> + '_ {
        self.map.iter().map(|(&id, &(_, name))| (id, name))
    }

    /// Stores a type-erased value under `type_id` (which must be the value's own type id),
    /// returning the previous one.
    pub fn insert_any(
        &mut self,
        type_id: TypeId,
        name: &'static str,
        value: AnyResource,
    ) -> Option<AnyResource> {
        debug_assert_eq!((*value).type_id(), type_id);
        self.map.insert(type_id, (value, name)).map(|(old, _)| old)
    }

    /// Removes the value stored under `type_id`.
    pub fn remove_any(&mut self, type_id: TypeId) -> Option<AnyResource> {
        self.map.remove(&type_id).map(|(old, _)| old)
    }
}

/// How one resource type is copied into a snapshot (the snapshot registry keeps one per
/// registered type).
#[derive(Copy, Clone)]
pub struct ResourceOps {
    /// The resource type.
    pub type_id: TypeId,
    /// Its name, for the errors that name a type neither registered nor excluded.
    pub name: &'static str,
    /// Copies the resource (or its absence) into a snapshot's slot, reusing the slot's box.
    pub save: fn(&Resources, &mut Option<AnyResource>),
    /// A clone of a value `save` stored.
    pub clone_out: fn(&(dyn Any + Send + Sync)) -> AnyResource,
}

impl ResourceOps {
    /// The copy functions of resource type `R`.
    pub fn of<R: Clone + Send + Sync + 'static>() -> Self {
        ResourceOps {
            type_id: TypeId::of::<R>(),
            name: core::any::type_name::<R>(),
            save: save_resource::<R>,
            clone_out: clone_resource::<R>,
        }
    }
}

fn save_resource<R: Clone + Send + Sync + 'static>(
    resources: &Resources,
    slot: &mut Option<AnyResource>,
) {
    match (
        resources.get::<R>(),
        slot.as_mut().and_then(|b| b.downcast_mut::<R>()),
    ) {
        (Some(value), Some(kept)) => kept.clone_from(value),
        (Some(value), None) => *slot = Some(Box::new(value.clone())),
        (None, _) => *slot = None,
    }
}

fn clone_resource<R: Clone + Send + Sync + 'static>(
    value: &(dyn Any + Send + Sync),
) -> AnyResource {
    let value = value
        .downcast_ref::<R>()
        .expect("a snapshot slot holds its own resource type");
    Box::new(value.clone())
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
