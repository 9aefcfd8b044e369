//! Change ticks and the `filter_changed` / `filter_added` query filters: what they visit after a
//! `get_mut`, spawns, inserts and swap-removes; stamps identical for 1, 2, 3 and 8 workers after
//! a mixed run; 64-bit ticks past `u32::MAX` and near `u64::MAX / 2`; and a rollback that
//! restores the stamps, so the filters after a restore and re-simulation equal the
//! uninterrupted run's.

use freyr::storage::CHUNK_CAPACITY;
use freyr::{Entity, Phase, Registry, With, World, mix};

const WORKERS: &[usize] = if cfg!(miri) { &[1, 3] } else { &[1, 2, 3, 8] };
const N: u64 = if cfg!(miri) { 600 } else { 6000 };
/// Rows per chunk (512; 64 under Miri).
const C: usize = CHUNK_CAPACITY;
const TICKS: u64 = if cfg!(miri) { 4 } else { 10 };

#[derive(Clone, Copy, Debug, PartialEq)]
struct Hp(u32);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(u64);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Marked;

/// One stamp: (archetype, chunk, column, changed, added).
type Stamp = (usize, usize, usize, u64, u64);
/// The entities of the chunks a filter visited, chunk by chunk.
type Visited = Vec<Vec<Entity>>;

/// Every stamp of the world, in order.
fn stamps(world: &World) -> Vec<Stamp> {
    let mut out = Vec::new();
    for (a, arch) in world.archetypes().iter().enumerate() {
        for chunk in 0..arch.chunk_count() {
            for column in 0..arch.components().len() {
                let ticks = (
                    arch.changed_tick(chunk, column),
                    arch.added_tick(chunk, column),
                );
                out.push((a, chunk, column, ticks.0, ticks.1));
            }
        }
    }
    out
}

/// The entities of the chunks `Changed<Hp>` since `since` visits, chunk by chunk.
fn changed_hp(r: &mut Registry, since: u64) -> Visited {
    let mut chunks = Vec::new();
    r.query::<&Hp>()
        .filter_changed::<Hp>(since)
        .each_chunk(|entities, _| chunks.push(entities.to_vec()));
    chunks
}

/// The entities of the chunks `Added<Pos>` since `since` visits.
fn added_pos(r: &mut Registry, since: u64) -> Visited {
    let mut chunks = Vec::new();
    r.query::<&Pos>()
        .filter_added::<Pos>(since)
        .each_chunk(|entities, _| chunks.push(entities.to_vec()));
    chunks
}

#[test]
fn after_one_get_mut_changed_visits_only_that_entitys_chunk() {
    let mut r = Registry::with_workers(2);
    let ids = r.spawn_batch((0..N).map(|i| (Hp(i as u32), Pos(i))));
    r.update(0.0);
    assert_eq!(r.tick(), 1);
    assert!(
        changed_hp(&mut r, 0).is_empty(),
        "nothing written since tick 0"
    );
    let target = ids[ids.len() * 2 / 3];
    r.get_mut::<Hp>(target).unwrap().0 += 1;
    let visited = changed_hp(&mut r, 0);
    assert_eq!(visited.len(), 1);
    assert!(visited[0].contains(&target));
    let (_, chunk, _) = r.world().entity_location(target).unwrap();
    assert_eq!(visited[0].len(), C.min(ids.len() - chunk * C));
    // The write is not a change of another component, nor one after tick 1.
    let mut pos_chunks = 0;
    r.query::<&Pos>()
        .filter_changed::<Pos>(0)
        .each_chunk(|_, _| pos_chunks += 1);
    assert_eq!(pos_chunks, 0);
    assert!(changed_hp(&mut r, 1).is_empty());
    // A `&mut Hp` query stamps every chunk it visits; one filtered by a change stamps only the
    // chunks it visits.
    r.update(0.0);
    let mut rows = 0;
    r.query::<&mut Hp>().filter_changed::<Hp>(0).each(|_, hp| {
        hp.0 += 1;
        rows += 1;
    });
    assert_eq!(rows, visited[0].len());
    assert_eq!(changed_hp(&mut r, 1), visited);
}

