//! `each_async` over many matched archetypes (some emptied, some spanning several chunks): every
//! chunk runs exactly once, tasks see the right chunk's columns and entities, and per-chunk
//! results combine in (archetype creation order, chunk, row) order for every worker count —
//! with one task per chunk and with chunks split by `rows_per_task`.

use freyr_core::{CHUNK_CAPACITY, Entity};
use freyr_registry::Registry;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Val(u64);
struct Hits(u32);
struct B;
struct C;
struct D;

/// A registry whose `(Val, Hits)` query matches six archetypes, two of them empty (their
/// entities were despawned), with chunk counts from 1 to 3.
fn build(workers: usize) -> Registry {
    let mut registry = Registry::with_workers(workers);
    let mut next = 0u64;
    let mut spawn = |registry: &mut Registry, n: usize, kind: u8| {
        let mut out = Vec::new();
        for _ in 0..n {
            let base = (Val(next), Hits(0));
            next += 1;
            out.push(match kind {
                0 => registry.spawn(base),
                1 => registry.spawn((base.0, base.1, B)),
                2 => registry.spawn((base.0, base.1, C)),
                3 => registry.spawn((base.0, base.1, B, C)),
                4 => registry.spawn((base.0, base.1, D)),
                _ => registry.spawn((base.0, base.1, B, D)),
            });
        }
        out
    };
    spawn(&mut registry, 2 * CHUNK_CAPACITY + 7, 0);
    for e in spawn(&mut registry, 40, 1) {
        registry.despawn(e).unwrap();
    }
    spawn(&mut registry, 1, 2);
    spawn(&mut registry, CHUNK_CAPACITY, 3);
    for e in spawn(&mut registry, CHUNK_CAPACITY + 1, 4) {
        registry.despawn(e).unwrap();
    }
    spawn(&mut registry, CHUNK_CAPACITY + 3, 5);
    registry
}

fn sequential_order(registry: &mut Registry) -> Vec<(Entity, u64)> {
    let mut order = Vec::new();
    registry.query::<&Val>().each(|e, v| order.push((e, v.0)));
    order
}

/// Rows per task: the default (one task per chunk), splits that divide a chunk evenly and not,
/// and one row per task.
/// ThreadSanitizer (`--cfg freyr_tsan`) splits at 9 rows where the native run splits at one:
/// tasks of a few rows race the same way, at a ninth of its per-task cost.
const SPLITS: [usize; 4] = [
    CHUNK_CAPACITY,
    64,
    100,
    if cfg!(freyr_tsan) { 9 } else { 1 },
];

/// Worker counts. ThreadSanitizer (`--cfg freyr_tsan`, CI's TSan step) checks the runs that have
/// threads to race: one worker runs every task inline on the caller.
const WORKERS: &[usize] = if cfg!(freyr_tsan) {
    &[2, 8]
} else {
    &[1, 2, 3, 8]
};

/// Which part of its chunk row `row` is in, the chunk holding `len` rows split at most `rows` a
/// task: `len.div_ceil(rows)` parts of near-equal length, in row order (`rows_per_task`'s
/// layout, written out independently of the code that makes it).
fn part_of(row: u64, len: u64, rows: u64) -> u64 {
    let parts = len.div_ceil(rows);
    (0..parts)
        .find(|k| row < (k + 1) * len / parts)
        .expect("a row of the chunk is in one of its parts")
}

#[test]
fn a_split_chunk_has_near_equal_parts_in_row_order() {
    // 488 rows at 64 a task: 8 parts of 61.
    assert_eq!(part_of(60, 488, 64), 0);
    assert_eq!(part_of(61, 488, 64), 1);
    assert_eq!(part_of(487, 488, 64), 7);
    // 512 rows at 100: 6 parts of 85 or 86 rather than 5 of 100 and one of 12.
    assert_eq!(part_of(511, 512, 100), 5);
    assert_eq!(part_of(84, 512, 100), 0);
    assert_eq!(part_of(85, 512, 100), 1);
}

#[test]
fn each_async_runs_every_row_of_every_matched_chunk_once() {
    for (workers, rows) in WORKERS.iter().flat_map(|&w| SPLITS.map(|r| (w, r))) {
        let mut registry = build(workers);
        registry
            .query::<(&Val, &mut Hits)>()
            .rows_per_task(rows)
            .each_async(|_, (_, hits)| hits.0 += 1);
        registry.execute_tasks();
        let mut rows = 0;
        let mut all_once = true;
        registry.query::<&Hits>().each(|_, h| {
            rows += 1;
            all_once &= h.0 == 1;
        });
        assert!(
            all_once,
            "workers {workers}, rows {rows}: a row ran zero or several times"
        );
        assert_eq!(
            rows,
            2 * CHUNK_CAPACITY + 7 + 1 + CHUNK_CAPACITY + CHUNK_CAPACITY + 3
        );
    }
}

#[test]
fn chunk_results_combine_in_archetype_chunk_row_order() {
    for (workers, rows) in WORKERS.iter().flat_map(|&w| SPLITS.map(|r| (w, r))) {
        let mut registry = build(workers);
        let expected = sequential_order(&mut registry);
        let got = registry
            .query::<(Entity, &Val)>()
            .rows_per_task(rows)
            .each_async_reduce(
                Vec::new,
                |mut acc, e, (e2, v)| {
                    assert_eq!(e, e2, "the entity column belongs to the chunk being run");
                    acc.push((e, v.0));
                    acc
                },
                |mut a, b| {
                    a.extend(b);
                    a
                },
            )
            .join(&mut registry);
        assert_eq!(got, expected, "workers {workers}, rows {rows}");
    }
}

