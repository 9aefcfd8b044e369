//! The per-type functions that hash a column of one chunk, or one row of it, for the digest.

use core::hash::Hasher;

use freyr_core::{ChunkRef, Component, ComponentId};

use super::DigestHasher;
use crate::hash::{StableHash, StableHasher};

/// How a registered hashable type joins a digest: monomorphised for the type at registration.
#[derive(Clone, Copy)]
pub(crate) struct ColumnFns {
    /// Feeds the chunk's column of the type (its column stream) into the hasher.
    pub column: fn(ChunkRef<'_>, ComponentId, &mut DigestHasher),
    /// Feeds one row's part of the column stream into the hasher.
    pub row: fn(ChunkRef<'_>, ComponentId, usize, &mut DigestHasher),
}

impl ColumnFns {
    /// The functions for `T`.
    pub(crate) fn of<T: Component + StableHash>() -> ColumnFns {
        ColumnFns {
            column: column::<T>,
            row: row::<T>,
        }
    }
}

/// The values of `T` in the column, in row order.
fn values<T: Component>(chunk: ChunkRef<'_>, id: ComponentId) -> &[T] {
    chunk
        .column::<T>(id)
        .expect("freyr: the digest asked a chunk for a column its archetype lacks")
}

/// The column stream of `values`: their raw memory when `T` is plain (which, by the
/// `PlainBytes` contract, is the concatenation of their `StableHash` bytes), else one word per
/// value, the little-endian bytes of the FNV-1a 64 hash (`StableHasher`) of its `StableHash`.
fn feed<T: StableHash>(values: &[T], h: &mut DigestHasher) {
    if T::PLAIN_BYTES.get() {
        // SAFETY: `T::PLAIN_BYTES` says yes (only `unsafe` code can say so), so every byte of a
        // `T` is initialised and holds no pointer; `values` is a live, initialised slice, so its
        // `size_of_val(values)` bytes from its start are readable as `u8` for this borrow.
        let bytes = unsafe {
            core::slice::from_raw_parts(values.as_ptr().cast::<u8>(), size_of_val(values))
        };
        h.write(bytes);
    } else {
        for v in values {
            let mut fnv = StableHasher::new();
            v.stable_hash(&mut fnv);
            h.write_u64(fnv.finish());
        }
    }
}

fn column<T: Component + StableHash>(chunk: ChunkRef<'_>, id: ComponentId, h: &mut DigestHasher) {
    feed(values::<T>(chunk, id), h);
}

fn row<T: Component + StableHash>(
    chunk: ChunkRef<'_>,
    id: ComponentId,
    row: usize,
    h: &mut DigestHasher,
) {
    let values = values::<T>(chunk, id);
    feed(&values[row..=row], h);
}
