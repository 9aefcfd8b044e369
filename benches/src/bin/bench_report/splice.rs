//! Writing the report into the documents that quote it: the sections between
//! `<!-- BEGIN GENERATED: NAME … -->` and `<!-- END GENERATED: NAME -->` are replaced by the
//! report, so the README's table and the guide's Benchmarks chapter are produced, not typed.
//!
//! Section names, per build (`-generic` appended for the generic build):
//! - `bench-report`: the whole report, headings one level down (the Benchmarks chapter);
//! - `bench-summary`: the summary table and the million rows' spread;
//! - `bench-headline`: a short table of the [`HEADLINE`] rows, and one sentence saying which
//!   build, machine and date they come from (the README's first screen).

/// The rows of the headline, in its order: (group, workload). ecs_bench_suite's rows and the
/// million rows, whichever side of 1.00x they fall on.
pub(crate) const HEADLINE: [(&str, &str); 8] = [
    ("query", "each_1m"),
    ("query", "each_async_1m"),
    ("query", "simple_iter"),
    ("query", "frag_iter"),
    ("query", "heavy_compute"),
    ("registry", "schedule"),
    ("core", "simple_insert_10k"),
    ("core", "add_remove_ab_10k"),
];

/// The value of the report header's `- {key}: ` line, if it has one.
fn header<'a>(report: &'a str, key: &str) -> Option<&'a str> {
    let prefix = format!("- {key}: ");
    report.lines().find_map(|l| l.strip_prefix(prefix.as_str()))
}

