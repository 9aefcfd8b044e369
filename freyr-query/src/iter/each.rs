//! The synchronous loops behind `each`, `each_chunk` and `each_with`: archetype creation order,
//! then chunk, then row, on the calling thread.
//!
//! `each` walks the query's cached runs ([`QueryState::runs`]: per run of chunks sharing a slab,
//! the column base pointers, read once per layout of the world), so a call over many small
//! archetypes costs a few loads per archetype. `each_chunk` and `each_with` read the pointers
//! per chunk. Each row loop is then a plain pointer walk, in a function of its own that the
//! compiler inlines the callback into and vectorises, compiled twice and picked at run time
//! ([`RowPath`](crate::RowPath)).

use freyr_core::{Entity, World};

use crate::changed::TickTerm;
use crate::commands::EachContext;
use crate::events::buffer::TaskOutput;
use crate::fetch::QueryData;
use crate::filter::QueryFilter;
use crate::iter::rows::fold_rows;
use crate::row_path::row_loop;
use crate::state::{QueryState, RunPtrs, Runs};
use crate::view::ViewSet;

/// Stamps `tick` on the written columns of `runs` (the write access an unfiltered `each`
/// grants: one relaxed store per chunk and written column, before any row runs), then calls
/// `f` for every row of `runs`, in order.
///
/// # Safety
///
/// - `runs` come from [`QueryState::runs`] for the world's current layout, and the world is not
///   structurally modified until this returns (so every run's pointers address its `len` live
///   rows, and every written entry its archetype's tick storage);
/// - no in-flight work conflicts with `Q`'s access, and nothing else touches the written columns
///   until this returns (the caller holds the registry mutably).
#[inline]
pub unsafe fn each_row<Q, C>(runs: Runs<'_, Q::Ptrs>, tick: u64, f: &mut C)
where
    Q: QueryData,
    C: for<'w> FnMut(Entity, Q::Item<'w>),
{
    for entry in runs.written {
        // SAFETY: the entry was taken under the world's current layout (caller contract), so
        // its archetype is alive and was not mutably borrowed since.
        unsafe { entry.stamp(tick) };
    }
    // SAFETY: the caller contract, and `rows` is the runs' row count.
    unsafe { all_runs::<Q, C>(runs.runs, runs.rows, f) };
}

row_loop! {
    /// The row loops of all of `each`'s runs, in one out-of-line function that is entered once
    /// per call (so a query over many small archetypes picks its copy once, not once per
    /// archetype). As its own function, `f` is a `noalias` argument, so the optimiser hoists the
    /// closure's captures out of the loops and vectorises the row loop (inlined into the
    /// caller it did not, and `pos += vel * dt` over `[f32; 3]` columns ran scalar). Two
    /// copies, picked at run time ([`RowPath`](crate::RowPath)), `rows` (the runs' row count)
    /// the work one call measures.
    ///
    /// # Safety
    ///
    /// `runs` come from [`QueryState::runs`] for a world whose layout is unchanged since, no
    /// other reference to the rows' written columns exists (and nothing writes the read ones)
    /// until it returns.
    unsafe fn all_runs / all_runs_baseline / all_runs_avx2 <Q, C>(
        runs: &[RunPtrs<Q::Ptrs>],
        rows: usize,
        f: &mut C,
    ) where {
        Q: QueryData,
        C: for<'w> FnMut(Entity, Q::Item<'w>),
    } units(rows) {
        let _ = rows;
        for run in runs {
            // SAFETY: the run's entity array holds `len` initialised entities, not written
            // while a query runs (caller contract).
            let entities = unsafe { <Entity as QueryData>::slice(run.entities, run.len) };
            // SAFETY: `ptrs` are the run's columns, holding `len` rows like `entities` from row
            // 0; access is exclusive per the caller contract.
            unsafe {
                fold_rows::<Q, ()>(run.ptrs, 0, entities, (), |(), entity, item| f(entity, item))
            }
        }
    }
}

/// Calls `f` for every row of the matched chunks that pass `terms`, in (archetype, chunk, row)
/// order, stamping `tick` on the written columns of each visited chunk: `each` with a change
/// filter (per chunk rather than per slab run, since a run may mix passing and failing chunks).
///
/// # Safety
///
/// As for [`each_row`] (the world is the one `state` was refreshed against).
#[inline]
pub unsafe fn each_row_selected<Q, F, C>(
    world: &World,
    state: &QueryState<Q, F>,
    (terms, tick): (&[TickTerm], u64),
    f: &mut C,
) where
    Q: QueryData,
    F: QueryFilter,
    C: for<'w> FnMut(Entity, Q::Item<'w>),
{
    state.for_each_selected_chunk(world, (terms, tick), |matched, _, chunk| {
        let ptrs = Q::ptrs(matched.columns, chunk);
        // SAFETY: as in `each_row`: `ptrs` and the entity array are the chunk's, access is
        // exclusive per the caller contract.
        unsafe { rows::<Q, C>(ptrs, chunk.entities(), f) };
    });
}

