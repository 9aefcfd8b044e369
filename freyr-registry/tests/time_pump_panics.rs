//! `Registry::drain_pump` under panicking callbacks and despawning applies: every settled result
//! is applied or discarded exactly once, the first panic is re-raised afterwards, and the pump's
//! counters say what the owner saw (a result discarded because its target was gone is not
//! counted as applied).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use freyr_registry::{Entity, Phase, Registry, System};
use freyr_time::{AsyncPump, Completer, Discard, Launch};

#[derive(Debug, PartialEq)]
struct Hp(u32);

/// What the owner's callbacks saw, in order.
#[derive(Default, Debug)]
struct Tally {
    applied: Vec<(Entity, u32)>,
    discarded: Vec<(Entity, String)>,
}

type Script = Box<dyn FnMut(&mut Registry, Entity, u32) + Send>;

/// Owns the pump and drains it with a scripted `apply`.
struct Owner {
    pump: AsyncPump<u32, Entity>,
    apply: Script,
    tally: Arc<Mutex<Tally>>,
}

impl System for Owner {
    fn update(&mut self, r: &mut Registry, _dt: f32) {
        let tally = Arc::clone(&self.tally);
        let discards = Arc::clone(&self.tally);
        let apply = &mut self.apply;
        r.drain_pump(
            &mut self.pump,
            |r, e, v| {
                tally.lock().unwrap().applied.push((e, v));
                apply(r, e, v);
            },
            |_, e, why| {
                discards
                    .lock()
                    .unwrap()
                    .discarded
                    .push((e, format!("{why:?}")))
            },
        );
    }
}

/// A pump with `targets.len()` launches, all completed (settled) already.
fn settled_pump(targets: &[Entity]) -> AsyncPump<u32, Entity> {
    let mut pump = AsyncPump::with_capacity(targets.len()).unwrap();
    let completers: Vec<Completer<u32>> = targets
        .iter()
        .map(|&e| match pump.launch_external(e) {
            Ok(Launch::External(c)) => c,
            _ => unreachable!("capacity fits every target"),
        })
        .collect();
    for (i, c) in completers.into_iter().enumerate() {
        c.complete(10 + i as u32).unwrap();
    }
    pump
}

fn seen(tally: &Arc<Mutex<Tally>>) -> (Vec<(Entity, u32)>, usize) {
    let t = tally.lock().unwrap();
    (t.applied.clone(), t.discarded.len())
}

#[test]
fn a_panicking_apply_loses_none_of_the_results_behind_it() {
    let mut r = Registry::with_workers(2);
    let targets: Vec<Entity> = (0..3).map(|_| r.spawn((Hp(0),))).collect();
    let tally = Arc::new(Mutex::new(Tally::default()));
    let first = targets[0];
    r.add_system(
        Phase::Update,
        Owner {
            pump: settled_pump(&targets),
            apply: Box::new(move |r, e, v| {
                if e == first {
                    panic!("apply failed for the first result");
                }
                r.get_mut::<Hp>(e).unwrap().0 = v;
            }),
            tally: Arc::clone(&tally),
        },
    );
    let caught = catch_unwind(AssertUnwindSafe(|| r.update(0.1))).unwrap_err();
    assert_eq!(
        caught.downcast_ref::<&str>(),
        Some(&"apply failed for the first result"),
        "the first panic is the one re-raised"
    );
    let (applied, discarded) = seen(&tally);
    // All three reached apply, exactly once, in launch order; none was discarded.
    assert_eq!(
        applied,
        [(targets[0], 10), (targets[1], 11), (targets[2], 12)]
    );
    assert_eq!(discarded, 0);
    assert_eq!(r.get::<Hp>(targets[1]), Ok(&Hp(11)));
    assert_eq!(r.get::<Hp>(targets[2]), Ok(&Hp(12)));
}

#[test]
fn every_apply_panicking_still_hands_every_result_over_once() {
    let mut r = Registry::with_workers(1);
    let targets: Vec<Entity> = (0..3).map(|_| r.spawn((Hp(0),))).collect();
    let tally = Arc::new(Mutex::new(Tally::default()));
    r.add_system(
        Phase::Update,
        Owner {
            pump: settled_pump(&targets),
            apply: Box::new(|_, _, v| panic!("apply {v}")),
            tally: Arc::clone(&tally),
        },
    );
    let caught = catch_unwind(AssertUnwindSafe(|| r.update(0.1))).unwrap_err();
    assert_eq!(
        caught.downcast_ref::<String>().map(String::as_str),
        Some("apply 10")
    );
    let (applied, discarded) = seen(&tally);
    assert_eq!(applied.len(), 3);
    assert_eq!(discarded, 0);
    // Nothing is left in flight to show up later: a second update applies nothing more.
    r.update(0.1);
    assert_eq!(tally.lock().unwrap().applied.len(), 3);
}

/// Applies the first result, despawning the second result's target on the way.
struct Despawner {
    pump: AsyncPump<u32, Entity>,
    victim: Entity,
    tally: Arc<Mutex<Tally>>,
    stats: Arc<Mutex<Option<freyr_time::PumpStats>>>,
}

impl System for Despawner {
    fn update(&mut self, r: &mut Registry, _dt: f32) {
        let victim = self.victim;
        let applied = Arc::clone(&self.tally);
        let discarded = Arc::clone(&self.tally);
        r.drain_pump(
            &mut self.pump,
            |r, e, v| {
                applied.lock().unwrap().applied.push((e, v));
                if r.contains(victim) {
                    r.despawn(victim).unwrap();
                }
            },
            |_, e, why| {
                discarded
                    .lock()
                    .unwrap()
                    .discarded
                    .push((e, format!("{why:?}")))
            },
        );
        *self.stats.lock().unwrap() = Some(self.pump.stats());
    }
}

#[test]
fn a_result_whose_target_an_earlier_apply_despawned_counts_as_discarded() {
    let mut r = Registry::with_workers(2);
    let targets: Vec<Entity> = (0..3).map(|_| r.spawn((Hp(0),))).collect();
    let tally = Arc::new(Mutex::new(Tally::default()));
    let stats = Arc::new(Mutex::new(None));
    r.add_system(
        Phase::Update,
        Despawner {
            pump: settled_pump(&targets),
            victim: targets[1],
            tally: Arc::clone(&tally),
            stats: Arc::clone(&stats),
        },
    );
    r.update(0.1);
    let t = tally.lock().unwrap();
    assert_eq!(t.applied, [(targets[0], 10), (targets[2], 12)]);
    assert_eq!(
        t.discarded,
        [(targets[1], format!("{:?}", Discard::<u32>::TargetGone(11)))]
    );
    let stats = stats.lock().unwrap().unwrap();
    assert_eq!(
        (stats.applied, stats.discarded, stats.stale),
        (2, 1, 1),
        "the counters say what the owner saw"
    );
}
