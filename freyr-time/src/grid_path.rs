//! A resumable grid A* search: an [`Incremental`] job whose work unit is one
//! node expansion.
//!
//! A* (Hart, Nilsson and Raphael, 1968) on an 8-connected grid with integer
//! step costs (10 straight, 14 diagonal; no corner cutting) and the octile
//! distance as heuristic, which is admissible and consistent for those
//! costs, so the first time the goal is popped its path is optimal. The open
//! list is a binary heap ordered by `(f, h, insertion number)`: ties break
//! the same way on every machine, so the path found, and the number of
//! expansions it takes, depend only on the grid and the endpoints. The
//! search state (heap, costs, parents) persists between calls, so a budget
//! of `N` expansions per tick resumes exactly where the last tick stopped.
//! The state is kept per cell *reached* (hash maps keyed by cell index), so
//! a search costs memory in proportion to what it explores, not to the
//! grid's size, and every cost and distance is a `u64`, so no path through
//! a grid a `u32` can index overflows.
//!
//! It is a general tool, not a game's: any caller with a grid of walkable
//! cells and a per-tick work budget can run it, alone through
//! [`advance_by`](crate::advance_by) or beside other [`Incremental`] jobs in
//! a [`BudgetQueue`](crate::BudgetQueue), and it doubles as the worked
//! example of writing an [`Incremental`] job.

use core::cmp::Ordering;
use core::fmt;
use core::hash::{BuildHasherDefault, Hasher};
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use crate::budget::{Incremental, Progress, WorkBudget};

mod grid;

use self::grid::{DIAGONAL, STRAIGHT};
pub use self::grid::{Grid, GridError, octile_distance};

/// A path found by [`GridPathSearch`]: the cells from start to goal
/// inclusive, and its cost (10 per straight step, 14 per diagonal).
///
/// # Examples
///
/// ```
/// use freyr::time::budget::advance_by;
/// use freyr::time::path::{Grid, GridPathSearch};
/// let mut search = GridPathSearch::new(Grid::new(3, 1).into(), (0, 0), (2, 0));
/// let path = advance_by(&mut search, 100).0.done().unwrap().unwrap();
/// assert_eq!(path.cells, [(0, 0), (1, 0), (2, 0)]);
/// assert_eq!(path.cost, 20);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridPath {
    /// Start to goal, inclusive.
    pub cells: Vec<(u32, u32)>,
    /// The path's cost, in `u64`: a path through a grid of up to `u32::MAX`
    /// cells can cost more than a `u32` holds.
    pub cost: u64,
}

/// An open-list entry; the heap pops the smallest `(f, h, seq)`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Open {
    f: u64,
    h: u64,
    seq: u64,
    cell: u32,
}

impl Ord for Open {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: `BinaryHeap` is a max-heap.
        (other.f, other.h, other.seq).cmp(&(self.f, self.h, self.seq))
    }
}

