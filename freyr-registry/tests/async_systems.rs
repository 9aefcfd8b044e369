//! Seed 001's worked example as an `AsyncSystem`: path planning with capacity-1 coalescing.
//! Movers ask for a path (`PathRequest`); the planner collects every unplanned request on the
//! tick, plans them off the tick (on a planner thread that completes the launch, or on the
//! pool), and applies the plans in its own update, skipping movers that died mid-flight.
//!
//! - determinism: the world hash and the batch sizes are the same for 1, 2, 3 and 8 workers
//!   when the planner thread completes its work at fixed ticks;
//! - coalescing: while a batch is in flight new requests wait, and the next batch takes them
//!   all at once;
//! - nothing lost: a panicking `process` is discarded as a panic, a panicking `apply` does not
//!   stop the results behind it, and the tallies add up (every launch applied or discarded
//!   exactly once, every live request planned in the end).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use freyr_registry::{
    AsyncSystem, Entity, Launched, Phase, Process, Registry, StableHash, StableHasher, Without,
};
use freyr_time::{Completer, Discard};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pos {
    x: i32,
    y: i32,
}
struct PathRequest {
    to: (i32, i32),
}
struct PathPlan {
    points: Vec<(i32, i32)>,
    step: usize,
}

impl StableHash for Pos {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.x.stable_hash(h);
        self.y.stable_hash(h);
    }
}
impl StableHash for PathPlan {
    fn stable_hash(&self, h: &mut StableHasher) {
        (self.points.len() as u64).stable_hash(h);
        for &(x, y) in &self.points {
            x.stable_hash(h);
            y.stable_hash(h);
        }
        (self.step as u64).stable_hash(h);
    }
}

/// One mover's query, stamped with its entity (a generation-checked handle).
struct Query {
    entity: Entity,
    from: (i32, i32),
    to: (i32, i32),
}

/// An L-shaped path: x first, then y.
fn plan(from: (i32, i32), to: (i32, i32)) -> Vec<(i32, i32)> {
    let mut points = Vec::new();
    let (mut x, mut y) = from;
    while x != to.0 {
        x += (to.0 - x).signum();
        points.push((x, y));
    }
    while y != to.1 {
        y += (to.1 - y).signum();
        points.push((x, y));
    }
    points
}

fn plan_all(batch: &[Query]) -> Paths {
    batch
        .iter()
        .map(|q| (q.entity, plan(q.from, q.to)))
        .collect()
}

/// The planner's answer: a path per mover.
type Paths = Vec<(Entity, Vec<(i32, i32)>)>;

/// What the planner did (a resource).
#[derive(Default)]
struct Tally {
    /// The size of every batch launched, in launch order.
    batches: Vec<usize>,
    /// Launches handed to `apply`, and to `discard` (with the reason).
    applied: usize,
    discarded: Vec<String>,
    /// Plans skipped because the mover died mid-flight.
    dead: usize,
}

/// A planner thread's inbox: work to complete, or "complete everything now".
enum ToPlanner {
    Plan(Arc<Vec<Query>>, Completer<Paths, String>),
    Flush(Sender<()>),
}

/// A thread that completes launches only when flushed, so results land at fixed ticks.
fn planner_thread() -> Sender<ToPlanner> {
    let (tx, rx): (Sender<ToPlanner>, Receiver<ToPlanner>) = mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for message in rx {
            match message {
                ToPlanner::Plan(batch, done) => held.push((batch, done)),
                ToPlanner::Flush(ack) => {
                    for (batch, done) in held.drain(..) {
                        let _ = done.complete(plan_all(&batch));
                    }
                    let _ = ack.send(());
                }
            }
        }
    });
    tx
}

/// Where the planner's `process` runs.
enum Planner {
    /// On the planner thread (through a completer).
    Thread(Sender<ToPlanner>),
    /// On the pool; the batch containing `poison` panics.
    Pool { poison: Option<Entity> },
}

struct PathPlanner {
    planner: Planner,
    /// `apply` panics the first time it is called.
    panic_first_apply: bool,
}

impl AsyncSystem for PathPlanner {
    type Request = Vec<Query>;
    type Result = Paths;
    type Error = String;

    fn collect(&mut self, r: &mut Registry) -> Option<Vec<Query>> {
        let mut batch = Vec::new();
        r.query_filtered::<(&Pos, &PathRequest), Without<PathPlan>>()
            .each(|entity, (pos, request)| {
                batch.push(Query {
                    entity,
                    from: (pos.x, pos.y),
                    to: request.to,
                });
            });
        if batch.is_empty() {
            return None;
        }
        r.resource_mut::<Tally>().unwrap().batches.push(batch.len());
        Some(batch)
    }

    fn process(&mut self, batch: Arc<Vec<Query>>) -> Process<Self::Result, String> {
        match &mut self.planner {
            Planner::Thread(tx) => {
                let tx = tx.clone();
                Process::elsewhere(move |done| {
                    tx.send(ToPlanner::Plan(batch, done)).unwrap();
                })
            }
            Planner::Pool { poison } => {
                let poisoned = poison.is_some_and(|p| batch.iter().any(|q| q.entity == p));
                if poisoned {
                    *poison = None; // once
                }
                Process::on_pool(move || {
                    assert!(!poisoned, "the planner choked on a poisoned map");
                    Ok(plan_all(&batch))
                })
            }
        }
    }

