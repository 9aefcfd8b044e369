//! Commands from `each_with` / `each_async_with`: applied at the next sync point in (launch,
//! chunk, row, record) order; stale entities are skipped and counted.

use freyr_registry::{Entity, Registry};

#[derive(Clone, Copy, Debug, PartialEq)]
struct Id(u32);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Spawned(u32);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Marked;

#[test]
fn async_commands_apply_in_launch_chunk_row_order_for_every_worker_count() {
    let run = |workers| {
        let mut registry = Registry::with_workers(workers);
        registry.spawn_batch((0..1500u32).map(|i| (Id(i),)));
        // Launch 1: every 3rd entity spawns a child (two commands per row: spawn then insert).
        registry.query::<&Id>().each_async_with(|_, id, ctx| {
            if id.0 % 3 == 0 {
                let child = ctx.commands().spawn((Spawned(id.0),));
                ctx.commands().insert(child, (Marked,));
            }
        });
        // Launch 2 (synchronous, after launch 1): one spawn.
        registry.query::<&Id>().each_with(|_, id, ctx| {
            if id.0 == 0 {
                ctx.commands().spawn((Spawned(9999),));
            }
        });
        registry.execute_tasks();
        let mut spawned = Vec::new();
        registry
            .query::<(Entity, &Spawned, Option<&Marked>)>()
            .each(|_, (e, s, m)| spawned.push((e, s.0, m.is_some())));
        spawned
    };
    let one = run(1);
    assert_eq!(one.len(), 501);
    // Spawn order: launch 1 rows in order, then launch 2.
    let mut by_id: Vec<_> = one.clone();
    by_id.sort_by_key(|(e, _, _)| (e.index(), e.generation()));
    let values: Vec<u32> = by_id.iter().map(|s| s.1).collect();
    let mut expected: Vec<u32> = (0..1500).filter(|i| i % 3 == 0).collect();
    expected.push(9999);
    assert_eq!(values, expected);
    assert!(one.iter().filter(|s| s.1 != 9999).all(|s| s.2));
    for workers in [2, 3, 8, 16, 64] {
        assert_eq!(run(workers), one, "workers = {workers}");
    }
}

#[test]
fn insert_and_remove_commands_change_archetypes_at_the_sync_point() {
    let mut registry = Registry::with_workers(4);
    let es = registry.spawn_batch((0..1000u32).map(|i| (Id(i),)));
    registry.query::<&Id>().each_async_with(|e, id, ctx| {
        if id.0 % 2 == 0 {
            ctx.commands().insert(e, (Marked,));
        }
    });
    assert_eq!(registry.query::<&Marked>().count(), 0);
    registry.execute_tasks();
    assert_eq!(registry.query::<&Marked>().count(), 500);
    registry
        .query::<(&Id, &Marked)>()
        .each_async_with(|e, (id, _), ctx| {
            if id.0 % 4 == 0 {
                ctx.commands().remove::<(Marked,)>(e);
            }
        });
    registry.execute_tasks();
    assert_eq!(registry.query::<&Marked>().count(), 250);
    assert!(registry.get::<Marked>(es[2]).is_ok());
    assert!(registry.get::<Marked>(es[4]).is_err());
    registry.world().check_invariants();
}

#[test]
fn stale_entities_in_commands_are_skipped_and_counted() {
    let mut registry = Registry::with_workers(3);
    let es = registry.spawn_batch((0..600u32).map(|i| (Id(i),)));
    let victim = es[10];
    // Every row despawns the same victim: the first applies, the other 599 are stale; inserts
    // into the victim after its despawn are stale too.
    registry.query::<&Id>().each_async_with(move |_, _, ctx| {
        ctx.commands().despawn(victim);
        ctx.commands().insert(victim, (Marked,));
    });
    registry.execute_tasks();
    assert!(!registry.contains(victim));
    let report = registry.profile();
    assert_eq!(report.commands_applied, 1);
    assert_eq!(report.stale_commands, 599 + 600);

    // A handle whose slot was reused names nobody: the new occupant is untouched.
    let newcomer = registry.spawn((Id(7777),));
    assert_eq!(newcomer.index(), victim.index());
    registry.query::<&Id>().each_with(move |_, _, ctx| {
        ctx.commands().insert(victim, (Spawned(1),));
    });
    registry.destroy_entity(victim);
    registry.execute_tasks();
    assert!(registry.get::<Spawned>(newcomer).is_err());
    assert!(registry.contains(newcomer));
    let report = registry.profile();
    assert_eq!(report.stale_commands, 599 + 600 + 600 + 1);
    assert_eq!(report.destroyed, 0);
    registry.world().check_invariants();
}

#[test]
fn pending_handles_work_within_their_chunk_only() {
    let mut registry = Registry::with_workers(2);
    registry.spawn_batch((0..600u32).map(|i| (Id(i),)));
    let leaked = std::sync::Arc::new(std::sync::Mutex::new(None));
    let l = std::sync::Arc::clone(&leaked);
    registry.query::<&Id>().each_async_with(move |_, id, ctx| {
        if id.0 == 0 {
            let p = ctx.commands().spawn((Spawned(0),));
            ctx.commands().insert(p, (Marked,));
            *l.lock().unwrap() = Some(p);
        }
    });
    registry.execute_tasks();
    assert_eq!(registry.query::<(&Spawned, &Marked)>().count(), 1);
    // A pending used in a later launch names nothing.
    let p = leaked.lock().unwrap().unwrap();
    registry.query::<&Id>().each_with(move |_, id, ctx| {
        if id.0 == 0 {
            ctx.commands().despawn(p);
        }
    });
    registry.execute_tasks();
    assert_eq!(registry.query::<&Spawned>().count(), 1);
    assert_eq!(registry.profile().stale_commands, 1);
}

#[test]
fn destroy_entity_is_deferred_and_runs_after_commands() {
    let mut registry = Registry::with_workers(2);
    let a = registry.spawn((Id(1),));
    registry.destroy_entity(a);
    registry.query::<&Id>().each_with(|e, _, ctx| {
        ctx.commands().insert(e, (Marked,)); // applied first, then the destruction
    });
    assert!(registry.contains(a));
    registry.execute_tasks();
    assert!(!registry.contains(a));
    let report = registry.profile();
    assert_eq!((report.commands_applied, report.destroyed), (1, 1));
}

#[test]
fn structural_registry_calls_between_launches_keep_commands_pending() {
    let mut registry = Registry::with_workers(4);
    registry.spawn_batch((0..100u32).map(|i| (Id(i),)));
    registry.query::<&Id>().each_async_with(|_, id, ctx| {
        if id.0 == 0 {
            ctx.commands().spawn((Spawned(1),));
        }
    });
    let direct = registry.spawn((Spawned(2),)); // waits for the launch, applies nothing
    assert_eq!(registry.query::<&Spawned>().count(), 1);
    registry.execute_tasks();
    assert_eq!(registry.query::<&Spawned>().count(), 2);
    assert!(registry.contains(direct));
}
