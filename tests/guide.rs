//! The guide (`docs/`) stays whole: every chapter is listed in `SUMMARY.md` and compiled as a
//! doctest of this crate, its examples use the `freyr::` paths a dependent uses, and no link
//! points at a file or heading that does not exist — in the sources, and (the ignored test, run by
//! CI after `mdbook build docs`) in the built book.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn src_dir() -> PathBuf {
    root().join("docs/src")
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The `.md` files of `docs/src`, by name.
fn chapter_files() -> BTreeSet<String> {
    fs::read_dir(src_dir())
        .expect("docs/src exists")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".md") && n != "SUMMARY.md")
        .collect()
}

/// A chapter's text with fenced code blocks and inline code removed, line by line (so numbers
/// in messages are line numbers).
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut in_fence = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut prose = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                prose.push(c);
            }
        }
        out.push((i + 1, prose));
    }
    out
}

/// The targets of the Markdown links `[text](target)` in `text`, with their line numbers.
fn markdown_links(text: &str) -> Vec<(usize, String)> {
    let mut links = Vec::new();
    for (line_no, line) in prose_lines(text) {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            links.push((line_no, after[..end].trim().to_owned()));
            rest = &after[end..];
        }
    }
    links
}

/// The anchor mdBook gives a heading: lower case, spaces to `-`, other punctuation dropped.
fn heading_id(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

fn heading_ids(text: &str) -> BTreeSet<String> {
    prose_lines(text)
        .into_iter()
        .filter_map(|(_, l)| {
            let t = l.trim_start();
            t.starts_with('#')
                .then(|| heading_id(t.trim_start_matches('#')))
        })
        .collect()
}

/// Resolves `a/b/../c` without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn is_external(target: &str) -> bool {
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|p| target.starts_with(p))
}

/// Every problem with the links of the chapter `name`: a target outside `docs/src` (the built
/// book has no copy of it), a missing file, or a missing heading.
fn link_problems(name: &str, text: &str) -> Vec<String> {
    let src = src_dir();
    let mut problems = Vec::new();
    for (line, target) in markdown_links(text) {
        if target.is_empty() || is_external(&target) {
            continue;
        }
        let (file, anchor) = match target.split_once('#') {
            Some((f, a)) => (f, Some(a)),
            None => (target.as_str(), None),
        };
        let path = if file.is_empty() {
            src.join(name)
        } else {
            normalize(&src.join(file))
        };
        if !path.starts_with(&src) {
            problems.push(format!(
                "{name}:{line}: {target} is outside docs/src, so the built book cannot link it; \
                 include the file into a chapter with {{{{#include}}}} and link the chapter"
            ));
            continue;
        }
        if !path.is_file() {
            problems.push(format!("{name}:{line}: {target}: no such file"));
            continue;
        }
        if let Some(anchor) = anchor
            && path.extension().is_some_and(|e| e == "md")
            && !heading_ids(&read(&path)).contains(anchor)
        {
            problems.push(format!(
                "{name}:{line}: {target}: no heading with that anchor"
            ));
        }
    }
    problems
}

#[test]
fn every_chapter_is_in_the_summary_and_every_summary_entry_exists() {
    let summary = read(&src_dir().join("SUMMARY.md"));
    let listed: BTreeSet<String> = markdown_links(&summary)
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    for entry in &listed {
        assert!(
            src_dir().join(entry).is_file(),
            "SUMMARY.md lists {entry}, which does not exist"
        );
    }
    for file in chapter_files() {
        assert!(
            listed.contains(&file),
            "docs/src/{file} is not in SUMMARY.md: the book would not show it"
        );
    }
}

#[test]
fn every_chapter_is_compiled_as_a_doctest() {
    let lib = read(&root().join("src/lib.rs"));
    for file in chapter_files() {
        let text = read(&src_dir().join(&file));
        let tested = lib.contains(&format!("include_str!(\"../docs/src/{file}\")"));
        // A chapter made of one `{{#include}}` is tested where the included file lives.
        let included_only =
            text.trim().starts_with("{{#include") && text.trim().lines().count() == 1;
        assert!(
            tested || included_only,
            "docs/src/{file} is not included in src/lib.rs's `guide` module, so its examples \
             are never compiled; add `#[doc = include_str!(\"../docs/src/{file}\")]`"
        );
    }
}

