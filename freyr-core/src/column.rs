//! Column descriptors and the byte layout of a chunk.

use core::alloc::Layout;
use core::any::TypeId;
use core::mem::MaybeUninit;

use crate::CHUNK_CAPACITY;
use crate::component::{ComponentId, ComponentInfo, DropFn};
use crate::entity::Entity;

/// One component column of an archetype: where it sits in the archetype's one-chunk layout
/// (a slab of `k` chunks scales every offset by `k`).
#[derive(Clone, Debug)]
pub(crate) struct Column {
    /// Read by the test-support invariant check only.
    #[cfg_attr(not(any(test, feature = "test-support")), allow(dead_code))]
    pub(crate) id: ComponentId,
    pub(crate) type_id: TypeId,
    pub(crate) name: &'static str,
    /// Size of one value; 0 for tags, which take no bytes.
    pub(crate) size: usize,
    /// Byte offset of the column in a one-chunk slab; a multiple of the type's alignment. In a
    /// slab of `k` chunks the column starts at `k * offset` (still a multiple of it).
    pub(crate) offset: usize,
    pub(crate) drop: Option<DropFn>,
}

/// Computes the columns and the one-chunk layout for a sorted component set.
///
/// An archetype's rows live in slabs (see [`ChunkList`](crate::chunk::ChunkList)); a slab of
/// `k` chunks is this layout scaled by `k`: one allocation, aligned for the most-aligned
/// column (and at least for `Entity`), column-major, the entity column followed by one column
/// per component, each `k * 512` rows long. Scaling keeps every column start aligned, since
/// `k * offset_i` is a multiple of `offset_i`'s alignment.
///
/// ```text
///  slab base (align = max(align_of::<Entity>(), align of every column))
///  |
///  v
///  +---------------------------+-----+---------------------------+-----+------------------+
///  | Entity x k*512 (8 B each) | pad | C0 x k*512 (size0 each)   | pad | C1 x k*512 ...   |
///  +---------------------------+-----+---------------------------+-----+------------------+
///  ^ 0                               ^ k*offset0 (% align0 == 0)       ^ k*offset1
///
///  chunk c of the slab = rows c*512 .. c*512+512 of every column
///  row r of chunk c, column i:  base + k*offset_i + (c*512 + r) * size_i
///  zero-sized columns: size 0, offset 0 (base is aligned for them too), no bytes
/// ```
pub(crate) fn chunk_layout<'a>(
    infos: impl Iterator<Item = &'a ComponentInfo>,
) -> (Box<[Column]>, Layout) {
    let mut align = core::mem::align_of::<Entity>();
    let mut end = core::mem::size_of::<Entity>() * CHUNK_CAPACITY;
    let mut columns = Vec::new();
    for info in infos {
        let layout = info.layout();
        align = align.max(layout.align());
        let offset = if layout.size() == 0 {
            0
        } else {
            let offset = end.next_multiple_of(layout.align());
            end = layout
                .size()
                .checked_mul(CHUNK_CAPACITY)
                .and_then(|bytes| bytes.checked_add(offset))
                .expect("freyr: chunk size overflows usize");
            offset
        };
        columns.push(Column {
            id: info.id(),
            type_id: info.type_id(),
            name: info.name(),
            size: layout.size(),
            offset,
            drop: info.drop_fn(),
        });
    }
    let layout = Layout::from_size_align(end, align).expect("freyr: chunk layout too large");
    (columns.into_boxed_slice(), layout)
}

