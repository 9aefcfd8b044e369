//! The seam between a zone and the message bus: [`Bus`].

use core::fmt;
use std::time::Duration;

use crate::message::ZoneId;

/// A place in a zone's inbound stream: the position of one message, or where to read from.
/// Positions only grow along a stream; they need not be consecutive (a NATS stream numbers
/// all its subjects together).
pub type Position = u64;

/// One message read from a zone's inbound stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inbound {
    /// Its position; the next read starts after it.
    pub position: Position,
    /// Its bytes, as published.
    pub payload: Vec<u8>,
}

/// What went wrong talking to the bus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BusError {
    /// The bus could not be reached or refused the operation (the text says why). A publish
    /// that failed may be repeated with the same message id: the bus keeps one copy.
    Unavailable(String),
    /// A zone number the bus has no stream for.
    UnknownZone(ZoneId),
}

impl fmt::Display for BusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BusError::Unavailable(why) => write!(f, "the bus is unavailable: {why}"),
            BusError::UnknownZone(z) => write!(f, "the bus has no stream for zone {z}"),
        }
    }
}

impl std::error::Error for BusError {}

/// A durable, ordered message bus with one inbound stream per zone, as the zone runtime needs
/// it. Synchronous: an implementation that talks to a server owns its async runtime.
///
/// The contract, which both [`InProcessBus`](crate::InProcessBus) and
/// [`NatsBus`](crate::NatsBus) keep (the same tests run on both):
/// - **Order per publisher**: messages one bus handle publishes to a zone are read by that zone
///   in publish order, once [`flush`](Bus::flush) returned.
/// - **Dedup by id**: a message published again with an id the stream already holds is
///   dropped (within the bus's duplicate window), so a restarted zone may re-publish.
/// - **Durability and replay**: a zone can read its stream again from any earlier position.
pub trait Bus: Send {
    /// Publishes `payload` to zone `dest`'s inbound stream under the message id `id`.
    ///
    /// # Errors
    ///
    /// [`BusError`]; the publish may be repeated with the same id.
    fn publish(&mut self, dest: ZoneId, id: &str, payload: &[u8]) -> Result<(), BusError>;

    /// Returns once every message published through this handle is stored by the bus, in
    /// order.
    ///
    /// # Errors
    ///
    /// [`BusError`] if some could not be stored; publishing them again with the same ids is
    /// safe.
    fn flush(&mut self) -> Result<(), BusError>;

    /// Up to `max` messages of zone `zone`'s inbound stream at positions `from` and after, in
    /// stream order. Waits up to `wait` for the first one; an empty result means none came.
    ///
    /// # Errors
    ///
    /// [`BusError`].
    fn read(
        &mut self,
        zone: ZoneId,
        from: Position,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<Inbound>, BusError>;
}
