//! What a query fetches: [`QueryData`] for `Entity`, `&T`, `&mut T`, `Option<&T>`,
//! `Option<&mut T>`, and tuples of these up to 12.
//!
//! Fetching works in three steps so the hot loop is a plain pointer walk:
//!
//! 1. once per query: resolve component ids into a `State`;
//! 2. once per matched archetype: find the column indices (`Columns`);
//! 3. once per chunk: read the column base pointers (`Ptrs`); each row is then `base.add(row)`.

use core::ptr::NonNull;

use freyr_core::{Archetype, ChunkRef, Component, ComponentId, Entity, World};

use crate::access::{Access, AccessKind, TypeAccess};
use crate::tuples::tuples_up_to_12;

/// The base pointer of one column of one chunk, as handed to tasks.
///
/// It is only dereferenced for rows `< len` of its chunk, while the launch that holds it is
/// registered with the registry and its access has been checked against all other work.
#[repr(transparent)]
pub struct ColumnPtr<T>(NonNull<T>);

impl<T> Clone for ColumnPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ColumnPtr<T> {}

impl<T> ColumnPtr<T> {
    #[inline(always)]
    fn new(ptr: NonNull<u8>) -> Self {
        ColumnPtr(ptr.cast())
    }

    #[inline(always)]
    fn row(self, row: usize) -> NonNull<T> {
        // SAFETY: callers of `QueryData::item`/`slice` guarantee `row` is within the chunk, so the
        // offset stays inside the column's allocation (or is zero bytes for a ZST).
        unsafe { self.0.add(row) }
    }
}

// SAFETY: a `ColumnPtr<T>` only gives out `&T` / `&mut T` under the access rules checked by the
// registry (no two launches or threads touch the same column of the same chunk when one of them
// writes it). Sending `&mut T` needs `T: Send`, sharing `&T` needs `T: Sync`; components are both.
unsafe impl<T: Send + Sync> Send for ColumnPtr<T> {}
// SAFETY: as above; the pointer itself is only read.
unsafe impl<T: Send + Sync> Sync for ColumnPtr<T> {}

/// A type that can be fetched by a query: `Entity`, `&T`, `&mut T`, `Option<&T>`,
/// `Option<&mut T>`, `()` and tuples of these up to 12 elements.
///
/// The trait is sealed: these are its only implementations (it is public so that bounds can name
/// it); see [`QueryFilter`](crate::QueryFilter) for what an outside implementation runs into.
///
/// # Safety
///
/// An implementation must report in [`type_access`](QueryData::type_access) and
/// [`component_access`](QueryData::component_access) every component it reads (as a read) and
/// writes (as a write), must only match archetypes that contain every column it dereferences
/// without an `Option`, and `item`/`slice` must only create references into the columns it
/// reported, with `&mut` only for written ones. `init_state`, `resolve`, `matches` and
/// `columns` must read only the world's layout (component ids, archetypes), never a component
/// value: the registry calls them while parallel tasks write columns.
pub unsafe trait QueryData: sealed::Sealed + 'static {
    /// What the callback receives for one row, e.g. `(&'w mut Position, &'w Velocity)`.
    type Item<'w>;
    /// What a chunk callback receives for one chunk, e.g. `(&'w mut [Position], &'w [Velocity])`.
    type Slice<'w>;
    /// Resolved component ids.
    type State: Send + Sync + 'static;
    /// Column indices inside one matched archetype.
    type Columns: Copy + Send + Sync + 'static;
    /// Column base pointers of one chunk.
    type Ptrs: Copy + Send + Sync + 'static;

    /// Records the types accessed, for the conflict check that runs before anything else.
    fn type_access(out: &mut TypeAccess);
    /// Resolves component ids against `world` (unregistered types stay unresolved).
    fn init_state(world: &World) -> Self::State;
    /// Resolves ids that were unregistered before; returns whether anything changed.
    fn resolve(state: &mut Self::State, world: &World) -> bool;
    /// Records the resolved component ids accessed.
    fn component_access(state: &Self::State, access: &mut Access);
    /// Whether `archetype` has every component this fetch requires.
    fn matches(state: &Self::State, archetype: &Archetype) -> bool;
    /// Column indices in a matched `archetype`.
    fn columns(state: &Self::State, archetype: &Archetype) -> Self::Columns;
    /// Column base pointers of `chunk` (of the archetype `columns` was computed for).
    fn ptrs(columns: Self::Columns, chunk: ChunkRef<'_>) -> Self::Ptrs;
    /// The item of row `row`.
    ///
    /// # Safety
    ///
    /// - `ptrs` comes from [`ptrs`](QueryData::ptrs) for a chunk that is still alive and has not
    ///   been structurally modified since, and `row < chunk.len()`;
    /// - for the whole of `'w`, no other reference to the written columns' row `row` exists and
    ///   nothing writes the read columns' row `row`;
    /// - each row is fetched at most once while a returned `&mut` is alive.
    unsafe fn item<'w>(ptrs: Self::Ptrs, row: usize) -> Self::Item<'w>;
    /// The columns of the whole chunk as slices.
    ///
    /// # Safety
    ///
    /// As for [`item`](QueryData::item), for all rows `0..len` where `len == chunk.len()`.
    unsafe fn slice<'w>(ptrs: Self::Ptrs, len: usize) -> Self::Slice<'w>;
}