#[test]
fn added_after_spawn_insert_and_a_swap_remove_that_moves_a_row() {
    let mut r = Registry::with_workers(1);
    // Full chunks and a last one with 88 rows, all added at tick 0.
    let ids = r.spawn_batch((0..C as u64 + 88).map(|i| (Pos(i),)));
    r.update(0.0);
    assert!(added_pos(&mut r, 0).is_empty());
    // Spawn at tick 1: lands in the last chunk.
    let spawned = r.spawn((Pos(1000),));
    let added = added_pos(&mut r, 0);
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].last(), Some(&spawned));
    r.update(0.0);
    // Insert at tick 2 into an entity of chunk 0: it moves to the (Pos, Marked) archetype (a
    // new chunk there) and the last row of the last chunk fills its hole in chunk 0.
    let moved_away = ids[10];
    r.insert(moved_away, (Marked,)).unwrap();
    let added = added_pos(&mut r, 1);
    assert_eq!(added.len(), 2, "the hole's chunk and the landing chunk");
    assert!(
        added[0].contains(&spawned),
        "the last row filled the hole in chunk 0"
    );
    assert_eq!(added[0].len(), C);
    assert_eq!(added[1], [moved_away]);
    // The last chunk lost a row but received none: not added.
    r.update(0.0);
    // A despawn at tick 3 whose hole the last row fills.
    r.despawn(ids[0]).unwrap();
    let added = added_pos(&mut r, 2);
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].len(), C);
    // Despawning the last row moves nothing: no chunk gains a row.
    r.update(0.0);
    let world = r.world();
    let arch = world.archetype(world.entity_location(ids[1]).unwrap().0);
    let last = *arch
        .chunk(arch.chunk_count() - 1)
        .entities()
        .last()
        .unwrap();
    r.despawn(last).unwrap();
    assert!(added_pos(&mut r, 3).is_empty());
}

/// A mixed run: `each_async` writes on some chunks, commands that spawn, insert (row moves) and
/// despawn (hole fills), a `get_mut`, and a filtered async pass. Returns the final stamps and
/// what the filters visited each tick.
fn mixed_run(workers: usize) -> (Vec<Stamp>, Vec<Visited>) {
    let mut r = Registry::with_workers(workers);
    r.spawn_batch((0..N).map(|i| (Hp(100), Pos(i))));
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        let tick = r.tick();
        r.query::<(&mut Hp, &Pos)>()
            .each_async_with(move |e, (hp, pos), ctx| {
                let key = mix(u64::from(e.index()) ^ (tick << 32));
                if key.is_multiple_of(50) {
                    hp.0 = hp.0.saturating_sub(1);
                }
                if key % 97 == 1 {
                    ctx.commands().despawn(e);
                } else if key % 89 == 2 {
                    ctx.commands().insert(e, (Marked,));
                }
                if key % 101 == 3 {
                    ctx.commands().spawn((Hp(50), Pos(pos.0 + 1)));
                }
            });
    });
    r.add_system(Phase::PostUpdate, |r: &mut Registry, _: f32| {
        let since = r.tick().saturating_sub(1);
        r.query_filtered::<&mut Pos, With<Marked>>()
            .filter_added::<Marked>(since)
            .each_async(|_, p| p.0 += 1);
        let world = r.world();
        let last = world.archetypes().iter().rev().find(|a| !a.is_empty());
        if let Some(e) = last.map(|a| a.chunk(0).entities()[0]) {
            r.get_mut::<Pos>(e).unwrap().0 += 1;
        }
    });
    let mut visits = Vec::new();
    for _ in 0..TICKS {
        r.update(0.0);
        // Stamps of the tick that just ran (`tick() - 1`) are after `tick() - 2`.
        let since = r.tick().saturating_sub(2);
        visits.push(changed_hp(&mut r, since));
        visits.push(added_pos(&mut r, since));
    }
    (stamps(r.world()), visits)
}

#[test]
fn stamps_and_filters_are_identical_for_every_worker_count() {
    let (stamps_1, visits_1) = mixed_run(1);
    assert!(
        stamps_1.iter().any(|s| s.3 == TICKS - 1),
        "the last tick stamped something"
    );
    assert!(visits_1.iter().any(|v| !v.is_empty()));
    for &workers in &WORKERS[1..] {
        let (stamps, visits) = mixed_run(workers);
        assert_eq!(stamps, stamps_1, "stamps on {workers} workers");
        assert_eq!(visits, visits_1, "filters on {workers} workers");
    }
}

