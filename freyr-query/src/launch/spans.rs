//! Which rows each task of a launch covers: the matched archetypes' task ranges (`Spans`)
//! and one task's (or one batch's) run of rows ([`TaskRun`]).

use core::ptr::NonNull;

use freyr_core::{Archetype, CHUNK_CAPACITY, World};

use crate::changed::TickTerm;
use crate::fetch::QueryData;
use crate::filter::QueryFilter;
use crate::state::{MatchedArchetype, QueryState};

/// One run of consecutive chunks of a matched archetype in a launch: tasks `start..end`, `parts`
/// per chunk; task `start + c * parts + k` runs part `k` of chunk `first_chunk + c` of
/// `archetype` (see [`Spans`]). Without a change filter a span covers all of its archetype's
/// chunks (`first_chunk` 0); with one, each maximal run of chunks that pass is a span.
///
/// `archetype` points into the world the spans were built from; it is only dereferenced by the
/// launch's tasks, while the launch is registered (see [`launch`](crate::launch::launch)'s safety contract).
#[derive(Copy, Clone)]
pub(crate) struct Span<C> {
    pub(crate) archetype: NonNull<Archetype>,
    pub(crate) columns: C,
    pub(crate) first_chunk: usize,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// The task layout of a launch: one [`Span`] per matched archetype with chunks, in archetype
/// creation order, so task indices run in (archetype creation order, chunk index) order — the
/// order commands are applied and reductions combined in.
///
/// Building it resolves no chunk pointer: those are resolved by the tasks on the workers
/// (`Job::run_tasks`). It visits every chunk once, on the launching
/// thread, to grant write access (one relaxed store per chunk and written column) and, with a
/// change filter, to select the chunks (one comparison per chunk and term). The first span is
/// stored inline, so a single-span launch allocates nothing here.
///
/// With a row split (`Query::rows_per_task`) every chunk is cut
/// into `parts` tasks of at most `rows` rows, of near-equal length (a short last chunk's last
/// ones empty), still in (chunk, row) order. The layout depends only on the chunk lengths and
/// `rows`, never on the worker count.
pub(crate) struct Spans<C> {
    first: Span<C>,
    rest: Vec<Span<C>>,
    /// Tasks per chunk: `CHUNK_CAPACITY.div_ceil(rows)`.
    parts: usize,
    /// Rows per task (at most `CHUNK_CAPACITY`).
    rows: usize,
}

impl<C: Copy> Spans<C> {
    /// The spans of `state`'s matched archetypes in `world`, `rows` rows per task (`rows >= 1`;
    /// `CHUNK_CAPACITY` or more means one task per chunk), keeping only the chunks that pass the
    /// change filter `terms` and stamping `tick` on the written columns of those; `None` when no
    /// chunk is left.
    pub(crate) fn new<Q, F>(
        world: &World,
        state: &QueryState<Q, F>,
        rows: usize,
        (terms, tick): (&[TickTerm], u64),
    ) -> Option<Self>
    where
        Q: QueryData<Columns = C>,
        F: QueryFilter,
    {
        debug_assert!(rows >= 1, "Query::rows_per_task rejects 0");
        let rows = rows.clamp(1, CHUNK_CAPACITY);
        let parts = CHUNK_CAPACITY.div_ceil(rows);
        let mut spans: Option<Spans<C>> = None;
        let mut push = |span: Span<C>| match &mut spans {
            None => {
                spans = Some(Spans {
                    first: span,
                    rest: Vec::new(),
                    parts,
                    rows,
                })
            }
            Some(spans) => spans.rest.push(span),
        };
        let mut start = 0;
        if !terms.is_empty() {
            // Filtered: one span per run of consecutive selected chunks of an archetype.
            let mut open: Option<(&MatchedArchetype<C>, usize, usize)> = None;
            let mut close =
                |(matched, first_chunk, chunk): (&MatchedArchetype<C>, usize, usize)| {
                    let end = start + (chunk - first_chunk) * parts;
                    push(Span {
                        archetype: NonNull::from(world.archetype(matched.id)),
                        columns: matched.columns,
                        first_chunk,
                        start,
                        end,
                    });
                    start = end;
                };
            state.for_each_selected_chunk(
                world,
                (terms, tick),
                |matched, chunk, _| match &mut open {
                    Some((run, _, next)) if run.id == matched.id && *next == chunk => *next += 1,
                    _ => {
                        if let Some(run) = open.replace((matched, chunk, chunk + 1)) {
                            close(run);
                        }
                    }
                },
            );
            if let Some(run) = open {
                close(run);
            }
            return spans;
        }
        for (i, matched) in state.matched().iter().enumerate() {
            let archetype = world.archetype(matched.id);
            // Unfiltered: the whole archetype is one span, stamped in one loop per written
            // column (a launch over 1,954 chunks stamps them in about a microsecond; a
            // check-and-stamp per chunk took several).
            let chunks = archetype.chunk_count();
            if chunks == 0 {
                continue;
            }
            for &column in state.written(i) {
                archetype.mark_all_changed(column, tick);
            }
            let end = start + chunks * parts;
            push(Span {
                archetype: NonNull::from(archetype),
                columns: matched.columns,
                first_chunk: 0,
                start,
                end,
            });
            start = end;
        }
        spans
    }

