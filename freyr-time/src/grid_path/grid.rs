//! The grid the A* searches: walkable cells of a width x height map, built open or from text
//! rows, and the octile distance (in `u64`, so no grid a `u32` can index overflows it).

use core::fmt;

/// Cost of a straight step.
pub(super) const STRAIGHT: u64 = 10;
/// Cost of a diagonal step (10 x sqrt 2, rounded).
pub(super) const DIAGONAL: u64 = 14;

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
///     "grid row 1 has 2 cells, row 0 has 3; every row must be as wide as the first"
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
                "grid row {row} has {cells} cells, row 0 has {expected}; every row must \
                 be as wide as the first"
            ),
            GridError::TooLarge { width, height } => write!(
                f,
                "a {width} x {height} grid has more cells than a u32 index holds (at \
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

    pub(super) fn index(&self, x: u32, y: u32) -> u32 {
        y * self.width + x
    }

    pub(super) fn cell(&self, index: u32) -> (u32, u32) {
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
