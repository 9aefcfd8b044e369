//! [`Phase`]: the three phases of a tick.

/// The three phases of `Registry::update`, run in this order. After
/// each phase the registry runs a sync point: it waits for all tasks, applies recorded commands,
/// then destroys the entities whose destruction was requested.
///
/// # Examples
///
/// ```
/// use freyr::Phase;
///
/// assert_eq!(Phase::ALL, [Phase::PreUpdate, Phase::Update, Phase::PostUpdate]);
/// assert!(Phase::PreUpdate < Phase::PostUpdate);
/// assert_eq!(Phase::Update.index(), 1);
/// assert_eq!(Phase::PostUpdate.name(), "PostUpdate");
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[doc(alias = "Stage")]
#[doc(alias = "SystemSet")]
#[doc(alias = "ScheduleLabel")]
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