#[test]
fn ticks_past_u32_max_and_near_u64_max_half_compare_without_wrapping() {
    for base in [u64::from(u32::MAX), u64::MAX / 2] {
        let mut world = World::new();
        world.set_change_tick(base);
        let ids = world.spawn_batch((0..1500).map(|i| (Hp(i),)));
        world.set_change_tick(base + 1);
        world.get_mut::<Hp>(ids[1200]).unwrap().0 = 0;
        let (arch, chunk, _) = world.entity_location(ids[1200]).unwrap();
        assert_eq!(world.archetype(arch).changed_tick(chunk, 0), base + 1);
        assert_eq!(world.archetype(arch).changed_tick(0, 0), base);
        let mut r = Registry::with_workers(2);
        *r.world_mut() = world;
        let visited = changed_hp(&mut r, base);
        assert_eq!(visited.len(), 1, "base {base}");
        assert!(visited[0].contains(&ids[1200]));
        assert_eq!(changed_hp(&mut r, base - 1).len(), 1500usize.div_ceil(C));
        assert!(changed_hp(&mut r, base + 1).is_empty());
    }
}

/// The registry of the rollback test: `Hp` written by a few entities per tick through
/// `get_mut`, a few despawns and spawns through commands (so most chunks stay unchanged).
fn rollback_registry() -> Registry {
    let mut r = Registry::with_workers(3);
    r.register_snapshot_copy::<Hp>();
    r.register_snapshot_copy::<Pos>();
    r.register_snapshot_copy::<Marked>();
    r.spawn_batch((0..N).map(|i| (Hp(100), Pos(i))));
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        let tick = r.tick();
        let mut hit = Vec::new();
        r.query::<Entity>().each(|e, _| {
            if mix(u64::from(e.index()) ^ (tick << 32)).is_multiple_of(1500) {
                hit.push(e);
            }
        });
        for e in hit {
            r.get_mut::<Hp>(e).unwrap().0 -= 1;
        }
        r.query::<&Pos>().each_async_with(move |e, _, ctx| {
            let key = mix(u64::from(e.index()).wrapping_add(tick));
            if key.is_multiple_of(3000) {
                ctx.commands().despawn(e);
            } else if key % 2900 == 1 {
                ctx.commands().spawn((Hp(7), Pos(key)));
            }
        });
    });
    r
}

/// Steps `r` to tick `to`, recording what the filters visit after each tick.
fn record(r: &mut Registry, to: u64) -> Vec<(Visited, Visited)> {
    let mut out = Vec::new();
    while r.tick() < to {
        r.update(0.0);
        let since = r.tick().saturating_sub(2);
        out.push((changed_hp(r, since), added_pos(r, since)));
    }
    out
}

#[test]
#[cfg_attr(
    miri,
    ignore = "what it adds is a logic property (after a rollback the filters see what the \
              uninterrupted run saw), run natively; under Miri the stamps are written by this \
              file's other tests and restored with the rest of the world by snapshot_rollback's"
)]
fn a_rollback_restores_the_stamps_and_the_filters_equal_the_uninterrupted_run() {
    let split = TICKS / 2;
    let mut straight = rollback_registry();
    let before = record(&mut straight, split);
    let stamps_at_split = stamps(straight.world());
    let after = record(&mut straight, TICKS);
    assert!(
        after
            .iter()
            .all(|(changed, added)| !changed.is_empty() && !added.is_empty())
    );
    assert!(
        after
            .iter()
            .any(|(changed, _)| changed.len() < (N as usize).div_ceil(C))
    );

    let mut rolled = rollback_registry();
    assert_eq!(record(&mut rolled, split), before);
    let snapshot = rolled.snapshot().unwrap();
    record(&mut rolled, TICKS);
    rolled.restore(&snapshot).unwrap();
    assert_eq!(rolled.tick(), split);
    assert_eq!(
        stamps(rolled.world()),
        stamps_at_split,
        "a restore stamps nothing"
    );
    // Nothing looks changed or added at the restored tick that was not in the original run.
    assert!(changed_hp(&mut rolled, split - 1).is_empty());
    assert_eq!(record(&mut rolled, TICKS), after);
    assert_eq!(stamps(rolled.world()), stamps(straight.world()));
}

