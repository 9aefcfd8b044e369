#![allow(dead_code)]
//! Shared by `hooks_attack.rs` and `hooks_attack_more.rs`: components, a hook log, helpers.

use std::sync::{Arc, Mutex};

use freyr::{Entity, Registry, StableHash};

#[derive(StableHash, Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct A(pub(crate) u32);
#[derive(StableHash, Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct B(pub(crate) u32);
#[derive(StableHash, Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct C(pub(crate) u32);

pub(crate) type Log = Arc<Mutex<Vec<String>>>;

/// Registers `kind` hooks that log "`kind` `name` `index`".
pub(crate) fn log_hooks<T: Send + Sync + 'static>(
    registry: &mut Registry,
    name: &'static str,
    log: &Log,
) {
    let l = log.clone();
    registry.on_add::<T>(move |e, _| l.lock().unwrap().push(format!("add {name} {}", e.index())));
    let l = log.clone();
    registry.on_insert::<T>(move |e, _| {
        l.lock()
            .unwrap()
            .push(format!("insert {name} {}", e.index()))
    });
    let l = log.clone();
    registry.on_remove::<T>(move |e, _| {
        l.lock()
            .unwrap()
            .push(format!("remove {name} {}", e.index()))
    });
}

pub(crate) fn take(log: &Log) -> Vec<String> {
    core::mem::take(&mut *log.lock().unwrap())
}

/// The entities with a `T`, in query order.
pub(crate) fn with<T: Send + Sync + 'static>(registry: &mut Registry) -> Vec<Entity> {
    let mut out = Vec::new();
    registry.query::<&T>().each(|e, _| out.push(e));
    out
}

pub(crate) fn message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => (*p.downcast::<&str>().expect("a string payload")).to_string(),
    }
}

pub(crate) fn hashes(registry: &Registry) -> u64 {
    registry.world_hash::<(A, B, C)>()
}

pub(crate) struct Part(pub(crate) &'static str);

/// ship → (turret → barrel, crew); returns them in that order.
pub(crate) fn ship(registry: &mut Registry) -> [Entity; 4] {
    let ship = registry.spawn((Part("ship"),));
    let turret = registry.spawn_child(ship, (Part("turret"),)).unwrap();
    let barrel = registry.spawn_child(turret, (Part("barrel"),)).unwrap();
    let crew = registry.spawn_child(ship, (Part("crew"),)).unwrap();
    [ship, turret, barrel, crew]
}

/// Despawns `entity` (with its subtree) by one of the three paths: `Registry::despawn` (0),
/// `destroy_entity` and a sync point (1), or a `Commands::despawn` recorded in a parallel
/// callback and applied at the sync point (2).
pub(crate) fn despawn_by(registry: &mut Registry, entity: Entity, path: u32) {
    match path {
        0 => registry.despawn(entity).unwrap(),
        1 => {
            registry.destroy_entity(entity);
            registry.execute_tasks();
        }
        _ => {
            registry.query::<&Part>().each_async_with(move |e, _, ctx| {
                if e == entity {
                    ctx.commands().despawn(e);
                }
            });
            registry.execute_tasks();
        }
    }
}