row_loop! {
    /// The row loop of one chunk (of a filtered `each`, which selects chunks one by one), kept
    /// out of line on purpose: as its own function, `f` and the entity slice are `noalias`
    /// arguments, so the optimiser can hoist the closure's captures out of the loop and
    /// vectorise it across rows (see [`all_runs`]). Two copies, picked at run time
    /// ([`RowPath`](crate::RowPath)).
    ///
    /// # Safety
    ///
    /// `ptrs` come from [`QueryData::ptrs`] for a live chunk or run with `entities.len()` rows
    /// that is not structurally modified during the call, and no other reference to the rows'
    /// written columns exists (and nothing writes the read ones) until it returns.
    unsafe fn rows / rows_baseline / rows_avx2 <Q, C>(
        ptrs: Q::Ptrs,
        entities: &[Entity],
        f: &mut C,
    ) where {
        Q: QueryData,
        C: for<'w> FnMut(Entity, Q::Item<'w>),
    } units(entities.len()) {
        // SAFETY: the rows are the chunk's (or run's) `entities.len()` rows from row 0;
        // access is exclusive per the caller contract.
        unsafe { fold_rows::<Q, ()>(ptrs, 0, entities, (), |(), entity, item| f(entity, item)) }
    }
}

/// Calls `f` once per matched chunk with its entities and columns as slices.
///
/// # Safety
///
/// As for [`each_row`].
#[inline]
pub unsafe fn each_chunk<Q, F, C>(
    world: &World,
    state: &QueryState<Q, F>,
    (terms, tick): (&[TickTerm], u64),
    f: &mut C,
) where
    Q: QueryData,
    F: QueryFilter,
    C: for<'w> FnMut(&'w [Entity], Q::Slice<'w>),
{
    state.for_each_selected_chunk(world, (terms, tick), |matched, _, chunk| {
        let ptrs = Q::ptrs(matched.columns, chunk);
        // SAFETY: all `len` rows are initialised; the slices do not outlive the call; access
        // is exclusive per the caller contract.
        unsafe { call_chunk::<Q, C>(ptrs, chunk.entities(), f) };
    });
}

row_loop! {
    /// One `each_chunk` call, out of line for the same reason as [`rows`]: compiled on its own,
    /// the user's slice loop is vectorised; inlined into the chunk loop it was not (`pos += vel *
    /// dt` over `[f32; 3]` slices ran at half the speed of the same loop over two `Vec`s). Two
    /// copies, picked at run time ([`RowPath`](crate::RowPath)).
    ///
    /// # Safety
    ///
    /// As for [`rows`].
    unsafe fn call_chunk / call_chunk_baseline / call_chunk_avx2 <Q, C>(
        ptrs: Q::Ptrs,
        entities: &[Entity],
        f: &mut C,
    ) where {
        Q: QueryData,
        C: for<'w> FnMut(&'w [Entity], Q::Slice<'w>),
    } units(entities.len()) {
        // SAFETY: `entities.len()` rows are initialised; the slices do not outlive the call;
        // access is exclusive per the caller contract.
        f(entities, unsafe { Q::slice(ptrs, entities.len()) });
    }
}

/// Calls `f` for every matched row with a [`EachContext`] holding `views` and one command buffer.
///
/// # Safety
///
/// As for [`each_row`], and `views` came from `V::fetch` on `world` and the registry's resources,
/// with `V`'s access checked too.
#[inline]
pub unsafe fn each_row_with<Q, F, V, C>(
    world: &World,
    state: &QueryState<Q, F>,
    views: V::Fetch,
    (terms, tick): (&[TickTerm], u64),
    commands: &mut TaskOutput,
    f: &mut C,
) where
    Q: QueryData,
    F: QueryFilter,
    V: ViewSet,
    C: for<'w> FnMut(Entity, Q::Item<'w>, &mut EachContext<'w, V>),
{
    // SAFETY: caller contract.
    let views = unsafe { V::item(views) };
    let mut ctx = EachContext::new(views, commands);
    state.for_each_selected_chunk(world, (terms, tick), |matched, _, chunk| {
        let ptrs = Q::ptrs(matched.columns, chunk);
        // SAFETY: as in `each_row`: `ptrs` and the entity array are the chunk's, access is
        // exclusive per the caller contract.
        unsafe { rows_with::<Q, V, C>(ptrs, chunk.entities(), f, &mut ctx) };
    });
}

row_loop! {
    /// The row loop of one chunk of `each_with`, out of line and in two copies like [`rows`].
    ///
    /// # Safety
    ///
    /// As for [`rows`].
    unsafe fn rows_with / rows_with_baseline / rows_with_avx2 <Q, V, C>(
        ptrs: Q::Ptrs,
        entities: &[Entity],
        f: &mut C,
        ctx: &mut EachContext<'_, V>,
    ) where {
        Q: QueryData,
        V: ViewSet,
        C: for<'w> FnMut(Entity, Q::Item<'w>, &mut EachContext<'w, V>),
    } units(entities.len()) {
        // SAFETY: as in `rows`.
        unsafe {
            fold_rows::<Q, ()>(ptrs, 0, entities, (), |(), entity, item| f(entity, item, ctx))
        }
    }
}