/// The headline: the [`HEADLINE`] rows of the report's summary table (the first table whose
/// header starts with `| group | workload |`), as workload, threads, Freyr's median, the
/// fastest peer and the ratio, under one sentence naming the build, machine and date.
pub(crate) fn headline(report: &str) -> String {
    let summary = report
        .split("\n## Every measurement")
        .next()
        .unwrap_or(report);
    // Cells of the summary rows: group, workload, threads, Freyr, peer, Freyr / peer, ...
    let rows: Vec<Vec<&str>> = summary
        .lines()
        .skip_while(|l| !l.starts_with("| group | workload |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .filter(|cells: &Vec<&str>| cells.len() >= 6)
        .collect();
    let build = header(report, "Build").unwrap_or("unnamed build");
    let machine = header(report, "Machine").unwrap_or("unnamed machine");
    let date = header(report, "Date").unwrap_or("undated");
    let mut out = format!(
        "Criterion medians of one run: {build}; {machine}; {date}. Freyr's fastest form \
         against the fastest of hecs, bevy_ecs and legion; below 1.00x Freyr is faster.\n\n\
         | workload | threads | Freyr | fastest peer | Freyr / peer |\n\
         |---|---:|---:|---|---:|\n"
    );
    for (group, workload) in HEADLINE {
        for cells in rows.iter().filter(|c| c[0] == group && c[1] == workload) {
            // Freyr's cell names its form (`863 µs (freyr_each)`); the headline keeps the time.
            let freyr = cells[3].split(" (").next().unwrap_or(cells[3]);
            out.push_str(&format!(
                "| `{workload}` | {} | {freyr} | {} | {} |\n",
                cells[2], cells[4], cells[5]
            ));
        }
    }
    out
}

/// The sections of one build: (name, body).
pub(crate) fn sections(report: &str, generic: bool) -> [(String, String); 3] {
    let suffix = if generic { "-generic" } else { "" };
    let whole = report
        .lines()
        .map(|l| {
            if l.starts_with('#') {
                format!("#{l}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    // The summary: the header's list and the summary table, up to the next section.
    let summary = report
        .split("\n## Every measurement")
        .next()
        .unwrap_or(report)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    [
        (format!("bench-report{suffix}"), whole),
        (format!("bench-summary{suffix}"), summary),
        (format!("bench-headline{suffix}"), headline(report)),
    ]
}

/// Replaces the body of every section of `sections` that `text` marks; returns the new text and
/// how many sections were replaced.
///
/// # Errors
///
/// A message when a section's BEGIN marker has no END marker after it.
pub(crate) fn splice(text: &str, sections: &[(String, String)]) -> Result<(String, usize), String> {
    let mut out = text.to_string();
    let mut replaced = 0;
    for (name, body) in sections {
        let begin = format!("<!-- BEGIN GENERATED: {name}");
        let end = format!("<!-- END GENERATED: {name} -->");
        let mut from = 0;
        while let Some(b) = out[from..].find(&begin).map(|i| i + from) {
            // The BEGIN marker may run over several lines; the body starts after its `-->`.
            let after_begin = out[b..]
                .find("-->")
                .map(|i| b + i + 3)
                .ok_or(format!("{name}: BEGIN marker without its closing `-->`"))?;
            // A name that is a prefix of another (`bench-report` / `bench-report-generic`)
            // must not match the longer one: the marker must end right after the name.
            let rest = &out[b + begin.len()..];
            if !(rest.starts_with(' ') || rest.starts_with('.') || rest.starts_with("-->")) {
                from = b + begin.len();
                continue;
            }
            let e = out[after_begin..]
                .find(&end)
                .map(|i| after_begin + i)
                .ok_or(format!("{name}: BEGIN marker without `{end}`"))?;
            out.replace_range(after_begin..e, &format!("\n\n{}\n\n", body.trim()));
            replaced += 1;
            from = after_begin;
        }
    }
    Ok((out, replaced))
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "# Freyr benchmark report\n\n- Build: x\n\n## Summary\n\n| a |\n|---|\n\n## Every measurement\n\n| b |\n|---|\n";

    #[test]
    fn the_summary_section_holds_the_summary_table_only() {
        let [(whole_name, whole), (summary_name, summary), _] = sections(REPORT, false);
        assert_eq!(
            (whole_name.as_str(), summary_name.as_str()),
            ("bench-report", "bench-summary")
        );
        assert!(whole.contains("### Every measurement") && whole.starts_with("## Freyr"));
        assert!(summary.contains("| a |") && !summary.contains("| b |"));
        assert!(summary.contains("- Build: x"));
    }

    #[test]
    fn splice_replaces_only_the_named_build_and_keeps_the_markers() {
        let doc = "intro\n<!-- BEGIN GENERATED: bench-summary. Edit the command. -->\nold\n\
                   <!-- END GENERATED: bench-summary -->\n\
                   <!-- BEGIN GENERATED: bench-summary-generic -->\nkeep\n\
                   <!-- END GENERATED: bench-summary-generic -->\nend\n";
        let (out, n) = splice(doc, &sections(REPORT, false)).unwrap();
        assert_eq!(n, 1);
        assert!(!out.contains("old") && out.contains("| a |") && out.contains("keep"));
        assert!(out.contains("<!-- END GENERATED: bench-summary -->") && out.ends_with("end\n"));
        // Splicing twice gives the same text: the markers survive.
        assert_eq!(splice(&out, &sections(REPORT, false)).unwrap().0, out);
    }

    #[test]
    fn the_headline_holds_the_headline_rows_in_order_with_their_source() {
        let report = "# Freyr benchmark report\n\n- Build: generic x86-64\n- Machine: Xeon, 2 \
                      hardware threads\n- Date: 2026-12-05 23:39 UTC\n\n## Summary\n\n\
                      | group | workload | threads | Freyr | fastest peer | Freyr / peer | floor | Freyr / floor |\n\
                      |---|---|---:|---|---|---:|---:|---:|\n\
                      | core | spawn_10k | 1 | 154 µs (freyr) | 529 µs (hecs) | 0.29x | — | — |\n\
                      | query | each_1m | 1 | 863 µs (freyr_each) | 1.59 ms (hecs) | 0.54x | 908 µs | 0.95x |\n\
                      | query | frag_iter | 1 | 316 ns (freyr) | 294 ns (legion) | 1.07x | — | — |\n\
                      \n## Every measurement\n\n\
                      | group | workload | threads | implementation | median | / fastest peer | / floor | samples |\n\
                      |---|---|---:|---|---:|---:|---:|---:|\n\
                      | query | each_1m | 1 | hecs | 1.59 ms | 1.00x | 1.75x | — |\n";
        let [_, _, (name, headline)] = sections(report, true);
        assert_eq!(name, "bench-headline-generic");
        assert!(
            headline.starts_with(
                "Criterion medians of one run: generic x86-64; Xeon, 2 hardware threads; \
                 2026-12-05 23:39 UTC."
            ),
            "{headline}"
        );
        // Headline rows only, in HEADLINE's order (each_1m before frag_iter), forms dropped;
        // a row that is not a headline row (spawn_10k) and the full table stay out.
        let rows: Vec<&str> = headline.lines().filter(|l| l.starts_with("| `")).collect();
        assert_eq!(
            rows,
            [
                "| `each_1m` | 1 | 863 µs | 1.59 ms (hecs) | 0.54x |",
                "| `frag_iter` | 1 | 316 ns | 294 ns (legion) | 1.07x |",
            ]
        );
    }

    #[test]
    fn a_begin_marker_without_its_end_is_an_error() {
        let doc = "<!-- BEGIN GENERATED: bench-report -->\nno end";
        assert!(
            splice(doc, &sections(REPORT, false))
                .unwrap_err()
                .contains("without")
        );
    }
}