    fn apply(&mut self, r: &mut Registry, paths: Self::Result, launched: &Launched<Vec<Query>>) {
        assert!(
            launched.tick < r.tick(),
            "applied on a later tick than launched"
        );
        r.resource_mut::<Tally>().unwrap().applied += 1;
        if self.panic_first_apply {
            self.panic_first_apply = false;
            panic!("apply failed for the launch of tick {}", launched.tick);
        }
        for (entity, points) in paths {
            if !r.contains(entity) {
                r.resource_mut::<Tally>().unwrap().dead += 1; // died mid-flight
                continue;
            }
            r.insert(entity, (PathPlan { points, step: 0 },)).unwrap();
        }
    }

    fn discard(
        &mut self,
        r: &mut Registry,
        why: Discard<Self::Result, String>,
        _: &Launched<Vec<Query>>,
    ) {
        let reason = match why {
            Discard::Panicked(p) => format!("panicked: {}", p.message()),
            other => format!("{other:?}").chars().take(24).collect(),
        };
        r.resource_mut::<Tally>().unwrap().discarded.push(reason);
    }
}

fn mix(e: Entity, tick: u64) -> u64 {
    let mut z = e.to_bits() ^ (tick << 40) ^ 0x5eed;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Movers follow their plans (in parallel); some spawn new requesters, some die.
fn world(workers: usize, planner: PathPlanner) -> Registry {
    let mut registry = Registry::with_workers(workers);
    registry.insert_resource(Tally::default());
    registry.spawn_batch((0..600i32).map(|i| {
        (
            Pos {
                x: i % 40,
                y: i / 40,
            },
            PathRequest {
                to: ((i * 7) % 40, (i * 3) % 15),
            },
        )
    }));
    registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        let tick = r.tick();
        r.query::<(&mut Pos, &mut PathPlan)>()
            .with_label("Follow")
            .each_async_with(move |e, (pos, plan), ctx| {
                if let Some(&(x, y)) = plan.points.get(plan.step) {
                    *pos = Pos { x, y };
                    plan.step += 1;
                }
                let roll = mix(e, tick);
                let cmds = ctx.commands();
                // New requests until tick 40.
                if tick < 40 && roll.is_multiple_of(37) {
                    cmds.spawn((
                        *pos,
                        PathRequest {
                            to: ((roll % 40) as i32, (roll % 15) as i32),
                        },
                    ));
                }
            });
    });
    registry.add_async_system(Phase::Update, planner);
    // Some movers still waiting for their path die (their plans are then skipped).
    registry.add_system(Phase::PostUpdate, |r: &mut Registry, _: f32| {
        let tick = r.tick();
        r.query_filtered::<&PathRequest, Without<PathPlan>>()
            .each_async_with(move |e, _, ctx| {
                if mix(e, tick).is_multiple_of(23) {
                    ctx.commands().despawn(e);
                }
            });
    });
    registry
}

/// Runs `ticks` ticks, flushing the planner thread after every third; returns the world hash,
/// the tally and the registry.
fn run_on_thread(workers: usize, ticks: u64) -> (u64, Tally, Registry) {
    let tx = planner_thread();
    let mut registry = world(
        workers,
        PathPlanner {
            planner: Planner::Thread(tx.clone()),
            panic_first_apply: false,
        },
    );
    for tick in 0..ticks {
        registry.update(1.0 / 60.0);
        if tick % 3 == 2 {
            let (ack, acked) = mpsc::channel();
            tx.send(ToPlanner::Flush(ack)).unwrap();
            acked.recv().unwrap();
        }
    }
    let hash = registry.world_hash::<(Pos, PathPlan)>();
    let tally = registry.remove_resource::<Tally>().unwrap();
    registry.insert_resource(Tally::default());
    (hash, tally, registry)
}

#[test]
fn path_planning_coalesces_and_is_the_same_for_1_2_3_and_8_workers() {
    let (hash, tally, mut registry) = run_on_thread(1, 30);
    // Capacity 1: one launch at a time. Launched at tick 0, completed at the flush after tick 2,
    // applied at tick 3; the next launch waits for it, and takes every request made meanwhile.
    assert_eq!(tally.batches[0], 600);
    assert!(tally.batches.len() >= 5, "{:?}", tally.batches);
    // Coalescing: the requests spawned while a batch was in flight go out together.
    assert!(
        tally.batches[1..].iter().all(|&n| n > 1),
        "{:?}",
        tally.batches
    );
    assert_eq!(tally.applied, tally.batches.len() - 1); // the last is still in flight
    assert!(tally.discarded.is_empty());
    assert!(tally.dead > 0, "no mover died mid-flight");
    // Every mover that asked before the last launch and lived has its plan.
    let mut planned = 0;
    registry.query::<&PathPlan>().each(|_, _| planned += 1);
    assert!(planned >= 600 - tally.dead);
    // The orderly end: the launch in flight goes to discard.
    assert_eq!(registry.settle_systems(), 1);
    let late = registry.remove_resource::<Tally>().unwrap();
    assert_eq!(late.discarded.len(), 1);
    for workers in [2, 3, 8] {
        let (other, other_tally, _) = run_on_thread(workers, 30);
        assert_eq!(other, hash, "{workers} workers: the world differs");
        assert_eq!(other_tally.batches, tally.batches, "{workers} workers");
        assert_eq!(other_tally.dead, tally.dead, "{workers} workers");
    }
}

