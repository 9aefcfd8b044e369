//! The two ways to drive a registry's tick, in the style a server uses: the registry's own loop
//! (`set_fixed_step` + `run_frame`, sleeping `time_until_next_tick`) and a hand-driven loop (a
//! `FixedStep` of the caller's, one `update` per tick it hands out). In both, `tick()` numbers
//! the ticks, deadline jobs are applied at exactly T + K, an entity pump drains inside its
//! system, the governor steps from `last_tick`, and the tick profiler's records are numbered by
//! the simulation tick and carry the load factor.

use std::time::Duration;

use freyr_registry::{Entity, Phase, Registry, System, TickProfileConfig};
use freyr_time::{AsyncPump, Delivered, FixedStep, ManualClock};

struct Hp(u64);

/// What the systems saw, per tick (a resource).
#[derive(Default, Debug, PartialEq)]
struct Log {
    /// (tick applied, tick requested, value).
    deadline: Vec<(u64, u64, u64)>,
    /// (tick drained, value).
    pumped: Vec<(u64, u64)>,
    /// Ticks the governor system saw the previous tick of.
    stepped_from: Vec<u64>,
}

/// A system that owns a pump: launches one job per tick (capacity 1), drains the last.
struct Pumper {
    pump: AsyncPump<u64, Entity>,
    target: Entity,
}

impl System for Pumper {
    fn update(&mut self, r: &mut Registry, _dt: f32) {
        r.drain_pump(
            &mut self.pump,
            |r, e, value| {
                r.get_mut::<Hp>(e).unwrap().0 += value;
                let tick = r.tick();
                r.resource_mut::<Log>().unwrap().pumped.push((tick, value));
            },
            |_, _, why| panic!("{why:?}"),
        );
        if self.pump.is_ready() {
            let tick = r.tick();
            self.pump
                .launch(r.pool(), self.target, tick, |t: u64| Ok(t * 10))
                .unwrap();
        }
    }
}

fn server(workers: usize) -> (Registry, Entity) {
    let mut registry = Registry::with_workers(workers);
    let target = registry.spawn((Hp(0),));
    registry.insert_resource(Log::default());
    registry
        .add_deadline_jobs(2, |r: &mut Registry, done: Delivered<(u64, u64)>| {
            let (requested, value) = done.result.unwrap();
            let tick = r.tick();
            r.resource_mut::<Log>()
                .unwrap()
                .deadline
                .push((tick, requested, value));
        })
        .unwrap();
    registry.add_system(Phase::PreUpdate, |r: &mut Registry, _: f32| {
        if let Some(last) = r.last_tick() {
            assert_eq!(last.tick + 1, r.tick());
            r.resource_mut::<Log>()
                .unwrap()
                .stepped_from
                .push(last.tick);
            // A stand-in governor: shed half the optional work on odd ticks.
            let lf = if r.tick() % 2 == 1 { 0.5 } else { 1.0 };
            r.set_load_factor(lf);
        }
    });
    registry.add_system(
        Phase::Update,
        Pumper {
            pump: AsyncPump::new(),
            target,
        },
    );
    registry.add_system(Phase::PostUpdate, |r: &mut Registry, _: f32| {
        let tick = r.tick();
        r.request_job(tick, |t: u64| (t, t * t)).unwrap();
    });
    registry.enable_tick_profile(TickProfileConfig::default());
    (registry, target)
}

