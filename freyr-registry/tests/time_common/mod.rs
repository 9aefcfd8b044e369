//! Pieces shared by the time tests: components with stable hashes, per-(entity, tick)
//! randomness, and an A* path request for an agent, run under a work budget.

#![allow(dead_code)] // each test binary uses a different subset

use std::sync::Arc;

use freyr_registry::{Entity, StableHash, StableHasher};
use freyr_time::{GridPath, GridPathSearch, Incremental, Progress, WorkBudget};

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Pos {
    pub x: f32,
    pub y: f32,
}
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Vel {
    pub x: f32,
    pub y: f32,
}
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Age(pub u32);
/// Written by deadline jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Board(pub u64);
/// Written by pump results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Label(pub u64);
/// An agent walking a grid to `goal`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Agent {
    pub cell: (u32, u32),
    pub goal: (u32, u32),
}
/// The length (cells) and cost of the agent's path, and the tick it arrived; `u32::MAX` cost =
/// no path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Route {
    pub cells: u32,
    pub cost: u32,
    pub found_at: u64,
}

impl StableHash for Pos {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.x.stable_hash(h);
        self.y.stable_hash(h);
    }
}
impl StableHash for Vel {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.x.stable_hash(h);
        self.y.stable_hash(h);
    }
}
impl StableHash for Age {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}
impl StableHash for Board {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}
impl StableHash for Label {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}
impl StableHash for Agent {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.cell.0.stable_hash(h);
        self.cell.1.stable_hash(h);
        self.goal.0.stable_hash(h);
        self.goal.1.stable_hash(h);
    }
}
impl StableHash for Route {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.cells.stable_hash(h);
        self.cost.stable_hash(h);
        self.found_at.stable_hash(h);
    }
}

/// SplitMix64's generator step: the golden-ratio increment, then [`freyr::mix`].
pub(crate) fn mix(z: u64) -> u64 {
    freyr::mix(z.wrapping_add(0x9E37_79B9_7F4A_7C15))
}

/// Per-entity randomness seeded by (entity, tick, salt), never a shared RNG.
pub(crate) fn rand(e: Entity, tick: u64, salt: u64) -> u64 {
    mix(e.to_bits() ^ tick.rotate_left(40) ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// A 24 x 24 grid with walls that force detours.
pub(crate) fn test_grid() -> freyr_time::Grid {
    let mut grid = freyr_time::Grid::new(24, 24);
    for y in 2..22 {
        grid.set_blocked(8, y, true);
        grid.set_blocked(16, 23 - y, true);
    }
    for x in 10..15 {
        grid.set_blocked(x, 12, true);
    }
    grid
}

/// An agent's path request: an A* search, tagged with the agent it is for.
pub(crate) struct PathRequest {
    pub agent: Entity,
    pub search: GridPathSearch,
}

impl PathRequest {
    pub(crate) fn new(
        agent: Entity,
        grid: &Arc<freyr_time::Grid>,
        from: (u32, u32),
        to: (u32, u32),
    ) -> Self {
        PathRequest {
            agent,
            search: GridPathSearch::new(Arc::clone(grid), from, to),
        }
    }
}

impl Incremental for PathRequest {
    type Output = (Entity, Option<GridPath>);

    fn advance(&mut self, budget: &mut WorkBudget) -> Progress<Self::Output> {
        match self.search.advance(budget) {
            Progress::Pending => Progress::Pending,
            Progress::Done(path) => Progress::Done((self.agent, path)),
        }
    }
}

/// A blocking pause of `micros` microseconds, to make pool work slow at random.
pub(crate) fn pause(micros: u64) {
    std::thread::sleep(std::time::Duration::from_micros(micros));
}
