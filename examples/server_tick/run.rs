//! The server on the registry's own loop: `set_fixed_step` at 60 Hz with the catch-up clamp,
//! `run_frame` for every frame, sleeping `time_until_next_tick` in between (or, free-paced, a
//! manual clock advanced one tick per frame), a gate that ends the run after its ticks. The
//! overrun governor is a PreUpdate system stepped once per tick from the registry's report of
//! the previous tick (`last_tick`); its levers, a resource, are frozen for the tick. The tick
//! profiler records each update as a tick of its own, numbered by the registry.

use std::time::{Duration, Instant};

use freyr::profile::TickProfileConfig;
use freyr::time::{GovernorParams, ManualClock, MonotonicClock, TickGovernor};
use freyr::{Phase, Registry};

use crate::levers::{LeverParams, Levers};
use crate::server::Server;
use crate::world::mix;

/// Where each tick's levers come from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum LeverSource {
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
pub(crate) enum Pace {
    /// Real time: a tick every 1/60 s, sleeping in between, catch-up clamped.
    RealTime,
    /// As fast as the machine goes: one tick per frame of a clock advanced by exactly `dt`.
    Free,
}

/// How to run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RunConfig {
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
pub(crate) struct RunReport {
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
pub(crate) fn lever_digest(h: u64, tick: u64, l: &Levers) -> u64 {
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

/// The governor system's state (a resource): where the levers come from, and what the run
/// reports about them.
struct Governing {
    governor: TickGovernor,
    /// How a load factor maps onto this server's levers.
    policy: LeverParams,
    levers: LeverSource,
    raise_budget: Option<(u64, Duration)>,
    /// The first tick of the run: a tick before it (a warm-up) is not the run's.
    first_tick: u64,
    digest: u64,
    lowest_load_factor: f64,
    /// Summed wall time of the run's ticks seen so far (each tick's, one tick later).
    busy: Duration,
}

/// The governor system (PreUpdate): steps the governor once per tick from the registry's report
/// of the previous tick (or reads the forced schedule), sets this tick's [`Levers`] resource and
/// books the load factor to the tick profiler.
fn govern(registry: &mut Registry, _dt: f32) {
    registry.profile_tick_phase("levers");
    let tick = registry.tick();
    let last = registry.last_tick();
    let g = registry
        .resource_mut::<Governing>()
        .expect("run() inserts the governor's state");
    let last_wall = last.filter(|l| l.tick >= g.first_tick).map(|l| l.wall);
    g.busy += last_wall.unwrap_or_default();
    if let Some((at, budget)) = g.raise_budget
        && tick == at
    {
        g.governor.set_budget(budget);
    }
    let levers = match &g.levers {
        LeverSource::Governor { .. } => match last_wall {
            Some(wall) => Levers::for_load_factor(&g.policy, g.governor.step(wall)),
            None => Levers::for_load_factor(&g.policy, g.governor.load_factor()),
        },
        LeverSource::Forced(schedule) => {
            let lf = schedule
                .iter()
                .rev()
                .find(|(from, _)| *from <= tick)
                .map_or(1.0, |(_, lf)| *lf);
            Levers::for_load_factor(&g.policy, lf)
        }
    };
    g.digest = lever_digest(g.digest, tick, &levers);
    g.lowest_load_factor = g.lowest_load_factor.min(levers.load_factor);
    registry.insert_resource(levers);
    registry.set_load_factor(levers.load_factor);
}

/// Runs `config.ticks` ticks of `server` on the registry's loop.
///
/// # Panics
///
/// If `config.governor` is invalid (the message names the field).
pub(crate) fn run(server: &mut Server, config: &RunConfig) -> RunReport {
    let dt = Duration::from_secs(1) / 60;
    let registry = &mut server.registry;
    let manual = ManualClock::new();
    match config.pace {
        Pace::RealTime => registry.set_fixed_step(dt, MonotonicClock::new()),
        Pace::Free => registry.set_fixed_step(dt, manual.clone()),
    }
    .expect("1/60 s is a valid tick length");
    let first_tick = registry.tick();
    let end = first_tick + config.ticks;
    // The run ends after its ticks: the gate holds every tick after them.
    registry.add_gate(move |next: u64| next < end);
    install_governor(registry, config, first_tick);
    if let Some(profile) = &config.profile {
        registry.enable_tick_profile(profile.clone());
    }
    let start = Instant::now();
    while registry.tick() < end {
        match config.pace {
            // Exactly one tick per frame, as fast as the machine goes.
            Pace::Free => manual.advance(dt),
            Pace::RealTime => {
                std::thread::sleep(registry.time_until_next_tick().unwrap_or_default());
            }
        }
        registry.run_frame();
    }
    let elapsed = start.elapsed();
    // The last tick's wall time: no later tick's governor step saw it.
    let last = registry
        .last_tick()
        .filter(|l| l.tick >= first_tick)
        .map(|l| l.wall);
    let ticks = registry.tick() - first_tick;
    let dropped = registry.dropped_ticks();
    let g = server
        .registry
        .resource::<Governing>()
        .expect("run() inserts the governor's state");
    RunReport {
        ticks,
        elapsed,
        busy: g.busy + last.unwrap_or_default(),
        dropped,
        stream_digest: server.stream_digest(),
        lever_digest: g.digest,
        world_hash: server.world_hash(),
        governor: (
            g.governor.load_factor(),
            g.governor.decisions(),
            g.governor.ewma_ms(),
        ),
        lowest_load_factor: g.lowest_load_factor,
    }
}

/// Inserts the governor's state and, on the first run of this registry, its system.
fn install_governor(registry: &mut Registry, config: &RunConfig, first_tick: u64) {
    let mut params = config.governor;
    if config.levers == (LeverSource::Governor { enabled: false }) {
        // A disabled governor still tracks the EWMA, but holds every lever at no-op.
        params.enabled = false;
    }
    // This server's lever policy; the governor's floor is the policy's floor (0.25).
    let policy = LeverParams::default();
    let governor = TickGovernor::new(policy.governor(params))
        .unwrap_or_else(|e| panic!("{e}; see --help for the governor's flags"));
    let fresh = registry
        .insert_resource(Governing {
            governor,
            policy,
            levers: config.levers.clone(),
            raise_budget: config.raise_budget,
            first_tick,
            digest: 0,
            lowest_load_factor: 1.0,
            busy: Duration::ZERO,
        })
        .is_none();
    if fresh {
        registry.add_system(Phase::PreUpdate, govern);
    }
}
