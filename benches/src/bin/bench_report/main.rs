//! `bench_report`: runs the peer comparison and prints it as markdown tables, written to
//! `target/bench-report.md` (`target/bench-report-generic.md` for the generic build).
//!
//! ```text
//! cargo run --release -p freyr-benches --bin bench_report -- --run            # x86-64-v3
//! cargo run --release -p freyr-benches --bin bench_report -- --run --generic  # as a dependent builds
//! ```
//!
//! With `--run` it runs `cargo bench -p freyr-benches --features compare` (benches `core`,
//! `query`, `registry`, `sched`) first, then reports the medians that run wrote. Without it, it
//! reports what criterion's directory already holds; with `--report FILE`, a report it wrote
//! before (to splice into the documents again without rerunning anything).
//!
//! `--docs FILE` writes the report into FILE's GENERATED sections: the whole report into the
//! guide's Benchmarks chapter, a short headline table into the README (see `splice`):
//!
//! ```text
//! cargo run --release -p freyr-benches --bin bench_report -- --run --generic --docs README.md --docs docs/src/benchmarks.md
//! cargo run --release -p freyr-benches --bin bench_report -- --run --docs docs/src/benchmarks.md
//! ```
//!
//! Two builds. By default the comparison is built for x86-64-v3 (AVX2, FMA):
//! `RUSTFLAGS="-C target-cpu=x86-64-v3"` unless `RUSTFLAGS` is set already. A crate that depends
//! on Freyr builds for the generic x86-64 target unless it says otherwise; `--generic` (or
//! `FREYR_BENCH_GENERIC=1`) builds the benches that way: `RUSTFLAGS="-C target-cpu=x86-64"`, for
//! Freyr and the peers alike, in a separate target directory, `target/generic-x86-64`, so the
//! two builds do not evict each other.

mod collect;
mod splice;
mod table;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::SystemTime;
use std::{env, fs};

const HELP: &str = "\
bench_report: Freyr against hecs, bevy_ecs and legion, as markdown tables.

USAGE: cargo run --release -p freyr-benches --bin bench_report -- [OPTIONS]

