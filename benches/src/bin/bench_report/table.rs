//! The report's markdown: a summary line per workload (Freyr's best against the fastest peer and
//! the memory floor) and every measurement with its ratios.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::collect::{Kind, Measurement};

/// Workloads measured against a memory floor: (group, row, floor row, parallel). A sequential
/// row's floor is the floor row's `seq`; a parallel row's is the fastest `par_*` at its thread
/// count. `each_1m` and `each_async_1m` are ecs_bench_suite's million_iter on one and all threads.
const FLOORS: &[(&str, &str, &str, bool)] = &[
    ("query", "each_1m", "stream_1m", false),
    ("query", "each_async_1m", "stream_1m", true),
];

/// A workload at one thread count: the key the summary groups measurements by.
type RowKey<'a> = (&'a str, &'a str, Option<usize>);

fn key(m: &Measurement) -> RowKey<'_> {
    (&m.group, &m.row, m.threads)
}

/// The fastest measurement of `kind` among `ms`.
fn fastest<'a>(ms: &[&'a Measurement], kind: Kind) -> Option<&'a Measurement> {
    ms.iter()
        .copied()
        .filter(|m| m.kind() == kind)
        .min_by(|a, b| a.median_ns.total_cmp(&b.median_ns))
}

/// The row's fastest peer, or (for dispatch rows, which no ECS peer runs) its fastest rayon
/// form, named as such.
fn reference<'a>(ms: &[&'a Measurement]) -> Option<&'a Measurement> {
    fastest(ms, Kind::Peer).or_else(|| {
        ms.iter()
            .copied()
            .filter(|m| m.implementation.starts_with("rayon"))
            .min_by(|a, b| a.median_ns.total_cmp(&b.median_ns))
    })
}

/// The memory floor of `(group, row, threads)`, if the row has one and it was measured.
fn floor<'a>(all: &'a [Measurement], (group, row, threads): RowKey<'_>) -> Option<&'a Measurement> {
    let &(_, _, floor_row, parallel) = FLOORS
        .iter()
        .find(|(g, r, _, _)| *g == group && *r == row)?;
    all.iter()
        .filter(|m| m.group == group && m.row == floor_row)
        .filter(|m| {
            if parallel {
                m.implementation.starts_with("par") && m.threads == threads
            } else {
                m.implementation == "seq"
            }
        })
        .min_by(|a, b| a.median_ns.total_cmp(&b.median_ns))
}

/// A duration in nanoseconds with three significant digits and a fitting unit.
pub(crate) fn time(ns: f64) -> String {
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let decimals = if value < 10.0 {
        2
    } else if value < 100.0 {
        1
    } else {
        0
    };
    format!("{value:.decimals$} {unit}")
}

fn ratio(a: f64, b: f64) -> String {
    format!("{:.2}x", a / b)
}

fn threads(t: Option<usize>) -> String {
    t.unwrap_or(1).to_string()
}

/// The fastest and slowest sample of `m`, per iteration, or dashes.
fn spread_parts(m: &Measurement) -> (String, String) {
    m.spread.map_or(("—".into(), "—".into()), |(lo, hi)| {
        (time(lo), time(hi))
    })
}

/// [`spread_parts`] as one cell.
fn spread(m: &Measurement) -> String {
    let (lo, hi) = spread_parts(m);
    if m.spread.is_some() {
        format!("{lo} – {hi}")
    } else {
        lo
    }
}

