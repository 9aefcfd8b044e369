//! An `Entity` inside a component crosses with its entity: the zone's export remaps it
//! through the registry's remap hook when both entities leave in the same batch, and the
//! hook's rule decides what a reference to an entity left behind becomes.

use freyr::persist::EntityMap;
use freyr::{Entity, Phase, Registry};
use freyr_zone::{InProcessBus, Zone, ZoneConfig, ZoneDigest, ZoneId, ZoneRules};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct X(f32);
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Key(u64);
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Leader(Option<Entity>);

/// x below 50 is zone 0, the rest zone 1.
struct Line;

impl ZoneRules for Line {
    type Place = X;
    fn owner(&self, x: &X) -> ZoneId {
        u32::from(x.0 >= 50.0)
    }
    fn digest(&self, registry: &mut Registry) -> ZoneDigest {
        let mut d = ZoneDigest::default();
        registry
            .query::<(&Key, &X)>()
            .each(|_, (k, x)| d.add(k.0, u64::from(x.0.to_bits())));
        d
    }
}

fn registry() -> Registry {
    let mut r = Registry::with_workers(1);
    r.register_persistent::<X>("test.x", 1);
    r.register_persistent::<Key>("test.key", 1);
    r.register_persistent_with_remap::<Leader>("test.leader", 1, |l, map: &EntityMap| {
        l.0 = l.0.and_then(|e| map.get(e));
    });
    r.add_system(Phase::Update, |r: &mut Registry, _dt: f32| {
        r.query::<&mut X>().each(|_, x| x.0 += 1.0);
    });
    r
}

#[test]
fn a_leader_and_its_wingman_cross_together_and_a_reference_left_behind_is_dropped() {
    let bus = InProcessBus::new(2);
    let mut west = registry();
    let leader = west.spawn((X(48.5), Key(1), Leader(None)));
    west.spawn((X(48.0), Key(2), Leader(Some(leader))));
    // Key 3 follows the leader but stays behind; key 4 is followed by one that leaves.
    let stays = west.spawn((X(10.0), Key(4), Leader(None)));
    west.spawn((X(47.5), Key(3), Leader(Some(stays))));
    let config = |z| {
        let mut c = ZoneConfig::new(z, 2);
        c.lookahead = 1;
        c
    };
    let mut zones = [
        Zone::new(west, bus.clone(), Line, config(0)).unwrap(),
        Zone::new(registry(), bus.clone(), Line, config(1)).unwrap(),
    ];
    // Tick 1 moves keys 1 and 2 past 50 (48.5 + 2, 48 + 2), key 3 the tick after.
    for _ in 0..4 {
        for zone in &mut zones {
            zone.step().unwrap();
        }
    }
    let east = zones[1].registry_mut();
    let mut by_key = std::collections::HashMap::new();
    east.query::<(&Key, &Leader)>().each(|e, (k, l)| {
        by_key.insert(k.0, (e, *l));
    });
    assert_eq!(by_key.len(), 3, "keys 1, 2 and 3 crossed");
    let (leader_now, _) = by_key[&1];
    assert_eq!(
        by_key[&2].1,
        Leader(Some(leader_now)),
        "remapped to the leader's new id"
    );
    assert_eq!(
        by_key[&3].1,
        Leader(None),
        "its leader stayed west: the hook dropped it"
    );
    assert_eq!(zones[0].registry().len(), 1);
}
