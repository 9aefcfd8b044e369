//! The speedup curves: one line per workload against the ideal `speedup = workers`, drawn with
//! plotters to SVG and PNG. Text uses the bundled DejaVu Sans Mono (see `assets/`), so the PNG
//! needs no system font and the binary runs anywhere it is copied.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::Point;

/// The font, registered under the family name plotters' default style asks for.
static FONT: &[u8] = include_bytes!("../../../assets/DejaVuSansMono.ttf");

/// Registers the bundled font (once per process).
pub(crate) fn register_font() {
    plotters::style::register_font("sans-serif", FontStyle::Normal, FONT)
        .unwrap_or_else(|_| panic!("the bundled DejaVuSansMono.ttf is not a valid font"));
}

/// Plot size in pixels.
const SIZE: (u32, u32) = (960, 640);

/// Draws `points` (every workload's measurements) to `svg` and `png`.
pub(crate) fn speedup_plots(
    points: &[Point],
    max_workers: usize,
    caption: &str,
    svg: &Path,
    png: &Path,
) -> Result<(), String> {
    draw(
        SVGBackend::new(svg, SIZE).into_drawing_area(),
        points,
        max_workers,
        caption,
    )
    .map_err(|e| format!("{}: {e}", svg.display()))?;
    draw(
        BitMapBackend::new(png, SIZE).into_drawing_area(),
        points,
        max_workers,
        caption,
    )
    .map_err(|e| format!("{}: {e}", png.display()))
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    points: &[Point],
    max_workers: usize,
    caption: &str,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    // Workers on an integer axis, so its ticks are whole worker counts.
    let top = max_workers as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(60)
        .build_cartesian_2d(0..max_workers as i32 + 1, 0.0..top + 0.5)?;
    chart
        .configure_mesh()
        .x_labels((max_workers + 2).min(18))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .x_desc("workers")
        .y_desc("speedup over 1 worker")
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 15))
        .draw()?;
    chart
        .draw_series(DashedLineSeries::new(
            [(1, 1.0), (max_workers as i32, top)],
            8,
            6,
            BLACK.stroke_width(2),
        ))?
        .label("ideal")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 24, y)], BLACK.stroke_width(2)));
    let mut names: Vec<&str> = points.iter().map(|p| p.workload).collect();
    names.dedup();
    for (i, name) in names.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let series: Vec<(i32, f64)> = points
            .iter()
            .filter(|p| p.workload == name)
            .map(|p| (p.workers as i32, p.speedup))
            .collect();
        chart
            .draw_series(LineSeries::new(
                series.iter().copied(),
                color.stroke_width(3),
            ))?
            .label(name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 24, y)], color.stroke_width(3)));
        chart.draw_series(
            series
                .iter()
                .map(|&(x, y)| Circle::new((x, y), 5, color.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 16))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    root.present()
}
