//! What the README and the guide name exists:
//!
//! - every `freyr::…` path they name (in prose or in code, `use` groups expanded) has a line in
//!   `tests/doc_paths/resolve.rs`, which is compiled here, so a path that stops resolving breaks
//!   this test's build, and a path the docs start naming fails it until its line is added;
//! - the README's crate map names every workspace crate and every chapter of
//!   `docs/src/SUMMARY.md`, and the introduction links every chapter;
//! - the facade's own map (`src/lib.rs`) names every root re-export, every public module and
//!   every Cargo feature, and the README's row for the facade every public module.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

#[path = "doc_paths/resolve.rs"]
mod resolve;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Reads a Rust path tree (`a::b`, `a::{b, c::d as e}`, `a::*`) after `freyr::`.
struct PathParser<'a> {
    text: &'a [u8],
    at: usize,
}

impl PathParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn ident(&mut self) -> Option<String> {
        let start = self.at;
        while self.peek().is_some_and(is_ident_byte) {
            self.at += 1;
        }
        (self.at > start).then(|| String::from_utf8_lossy(&self.text[start..self.at]).into_owned())
    }

    /// Whether `::` follows, then a segment, a group or a glob (not `::<`, a turbofish).
    fn continues(&self) -> bool {
        self.text[self.at..].starts_with(b"::")
            && self
                .text
                .get(self.at + 2)
                .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_' || b == b'{' || b == b'*')
    }

    /// One tree under `prefix`; every path it names goes to `out`.
    fn tree(&mut self, prefix: &str, out: &mut BTreeSet<String>) {
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                loop {
                    self.skip_space();
                    let before = self.at;
                    match self.peek() {
                        None | Some(b'}') => {
                            self.at += 1;
                            return;
                        }
                        Some(b',') => self.at += 1,
                        _ if self.text[self.at..].starts_with(b"self")
                            && !self
                                .text
                                .get(self.at + 4)
                                .copied()
                                .is_some_and(is_ident_byte) =>
                        {
                            self.at += 4;
                            out.insert(prefix.to_owned());
                        }
                        _ => {
                            self.tree(prefix, out);
                            self.skip_space();
                            if self.text[self.at..].starts_with(b"as ") {
                                self.at += 3;
                                self.skip_space();
                                self.ident();
                            }
                        }
                    }
                    if self.at == before {
                        return; // not a path group after all
                    }
                }
            }
            Some(b'*') => {
                self.at += 1;
                out.insert(prefix.to_owned());
            }
            _ => match self.ident() {
                Some(segment) => {
                    let path = format!("{prefix}::{segment}");
                    if self.continues() {
                        self.at += 2;
                        self.tree(&path, out);
                    } else {
                        out.insert(path);
                    }
                }
                // `freyr::…` in prose names no path.
                None if prefix != "freyr" => {
                    out.insert(prefix.to_owned());
                }
                None => {}
            },
        }
    }
}

/// Every `freyr::…` path `text` names.
fn freyr_paths(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(found) = text[from..].find("freyr::") {
        let start = from + found;
        from = start + "freyr::".len();
        if start > 0 && is_ident_byte(bytes[start - 1]) {
            continue; // `other_freyr::`
        }
        let mut parser = PathParser {
            text: bytes,
            at: from,
        };
        parser.tree("freyr", &mut out);
    }
    out
}

/// The README and every chapter of the guide.
fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut chapters: Vec<PathBuf> = fs::read_dir(root().join("docs/src"))
        .expect("docs/src exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    files.extend(chapters);
    files
}

/// The line `resolve.rs` needs for `path`.
fn resolve_line(path: &str) -> String {
    let segments: Vec<&str> = path.split("::").collect();
    let method = segments.len() >= 3
        && segments[segments.len() - 1].starts_with(|c: char| c.is_ascii_lowercase())
        && segments[segments.len() - 2].starts_with(|c: char| c.is_ascii_uppercase());
    if method {
        format!("    let _ = {path}; // in `functions`")
    } else {
        format!("use {path} as _;")
    }
}

