//! Recording commands allocates per buffer, not per command: a tick whose tasks record 100k
//! commands allocates a bounded number of times per task, and a reused buffer not at all.
//! Counted with a global allocator that tallies this thread's allocations (its own test
//! binary, since it installs the allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use freyr_core::{CommandBuffer, World};

/// Counts the allocations (and reallocations) made by the current thread.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: allocations during thread teardown are not counted.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: every call is forwarded to `System` unchanged; counting touches only a thread-local
// `Cell` (const-initialised, so it never allocates).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

#[derive(Debug, PartialEq)]
struct Position([f32; 3]);
#[derive(Debug, PartialEq)]
struct Velocity([f32; 3]);
#[derive(Debug, PartialEq)]
struct Extra(u64);

/// Buffers, as one per task of a tick.
const TASKS: usize = if cfg!(miri) { 2 } else { 8 };
/// Commands recorded by all tasks together.
const COMMANDS: usize = if cfg!(miri) { 400 } else { 100_000 };
/// The most allocations recording may make per buffer: the command list and the arena each
/// grow by doubling (about 17 steps each for 100k commands), plus the pending-handle blocks.
const PER_BUFFER: usize = 48;

/// Records `COMMANDS` commands, half spawns and half inserts into `targets`, spread over the
/// buffers in runs (as chunk tasks record them).
fn record(buffers: &mut [CommandBuffer], targets: &[freyr_core::Entity]) {
    let per_task = COMMANDS.div_ceil(buffers.len());
    for i in 0..COMMANDS {
        let buffer = &mut buffers[i / per_task];
        if i % 2 == 0 {
            buffer.spawn((Position([i as f32; 3]), Velocity([1.0; 3])));
        } else {
            buffer.insert(targets[i / 2], (Extra(i as u64),));
        }
    }
}

#[test]
fn recording_allocates_per_buffer_not_per_command() {
    let mut world = World::new();
    let targets = world.spawn_batch((0..COMMANDS / 2).map(|i| (Position([i as f32; 3]),)));
    let mut buffers: Vec<CommandBuffer> = (0..TASKS).map(|_| CommandBuffer::new()).collect();

    let before = allocations();
    record(&mut buffers, &targets);
    let recording = allocations() - before;
    assert!(
        recording <= TASKS * PER_BUFFER,
        "recording {COMMANDS} commands in {TASKS} buffers made {recording} allocations"
    );

    // Applying allocates for the world's growth and each buffer's report, not per command.
    let before = allocations();
    let mut spawned = 0;
    for buffer in &mut buffers {
        let report = buffer.apply(&mut world);
        assert_eq!((report.skipped_stale, report.skipped_missing), (0, 0));
        spawned += report.spawned.len();
    }
    let applying = allocations() - before;
    assert_eq!(spawned, COMMANDS / 2);
    assert!(
        applying <= TASKS * PER_BUFFER,
        "applying {COMMANDS} commands made {applying} allocations"
    );
    assert_eq!(world.len(), COMMANDS);
    assert_eq!(
        world.get::<Extra>(targets[7]),
        Ok(&Extra(15)),
        "insert 7 is command 15"
    );

    // The buffers keep their capacity: the next tick's recording allocates nothing.
    let before = allocations();
    record(&mut buffers, &targets);
    assert_eq!(
        allocations() - before,
        0,
        "a reused buffer records without allocating"
    );
    for buffer in &mut buffers {
        buffer.clear();
    }
}
