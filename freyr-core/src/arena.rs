//! The arena a [`CommandBuffer`](crate::CommandBuffer) records its bundles into: values of any
//! type stored back to back in one allocation per buffer, instead of one box per command.

use core::alloc::Layout;
use core::mem::size_of;
use core::ptr::NonNull;

/// Smallest capacity the arena allocates, in bytes: a buffer that records a few small bundles
/// allocates once.
const MIN_CAPACITY: usize = 1024;

/// Values of any type stored back to back, each at an offset aligned for it, in one allocation
/// that grows by doubling and keeps its capacity when cleared, so a buffer reused tick after
/// tick stops allocating.
///
/// ```text
///  base: aligned for `align`, the largest alignment of any value stored so far
///  |
///  v
///  +---------+-----+--------------+----------+------------------+
///  | value 0 | pad | value 1      | value 2  |      free        |
///  +---------+-----+--------------+----------+------------------+
///  ^ 0             ^ offset 1 (a multiple of   ^ len              ^ cap
///                    value 1's alignment)
/// ```
///
/// The arena does not know which values it holds: [`push`](Arena::push) hands out an offset,
/// and the owner remembers each value's offset and type and moves it out with
/// [`take`](Arena::take) (or drops it with [`drop_at`](Arena::drop_at)) exactly once before
/// [`clear`](Arena::clear). The arena never drops values; one it still holds when cleared or
/// dropped is leaked. Zero-sized values take no bytes (their offset is never read).
pub(crate) struct Arena {
    /// The allocation (dangling while `cap == 0`).
    base: NonNull<u8>,
    /// Bytes allocated.
    cap: usize,
    /// Bytes in use: every value lies below it.
    len: usize,
    /// Alignment of the allocation, at least that of every value stored.
    align: usize,
}

// SAFETY: the arena owns its allocation exclusively; the values it holds are bundles, which are
// `Send + Sync` (`push` requires it), so moving or sharing the arena across threads is as safe
// as for a `Vec` of those values. Shared access only reads (`&self` hands out pointers that the
// owner uses under its own exclusive borrow).
unsafe impl Send for Arena {}
// SAFETY: as above.
unsafe impl Sync for Arena {}

impl Arena {
    /// An empty arena; allocates nothing.
    pub(crate) const fn new() -> Arena {
        Arena {
            base: NonNull::dangling(),
            cap: 0,
            len: 0,
            align: 1,
        }
    }

    /// Bytes in use.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Moves `value` into the arena and returns its offset (0 for a zero-sized value, which
    /// takes no bytes).
    ///
    /// # Panics
    /// When the arena would exceed `isize::MAX` bytes (before `value` is stored; it is dropped).
    #[inline]
    pub(crate) fn push<T: Send + Sync>(&mut self, value: T) -> usize {
        if size_of::<T>() == 0 {
            core::mem::forget(value);
            return 0;
        }
        let offset = self.reserve_value(Layout::new::<T>());
        // SAFETY: `reserve_value` made `offset..offset + size_of::<T>()` lie in the allocation,
        // which is aligned for `align >= align_of::<T>()`, and `offset` a multiple of
        // `align_of::<T>()`: the slot is valid and aligned for a `T`. It is past every stored
        // value, so writing does not overwrite one.
        unsafe { self.base.as_ptr().add(offset).cast::<T>().write(value) };
        offset
    }

    /// Moves the `T` stored at `offset` out of the arena.
    ///
    /// # Safety
    /// A `T` was pushed at `offset` since the last `clear` and has not been taken or dropped;
    /// after this call it counts as moved out.
    #[inline]
    pub(crate) unsafe fn take<T>(&self, offset: usize) -> T {
        if size_of::<T>() == 0 {
            // SAFETY: a zero-sized read needs only an aligned, non-null pointer; the value it
            // stands for was pushed (and forgotten) and is moved out once (caller contract).
            return unsafe { NonNull::<T>::dangling().as_ptr().read() };
        }
        // SAFETY: the caller guarantees a live `T` at `offset`, which `push` placed inside the
        // allocation at an offset aligned for `T`.
        unsafe { self.base.as_ptr().add(offset).cast::<T>().read() }
    }

    /// Drops the `T` stored at `offset` in place.
    ///
    /// # Safety
    /// As for [`take`](Arena::take).
    pub(crate) unsafe fn drop_at<T>(&self, offset: usize) {
        // SAFETY: the caller's guarantees are those of `take`; the value is dropped once here.
        drop(unsafe { self.take::<T>(offset) });
    }

    /// Forgets every value: the owner has taken or dropped all of them. Keeps the allocation.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// Moves every value of `other` to the end of this arena, byte for byte, and returns the
    /// offset that `other`'s offsets must be shifted by. `other` is left empty; its values now
    /// live here, at their old offsets plus the returned shift.
    ///
    /// # Panics
    /// When this arena would exceed `isize::MAX` bytes (before anything moves).
    pub(crate) fn append(&mut self, other: &mut Arena) -> usize {
        if other.len == 0 {
            return 0;
        }
        let layout = Layout::from_size_align(other.len, other.align)
            .expect("an arena's length and alignment form a layout");
        let shift = self.reserve_value(layout);
        // SAFETY: `reserve_value` made `shift..shift + other.len` lie in this allocation, past
        // every value stored here; `other`'s first `len` bytes are its allocation's. The two
        // allocations are distinct (`&mut` to both), so the ranges do not overlap. `shift` is
        // a multiple of `other.align`, so every value keeps an offset aligned for its type.
        unsafe {
            core::ptr::copy_nonoverlapping(
                other.base.as_ptr(),
                self.base.as_ptr().add(shift),
                other.len,
            )
        };
        other.len = 0;
        shift
    }

