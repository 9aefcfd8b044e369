//! The zone runtime's errors: [`ZoneError`] (the call failed) and [`Rejection`] (a message
//! was refused, counted, and the zone went on).

use core::fmt;
use std::time::Duration;

use freyr::persist::{LoadError, SaveError};

use crate::bus::BusError;
use crate::message::{MessageError, ZoneId};

/// Why a zone call failed. The zone is left consistent: calling [`Zone::step`](crate::Zone::step)
/// again resumes where it stopped (a handoff not yet published is published first).
#[derive(Debug)]
pub enum ZoneError {
    /// The configuration is not usable (the text says why); nothing ran.
    Config(String),
    /// The bus failed; nothing was lost (what was not published stays queued).
    Bus(BusError),
    /// Neighbours sent no "tick done" marker for `needed` within the configured timeout:
    /// the zone cannot run `tick`. `waiting_for` names them.
    NeighbourSilent {
        /// The tick the zone is waiting to run.
        tick: u64,
        /// The neighbours' tick whose markers are missing (`tick - K`).
        needed: u64,
        /// The zones whose marker is missing, in zone order.
        waiting_for: Vec<ZoneId>,
        /// How long this call waited.
        waited: Duration,
    },
    /// A save for a checkpoint failed.
    Save(SaveError),
    /// A checkpoint's world did not load.
    Load(LoadError),
    /// A checkpoint file could not be written or read, or is damaged (the text says how).
    Checkpoint(String),
}

impl fmt::Display for ZoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZoneError::Config(why) => write!(f, "zone configuration: {why}"),
            ZoneError::Bus(e) => e.fmt(f),
            ZoneError::NeighbourSilent {
                tick,
                needed,
                waiting_for,
                waited,
            } => write!(
                f,
                "cannot run tick {tick}: waited {:.3} s for the tick-{needed} markers of zones \
                 {waiting_for:?}",
                waited.as_secs_f64()
            ),
            ZoneError::Save(e) => write!(f, "checkpoint save: {e}"),
            ZoneError::Load(e) => write!(f, "checkpoint load: {e}"),
            ZoneError::Checkpoint(why) => write!(f, "checkpoint: {why}"),
        }
    }
}

impl std::error::Error for ZoneError {}

impl From<BusError> for ZoneError {
    fn from(e: BusError) -> Self {
        ZoneError::Bus(e)
    }
}

/// A message a zone refused: counted in [`ZoneStats`](crate::ZoneStats), the last one kept,
/// and the zone runs on. None of them changes the world.
#[derive(Clone, Debug, PartialEq)]
pub enum Rejection {
    /// The bytes are not a zone message.
    Undecodable(MessageError),
    /// It names a source zone that does not exist (or this zone itself), or another
    /// destination than this zone.
    UnknownZone {
        /// The source it names.
        source: ZoneId,
        /// The destination it names.
        dest: ZoneId,
    },
    /// A handoff whose tick + K this zone has already run: applying it now would change the
    /// past. Re-deliveries after a restart end here (an idempotent no-op).
    AlreadyApplied {
        /// Its source.
        source: ZoneId,
        /// Its tick.
        tick: u64,
        /// Its sequence number.
        seq: u32,
    },
    /// A handoff already received (same source, tick and sequence): a no-op.
    Duplicate {
        /// Its source.
        source: ZoneId,
        /// Its tick.
        tick: u64,
        /// Its sequence number.
        seq: u32,
    },
    /// A handoff for a tick its source had already declared done: the source's tick is
    /// complete without it.
    AfterMarker {
        /// Its source.
        source: ZoneId,
        /// Its tick.
        tick: u64,
    },
    /// The export inside did not import (an unknown type, a damaged export): the registry is
    /// unchanged.
    Import(String),
    /// A handoff whose apply tick (`tick` + K) does not fit in a `u64`: no zone ever runs it
    /// (a forged or damaged tick).
    TickOutOfRange {
        /// Its source.
        source: ZoneId,
        /// Its tick.
        tick: u64,
    },
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Undecodable(e) => e.fmt(f),
            Rejection::UnknownZone { source, dest } => {
                write!(
                    f,
                    "a message from zone {source} to zone {dest}: no such zone here"
                )
            }
            Rejection::AlreadyApplied { source, tick, seq } => write!(
                f,
                "handoff {source}/{tick}/{seq} arrived after its tick was applied"
            ),
            Rejection::Duplicate { source, tick, seq } => {
                write!(f, "handoff {source}/{tick}/{seq} received twice")
            }
            Rejection::AfterMarker { source, tick } => {
                write!(
                    f,
                    "a handoff from zone {source} after its tick-{tick} marker"
                )
            }
            Rejection::Import(e) => write!(f, "a handoff did not import: {e}"),
            Rejection::TickOutOfRange { source, tick } => {
                write!(
                    f,
                    "a handoff from zone {source} for tick {tick}: out of range"
                )
            }
        }
    }
}
