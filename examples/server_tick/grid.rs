//! The spatial grid: a uniform grid of square cells over the map, rebuilt from scratch at tick
//! start by a counting sort into buffers that are kept from tick to tick.
//!
//! ```text
//!  cell_start: [0, 0, 3, 3, 5, …, len]   entries of cell c are entries[cell_start[c]..cell_start[c + 1]]
//!  entries:    [e7 e2 e9 | e4 e1 | …]    sorted by cell; within a cell, in insertion order
//! ```
//!
//! A rebuild clears and refills `cell_start`, `entries` and a staging vector; none of them
//! shrinks, so once the population has peaked a rebuild allocates nothing. The grid is read-only
//! between rebuilds: the AI pass reads it from many workers at once.

use freyr::Entity;

/// One aircraft as the grid saw it when it was built: a copy, so readers see the state of that
/// moment whatever happens to the world afterwards.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct GridEntry {
    /// The aircraft.
    pub entity: Entity,
    /// Its position when the grid was built.
    pub pos: [f32; 3],
    /// Its velocity when the grid was built.
    pub vel: [f32; 3],
}

/// A uniform grid of square cells over the map `[0, side)²`.
pub(crate) struct SpatialGrid {
    cell_size: f32,
    cells_per_side: usize,
    /// `cell_start[c]..cell_start[c + 1]` are the entries of cell `c`.
    cell_start: Vec<u32>,
    entries: Vec<GridEntry>,
    /// Entries in insertion order, before the counting sort.
    staging: Vec<(u32, GridEntry)>,
}

impl SpatialGrid {
    /// An empty grid of cells `cell_size` metres wide over a map `side` metres across.
    ///
    /// # Panics
    ///
    /// If `cell_size` is not a positive number (pass e.g. 2000.0), or the map would need more
    /// than [`MAX_CELLS_PER_SIDE`] cells a side (pass a larger cell).
    #[must_use]
    pub(crate) fn new(cell_size: f32, side: f32) -> Self {
        assert!(
            cell_size.is_finite() && cell_size > 0.0,
            "the grid's cell size must be a positive number of metres (got {cell_size}); try 2000"
        );
        let cells_per_side = cells_per_side(cell_size, side).unwrap_or_else(|| {
            panic!(
                "a {cell_size} m cell needs more than {MAX_CELLS_PER_SIDE} cells a side on a \
                 {side} m map; pass at least {} m",
                min_cell_size(side)
            )
        });
        SpatialGrid {
            cell_size,
            cells_per_side,
            cell_start: Vec::new(),
            entries: Vec::new(),
            staging: Vec::new(),
        }
    }

    /// The cell holding horizontal position `(x, y)` (clamped to the map).
    fn cell_of(&self, x: f32, y: f32) -> (usize, usize) {
        let last = self.cells_per_side - 1;
        let c = |v: f32| ((v / self.cell_size).max(0.0) as usize).min(last);
        (c(x), c(y))
    }

    /// Starts a rebuild: forgets every entry, keeps the buffers.
    pub(crate) fn clear(&mut self) {
        self.staging.clear();
        self.entries.clear();
    }

    /// Adds an entry to the rebuild in progress.
    pub(crate) fn push(&mut self, entry: GridEntry) {
        let (cx, cy) = self.cell_of(entry.pos[0], entry.pos[1]);
        let cell = (cy * self.cells_per_side + cx) as u32;
        self.staging.push((cell, entry));
    }

    /// Ends a rebuild: sorts the pushed entries into their cells (a stable counting sort).
    pub(crate) fn finish(&mut self) {
        let cells = self.cells_per_side * self.cells_per_side;
        self.cell_start.clear();
        self.cell_start.resize(cells + 1, 0);
        for &(cell, _) in &self.staging {
            self.cell_start[cell as usize + 1] += 1;
        }
        for c in 0..cells {
            self.cell_start[c + 1] += self.cell_start[c];
        }
        let placeholder = GridEntry {
            entity: Entity::from_bits(1 << 32).expect("generation 1 is a valid generation"),
            pos: [0.0; 3],
            vel: [0.0; 3],
        };
        self.entries.resize(self.staging.len(), placeholder);
        // `cell_start[c]` is used as cell c's write cursor, then shifted back below.
        for &(cell, entry) in &self.staging {
            let slot = &mut self.cell_start[cell as usize];
            self.entries[*slot as usize] = entry;
            *slot += 1;
        }
        for c in (1..=cells).rev() {
            self.cell_start[c] = self.cell_start[c - 1];
        }
        self.cell_start[0] = 0;
    }

