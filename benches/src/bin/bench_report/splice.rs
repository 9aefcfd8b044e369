//! Writing the report into the documents that quote it: the sections between
//! `<!-- BEGIN GENERATED: NAME … -->` and `<!-- END GENERATED: NAME -->` are replaced by the
//! report, so the README's table and the guide's Benchmarks chapter are produced, not typed.
//!
//! Section names, per build (`-generic` appended for the generic build):
//! - `bench-report`: the whole report, headings one level down;
//! - `bench-summary`: the summary table alone.

/// The sections of one build: (name, body).
pub(crate) fn sections(report: &str, generic: bool) -> [(String, String); 2] {
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
        let [(whole_name, whole), (summary_name, summary)] = sections(REPORT, false);
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
    fn a_begin_marker_without_its_end_is_an_error() {
        let doc = "<!-- BEGIN GENERATED: bench-report -->\nno end";
        assert!(
            splice(doc, &sections(REPORT, false))
                .unwrap_err()
                .contains("without")
        );
    }
}