/// The spread of the rows that have a memory floor (million_iter): every implementation's
/// fastest, median and slowest sample beside the floor's, so a ratio can be read against how
/// far each side moved within the run.
fn render_spread(
    out: &mut String,
    rows: &BTreeMap<RowKey<'_>, Vec<&Measurement>>,
    all: &[Measurement],
) {
    let floored: Vec<_> = rows
        .iter()
        .filter_map(|(&k, ms)| Some((k, ms, floor(all, k)?)))
        .collect();
    if floored.is_empty() {
        return;
    }
    out.push_str(
        "\nThe same run's spread of the million rows: per iteration, the fastest, median and \
         slowest of criterion's samples.\n\n\
         | workload | threads | implementation | fastest | median | slowest |\n\
         |---|---:|---|---:|---:|---:|\n",
    );
    for (k, ms, floor) in floored {
        for m in ms.iter().copied().chain([floor]) {
            let (lo, hi) = spread_parts(m);
            let name = if std::ptr::eq(floor, m) {
                format!("floor ({})", m.implementation)
            } else {
                m.implementation.clone()
            };
            let _ = writeln!(
                out,
                "| {} | {} | {name} | {lo} | {} | {hi} |",
                k.1,
                threads(k.2),
                time(m.median_ns),
            );
        }
    }
}