    /// The number of entries.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Calls `f` for every entry within `radius` metres of `center` (3-D distance), cell by
    /// cell in row-major order and, within a cell, in insertion order: the same order on every
    /// machine and worker count.
    pub(crate) fn for_each_within(
        &self,
        center: [f32; 3],
        radius: f32,
        mut f: impl FnMut(&GridEntry, f32),
    ) {
        let (x0, y0) = self.cell_of(center[0] - radius, center[1] - radius);
        let (x1, y1) = self.cell_of(center[0] + radius, center[1] + radius);
        let r2 = radius * radius;
        for cy in y0..=y1 {
            let row = cy * self.cells_per_side;
            let (start, end) = (self.cell_start[row + x0], self.cell_start[row + x1 + 1]);
            for entry in &self.entries[start as usize..end as usize] {
                let d2 = dist2(entry.pos, center);
                if d2 <= r2 {
                    f(entry, d2);
                }
            }
        }
    }

    /// The capacity of the entry buffer (to show a rebuild reuses it).
    #[cfg(test)]
    #[must_use]
    pub(crate) fn capacity(&self) -> usize {
        self.entries.capacity()
    }
}

/// The most cells a grid has on a side (16.8 million cells, 64 MiB of cell index).
pub(crate) const MAX_CELLS_PER_SIDE: usize = 4096;

/// The cells a side of a `side` metre map needs at `cell_size` metres a cell, if at most
/// [`MAX_CELLS_PER_SIDE`].
#[must_use]
pub(crate) fn cells_per_side(cell_size: f32, side: f32) -> Option<usize> {
    let cells = (f64::from(side) / f64::from(cell_size)).ceil().max(1.0);
    (cells <= MAX_CELLS_PER_SIDE as f64).then_some(cells as usize)
}

/// The smallest cell a `side` metre map takes, in metres (rounded up to the millimetre).
#[must_use]
pub(crate) fn min_cell_size(side: f32) -> f64 {
    (f64::from(side) / MAX_CELLS_PER_SIDE as f64 * 1000.0).ceil() / 1000.0
}

/// Squared 3-D distance.
#[must_use]
pub(crate) fn dist2(a: [f32; 3], b: [f32; 3]) -> f32 {
    let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::REFERENCE_SIDE as WORLD_SIZE;

    fn entry(index: u32, x: f32, y: f32) -> GridEntry {
        GridEntry {
            entity: Entity::from_bits(u64::from(index) | 1 << 32).unwrap(),
            pos: [x, y, 1000.0],
            vel: [0.0; 3],
        }
    }

    #[test]
    fn a_radius_query_finds_exactly_the_entries_within_it() {
        let mut grid = SpatialGrid::new(1500.0, WORLD_SIZE);
        let points: Vec<_> = (0..2000u32)
            .map(|i| {
                let h = crate::world::mix(u64::from(i), 77);
                entry(
                    i,
                    crate::world::unit(h) * WORLD_SIZE,
                    crate::world::unit(h >> 7) * WORLD_SIZE,
                )
            })
            .collect();
        grid.clear();
        points.iter().for_each(|&p| grid.push(p));
        grid.finish();
        assert_eq!(grid.len(), 2000);
        for center in [
            [0.0, 0.0, 1000.0],
            [20_000.0, 13_000.0, 1000.0],
            [39_999.0, 39_999.0, 0.0],
        ] {
            let mut found = Vec::new();
            grid.for_each_within(center, 3000.0, |e, _| found.push(e.entity.index()));
            found.sort_unstable();
            let mut want: Vec<_> = points
                .iter()
                .filter(|p| dist2(p.pos, center) <= 3000.0 * 3000.0)
                .map(|p| p.entity.index())
                .collect();
            want.sort_unstable();
            assert_eq!(found, want, "around {center:?}");
        }
    }

    #[test]
    fn a_rebuild_of_the_same_population_reuses_its_buffers() {
        let mut grid = SpatialGrid::new(2000.0, WORLD_SIZE);
        for round in 0..3 {
            grid.clear();
            for i in 0..500u32 {
                grid.push(entry(i, (i * 70) as f32, (round * 100 + i) as f32));
            }
            grid.finish();
        }
        let capacity = grid.capacity();
        let before = grid.entries.as_ptr();
        grid.clear();
        for i in 0..500u32 {
            grid.push(entry(i, 5.0, 5.0));
        }
        grid.finish();
        assert_eq!(grid.capacity(), capacity);
        assert_eq!(
            grid.entries.as_ptr(),
            before,
            "the entry buffer was reallocated"
        );
    }
}
