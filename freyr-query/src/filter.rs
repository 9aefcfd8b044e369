//! Archetype filters: [`With`], [`Without`] and tuples of filters (all must hold).
//!
//! Filters decide which archetypes a query visits; they fetch nothing and access no data, so they
//! never conflict with anything.

use core::marker::PhantomData;

use freyr_core::{Archetype, Component, ComponentId, World};

use crate::tuples::tuples_up_to_12;

/// A condition on an archetype's component set.
///
/// Implemented for [`With<T>`], [`Without<T>`], `()` (no condition) and tuples of filters up to
/// 12 (every element must hold). The trait is sealed: these are its only implementations (it is
/// public so that bounds can name it). Bounds name it as usual:
///
/// ```
/// use freyr::{With, World};
/// use freyr::query::QueryFilter;
/// use freyr::storage::Archetype;
///
/// fn visits<F: QueryFilter>(world: &World, archetype: &Archetype) -> bool {
///     F::matches(&F::init_state(world), archetype)
/// }
/// let mut world = World::new();
/// let e = world.spawn((1u32,));
/// let archetype = world.archetype(world.entity_location(e).unwrap().0);
/// assert!(visits::<With<u32>>(&world, archetype));
/// assert!(!visits::<With<u8>>(&world, archetype));
/// ```
///
/// and an outside implementation, otherwise complete, does not compile:
///
/// ```compile_fail,E0277
/// use freyr::World;
/// use freyr::query::QueryFilter;
/// use freyr::storage::Archetype;
///
/// struct Everything;
/// // error: the trait bound `Everything: Sealed` is not satisfied
/// impl QueryFilter for Everything {
///     type State = ();
///     fn init_state(_world: &World) -> Self::State {}
///     fn resolve(_state: &mut Self::State, _world: &World) -> bool {
///         false
///     }
///     fn matches(_state: &Self::State, _archetype: &Archetype) -> bool {
///         true
///     }
/// }
/// ```
pub trait QueryFilter: sealed::Sealed + 'static {
    /// Resolved component ids.
    type State: Send + Sync + 'static;
    /// Resolves component ids against `world` (unregistered types stay unresolved).
    fn init_state(world: &World) -> Self::State;
    /// Resolves ids that were unregistered before; returns whether anything changed.
    fn resolve(state: &mut Self::State, world: &World) -> bool;
    /// Whether `archetype` passes.
    fn matches(state: &Self::State, archetype: &Archetype) -> bool;
    /// Whether the filter names the component type `type_id` (a query whose filter names
    /// [`Disabled`](freyr_core::Disabled) sees disabled entities).
    fn mentions(type_id: core::any::TypeId) -> bool {
        let _ = type_id;
        false
    }
}

/// Only archetypes that have a `T` component. `T` itself is not fetched.
///
/// # Examples
///
/// ```
/// use freyr::{Registry, With};
///
/// struct Pos(f32);
/// struct Player;
///
/// let mut registry = Registry::with_workers(1);
/// registry.spawn((Pos(1.0), Player));
/// registry.spawn((Pos(2.0),));
/// let mut seen = Vec::new();
/// registry
///     .query_filtered::<&Pos, With<Player>>()
///     .each(|_, p| seen.push(p.0));
/// assert_eq!(seen, [1.0]);
/// ```
pub struct With<T>(PhantomData<fn() -> T>);

/// Only archetypes that lack a `T` component.
///
/// # Examples
///
/// ```
/// use freyr::{Registry, Without};
///
/// struct Pos(f32);
/// struct Frozen;
///
/// let mut registry = Registry::with_workers(1);
/// registry.spawn((Pos(1.0), Frozen));
/// registry.spawn((Pos(2.0),));
/// let mut seen = Vec::new();
/// registry
///     .query_filtered::<&Pos, Without<Frozen>>()
///     .each(|_, p| seen.push(p.0));
/// assert_eq!(seen, [2.0]);
/// ```
pub struct Without<T>(PhantomData<fn() -> T>);

fn resolve_one<T: Component>(state: &mut Option<ComponentId>, world: &World) -> bool {
    if state.is_none() {
        *state = world.component_id::<T>();
        state.is_some()
    } else {
        false
    }
}

impl<T: Component> sealed::Sealed for With<T> {}

impl<T: Component> QueryFilter for With<T> {
    type State = Option<ComponentId>;
    fn mentions(type_id: core::any::TypeId) -> bool {
        core::any::TypeId::of::<T>() == type_id
    }
    fn init_state(world: &World) -> Self::State {
        world.component_id::<T>()
    }
    fn resolve(state: &mut Self::State, world: &World) -> bool {
        resolve_one::<T>(state, world)
    }
    #[inline]
    fn matches(state: &Self::State, archetype: &Archetype) -> bool {
        // An unregistered type is in no archetype.
        state.is_some_and(|id| archetype.has(id))
    }
}

impl<T: Component> sealed::Sealed for Without<T> {}

impl<T: Component> QueryFilter for Without<T> {
    type State = Option<ComponentId>;
    fn mentions(type_id: core::any::TypeId) -> bool {
        core::any::TypeId::of::<T>() == type_id
    }
    fn init_state(world: &World) -> Self::State {
        world.component_id::<T>()
    }
    fn resolve(state: &mut Self::State, world: &World) -> bool {
        resolve_one::<T>(state, world)
    }
    #[inline]
    fn matches(state: &Self::State, archetype: &Archetype) -> bool {
        !state.is_some_and(|id| archetype.has(id))
    }
}

mod sealed {
    /// Keeps [`QueryFilter`](super::QueryFilter) to the implementations in this file.
    #[allow(
        unnameable_types,
        reason = "sealed on purpose: other crates use the trait, only this crate implements it"
    )]
    pub trait Sealed {}
}

macro_rules! impl_filter_tuple {
    ($($name:ident $idx:tt),*) => {
        impl<$($name: QueryFilter),*> sealed::Sealed for ($($name,)*) {}
        impl<$($name: QueryFilter),*> QueryFilter for ($($name,)*) {
            type State = ($($name::State,)*);
            #[allow(unused_variables, clippy::unused_unit)]
            fn init_state(world: &World) -> Self::State {
                ($($name::init_state(world),)*)
            }
            #[allow(unused_variables, unused_mut)]
            fn resolve(state: &mut Self::State, world: &World) -> bool {
                let mut changed = false;
                $(changed |= $name::resolve(&mut state.$idx, world);)*
                changed
            }
            #[inline]
            #[allow(unused_variables)]
            fn matches(state: &Self::State, archetype: &Archetype) -> bool {
                true $(&& $name::matches(&state.$idx, archetype))*
            }
            #[allow(unused_variables)]
            fn mentions(type_id: core::any::TypeId) -> bool {
                false $(|| $name::mentions(type_id))*
            }
        }
    };
}

tuples_up_to_12!(impl_filter_tuple);