    /// Makes room for a value of `layout` after the last one and returns its offset, counting
    /// its bytes in `len`. Raises the arena's alignment first if the value needs more.
    fn reserve_value(&mut self, layout: Layout) -> usize {
        if layout.align() > self.align {
            self.realign(layout.align());
        }
        let offset = self.len.next_multiple_of(layout.align());
        let end = offset
            .checked_add(layout.size())
            .filter(|&end| end <= isize::MAX as usize - (self.align - 1))
            .expect("freyr: a command buffer holds more than isize::MAX bytes");
        if end > self.cap {
            self.grow(end);
        }
        self.len = end;
        offset
    }

    /// Grows the allocation to at least `needed` bytes (doubling, at least [`MIN_CAPACITY`]).
    #[cold]
    fn grow(&mut self, needed: usize) {
        let cap = needed
            .max(self.cap.saturating_mul(2))
            .max(MIN_CAPACITY)
            .min(isize::MAX as usize - (self.align - 1));
        let new = Layout::from_size_align(cap, self.align).expect("checked against isize::MAX");
        let ptr = if self.cap == 0 {
            // SAFETY: `new` has a non-zero size (at least MIN_CAPACITY).
            unsafe { std::alloc::alloc(new) }
        } else {
            let old = Layout::from_size_align(self.cap, self.align).expect("allocated with it");
            // SAFETY: `base` was allocated with `old` (same alignment); the new size is
            // non-zero and does not overflow `isize` when rounded up to the alignment.
            unsafe { std::alloc::realloc(self.base.as_ptr(), old, cap) }
        };
        self.base = NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(new));
        self.cap = cap;
    }

    /// Moves the bytes to an allocation aligned for `align` (a power of two above the current
    /// one). Stored values keep their offsets, which stay aligned: the new base is more aligned.
    #[cold]
    fn realign(&mut self, align: usize) {
        if self.cap == 0 {
            self.align = align;
            return;
        }
        let new = Layout::from_size_align(self.cap, align)
            .expect("freyr: a command buffer holds more than isize::MAX bytes");
        // SAFETY: `new` has the current, non-zero capacity as its size.
        let ptr = unsafe { std::alloc::alloc(new) };
        let ptr = NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(new));
        let old = Layout::from_size_align(self.cap, self.align).expect("allocated with it");
        // SAFETY: both allocations hold at least `len` bytes and are distinct; the old one was
        // allocated with `old` and is freed once, after its bytes have moved.
        unsafe {
            core::ptr::copy_nonoverlapping(self.base.as_ptr(), ptr.as_ptr(), self.len);
            std::alloc::dealloc(self.base.as_ptr(), old);
        }
        self.base = ptr;
        self.align = align;
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        if self.cap != 0 {
            let layout = Layout::from_size_align(self.cap, self.align).expect("allocated with it");
            // SAFETY: `base` was allocated with this layout and is freed once, here.
            unsafe { std::alloc::dealloc(self.base.as_ptr(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(align(64))]
    #[derive(Debug, PartialEq)]
    struct Wide(u32);

    #[test]
    fn values_come_back_at_their_offsets_through_growth_and_realignment() {
        let mut arena = Arena::new();
        let a = arena.push(1u8);
        let s = arena.push(String::from("kept"));
        let many: Vec<usize> = (0..1000u64).map(|i| arena.push(i)).collect();
        let wide = arena.push(Wide(7));
        let unit = arena.push(());
        assert_eq!(wide % core::mem::align_of::<Wide>(), 0);
        assert_eq!(unit, 0);
        // SAFETY: each offset holds the type pushed there, taken once.
        unsafe {
            assert_eq!(arena.take::<u8>(a), 1);
            assert_eq!(arena.take::<String>(s), "kept");
            for (i, &offset) in many.iter().enumerate() {
                assert_eq!(arena.take::<u64>(offset), i as u64);
            }
            let w = arena.take::<Wide>(wide);
            assert_eq!(w, Wide(7));
            assert_eq!(&w as *const Wide as usize % 64, 0);
            arena.take::<()>(unit);
        }
        arena.clear();
        assert_eq!(arena.len(), 0);
    }

    #[test]
    fn append_moves_values_and_keeps_them_aligned() {
        let mut left = Arena::new();
        let mut right = Arena::new();
        let l = left.push(3u8);
        let r = right.push(Wide(9));
        let r2 = right.push(String::from("moved"));
        let shift = left.append(&mut right);
        assert_eq!(right.len(), 0);
        // SAFETY: each offset (shifted for the appended ones) holds the type pushed there.
        unsafe {
            assert_eq!(left.take::<u8>(l), 3);
            assert_eq!(left.take::<Wide>(r + shift), Wide(9));
            left.drop_at::<String>(r2 + shift);
        }
        assert_eq!((r + shift) % 64, 0);
    }
}