#[test]
fn the_path_parser_reads_groups_globs_and_turbofish() {
    let text = "use freyr::{prelude::*, time::{self, pump::{Launched, Process as P}}, Registry};\n\
                `freyr::Registry::query::<&A>()` and `use freyr::…` and my_freyr::Nope";
    let found: Vec<String> = freyr_paths(text).into_iter().collect();
    assert_eq!(
        found,
        [
            "freyr::Registry",
            "freyr::Registry::query",
            "freyr::prelude",
            "freyr::time",
            "freyr::time::pump::Launched",
            "freyr::time::pump::Process",
        ]
    );
}

#[test]
fn every_freyr_path_the_docs_name_is_in_the_resolved_list() {
    let mut named = BTreeSet::new();
    for file in doc_files() {
        named.extend(freyr_paths(&read(&file)));
    }
    let list_file = root().join("tests/doc_paths/resolve.rs");
    let list_text = read(&list_file);
    let code: String = list_text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let listed = freyr_paths(&code);
    let missing: Vec<String> = named.difference(&listed).map(|p| resolve_line(p)).collect();
    let unnamed: Vec<&String> = listed.difference(&named).collect();
    assert!(
        missing.is_empty() && unnamed.is_empty(),
        "tests/doc_paths/resolve.rs must list exactly the freyr:: paths of README.md and \
         docs/src/*.md.\nAdd:\n{}\nRemove (no document names them): {unnamed:?}",
        missing.join("\n")
    );
}

/// The `.md` files SUMMARY.md lists, with their titles, the prefix chapter (the introduction)
/// left out.
fn summary_chapters() -> Vec<(String, String)> {
    read(&root().join("docs/src/SUMMARY.md"))
        .lines()
        .filter_map(|line| {
            let item = line.trim_start().strip_prefix("- [")?;
            let (title, rest) = item.split_once("](")?;
            let file = rest.strip_suffix(')')?;
            Some((title.to_owned(), file.to_owned()))
        })
        .collect()
}

/// The text of `## Crate map` in the README, up to the next heading.
fn readme_crate_map() -> String {
    let readme = read(&root().join("README.md"));
    let start = readme
        .find("## Crate map")
        .expect("the README has a crate map");
    let body = &readme[start + 2..];
    let end = body.find("\n## ").unwrap_or(body.len());
    body[..end].to_owned()
}

/// `(directory, package name)` of every workspace member.
fn workspace_crates() -> Vec<(String, String)> {
    let manifest = read(&root().join("Cargo.toml"));
    let members = manifest
        .lines()
        .find_map(|line| line.strip_prefix("members = ["))
        .expect("the workspace lists its members on one line");
    members
        .trim_end_matches(']')
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .filter(|m| !m.is_empty())
        .map(|dir| {
            let crate_manifest = read(&root().join(&dir).join("Cargo.toml"));
            let name = crate_manifest
                .lines()
                .find_map(|line| line.strip_prefix("name = \""))
                .and_then(|rest| rest.strip_suffix('"'))
                .unwrap_or_else(|| panic!("{dir}/Cargo.toml names its package"))
                .to_owned();
            (dir, name)
        })
        .collect()
}

#[test]
fn the_readme_crate_map_names_every_crate_and_chapter() {
    let map = readme_crate_map();
    let crates: Vec<String> = workspace_crates()
        .into_iter()
        .filter(|(dir, name)| {
            !map.contains(&format!("`{name}`")) && !map.contains(&format!("`{dir}/`"))
        })
        .map(|(_, name)| name)
        .collect();
    let map_lower = map.to_lowercase();
    let chapters: Vec<String> = summary_chapters()
        .into_iter()
        .filter(|(title, _)| !map_lower.contains(&title.to_lowercase()))
        .map(|(title, _)| title)
        .collect();
    assert!(
        crates.is_empty() && chapters.is_empty(),
        "README.md's crate map misses the workspace crates {crates:?} and the chapters \
         {chapters:?} (titles as in docs/src/SUMMARY.md)"
    );
}

