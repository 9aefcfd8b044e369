//! Freyr time tools: the tools around a deterministic tick that know nothing
//! of the ECS, built on `freyr-sched`'s thread pool. Through the facade they
//! are `freyr::time` (with `freyr::time::deadline`, `freyr::time::pump` and
//! `freyr::time::budget`).
//!
//! | file | concept |
//! |---|---|
//! | `clock.rs` | [`Clock`]: the wall-clock source, injectable ([`ManualClock`]) |
//! | `fixed_step.rs` | [`FixedStep`]: fixed `dt`, accumulator, gates, tick counter |
//! | `clamp.rs` | [`clamp_catchup_ticks`]: the catch-up bound and the dropped-tick count |
//! | `gate.rs` | [`Gate`]s that hold the next tick while its work is not ready |
//! | `deadline/` | [`DeadlineScheduler`]: jobs requested at T, applied at exactly T + K |
//! | `pump/` | [`AsyncPump`]: latency-tolerant work drained by its owner |
//! | `budget.rs` | [`Incremental`] jobs advanced by a fixed number of work units per tick |
//! | `grid_path.rs` | [`GridPathSearch`]: a resumable A* whose work unit is a node expansion |
//! | `governor/` | [`TickGovernor`]: the AIMD overrun governor's load factor |
//! | `pool_job.rs` | an owned closure run on the pool, shared by deadlines and the pump |
//!
//! The rule that ties them together: the machine's speed may change how
//! long a tick takes, never what it computes. Wall time decides only how
//! many fixed ticks a frame runs; deadline jobs land on a tick fixed when
//! they were requested; budgets count work, not milliseconds; pump results
//! are applied only where their owner drains them.

mod budget;
mod clamp;
mod clock;
mod deadline;
mod fixed_step;
mod gate;
mod governor;
mod grid_path;
mod pool_job;
mod pump;

pub use budget::{
    BudgetQueue, Incremental, Progress, TickWork, WorkBudget, ZeroBudget, advance_by,
};
pub use clamp::{DEFAULT_MAX_CATCHUP_TICKS, clamp_catchup_ticks};
pub use clock::{Clock, ManualClock, MonotonicClock};
pub use deadline::{
    DeadlineError, DeadlineScheduler, DeadlineStats, Delivered, JobStatus, JobTicket, JobsInFlight,
    due_tick,
};
pub use fixed_step::{FixedStep, FixedStepError, FrameReport, MAX_FIXED_DT};
pub use gate::{Gate, GateId, Gates};
pub use governor::{GovernorError, GovernorParams, TickGovernor};
pub use grid_path::{Grid, GridError, GridPath, GridPathSearch, octile_distance};
pub use pool_job::JobPanic;
pub use pump::{AsyncPump, Completer, Discard, Launch, PumpError, PumpStats};
