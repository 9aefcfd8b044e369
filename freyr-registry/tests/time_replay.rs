//! A recorded run replays tick for tick. The recording is driven by the real clock, with inputs
//! (spawns, deadline-job requests) and gate decisions drawn from a source seeded by the time of
//! day; everything the loop was fed is logged per frame: the clock reading, the inputs that
//! arrived, the gate's answers. Replaying the log on a manual clock, with other worker counts,
//! gives the same frames and the same per-tick world hashes.

mod time_common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use freyr_registry::{Phase, Registry};
use freyr_time::{Clock, Delivered, ManualClock, MonotonicClock};
use time_common::{Age, Board, Pos, Vel, mix, pause, rand};

/// What arrives from outside the simulation.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Input {
    Spawn { x: f32, vx: f32 },
    Request { payload: u64 },
}

/// One frame of the log.
#[derive(Clone, Debug, Default, PartialEq)]
struct Frame {
    clock: Duration,
    inputs: Vec<Input>,
    gate: Vec<bool>,
}

/// Inputs waiting for the next tick.
struct Inbox(Vec<Input>);
struct Hashes(Vec<(u64, u64)>);

/// A clock that logs what it returns.
struct Recording {
    inner: MonotonicClock,
    last: Arc<Mutex<Duration>>,
}

impl Clock for Recording {
    fn now(&mut self) -> Duration {
        let now = self.inner.now();
        *self.last.lock().unwrap() = now;
        now
    }
}

/// The recording's gate: answers from a live source, and logs each answer.
struct Answers {
    rng: u64,
    log: Vec<bool>,
}

fn build(workers: usize, job_salt: u64) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.insert_resource(Inbox(Vec::new()));
    r.insert_resource(Hashes(Vec::new()));
    let board = r.spawn((Board(0),));
    r.add_deadline_jobs(3, move |r: &mut Registry, done: Delivered<u64>| {
        let b = r.get_mut::<Board>(board).unwrap();
        b.0 = mix(b.0 ^ done.result.unwrap() ^ done.ticket.due());
    })
    .unwrap();
    r.add_system(Phase::PreUpdate, move |r: &mut Registry, _dt: f32| {
        let inputs = std::mem::take(&mut r.resource_mut::<Inbox>().unwrap().0);
        for input in inputs {
            match input {
                Input::Spawn { x, vx } => {
                    r.spawn((Pos { x, y: 0.0 }, Vel { x: vx, y: 1.0 }, Age(0)));
                }
                Input::Request { payload } => {
                    let tick = r.tick();
                    r.request_job(payload, move |p: u64| {
                        pause(mix(p ^ job_salt) % 700); // timing differs per run, not the result
                        mix(p ^ tick)
                    })
                    .unwrap();
                }
            }
        }
    });
    r.add_system(Phase::Update, |r: &mut Registry, dt: f32| {
        let tick = r.tick();
        r.query::<(&mut Pos, &Vel, &mut Age)>()
            .each_async_with(move |e, (p, v, age), ctx| {
                age.0 += 1;
                p.x += v.x * dt;
                p.y += v.y * dt;
                if rand(e, tick, 9).is_multiple_of(41) {
                    ctx.commands().despawn(e);
                }
            });
    });
    r.add_system(Phase::PostUpdate, |r: &mut Registry, _dt: f32| {
        let tick = r.tick();
        let hash = r.world_hash::<(Pos, Vel, Age, Board)>();
        r.resource_mut::<Hashes>().unwrap().0.push((tick, hash));
    });
    r
}

/// xorshift64*: the recording's live, unlogged source of randomness.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn dt() -> Duration {
    Duration::from_micros(500)
}

/// What a recording fed the loop.
struct Log {
    origin: Duration,
    frames: Vec<Frame>,
}

/// Records a run of `frames` frames on the real clock; returns the log and the hashes.
fn record(workers: usize, frames: usize) -> (Log, Vec<(u64, u64)>) {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut rng = seed;
    let mut r = build(workers, seed);
    let last = Arc::new(Mutex::new(Duration::ZERO));
    let clock = Recording {
        inner: MonotonicClock::new(),
        last: Arc::clone(&last),
    };
    r.set_fixed_step(dt(), clock).unwrap();
    let origin = *last.lock().unwrap(); // the reading the loop's time starts from
    let answers = Arc::new(Mutex::new(Answers {
        rng: next(&mut rng),
        log: Vec::new(),
    }));
    let gate_answers = Arc::clone(&answers);
    r.add_gate(move |_next: u64| {
        let answers = &mut *gate_answers.lock().unwrap();
        let allow = !next(&mut answers.rng).is_multiple_of(5);
        answers.log.push(allow);
        allow
    });
    let mut log = Vec::new();
    for _ in 0..frames {
        let mut inputs = Vec::new();
        for _ in 0..next(&mut rng) % 3 {
            let roll = next(&mut rng);
            inputs.push(if roll.is_multiple_of(2) {
                Input::Spawn {
                    x: (roll % 1000) as f32,
                    vx: (roll % 7) as f32 - 3.0,
                }
            } else {
                Input::Request { payload: roll }
            });
        }
        r.resource_mut::<Inbox>()
            .unwrap()
            .0
            .extend(inputs.iter().copied());
        r.run_frame();
        let gate = std::mem::take(&mut answers.lock().unwrap().log);
        log.push(Frame {
            clock: *last.lock().unwrap(),
            inputs,
            gate,
        });
        pause(next(&mut rng) % 1200); // wall time passes unevenly between frames
    }
    let hashes = r.remove_resource::<Hashes>().unwrap().0;
    (
        Log {
            origin,
            frames: log,
        },
        hashes,
    )
}

/// Replays `log` on a manual clock with `workers` workers; returns the hashes.
fn replay(workers: usize, log: &Log) -> Vec<(u64, u64)> {
    let mut r = build(workers, 12345);
    let clock = ManualClock::new();
    clock.set(log.origin);
    r.set_fixed_step(dt(), clock.clone()).unwrap();
    let answers = Arc::new(Mutex::new(VecDeque::new()));
    let gate_answers = Arc::clone(&answers);
    r.add_gate(move |_next: u64| {
        gate_answers
            .lock()
            .unwrap()
            .pop_front()
            .expect("the replay asks the gate exactly as often as the recording did")
    });
    for frame in &log.frames {
        clock.set(frame.clock);
        answers.lock().unwrap().extend(frame.gate.iter().copied());
        r.resource_mut::<Inbox>()
            .unwrap()
            .0
            .extend(frame.inputs.iter().copied());
        r.run_frame();
        assert!(
            answers.lock().unwrap().is_empty(),
            "every logged answer was used"
        );
    }
    r.remove_resource::<Hashes>().unwrap().0
}

#[test]
fn a_logged_run_replays_with_the_same_per_tick_hashes() {
    let (log, recorded) = record(2, 150);
    assert!(
        recorded.len() > 20,
        "the recording ran {} ticks",
        recorded.len()
    );
    let held: usize = log
        .frames
        .iter()
        .map(|f| f.gate.iter().filter(|&&g| !g).count())
        .sum();
    assert!(held > 0, "the gate held some ticks");
    for workers in [1, 3, 8] {
        assert_eq!(
            replay(workers, &log),
            recorded,
            "replay on {workers} workers"
        );
    }
}
