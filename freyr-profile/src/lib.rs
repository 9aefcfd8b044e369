//! Freyr profiling: what a tick cost. The per-launch profiler ([`ProfileReport`]: wall time per
//! label and per [`Phase`], tasks, steals, implicit sync points) and the tick profile
//! ([`TickProfile`]: per-tick records, window summaries, the JSON report and the Chrome trace).
//! The `Registry` (in `freyr-registry`) owns both; a program reads them through the `freyr`
//! facade (`freyr::profile`).
//!
//! # Workspace internals
//!
//! The modules marked `#[doc(hidden)]` are public only so that `freyr-query` and `freyr-registry` can build on them:
//! they are internal to the Freyr workspace, not a stable API, and the `freyr` facade exports
//! none of them. What they hold that only this crate uses is `pub(crate)` (the workspace lints
//! `unreachable_pub` and `unnameable_types` keep it so).
//!
//! # Layout
//!
//! Each file imports only from files above it in this list, so the imports have no cycle:
//!
//! 1. `phase` (the [`Phase`]s of a tick, which the reports are keyed by), `tick/record` (one
//!    tick's record) and `tick/trace` (the trace spans a launch's tasks stamp);
//! 2. `profiler` (the per-launch profiler and [`TimeStats`]), `tick/report` (window summaries);
//! 3. `tick/mod.rs`: the tick profile;
//! 4. `spans` (feature `tracing`): the `tracing` spans of a tick, named as the profilers name
//!    the same work.

#[doc(hidden)]
pub mod phase;
#[doc(hidden)]
pub mod profiler;
#[cfg(feature = "tracing")]
#[doc(hidden)]
pub mod spans;
#[doc(hidden)]
pub mod tick;

pub use crate::phase::Phase;
pub use crate::profiler::{LabelStats, PhaseStats, ProfileReport, TimeStats};
pub use crate::tick::{
    CALLER_ROW, LabelMs, LabelSummary, LabelTick, LoadFactorSummary, PhaseMs, PhaseSummary,
    Summary, TICK_ROW, TickExtras, TickJson, TickProfile, TickProfileConfig, TickRecord,
    TickReport, TraceEvent, TraceKind, WindowStats,
};