OPTIONS:
  --run            run the comparison first (cargo bench --features compare)
  --generic        the generic x86-64 build, as a dependent crate builds Freyr
                   (RUSTFLAGS=\"-C target-cpu=x86-64\", target dir target/generic-x86-64);
                   the same as FREYR_BENCH_GENERIC=1
  --bench NAME     only this bench target (core, query, registry, sched); repeatable
  --filter REGEX   only benchmarks whose id matches (passed to criterion)
  --out FILE       where to write the report
                   (default target/bench-report.md, target/bench-report-generic.md)
  --report FILE    splice FILE, a report written before (by --out), instead of reading
                   criterion's results; FILE's build must be the one asked for
  --docs FILE      also write it into FILE's GENERATED sections (repeatable):
                   `bench-report` (the whole report), `bench-summary` (the summary
                   table) and `bench-headline` (the short table of the headline rows),
                   `-generic` appended for the generic build; the README holds
                   `bench-headline-generic`, the Benchmarks chapter both full reports:
                   --generic --docs README.md --docs docs/src/benchmarks.md
  -h, --help       this text

--filter, --out and --report go at most once. Every --docs file and --out are checked before
anything runs, and so are FREYR_BENCH_GENERIC (1 or 0) and, with --run, FREYR_BENCH_THREADS.
Parallel rows run at the machine's thread count, or at each of FREYR_BENCH_THREADS=1,2,8
(counts in 1..=256).";

/// The benches of the comparison.
const BENCHES: [&str; 4] = ["core", "query", "registry", "sched"];

/// Parsed command line.
#[derive(Debug, Default, PartialEq)]
struct Args {
    run: bool,
    generic: bool,
    benches: Vec<String>,
    filter: Option<String>,
    out: Option<PathBuf>,
    report: Option<PathBuf>,
    docs: Vec<PathBuf>,
    help: bool,
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or(format!("{flag} needs a value"));
        match arg.as_str() {
            "--run" => parsed.run = true,
            "--generic" => parsed.generic = true,
            "--bench" => {
                let name = value("--bench")?;
                if !BENCHES.contains(&name.as_str()) {
                    return Err(format!("--bench {name}: not one of {}", BENCHES.join(", ")));
                }
                parsed.benches.push(name);
            }
            "--filter" => parsed.filter = Some(once(&parsed.filter, "--filter", value)?),
            "--out" => parsed.out = Some(once(&parsed.out, "--out", value)?.into()),
            "--report" => parsed.report = Some(once(&parsed.report, "--report", value)?.into()),
            "--docs" => parsed.docs.push(once(&None::<()>, "--docs", value)?.into()),
            "-h" | "--help" => parsed.help = true,
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    if parsed.report.is_some() && (parsed.run || parsed.out.is_some()) {
        return Err("--report splices a report written before: not with --run or --out".into());
    }
    Ok(parsed)
}

/// The value of a flag that takes one (`value` reads it): refused when the flag was given
/// before (`slot` is set) or the value is empty.
fn once<T>(
    slot: &Option<T>,
    flag: &str,
    value: impl FnOnce(&str) -> Result<String, String>,
) -> Result<String, String> {
    if slot.is_some() {
        return Err(format!("{flag} given twice; pass it once"));
    }
    let v = value(flag)?;
    if v.is_empty() {
        return Err(format!("{flag} needs a value (got an empty one)"));
    }
    Ok(v)
}

/// `FREYR_BENCH_GENERIC`: unset or `0` is the x86-64-v3 build, `1` the generic one.
fn generic_from_env() -> Result<bool, String> {
    match env::var("FREYR_BENCH_GENERIC").as_deref() {
        Err(env::VarError::NotPresent) | Ok("0") => Ok(false),
        Ok("1") => Ok(true),
        Ok(v) => Err(format!(
            "FREYR_BENCH_GENERIC={v:?}: set it to 1 (the generic build) or 0, or unset it"
        )),
        Err(env::VarError::NotUnicode(v)) => Err(format!(
            "FREYR_BENCH_GENERIC={v:?}: set it to 1 (the generic build) or 0, or unset it"
        )),
    }
}

/// Checks, before anything runs, that every `--docs` file can be read and written and marks a
/// GENERATED section of this build, and that `--out` can be written.
fn check_files(args: &Args, generic: bool) -> Result<(), String> {
    let sections = splice::sections("", generic);
    for doc in &args.docs {
        let writable = fs::OpenOptions::new().write(true).open(doc);
        let text = writable
            .and_then(|_| fs::read_to_string(doc))
            .map_err(|e| format!("--docs {}: {e}", doc.display()))?;
        match splice::splice(&text, &sections) {
            Ok((_, 0)) => {
                let names: Vec<&str> = sections.iter().map(|(n, _)| n.as_str()).collect();
                return Err(format!(
                    "--docs {} has no GENERATED section for this build ({})",
                    doc.display(),
                    names.join(", ")
                ));
            }
            Ok(_) => {}
            Err(e) => return Err(format!("--docs {}: {e}", doc.display())),
        }
    }
    if let Some(out) = &args.out {
        let existed = out.exists();
        fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(out)
            .map_err(|e| format!("--out {}: {e}", out.display()))?;
        if !existed {
            let _ = fs::remove_file(out);
        }
    }
    Ok(())
}

/// The workspace root (this package's parent directory).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("benches/ sits in the workspace")
        .to_path_buf()
}

/// The target directory of the build: the generic build's own, or `CARGO_TARGET_DIR`, or
/// `target/`.
fn target_dir(generic: bool) -> PathBuf {
    let target = env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    if generic {
        target.join("generic-x86-64")
    } else {
        target
    }
}

/// What the build is, in words, for the report's header.
fn build_label(generic: bool) -> String {
    if generic {
        "generic x86-64 (`RUSTFLAGS=\"-C target-cpu=x86-64\"`: what a crate depending on Freyr \
         gets by default)"
            .into()
    } else if let Some(flags) = env::var_os("RUSTFLAGS") {
        format!("`RUSTFLAGS={:?}`", flags)
    } else {
        "x86-64-v3 (`RUSTFLAGS=\"-C target-cpu=x86-64-v3\"`)".into()
    }
}

/// Runs the comparison benches; criterion writes under `target`.
fn run_benches(args: &Args, target: &Path) -> Result<(), String> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root()).args([
        "bench",
        "-p",
        "freyr-benches",
        "--features",
        "compare",
    ]);
    let benches: Vec<&str> = if args.benches.is_empty() {
        BENCHES.to_vec()
    } else {
        args.benches.iter().map(String::as_str).collect()
    };
    for bench in benches {
        cmd.args(["--bench", bench]);
    }
    if let Some(filter) = &args.filter {
        cmd.args(["--", filter]);
    }
    cmd.env("CARGO_TARGET_DIR", target);
    if args.generic {
        cmd.env("RUSTFLAGS", "-C target-cpu=x86-64");
    } else if env::var_os("RUSTFLAGS").is_none() {
        cmd.env("RUSTFLAGS", "-C target-cpu=x86-64-v3");
    }
    eprintln!("bench_report: running {cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo bench failed: {status}"))
    }
}