#[test]
fn includes_resolve() {
    for file in chapter_files() {
        let text = read(&src_dir().join(&file));
        for (i, line) in text.lines().enumerate() {
            if let Some(rest) = line.trim().strip_prefix("{{#include ") {
                let target = rest.trim_end_matches("}}").trim();
                let target = target.split(':').next().unwrap();
                assert!(
                    src_dir().join(target).is_file(),
                    "docs/src/{file}:{}: includes {target}, which does not exist",
                    i + 1
                );
            }
        }
    }
}

#[test]
fn no_link_in_the_guide_is_broken() {
    let mut problems = Vec::new();
    for file in chapter_files()
        .iter()
        .chain(["SUMMARY.md".to_owned()].iter())
    {
        problems.extend(link_problems(file, &read(&src_dir().join(file))));
    }
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_link_check_catches_what_it_should() {
    let broken = "See [the protocol](../../freyr-sched/PROTOCOL.md), [gone](gone.md), \
                  [queries](queries.md#no-such-heading) and [ok](queries.md#matching-and-the-cache). \
                  `[not a link](in-code.md)` [web](https://example.com)";
    let problems = link_problems("x.md", broken);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].contains("outside docs/src"));
    assert!(problems[1].contains("no such file"));
    assert!(problems[2].contains("no heading"));
    assert_eq!(
        heading_id("The dense-chunk invariant"),
        "the-dense-chunk-invariant"
    );
    assert_eq!(heading_id(" 1. Don't modify `x`"), "1-dont-modify-x");
}

#[test]
fn examples_use_the_facade_paths_and_no_unexplained_words() {
    for file in chapter_files() {
        let text = read(&src_dir().join(&file));
        for (i, line) in text.lines().enumerate() {
            for sub in [
                "freyr_core::",
                "freyr_query::",
                "freyr_sched::",
                "freyr_registry::",
                "freyr_persist::",
                "freyr_profile::",
            ] {
                assert!(
                    !line.contains(sub),
                    "docs/src/{file}:{}: `{sub}` — a dependent writes `freyr::`",
                    i + 1
                );
            }
            let lower = line.to_lowercase();
            assert!(
                !lower.contains("seed 0") && !lower.contains("the seed"),
                "docs/src/{file}:{}: a reader cannot know what the seed is; describe the idea",
                i + 1
            );
        }
    }
}

/// The attribute values `href="…"` and `src="…"` in an HTML page.
fn html_refs(html: &str) -> Vec<String> {
    let mut refs = Vec::new();
    for attr in ["href=\"", "src=\""] {
        let mut rest = html;
        while let Some(at) = rest.find(attr) {
            let after = &rest[at + attr.len()..];
            let end = after.find('"').unwrap_or(after.len());
            refs.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    refs
}

/// Checks the book `mdbook build docs` wrote to `docs/book` (or `FREYR_BOOK_DIR`): every local
/// link of every page reaches a file, and every `#anchor` an `id` in it. CI runs it after the
/// build: `cargo test -p freyr --test guide -- --ignored`.
#[test]
#[ignore = "needs a built book: mdbook build docs"]
fn built_book_has_no_broken_link() {
    let book = std::env::var_os("FREYR_BOOK_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("docs/book"));
    assert!(
        book.join("index.html").is_file(),
        "no book at {}: run `mdbook build docs` first",
        book.display()
    );
    let mut pages = Vec::new();
    let mut dirs = vec![book.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                pages.push(path);
            }
        }
    }
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let html = read(page);
        for target in html_refs(&html) {
            if target.is_empty()
                || is_external(&target)
                || target.starts_with("javascript:")
                || target.starts_with("data:")
                || target.starts_with("{{")
            {
                continue;
            }
            checked += 1;
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let file = file.split('?').next().unwrap();
            let path = if file.is_empty() {
                page.clone()
            } else if let Some(from_root) = file.strip_prefix('/') {
                // Site-absolute (the 404 page's `<base href="/">`): the book is served at `/`.
                normalize(&book.join(from_root))
            } else {
                normalize(&page.parent().unwrap().join(file))
            };
            let path = if path.is_dir() {
                path.join("index.html")
            } else {
                path
            };
            let shown = page.strip_prefix(&book).unwrap().display();
            if !path.starts_with(&book) || !path.is_file() {
                problems.push(format!("{shown}: {target}: no such file in the book"));
            } else if let Some(anchor) = anchor.filter(|a| !a.is_empty())
                && path.extension().is_some_and(|e| e == "html")
                && !read(&path).contains(&format!("id=\"{anchor}\""))
            {
                problems.push(format!("{shown}: {target}: no element with that id"));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} links found: is {} a book?",
        book.display()
    );
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}
