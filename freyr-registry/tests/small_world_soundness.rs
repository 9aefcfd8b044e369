//! A small world (two chunks) driven through every unsafe path at once: sized for Miri
//! (`cargo +nightly miri test -p freyr-query --test small_world_soundness`), and a quick
//! regression check otherwise.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use freyr_core::CHUNK_CAPACITY;
use freyr_registry::{Entity, Registry, Res, View};

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Vel(f32);
#[derive(Clone, Copy)]
struct Link(Entity);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Seen(f32);
struct Scale(f32);
struct Tag;

const N: u32 = 600; // two chunks

fn world(workers: usize) -> (Registry, Vec<Entity>) {
    let mut registry = Registry::with_workers(workers);
    let es = registry.spawn_batch((0..N).map(|i| (Pos(i as f32), Vel(1.0))));
    for (i, e) in es.iter().enumerate().step_by(3) {
        registry
            .insert(*e, (Link(es[(i + 1) % es.len()]), Seen(0.0)))
            .unwrap();
    }
    registry.insert_resource(Scale(2.0));
    (registry, es)
}

#[test]
fn overlapping_launches_views_commands_and_direct_access() {
    let (mut registry, es) = world(3);
    // Writer of Pos in flight.
    registry
        .query::<(&mut Pos, &Vel)>()
        .each_async(|_, (p, v)| p.0 += v.0);
    // Disjoint synchronous write while it runs.
    registry.query::<&mut Vel>().each(|_, v| v.0 *= 2.0);
    // View launch: waits for the Pos writer first, then reads others' positions.
    registry
        .query::<(&Link, &mut Seen)>()
        .views::<(View<Pos>, Res<Scale>)>()
        .each_async_with(|e, (link, seen), ctx| {
            let (positions, scale) = ctx.views();
            seen.0 = positions.get(link.0).unwrap().0 * scale.0;
            if seen.0 > 1000.0 {
                ctx.commands().insert(e, (Tag,));
            }
        });
    // Disjoint direct access while the view launch runs.
    *registry.get_mut::<Vel>(es[0]).unwrap() = Vel(9.0);
    assert_eq!(registry.get::<Vel>(es[1]).unwrap().0, 2.0);
    registry.execute_tasks();
    assert_eq!(registry.get::<Seen>(es[0]).unwrap().0, 4.0);
    // Linked entities are i = 0, 3, …; Seen = 2 (i + 2) > 1000 for i in 501..=597.
    assert_eq!(registry.query::<&Tag>().count(), 33);
    registry.world().check_invariants();
}

#[test]
fn panics_reductions_and_drop_with_work_in_flight() {
    let (mut registry, _) = world(2);
    registry.query::<&Pos>().each_async_with(|_, p, ctx| {
        ctx.commands().spawn((Tag,));
        assert!(p.0 != 5.0, "row 5");
    });
    assert!(catch_unwind(AssertUnwindSafe(|| registry.execute_tasks())).is_err());
    // The chunk holding Pos(5.0) (the first of the 400 unlinked entities: all of them in 512-row
    // chunks, 64 under Miri) is discarded; every other chunk's commands apply.
    assert_eq!(
        registry.query::<&Tag>().count(),
        N as usize - CHUNK_CAPACITY.min(400)
    );
    let sum = registry
        .query::<&Pos>()
        .each_async_reduce(|| 0.0f64, |a, _, p| a + f64::from(p.0), |a, b| a + b)
        .join(&mut registry);
    assert_eq!(sum, f64::from(N * (N - 1) / 2));
    let counter = Arc::new(AtomicU32::new(0));
    let c = Arc::clone(&counter);
    registry.query::<&mut Pos>().each_async(move |_, p| {
        p.0 += 1.0;
        c.fetch_add(1, Ordering::Relaxed);
    });
    drop(registry); // waits for the tasks before freeing the world
    assert_eq!(counter.load(Ordering::Relaxed), N);
}

#[test]
fn registry_moved_while_a_view_launch_is_in_flight() {
    let (mut registry, es) = world(3);
    registry
        .query::<(&Link, &mut Seen)>()
        .views::<(View<Pos>,)>()
        .each_async_with(|_, (link, seen), ctx| {
            let (positions,) = ctx.views();
            seen.0 = positions.get(link.0).unwrap().0;
        });
    let mut moved = Box::new(registry); // the world does not move with the registry
    moved.execute_tasks();
    assert_eq!(moved.get::<Seen>(es[3]).unwrap().0, 4.0);
}

