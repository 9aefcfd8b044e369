//! Systems and phases: [`System`], [`Phase`].

use crate::registry::Registry;

/// The three phases of [`Registry::update`], run in this order. After each phase the registry
/// runs a sync point: it waits for all tasks, applies recorded commands, then destroys the
/// entities whose destruction was requested.
///
/// # Examples
///
/// ```
/// use freyr_query::Phase;
///
/// assert_eq!(Phase::ALL, [Phase::PreUpdate, Phase::Update, Phase::PostUpdate]);
/// assert!(Phase::PreUpdate < Phase::PostUpdate);
/// assert_eq!(Phase::Update.index(), 1);
/// assert_eq!(Phase::PostUpdate.name(), "PostUpdate");
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Runs first: input, tick-start structures (spatial grids), AI sampling.
    PreUpdate,
    /// The main simulation step.
    Update,
    /// Runs last: cleanup, reaping, snapshots.
    PostUpdate,
}

impl Phase {
    /// Every phase, in run order.
    pub const ALL: [Phase; 3] = [Phase::PreUpdate, Phase::Update, Phase::PostUpdate];

    /// Position in [`Phase::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The phase's name.
    pub fn name(self) -> &'static str {
        match self {
            Phase::PreUpdate => "PreUpdate",
            Phase::Update => "Update",
            Phase::PostUpdate => "PostUpdate",
        }
    }
}

/// A unit of per-tick logic. Registered with [`Registry::add_system`] for one [`Phase`]; within a
/// phase, systems run in registration order on the thread that calls [`Registry::update`].
///
/// A system gets the registry mutably and may launch `each_async` work, run `each`, call
/// [`Registry::execute_tasks`] for an explicit sync point, and record structural changes. It may
/// not call [`Registry::update`] (that panics: updates do not nest).
///
/// Closures `FnMut(&mut Registry, f32) + Send + 'static` are systems too.
///
/// # Examples
///
/// ```
/// use freyr_query::{Phase, Registry, System};
///
/// struct Pos(f32);
/// struct Vel(f32);
///
/// struct Integrate;
/// impl System for Integrate {
///     fn update(&mut self, registry: &mut Registry, dt: f32) {
///         registry
///             .query::<(&mut Pos, &Vel)>()
///             .with_label("Integrate")
///             .each_async(move |_, (p, v)| p.0 += v.0 * dt);
///     }
/// }
///
/// let mut registry = Registry::with_workers(2);
/// let e = registry.spawn((Pos(0.0), Vel(2.0)));
/// registry.add_system(Phase::Update, Integrate);
/// registry.add_system(Phase::PostUpdate, move |r: &mut Registry, _dt: f32| {
///     let x = r.get::<Pos>(e).unwrap().0;
///     assert!(x > 0.0); // the Update phase's sync point already ran
/// });
/// registry.update(0.5);
/// registry.update(0.5);
/// assert_eq!(registry.get::<Pos>(e).unwrap().0, 2.0);
/// ```
pub trait System: Send + 'static {
    /// Runs the system once.
    fn update(&mut self, registry: &mut Registry, dt: f32);

    /// A name for diagnostics.
    fn name(&self) -> &str {
        core::any::type_name::<Self>()
    }
}

impl<F> System for F
where
    F: FnMut(&mut Registry, f32) + Send + 'static,
{
    fn update(&mut self, registry: &mut Registry, dt: f32) {
        self(registry, dt);
    }
}
