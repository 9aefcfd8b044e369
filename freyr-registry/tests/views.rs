//! Read-only views of other entities' components and of resources, checked like any access:
//! a game server's two-pass tick (AI reads others' positions, writes only its own input).

use std::sync::Arc;

use freyr_registry::{Entity, Registry, Res, View};

#[derive(Clone, Copy, PartialEq, Debug)]
struct Pos(f32);
#[derive(Clone, Copy)]
struct Chase(Entity);
#[derive(Clone, Copy, PartialEq, Debug)]
struct Input(f32);
struct Grid(Vec<f32>);

fn world(workers: usize) -> (Registry, Vec<Entity>) {
    let mut registry = Registry::with_workers(workers);
    let es = registry.spawn_batch((0..2000u32).map(|i| (Pos(i as f32), Input(0.0))));
    for (i, e) in es.iter().enumerate() {
        registry
            .insert(*e, (Chase(es[(i + 1) % es.len()]),))
            .unwrap();
    }
    (registry, es)
}

#[test]
fn ai_pass_reads_other_entities_while_writing_its_own_input() {
    let (mut registry, es) = world(8);
    registry
        .query::<(&Pos, &Chase, &mut Input)>()
        .views::<(View<Pos>,)>()
        .each_async_with(|_, (pos, chase, input), ctx| {
            let (positions,) = ctx.views();
            input.0 = positions.get(chase.0).unwrap().0 - pos.0;
        });
    registry.execute_tasks();
    assert_eq!(registry.get::<Input>(es[0]).unwrap().0, 1.0);
    assert_eq!(registry.get::<Input>(es[1999]).unwrap().0, -1999.0);
}

#[test]
fn views_of_stale_or_missing_entities_are_none() {
    let (mut registry, es) = world(2);
    let gone = es[5];
    registry.despawn(gone).unwrap();
    let plain = registry.spawn((Input(0.0),));
    let results = Arc::new(std::sync::Mutex::new(Vec::new()));
    let r = Arc::clone(&results);
    registry
        .query::<&Input>()
        .views::<(View<Pos>,)>()
        .each_with(move |e, _, ctx| {
            if e == es[0] {
                let (positions,) = ctx.views();
                r.lock().unwrap().push((
                    positions.get(gone).is_some(),
                    positions.contains(plain),
                    positions.get(es[1]).copied(),
                ));
            }
        });
    assert_eq!(*results.lock().unwrap(), [(false, false, Some(Pos(1.0)))]);
}

#[test]
fn a_view_launch_waits_for_writers_of_the_viewed_type_and_blocks_later_writers() {
    let (mut registry, es) = world(8);
    registry
        .query::<&mut Pos>()
        .each_async(|_, p| p.0 += 1000.0);
    // Reading Pos through a view conflicts with the in-flight writer: waited for first.
    registry
        .query::<(&Chase, &mut Input)>()
        .views::<(View<Pos>,)>()
        .each_async_with(|_, (chase, input), ctx| {
            let (positions,) = ctx.views();
            input.0 = positions.get(chase.0).unwrap().0;
        });
    assert_eq!(registry.implicit_syncs(), 1);
    // A later writer of Pos waits for the view launch.
    registry.query::<&mut Pos>().each(|_, p| p.0 = 0.0);
    assert_eq!(registry.implicit_syncs(), 2);
    registry.execute_tasks();
    assert_eq!(registry.get::<Input>(es[0]).unwrap().0, 1001.0);
}

#[test]
fn resource_views_and_captured_structures_compose() {
    let (mut registry, es) = world(4);
    registry.insert_resource(Grid(vec![0.5; 4]));
    let scale = Arc::new(3.0f32); // a structure built at tick start, captured
    registry
        .query::<(&Pos, &mut Input)>()
        .views::<(Res<Grid>, View<Pos>)>()
        .each_async_with(move |e, (pos, input), ctx| {
            let (grid, positions) = ctx.views();
            assert_eq!(positions.get(e), Some(pos));
            input.0 = pos.0 * grid.0[0] * *scale;
        });
    registry.execute_tasks();
    assert_eq!(registry.get::<Input>(es[2]).unwrap().0, 3.0);
}
