//! Stale handles and missing components are error values, never panics, and change nothing.

use freyr_core::{CommandBuffer, ComponentError, Entity, NoSuchEntity, World};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn stale_handle_is_no_such_entity_for_every_operation() {
    let mut world = World::new();
    let e = world.spawn((1u8,));
    world.despawn(e).unwrap();
    let reused = world.spawn((2u8,));
    assert_eq!(reused.index(), e.index());

    assert_eq!(world.despawn(e), Err(NoSuchEntity(e)));
    assert_eq!(world.insert(e, (3u16,)), Err(NoSuchEntity(e)));
    assert_eq!(
        world.remove::<(u8,)>(e),
        Err(ComponentError::NoSuchEntity(e))
    );
    assert_eq!(world.get::<u8>(e), Err(ComponentError::NoSuchEntity(e)));
    assert_eq!(world.get_mut::<u8>(e), Err(ComponentError::NoSuchEntity(e)));
    assert!(!world.contains(e));
    assert_eq!(world.entity_location(e), None);
    // The new occupant was never touched.
    assert_eq!(world.get::<u8>(reused), Ok(&2));
    assert_eq!(
        world.get::<u16>(reused),
        Err(ComponentError::MissingComponent {
            entity: reused,
            component: "u16"
        })
    );
    assert_eq!(world.len(), 1);
}

#[test]
fn never_spawned_handle_is_no_such_entity() {
    let mut world = World::new();
    let ghost = Entity::from_bits((1u64 << 32) | 1000).unwrap();
    assert_eq!(world.despawn(ghost), Err(NoSuchEntity(ghost)));
    assert_eq!(
        world.get::<u8>(ghost),
        Err(ComponentError::NoSuchEntity(ghost))
    );
    world.spawn(());
    let wrong_generation = Entity::from_bits(9u64 << 32).unwrap();
    assert_eq!(
        world.despawn(wrong_generation),
        Err(NoSuchEntity(wrong_generation))
    );
    assert_eq!(world.len(), 1);
}

#[test]
fn insert_into_stale_entity_drops_the_bundle() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let e = world.spawn(());
    world.despawn(e).unwrap();
    assert_eq!(
        world.insert(e, (Counted(drops.clone()),)),
        Err(NoSuchEntity(e))
    );
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn missing_component_names_the_type_and_changes_nothing() {
    let mut world = World::new();
    let e = world.spawn((1u8, 2u32));
    assert_eq!(
        world.get::<String>(e),
        Err(ComponentError::MissingComponent {
            entity: e,
            component: "alloc::string::String"
        })
    );
    assert_eq!(
        world.get_mut::<u16>(e),
        Err(ComponentError::MissingComponent {
            entity: e,
            component: "u16"
        })
    );
    let before = world.entity_location(e);
    assert_eq!(
        world.remove::<(u8, u16)>(e),
        Err(ComponentError::MissingComponent {
            entity: e,
            component: "u16"
        }),
        "the first missing component of the bundle is named"
    );
    assert_eq!(world.entity_location(e), before);
    assert_eq!(world.get::<u8>(e), Ok(&1));
    assert_eq!(world.get::<u32>(e), Ok(&2));
    let message = world.get::<u16>(e).unwrap_err().to_string();
    assert_eq!(
        message,
        format!("entity {e} has no component of type `u16`")
    );
}

#[test]
fn pending_handles_are_stale_outside_their_buffer() {
    let mut world = World::new();
    let mut first = CommandBuffer::new();
    let pending = first.spawn((1u8,));
    assert_eq!(world.despawn(pending), Err(NoSuchEntity(pending)));
    let mut second = CommandBuffer::new();
    second.insert(pending, (2u16,));
    let report = second.apply(&mut world);
    assert_eq!((report.applied, report.skipped_stale), (0, 1));
    assert!(world.is_empty());
}

#[test]
fn command_buffer_skips_and_counts_stale_targets() {
    let mut world = World::new();
    let alive = world.spawn((1u8,));
    let dead = world.spawn((2u8,));
    world.despawn(dead).unwrap();
    let mut commands = CommandBuffer::new();
    commands.insert(dead, (5u16,));
    commands.remove::<(u8,)>(dead);
    commands.despawn(dead);
    commands.remove::<(u16,)>(alive); // missing, not stale
    commands.insert(alive, (6u16,));
    let report = commands.apply(&mut world);
    assert_eq!(
        (report.applied, report.skipped_stale, report.skipped_missing),
        (1, 3, 1)
    );
    assert_eq!(world.get::<u16>(alive), Ok(&6));
    // The slot's new occupant is never touched by commands aimed at the old handle.
    let occupant = world.spawn((9u8,));
    assert_eq!(occupant.index(), dead.index());
    let mut commands = CommandBuffer::new();
    commands.despawn(dead);
    assert_eq!(commands.apply(&mut world).skipped_stale, 1);
    assert!(world.contains(occupant));
}

#[test]
fn errors_name_the_entity_they_were_given() {
    let mut world = World::new();
    let kept = world.spawn((1u8,));
    let gone = world.spawn((2u8,));
    world.despawn(gone).unwrap();
    let gone_text = format!("entity {gone} does not exist");
    assert_eq!(gone.to_string(), "1v1");

    let despawned = world.despawn(gone).unwrap_err();
    assert_eq!(despawned.entity(), gone);
    assert!(despawned.to_string().starts_with(&gone_text), "{despawned}");
    let inserted = world.insert(gone, (3u16,)).unwrap_err();
    assert!(inserted.to_string().starts_with(&gone_text), "{inserted}");
    for err in [
        world.get::<u8>(gone).unwrap_err(),
        world.get_mut::<u8>(gone).unwrap_err(),
        world.remove::<(u8,)>(gone).map(|_| ()).unwrap_err(),
    ] {
        assert_eq!(err.entity(), gone);
        assert!(err.to_string().starts_with(&gone_text), "{err}");
    }
    for err in [
        world.get::<u16>(kept).unwrap_err(),
        world.get_mut::<u16>(kept).unwrap_err(),
        world.remove::<(u16,)>(kept).map(|_| ()).unwrap_err(),
    ] {
        assert_eq!(err.entity(), kept);
        assert_eq!(err.to_string(), "entity 0v1 has no component of type `u16`");
    }
    assert_eq!(
        ComponentError::from(despawned),
        ComponentError::NoSuchEntity(gone)
    );
}
