//! What the pump hands back: why a call was refused, what a launch did, why a result was
//! discarded, and its counters.

use core::fmt;

use crate::pool_job::JobPanic;

use super::Completer;

/// Why a pump call was refused.
///
/// # Examples
///
/// ```
/// use freyr::time::pump::{AsyncPump, PumpError};
/// let err = AsyncPump::<u8>::with_capacity(0).unwrap_err();
/// assert_eq!(err, PumpError::ZeroCapacity);
/// assert!(err.to_string().contains("capacity of at least 1"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PumpError {
    /// Capacity 0: nothing could ever launch.
    ZeroCapacity,
    /// [`settle`](crate::AsyncPump::settle) already ran: no more launches.
    Settled,
    /// The pool differs from the one the pump's work runs on.
    ForeignPool,
}

impl fmt::Display for PumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PumpError::ZeroCapacity => {
                "an async pump needs a capacity of at least 1 (got 0, so nothing could \
                 ever launch); the default of 1 coalesces extra requests"
            }
            PumpError::Settled => {
                "the async pump was settled (shut down); no launch is accepted after \
                 settle()"
            }
            PumpError::ForeignPool => {
                "this async pump's work runs on another pool; pass the pool (registry) \
                 its work was launched on"
            }
        })
    }
}

impl std::error::Error for PumpError {}

/// What a launch did.
///
/// # Examples
///
/// ```
/// use freyr::ThreadPool;
/// use freyr::time::pump::{AsyncPump, Launch};
/// let pool = ThreadPool::new(1);
/// let mut pump: AsyncPump<u32> = AsyncPump::new(); // capacity 1
/// assert!(matches!(pump.launch(&pool, (), 1, |x: u32| Ok(x)), Ok(Launch::Started(_))));
/// // Full until drained: the extra request is coalesced.
/// assert!(matches!(pump.launch(&pool, (), 2, |x: u32| Ok(x)), Ok(Launch::Coalesced)));
/// ```
#[derive(Debug)]
pub enum Launch<R, E = String> {
    /// Queued on the pool, as launch number `.0`.
    Started(u64),
    /// Recorded; any thread completes it through the [`Completer`].
    External(Completer<R, E>),
    /// The pump was at capacity: the request was dropped and folded into
    /// one pending request ([`AsyncPump::take_coalesced`](crate::AsyncPump::take_coalesced)), to be relaunched
    /// later with fresh inputs.
    Coalesced,
}

/// Why a launch's result was not applied; handed to the discard path.
///
/// # Examples
///
/// ```
/// use freyr::ThreadPool;
/// use freyr::time::pump::{AsyncPump, Discard};
/// let pool = ThreadPool::new(1);
/// let mut pump: AsyncPump<u8> = AsyncPump::new();
/// pump.launch(&pool, (), (), |()| -> Result<u8, String> { panic!("decoder crashed") }).unwrap();
/// pump.drain_all(|(), _| unreachable!(), |(), why| {
///     assert!(matches!(why, Discard::Panicked(p) if p.message() == "decoder crashed"));
/// });
/// ```
#[derive(Debug, PartialEq, Eq)]
pub enum Discard<R, E = String> {
    /// The work returned (or the completer sent) an error.
    Rejected(E),
    /// The work panicked.
    Panicked(JobPanic),
    /// The completer was dropped without completing.
    Abandoned,
    /// The launch predates an [`invalidate`](crate::AsyncPump::invalidate); its
    /// (successful) result is handed back for reuse.
    Stale(R),
    /// The launch's target is no longer alive (e.g. its entity was
    /// despawned); its result is handed back for reuse.
    TargetGone(R),
    /// [`settle`](crate::AsyncPump::settle) found the launch finished (or
    /// waited for it to finish) with this value, never drained; it is handed
    /// back instead of applied.
    Unapplied(R),
    /// [`settle`](crate::AsyncPump::settle) cancelled the launch before it
    /// ran (or an external launch was never completed).
    Cancelled,
}

/// Counters of a pump's life.
///
/// # Examples
///
/// ```
/// let stats = freyr::time::pump::PumpStats::default();
/// assert_eq!(stats.launched + stats.coalesced + stats.applied, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PumpStats {
    /// Launches started (pool or external).
    pub launched: u64,
    /// Requests folded because the pump was at capacity.
    pub coalesced: u64,
    /// Results handed to the apply path (a result discarded because its
    /// target was gone counts as discarded and stale, not applied).
    pub applied: u64,
    /// Results discarded, for any reason (including those
    /// [`settle`](crate::AsyncPump::settle) handed back).
    pub discarded: u64,
    /// Of those, rejected or abandoned.
    pub rejected: u64,
    /// Of those, panicked.
    pub panicked: u64,
    /// Of those, stale (older epoch) or addressed to a dead target.
    pub stale: u64,
}
