//! The row walk: the one loop over a chunk's (or a run's) rows that every per-row query form
//! runs (`each`, `each_with`, and the `each_async`, `each_async_with` and `each_async_reduce`
//! tasks), each inside its own out-of-line, twice-compiled copy ([`row_loop!`]).
//!
//! [`row_loop!`]: crate::row_path

use freyr_core::Entity;

use crate::fetch::QueryData;

/// Folds `fold` over rows `first..first + entities.len()` of a chunk or run, in row order: row
/// `first + i` has entity `entities[i]` and item `Q::item(ptrs, first + i)`. Inlined into each
/// caller (a `row_loop!` copy), where the callback inlines too and the loop vectorises; with a
/// `()` accumulator it is a plain for-each.
///
/// # Safety
///
/// `ptrs` come from [`QueryData::ptrs`] for a live chunk or run that is not structurally
/// modified during the call; rows `first..first + entities.len()` are initialised rows of it
/// whose entities are `entities`; each row is fetched once, and no other reference to those
/// rows' written columns exists (and nothing writes their read ones) for `'w`. The items do
/// not outlive the call when `fold` calls a callback that is higher-ranked over `'w` (as every
/// query form's callback is); `'w` is named only so that a `Context<'w, V>` of the caller can
/// be handed to that callback beside them.
#[inline(always)]
pub unsafe fn fold_rows<'w, Q, A>(
    ptrs: Q::Ptrs,
    first: usize,
    entities: &[Entity],
    init: A,
    mut fold: impl FnMut(A, Entity, Q::Item<'w>) -> A,
) -> A
where
    Q: QueryData,
{
    let mut acc = init;
    for (i, &entity) in entities.iter().enumerate() {
        // SAFETY: row `first + i` is an initialised row of the chunk, fetched once; access for
        // `'w` per the caller contract.
        acc = fold(acc, entity, unsafe { Q::item(ptrs, first + i) });
    }
    acc
}
