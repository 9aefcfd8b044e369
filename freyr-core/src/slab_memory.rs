//! Where slab memory comes from: the global allocator, and for a slab of at least one huge page
//! (2 MiB), a huge-page-aligned block that Linux is asked to back with transparent huge pages.
//!
//! A row loop over a 1M-entity archetype is a pass over memory. With 4 KiB pages every page is
//! a TLB entry to walk for and a point where the hardware prefetchers stop and start again;
//! with 2 MiB pages there are 512 times fewer of both. Measured on a sequential `a += b * s`
//! pass over two 12 MB arrays, interleaved, AMD EPYC: 611–740 µs with 4 KiB pages against
//! 530–638 µs with huge pages (medians of four rounds). A fresh slab also faults in 2 MiB at a
//! time instead of 4 KiB. Most Linux systems ship transparent huge pages as `madvise` (only
//! memory that asks gets them), so a slab must ask; plain `Vec`s, as the other ECS libraries
//! store their columns, do not.
//!
//! The cost: a huge page is backed whole on its first touch, and a slab's columns each start
//! in their own page, so a large slab takes all its memory when its first chunk is written
//! rather than as its chunks fill. Only slabs of at least [`HUGE_PAGE`] bytes ask, and those
//! exist only in archetypes of about 64k rows or more (slabs double from one chunk), so this is
//! at most one partly filled slab (at most [`MAX_SLAB_BYTES`](crate::chunk::MAX_SLAB_BYTES))
//! per large archetype. Elsewhere (other systems, Miri, a kernel without transparent huge
//! pages, a system set to `never`) the advice is not given or has no effect, and slabs are
//! ordinary memory.

use core::alloc::Layout;
use core::ptr::NonNull;

/// The huge page size asked for, and the least slab size that asks: 2 MiB, the x86-64 and
/// aarch64 (4 KiB granule) transparent huge page.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// The alignment a slab of `size` bytes is allocated with, given the least one `align` it
/// needs: a huge page for slabs of at least one, so every whole 2 MiB of the slab can be one
/// huge page (the kernel maps huge pages only at 2 MiB-aligned addresses).
#[inline]
pub(crate) fn slab_align(size: usize, align: usize) -> usize {
    if size >= HUGE_PAGE {
        align.max(HUGE_PAGE)
    } else {
        align
    }
}

/// Allocates a block of `layout` from the global allocator, and when it is at least a huge
/// page, asks for huge pages on it ([`advise_huge`]); aborts through
/// [`handle_alloc_error`](std::alloc::handle_alloc_error) when the allocator fails.
///
/// # Safety
///
/// `layout` has a non-zero size.
pub(crate) unsafe fn alloc_slab(layout: Layout) -> NonNull<u8> {
    // SAFETY: the size is non-zero (caller contract).
    let ptr = unsafe { std::alloc::alloc(layout) };
    let Some(base) = NonNull::new(ptr) else {
        std::alloc::handle_alloc_error(layout)
    };
    if layout.size() >= HUGE_PAGE && layout.align() >= HUGE_PAGE {
        advise_huge(base, layout.size());
    }
    base
}

/// Asks the kernel to back the whole huge pages of the `size` bytes at `base` (which the caller
/// owns) with transparent huge pages. Best effort: returns whether the advice was taken; a
/// refusal (no transparent huge pages in the kernel) leaves the memory as it was, and the
/// advice never changes the memory's contents.
#[cfg(all(target_os = "linux", not(miri)))]
pub(crate) fn advise_huge(base: NonNull<u8>, size: usize) -> bool {
    // Only whole huge pages: the advice applies to whole pages, and a page past the block may
    // belong to another allocation.
    let start = (base.as_ptr() as usize).next_multiple_of(HUGE_PAGE);
    let end = (base.as_ptr() as usize + size) & !(HUGE_PAGE - 1);
    if end <= start {
        return false;
    }
    // SAFETY: `madvise` with `MADV_HUGEPAGE` only sets a flag on the mappings of the range (it
    // neither reads, writes nor frees memory); the range is page-aligned and inside the block
    // the caller owns.
    let result =
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    result == 0
}

/// Elsewhere there is no such advice to give: returns `false`.
#[cfg(not(all(target_os = "linux", not(miri))))]
pub(crate) fn advise_huge(_base: NonNull<u8>, _size: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_slabs_of_a_huge_page_or_more_are_huge_aligned() {
        assert_eq!(slab_align(HUGE_PAGE - 1, 64), 64);
        assert_eq!(slab_align(HUGE_PAGE, 64), HUGE_PAGE);
        assert_eq!(slab_align(16 << 20, 64), HUGE_PAGE);
        assert_eq!(slab_align(16 << 20, 4 << 20), 4 << 20);
    }

    #[test]
    fn advice_on_less_than_one_whole_huge_page_is_not_given() {
        let layout = Layout::from_size_align(2 * HUGE_PAGE, HUGE_PAGE).unwrap();
        // SAFETY: non-zero size.
        let block = unsafe { std::alloc::alloc(layout) };
        let block = NonNull::new(block).expect("allocation");
        // One huge page's bytes from one small page in: no whole huge page inside.
        // SAFETY: 4096 bytes in is inside the block.
        let inner = unsafe { block.add(4096) };
        assert!(!advise_huge(inner, HUGE_PAGE));
        // SAFETY: allocated above with `layout`.
        unsafe { std::alloc::dealloc(block.as_ptr(), layout) };
    }

    /// The mapping holding `addr`'s `VmFlags` line in `/proc/self/smaps` (`hg`: huge pages
    /// advised).
    #[cfg(all(target_os = "linux", not(miri)))]
    fn vm_flags(addr: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("read /proc/self/smaps");
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split(' ').next().unwrap_or("");
            if let Some((lo, hi)) = range.split_once('-')
                && let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&addr);
                continue;
            }
            if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return flags.to_owned();
            }
        }
        panic!("no mapping holds {addr:#x}");
    }

    #[test]
    #[cfg(all(target_os = "linux", not(miri)))]
    fn a_large_slab_is_huge_aligned_and_advised() {
        let layout = Layout::from_size_align(4 << 20, slab_align(4 << 20, 64)).unwrap();
        // SAFETY: non-zero size.
        let block = unsafe { alloc_slab(layout) };
        assert_eq!(block.as_ptr() as usize % HUGE_PAGE, 0);
        let flags = vm_flags(block.as_ptr() as usize + HUGE_PAGE);
        if !flags.split_whitespace().any(|f| f == "hg") {
            // Only a kernel that refuses the advice (no transparent huge pages) may leave the
            // slab without it.
            assert!(
                !advise_huge(block, layout.size()),
                "the kernel takes huge page advice, but the slab was not advised: {flags}"
            );
        }
        // SAFETY: allocated above with `layout`.
        unsafe { std::alloc::dealloc(block.as_ptr(), layout) };
    }
}