/// Ticks until every live mover has a plan (the pool does the work; its timing varies).
fn run_until_planned(registry: &mut Registry) -> usize {
    let mut panics = 0;
    let start = Instant::now();
    loop {
        if catch_unwind(AssertUnwindSafe(|| registry.update(1.0 / 60.0))).is_err() {
            panics += 1;
        }
        let mut waiting = 0;
        registry
            .query_filtered::<&PathRequest, Without<PathPlan>>()
            .each(|_, _| waiting += 1);
        let spawning = registry.tick() <= 40;
        if waiting == 0 && !spawning {
            return panics;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "planning never finished"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

#[test]
fn a_panicking_process_or_apply_loses_nothing() {
    for workers in [1, 2, 3, 8] {
        // The first batch (every mover, the first spawned among them) poisons the planner; its
        // retry fails in apply. Both requests are regenerated from the world by later collects.
        let first = Registry::with_workers(1).spawn((Pos { x: 0, y: 0 },));
        let mut registry = world(
            workers,
            PathPlanner {
                planner: Planner::Pool {
                    poison: Some(first),
                },
                panic_first_apply: true,
            },
        );
        let panics = run_until_planned(&mut registry);
        registry.settle_systems();
        let tally = registry.resource::<Tally>().unwrap();
        assert_eq!(
            panics, 1,
            "{workers} workers: apply's panic is re-raised once"
        );
        assert_eq!(
            tally.discarded,
            ["panicked: the planner choked on a poisoned map"],
            "{workers} workers"
        );
        // Every launch reached apply or discard exactly once.
        assert_eq!(
            tally.applied + tally.discarded.len(),
            tally.batches.len(),
            "{workers} workers"
        );
        assert_eq!(tally.batches[0], 600);
        assert!(tally.batches.len() >= 3, "{:?}", tally.batches);
        let mut unplanned = 0;
        registry
            .query_filtered::<&PathRequest, Without<PathPlan>>()
            .each(|_, _| unplanned += 1);
        assert_eq!(unplanned, 0, "{workers} workers: a request was lost");
    }
}

/// A capacity-3 system whose launches settle together: a panicking `apply` of the first does
/// not stop the two behind it, which are applied in launch order in the same update.
struct Echo {
    outbox: Arc<Mutex<Vec<Completer<u64, String>>>>,
}

impl AsyncSystem for Echo {
    type Request = u64;
    type Result = u64;
    type Error = String;

    fn collect(&mut self, r: &mut Registry) -> Option<u64> {
        (r.tick() < 3).then(|| r.tick())
    }

    fn process(&mut self, _: Arc<u64>) -> Process<u64, String> {
        let outbox = Arc::clone(&self.outbox);
        Process::elsewhere(move |done| outbox.lock().unwrap().push(done))
    }

    fn apply(&mut self, r: &mut Registry, value: u64, launched: &Launched<u64>) {
        assert_eq!(*launched.request, launched.tick);
        r.resource_mut::<Vec<u64>>().unwrap().push(value);
        if value == 100 {
            panic!("the first result does not fit");
        }
    }

    fn capacity(&self) -> usize {
        3
    }
}

#[test]
fn a_panicking_apply_does_not_stop_the_results_behind_it() {
    let outbox = Arc::new(Mutex::new(Vec::new()));
    let mut registry = Registry::with_workers(2);
    registry.insert_resource(Vec::<u64>::new());
    registry.add_async_system(
        Phase::Update,
        Echo {
            outbox: Arc::clone(&outbox),
        },
    );
    for _ in 0..3 {
        registry.update(0.1); // three launches, none settled
    }
    let completers: Vec<_> = outbox.lock().unwrap().drain(..).collect();
    assert_eq!(completers.len(), 3);
    // Completed in reverse order from another thread; delivered in launch order.
    std::thread::spawn(move || {
        for (i, done) in completers.into_iter().enumerate().rev() {
            done.complete(100 + i as u64).unwrap();
        }
    })
    .join()
    .unwrap();
    let payload = catch_unwind(AssertUnwindSafe(|| registry.update(0.1))).unwrap_err();
    assert_eq!(
        payload.downcast_ref::<&str>().copied(),
        Some("the first result does not fit")
    );
    assert_eq!(registry.resource::<Vec<u64>>().unwrap(), &[100, 101, 102]);
    assert_eq!(registry.settle_systems(), 0);
}
