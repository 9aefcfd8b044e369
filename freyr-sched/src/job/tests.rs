//! The batch loop's unit tests: batch sizes, the pace rule, one clock read per boundary, the
//! cursor written back on return and on unwind.

use super::*;
use std::panic::{self, AssertUnwindSafe};

std::thread_local! {
    /// How many times this thread's `run_indices` clocks were read.
    static CLOCK_READS: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
    /// While set, what this thread's `run_indices` clocks read instead of the time.
    static FAKE_NANOS: core::cell::Cell<Option<u64>> = const { core::cell::Cell::new(None) };
}

/// Counts a read of a `run_indices` clock on this thread; the fake time, if one is set.
pub(super) fn count_clock_read() -> Option<u64> {
    CLOCK_READS.with(|reads| reads.set(reads.get() + 1));
    FAKE_NANOS.with(core::cell::Cell::get)
}

fn clock_reads() -> usize {
    CLOCK_READS.with(core::cell::Cell::get)
}

#[test]
fn the_clock_is_read_once_per_boundary() {
    let before = clock_reads();
    let mut clock = Clock::default();
    assert_eq!(clock.read(), 0, "the first read starts the clock");
    std::thread::sleep(std::time::Duration::from_millis(1));
    assert_eq!(clock.read(), 0, "the same boundary: the same reading");
    assert_eq!(clock_reads() - before, 1);
    clock.next_boundary();
    let later = clock.read();
    assert!(later > 0 || cfg!(miri), "{later}");
    assert_eq!(clock.read(), later);
    assert_eq!(clock_reads() - before, 2);
}

#[test]
fn the_pace_probe_and_the_batch_timer_share_a_boundary_s_read() {
    // A thread spins for work while a range of indices too fast to time (the clock stands
    // still) runs: the probe looks at doubling counts and never splits, the timer reads the
    // clock after every batch past the cap and grows the batches. Where both look at one
    // boundary, one read serves both.
    FAKE_NANOS.with(|fake| fake.set(Some(0)));
    let sleep = Sleep::new(1, 1);
    let _spinner = sleep.searching();
    let before = clock_reads();
    let mut next = 0;
    let mut lens = Vec::new();
    run_indices(&mut next, 20_000, &sleep, |next, stop| {
        lens.push(stop - *next);
        for_each_index(next, stop, |i| {
            std::hint::black_box(i);
        });
    });
    let reads = clock_reads() - before;
    FAKE_NANOS.with(|fake| fake.set(None));
    assert_eq!(next, 20_000);
    // The probe starts after the first index and times one more; then batches double to
    // the cap and grow eightfold at a standing clock, to the longest.
    assert_eq!(lens[..8], [1, 1, 2, 4, 8, 16, 128, 1_024], "{lens:?}");
    assert!(lens.contains(&MAX_FAST_BATCH), "{lens:?}");
    // One read per boundary between two batches: the first starts the probe (and the
    // clock) after the first index, every later one serves the look and the timer due there
    // (with a read for each, the same run read the clock 18 times).
    assert_eq!(reads, lens.len() - 1, "{lens:?}");
}

/// A batch function that runs `f` per index, as `IndexedJob::run_batch`'s default does.
fn per_index(mut f: impl FnMut(usize)) -> impl FnMut(&mut usize, usize) {
    move |next, stop| for_each_index(next, stop, &mut f)
}

#[test]
fn a_split_for_a_spinner_needs_a_trusted_pace_and_enough_work_left() {
    // 2 µs per index, 3 left: 6 µs of work, worth a hand-off.
    assert!(worth_splitting(2_000, 1, 3));
    // 2 µs per index, 1 left: 2 µs, not worth it.
    assert!(!worth_splitting(2_000, 1, 1));
    // 10 ns per index over 100 indices, 1,000 left: 10 µs, worth it.
    assert!(worth_splitting(1_000, 100, 1_000));
    // The same pace, 300 left: 3 µs, not worth it.
    assert!(!worth_splitting(1_000, 100, 300));
    // A pace timed over less than 1 µs decides nothing, however much is left.
    assert!(!worth_splitting(999, 1, 1_000_000));
    // No overflow on huge counts.
    assert!(worth_splitting(u64::MAX, usize::MAX, usize::MAX));
}