/// `time` as `YYYY-MM-DD HH:MM UTC` (days to civil date: Howard Hinnant's algorithm).
fn utc(time: SystemTime) -> String {
    let secs = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// A report written before, for `--report`: its header must name the build asked for.
fn stored_report(path: &Path, generic: bool) -> Result<String, String> {
    let report = fs::read_to_string(path).map_err(|e| e.to_string())?;
    let build = report
        .lines()
        .find_map(|l| l.strip_prefix("- Build: "))
        .ok_or("not a bench_report report (no `- Build:` line)")?;
    if build.starts_with("generic") != generic {
        return Err(format!(
            "its build is {build}; pass --generic exactly when it is the generic build"
        ));
    }
    Ok(report)
}

/// Runs the comparison if asked, reads criterion's results, prints the report and writes it to
/// `--out`; `None` after printing why it could not.
fn measure(args: &Args, generic: bool) -> Option<String> {
    let target = target_dir(generic);
    let started = SystemTime::now();
    if args.run
        && let Err(e) = run_benches(args, &target)
    {
        eprintln!("bench_report: {e}");
        return None;
    }
    let criterion = target.join("criterion");
    let measurements = match collect::collect(&criterion, args.run.then_some(started)) {
        Ok(ms) if !ms.is_empty() => ms,
        Ok(_) => {
            eprintln!(
                "bench_report: no results under {} (run with --run)",
                criterion.display()
            );
            return None;
        }
        Err(e) => {
            eprintln!("bench_report: reading {}: {e}", criterion.display());
            return None;
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut report = format!(
        "# Freyr benchmark report\n\n\
         - Build: {}\n- Machine: {}, {threads} hardware threads\n- Date: {}\n\
         - Reproduce: `cargo run --release -p freyr-benches --bin bench_report -- --run{}`\n\n",
        build_label(generic),
        freyr_benches::cpu_name(),
        utc(started),
        if generic { " --generic" } else { "" },
    );
    report.push_str(&table::render(&measurements));
    print!("{report}");
    let out = args.out.clone().unwrap_or_else(|| {
        let name = if generic {
            "bench-report-generic.md"
        } else {
            "bench-report.md"
        };
        target_dir(false).join(name)
    });
    if let Err(e) = fs::write(&out, &report) {
        eprintln!("bench_report: writing {}: {e}", out.display());
        return None;
    }
    eprintln!("bench_report: wrote {}", out.display());
    Some(report)
}

fn main() -> ExitCode {
    let args = match parse(env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("bench_report: {e}");
            return ExitCode::from(2);
        }
    };
    if args.help {
        println!("{HELP}");
        return ExitCode::SUCCESS;
    }
    let generic = match generic_from_env() {
        Ok(from_env) => args.generic || from_env,
        Err(e) => {
            eprintln!("bench_report: {e}");
            return ExitCode::from(2);
        }
    };
    // The benches read FREYR_BENCH_THREADS: a bad list fails now, not after their build.
    let threads = match env::var("FREYR_BENCH_THREADS") {
        Ok(list) if args.run => freyr_benches::parse_bench_threads(&list).map(drop),
        Err(env::VarError::NotUnicode(v)) if args.run => Err(format!(
            "FREYR_BENCH_THREADS={v:?} is not a comma list of counts"
        )),
        _ => Ok(()),
    };
    if let Err(e) = threads.and_then(|()| check_files(&args, generic)) {
        eprintln!("bench_report: {e}");
        return ExitCode::from(2);
    }
    let report = match &args.report {
        Some(path) => match stored_report(path, generic) {
            Ok(report) => report,
            Err(e) => {
                eprintln!("bench_report: {}: {e}", path.display());
                return ExitCode::from(2);
            }
        },
        None => match measure(&args, generic) {
            Some(report) => report,
            None => return ExitCode::FAILURE,
        },
    };
    let sections = splice::sections(&report, generic);
    for doc in &args.docs {
        let spliced = fs::read_to_string(doc)
            .map_err(|e| e.to_string())
            .and_then(|text| splice::splice(&text, &sections));
        match spliced {
            Ok((_, 0)) => {
                let names: Vec<&str> = sections.iter().map(|(n, _)| n.as_str()).collect();
                eprintln!(
                    "bench_report: {} has no GENERATED section for this build ({})",
                    doc.display(),
                    names.join(", ")
                );
                return ExitCode::FAILURE;
            }
            Ok((text, n)) => {
                if let Err(e) = fs::write(doc, text) {
                    eprintln!("bench_report: writing {}: {e}", doc.display());
                    return ExitCode::FAILURE;
                }
                eprintln!("bench_report: replaced {n} section(s) of {}", doc.display());
            }
            Err(e) => {
                eprintln!("bench_report: {}: {e}", doc.display());
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Args, String> {
        parse(list.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flags_parse_and_unknown_ones_are_named() {
        let parsed = args(&["--run", "--generic", "--bench", "query", "--out", "x.md"]).unwrap();
        assert!(parsed.run && parsed.generic);
        assert_eq!(parsed.benches, ["query"]);
        assert_eq!(parsed.out, Some(PathBuf::from("x.md")));
        assert_eq!(
            args(&["--frobnicate"]).unwrap_err(),
            "unknown argument \"--frobnicate\" (see --help)"
        );
        assert_eq!(args(&["--filter"]).unwrap_err(), "--filter needs a value");
        assert!(
            args(&["--bench", "nope"])
                .unwrap_err()
                .contains("not one of")
        );
    }

    #[test]
    fn a_stored_report_is_spliced_alone_and_only_for_its_own_build() {
        let parsed = args(&["--report", "r.md", "--generic", "--docs", "README.md"]).unwrap();
        assert_eq!(parsed.report, Some(PathBuf::from("r.md")));
        for clash in [
            &["--report", "r.md", "--run"][..],
            &["--report", "r.md", "--out", "x"],
        ] {
            assert!(args(clash).unwrap_err().contains("not with --run or --out"));
        }
        let dir = env::temp_dir().join(format!("bench_report_{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("report.md");
        fs::write(
            &file,
            "# Freyr benchmark report\n\n- Build: generic x86-64\n",
        )
        .unwrap();
        assert!(
            stored_report(&file, true)
                .unwrap()
                .contains("- Build: generic")
        );
        assert!(
            stored_report(&file, false)
                .unwrap_err()
                .contains("pass --generic")
        );
        fs::write(&file, "no header").unwrap();
        assert!(
            stored_report(&file, true)
                .unwrap_err()
                .contains("not a bench_report")
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dates_are_civil_utc() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_709_210_096);
        assert_eq!(utc(t), "2024-02-29 12:34 UTC");
        assert_eq!(utc(SystemTime::UNIX_EPOCH), "1970-01-01 00:00 UTC");
    }

    #[test]
    fn the_generic_build_has_its_own_target_directory() {
        assert_eq!(target_dir(true), target_dir(false).join("generic-x86-64"));
    }
}
