//! Resources through the registry: typed singletons next to the world, checked against
//! in-flight work that reads them through [`Res`](crate::Res) views.

use super::Registry;

impl Registry {
    /// Stores a resource, returning the previous value of its type. Waits for in-flight work
    /// that reads that resource.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// assert_eq!(registry.insert_resource(1u32), None);
    /// assert_eq!(registry.insert_resource(2u32), Some(1));
    /// ```
    pub fn insert_resource<T: Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        self.guard("Registry::insert_resource");
        self.sync.insert_resource(value, &self.profiler)
    }

    /// The resource of type `T`. Never waits (in-flight work only reads resources).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.insert_resource(7u8);
    /// assert_eq!(registry.resource::<u8>(), Some(&7));
    /// assert_eq!(registry.resource::<u16>(), None);
    /// ```
    pub fn resource<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.sync.resources().get::<T>()
    }

    /// The resource of type `T`, mutably. Waits for in-flight work that reads it.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.insert_resource(7u8);
    /// *registry.resource_mut::<u8>().unwrap() += 1;
    /// assert_eq!(registry.resource::<u8>(), Some(&8));
    /// ```
    pub fn resource_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        self.guard("Registry::resource_mut");
        self.sync.resource_mut::<T>(&self.profiler)
    }

    /// Removes and returns the resource of type `T`. Waits for in-flight work that reads it.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.insert_resource(7u8);
    /// assert_eq!(registry.remove_resource::<u8>(), Some(7));
    /// assert!(!registry.contains_resource::<u8>());
    /// ```
    pub fn remove_resource<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        self.guard("Registry::remove_resource");
        self.sync.remove_resource::<T>(&self.profiler)
    }

    /// Whether a resource of type `T` is stored.
    pub fn contains_resource<T: Send + Sync + 'static>(&self) -> bool {
        self.sync.resources().contains::<T>()
    }
}
