//! The async pump in the registry: results are applied inside the owning system's update only,
//! in launch order, and a result for a despawned entity is discarded (its slot's new occupant,
//! with a new generation, is never touched).

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use freyr_registry::{Entity, Phase, Registry, System};
use freyr_time::{AsyncPump, Completer, Discard, Launch};

#[derive(Debug, PartialEq)]
struct Hp(u32);

/// Records what the owner applied and discarded, and when.
#[derive(Default)]
struct Seen {
    applied: Vec<(u64, Entity, u32)>,
    discarded: Vec<(Entity, String)>,
}

/// Owns the pump; completers go out to "I/O threads" through a channel.
struct Healer {
    pump: AsyncPump<u32, Entity>,
    targets: Vec<Entity>,
    outbox: mpsc::Sender<(Entity, Completer<u32>)>,
    seen: Arc<Mutex<Seen>>,
}

impl System for Healer {
    fn update(&mut self, r: &mut Registry, _dt: f32) {
        let seen = Arc::clone(&self.seen);
        let tick = r.tick();
        r.drain_pump(
            &mut self.pump,
            |r, e, v| {
                r.get_mut::<Hp>(e).unwrap().0 = v;
                seen.lock().unwrap().applied.push((tick, e, v));
            },
            |_, e, why| seen.lock().unwrap().discarded.push((e, format!("{why:?}"))),
        );
        for &target in &self.targets {
            if let Ok(Launch::External(completer)) = self.pump.launch_external(target) {
                self.outbox.send((target, completer)).unwrap();
            }
        }
        self.targets.clear();
    }
}

#[test]
fn results_are_applied_only_in_the_owners_update_in_launch_order() {
    let mut r = Registry::with_workers(2);
    let targets: Vec<Entity> = (0..3).map(|_| r.spawn((Hp(0),))).collect();
    let (outbox, inbox) = mpsc::channel();
    let seen = Arc::new(Mutex::new(Seen::default()));
    r.add_system(
        Phase::Update,
        Healer {
            pump: AsyncPump::with_capacity(3).unwrap(),
            targets: targets.clone(),
            outbox,
            seen: Arc::clone(&seen),
        },
    );
    r.update(0.0); // tick 0: three launches
    let mut completers: Vec<_> = inbox.try_iter().collect();
    assert_eq!(completers.len(), 3);
    // Completed from other threads in reverse order, between ticks.
    completers.reverse();
    for (e, c) in completers {
        let v = 10 + e.index();
        std::thread::spawn(move || c.complete(v).unwrap())
            .join()
            .unwrap();
    }
    // Completion applied nothing: the world is unchanged until the owner's next update.
    assert!(targets.iter().all(|&e| r.get::<Hp>(e).unwrap().0 == 0));
    r.update(0.0); // tick 1: drained, in launch order
    let seen = seen.lock().unwrap();
    let order: Vec<Entity> = seen.applied.iter().map(|&(_, e, _)| e).collect();
    assert_eq!(order, targets);
    assert!(
        seen.applied
            .iter()
            .all(|&(tick, e, v)| tick == 1 && v == 10 + e.index())
    );
    assert!(
        targets
            .iter()
            .all(|&e| r.get::<Hp>(e).unwrap().0 == 10 + e.index())
    );
}

#[test]
fn a_result_for_a_despawned_entity_is_discarded_not_given_to_its_successor() {
    let mut r = Registry::with_workers(1);
    let victim = r.spawn((Hp(5),));
    let (outbox, inbox) = mpsc::channel();
    let seen = Arc::new(Mutex::new(Seen::default()));
    r.add_system(
        Phase::Update,
        Healer {
            pump: AsyncPump::new(),
            targets: vec![victim],
            outbox,
            seen: Arc::clone(&seen),
        },
    );
    r.update(0.0);
    let (_, completer) = inbox.try_recv().unwrap();
    r.despawn(victim).unwrap();
    let successor = r.spawn((Hp(7),));
    assert_eq!(successor.index(), victim.index(), "the slot is reused");
    assert_ne!(successor, victim, "with a new generation");
    completer.complete(99).unwrap();
    r.update(0.0);
    assert_eq!(
        r.get::<Hp>(successor).unwrap().0,
        7,
        "the successor is untouched"
    );
    let seen = seen.lock().unwrap();
    assert!(seen.applied.is_empty());
    assert_eq!(
        seen.discarded,
        [(victim, format!("{:?}", Discard::<u32>::TargetGone(99)))]
    );
}

#[test]
#[should_panic(expected = "only in their owning system's update")]
fn draining_outside_a_systems_update_panics() {
    let mut r = Registry::with_workers(1);
    let mut pump: AsyncPump<u32, Entity> = AsyncPump::new();
    r.drain_pump(&mut pump, |_, _, _| {}, |_, _, _| {});
}

#[test]
fn pool_work_lands_in_launch_order_on_every_worker_count() {
    for workers in [1, 2, 3, 8] {
        let mut r = Registry::with_workers(workers);
        let targets: Vec<Entity> = (0..16).map(|_| r.spawn((Hp(0),))).collect();
        let order = Arc::new(Mutex::new(Vec::new()));
        let seen_order = Arc::clone(&order);
        let mut pump: AsyncPump<u32, Entity> = AsyncPump::with_capacity(16).unwrap();
        let mut launched = false;
        r.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
            r.drain_pump(
                &mut pump,
                |r, e, v| {
                    r.get_mut::<Hp>(e).unwrap().0 = v;
                    seen_order.lock().unwrap().push(e);
                },
                |_, _, why| panic!("{why:?}"),
            );
            if !launched {
                launched = true;
                for (i, &e) in targets.iter().enumerate() {
                    pump.launch(r.pool(), e, i as u32, |i: u32| {
                        // Earlier launches finish later.
                        std::thread::sleep(std::time::Duration::from_micros(
                            u64::from(16 - i) * 200,
                        ));
                        Ok(i)
                    })
                    .unwrap();
                }
            }
        });
        while order.lock().unwrap().len() < 16 {
            r.update(0.0);
        }
        let order = order.lock().unwrap();
        let indices: Vec<u32> = order.iter().map(|&e| r.get::<Hp>(e).unwrap().0).collect();
        assert_eq!(indices, (0..16).collect::<Vec<_>>(), "{workers} workers");
    }
}
