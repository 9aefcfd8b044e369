//! Function systems: ordinary functions and closures whose parameters declare what they read
//! and write, ordered per phase by a graph, and run in parallel when their access is disjoint.
//!
//! ```text
//!  fn integrate(q: Query<(&mut Pos, &Vel)>, dt: Tick)     parameters  -> access (Pos w, Vel r)
//!  registry.add_fn_system(Phase::Update, "integrate", integrate)?
//!
//!  per phase:  conflicting systems -> edge in registration order (unless before/after says
//!              otherwise); disjoint systems -> no edge -> run at the same time on the pool
//!  outputs:    each system's commands and events apply at the phase's sync point, in system
//!              registration order -> the same world for 1 or 64 workers
//! ```
//!
//! - `param`: [`SystemParam`] and the parameters ([`Query`], [`Res`], [`ResMut`],
//!   [`Commands`](crate::Commands), [`EventWriter`], [`EventReader`], [`Local`], [`Tick`]);
//! - `function`: [`IntoFnSystem`], functions and closures of up to 8 parameters;
//! - `graph`: [`SystemConfig`], [`ScheduleError`], a phase's systems, segments and edges;
//! - `runs`: what a segment keeps from run to run (counters, the one-thread-or-pool choice);
//! - the registry's side (`registry/fn_systems.rs`): registration, the executor.

pub(crate) mod function;
pub(crate) mod graph;
pub(crate) mod param;
pub(crate) mod runs;

pub use self::function::IntoFnSystem;
pub use self::graph::{GraphFormat, ScheduleError, SystemConfig};
pub use self::param::{
    EventReader, EventWriter, Local, ParamItem, Query, QueryEntityError, QueryParamData, Res,
    ResMut, SystemAccess, SystemParam, Tick,
};