    /// Total number of tasks.
    pub(crate) fn tasks(&self) -> usize {
        self.rest.last().unwrap_or(&self.first).end
    }

    /// The chunk (of `span`'s archetype) that task `index` of `span` runs (a part of).
    #[inline(always)]
    pub(crate) fn chunk_of(&self, span: &Span<C>, index: usize) -> usize {
        let local = index - span.start;
        span.first_chunk
            + if self.parts == 1 {
                local
            } else {
                local / self.parts
            }
    }

    /// The tasks of the consecutive chunks of `span` from chunk `chunk` on, as one run of `len`
    /// rows starting at row 0 of `chunk`, with `ptrs` pointing there (see [`TaskRun`]).
    #[inline(always)]
    pub(crate) fn task_run<P>(
        &self,
        span: &Span<C>,
        chunk: usize,
        len: usize,
        ptrs: P,
    ) -> TaskRun<P> {
        TaskRun {
            ptrs,
            len,
            first: span.start + (chunk - span.first_chunk) * self.parts,
            parts: self.parts,
            rows: self.rows,
        }
    }

    /// The span holding task `index`.
    ///
    /// # Panics
    ///
    /// If `index >= self.tasks()`.
    #[inline]
    pub(crate) fn find(&self, index: usize) -> &Span<C> {
        if index < self.first.end {
            return &self.first;
        }
        &self.rest[self.rest.partition_point(|s| s.end <= index)]
    }
}

/// Consecutive tasks of one span whose chunks are consecutive in one slab, so that their rows
/// are contiguous in every column: the run's column pointers `ptrs` (at row 0 of its first
/// chunk), its length, and how task indices map to its rows.
///
/// Task `first + c * parts + k` runs part `k` of the run's chunk `c`: the `k`-th of the chunk's
/// near-equal parts of at most `rows` rows (see `TaskRun::task_rows`; chunks are
/// full except the archetype's last, cut at `len`).
pub struct TaskRun<P> {
    pub(crate) ptrs: P,
    /// Rows in the run.
    pub(crate) len: usize,
    /// Task index of the run's first chunk's part 0.
    pub(crate) first: usize,
    parts: usize,
    rows: usize,
}

impl<P> TaskRun<P> {
    /// The task index one past the run's last task.
    #[inline(always)]
    pub(crate) fn end(&self) -> usize {
        self.first + self.len.div_ceil(CHUNK_CAPACITY) * self.parts
    }

    /// Rows `start..end` of the run that task `index` (in `first..end()`) runs.
    ///
    /// A chunk of `len` rows is cut into `len.div_ceil(rows)` parts of near-equal length (each
    /// at most `rows`; they differ by at most one row), in row order; its remaining parts are
    /// empty (only a short last chunk has any). Equal parts, rather than `rows`-row parts and a
    /// short remainder, keep workers evenly loaded: ecs_bench_suite's `heavy_compute` (1,000
    /// rows, 64 per task) gives 8 tasks of 64 and 8 of 61 rows, which two workers split 500 and
    /// 500, where 15 tasks of 64 and one of 40 split at best 512 and 488.
    #[inline(always)]
    pub(crate) fn task_rows(&self, index: usize) -> (usize, usize) {
        let local = index - self.first;
        if self.parts == 1 {
            let start = local * CHUNK_CAPACITY;
            return (start, (start + CHUNK_CAPACITY).min(self.len));
        }
        let chunk_start = local / self.parts * CHUNK_CAPACITY;
        let chunk_len = CHUNK_CAPACITY.min(self.len - chunk_start);
        let part = local % self.parts;
        let nonempty = chunk_len.div_ceil(self.rows);
        if part >= nonempty {
            let end = chunk_start + chunk_len;
            return (end, end);
        }
        (
            chunk_start + part * chunk_len / nonempty,
            chunk_start + (part + 1) * chunk_len / nonempty,
        )
    }