#[test]
fn split_chunks_and_out_of_line_row_loops() {
    let (mut registry, es) = world(3);
    // 600 rows = 512 + 88: with 100-row tasks, chunk 0 is 6 tasks (the last of 12 rows) and
    // chunk 1 is one task of 88 rows plus five empty ones.
    registry
        .query::<(&mut Pos, &Vel)>()
        .rows_per_task(100)
        .each_async(|_, (p, v)| p.0 += v.0);
    registry
        .query::<(&Link, &mut Seen)>()
        .views::<(View<Pos>,)>()
        .rows_per_task(7)
        .each_async_with(|e, (link, seen), ctx| {
            let (positions,) = ctx.views();
            seen.0 = positions.get(link.0).unwrap().0;
            if seen.0 > 590.0 {
                ctx.commands().insert(e, (Tag,));
            }
        });
    let sum = registry
        .query::<&Pos>()
        .rows_per_task(64)
        .each_async_reduce(|| 0.0f64, |a, _, p| a + f64::from(p.0), |a, b| a + b)
        .join(&mut registry);
    assert_eq!(sum, f64::from(N * (N - 1) / 2 + N));
    // The synchronous loops walk the same rows out of line.
    let mut rows = 0;
    registry.query::<&mut Pos>().each(|_, p| {
        p.0 -= 1.0;
        rows += 1;
    });
    let mut seen = Vec::new();
    registry
        .query::<(&Pos, &Seen)>()
        .each_chunk(|entities, (pos, s)| {
            assert_eq!(entities.len(), pos.len());
            seen.extend(pos.iter().zip(s).map(|(p, s)| (p.0, s.0)));
        });
    assert_eq!(rows, N);
    assert_eq!(seen.len(), es.len().div_ceil(3));
    // Entity i (Pos i again after the `each`) links to i + 1, whose Pos was i + 2 when the view
    // read it.
    assert!(seen.iter().all(|&(p, s)| s == p + 2.0));
    // The view launch's commands apply at the sync point: linked i = 0, 3, …, 597 with
    // Seen = i + 2 > 590 are i = 591, 594, 597.
    registry.execute_tasks();
    assert_eq!(registry.query::<&Tag>().count(), 3);
    registry.world().check_invariants();
}

#[test]
fn same_type_writers_on_disjoint_archetypes_overlap() {
    use freyr_registry::{With, Without};
    // Archetypes (Pos, Vel) and (Pos, Vel, Link, Seen): writers of `Pos` split by `Link` may run
    // at once, touching different chunks (Miri's race detector checks that they do).
    let (mut registry, _) = world(3);
    registry
        .query_filtered::<&mut Pos, With<Link>>()
        .each_async(|_, p| p.0 += 1.0);
    registry
        .query_filtered::<&mut Pos, Without<Link>>()
        .each_async(|_, p| p.0 -= 1.0);
    registry
        .query_filtered::<(&mut Pos, &Vel), Without<Link>>()
        .each(|_, (p, v)| p.0 += 2.0 * v.0);
    assert_eq!(
        registry.implicit_syncs(),
        1,
        "only the two Without<Link> writers meet"
    );
    // A reader of every `Pos` waits for the rest.
    let mut sum = 0.0f64;
    registry.query::<&Pos>().each(|_, p| sum += f64::from(p.0));
    registry.execute_tasks();
    let linked = N.div_ceil(3);
    let base: f64 = (0..N).map(f64::from).sum();
    assert_eq!(sum, base + f64::from(linked) + f64::from(N - linked));
}

#[test]
fn each_reuses_its_runs_only_while_the_layout_holds() {
    // `each` keeps its runs' column pointers between calls while no `&mut World` was handed out.
    // Reused: after `get_mut` and an overlapping launch on another column; re-read: after a
    // structural change moved rows (and reallocated the destination archetype's chunks).
    let (mut registry, es) = world(2);
    let sum = |registry: &mut Registry| {
        let mut sum = 0.0f64;
        registry.query::<(&mut Pos, &Vel)>().each(|_, (p, v)| {
            p.0 += v.0;
            sum += f64::from(p.0);
        });
        sum
    };
    let base: f64 = (0..N).map(f64::from).sum();
    assert_eq!(sum(&mut registry), base + f64::from(N));
    registry.get_mut::<Pos>(es[5]).unwrap().0 += 100.0;
    registry.query::<&mut Seen>().each_async(|_, s| s.0 += 1.0);
    assert_eq!(sum(&mut registry), base + f64::from(2 * N) + 100.0);
    for e in es.iter().step_by(2) {
        registry.insert(*e, (Tag,)).unwrap();
    }
    registry.despawn(es[1]).unwrap();
    let removed = f64::from(1 + 3);
    assert_eq!(
        sum(&mut registry),
        base + f64::from(3 * N) + 100.0 - removed
    );
    registry.execute_tasks();
    registry.world().check_invariants();
}
