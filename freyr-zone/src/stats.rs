//! [`ZoneStats`]: what a zone counts as it runs.

use std::time::Duration;

use crate::error::Rejection;
use crate::message::ZoneId;

/// A zone's telemetry: ticks, handoffs, the time spent waiting for neighbours (and for whom),
/// the handoff latency, and every refused message by kind.
#[derive(Clone, Debug, Default)]
pub struct ZoneStats {
    /// Ticks run (since this process started the zone).
    pub ticks: u64,
    /// Time spent inside ticks (`run_frame`, imports and handoffs), without waits.
    pub busy: Duration,
    /// Entities handed to other zones.
    pub handoffs_sent: u64,
    /// Handoff messages published (batches).
    pub batches_sent: u64,
    /// Entities imported from other zones.
    pub handoffs_received: u64,
    /// Handoff messages imported.
    pub batches_applied: u64,
    /// Total time spent waiting for neighbours' markers.
    pub waited: Duration,
    /// The time waited, per zone that was waited for (indexed by zone).
    pub waited_for: Vec<Duration>,
    /// The last wait: the tick it held and the zones it waited for.
    pub last_wait: Option<(u64, Vec<ZoneId>)>,
    /// Per handoff message: nanoseconds from its publish to its arrival here (wall clocks of
    /// the same host); the latest [`LATENCY_SAMPLES`] at most (the older half is dropped when
    /// it is full).
    pub latencies_ns: Vec<u64>,
    /// Messages that did not decode.
    pub undecodable: u64,
    /// Messages naming a zone that does not exist here.
    pub unknown_zone: u64,
    /// Handoffs for a tick already applied (re-deliveries): idempotent no-ops.
    pub already_applied: u64,
    /// Handoffs received twice before their tick: idempotent no-ops.
    pub duplicates: u64,
    /// Handoffs after their source's marker of the same tick.
    pub after_marker: u64,
    /// Handoffs whose export did not import.
    pub rejected_imports: u64,
    /// Handoffs for a tick no zone ever runs (tick + K overflows).
    pub out_of_range: u64,
    /// The last refused message, and why.
    pub last_rejection: Option<Rejection>,
    /// Entities whose owner function named a zone that does not exist: they stay here.
    pub bad_owner: u64,
    /// Checkpoints written.
    pub checkpoints: u64,
    /// Failed bus operations that were retried.
    pub bus_retries: u64,
}

/// The most latency samples [`ZoneStats::latencies_ns`] keeps.
pub const LATENCY_SAMPLES: usize = 1 << 16;

impl ZoneStats {
    /// Records one handoff's latency.
    pub(crate) fn record_latency(&mut self, ns: u64) {
        if self.latencies_ns.len() >= LATENCY_SAMPLES {
            self.latencies_ns.drain(..LATENCY_SAMPLES / 2);
        }
        self.latencies_ns.push(ns);
    }

    /// Counts a refused message.
    pub(crate) fn reject(&mut self, why: Rejection) {
        let counter = match &why {
            Rejection::Undecodable(_) => &mut self.undecodable,
            Rejection::UnknownZone { .. } => &mut self.unknown_zone,
            Rejection::AlreadyApplied { .. } => &mut self.already_applied,
            Rejection::Duplicate { .. } => &mut self.duplicates,
            Rejection::AfterMarker { .. } => &mut self.after_marker,
            Rejection::Import(_) => &mut self.rejected_imports,
            Rejection::TickOutOfRange { .. } => &mut self.out_of_range,
        };
        *counter += 1;
        self.last_rejection = Some(why);
    }

    /// Every refused message, of any kind.
    ///
    /// # Examples
    ///
    /// ```
    /// let stats = freyr_zone::ZoneStats::default();
    /// assert_eq!(stats.rejected(), 0);
    /// ```
    #[must_use]
    pub fn rejected(&self) -> u64 {
        self.undecodable
            + self.unknown_zone
            + self.already_applied
            + self.duplicates
            + self.after_marker
            + self.rejected_imports
            + self.out_of_range
    }

    /// The `q`-quantile (0..=1) of the handoff latency, in ticks of length `tick`
    /// (fractional); `None` before any handoff arrived.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut stats = freyr_zone::ZoneStats::default();
    /// stats.latencies_ns = vec![1_000_000, 20_000_000, 5_000_000];
    /// let p50 = stats.latency_ticks(0.5, Duration::from_millis(10)).unwrap();
    /// assert!((p50 - 0.5).abs() < 1e-9);
    /// ```
    #[must_use]
    pub fn latency_ticks(&self, q: f64, tick: Duration) -> Option<f64> {
        let mut sorted = self.latencies_ns.clone();
        sorted.sort_unstable();
        let last = sorted.len().checked_sub(1)?;
        let at = ((last as f64) * q.clamp(0.0, 1.0)).round() as usize;
        Some(sorted[at] as f64 / tick.as_nanos().max(1) as f64)
    }
}
