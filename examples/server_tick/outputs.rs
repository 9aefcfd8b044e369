//! The output files (`--json`, `--trace`, `--timeline-svg`): every one is opened before the
//! first tick, so a path that cannot be written fails at once, and each is written on its own
//! after the run, so one that fails does not lose the others.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use freyr::profile::TickProfile;

use crate::args::Args;
use crate::timeline;

/// What one output holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Json,
    Trace,
    /// The timeline of this tick.
    Timeline(u64),
}

/// One opened output file.
struct Output {
    kind: Kind,
    path: PathBuf,
    file: File,
    /// Whether opening it created it (it is removed again if a later output fails to open).
    created: bool,
}

/// The output files, open and not yet written.
pub(crate) struct Outputs {
    open: Vec<Output>,
}

/// The outcome of writing one output: the line to print, or the error.
pub(crate) type Written = Result<String, String>;

impl Outputs {
    /// Opens (creating where needed) every output file `args` names, leaving existing contents
    /// in place until [`write`](Self::write).
    ///
    /// # Errors
    ///
    /// `cannot write PATH: OS ERROR` for the first file that cannot be opened for writing, or
    /// a message naming two outputs that are one file under two names; the files this call
    /// created before it are removed again.
    pub(crate) fn open(args: &Args) -> Result<Outputs, String> {
        let wanted = [
            (Kind::Json, &args.json),
            (Kind::Trace, &args.trace),
            (
                Kind::Timeline(args.traced_ticks().start),
                &args.timeline_svg,
            ),
        ];
        let mut open = Vec::new();
        for (kind, path) in wanted {
            let Some(path) = path else { continue };
            // The files this call created before a failure are removed again.
            let abandon = |open: &[Output], msg: String| {
                for o in open.iter().filter(|o| o.created) {
                    let _ = std::fs::remove_file(&o.path);
                }
                Err(msg)
            };
            let (file, created) = match open_one(path) {
                Ok(opened) => opened,
                Err(e) => return abandon(&open, format!("cannot write {}: {e}", path.display())),
            };
            // Two spellings of one file (`out.json`, `./out.json`) would overwrite each other.
            let real = std::fs::canonicalize(path).ok();
            if let Some(o) = open
                .iter()
                .find(|o| real.is_some() && std::fs::canonicalize(&o.path).ok() == real)
            {
                let msg = format!(
                    "{} and {} are the same file; give each output its own file",
                    o.path.display(),
                    path.display()
                );
                return abandon(&open, msg);
            }
            open.push(Output {
                kind,
                path: path.clone(),
                file,
                created,
            });
        }
        Ok(Outputs { open })
    }

    /// The paths opened, in the order they are written.
    #[cfg(test)]
    pub(crate) fn paths(&self) -> Vec<&Path> {
        self.open.iter().map(|o| o.path.as_path()).collect()
    }

    /// Writes every output from `profile`, each on its own: one that fails is reported and the
    /// others are still written. Returns one outcome per output, in order.
    pub(crate) fn write(self, profile: &TickProfile) -> Vec<Written> {
        self.open
            .into_iter()
            .map(|o| {
                let path = o.path.display().to_string();
                write_one(o, profile).map_err(|e| format!("cannot write {path}: {e}"))
            })
            .collect()
    }
}

/// Opens `path` for writing without truncating it; whether it was created.
fn open_one(path: &Path) -> std::io::Result<(File, bool)> {
    let existed = path.exists();
    // Not truncated here: the contents go when the run is over and the file is written.
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    Ok((file, !existed))
}