/// The two tables, in markdown.
pub(crate) fn render(all: &[Measurement]) -> String {
    let mut rows: BTreeMap<RowKey<'_>, Vec<&Measurement>> = BTreeMap::new();
    for m in all {
        rows.entry(key(m)).or_default().push(m);
    }
    let mut out = String::new();
    out.push_str(
        "## Summary\n\nFreyr's fastest form of each workload against the fastest peer \
         (hecs, bevy_ecs, legion; rayon for the dispatch rows, which no ECS peer runs) and, for \
         million_iter, the memory floor (a STREAM-like pass over the same bytes). Below 1.00x \
         Freyr is faster.\n\n",
    );
    out.push_str(
        "| group | workload | threads | Freyr | fastest peer | Freyr / peer | floor | Freyr / floor |\n\
         |---|---|---:|---|---|---:|---:|---:|\n",
    );
    for (&k, ms) in &rows {
        let Some(freyr) = fastest(ms, Kind::Freyr) else {
            continue;
        };
        let peer = reference(ms);
        let floor = floor(all, k);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} ({}) | {} | {} | {} | {} |",
            k.0,
            k.1,
            threads(k.2),
            time(freyr.median_ns),
            freyr.implementation,
            peer.map_or("—".into(), |p| format!(
                "{} ({})",
                time(p.median_ns),
                p.implementation
            )),
            peer.map_or("—".into(), |p| ratio(freyr.median_ns, p.median_ns)),
            floor.map_or("—".into(), |f| time(f.median_ns)),
            floor.map_or("—".into(), |f| ratio(freyr.median_ns, f.median_ns)),
        );
    }
    render_spread(&mut out, &rows, all);
    out.push_str(
        "\n## Every measurement\n\nCriterion medians; ratios to the fastest peer (or rayon) of \
         the same workload and thread count, and to its memory floor; the fastest and slowest \
         sample per iteration.\n\n\
         | group | workload | threads | implementation | median | / fastest peer | / floor | samples |\n\
         |---|---|---:|---|---:|---:|---:|---:|\n",
    );
    for (&k, ms) in &rows {
        let peer = reference(ms);
        let floor = floor(all, k);
        for m in ms {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                k.0,
                k.1,
                threads(k.2),
                m.implementation,
                time(m.median_ns),
                peer.map_or("—".into(), |p| ratio(m.median_ns, p.median_ns)),
                floor.map_or("—".into(), |f| ratio(m.median_ns, f.median_ns)),
                spread(m),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(id: &str, ns: f64) -> Measurement {
        Measurement::from_id(id, ns).unwrap()
    }

    #[test]
    fn times_keep_three_significant_digits() {
        assert_eq!(time(150.0), "150 ns");
        assert_eq!(time(1_234.0), "1.23 µs");
        assert_eq!(time(12_345_678.0), "12.3 ms");
        assert_eq!(time(2.5e9), "2.50 s");
    }

    #[test]
    fn summary_quotes_freyrs_best_against_the_fastest_peer_and_the_floor() {
        let all = [
            m("query/each_1m/freyr_each", 1000.0),
            m("query/each_1m/freyr_each_chunk", 900.0),
            m("query/each_1m/hecs", 1200.0),
            m("query/each_1m/legion", 1800.0),
            m("query/each_1m/plain_vec", 100.0),
            m("query/stream_1m/seq", 450.0),
            m("query/each_async_1m/freyr/w2", 600.0),
            m("query/each_async_1m/bevy_ecs/w2", 500.0),
            m("query/stream_1m/par_rayon/w2", 320.0),
            m("query/stream_1m/par_for/w2", 300.0),
            m("query/stream_1m/par_for/w4", 100.0),
        ];
        let text = render(&all);
        assert!(
            text.contains(
                "| query | each_1m | 1 | 900 ns (freyr_each_chunk) | 1.20 µs (hecs) | 0.75x | 450 ns | 2.00x |"
            ),
            "{text}"
        );
        // The parallel floor is the fastest `par_*` at the same thread count (not w4's).
        assert!(
            text.contains(
                "| query | each_async_1m | 2 | 600 ns (freyr) | 500 ns (bevy_ecs) | 1.20x | 300 ns | 2.00x |"
            ),
            "{text}"
        );
        // Every measurement is listed, peers and baselines too.
        assert!(text.contains("| query | each_1m | 1 | legion | 1.80 µs | 1.50x | 4.00x | — |"));
        assert!(text.contains("| query | stream_1m | 4 | par_for | 100 ns | — | — | — |"));
    }

    #[test]
    fn the_million_rows_show_each_sides_spread_beside_the_floor() {
        let with = |id: &str, ns: f64, lo: f64, hi: f64| Measurement {
            spread: Some((lo, hi)),
            ..m(id, ns)
        };
        let all = [
            with("query/each_1m/freyr_each", 1000.0, 950.0, 1100.0),
            with("query/each_1m/legion", 1200.0, 1150.0, 1400.0),
            with("query/stream_1m/seq", 900.0, 890.0, 990.0),
            m("query/frag_iter/freyr", 5.0),
        ];
        let text = render(&all);
        let spread = text
            .split("spread of the million rows")
            .nth(1)
            .expect("a spread section")
            .split("## Every measurement")
            .next()
            .unwrap();
        assert!(
            spread.contains("| each_1m | 1 | freyr_each | 950 ns | 1.00 µs | 1.10 µs |"),
            "{spread}"
        );
        assert!(
            spread.contains("| each_1m | 1 | legion | 1.15 µs | 1.20 µs | 1.40 µs |"),
            "{spread}"
        );
        assert!(
            spread.contains("| each_1m | 1 | floor (seq) | 890 ns | 900 ns | 990 ns |"),
            "{spread}"
        );
        // Rows without a floor are not in it; they show their spread in the full table.
        assert!(!spread.contains("frag_iter"), "{spread}");
        assert!(
            text.contains(
                "| query | each_1m | 1 | legion | 1.20 µs | 1.00x | 1.33x | 1.15 µs – 1.40 µs |"
            ),
            "{text}"
        );
    }

    #[test]
    fn dispatch_rows_are_quoted_against_rayon_and_rows_without_either_say_so() {
        let all = [
            m("sched/parallel_for_1m/freyr/2", 10.0),
            m("sched/parallel_for_1m/rayon/2", 12.0),
            m("sched/parallel_for_1m/rayon_max_len/2", 8.0),
            m("query/lonely/freyr", 5.0),
            m("query/lonely/plain_vec", 4.0),
        ];
        let text = render(&all);
        assert!(
            text.contains(
                "| sched | parallel_for_1m | 2 | 10.0 ns (freyr) | 8.00 ns (rayon_max_len) | 1.25x | — | — |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| query | lonely | 1 | 5.00 ns (freyr) | — | — | — | — |"),
            "{text}"
        );
    }
}