impl sealed::Sealed for Entity {}

// SAFETY: `Entity` reads only the chunk's entity array, which no launch writes; it matches every
// archetype and reports no component access.
unsafe impl QueryData for Entity {
    type Item<'w> = Entity;
    type Slice<'w> = &'w [Entity];
    type State = ();
    type Columns = ();
    type Ptrs = ColumnPtr<Entity>;

    fn type_access(_out: &mut TypeAccess) {}
    fn init_state(_world: &World) -> Self::State {}
    fn resolve(_state: &mut Self::State, _world: &World) -> bool {
        false
    }
    fn component_access(_state: &Self::State, _access: &mut Access) {}
    #[inline]
    fn matches(_state: &Self::State, _archetype: &Archetype) -> bool {
        true
    }
    #[inline]
    fn columns(_state: &Self::State, _archetype: &Archetype) -> Self::Columns {}
    #[inline]
    fn ptrs(_columns: Self::Columns, chunk: ChunkRef<'_>) -> Self::Ptrs {
        ColumnPtr(NonNull::from(chunk.entities()).cast())
    }
    #[inline(always)]
    unsafe fn item<'w>(ptrs: Self::Ptrs, row: usize) -> Self::Item<'w> {
        // SAFETY: `row` is in bounds (caller contract); entity arrays are never written while a
        // query runs.
        unsafe { *ptrs.row(row).as_ptr() }
    }
    #[inline(always)]
    unsafe fn slice<'w>(ptrs: Self::Ptrs, len: usize) -> Self::Slice<'w> {
        // SAFETY: the chunk holds `len` initialised entities starting at `ptrs`; nothing writes
        // them while a query runs.
        unsafe { core::slice::from_raw_parts(ptrs.0.as_ptr(), len) }
    }
}

fn resolve_one<T: Component>(state: &mut Option<ComponentId>, world: &World) -> bool {
    if state.is_none() {
        *state = world.component_id::<T>();
        state.is_some()
    } else {
        false
    }
}

fn column_of(state: &Option<ComponentId>, archetype: &Archetype) -> Option<usize> {
    state.and_then(|id| archetype.column_index(id))
}

fn required_column(state: &Option<ComponentId>, archetype: &Archetype) -> usize {
    column_of(state, archetype).expect("freyr-query: matched archetype lacks a required column")
}

