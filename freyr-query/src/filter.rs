//! Archetype filters: [`With`], [`Without`] and tuples of filters (all must hold).
//!
//! Filters decide which archetypes a query visits; they fetch nothing and access no data, so they
//! never conflict with anything.

use core::marker::PhantomData;

use freyr_core::{Archetype, Component, ComponentId, World};

/// A condition on an archetype's component set.
///
/// Implemented for [`With<T>`], [`Without<T>`], `()` (no condition) and tuples of filters up to
/// 12 (every element must hold).
pub trait QueryFilter: 'static {
    /// Resolved component ids.
    type State: Send + Sync + 'static;
    /// Resolves component ids against `world` (unregistered types stay unresolved).
    fn init_state(world: &World) -> Self::State;
    /// Resolves ids that were unregistered before; returns whether anything changed.
    fn resolve(state: &mut Self::State, world: &World) -> bool;
    /// Whether `archetype` passes.
    fn matches(state: &Self::State, archetype: &Archetype) -> bool;
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

impl<T: Component> QueryFilter for With<T> {
    type State = Option<ComponentId>;
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

impl<T: Component> QueryFilter for Without<T> {
    type State = Option<ComponentId>;
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

macro_rules! impl_filter_tuple {
    ($($name:ident $idx:tt),*) => {
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
        }
    };
}

impl_filter_tuple!();
impl_filter_tuple!(A 0);
impl_filter_tuple!(A 0, B 1);
impl_filter_tuple!(A 0, B 1, C 2);
impl_filter_tuple!(A 0, B 1, C 2, D 3);
impl_filter_tuple!(A 0, B 1, C 2, D 3, E 4);
impl_filter_tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
impl_filter_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
impl_filter_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
impl_filter_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
impl_filter_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
impl_filter_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
impl_filter_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