/// What any loop of `ticks` ticks must have produced.
fn check(registry: &mut Registry, target: Entity, ticks: u64) {
    assert_eq!(registry.tick(), ticks);
    assert_eq!(registry.last_tick().unwrap().tick, ticks - 1);
    let log = registry.remove_resource::<Log>().unwrap();
    let expect_deadline: Vec<(u64, u64, u64)> =
        (2..ticks).map(|t| (t, t - 2, (t - 2) * (t - 2))).collect();
    assert_eq!(log.deadline, expect_deadline);
    assert_eq!(log.stepped_from, (0..ticks - 1).collect::<Vec<_>>());
    // One worker: the pump's work is done at launch, so each tick drains the previous launch.
    if registry.workers() == 1 {
        let expect: Vec<(u64, u64)> = (1..ticks).map(|t| (t, (t - 1) * 10)).collect();
        assert_eq!(log.pumped, expect);
    } else {
        assert!(
            log.pumped.windows(2).all(|w| w[0].1 < w[1].1),
            "launch order"
        );
        assert!(log.pumped.iter().all(|&(at, v)| at * 10 > v));
    }
    let pumped: u64 = log.pumped.iter().map(|&(_, v)| v).sum();
    assert_eq!(registry.get::<Hp>(target).unwrap().0, pumped);
    let profile = registry.tick_profile().unwrap();
    let numbered: Vec<u64> = profile.records().map(|r| r.tick).collect();
    assert_eq!(numbered, (0..ticks).collect::<Vec<_>>());
    let lf: Vec<f64> = profile.records().map(|r| r.load_factor).collect();
    let expect_lf: Vec<f64> = (0..ticks)
        .map(|t| if t % 2 == 1 { 0.5 } else { 1.0 })
        .collect();
    assert_eq!(lf, expect_lf);
    // The orderly end: the jobs due after the last tick, then the pumps (none in systems that
    // own an `AsyncSystem` here; the plain pump is settled by dropping its system).
    assert_eq!(registry.settle_jobs(), 2);
    assert_eq!(registry.settle_systems(), 0);
}

#[test]
fn the_registrys_own_loop_sleeps_until_the_next_tick_and_runs_everything() {
    for workers in [1, 3] {
        let (mut registry, target) = server(workers);
        let clock = ManualClock::new();
        let dt = Duration::from_secs(1) / 60;
        registry.set_fixed_step(dt, clock.clone()).unwrap();
        let mut slept = Vec::new();
        while registry.tick() < 12 {
            // Sleep until the next tick is due (the manual clock stands in for the sleep).
            let nap = registry.time_until_next_tick().unwrap();
            slept.push(nap);
            clock.advance(nap);
            let frame = registry.run_frame();
            assert_eq!(frame.ran, 1, "woken exactly when one tick was due");
        }
        assert!(slept.iter().all(|&nap| nap == dt), "{slept:?}");
        assert_eq!(registry.dropped_ticks(), 0);
        check(&mut registry, target, 12);
    }
}

#[test]
fn time_until_next_tick_counts_the_time_the_frame_took() {
    let mut registry = Registry::with_workers(1);
    let clock = ManualClock::new();
    let inner = clock.clone();
    // Each tick takes 3 ms of (manual) wall time.
    registry.add_system(Phase::Update, move |_: &mut Registry, _: f32| {
        inner.advance(Duration::from_millis(3));
    });
    registry
        .set_fixed_step(Duration::from_millis(10), clock.clone())
        .unwrap();
    clock.advance(Duration::from_millis(10));
    assert_eq!(registry.run_frame().ran, 1);
    assert_eq!(
        registry.time_until_next_tick(),
        Some(Duration::from_millis(7))
    );
    clock.advance(Duration::from_millis(7));
    assert_eq!(registry.time_until_next_tick(), Some(Duration::ZERO));
    assert_eq!(registry.run_frame().ran, 1);
}

#[test]
fn a_hand_driven_loop_gets_the_same_ticks_jobs_and_pump() {
    for workers in [1, 3] {
        let (mut registry, target) = server(workers);
        let clock = ManualClock::new();
        let mut fixed = FixedStep::with_clock(Duration::from_millis(10), clock.clone()).unwrap();
        let mut frames = 0;
        while registry.tick() < 12 {
            clock.advance(Duration::from_millis(25)); // two or three ticks per frame
            fixed.begin_frame();
            while registry.tick() < 12
                && let Some(tick) = fixed.advance()
            {
                // The registry numbers the tick the same as the caller's loop does.
                assert_eq!(tick, registry.tick());
                registry.update(0.01);
            }
            frames += 1;
        }
        assert!(frames < 12);
        check(&mut registry, target, 12);
    }
}