/// The two [`QueryData`] impls of one component access: `&T` (or `&mut T` with `[mut]`), which
/// matches only archetypes with `T`, and its `Option`, which matches every archetype. `$kind` and
/// `$add` name the access reported, `$as_ref` and `$slice` make the references handed out.
macro_rules! impl_component_fetch {
    ($kind:ident, $add:ident, [$($mut:tt)?], $as_ref:ident, $slice:path) => {
        impl<T: Component> sealed::Sealed for &'static $($mut)? T {}
        impl<T: Component> sealed::Sealed for Option<&'static $($mut)? T> {}

        // SAFETY: reports `$kind` of `T`, matches only archetypes with `T`, and hands out
        // references to `T` of that kind only (`&mut` only for a write, to a row the caller
        // guarantees is not otherwise referenced).
        unsafe impl<T: Component> QueryData for &'static $($mut)? T {
            type Item<'w> = &'w $($mut)? T;
            type Slice<'w> = &'w $($mut)? [T];
            type State = Option<ComponentId>;
            type Columns = usize;
            type Ptrs = ColumnPtr<T>;

            fn type_access(out: &mut TypeAccess) {
                out.add::<T>(AccessKind::$kind);
            }
            fn init_state(world: &World) -> Self::State {
                world.component_id::<T>()
            }
            fn resolve(state: &mut Self::State, world: &World) -> bool {
                resolve_one::<T>(state, world)
            }
            fn component_access(state: &Self::State, access: &mut Access) {
                if let Some(id) = *state {
                    access.$add(id);
                }
            }
            #[inline]
            fn matches(state: &Self::State, archetype: &Archetype) -> bool {
                state.is_some_and(|id| archetype.has(id))
            }
            #[inline]
            fn columns(state: &Self::State, archetype: &Archetype) -> Self::Columns {
                required_column(state, archetype)
            }
            #[inline]
            fn ptrs(columns: Self::Columns, chunk: ChunkRef<'_>) -> Self::Ptrs {
                ColumnPtr::new(chunk.column_ptr(columns))
            }
            #[inline(always)]
            unsafe fn item<'w>(ptrs: Self::Ptrs, row: usize) -> Self::Item<'w> {
                // SAFETY: in bounds, and not written concurrently for a read, exclusively ours
                // for `'w` for a write (caller contract); the pointer has the chunk allocation's
                // provenance, so writing through it is allowed.
                unsafe { ptrs.row(row).$as_ref() }
            }
            #[inline(always)]
            unsafe fn slice<'w>(ptrs: Self::Ptrs, len: usize) -> Self::Slice<'w> {
                // SAFETY: `len` initialised values start at `ptrs`, with the access of `item`.
                unsafe { $slice(ptrs.0.as_ptr(), len) }
            }
        }

        // SAFETY: reports `$kind` of `T`, matches every archetype, and dereferences `T` only
        // where the column exists, as the impl above does.
        unsafe impl<T: Component> QueryData for Option<&'static $($mut)? T> {
            type Item<'w> = Option<&'w $($mut)? T>;
            type Slice<'w> = Option<&'w $($mut)? [T]>;
            type State = Option<ComponentId>;
            type Columns = Option<usize>;
            type Ptrs = Option<ColumnPtr<T>>;

            fn type_access(out: &mut TypeAccess) {
                out.add::<T>(AccessKind::$kind);
            }
            fn init_state(world: &World) -> Self::State {
                world.component_id::<T>()
            }
            fn resolve(state: &mut Self::State, world: &World) -> bool {
                resolve_one::<T>(state, world)
            }
            fn component_access(state: &Self::State, access: &mut Access) {
                if let Some(id) = *state {
                    access.$add(id);
                }
            }
            #[inline]
            fn matches(_state: &Self::State, _archetype: &Archetype) -> bool {
                true
            }
            #[inline]
            fn columns(state: &Self::State, archetype: &Archetype) -> Self::Columns {
                column_of(state, archetype)
            }
            #[inline]
            fn ptrs(columns: Self::Columns, chunk: ChunkRef<'_>) -> Self::Ptrs {
                columns.map(|c| ColumnPtr::new(chunk.column_ptr(c)))
            }
            #[inline(always)]
            unsafe fn item<'w>(ptrs: Self::Ptrs, row: usize) -> Self::Item<'w> {
                // SAFETY: as for the plain reference, when the column exists.
                ptrs.map(|p| unsafe { p.row(row).$as_ref() })
            }
            #[inline(always)]
            unsafe fn slice<'w>(ptrs: Self::Ptrs, len: usize) -> Self::Slice<'w> {
                // SAFETY: as for the plain reference, when the column exists.
                ptrs.map(|p| unsafe { $slice(p.0.as_ptr(), len) })
            }
        }
    };
}

