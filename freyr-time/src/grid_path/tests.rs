//! Unit tests of the budgeted A*: paths, budgets, memory proportional to what is explored.

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
