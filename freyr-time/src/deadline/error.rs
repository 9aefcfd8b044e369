//! Why a deadline-scheduler call was refused.

use core::fmt;

/// Why a deadline-scheduler call was refused.
///
/// # Examples
///
/// ```
/// use freyr::time::deadline::{DeadlineError, DeadlineScheduler};
/// let err = DeadlineScheduler::<()>::new(0).unwrap_err();
/// assert_eq!(err, DeadlineError::ZeroLatency);
/// assert!(err.to_string().contains("latency of at least 1 tick"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeadlineError {
    /// `K = 0`: a job would be due on the tick that requested it, before any
    /// worker could run it, so every job would stall the tick.
    ZeroLatency,
    /// The call passed a different pool from the one the scheduler's jobs
    /// run on; helping that pool would never finish them.
    ForeignPool,
    /// The ticket belongs to another scheduler.
    ForeignTicket {
        /// The scheduler the ticket came from.
        ticket_scheduler: u64,
        /// This scheduler.
        scheduler: u64,
    },
    /// [`settle`](crate::DeadlineScheduler::settle) already ran: no more requests.
    Settled,
    /// A tick earlier than one already collected: ticks only move forward.
    TickInPast {
        /// The tick passed.
        now: u64,
        /// The latest tick collected.
        collected: u64,
    },
    /// `now + K` overflows `u64`.
    TickOverflow,
    /// A job's due tick passed without a `collect` at that tick.
    MissedDueTick {
        /// The job's id.
        job: u64,
        /// Its due tick.
        due: u64,
        /// The tick `collect` was called with.
        now: u64,
    },
    /// A [`capture`](crate::DeadlineScheduler::capture) at a tick already collected: the
    /// deliveries of that tick are gone.
    TickCollected {
        /// The tick passed.
        tick: u64,
    },
    /// A [`restore`](crate::DeadlineScheduler::restore) of jobs captured from a scheduler of
    /// another latency: their due ticks are not this scheduler's.
    LatencyMismatch {
        /// The captured scheduler's latency.
        captured: u64,
        /// This scheduler's latency.
        latency: u64,
    },
}

impl fmt::Display for DeadlineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DeadlineError::ZeroLatency => f.write_str(
                "a deadline scheduler needs a latency of at least 1 tick (got K = 0); \
                 choose K so that jobs are rarely late on the slowest supported machine",
            ),
            DeadlineError::ForeignPool => f.write_str(
                "this deadline scheduler's jobs run on another pool; pass the pool \
                 (registry) the jobs were requested on",
            ),
            DeadlineError::ForeignTicket {
                ticket_scheduler,
                scheduler,
            } => write!(
                f,
                "the job ticket belongs to deadline scheduler {ticket_scheduler}, not to \
                 this one ({scheduler}); ask the scheduler (registry) that issued it"
            ),
            DeadlineError::Settled => f.write_str(
                "the deadline scheduler was settled (shut down); no request is accepted \
                 after settle()",
            ),
            DeadlineError::TickInPast { now, collected } => write!(
                f,
                "tick {now} is before tick {collected}, which was already collected; pass \
                 the current tick number, which never decreases"
            ),
            DeadlineError::TickOverflow => f.write_str(
                "the due tick (now + K) overflows u64; tick numbers must stay at least K \
                     below u64::MAX",
            ),
            DeadlineError::MissedDueTick { job, due, now } => write!(
                f,
                "job {job} was due at tick {due} but collect was first called at tick \
                 {now}; call collect once on every tick, at the same point of the tick"
            ),
            DeadlineError::TickCollected { tick } => write!(
                f,
                "tick {tick} was already collected, so its deliveries are no longer in flight; \
                 capture the jobs in flight at the start of a tick, before its collect"
            ),
            DeadlineError::LatencyMismatch { captured, latency } => write!(
                f,
                "the jobs in flight were captured from a deadline scheduler with latency \
                 {captured}, this one has latency {latency}; restore them into a scheduler \
                 (registry) registered with the same latency"
            ),
        }
    }
}

impl std::error::Error for DeadlineError {}