impl_component_fetch!(Read, add_read, [], as_ref, core::slice::from_raw_parts);
impl_component_fetch!(Write, add_write, [mut], as_mut, core::slice::from_raw_parts_mut);

macro_rules! impl_query_data_tuple {
    ($($name:ident $idx:tt),*) => {
        impl<$($name: QueryData),*> sealed::Sealed for ($($name,)*) {}

        // SAFETY: a tuple reports, matches and fetches exactly what its elements do; the conflict
        // check on the combined `type_access` rules out two elements aliasing one column mutably.
        unsafe impl<$($name: QueryData),*> QueryData for ($($name,)*) {
            type Item<'w> = ($($name::Item<'w>,)*);
            type Slice<'w> = ($($name::Slice<'w>,)*);
            type State = ($($name::State,)*);
            type Columns = ($($name::Columns,)*);
            type Ptrs = ($($name::Ptrs,)*);

            #[allow(unused_variables)]
            fn type_access(out: &mut TypeAccess) {
                $($name::type_access(out);)*
            }
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
            #[allow(unused_variables)]
            fn component_access(state: &Self::State, access: &mut Access) {
                $($name::component_access(&state.$idx, access);)*
            }
            #[inline]
            #[allow(unused_variables)]
            fn matches(state: &Self::State, archetype: &Archetype) -> bool {
                true $(&& $name::matches(&state.$idx, archetype))*
            }
            #[inline]
            #[allow(unused_variables, clippy::unused_unit)]
            fn columns(state: &Self::State, archetype: &Archetype) -> Self::Columns {
                ($($name::columns(&state.$idx, archetype),)*)
            }
            #[inline]
            #[allow(unused_variables, clippy::unused_unit)]
            fn ptrs(columns: Self::Columns, chunk: ChunkRef<'_>) -> Self::Ptrs {
                ($($name::ptrs(columns.$idx, chunk),)*)
            }
            #[inline(always)]
            #[allow(unused_variables, unused_unsafe, clippy::unused_unit)]
            unsafe fn item<'w>(ptrs: Self::Ptrs, row: usize) -> Self::Item<'w> {
                // SAFETY: forwarded caller contract; elements touch distinct columns or only read.
                unsafe { ($($name::item(ptrs.$idx, row),)*) }
            }
            #[inline(always)]
            #[allow(unused_variables, unused_unsafe, clippy::unused_unit)]
            unsafe fn slice<'w>(ptrs: Self::Ptrs, len: usize) -> Self::Slice<'w> {
                // SAFETY: forwarded caller contract; elements touch distinct columns or only read.
                unsafe { ($($name::slice(ptrs.$idx, len),)*) }
            }
        }
    };
}

tuples_up_to_12!(impl_query_data_tuple);

mod sealed {
    /// Keeps [`QueryData`](super::QueryData) to the implementations in this file.
    #[allow(
        unnameable_types,
        reason = "sealed on purpose: other crates use the trait, only this crate implements it"
    )]
    pub trait Sealed {}
}

/// Marker used by docs and tests: the item type a query `Q` yields.
pub type QueryItem<'w, Q> = <Q as QueryData>::Item<'w>;
