//! `each` visits archetypes in creation order, then chunks, then rows; `each_chunk` likewise.

use freyr_registry::{Entity, Registry};

struct Id(u32);
struct Extra;
struct Other;

fn storage_order(registry: &Registry) -> Vec<Entity> {
    let world = registry.world();
    let id = world.component_id::<Id>().unwrap();
    let mut out = Vec::new();
    for archetype in world.archetypes() {
        if !archetype.has(id) {
            continue;
        }
        for chunk in archetype.chunks() {
            out.extend_from_slice(chunk.entities());
        }
    }
    out
}

#[test]
fn each_follows_archetype_creation_then_chunk_then_row_order() {
    let mut registry = Registry::with_workers(1);
    // Interleave spawns across three archetypes, more than a chunk in two of them.
    let mut by_archetype: [Vec<Entity>; 3] = Default::default();
    for i in 0..1300u32 {
        match i % 3 {
            0 => by_archetype[0].push(registry.spawn((Id(i),))),
            1 => by_archetype[1].push(registry.spawn((Id(i), Extra))),
            _ => by_archetype[2].push(registry.spawn((Other, Id(i)))),
        }
    }
    let expected: Vec<Entity> = by_archetype.concat();
    let mut seen = Vec::new();
    registry.query::<&Id>().each(|e, _| seen.push(e));
    assert_eq!(seen, expected);
    assert_eq!(seen, storage_order(&registry));

    // After swap-removes the order is still storage order.
    for e in expected.iter().step_by(7) {
        registry.despawn(*e).unwrap();
    }
    let mut seen = Vec::new();
    registry.query::<&Id>().each(|e, _| seen.push(e));
    assert_eq!(seen, storage_order(&registry));

    let mut chunked = Vec::new();
    registry
        .query::<&Id>()
        .each_chunk(|entities, _| chunked.extend_from_slice(entities));
    assert_eq!(chunked, seen);
}

#[test]
fn each_order_is_the_same_for_every_worker_count() {
    let order = |workers| {
        let mut registry = Registry::with_workers(workers);
        registry.spawn_batch((0..2000u32).map(|i| (Id(i),)));
        // Parallel structural churn through commands, applied deterministically.
        registry.query::<&Id>().each_async_with(|e, id, ctx| {
            if id.0 % 5 == 0 {
                ctx.commands().insert(e, (Extra,));
            }
            if id.0 % 11 == 0 {
                ctx.commands().despawn(e);
            }
        });
        registry.execute_tasks();
        let mut seen = Vec::new();
        registry.query::<&Id>().each(|e, id| seen.push((e, id.0)));
        seen
    };
    let one = order(1);
    assert_eq!(one.len(), 2000 - 182);
    for workers in [2, 3, 8, 16, 64] {
        assert_eq!(order(workers), one, "workers = {workers}");
    }
}