#[test]
fn batches_past_the_cap_follow_their_time() {
    // Batches below the cap double whatever their time.
    assert_eq!(next_batch(1, None), 2);
    assert_eq!(next_batch(4, Some(u64::MAX)), 8);
    assert_eq!(next_batch(8, None), MAX_BATCH);
    assert_eq!(next_batch(MAX_BATCH, None), MAX_BATCH);
    // A fast one is followed by as many indices as fit in the target at its pace, at most
    // eight times as many, at most the longest batch.
    assert_eq!(
        next_batch(MAX_BATCH, Some(FAST_BATCH_NANOS / 2)),
        2 * MAX_BATCH
    );
    assert_eq!(next_batch(MAX_BATCH, Some(1)), 8 * MAX_BATCH);
    assert_eq!(next_batch(MAX_BATCH, Some(0)), 8 * MAX_BATCH);
    assert_eq!(next_batch(1_024, Some(10)), MAX_FAST_BATCH);
    assert_eq!(next_batch(MAX_FAST_BATCH, Some(0)), MAX_FAST_BATCH);
    // A batch near the target keeps its length; a slow one halves, down to the cap.
    assert_eq!(next_batch(256, Some(FAST_BATCH_NANOS)), 256);
    assert_eq!(next_batch(256, Some(2 * FAST_BATCH_NANOS)), 256);
    assert_eq!(next_batch(256, Some(2 * FAST_BATCH_NANOS + 1)), 128);
    assert_eq!(next_batch(MAX_BATCH, Some(u64::MAX)), MAX_BATCH);
    // From the cap to the longest batch in three steps of trivial indices.
    let mut batch = MAX_BATCH;
    let mut steps = 0;
    while batch < MAX_FAST_BATCH {
        batch = next_batch(batch, Some(1));
        steps += 1;
    }
    assert_eq!((batch, steps), (MAX_FAST_BATCH, 3));
}

#[test]
#[cfg_attr(miri, ignore = "times real sleeps")]
fn a_range_of_slow_indices_stays_in_batches_of_the_cap() {
    let sleep = Sleep::new(1, 1);
    let mut next = 0;
    let mut lens = Vec::new();
    run_indices(&mut next, 80, &sleep, |next, stop| {
        lens.push(stop - *next);
        for_each_index(next, stop, |_| {
            std::thread::sleep(std::time::Duration::from_micros(20));
        });
    });
    assert_eq!(next, 80);
    assert!(lens.iter().all(|&n| n <= MAX_BATCH), "{lens:?}");
}

#[test]
fn the_pace_is_read_again_once_the_indices_run_have_doubled() {
    // Seen at index 10: looks after 1, 2, 4, 8, ... indices.
    let mut looks = vec![11];
    while looks.len() < 6 {
        looks.push(next_look(10, *looks.last().unwrap()));
    }
    assert_eq!(looks, [11, 12, 14, 18, 26, 42]);
    // Over 1,954 trivial indices from index 0: a dozen reads, not one per batch of 16.
    let mut at = 1;
    let mut reads = 1;
    while at < 1954 {
        at = next_look(0, at);
        reads += 1;
    }
    assert_eq!(reads, 12);
    // No overflow near the top of the index space.
    assert_eq!(next_look(0, usize::MAX - 1), usize::MAX);
}

#[test]
// Timed indices: Miri's clock is virtual, so the pace means nothing there.
#[cfg_attr(miri, ignore = "times real sleeps")]
fn with_a_spinning_thread_a_range_of_slow_indices_returns_early() {
    let sleep = Sleep::new(1, 1);
    let _spinner = sleep.searching();
    // Slow indices: returns early after a few, leaving the rest to split.
    let mut next = 0;
    run_indices(
        &mut next,
        100,
        &sleep,
        per_index(|_| {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }),
    );
    assert!((1..100).contains(&next), "stopped at {next}");
    // What a range of trivial indices does is the pace rule's (tested above): timed here
    // it would depend on the machine's load.
}

#[test]
#[cfg_attr(miri, ignore = "times real sleeps")]
fn without_an_idle_thread_a_range_of_slow_indices_runs_to_the_end() {
    let sleep = Sleep::new(1, 1);
    let mut next = 0;
    run_indices(
        &mut next,
        20,
        &sleep,
        per_index(|_| {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }),
    );
    assert_eq!(next, 20);
}

