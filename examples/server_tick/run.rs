//! The fixed-step loop around the server: 60 Hz with the catch-up clamp, the overrun governor
//! stepped once per tick from the previous tick's wall time, its levers frozen for the tick, and
//! the tick profiler around each tick.

use std::time::{Duration, Instant};

use freyr::profile::{TickExtras, TickProfileConfig};
use freyr::time::{Clock, FixedStep, GovernorParams, ManualClock, MonotonicClock, TickGovernor};

use crate::levers::{LeverParams, Levers};
use crate::server::Server;
use crate::world::mix;

/// Where each tick's levers come from.
#[derive(Clone, Debug, PartialEq)]
pub enum LeverSource {
    /// The governor, stepped from measured wall time (`enabled: false` holds it at load 1).
    Governor {
        /// Whether it may shed work.
        enabled: bool,
    },
    /// A fixed schedule of load factors: `(from_tick, load_factor)`, sorted by tick; before
    /// the first entry the load factor is 1. Machine speed cannot change it.
    Forced(Vec<(u64, f64)>),
}

/// How the loop keeps time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// Real time: a tick every 1/60 s, sleeping in between, catch-up clamped.
    RealTime,
    /// As fast as the machine goes: one tick per frame of a clock advanced by exactly `dt`.
    Free,
}

/// How to run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    /// Ticks to run.
    pub ticks: u64,
    /// How the loop keeps time.
    pub pace: Pace,
    /// The governor's parameters (its budget is the tick budget).
    pub governor: GovernorParams,
    /// Where the levers come from.
    pub levers: LeverSource,
    /// Raise the governor's budget to this at this tick (to watch it recover).
    pub raise_budget: Option<(u64, Duration)>,
    /// The tick profiler's configuration (`None`: off).
    pub profile: Option<TickProfileConfig>,
}

/// What a run did.
#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    /// Ticks run.
    pub ticks: u64,
    /// Wall time of the whole run.
    pub elapsed: Duration,
    /// Summed wall time of the ticks alone.
    pub busy: Duration,
    /// Ticks dropped by the catch-up clamp.
    pub dropped: u64,
    /// The digest over every peer's byte stream.
    pub stream_digest: u64,
    /// The digest of the lever sequence.
    pub lever_digest: u64,
    /// The world hash at the end.
    pub world_hash: u64,
    /// The governor at the end: load factor, decreases, increases (decisions that moved the
    /// load factor), EWMA ms. With forced levers the governor is never stepped: load factor 1,
    /// no decisions, no EWMA.
    pub governor: (f64, (u64, u64), Option<f64>),
    /// The lowest load factor any tick ran at (per-tick values are in the tick profiler's
    /// window when it is on; the run keeps no per-tick list, so its memory does not grow with
    /// the run).
    pub lowest_load_factor: f64,
}

/// Folds one tick's levers into the lever digest.
#[must_use]
pub fn lever_digest(h: u64, tick: u64, l: &Levers) -> u64 {
    let fields = [
        tick,
        l.load_factor.to_bits(),
        u64::from(l.snapshot_interval_ticks),
        u64::from(l.byte_budget),
        u64::from(l.ai_stride),
        l.interest_scale.to_bits(),
    ];
    fields.iter().fold(h, |h, &f| mix(h, f))
}

/// Runs `config.ticks` ticks of `server`.
///
/// # Panics
///
/// If `config.governor` is invalid (the message names the field).
pub fn run(server: &mut Server, config: &RunConfig) -> RunReport {
    let dt = Duration::from_secs(1) / 60;
    match config.pace {
        Pace::RealTime => {
            let fixed = FixedStep::with_clock(dt, MonotonicClock::new()).expect("dt is positive");
            drive(server, config, fixed, |fixed, frame_start| {
                // Sleep until the next tick is due: the accumulator held `alpha` of a tick when
                // the frame began.
                let due = frame_start + dt.mul_f64((1.0 - fixed.alpha()).clamp(0.0, 1.0));
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            })
        }
        Pace::Free => {
            let clock = ManualClock::new();
            let fixed = FixedStep::with_clock(dt, clock.clone()).expect("dt is positive");
            drive(server, config, fixed, move |_, _| clock.advance(dt))
        }
    }
}

fn drive<C: Clock>(
    server: &mut Server,
    config: &RunConfig,
    mut fixed: FixedStep<C>,
    mut idle: impl FnMut(&FixedStep<C>, Instant),
) -> RunReport {
    let mut params = config.governor;
    if config.levers == (LeverSource::Governor { enabled: false }) {
        // A disabled governor still tracks the EWMA, but holds every lever at no-op.
        params.enabled = false;
    }
    // This server's lever policy; the governor's floor is the policy's floor (0.25).
    let policy = LeverParams::default();
    let mut governor = TickGovernor::new(policy.governor(params))
        .unwrap_or_else(|e| panic!("{e}; see --help for the governor's flags"));
    if let Some(profile) = &config.profile {
        server.registry.enable_tick_profile(profile.clone());
    }
    let mut last_wall: Option<Duration> = None;
    let mut digest = 0u64;
    let mut busy = Duration::ZERO;
    let mut dropped_seen = 0;
    let mut lowest_load_factor = 1.0f64;
    let start = Instant::now();
    let mut done = 0;
    if config.pace == Pace::Free {
        idle(&fixed, start); // the first frame's tick
    }
    while done < config.ticks {
        let frame_start = Instant::now();
        fixed.begin_frame();
        while done < config.ticks {
            let Some(tick) = fixed.advance() else { break };
            if let Some((at, budget)) = config.raise_budget
                && tick == at
            {
                governor.set_budget(budget);
            }
            // The governor steps once per tick from the previous tick's wall time; its levers
            // are frozen for the tick.
            let levers = match &config.levers {
                LeverSource::Governor { .. } => match last_wall {
                    Some(wall) => Levers::for_load_factor(&policy, governor.step(wall)),
                    None => Levers::for_load_factor(&policy, governor.load_factor()),
                },
                LeverSource::Forced(schedule) => {
                    let lf = schedule
                        .iter()
                        .rev()
                        .find(|(from, _)| *from <= tick)
                        .map_or(1.0, |(_, lf)| *lf);
                    Levers::for_load_factor(&policy, lf)
                }
            };
            digest = lever_digest(digest, tick, &levers);
            lowest_load_factor = lowest_load_factor.min(levers.load_factor);
            let t0 = Instant::now();
            server.registry.begin_tick(tick);
            server.tick(tick, &levers);
            let dropped_now = fixed.dropped_ticks();
            server.registry.end_tick(TickExtras {
                dropped_ticks: dropped_now - dropped_seen,
                load_factor: levers.load_factor,
                ..TickExtras::default()
            });
            dropped_seen = dropped_now;
            let wall = t0.elapsed();
            busy += wall;
            last_wall = Some(wall);
            done += 1;
        }
        if done < config.ticks {
            idle(&fixed, frame_start);
        }
    }
    RunReport {
        ticks: done,
        elapsed: start.elapsed(),
        busy,
        dropped: fixed.dropped_ticks(),
        stream_digest: server.stream_digest(),
        lever_digest: digest,
        world_hash: server.world_hash(),
        governor: (
            governor.load_factor(),
            governor.decisions(),
            governor.ewma_ms(),
        ),
        lowest_load_factor,
    }
}
