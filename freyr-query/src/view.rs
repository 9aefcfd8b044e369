//! Read-only views handed to callbacks next to their own entity's items: [`View<T>`] gives a
//! [`ComponentView<T>`] (random access to *other* entities' `T`), [`Res<T>`] gives `&T` of a
//! resource.
//!
//! This is a game server's two-pass tick in Freyr's terms: the AI pass reads other entities'
//! positions while each entity writes only its own input. A view's access is added to the
//! launch's access set, so
//!
//! - the query itself may not write `T` while viewing it (rejected before anything runs);
//! - in-flight work that writes `T` is waited for before the launch starts;
//! - work started later that writes `T` (or a resource the launch reads) waits for the launch.
//!
//! Structures built at tick start (a spatial grid) can be stored as a resource and read through
//! [`Res`], or simply captured by the callback in an `Arc`.

use core::marker::PhantomData;
use core::ptr::NonNull;

use freyr_core::{Component, ComponentId, Entity, World};

use crate::access::{Access, AccessKind, TypeAccess};
use crate::error::QueryError;
use crate::resources::Resources;
use crate::tuples::tuples_up_to_8;

/// View marker: read-only random access to every entity's `T`, as a [`ComponentView<T>`].
#[doc(alias = "Read")]
#[doc(alias = "Lookup")]
pub struct View<T>(PhantomData<fn() -> T>);

/// View marker: read-only access to the resource `T`, as `&T`.
#[doc(alias = "Resource")]
pub struct Res<T>(PhantomData<fn() -> T>);

/// Read-only random access to the `T` component of any entity.
///
/// # Examples
///
/// ```
/// use freyr::{Registry, View};
///
/// #[derive(Clone, Copy)]
/// struct Pos(f32);
/// struct Target(freyr::Entity);
/// struct Seen(f32);
///
/// let mut registry = Registry::with_workers(2);
/// let a = registry.spawn((Pos(7.0),));
/// let b = registry.spawn((Target(a), Seen(0.0)));
/// registry
///     .query::<(&Target, &mut Seen)>()
///     .views::<(View<Pos>,)>()
///     .each_async_with(|_, (target, seen), ctx| {
///         let (positions,) = ctx.views();
///         seen.0 = positions.get(target.0).map_or(-1.0, |p| p.0);
///     });
/// registry.execute_tasks();
/// assert_eq!(registry.get::<Seen>(b).unwrap().0, 7.0);
/// ```
pub struct ComponentView<'w, T> {
    world: &'w World,
    id: Option<ComponentId>,
    _marker: PhantomData<&'w T>,
}

impl<T> Clone for ComponentView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ComponentView<'_, T> {}

impl<'w, T: Component> ComponentView<'w, T> {
    /// `entity`'s `T`, or `None` if the entity is stale or has no `T`.
    pub fn get(&self, entity: Entity) -> Option<&'w T> {
        let id = self.id?;
        let (archetype, chunk, row) = self.world.entity_location(entity)?;
        let archetype = self.world.archetype(archetype);
        let column = archetype.column_index(id)?;
        let base = archetype.chunk(chunk).column_ptr(column).cast::<T>();
        // SAFETY:
        // - `entity_location` returned a live (chunk, row), so `row < chunk.len()` and the value
        //   is initialised; the column holds `T` because `id` is `T`'s id;
        // - the launch holding this view registered a read of `T`, so no in-flight work writes any
        //   `T` column and none can start until the launch is retired; the world is not
        //   structurally modified while the view exists (structural changes wait for all launches,
        //   and a synchronous callback borrows the registry).
        Some(unsafe { base.add(row).as_ref() })
    }

    /// Whether `entity` is alive and has a `T`.
    pub fn contains(&self, entity: Entity) -> bool {
        self.get(entity).is_some()
    }
}

/// A pointer that can be shared with tasks; dereferenced only while its launch is registered.
pub struct SharedPtr<T: ?Sized>(NonNull<T>);

impl<T: ?Sized> Clone for SharedPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for SharedPtr<T> {}

// SAFETY: only shared references are created from the pointer; `T: Sync` makes those shareable
// across threads.
unsafe impl<T: ?Sized + Sync> Send for SharedPtr<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Sync> Sync for SharedPtr<T> {}

