//! Copying a large world's bytes into its new chunks with stores that bypass the cache.
//!
//! A load of a large world writes tens of megabytes that nothing reads until the next tick.
//! With ordinary stores every destination line is first read from memory (to own it), then
//! written back: three bytes of traffic per byte loaded. Non-temporal stores write whole lines
//! without reading them, and leave the cache to the source bytes, which the load's checksum
//! reads right after each copy. Measured on a 2-core x86-64 box: 32 MB in chunk-sized pieces in
//! 1.6 ms against 2.4 ms with `memcpy`. A small world is copied with ordinary stores: its
//! chunks fit in cache, where the first tick finds them.
//!
//! Miri cannot run the streaming stores (`core::arch` writes them as inline assembly) or
//! `sfence`, so under Miri every copy is an ordinary one; the streaming path is checked natively
//! by the tests below (every length around its thresholds at every destination offset, nothing
//! written outside the range) and by a 15 MB load in `freyr-query/tests/persist_raw.rs`.

use core::marker::PhantomData;

/// Least bytes of borrowed data (entities and columns given as bytes) for which a world is
/// built with [`Streaming`] stores: above what a core's share of a last-level cache holds, so
/// the ordinary stores would have evicted the chunks again before the first tick reads them.
pub(super) const STREAM_MIN_BYTES: usize = 8 << 20;

/// Fewest bytes copied with non-temporal stores; shorter ranges (a last, partial chunk's
/// column) take an ordinary copy.
#[cfg(all(target_arch = "x86_64", not(miri)))]
const STREAM_MIN_RANGE: usize = 256;

/// A run of copies, each with ordinary stores or, when `streaming`, non-temporal ones. Its
/// `Drop` orders the non-temporal stores before every later access to the memory they wrote
/// (an `sfence` on x86-64), so it runs before the copied chunks are read, freed or shared, on
/// every path out, unwinding included. Not `Send`: the fence must run on the thread that
/// stored.
pub(super) struct Streaming {
    #[cfg_attr(any(not(target_arch = "x86_64"), miri), allow(dead_code))]
    streaming: bool,
    _not_send: PhantomData<*const ()>,
}

impl Streaming {
    /// Copies with non-temporal stores if `streaming` (and the target has them).
    pub(super) fn new(streaming: bool) -> Streaming {
        Streaming {
            streaming,
            _not_send: PhantomData,
        }
    }

    /// Copies `src` to `dst`.
    ///
    /// # Safety
    /// `dst` is valid for writing `src.len()` bytes, does not overlap `src`, and is not
    /// accessed by anything but this run's copies until `self` is dropped.
    #[inline]
    pub(super) unsafe fn copy(&self, src: &[u8], dst: *mut u8) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if self.streaming && src.len() >= STREAM_MIN_RANGE {
            // SAFETY: as this function's contract; the fence runs when `self` drops.
            unsafe { stream_x86_64(src, dst) };
            return;
        }
        // SAFETY: `dst` is valid for `src.len()` bytes and disjoint from `src` (caller).
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if self.streaming {
            // SAFETY: `sfence` is part of SSE, which every x86-64 target has; it only orders
            // this thread's earlier stores before its later ones.
            unsafe { core::arch::x86_64::_mm_sfence() };
        }
    }
}

/// Copies `src` to `dst`: the bytes before `dst`'s first 16-byte boundary and after its last
/// whole 16 bytes with an ordinary copy, the rest as unaligned 16-byte loads and aligned
/// non-temporal 16-byte stores (SSE2, part of every x86-64 target), four per 64-byte line.
///
/// # Safety
/// As [`Streaming::copy`]; an `sfence` follows before anything else accesses `dst`'s bytes.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline]
unsafe fn stream_x86_64(src: &[u8], dst: *mut u8) {
    use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    let len = src.len();
    let head = dst.align_offset(16).min(len);
    let s = src.as_ptr();
    // SAFETY: bytes `..head` of both ranges are in bounds (`head <= len`) and disjoint.
    unsafe { core::ptr::copy_nonoverlapping(s, dst, head) };
    let mut at = head;
    // SAFETY: in every access below, each 16 bytes read and written end at or before `len`, so
    // they lie in `src` and in `dst`'s `len` writable bytes; `dst + at` is 16-aligned (`head`
    // aligns it and `at` grows by 16s); `src` is initialised bytes, so a 16-byte integer load
    // reads nothing uninitialised.
    unsafe {
        while at + 64 <= len {
            let a = _mm_loadu_si128(s.add(at).cast::<__m128i>());
            let b = _mm_loadu_si128(s.add(at + 16).cast::<__m128i>());
            let c = _mm_loadu_si128(s.add(at + 32).cast::<__m128i>());
            let d = _mm_loadu_si128(s.add(at + 48).cast::<__m128i>());
            _mm_stream_si128(dst.add(at).cast::<__m128i>(), a);
            _mm_stream_si128(dst.add(at + 16).cast::<__m128i>(), b);
            _mm_stream_si128(dst.add(at + 32).cast::<__m128i>(), c);
            _mm_stream_si128(dst.add(at + 48).cast::<__m128i>(), d);
            at += 64;
        }
        while at + 16 <= len {
            let a = _mm_loadu_si128(s.add(at).cast::<__m128i>());
            _mm_stream_si128(dst.add(at).cast::<__m128i>(), a);
            at += 16;
        }
    }
    // SAFETY: bytes `at..len` of both ranges are in bounds and disjoint.
    unsafe { core::ptr::copy_nonoverlapping(s.add(at), dst.add(at), len - at) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length around the thresholds, at every destination offset within a 16-byte
    /// boundary, copies exactly its bytes and writes nothing around them.
    fn copies_exactly(streaming: bool) {
        let src: Vec<u8> = (0..2048u32).map(|i| (i * 7 + 3) as u8).collect();
        // Under Miri (which interprets every byte compared below), the lengths up to the
        // 64-byte loop's third round and the offsets at and around the 16-byte boundary: the
        // same branches of the copy, a tenth of the bytes.
        let lens: &[usize] = if cfg!(miri) {
            &[0, 1, 15, 16, 17, 63, 64, 65, 255, 257]
        } else {
            &[0, 1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 300, 1000, 2000]
        };
        let offsets: &[usize] = if cfg!(miri) {
            &[0, 1, 8, 15, 16]
        } else {
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
        };
        for &len in lens {
            for &offset in offsets {
                // 64 bytes past the longest copy (2,100 natively; Miri compares each byte).
                let mut dst = vec![0xAAu8; if cfg!(miri) { 16 + 257 + 64 } else { 2100 }];
                {
                    let copies = Streaming::new(streaming);
                    // SAFETY: `offset + len <= 16 + 2000 < dst.len()` (`16 + 257` under Miri);
                    // `dst` is only touched again after `copies` is dropped.
                    unsafe { copies.copy(&src[..len], dst.as_mut_ptr().add(offset)) };
                }
                assert!(
                    dst[..offset].iter().all(|&b| b == 0xAA),
                    "{len} at {offset}"
                );
                assert_eq!(&dst[offset..offset + len], &src[..len], "{len} at {offset}");
                assert!(
                    dst[offset + len..].iter().all(|&b| b == 0xAA),
                    "{len} at {offset}"
                );
            }
        }
    }

    #[test]
    fn streaming_copies_exactly_the_range() {
        copies_exactly(true);
    }

    #[test]
    fn ordinary_copies_exactly_the_range() {
        copies_exactly(false);
    }
}
