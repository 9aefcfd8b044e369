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
//! grid's size.

use core::cmp::Ordering;
use core::fmt;
use core::hash::{BuildHasherDefault, Hasher};
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use crate::budget::{Incremental, Progress, WorkBudget};

/// Cost of a straight step.
const STRAIGHT: u64 = 10;
/// Cost of a diagonal step (10 x sqrt 2, rounded).
const DIAGONAL: u64 = 14;

/// Why [`Grid::from_rows`] could not build a grid.
///
/// # Examples
///
/// ```
/// use freyr::time::path::{Grid, GridError};
/// let err = Grid::from_rows(&["...", ".."]).unwrap_err();
/// assert_eq!(err, GridError::RaggedRow { row: 1, cells: 2, expected: 3 });
/// assert_eq!(
///     err.to_string(),
///     "freyr: grid row 1 has 2 cells, row 0 has 3; every row must be as wide as the first"
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridError {
    /// Row `row` has `cells` cells where row 0 has `expected`.
    RaggedRow {
        /// The offending row (0-based).
        row: usize,
        /// Its number of cells (characters).
        cells: usize,
        /// The number of cells of row 0.
        expected: usize,
    },
    /// `width x height` cells do not fit in a `u32` cell index.
    TooLarge {
        /// Cells per row.
        width: usize,
        /// Rows.
        height: usize,
    },
}

impl fmt::Display for GridError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            GridError::RaggedRow {
                row,
                cells,
                expected,
            } => write!(
                f,
                "freyr: grid row {row} has {cells} cells, row 0 has {expected}; every row must \
                 be as wide as the first"
            ),
            GridError::TooLarge { width, height } => write!(
                f,
                "freyr: a {width} x {height} grid has more cells than a u32 index holds (at \
                 most {}); use a coarser grid",
                u32::MAX
            ),
        }
    }
}

impl std::error::Error for GridError {}

/// A grid of open and blocked cells, `width x height`, row-major.
///
/// # Examples
///
/// ```
/// use freyr::time::path::Grid;
/// let grid = Grid::from_rows(&["..#", "..."]).unwrap();
/// assert_eq!((grid.width(), grid.height()), (3, 2));
/// assert!(grid.is_blocked(2, 0));
/// assert!(!grid.is_blocked(2, 1));
/// assert!(grid.is_blocked(3, 0)); // outside counts as blocked
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    width: u32,
    height: u32,
    blocked: Vec<bool>,
}

impl Grid {
    /// An open grid.
    ///
    /// # Panics
    ///
    /// If `width x height` does not fit in a `u32` cell index.
    ///
    /// # Examples
    ///
    /// ```
    /// let grid = freyr::time::path::Grid::new(4, 3);
    /// assert!(!grid.is_blocked(3, 2));
    /// ```
    #[must_use]
    pub fn new(width: u32, height: u32) -> Self {
        let cells = u64::from(width) * u64::from(height);
        assert!(
            u32::try_from(cells).is_ok(),
            "freyr: a {width} x {height} grid has more cells than a u32 index holds; use a \
             coarser grid"
        );
        Grid {
            width,
            height,
            blocked: vec![false; cells as usize],
        }
    }

    /// A grid drawn as text rows: `#` is blocked, any other character open.
    /// Row 0 is `y = 0`; a cell is one `char`.
    ///
    /// # Errors
    ///
    /// - [`GridError::RaggedRow`] if a row's length differs from row 0's.
    /// - [`GridError::TooLarge`] if the grid has more cells than a `u32`
    ///   index holds.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::time::path::{Grid, GridError};
    /// assert!(matches!(Grid::from_rows(&["..", "."]), Err(GridError::RaggedRow { row: 1, .. })));
    /// assert_eq!(Grid::from_rows(&[]).unwrap().width(), 0);
    /// ```
    pub fn from_rows(rows: &[&str]) -> Result<Self, GridError> {
        let width = rows.first().map_or(0, |r| r.chars().count());
        let height = rows.len();
        for (row, text) in rows.iter().enumerate() {
            let cells = text.chars().count();
            if cells != width {
                return Err(GridError::RaggedRow {
                    row,
                    cells,
                    expected: width,
                });
            }
        }
        let too_large = GridError::TooLarge { width, height };
        let (Ok(w), Ok(h)) = (u32::try_from(width), u32::try_from(height)) else {
            return Err(too_large);
        };
        if u32::try_from(u64::from(w) * u64::from(h)).is_err() {
            return Err(too_large);
        }
        let mut grid = Grid::new(w, h);
        for (y, row) in rows.iter().enumerate() {
            for (x, c) in row.chars().enumerate() {
                grid.blocked[y * width + x] = c == '#';
            }
        }
        Ok(grid)
    }