/// A set of read-only views: `()`, [`View<T>`], [`Res<T>`] and tuples of these up to 8.
///
/// The trait is sealed: these are its only implementations (it is public so that bounds can name
/// it); see [`QueryFilter`](crate::QueryFilter) for what an outside implementation runs into.
///
/// # Safety
///
/// An implementation must report every component it reads in `type_access` and `access`, every
/// resource it reads in `access`, and `item` must only create shared references. `access` must
/// read only the world's layout (component ids), never a component value: the registry calls it
/// before waiting for the parallel tasks that may write them.
pub unsafe trait ViewSet: sealed::Sealed + 'static {
    /// What the callback gets, e.g. `(ComponentView<'w, Position>, &'w Grid)`.
    type Item<'w>: Copy;
    /// Raw form shared with tasks.
    type Fetch: Copy + Send + Sync + 'static;
    /// Records the component types read, for the conflict check against the query.
    fn type_access(out: &mut TypeAccess);
    /// Records the resolved access.
    fn access(world: &World, access: &mut Access);
    /// Captures the views.
    ///
    /// # Errors
    ///
    /// [`QueryError::MissingResource`] if a [`Res<T>`] names a resource that is not stored.
    fn fetch(world: &World, resources: &Resources) -> Result<Self::Fetch, QueryError>;
    /// Rebuilds the views.
    ///
    /// # Safety
    ///
    /// `fetch` came from [`fetch`](ViewSet::fetch) on a world and resources that are still alive,
    /// not structurally modified, and whose viewed components and resources nothing writes during
    /// `'w`.
    unsafe fn item<'w>(fetch: Self::Fetch) -> Self::Item<'w>;
}

impl<T: Component> sealed::Sealed for View<T> {}

// SAFETY: reports a read of `T` and the world reference; `ComponentView` only reads.
unsafe impl<T: Component> ViewSet for View<T> {
    type Item<'w> = ComponentView<'w, T>;
    type Fetch = (SharedPtr<World>, Option<ComponentId>);
    fn type_access(out: &mut TypeAccess) {
        out.add::<T>(AccessKind::Read);
    }
    fn access(world: &World, access: &mut Access) {
        if let Some(id) = world.component_id::<T>() {
            access.add_read(id);
        }
        access.set_world_ref();
    }
    fn fetch(world: &World, _resources: &Resources) -> Result<Self::Fetch, QueryError> {
        Ok((SharedPtr(NonNull::from(world)), world.component_id::<T>()))
    }
    #[inline(always)]
    unsafe fn item<'w>(fetch: Self::Fetch) -> Self::Item<'w> {
        ComponentView {
            // SAFETY: the world outlives `'w` and is not modified structurally (caller contract).
            world: unsafe { fetch.0.0.as_ref() },
            id: fetch.1,
            _marker: PhantomData,
        }
    }
}

impl<T: Send + Sync + 'static> sealed::Sealed for Res<T> {}

// SAFETY: reports a read of the resource `T`; hands out `&T` only.
unsafe impl<T: Send + Sync + 'static> ViewSet for Res<T> {
    type Item<'w> = &'w T;
    type Fetch = SharedPtr<T>;
    fn type_access(_out: &mut TypeAccess) {}
    fn access(_world: &World, access: &mut Access) {
        access.add_resource_read::<T>();
    }
    fn fetch(_world: &World, resources: &Resources) -> Result<Self::Fetch, QueryError> {
        resources
            .get::<T>()
            .map(|r| SharedPtr(NonNull::from(r)))
            .ok_or(QueryError::MissingResource {
                type_name: core::any::type_name::<T>(),
            })
    }
    #[inline(always)]
    unsafe fn item<'w>(fetch: Self::Fetch) -> Self::Item<'w> {
        // SAFETY: the resource outlives `'w` and nothing writes it meanwhile (caller contract).
        unsafe { fetch.0.as_ref() }
    }
}

mod sealed {
    /// Keeps [`ViewSet`](super::ViewSet) to the implementations in this file.
    #[allow(
        unnameable_types,
        reason = "sealed on purpose: other crates use the trait, only this crate implements it"
    )]
    pub trait Sealed {}
}

macro_rules! impl_view_tuple {
    ($($name:ident $idx:tt),*) => {
        impl<$($name: ViewSet),*> sealed::Sealed for ($($name,)*) {}

        // SAFETY: forwards to the elements (`()` views nothing).
        unsafe impl<$($name: ViewSet),*> ViewSet for ($($name,)*) {
            type Item<'w> = ($($name::Item<'w>,)*);
            type Fetch = ($($name::Fetch,)*);
            #[allow(unused_variables)]
            fn type_access(out: &mut TypeAccess) {
                $($name::type_access(out);)*
            }
            #[allow(unused_variables)]
            fn access(world: &World, access: &mut Access) {
                $($name::access(world, access);)*
            }
            #[allow(unused_variables, clippy::unit_arg)]
            fn fetch(world: &World, resources: &Resources) -> Result<Self::Fetch, QueryError> {
                Ok(($($name::fetch(world, resources)?,)*))
            }
            #[inline(always)]
            #[allow(unused_variables, unused_unsafe, clippy::unused_unit)]
            unsafe fn item<'w>(fetch: Self::Fetch) -> Self::Item<'w> {
                // SAFETY: forwarded caller contract.
                unsafe { ($($name::item(fetch.$idx),)*) }
            }
        }
    };
}

tuples_up_to_8!(impl_view_tuple);