#[test]
fn progress_is_written_back_on_completion_and_on_unwind() {
    let sleep = Sleep::new(1, 1);
    let mut next = 2;
    let mut seen = Vec::new();
    run_indices(&mut next, 40, &sleep, per_index(|i| seen.push(i)));
    assert_eq!(next, 40);
    assert_eq!(seen, (2..40).collect::<Vec<_>>());

    let mut next = 0;
    let mut ran = Vec::new();
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        run_indices(
            &mut next,
            5,
            &sleep,
            per_index(|i| {
                ran.push(i);
                assert_ne!(i, 2, "index 2 fails");
            }),
        );
    }));
    assert!(outcome.is_err());
    assert_eq!(next, 3, "resume after the index that panicked");
    assert_eq!(ran, [0, 1, 2]);
}

#[test]
fn for_each_index_writes_the_cursor_back_on_return_and_on_unwind() {
    let mut next = 3;
    let mut seen = Vec::new();
    for_each_index(&mut next, 9, |i| seen.push(i));
    assert_eq!((next, seen), (9, (3..9).collect::<Vec<_>>()));
    // An empty range runs nothing and leaves the cursor.
    let mut next = 5;
    for_each_index(&mut next, 5, |i| panic!("ran {i}"));
    assert_eq!(next, 5);
    let mut next = 0;
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        for_each_index(&mut next, 10, |i| assert_ne!(i, 6, "index 6 fails"));
    }));
    assert!(outcome.is_err());
    assert_eq!(next, 7, "one past the index that unwound");
}

#[test]
fn run_whole_is_one_clamped_batch() {
    let mut next = 2;
    let mut batches = Vec::new();
    run_whole(&mut next, 100, |next, stop| {
        batches.push((*next, stop));
        for_each_index(next, stop, |_| {});
    });
    assert_eq!((next, batches), (100, vec![(2, 100)]));
    // Nothing to run: the batch function is not called.
    run_whole(&mut next, 100, |_, _| panic!("called for an empty range"));
    assert_eq!(next, 100);
    // Returns without advancing: the batch still counts as done.
    let mut next = 0;
    run_whole(&mut next, 10, |_, _| {});
    assert_eq!(next, 10);
    // Unwinds without advancing: resume one past the batch's first index.
    let mut next = 4;
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        run_whole(&mut next, 10, |_, _| panic!("before advancing"));
    }));
    assert!(outcome.is_err());
    assert_eq!(next, 5);
    // Unwinds after running past its batch: clamped to the range's end.
    let mut next = 0;
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        run_whole(&mut next, 10, |next, _| {
            *next = 1_000;
            panic!("overran");
        });
    }));
    assert!(outcome.is_err());
    assert_eq!(next, 10);
}

#[test]
fn batches_double_up_to_the_cap() {
    let sleep = Sleep::new(1, 1);
    let mut next = 0;
    let mut batches = Vec::new();
    run_indices(&mut next, 100, &sleep, |next, stop| {
        batches.push((*next, stop));
        *next = stop;
    });
    assert_eq!(next, 100);
    let lens: Vec<usize> = batches.iter().map(|(a, b)| b - a).collect();
    assert_eq!(lens[..5], [1, 2, 4, 8, MAX_BATCH]);
    // Past the cap the length follows each batch's time (`next_batch`, tested below): how
    // fast these empty batches ran depends on the machine (and on Miri's clock).
    assert!(
        lens.iter().all(|&n| (1..=MAX_FAST_BATCH).contains(&n)),
        "{lens:?}"
    );
    assert!(batches.windows(2).all(|w| w[0].1 == w[1].0), "{batches:?}");
    assert_eq!(lens.iter().sum::<usize>(), 100);
}

#[test]
fn a_faulty_batch_cannot_make_an_index_run_twice() {
    let sleep = Sleep::new(1, 1);
    // Returns without advancing: the batch still counts as done.
    let mut next = 0;
    let mut calls = 0;
    run_indices(&mut next, 10, &sleep, |_, _| calls += 1);
    assert_eq!(next, 10);
    assert!(calls < 10);
    // Unwinds without advancing: resume one past the batch's first index.
    let mut next = 4;
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        run_indices(&mut next, 10, &sleep, |_, _| panic!("before advancing"));
    }));
    assert!(outcome.is_err());
    assert_eq!(next, 5);
    // Unwinds after running past its batch: clamped to the batch's end.
    let mut next = 0;
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        run_indices(&mut next, 10, &sleep, |next, _| {
            *next = 1_000;
            panic!("overran");
        });
    }));
    assert!(outcome.is_err());
    assert_eq!(next, 1, "the first batch is index 0 alone");
}