#[test]
fn filtered_async_runs_visit_the_same_chunks_as_each_with_and_without_a_row_split() {
    let mut r = Registry::with_workers(3);
    // At least five chunks.
    let ids = r.spawn_batch((0..N.max(4 * C as u64 + 52)).map(|i| (Hp(i as u32), Pos(i))));
    r.update(0.0);
    // Change chunks 1 and 3 and the last one: separate runs of passing chunks.
    let last = ids.len() - 1;
    for &i in &[C + C * 11 / 64, 3 * C + C / 8, last] {
        r.get_mut::<Hp>(ids[i]).unwrap().0 += 1;
    }
    let mut expected = Vec::new();
    r.query::<(Entity, &Hp)>()
        .filter_changed::<Hp>(0)
        .each(|_, (e, _)| expected.push(e));
    assert_eq!(expected.len(), 2 * C + (ids.len() - 1) % C + 1);
    for rows in [C, 100] {
        let got = r
            .query::<(Entity, &Hp)>()
            .filter_changed::<Hp>(0)
            .rows_per_task(rows)
            .each_async_reduce(
                Vec::new,
                |mut acc, _, (e, _)| {
                    acc.push(e);
                    acc
                },
                |mut a, b| {
                    a.extend(b);
                    a
                },
            )
            .join(&mut r);
        assert_eq!(got, expected, "rows per task {rows}");
    }
    // A `&mut` async pass over the changed chunks stamps only those.
    r.update(0.0);
    r.query::<&mut Hp>()
        .filter_changed::<Hp>(0)
        .each_async(|_, hp| hp.0 += 1);
    r.execute_tasks();
    assert_eq!(changed_hp(&mut r, 1).concat(), expected);
}

/// The changed tick of `T`'s column in every chunk of every archetype that has `T`.
fn changed_ticks_of<T: freyr::Component>(world: &World) -> Vec<u64> {
    let id = world.component_id::<T>().expect("registered");
    let mut out = Vec::new();
    for arch in world.archetypes() {
        if let Some(column) = arch.column_index(id) {
            out.extend((0..arch.chunk_count()).map(|chunk| arch.changed_tick(chunk, column)));
        }
    }
    out
}

#[test]
fn unfiltered_each_and_each_async_stamp_every_chunk_of_the_written_columns_only() {
    for &workers in WORKERS {
        let mut r = Registry::with_workers(workers);
        r.spawn_batch((0..N).map(|i| (Pos(i), Hp(1))));
        r.spawn_batch((0..N).map(|i| (Pos(i), Hp(2), Marked)));
        let spawned = r.tick();
        r.update(0.0);
        let launch = r.tick();
        assert!(launch > spawned);
        r.query::<(&mut Hp, &Pos)>()
            .each_async(|_, (hp, _)| hp.0 += 1);
        r.execute_tasks();
        let hp = changed_ticks_of::<Hp>(r.world());
        assert!(
            hp.len() >= 4,
            "{workers} workers: several chunks per archetype"
        );
        assert!(hp.iter().all(|&t| t == launch), "{workers} workers: {hp:?}");
        let pos = changed_ticks_of::<Pos>(r.world());
        assert!(
            pos.iter().all(|&t| t == spawned),
            "{workers} workers: {pos:?}"
        );
        r.update(0.0);
        let each = r.tick();
        r.query::<&mut Pos>().each(|_, p| p.0 += 1);
        let pos = changed_ticks_of::<Pos>(r.world());
        assert!(pos.iter().all(|&t| t == each), "{workers} workers: {pos:?}");
        assert!(
            changed_ticks_of::<Hp>(r.world())
                .iter()
                .all(|&t| t == launch)
        );
    }
}

#[test]
fn a_repeated_unfiltered_each_stamps_each_ticks_tick_and_the_chunks_added_since() {
    // `each` keeps where the written columns' ticks are for as long as the world's layout is
    // unchanged: a tick that passes without a structural change must still stamp its own tick,
    // and rows spawned into new chunks or a new archetype must be stamped from then on.
    let mut r = Registry::with_workers(1);
    r.spawn_batch((0..N).map(|i| (Pos(i), Hp(1))));
    r.spawn_batch((0..20).map(|i| (Pos(i), Hp(2), Marked)));
    for round in 0..3u64 {
        for _ in 0..2 {
            r.update(0.0);
            let tick = r.tick();
            r.query::<&mut Hp>().each(|_, hp| hp.0 += 1);
            let hp = changed_ticks_of::<Hp>(r.world());
            assert!(hp.iter().all(|&t| t == tick), "round {round}: {hp:?}");
            let pos = changed_ticks_of::<Pos>(r.world());
            assert!(pos.iter().all(|&t| t < tick), "round {round}: {pos:?}");
        }
        let before = changed_ticks_of::<Hp>(r.world()).len();
        r.spawn_batch((0..C as u64 + 88).map(|i| (Pos(i), Hp(3))));
        if round == 1 {
            r.spawn_batch((0..5).map(|i| (Hp(4), Pos(i), Marked, round)));
        }
        assert!(changed_ticks_of::<Hp>(r.world()).len() > before);
    }
}