fn write_one(o: Output, profile: &TickProfile) -> Result<String, String> {
    let mut file = o.file;
    // The contents of a regular file from before the run go now, not when it was opened (a
    // device or a pipe, e.g. /dev/stdout, is written as it is).
    if file.metadata().map_err(|e| e.to_string())?.is_file() {
        file.set_len(0).map_err(|e| e.to_string())?;
        file.rewind().map_err(|e| e.to_string())?;
    }
    let mut out = BufWriter::new(file);
    let line = match o.kind {
        Kind::Json => {
            profile.write_json(&mut out).map_err(|e| e.to_string())?;
            format!("wrote {}", o.path.display())
        }
        Kind::Trace => {
            profile
                .write_chrome_trace(&mut out)
                .map_err(|e| e.to_string())?;
            format!(
                "wrote {} (open it in https://ui.perfetto.dev)",
                o.path.display()
            )
        }
        Kind::Timeline(tick) => {
            let (svg, bars) = timeline::draw(profile.trace_events(), tick)?;
            out.write_all(svg.as_bytes()).map_err(|e| e.to_string())?;
            format!("wrote {} (tick {tick}, {bars} spans)", o.path.display())
        }
    };
    out.flush().map_err(|e| e.to_string())?;
    Ok(line)
}

#[cfg(test)]
mod tests {
    use freyr::Registry;
    use freyr::profile::{TickExtras, TickProfileConfig};

    use super::*;
    use crate::args::parse;

    fn args(s: &str) -> Args {
        parse(s.split_whitespace().map(str::to_owned)).unwrap()
    }

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("server-tick-{}-{name}", std::process::id()))
    }

    #[test]
    fn an_unwritable_path_fails_at_open_naming_it_and_leaves_nothing_behind() {
        let json = temp("open-first.json");
        let bad = temp("no-such-dir").join("trace.json");
        let err = Outputs::open(&args(&format!(
            "--ticks 5 --json {} --trace {}",
            json.display(),
            bad.display()
        )))
        .err()
        .expect("a file in a missing directory cannot be opened");
        assert!(
            err.starts_with(&format!("cannot write {}: ", bad.display())),
            "{err}"
        );
        assert!(err.contains("No such file"), "the OS error is named: {err}");
        assert!(
            !json.exists(),
            "the output opened before the failure was left behind"
        );
        // A directory is not a file either.
        let dir = std::env::temp_dir();
        let err = Outputs::open(&args(&format!("--json {}", dir.display())))
            .err()
            .expect("a directory cannot be opened as a file");
        assert!(err.contains(&dir.display().to_string()), "{err}");
    }

    /// `/dev/full` opens for writing, and every write to it fails (no space left).
    #[cfg(target_os = "linux")]
    #[test]
    fn one_failed_output_does_not_lose_the_others() {
        let mut registry = Registry::with_workers(1);
        registry.enable_tick_profile(TickProfileConfig {
            trace_ticks: 0..1,
            ..TickProfileConfig::default()
        });
        registry.profile_tick_begin(0);
        registry.profile_tick_phase("only");
        registry.profile_tick_end(TickExtras::default());
        let (trace, svg) = (temp("a-trace.json"), temp("a.svg"));
        std::fs::write(&trace, "old contents, longer than nothing").unwrap();
        let outputs = Outputs::open(&args(&format!(
            "--ticks 5 --trace-ticks 0..1 --json /dev/full --trace {} --timeline-svg {}",
            trace.display(),
            svg.display()
        )))
        .unwrap();
        assert_eq!(
            outputs.paths(),
            [Path::new("/dev/full"), trace.as_path(), svg.as_path()]
        );
        let written = outputs.write(registry.tick_profile().unwrap());
        assert_eq!(written.len(), 3);
        let err = written[0].as_ref().unwrap_err();
        assert!(err.starts_with("cannot write /dev/full: "), "{err}");
        assert!(written[1].is_ok() && written[2].is_ok(), "{written:?}");
        let trace_json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
        assert!(
            trace_json["traceEvents"].is_array(),
            "the old contents were replaced by the trace"
        );
        assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
        for p in [&trace, &svg] {
            let _ = std::fs::remove_file(p);
        }
    }
}
