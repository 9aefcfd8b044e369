//! The rollback loop: the local player's input is known at once, every other player's
//! arrives `delay` ticks late. Missing inputs are predicted (the last one known, repeated);
//! when a real input differs from its prediction for tick T, the world goes back to the
//! snapshot of T and the ticks T..now are simulated again with what is known now.

use std::time::{Duration, Instant};

use freyr::Registry;
use freyr::snapshot::SnapshotRing;

use crate::game::{self, TickInputs};

/// What a run is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Config {
    pub ticks: u64,
    pub players: u8,
    pub delay: u64,
    pub workers: usize,
    pub entities: u32,
}

/// What a run did.
#[derive(Debug, Default)]
pub(crate) struct Report {
    pub rollbacks: u64,
    pub resimulated: u64,
    pub snapshot_time: Duration,
    pub restore_time: Duration,
    /// The world hash at the end of every tick, as it ran once its inputs were all known.
    pub confirmed: Vec<u64>,
    pub final_hash: u64,
}

/// The inputs the session knows or predicts.
struct Inputs {
    /// `real[p][t]`: player p's input for tick t, once it arrived.
    real: Vec<Vec<Option<u8>>>,
    /// `used[p][t]`: what tick t last ran with.
    used: Vec<Vec<u8>>,
}

impl Inputs {
    /// The input of `player` for `tick`: the real one if it arrived, else the last real one
    /// before it (0 before any).
    fn get(&self, player: usize, tick: u64) -> u8 {
        let known = &self.real[player];
        (0..=tick as usize)
            .rev()
            .find_map(|t| known.get(t).copied().flatten())
            .unwrap_or(0)
    }
}

/// Runs a session and reports it. `delay` 0 is the run with every input on time.
#[must_use]
pub(crate) fn run(config: Config) -> Report {
    let mut r = game::new_world(config.workers, config.players, config.entities);
    let players = usize::from(config.players);
    let len = config.ticks as usize;
    let mut inputs = Inputs {
        real: vec![vec![None; len]; players],
        used: vec![vec![0; len]; players],
    };
    // A rollback goes back at most `delay` ticks: the ring holds them and the present.
    let mut ring = SnapshotRing::new(config.delay as usize + 1);
    let mut report = Report::default();
    let mut hashes = vec![0u64; len];
    for now in 0..config.ticks {
        if let Some(from) = arrive(&mut inputs, config.delay, now, config.ticks) {
            roll_back(
                &mut r,
                &mut ring,
                &mut inputs,
                &mut report,
                from,
                now,
                &mut hashes,
            );
        }
        step(
            &mut r,
            &mut ring,
            &mut inputs,
            &mut report,
            now,
            &mut hashes,
        );
        // Ticks before `now + 1 - delay` have every input: no rollback goes back before it.
        if let Some(confirmed) = (now + 1).checked_sub(config.delay) {
            r.confirm_tick(confirmed);
        }
    }
    // The session ends once the last inputs arrived: one more rollback if they differ.
    let end = config.ticks;
    let mut from = None;
    for now in end..end + config.delay {
        if let Some(t) = arrive(&mut inputs, config.delay, now, end) {
            from = Some(from.map_or(t, |f: u64| f.min(t)));
        }
    }
    if let Some(from) = from {
        roll_back(
            &mut r,
            &mut ring,
            &mut inputs,
            &mut report,
            from,
            end,
            &mut hashes,
        );
    }
    report.confirmed = hashes;
    report.final_hash = game::hash(&r);
    report
}

/// The inputs that arrive at `now` (the local player's for `now`, the others' for
/// `now - delay`; none past `end`). Returns the earliest tick that ran on a prediction
/// they contradict.
fn arrive(inputs: &mut Inputs, delay: u64, now: u64, end: u64) -> Option<u64> {
    let mut resume = None;
    for p in 0..inputs.real.len() {
        let lag = if p == 0 { 0 } else { delay };
        let Some(t) = now.checked_sub(lag).filter(|&t| t < end) else {
            continue;
        };
        let real = game::real_input(p as u8, t);
        inputs.real[p][t as usize] = Some(real);
        if t < now && inputs.used[p][t as usize] != real {
            resume = Some(resume.map_or(t, |r: u64| r.min(t)));
        }
    }
    resume
}

/// Restores the snapshot of tick `from` and runs the ticks `from..now` again.
fn roll_back(
    r: &mut Registry,
    ring: &mut SnapshotRing,
    inputs: &mut Inputs,
    report: &mut Report,
    from: u64,
    now: u64,
    hashes: &mut [u64],
) {
    let start = Instant::now();
    ring.restore(r, from)
        .expect("the ring holds the last `delay` ticks");
    report.restore_time += start.elapsed();
    report.rollbacks += 1;
    for t in from..now {
        step(r, ring, inputs, report, t, hashes);
        report.resimulated += 1;
    }
}
/// Snapshots the start of tick `t`, runs it with the known or predicted inputs, records
/// what it ran with and the hash it ended with.
fn step(
    r: &mut Registry,
    ring: &mut SnapshotRing,
    inputs: &mut Inputs,
    report: &mut Report,
    t: u64,
    hashes: &mut [u64],
) {
    assert_eq!(r.tick(), t, "the loop runs the ticks in order");
    let start = Instant::now();
    ring.push(r)
        .expect("every live type is registered, and ticks end quiet");
    report.snapshot_time += start.elapsed();
    let now: Vec<u8> = (0..inputs.real.len()).map(|p| inputs.get(p, t)).collect();
    for (p, &input) in now.iter().enumerate() {
        inputs.used[p][t as usize] = input;
    }
    r.insert_resource(TickInputs(now));
    r.update(1.0 / 60.0);
    hashes[t as usize] = game::hash(r);
}
