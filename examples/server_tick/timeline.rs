//! A per-thread timeline of one traced tick, drawn with `plotters` to SVG: one row per thread,
//! one bar per batch of tasks coloured by label, sync points in grey, the tick's phases along
//! the top row.

use std::path::Path;

use freyr::{TraceEvent, TraceKind};
use plotters::prelude::*;

/// The colour of a label or phase (stable: the same name always gets the same colour).
fn colour(name: &str) -> RGBColor {
    const PALETTE: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    let h = name
        .bytes()
        .fold(5381u32, |h, b| h.wrapping_mul(33) ^ u32::from(b));
    PALETTE[h as usize % PALETTE.len()]
}

/// Draws tick `tick` of `events` to `path` as SVG. Returns the number of bars drawn.
///
/// # Errors
///
/// A message when the tick was not traced or the file cannot be written.
pub fn draw(events: &[TraceEvent], tick: u64, path: &Path) -> Result<usize, String> {
    let events: Vec<&TraceEvent> = events.iter().filter(|e| e.tick == tick).collect();
    let span = events
        .iter()
        .find(|e| e.kind == TraceKind::Tick)
        .ok_or_else(|| format!("tick {tick} was not traced; pass it in --trace-ticks"))?;
    let t0 = span.start_ns;
    let ms = |ns: u64| ns.saturating_sub(t0) as f64 / 1e6;
    let end_ms = ms(span.start_ns + span.dur_ns).max(0.001);
    let rows = events.iter().map(|e| e.row).max().unwrap_or(1) + 1;
    let row_name = |row: u32| match row {
        0 => "phases".to_owned(),
        1 => "caller".to_owned(),
        w => format!("worker {}", w - 2),
    };

    let root = SVGBackend::new(path, (1200, 140 + 36 * rows)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("one server tick ({end_ms:.2} ms), per thread"),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(90)
        .build_cartesian_2d(0.0..end_ms, 0.0..f64::from(rows))
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(rows as usize)
        .y_label_formatter(&|y| {
            let row = y.floor() as u32;
            if (*y - y.floor()).abs() < 1e-9 && row < rows {
                row_name(rows - 1 - row)
            } else {
                String::new()
            }
        })
        .x_desc("milliseconds since the tick began")
        .draw()
        .map_err(|e| e.to_string())?;

    // Row r is drawn at y in [rows - 1 - r, rows - r), phases on top.
    let mut bars = 0;
    let mut legend: Vec<&'static str> = Vec::new();
    for e in &events {
        if e.kind == TraceKind::Tick {
            continue;
        }
        let y = f64::from(rows - 1 - e.row);
        let style = match e.kind {
            TraceKind::Sync => RGBColor(160, 160, 160).filled(),
            TraceKind::Stall => RED.filled(),
            _ => colour(e.name).filled(),
        };
        let (x0, x1) = (
            ms(e.start_ns),
            ms(e.start_ns + e.dur_ns).max(ms(e.start_ns) + end_ms * 1e-3),
        );
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x0, y + 0.15), (x1, y + 0.85)],
                style,
            )))
            .map_err(|e| e.to_string())?;
        if e.kind == TraceKind::Phase {
            chart
                .draw_series(std::iter::once(Text::new(
                    e.name.to_owned(),
                    (x0, y + 0.5),
                    ("sans-serif", 12).into_font().color(&WHITE),
                )))
                .map_err(|e| e.to_string())?;
        }
        if e.kind == TraceKind::Task && !legend.contains(&e.name) {
            legend.push(e.name);
        }
        bars += 1;
    }
    // The legend, under the chart: one swatch per task label.
    let legend_area = root.margin(0, 8, 100, 0);
    for (i, name) in legend.iter().enumerate() {
        let x = 110 + 150 * i as i32;
        let y = (140 + 36 * rows) as i32 - 22;
        legend_area
            .draw(&Rectangle::new(
                [(x, y), (x + 14, y + 14)],
                colour(name).filled(),
            ))
            .map_err(|e| e.to_string())?;
        legend_area
            .draw(&Text::new(
                format!("{name} tasks"),
                (x + 20, y),
                ("sans-serif", 14),
            ))
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(bars)
}