#[test]
fn the_introduction_links_every_chapter() {
    let intro = read(&root().join("docs/src/introduction.md"));
    let missing: Vec<String> = summary_chapters()
        .into_iter()
        .filter(|(_, file)| !intro.contains(&format!("]({file})")))
        .map(|(_, file)| file)
        .collect();
    assert!(
        missing.is_empty(),
        "docs/src/introduction.md's chapter list does not link {missing:?}"
    );
}

/// The facade's crate documentation (`//!` lines of src/lib.rs) and its code.
fn facade() -> (String, String) {
    let text = read(&root().join("src/lib.rs"));
    let docs = text
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    (docs, text)
}

/// The table row of the facade's docs whose first cell is `first`.
fn row<'a>(docs: &'a str, first: &str) -> Option<&'a str> {
    docs.lines()
        .find(|l| l.trim_start().starts_with(&format!("| {first} |")))
}

/// The public modules of the facade (`pub mod name` at the top level).
fn facade_modules(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches(" {").trim_end_matches(';').to_owned())
        .collect()
}

/// The names re-exported at the facade's root (top-level `pub use` items).
fn facade_root_names(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("\npub use ") {
        let item = &rest[at + "\npub use ".len()..];
        let end = item.find(';').expect("a use item ends");
        let body = &item[..end];
        let list = match body.find('{') {
            Some(open) => &body[open + 1..body.rfind('}').expect("a closed group")],
            None => body.rsplit("::").next().unwrap(),
        };
        names.extend(
            list.split(',')
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty()),
        );
        rest = &item[end..];
    }
    names
}

/// The features of the facade's Cargo.toml, `default` left out.
fn facade_features() -> Vec<String> {
    let manifest = read(&root().join("Cargo.toml"));
    let start = manifest
        .find("\n[features]\n")
        .expect("the facade has features");
    manifest[start + "\n[features]\n".len()..]
        .lines()
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| l.split_once(" = ").map(|(name, _)| name.trim().to_owned()))
        .filter(|name| name != "default" && !name.starts_with('#'))
        .collect()
}

#[test]
fn the_facade_map_names_every_root_name_module_and_feature() {
    let (docs, code) = facade();
    let root_row = row(&docs, "`freyr::`").expect("the map has a row for the root");
    let root_missing: Vec<String> = facade_root_names(&code)
        .into_iter()
        .filter(|name| !root_row.contains(&format!("`{name}`")))
        .collect();
    let modules = facade_modules(&code);
    let module_rows_missing: Vec<&String> = modules
        .iter()
        .filter(|m| *m != "prelude")
        .filter(|m| {
            row(&docs, &format!("[`{m}`]")).is_none() && row(&docs, &format!("`{m}`")).is_none()
        })
        .collect();
    let features_missing: Vec<String> = facade_features()
        .into_iter()
        .filter(|f| row(&docs, &format!("`{f}`")).is_none())
        .collect();
    let readme_map = readme_crate_map();
    let readme_row = readme_map
        .lines()
        .find(|l| l.starts_with("| `freyr` "))
        .expect("the README's crate map has a row for the facade");
    let readme_missing: Vec<&String> = modules
        .iter()
        .filter(|m| !readme_row.contains(&format!("`{m}`")))
        .collect();
    assert!(
        root_missing.is_empty()
            && module_rows_missing.is_empty()
            && features_missing.is_empty()
            && readme_missing.is_empty(),
        "src/lib.rs's map misses root names {root_missing:?}, module rows \
         {module_rows_missing:?}, feature rows {features_missing:?}; the README's facade row \
         misses modules {readme_missing:?}"
    );
}