    /// Blocks or opens cell `(x, y)`.
    ///
    /// # Panics
    ///
    /// If `(x, y)` is outside the grid.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut grid = freyr::time::path::Grid::new(2, 2);
    /// grid.set_blocked(1, 1, true);
    /// assert!(grid.is_blocked(1, 1));
    /// ```
    pub fn set_blocked(&mut self, x: u32, y: u32, blocked: bool) {
        assert!(
            x < self.width && y < self.height,
            "freyr: cell ({x}, {y}) is outside the {} x {} grid",
            self.width,
            self.height
        );
        let i = self.index(x, y);
        self.blocked[i as usize] = blocked;
    }

    /// Whether `(x, y)` is blocked; cells outside the grid are.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(freyr::time::path::Grid::new(1, 1).is_blocked(0, 5));
    /// ```
    #[must_use]
    pub fn is_blocked(&self, x: u32, y: u32) -> bool {
        x >= self.width || y >= self.height || self.blocked[self.index(x, y) as usize]
    }

    /// Cells per row.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(freyr::time::path::Grid::new(7, 2).width(), 7);
    /// ```
    #[must_use]
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Rows.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(freyr::time::path::Grid::new(7, 2).height(), 2);
    /// ```
    #[must_use]
    pub fn height(&self) -> u32 {
        self.height
    }

    fn index(&self, x: u32, y: u32) -> u32 {
        y * self.width + x
    }

    fn cell(&self, index: u32) -> (u32, u32) {
        (index % self.width, index / self.width)
    }
}

/// The octile distance between two cells in step-cost units (10 per
/// straight step, 14 per diagonal): the exact cost on an open grid.
///
/// Computed in `u64`, which holds it exactly for any two `u32` cells (at
/// most 14 x `u32::MAX`, about 6.0e10): no range is rejected and nothing
/// wraps.
///
/// # Examples
///
/// ```
/// use freyr::time::path::octile_distance;
/// assert_eq!(octile_distance((0, 0), (3, 0)), 30);
/// assert_eq!(octile_distance((0, 0), (3, 3)), 42);
/// assert_eq!(octile_distance((5, 1), (1, 3)), 48); // 2 diagonal + 2 straight
/// assert_eq!(octile_distance((0, 0), (500_000_000, 0)), 5_000_000_000);
/// ```
#[must_use]
pub fn octile_distance(a: (u32, u32), b: (u32, u32)) -> u64 {
    let dx = u64::from(a.0.abs_diff(b.0));
    let dy = u64::from(a.1.abs_diff(b.1));
    STRAIGHT * dx.max(dy) + (DIAGONAL - STRAIGHT) * dx.min(dy)
}

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
mod tests {
    use super::*;
    use crate::budget::advance_by;

    fn solve(
        grid: &Arc<Grid>,
        start: (u32, u32),
        goal: (u32, u32),
        per_tick: u64,
    ) -> (Option<GridPath>, u64, u64) {
        let mut search = GridPathSearch::new(Arc::clone(grid), start, goal);
        let mut ticks = 0;
        loop {
            ticks += 1;
            if let (Progress::Done(path), _) = advance_by(&mut search, per_tick) {
                return (path, search.expanded(), ticks);
            }
        }
    }