    crate::two_row_copies! { used_by_method:
        /// The rows that tasks `from..stop` (in `first..=end()`) run together: tasks in index order
        /// cover the run's rows in order without gaps, so this is the span from the first task's
        /// start to the last one's end; 0 when `from >= stop`. The amount of work a batch of tasks
        /// does, for timing it per row (tasks differ in length at a chunk's end); only builds with
        /// two copies of the row loops time them (see `row_path::is_adaptive`).
        #[inline(always)]
        pub(crate) fn rows_of(&self, from: usize, stop: usize) -> usize {
            if from >= stop {
                return 0;
            }
            self.task_rows(stop - 1).1 - self.task_rows(from).0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(counts: &[usize]) -> Spans<usize> {
        let mut world = World::new();
        let entity = world.spawn((1u8,));
        let id = world.entity_location(entity).expect("spawned").0;
        let archetype = NonNull::from(world.archetype(id));
        let mut start = 0;
        let mut all = counts.iter().enumerate().map(|(i, &n)| {
            let span = Span {
                archetype,
                columns: i,
                first_chunk: 0,
                start,
                end: start + n,
            };
            start += n;
            span
        });
        let first = all.next().expect("at least one span");
        Spans {
            first,
            rest: all.collect(),
            parts: 1,
            rows: CHUNK_CAPACITY,
        }
    }

    #[test]
    fn every_task_index_finds_the_span_that_holds_it() {
        for counts in [
            vec![1954],
            vec![1, 1],
            vec![3, 1, 5],
            (1..=40).map(|i| i % 7 + 1).collect::<Vec<_>>(),
        ] {
            let spans = spans(&counts);
            assert_eq!(spans.tasks(), counts.iter().sum::<usize>());
            let mut index = 0;
            for (which, &n) in counts.iter().enumerate() {
                for chunk in 0..n {
                    let span = spans.find(index);
                    assert_eq!(span.columns, which, "task {index} of {counts:?}");
                    assert_eq!(index - span.start, chunk);
                    index += 1;
                }
            }
        }
    }

    #[test]
    fn a_row_split_covers_every_row_once_in_chunk_and_row_order() {
        for (rows, len) in [
            (CHUNK_CAPACITY, 512),
            (CHUNK_CAPACITY, 3),
            (64, 512),
            (64, 488),
            (100, 512),
            (100, 7),
            (1, 3),
            (511, 512),
        ] {
            let mut spans = spans(&[3]);
            spans.parts = CHUNK_CAPACITY.div_ceil(rows);
            spans.rows = rows;
            spans.first.end = 3 * spans.parts;
            let lens = [CHUNK_CAPACITY, CHUNK_CAPACITY, len];
            let total = lens.iter().sum::<usize>();
            let mut seen = Vec::new();
            // Chunk 0 alone, then chunks 1 and 2 as one run (as if chunk 1 began a slab).
            for (chunk, run_len) in [(0, CHUNK_CAPACITY), (1, total - CHUNK_CAPACITY)] {
                let span = *spans.find(0);
                let run = spans.task_run(&span, chunk, run_len, ());
                let first_row = chunk * CHUNK_CAPACITY;
                for index in run.first..run.end() {
                    assert_eq!(
                        spans.chunk_of(&span, index),
                        chunk + (index - run.first) / spans.parts
                    );
                    let (start, end) = run.task_rows(index);
                    assert!(
                        start <= end && end - start <= rows,
                        "task {index}: rows {start}..{end}"
                    );
                    // A chunk's non-empty parts differ by at most one row, and no more of them
                    // are empty than a short chunk leaves over.
                    let chunk_len = lens[chunk + (index - run.first) / spans.parts];
                    let nonempty = chunk_len.div_ceil(rows);
                    let part = (index - run.first) % spans.parts;
                    if part < nonempty {
                        assert!(
                            (chunk_len / nonempty..=chunk_len.div_ceil(nonempty))
                                .contains(&(end - start)),
                            "task {index}: {} of {chunk_len} rows in {nonempty} parts",
                            end - start
                        );
                    } else {
                        assert_eq!(start, end, "task {index}: past the chunk's parts");
                    }
                    seen.extend(
                        (first_row + start..first_row + end)
                            .map(|r| (r / CHUNK_CAPACITY, r % CHUNK_CAPACITY)),
                    );
                }
                for from in run.first..=run.end() {
                    let mut want = 0;
                    for stop in from..=run.end() {
                        assert_eq!(run.rows_of(from, stop), want, "tasks {from}..{stop}");
                        if stop < run.end() {
                            let (start, end) = run.task_rows(stop);
                            want += end - start;
                        }
                    }
                }
                assert_eq!(run.rows_of(run.end(), run.first), 0, "an empty range");
            }
            assert_eq!(spans.tasks(), 3 * spans.parts);
            let want: Vec<_> = (0..3)
                .flat_map(|c| (0..lens[c]).map(move |r| (c, r)))
                .collect();
            assert_eq!(seen, want, "rows {rows}, last chunk {len}");
        }
    }
}
