//! The synchronous loops behind `each`, `each_chunk` and `each_with`: archetype creation order,
//! then chunk, then row, on the calling thread.
//!
//! Per chunk (for `each`, per run of chunks sharing a slab) the column base pointers are read
//! once; the row loop is then a plain pointer walk, in a function of its own, that the compiler
//! inlines the callback into and vectorises.

use freyr_core::{CommandBuffer, Entity, World};

use crate::commands::Context;
use crate::fetch::QueryData;
use crate::filter::QueryFilter;
use crate::state::QueryState;
use crate::view::ViewSet;

/// Calls `f` for every matched row.
///
/// # Safety
///
/// - `state` was updated against `world` (its matched archetypes exist in `world`);
/// - no in-flight work conflicts with `Q`'s access, and nothing else touches the written columns
///   until this returns (the caller holds the registry mutably).
#[inline]
pub(crate) unsafe fn each_row<Q, F, C>(world: &World, state: &QueryState<Q, F>, f: &mut C)
where
    Q: QueryData,
    F: QueryFilter,
    C: for<'w> FnMut(Entity, Q::Item<'w>),
{
    for matched in state.matched() {
        let archetype = world.archetype(matched.id);
        // Runs of chunks that share a slab are contiguous per column: one row loop per run, in
        // the same (chunk, row) order as chunk by chunk.
        for run in archetype.runs() {
            let ptrs = Q::ptrs(matched.columns, run);
            // SAFETY: `ptrs` are the run's columns and `entities` its entity array, so they hold
            // `entities.len()` rows; access is exclusive per the caller contract.
            unsafe { rows::<Q, C>(ptrs, run.entities(), f) };
        }
    }
}

/// The row loop of one run of chunks, kept out of line on purpose: as its own function, `f` and the
/// entity slice are `noalias` arguments, so the optimiser can hoist the closure's captures out of
/// the loop and vectorise it across rows (inlined into the archetype/chunk loops it did not, and
/// `pos += vel * dt` over `[f32; 3]` columns ran scalar). One call per run (up to a slab,
/// 256 chunks) costs nothing.
///
/// # Safety
///
/// `ptrs` come from [`QueryData::ptrs`] for a live chunk or run with `entities.len()` rows that
/// is not structurally modified during the call, and no other reference to the rows' written columns
/// exists (and nothing writes the read ones) until it returns.
#[inline(never)]
unsafe fn rows<Q, C>(ptrs: Q::Ptrs, entities: &[Entity], f: &mut C)
where
    Q: QueryData,
    C: for<'w> FnMut(Entity, Q::Item<'w>),
{
    for (row, &entity) in entities.iter().enumerate() {
        // SAFETY: `row < entities.len()` = the chunk's length; each row is fetched once and its
        // items do not outlive the call (`f` is higher-ranked over `'w`); access is exclusive per
        // the caller contract.
        f(entity, unsafe { Q::item(ptrs, row) });
    }
}

/// Calls `f` once per matched chunk with its entities and columns as slices.
///
/// # Safety
///
/// As for [`each_row`].
#[inline]
pub(crate) unsafe fn each_chunk<Q, F, C>(world: &World, state: &QueryState<Q, F>, f: &mut C)
where
    Q: QueryData,
    F: QueryFilter,
    C: for<'w> FnMut(&'w [Entity], Q::Slice<'w>),
{
    for matched in state.matched() {
        let archetype = world.archetype(matched.id);
        for chunk in archetype.chunks() {
            let ptrs = Q::ptrs(matched.columns, chunk);
            // SAFETY: all `len` rows are initialised; the slices do not outlive the call; access
            // is exclusive per the caller contract.
            unsafe { call_chunk::<Q, C>(ptrs, chunk.entities(), f) };
        }
    }
}

/// One `each_chunk` call, out of line for the same reason as [`rows`]: compiled on its own, the
/// user's slice loop is vectorised; inlined into the chunk loop it was not (`pos += vel * dt`
/// over `[f32; 3]` slices ran at half the speed of the same loop over two `Vec`s).
///
/// # Safety
///
/// As for [`rows`].
#[inline(never)]
unsafe fn call_chunk<Q, C>(ptrs: Q::Ptrs, entities: &[Entity], f: &mut C)
where
    Q: QueryData,
    C: for<'w> FnMut(&'w [Entity], Q::Slice<'w>),
{
    // SAFETY: `entities.len()` rows are initialised; the slices do not outlive the call; access
    // is exclusive per the caller contract.
    f(entities, unsafe { Q::slice(ptrs, entities.len()) });
}

/// Calls `f` for every matched row with a [`Context`] holding `views` and one command buffer.
///
/// # Safety
///
/// As for [`each_row`], and `views` came from `V::fetch` on `world` and the registry's resources,
/// with `V`'s access checked too.
#[inline]
pub(crate) unsafe fn each_row_with<Q, F, V, C>(
    world: &World,
    state: &QueryState<Q, F>,
    views: V::Fetch,
    commands: &mut CommandBuffer,
    f: &mut C,
) where
    Q: QueryData,
    F: QueryFilter,
    V: ViewSet,
    C: for<'w> FnMut(Entity, Q::Item<'w>, &mut Context<'w, V>),
{
    // SAFETY: caller contract.
    let views = unsafe { V::item(views) };
    let mut ctx = Context::new(views, commands);
    for matched in state.matched() {
        let archetype = world.archetype(matched.id);
        for chunk in archetype.chunks() {
            let ptrs = Q::ptrs(matched.columns, chunk);
            for (row, &entity) in chunk.entities().iter().enumerate() {
                // SAFETY: as in `each_row`.
                f(entity, unsafe { Q::item(ptrs, row) }, &mut ctx);
            }
        }
    }
}