#[test]
fn commands_apply_in_archetype_chunk_row_order() {
    let spawned_values = |workers: usize, rows: usize| {
        let mut registry = build(workers);
        let expected: Vec<u64> = sequential_order(&mut registry)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        registry
            .query::<&Val>()
            .rows_per_task(rows)
            .each_async_with(|_, v, ctx| {
                ctx.commands().spawn((Val(v.0 + 1_000_000),));
            });
        registry.execute_tasks();
        let mut spawned = Vec::new();
        registry.query::<&Val>().each(|_, v| {
            if v.0 >= 1_000_000 {
                spawned.push(v.0 - 1_000_000);
            }
        });
        assert_eq!(spawned.len(), expected.len());
        assert_eq!(spawned, expected, "workers {workers}, rows {rows}");
    };
    for &workers in WORKERS {
        for rows in SPLITS {
            spawned_values(workers, rows);
        }
    }
}

#[test]
fn rows_per_task_sets_the_task_count_from_chunks_alone() {
    // Chunks: 3 + 0 + 1 + 1 + 0 + 2 = 7 non-empty chunks in `build`.
    for (rows, per_chunk) in [(CHUNK_CAPACITY, 1), (4096, 1), (64, 8), (100, 6), (1, 512)] {
        for workers in [1, 3] {
            let mut registry = build(workers);
            let before = registry.profile().tasks;
            registry
                .query::<&mut Hits>()
                .rows_per_task(rows)
                .each_async(|_, h| h.0 += 1);
            registry.execute_tasks();
            assert_eq!(
                registry.profile().tasks - before,
                7 * per_chunk,
                "rows {rows}, workers {workers}"
            );
        }
    }
}

#[test]
#[should_panic(expected = "rows_per_task(0)")]
fn zero_rows_per_task_is_rejected() {
    let mut registry = Registry::with_workers(1);
    let _ = registry.query::<&Val>().rows_per_task(0);
}

/// Marks a command recorded by the callback of row `.0`.
struct Echo(u64);

/// Pool threads run a batch of neighbouring tasks of one slab with one kernel call. A panic in
/// one task must still skip only the rest of that task's rows and discard only that task's
/// commands: tasks batched with it, before and after, run and keep their commands. 40 chunks of
/// one archetype span several slabs, so batches cross chunk (and slab) boundaries.
#[test]
fn a_panic_skips_only_the_rest_of_its_own_task_inside_a_batch() {
    const N: u64 = 40 * CHUNK_CAPACITY as u64 - 17;
    let c = CHUNK_CAPACITY as u64;
    // Rows whose callback panics: mid-chunk, first and last row of a chunk, in the short last
    // chunk, and two in one chunk.
    let panics = [
        5 * c + 100,
        6 * c,
        20 * c + 511,
        33 * c + 7,
        33 * c + 300,
        N - 3,
    ];
    for (workers, rows) in WORKERS.iter().flat_map(|&w| SPLITS.map(|r| (w, r))) {
        let mut registry = Registry::with_workers(workers);
        registry.spawn_batch((0..N).map(|i| (Val(i), Hits(0))));
        // The task of row `i`, and whether its callback runs: not after a panicking row of the
        // same task.
        let task = |i: u64| (i / c, part_of(i % c, c.min(N - i / c * c), rows as u64));
        let runs = |i: u64| !panics.iter().any(|&p| task(p) == task(i) && p < i);
        let kept = |i: u64| !panics.iter().any(|&p| task(p) == task(i));

        registry
            .query::<(&Val, &mut Hits)>()
            .rows_per_task(rows)
            .each_async(move |_, (val, hits)| {
                hits.0 += 1;
                assert!(!panics.contains(&val.0), "row {} fails", val.0);
            });
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| registry.execute_tasks()));
        assert!(outcome.is_err(), "workers {workers}, rows {rows}");
        let mut wrong = Vec::new();
        registry.query::<(&Val, &Hits)>().each(|_, (v, h)| {
            if h.0 != u32::from(runs(v.0)) {
                wrong.push((v.0, h.0));
            }
        });
        assert!(
            wrong.is_empty(),
            "workers {workers}, rows {rows}: (row, runs) {:?}",
            &wrong[..wrong.len().min(8)]
        );

        registry
            .query::<&Val>()
            .rows_per_task(rows)
            .each_async_with(move |_, val, ctx| {
                ctx.commands().spawn((Echo(val.0),));
                assert!(!panics.contains(&val.0), "row {} fails", val.0);
            });
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| registry.execute_tasks()));
        assert!(outcome.is_err(), "workers {workers}, rows {rows}");
        let mut echoes = Vec::new();
        registry.query::<&Echo>().each(|_, e| echoes.push(e.0));
        let want: Vec<u64> = (0..N).filter(|&i| kept(i)).collect();
        assert_eq!(echoes.len(), want.len(), "workers {workers}, rows {rows}");
        assert_eq!(echoes, want, "workers {workers}, rows {rows}: spawn order");
        registry.world().check_invariants();
    }
}