    fn maze() -> Arc<Grid> {
        Arc::new(
            Grid::from_rows(&[
                "..........",
                ".########.",
                ".#......#.",
                ".#.####.#.",
                ".#.#..#.#.",
                ".#.#.##.#.",
                ".#.#....#.",
                ".#.######.",
                ".#........",
                "..........",
            ])
            .unwrap(),
        )
    }

    #[test]
    fn the_open_grid_path_costs_the_octile_distance() {
        let grid = Arc::new(Grid::new(20, 20));
        for (start, goal) in [((0, 0), (19, 19)), ((3, 17), (15, 2)), ((7, 7), (7, 7))] {
            let (path, _, _) = solve(&grid, start, goal, 1000);
            let path = path.unwrap();
            assert_eq!(path.cost, octile_distance(start, goal));
            assert_eq!(path.cells.first(), Some(&start));
            assert_eq!(path.cells.last(), Some(&goal));
        }
    }

    #[test]
    fn paths_are_connected_and_avoid_walls_and_corners() {
        let grid = maze();
        let (path, _, _) = solve(&grid, (4, 4), (0, 0), 1000);
        let path = path.unwrap();
        let mut cost = 0;
        for w in path.cells.windows(2) {
            let ((ax, ay), (bx, by)) = (w[0], w[1]);
            assert!(!grid.is_blocked(bx, by));
            let (dx, dy) = (ax.abs_diff(bx), ay.abs_diff(by));
            assert!(dx <= 1 && dy <= 1 && dx + dy > 0);
            if dx + dy == 2 {
                assert!(
                    !grid.is_blocked(bx, ay) && !grid.is_blocked(ax, by),
                    "cut a corner"
                );
                cost += DIAGONAL;
            } else {
                cost += STRAIGHT;
            }
        }
        assert_eq!(cost, path.cost);
    }

    #[test]
    fn unreachable_and_blocked_endpoints_give_none() {
        let walled = Arc::new(Grid::from_rows(&["..#..", "..#..", "..#.."]).unwrap());
        let (path, expanded, _) = solve(&walled, (0, 0), (4, 2), 3);
        assert_eq!(path, None);
        assert_eq!(expanded, 6, "every reachable cell expanded once");
        assert_eq!(solve(&walled, (2, 0), (0, 0), 3).0, None);
        assert_eq!(solve(&walled, (0, 0), (9, 9), 3).0, None);
    }

    #[test]
    fn the_budget_split_changes_nothing_but_the_tick_count() {
        let grid = maze();
        let (reference, expanded, _) = solve(&grid, (4, 4), (9, 9), u64::MAX);
        for per_tick in [1, 2, 3, 7, 50] {
            let (path, e, ticks) = solve(&grid, (4, 4), (9, 9), per_tick);
            assert_eq!(path, reference, "budget {per_tick}");
            assert_eq!(e, expanded);
            assert_eq!(ticks, expanded.div_ceil(per_tick));
        }
    }

    #[test]
    fn ragged_rows_are_a_typed_error_that_names_the_row() {
        let err = Grid::from_rows(&["....", "....", "..."]).unwrap_err();
        assert_eq!(
            err,
            GridError::RaggedRow {
                row: 2,
                cells: 3,
                expected: 4
            }
        );
        let shown = err.to_string();
        assert!(shown.contains("row 2 has 3 cells, row 0 has 4"), "{shown}");
        let _: &dyn std::error::Error = &err;
    }

    #[test]
    fn octile_distance_is_exact_at_the_ends_of_the_u32_range() {
        assert_eq!(octile_distance((0, 0), (500_000_000, 0)), 5_000_000_000);
        let max = u32::MAX;
        assert_eq!(
            octile_distance((0, 0), (max, max)),
            14 * u64::from(max),
            "all diagonal"
        );
        assert_eq!(octile_distance((max, 0), (0, 0)), 10 * u64::from(max));
        assert_eq!(octile_distance((max, 3), (max, 3)), 0);
    }

    #[test]
    #[should_panic(expected = "outside the 2 x 2 grid")]
    fn blocking_outside_the_grid_panics() {
        Grid::new(2, 2).set_blocked(2, 0, true);
    }
}
