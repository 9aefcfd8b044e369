//! Operations defined above the world (`EntityOp`), recorded into a command buffer: they run
//! in record order with both handles resolved (pending ones included, also after `append`),
//! are skipped as stale when a handle is, report their changes to the observer in order, and a
//! panicking one stops no other command.

use std::panic::{self, AssertUnwindSafe};

use freyr_core::{AppliedCommand, BundleTypes, CommandBuffer, Entity, EntityOp, World};

/// Gives `b` a `Link(a)`.
#[derive(Debug, PartialEq)]
struct Link(Entity);

fn link(world: &mut World, a: Entity, b: Entity, changes: &mut Vec<AppliedCommand>) -> bool {
    let before = world.entity_location(b).unwrap().0;
    world.insert(b, (Link(a),)).unwrap();
    changes.push(AppliedCommand::Insert {
        entity: b,
        before,
        types: BundleTypes::of::<(Link,)>(),
    });
    true
}

fn refuse(_: &mut World, _: Entity, _: Entity, _: &mut Vec<AppliedCommand>) -> bool {
    panic!("refused")
}

static LINK: EntityOp = EntityOp {
    name: "link",
    run: link,
};
static REFUSE: EntityOp = EntityOp {
    name: "refuse",
    run: refuse,
};

#[test]
fn ops_resolve_pending_handles_also_after_append() {
    let mut world = World::new();
    let mut a = CommandBuffer::new();
    a.spawn((1u8,));
    let mut b = CommandBuffer::new();
    let x = b.spawn((2u8,));
    let y = b.spawn((3u8,));
    b.op(&LINK, x, y);
    assert_eq!(b.ops(), 1);
    a.append(&mut b);
    assert_eq!((a.ops(), b.ops()), (1, 0));
    let report = a.apply(&mut world);
    assert_eq!(a.ops(), 0);
    let [_, x, y] = report.spawned[..] else {
        panic!("three spawns")
    };
    assert_eq!(world.get::<Link>(y), Ok(&Link(x)));
    assert_eq!(report.applied, 4);
}

#[test]
fn a_stale_handle_skips_the_op() {
    let mut world = World::new();
    let a = world.spawn(());
    let b = world.spawn(());
    let mut commands = CommandBuffer::new();
    commands.despawn(a);
    commands.op(&LINK, a, b);
    commands.op(&LINK, b, a);
    let report = commands.apply(&mut world);
    assert_eq!((report.applied, report.skipped_stale), (1, 2));
    assert!(world.get::<Link>(b).is_err());
}

#[test]
fn the_observer_sees_an_ops_changes_in_order() {
    let mut world = World::new();
    let a = world.spawn(());
    let mut commands = CommandBuffer::new();
    let b = commands.spawn(());
    commands.op(&LINK, a, b);
    commands.despawn(a);
    let mut seen = Vec::new();
    let (_, panic) = commands.try_apply_observed(&mut world, &mut |_, applied| {
        seen.push(match applied {
            AppliedCommand::Spawn { .. } => "spawn",
            AppliedCommand::Insert { types, .. } if types.len() == 1 => "link",
            AppliedCommand::Insert { .. } => "insert",
            AppliedCommand::Remove { .. } => "remove",
            AppliedCommand::Despawn { .. } => "despawn",
        })
    });
    assert!(panic.is_none());
    assert_eq!(seen, ["spawn", "link", "despawn"]);
}

#[test]
fn a_panicking_op_stops_no_other_command() {
    let mut world = World::new();
    let a = world.spawn(());
    let mut commands = CommandBuffer::new();
    commands.op(&REFUSE, a, a);
    commands.spawn((String::from("after"),));
    let err = panic::catch_unwind(AssertUnwindSafe(|| commands.apply(&mut world))).unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"refused"));
    assert_eq!(world.len(), 2);
    assert!(commands.is_empty());
    assert_eq!(commands.ops(), 0);
}

#[test]
fn clear_forgets_the_ops() {
    let mut world = World::new();
    let a = world.spawn(());
    let mut commands = CommandBuffer::new();
    commands.op(&LINK, a, a);
    commands.clear();
    assert_eq!(commands.ops(), 0);
    assert_eq!(commands.apply(&mut world).applied, 0);
    assert!(world.get::<Link>(a).is_err());
}
