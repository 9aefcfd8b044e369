//! A grid A* search costs memory in proportion to what it explores, not to the grid: a search
//! between neighbouring cells of a 2000 x 2000 grid (4 million cells) allocates a few
//! kilobytes. Its own test binary: the counting allocator sees every allocation of the process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr_time::{Grid, GridPathSearch, advance_by};

/// Counts the bytes allocated (never subtracts frees: the total a piece of code asked for).
struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator, which upholds
// `GlobalAlloc`'s contract; the counter only observes the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout, as `GlobalAlloc::alloc` requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation goes there).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System` with `layout`; forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn a_short_search_on_a_huge_grid_allocates_in_proportion_to_what_it_explores() {
    let grid = Arc::new(Grid::new(2000, 2000));
    let before = ALLOCATED.load(Ordering::Relaxed);
    let mut search = GridPathSearch::new(Arc::clone(&grid), (1000, 1000), (1001, 1000));
    let (progress, _) = advance_by(&mut search, 1_000);
    let path = progress.done().unwrap().unwrap();
    let allocated = ALLOCATED.load(Ordering::Relaxed) - before;
    assert_eq!(path.cells, [(1000, 1000), (1001, 1000)]);
    assert_eq!(search.expanded(), 2);
    // About 9 bytes per grid cell (36 MB here) before; a few KB now.
    assert!(
        allocated < 64 * 1024,
        "a search between neighbours allocated {allocated} bytes"
    );

    // A longer search: still bounded by the cells it reached, not by the grid.
    let before = ALLOCATED.load(Ordering::Relaxed);
    let mut search = GridPathSearch::new(Arc::clone(&grid), (0, 0), (300, 0));
    let path = advance_by(&mut search, 1_000_000)
        .0
        .done()
        .unwrap()
        .unwrap();
    let allocated = ALLOCATED.load(Ordering::Relaxed) - before;
    assert_eq!(path.cost, 3000);
    let per_expansion = allocated as u64 / search.expanded();
    assert!(
        allocated < 4 * 1024 * 1024 && per_expansion < 2048,
        "{allocated} bytes for {} expansions",
        search.expanded()
    );
}