/// Moves one value of `size` bytes from `src` to `dst` without calling `memcpy` for values of
/// 4 to 32 bytes: one fixed-size copy for the common sizes (4, 8, 12, 16), otherwise two per
/// size class, the second ending at the value's last byte (so 24 bytes are bytes 0..16 and
/// 8..24; the overlap is copied twice, harmlessly). The copies are plain moves on every x86-64
/// level, so the row moves of insert and remove need no wider vectors to run at full speed. Bytes are moved as `MaybeUninit`, so padding
/// (uninitialised) bytes are copied without being read as integers.
///
/// # Safety
/// `src` is valid for reading and `dst` for writing `size` bytes, and the ranges do not overlap.
#[inline(always)]
pub(crate) unsafe fn copy_value(src: *const u8, dst: *mut u8, size: usize) {
    /// Copies `N` bytes at `src + at` to `dst + at`.
    ///
    /// # Safety
    /// `at + N <= size` for `copy_value`'s `size`.
    #[inline(always)]
    unsafe fn fixed<const N: usize>(src: *const u8, dst: *mut u8, at: usize) {
        type Bytes<const N: usize> = MaybeUninit<[u8; N]>;
        // SAFETY: `at + N <= size` (caller), and `copy_value`'s caller guarantees both ranges
        // are valid for `size` bytes and do not overlap; unaligned `MaybeUninit` accesses
        // assume no alignment and no initialisation.
        unsafe {
            dst.add(at)
                .cast::<Bytes<N>>()
                .write_unaligned(src.add(at).cast::<Bytes<N>>().read_unaligned())
        }
    }
    // SAFETY: (all arms) each `fixed::<N>` call has `at + N <= size`: the first at 0 with
    // `N <= size`, the second at `size - N`; `size` bytes are valid at both pointers (caller
    // contract).
    unsafe {
        match size {
            0 => {}
            4 => fixed::<4>(src, dst, 0),
            8 => fixed::<8>(src, dst, 0),
            12 => fixed::<12>(src, dst, 0),
            16 => fixed::<16>(src, dst, 0),
            5..=7 => {
                fixed::<4>(src, dst, 0);
                fixed::<4>(src, dst, size - 4);
            }
            9..=15 => {
                fixed::<8>(src, dst, 0);
                fixed::<8>(src, dst, size - 8);
            }
            17..=32 => {
                fixed::<16>(src, dst, 0);
                fixed::<16>(src, dst, size - 16);
            }
            _ => core::ptr::copy_nonoverlapping(src, dst, size),
        }
    }
}

/// Calls `f(i)` for every `i` in `0..count`, in order. If a call panics, the remaining calls still
/// run while unwinding (a second panic aborts, as with any panic during unwinding) and the first
/// panic continues. This is how drop loops finish dropping everything exactly once.
pub(crate) fn for_each_finishing_on_panic(count: usize, mut f: impl FnMut(usize)) {
    struct Rest<'a, F: FnMut(usize)> {
        next: usize,
        count: usize,
        f: &'a mut F,
    }
    impl<F: FnMut(usize)> Drop for Rest<'_, F> {
        fn drop(&mut self) {
            // Runs with `next == count` on normal exit; while unwinding it finishes the rest.
            while self.next < self.count {
                let i = self.next;
                self.next += 1;
                (self.f)(i);
            }
        }
    }
    let mut rest = Rest {
        next: 0,
        count,
        f: &mut f,
    };
    while rest.next < rest.count {
        let i = rest.next;
        rest.next += 1;
        (rest.f)(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::component::Components;

    #[repr(align(64))]
    struct Wide(#[allow(dead_code)] u8);

    #[test]
    fn columns_are_aligned_and_tags_take_no_bytes() {
        let mut components = Components::default();
        let ids = [
            components.register::<u8>(),
            components.register::<()>(),
            components.register::<Wide>(),
        ];
        let (columns, layout) = chunk_layout(ids.iter().map(|&id| components.info(id)));
        assert_eq!(layout.align(), 64);
        assert_eq!(columns[0].offset, 8 * CHUNK_CAPACITY);
        assert_eq!(columns[1].size, 0);
        assert_eq!(columns[2].offset % 64, 0);
        assert_eq!(layout.size(), columns[2].offset + 64 * CHUNK_CAPACITY);
    }

    #[test]
    fn finishing_loop_runs_every_index_after_a_panic() {
        let mut seen = Vec::new();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for_each_finishing_on_panic(4, |i| {
                seen.push(i);
                if i == 1 {
                    panic!("boom");
                }
            })
        }));
        assert!(result.is_err());
        assert_eq!(seen, [0, 1, 2, 3]);
    }

    #[test]
    fn copy_value_moves_every_size() {
        for size in [0usize, 1, 3, 4, 5, 8, 9, 12, 16, 17, 24, 32, 33, 100] {
            let src: Vec<u8> = (0..size as u8).collect();
            let mut dst = vec![0u8; size];
            // SAFETY: both buffers hold `size` bytes and are distinct allocations.
            unsafe { copy_value(src.as_ptr(), dst.as_mut_ptr(), size) };
            assert_eq!(src, dst);
        }
    }
}