impl PartialOrd for Open {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// What the search knows about one cell it reached.
#[derive(Clone, Copy)]
struct Node {
    /// Best known cost from the start.
    g: u64,
    /// The cell it was reached from; `u32::MAX` = none (the start).
    parent: u32,
    /// Expanded (its cost is final).
    closed: bool,
}

/// A hasher for `u32` cell indices: one multiply (Fibonacci hashing). The
/// maps are only looked up, never iterated, so their order cannot reach
/// the results; a fixed hasher keeps them identical across runs anyway.
#[derive(Default)]
struct CellHasher(u64);

impl Hasher for CellHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, cell: u32) {
        self.0 = (u64::from(cell) ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The search state, created on the first expansion and grown only with
/// the cells reached: memory in proportion to what the search explores.
struct Search {
    open: BinaryHeap<Open>,
    /// Every cell reached so far (pushed on the open list at least once).
    nodes: HashMap<u32, Node, BuildHasherDefault<CellHasher>>,
    seq: u64,
}

impl Search {
    fn is_closed(&self, cell: u32) -> bool {
        self.nodes.get(&cell).is_some_and(|n| n.closed)
    }
}

/// A resumable A* search from `start` to `goal` on a shared [`Grid`]:
/// one work unit = one node expansion. Its output is `Some(path)`, or `None`
/// when the goal cannot be reached (or an endpoint is blocked).
///
/// Its state is kept only for the cells it reaches (a few dozen bytes
/// each, hash maps keyed by cell), so a short search on a huge grid stays
/// small: [`state_bytes`](Self::state_bytes) reports it.
///
/// # Examples
///
/// ```
/// use freyr::time::budget::{Progress, advance_by};
/// use freyr::time::path::{Grid, GridPathSearch};
///
/// let grid = Grid::from_rows(&[
///     ".....",
///     ".###.",
///     ".....",
/// ])
/// .unwrap();
/// let mut search = GridPathSearch::new(grid.into(), (0, 1), (4, 1));
/// // Two expansions per tick, however long they take.
/// let mut ticks = 0;
/// let path = loop {
///     ticks += 1;
///     if let (Progress::Done(path), _) = advance_by(&mut search, 2) {
///         break path.unwrap();
///     }
/// };
/// assert_eq!(path.cost, 60); // over the wall: no cutting its corners
/// assert_eq!(ticks, search.expanded().div_ceil(2));
/// ```
pub struct GridPathSearch {
    grid: Arc<Grid>,
    start: (u32, u32),
    goal: (u32, u32),
    search: Option<Search>,
    expanded: u64,
}

impl GridPathSearch {
    /// A search not started yet (it allocates its state on the first unit).
    ///
    /// # Examples
    ///
    /// ```
    /// let search = freyr::time::path::GridPathSearch::new(freyr::time::path::Grid::new(2, 2).into(), (0, 0), (1, 1));
    /// assert_eq!(search.expanded(), 0);
    /// ```
    #[must_use]
    pub fn new(grid: Arc<Grid>, start: (u32, u32), goal: (u32, u32)) -> Self {
        GridPathSearch {
            grid,
            start,
            goal,
            search: None,
            expanded: 0,
        }
    }

    /// Nodes expanded so far (the work units spent).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::time::budget::advance_by;
    /// use freyr::time::path::{Grid, GridPathSearch};
    /// let mut s = GridPathSearch::new(Grid::new(5, 1).into(), (0, 0), (4, 0));
    /// advance_by(&mut s, 100);
    /// assert_eq!(s.expanded(), 5); // a straight corridor: one expansion per cell
    /// ```
    #[must_use]
    pub fn expanded(&self) -> u64 {
        self.expanded
    }

    /// The endpoints.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = freyr::time::path::GridPathSearch::new(freyr::time::path::Grid::new(3, 3).into(), (0, 1), (2, 2));
    /// assert_eq!(s.endpoints(), ((0, 1), (2, 2)));
    /// ```
    #[must_use]
    pub fn endpoints(&self) -> ((u32, u32), (u32, u32)) {
        (self.start, self.goal)
    }

    /// The bytes the search state holds now (open list and per-cell
    /// records, by capacity): 0 before the first expansion, then in
    /// proportion to the cells reached, whatever the grid's size.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::time::budget::advance_by;
    /// use freyr::time::path::{Grid, GridPathSearch};
    /// let grid = std::sync::Arc::new(Grid::new(2000, 2000)); // 4 million cells
    /// let mut search = GridPathSearch::new(grid, (10, 10), (11, 10));
    /// assert_eq!(search.state_bytes(), 0);
    /// advance_by(&mut search, 1); // the start expanded: 8 neighbours reached
    /// assert!(search.state_bytes() < 4096, "{}", search.state_bytes());
    /// ```
    #[must_use]
    pub fn state_bytes(&self) -> usize {
        self.search.as_ref().map_or(0, |s| {
            // A hash map entry: the key, the value and one control byte.
            s.open.capacity() * core::mem::size_of::<Open>()
                + s.nodes.capacity() * (core::mem::size_of::<(u32, Node)>() + 1)
        })
    }

    fn begin(&self) -> Search {
        let mut search = Search {
            open: BinaryHeap::new(),
            nodes: HashMap::default(),
            seq: 0,
        };
        let start = self.grid.index(self.start.0, self.start.1);
        let h = octile_distance(self.start, self.goal);
        search.nodes.insert(
            start,
            Node {
                g: 0,
                parent: u32::MAX,
                closed: false,
            },
        );
        search.open.push(Open {
            f: h,
            h,
            seq: 0,
            cell: start,
        });
        search
    }

    fn path_to(&self, search: &Search, goal: u32) -> GridPath {
        let mut cells = vec![self.grid.cell(goal)];
        let mut at = search.nodes[&goal];
        let cost = at.g;
        while at.parent != u32::MAX {
            cells.push(self.grid.cell(at.parent));
            at = search.nodes[&at.parent];
        }
        cells.reverse();
        GridPath { cells, cost }
    }
}

impl Incremental for GridPathSearch {
    type Output = Option<GridPath>;

    fn advance(&mut self, budget: &mut WorkBudget) -> Progress<Option<GridPath>> {
        let grid = Arc::clone(&self.grid);
        if grid.is_blocked(self.start.0, self.start.1) || grid.is_blocked(self.goal.0, self.goal.1)
        {
            return Progress::Done(None);
        }
        let mut search = match self.search.take() {
            Some(search) => search,
            None => self.begin(),
        };
        let goal = grid.index(self.goal.0, self.goal.1);
        loop {
            // Drop entries superseded by a cheaper push (not an expansion).
            while search
                .open
                .peek()
                .is_some_and(|top| search.is_closed(top.cell))
            {
                search.open.pop();
            }
            let Some(&top) = search.open.peek() else {
                return Progress::Done(None);
            };
            if !budget.try_spend() {
                self.search = Some(search);
                return Progress::Pending;
            }
            search.open.pop();
            self.expanded += 1;
            if top.cell == goal {
                return Progress::Done(Some(self.path_to(&search, goal)));
            }
            let node = search
                .nodes
                .get_mut(&top.cell)
                .expect("a cell on the open list was reached");
            node.closed = true;
            let g = node.g;
            let (x, y) = grid.cell(top.cell);
            for (dx, dy) in [
                (-1, -1),
                (0, -1),
                (1, -1),
                (-1, 0),
                (1, 0),
                (-1, 1),
                (0, 1),
                (1, 1),
            ] {
                let (Some(nx), Some(ny)) = (x.checked_add_signed(dx), y.checked_add_signed(dy))
                else {
                    continue;
                };
                if grid.is_blocked(nx, ny) {
                    continue;
                }
                let diagonal = dx != 0 && dy != 0;
                // No corner cutting: both orthogonal neighbours must be open.
                if diagonal && (grid.is_blocked(nx, y) || grid.is_blocked(x, ny)) {
                    continue;
                }
                let next = grid.index(nx, ny);
                let cost = g + if diagonal { DIAGONAL } else { STRAIGHT };
                let improves = match search.nodes.get_mut(&next) {
                    Some(node) if node.closed || cost >= node.g => false,
                    Some(node) => {
                        node.g = cost;
                        node.parent = top.cell;
                        true
                    }
                    None => {
                        search.nodes.insert(
                            next,
                            Node {
                                g: cost,
                                parent: top.cell,
                                closed: false,
                            },
                        );
                        true
                    }
                };
                if improves {
                    search.seq += 1;
                    let h = octile_distance((nx, ny), self.goal);
                    search.open.push(Open {
                        f: cost + h,
                        h,
                        seq: search.seq,
                        cell: next,
                    });
                }
            }
        }
    }
}

impl fmt::Debug for GridPathSearch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GridPathSearch")
            .field("start", &self.start)
            .field("goal", &self.goal)
            .field("expanded", &self.expanded)
            .field("started", &self.search.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests;
