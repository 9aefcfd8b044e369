//! A per-thread timeline of one traced tick, drawn with `plotters` to SVG: one row per thread,
//! one bar per batch of tasks coloured by label, sync points as a thin grey bar under the tasks
//! the waiting thread ran meanwhile, the tick's phases along the top row.

use freyr::profile::{TraceEvent, TraceKind};
use plotters::prelude::*;

/// The grey of sync points.
const SYNC: RGBColor = RGBColor(170, 170, 170);

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

/// The name of a thread row.
fn row_name(row: u32) -> String {
    match row {
        0 => "phases".to_owned(),
        1 => "caller".to_owned(),
        w => format!("worker {}", w - 2),
    }
}

/// The font the timeline's text is drawn in: DejaVu Sans Mono, shipped with the benchmarks
/// (`benches/assets/`, with its licence). plotters draws text through `ab_glyph` here, which
/// knows no system fonts, so the family the chart asks for is registered from these bytes.
static FONT: &[u8] = include_bytes!("../../benches/assets/DejaVuSansMono.ttf");

/// Registers [`FONT`] as "sans-serif", once per process.
fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, FONT)
            .unwrap_or_else(|_| panic!("benches/assets/DejaVuSansMono.ttf is not a valid font"));
    });
}

/// Draws tick `tick` of `events` as SVG. Returns the SVG text and the number of spans drawn.
///
/// # Errors
///
/// A message when the tick was not traced or the drawing fails.
pub(crate) fn draw(events: &[TraceEvent], tick: u64) -> Result<(String, usize), String> {
    register_font();
    let mut svg = String::new();
    let drawn = draw_into(&mut svg, events, tick)?;
    Ok((svg, drawn))
}

fn draw_into(svg: &mut String, events: &[TraceEvent], tick: u64) -> Result<usize, String> {
    let err = |e: &dyn std::fmt::Display| format!("drawing tick {tick}: {e}");
    let events: Vec<&TraceEvent> = events.iter().filter(|e| e.tick == tick).collect();
    let span = events
        .iter()
        .find(|e| e.kind == TraceKind::Tick)
        .ok_or_else(|| format!("tick {tick} was not traced; pass it in --trace-ticks"))?;
    let t0 = span.start_ns;
    let ms = |ns: u64| ns.saturating_sub(t0) as f64 / 1e6;
    let end_ms = ms(span.start_ns + span.dur_ns).max(0.001);
    let rows = events.iter().map(|e| e.row).max().unwrap_or(1) + 1;

    let height = 150 + 40 * rows;
    let root = SVGBackend::with_string(svg, (1200, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (plot, legend_area) = root.split_vertically(height - 36);
    // The row names live left of time zero, inside the plot.
    let names_ms = end_ms * 0.09;
    let mut chart = ChartBuilder::on(&plot)
        .caption(
            format!("one server tick ({end_ms:.2} ms), per thread"),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(56)
        .build_cartesian_2d(-names_ms..end_ms, 0.0..f64::from(rows))
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_label_formatter(&|x| {
            if *x < 0.0 {
                String::new()
            } else {
                format!("{x:.1}")
            }
        })
        .x_desc("milliseconds since the tick began")
        .draw()
        .map_err(|e| err(&e))?;
    for row in 0..rows {
        let y = f64::from(rows - 1 - row) + 0.6;
        chart
            .draw_series(std::iter::once(Text::new(
                row_name(row),
                (-names_ms * 0.95, y),
                ("sans-serif", 14),
            )))
            .map_err(|e| err(&e))?;
    }

    // Row r is drawn at y in [rows - 1 - r, rows - r), phases on top. Sync points first, so the
    // tasks the waiting thread ran meanwhile are drawn over them.
    let mut ordered: Vec<&TraceEvent> = events
        .iter()
        .copied()
        .filter(|e| e.kind != TraceKind::Tick)
        .collect();
    ordered.sort_by_key(|e| e.kind != TraceKind::Sync);
    let mut legend: Vec<&'static str> = Vec::new();
    for e in &ordered {
        let y = f64::from(rows - 1 - e.row);
        let (style, (lo, hi)) = match e.kind {
            TraceKind::Sync => (SYNC.filled(), (0.1, 0.22)),
            TraceKind::Stall => (RED.filled(), (0.25, 0.9)),
            TraceKind::Phase => (colour(e.name).mix(0.6).filled(), (0.25, 0.9)),
            _ => (colour(e.name).filled(), (0.25, 0.9)),
        };
        let x0 = ms(e.start_ns);
        let x1 = ms(e.start_ns + e.dur_ns).max(x0 + end_ms * 1e-3);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x0, y + lo), (x1, y + hi)],
                style,
            )))
            .map_err(|e| err(&e))?;
        if e.kind == TraceKind::Task && x1 - x0 > end_ms * 0.004 {
            // A thin white edge, so back-to-back batches (one peer each) stay apart; bars too
            // narrow for an edge are left solid.
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, y + lo), (x1, y + hi)],
                    WHITE.stroke_width(1),
                )))
                .map_err(|e| err(&e))?;
        }
        if e.kind == TraceKind::Phase && x1 - x0 > end_ms * 0.06 {
            chart
                .draw_series(std::iter::once(Text::new(
                    e.name.to_owned(),
                    (x0, y + 0.7),
                    ("sans-serif", 12).into_font().color(&WHITE),
                )))
                .map_err(|e| err(&e))?;
        }
        if e.kind == TraceKind::Task && !legend.contains(&e.name) {
            legend.push(e.name);
        }
    }

    // The legend, under the axis: one swatch per task label, then the sync points.
    let swatches = legend
        .iter()
        .map(|name| (format!("{name} tasks"), colour(name)))
        .chain(std::iter::once((
            "sync point (waiting, helping)".to_owned(),
            SYNC,
        )));
    for (i, (text, c)) in swatches.enumerate() {
        let x = 110 + 190 * i as i32;
        legend_area
            .draw(&Rectangle::new([(x, 8), (x + 14, 22)], c.filled()))
            .map_err(|e| err(&e))?;
        legend_area
            .draw(&Text::new(text, (x + 20, 8), ("sans-serif", 14)))
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(ordered.len())
}

#[cfg(test)]
mod tests {
    use freyr::Registry;
    use freyr::profile::{TickExtras, TickProfileConfig};

    use super::*;

    struct Value(f32);

    #[test]
    fn a_traced_tick_draws_one_bar_per_span_and_names_its_labels() {
        let mut registry = Registry::with_workers(2);
        registry.spawn_batch((0..5000).map(|i| (Value(i as f32),)));
        registry.enable_tick_profile(TickProfileConfig {
            trace_ticks: 1..2,
            ..TickProfileConfig::default()
        });
        for tick in 0..2 {
            registry.profile_tick_begin(tick);
            registry.profile_tick_phase("step");
            registry
                .query::<&mut Value>()
                .with_label("Step")
                .each_async(|_, v| v.0 += 1.0);
            registry.execute_tasks();
            registry.profile_tick_end(TickExtras::default());
        }
        let events = registry.tick_profile().unwrap().trace_events();
        let (svg, drawn) = draw(events, 1).unwrap();
        assert_eq!(
            drawn,
            events.iter().filter(|e| e.kind != TraceKind::Tick).count()
        );
        assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
        assert!(svg.contains("Step tasks") && svg.contains("caller"));
        let err = draw(events, 0).unwrap_err();
        assert!(err.contains("--trace-ticks"), "{err}");
    }
}
