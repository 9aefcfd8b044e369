//! The bench binaries' command lines (`bench_report`, `scaling`, `idle_cpu`) under hostile
//! input: every bad flag, value, file, combination or environment variable is refused before
//! anything runs (exit status 2, the flag or variable named on stderr with what it takes), and
//! `--help` / `-h` print the options and exit 0.
//!
//! No test here runs a benchmark. `bench_report` runs with `CARGO=false` (a `--run` that got
//! past its checks would fail at once instead of starting `cargo bench`) and its target
//! directory in a scratch folder (no criterion results to read, nothing written to `target/`);
//! `scaling` and `idle_cpu` get command lines that would be short if they were accepted.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MAX_U64: &str = "18446744073709551615";

/// Environment variables set for one run.
type Env<'a> = &'a [(&'a str, &'a str)];

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "freyr-bench-cli-attack-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(bin: &str, args: &[&str], env: &[(&str, &str)], target: &Path) -> Output {
    let path = match bin {
        "bench_report" => env!("CARGO_BIN_EXE_bench_report"),
        "scaling" => env!("CARGO_BIN_EXE_scaling"),
        "idle_cpu" => env!("CARGO_BIN_EXE_idle_cpu"),
        other => panic!("no binary {other}"),
    };
    let mut cmd = Command::new(path);
    cmd.args(args)
        .current_dir(target)
        .env("CARGO", "false")
        .env("CARGO_TARGET_DIR", target)
        .env_remove("FREYR_BENCH_GENERIC")
        .env_remove("FREYR_BENCH_THREADS")
        .env_remove("FREYR_ROW_PATH");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Runs `bin`, which must refuse: exit status 2, nothing on stdout, no panic; the first line of
/// stderr must hold `fragment`.
fn refused(bin: &str, args: &[&str], env: &[(&str, &str)], target: &Path, fragment: &str) {
    let out = run(bin, args, env, target);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{bin} {args:?} {env:?}: not refused\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stdout.is_empty(), "{bin} {args:?}: printed {stdout}");
    assert!(!stderr.contains("panicked"), "{bin} {args:?}: {stderr}");
    assert!(
        !stderr.contains("running"),
        "{bin} {args:?}: started the benches: {stderr}"
    );
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.contains(fragment),
        "{bin} {args:?} {env:?}: {first:?} lacks {fragment:?}"
    );
}

/// `--help` and `-h` exit 0 with every word of `flags` on stdout.
fn helps(bin: &str, flags: &[&str], target: &Path) {
    for help in ["--help", "-h"] {
        let out = run(bin, &[help], &[], target);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{bin} {help}");
        assert!(out.stderr.is_empty(), "{bin} {help}");
        for flag in flags {
            assert!(stdout.contains(flag), "{bin} {help} lacks {flag}: {stdout}");
        }
    }
}

#[test]
fn bench_report_help_lists_every_flag() {
    let dir = scratch("report-help");
    helps(
        "bench_report",
        &[
            "--run",
            "--generic",
            "--bench",
            "--filter",
            "--out",
            "--report",
            "--docs",
            "FREYR_BENCH_GENERIC",
            "FREYR_BENCH_THREADS",
        ],
        &dir,
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_report_refuses_bad_flags_files_and_variables_before_running() {
    let dir = scratch("report");
    let d = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    std::fs::write(dir.join("plain.md"), "no generated sections here\n").unwrap();
    std::fs::write(
        dir.join("v3.md"),
        "<!-- BEGIN GENERATED: bench-report -->\n<!-- END GENERATED: bench-report -->\n",
    )
    .unwrap();
    std::fs::write(dir.join("a-file"), "").unwrap();
    let (missing, plain, v3) = (d("missing.md"), d("plain.md"), d("v3.md"));
    let under_file = d("a-file/out.md");
    let cases: &[(&[&str], Env, &str)] = &[
        (&["--frobnicate"], &[], "unknown argument \"--frobnicate\""),
        (&["report.md"], &[], "unknown argument \"report.md\""),
        (&["--filter"], &[], "--filter needs a value"),
        (&["--filter", ""], &[], "--filter needs a value"),
        (&["--out", ""], &[], "--out needs a value"),
        (&["--bench", "nope"], &[], "--bench nope: not one of"),
        (
            &["--filter", "a", "--filter", "b"],
            &[],
            "--filter given twice",
        ),
        (
            &["--out", "a.md", "--out", "b.md"],
            &[],
            "--out given twice",
        ),
        (
            &["--report", "a", "--report", "b"],
            &[],
            "--report given twice",
        ),
        (
            &["--report", "r.md", "--run"],
            &[],
            "not with --run or --out",
        ),
        (&["--run", "--docs", &missing], &[], "--docs"),
        (&["--docs", &missing], &[], "--docs"),
        (&["--run", "--docs", &plain], &[], "no GENERATED section"),
        // The v3 file has no section for the generic build.
        (
            &["--run", "--generic", "--docs", &v3],
            &[],
            "no GENERATED section",
        ),
        (&["--run", "--docs", &d("")], &[], "--docs"),
        (&["--run", "--out", &under_file], &[], "--out"),
        (&["--run", "--out", &d("")], &[], "--out"),
        (&["--report", &missing], &[], "missing.md"),
        (
            &[],
            &[("FREYR_BENCH_GENERIC", "yes")],
            "FREYR_BENCH_GENERIC",
        ),
        (&[], &[("FREYR_BENCH_GENERIC", "")], "FREYR_BENCH_GENERIC"),
        (
            &["--run"],
            &[("FREYR_BENCH_GENERIC", "2")],
            "FREYR_BENCH_GENERIC",
        ),
        (
            &["--run"],
            &[("FREYR_BENCH_THREADS", "abc")],
            "FREYR_BENCH_THREADS",
        ),
        (&["--run"], &[("FREYR_BENCH_THREADS", "0,4")], "\"0\""),
        (
            &["--run"],
            &[("FREYR_BENCH_THREADS", "2,,4")],
            "FREYR_BENCH_THREADS",
        ),
        (
            &["--run"],
            &[("FREYR_BENCH_THREADS", "")],
            "FREYR_BENCH_THREADS",
        ),
        (
            &["--run"],
            &[("FREYR_BENCH_THREADS", "-1")],
            "FREYR_BENCH_THREADS",
        ),
        (&["--run"], &[("FREYR_BENCH_THREADS", "257")], "1..=256"),
        (&["--run"], &[("FREYR_BENCH_THREADS", MAX_U64)], "1..=256"),
        // A good v3 section, but the --out after it cannot be written.
        (&["--docs", &v3, "--out", &under_file], &[], "--out"),
    ];
    for (args, env, fragment) in cases {
        refused("bench_report", args, env, &dir, fragment);
    }
    // Accepted values go on to read criterion's results, of which the scratch target directory
    // has none (exit 1), and the document is left as it was.
    let both = d("both.md");
    let sections = "<!-- BEGIN GENERATED: bench-report -->\n<!-- END GENERATED: bench-report -->\n\
                    <!-- BEGIN GENERATED: bench-report-generic -->\n\
                    <!-- END GENERATED: bench-report-generic -->\n";
    std::fs::write(&both, sections).unwrap();
    for env in [
        &[("FREYR_BENCH_GENERIC", "0")][..],
        &[("FREYR_BENCH_GENERIC", "1")],
        &[("FREYR_BENCH_THREADS", "x")], // read only with --run
    ] {
        let out = run("bench_report", &["--docs", &both], env, &dir);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{env:?}: {stderr}");
        assert!(stderr.contains("criterion"), "{env:?}: {stderr}");
    }
    assert_eq!(std::fs::read_to_string(&both).unwrap(), sections);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scaling_help_lists_every_flag() {
    let dir = scratch("scaling-help");
    helps(
        "scaling",
        &[
            "--max-workers",
            "--ticks",
            "--warmup",
            "--workload",
            "--out",
        ],
        &dir,
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scaling_refuses_every_bad_value_before_running() {
    let dir = scratch("scaling");
    std::fs::write(dir.join("a-file"), "").unwrap();
    let under_file = dir.join("a-file").join("out");
    // What a refused command line would have run, kept short in case it ran.
    let short = [
        "--ticks",
        "1",
        "--warmup",
        "0",
        "--workload",
        "million_iter",
    ];
    let with_short = |extra: &[&str]| -> Vec<String> {
        short.iter().chain(extra).map(|s| (*s).to_owned()).collect()
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            with_short(&["--max-workers"]),
            "--max-workers needs a value",
        ),
        (
            with_short(&["--max-workers", "0"]),
            "--max-workers 0: expected",
        ),
        (with_short(&["--max-workers", "257"]), "1..=256"),
        (with_short(&["--max-workers", MAX_U64]), "--max-workers"),
        (with_short(&["--max-workers", "-1"]), "--max-workers -1"),
        (with_short(&["--max-workers", "1e30"]), "--max-workers 1e30"),
        (with_short(&["--max-workers", "nan"]), "--max-workers nan"),
        (vec!["--ticks".into(), "0".into()], "--ticks 0: expected"),
        (vec!["--ticks".into(), MAX_U64.into()], "--ticks"),
        (vec!["--ticks".into(), "1000001".into()], "1..=1000000"),
        (vec!["--warmup".into(), "-1".into()], "--warmup -1"),
        (vec!["--warmup".into(), MAX_U64.into()], "--warmup"),
        (with_short(&["--ticks", "2"]), "--ticks given twice"),
        (with_short(&["--warmup", "2"]), "--warmup given twice"),
        (
            with_short(&["--out", "a", "--out", "b"]),
            "--out given twice",
        ),
        (with_short(&["--out", ""]), "--out needs a directory"),
        (
            with_short(&["--workload", "nope"]),
            "--workload nope: not one of",
        ),
        (with_short(&["--fast"]), "unknown argument \"--fast\""),
        (with_short(&["16"]), "unknown argument \"16\""),
        (
            with_short(&["--out", under_file.to_str().unwrap()]),
            "--out",
        ),
        // More workers than this machine has is accepted (oversubscribed); the bad value after
        // it is the one named.
        (
            vec![
                "--max-workers".into(),
                "256".into(),
                "--ticks".into(),
                "0".into(),
            ],
            "--ticks 0",
        ),
    ];
    for (args, fragment) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused("scaling", &args, &[], &dir, fragment);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn idle_cpu_help_lists_every_argument() {
    let dir = scratch("idle-help");
    helps("idle_cpu", &["TICKS", "WORKERS", "1..=256"], &dir);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn idle_cpu_refuses_every_bad_value_before_running() {
    let dir = scratch("idle");
    let cases: &[(&[&str], &str)] = &[
        (&["0"], "TICKS \"0\""),
        (&["-1"], "TICKS \"-1\""),
        (&["x"], "TICKS \"x\""),
        (&["1e30"], "TICKS \"1e30\""),
        (&[MAX_U64], "1..=1000000"),
        (&["1000001"], "1..=1000000"),
        (&["--ticks"], "TICKS \"--ticks\""),
        (&["1", "0"], "WORKERS \"0\""),
        (
            &["1", "257"],
            "WORKERS \"257\": expected a whole number in 1..=256",
        ),
        (&["1", MAX_U64], "WORKERS"),
        (&["1", "nan"], "WORKERS \"nan\""),
        // More workers than this machine has is accepted; the bad one after it is named.
        (&["1", "64", "x"], "WORKERS \"x\""),
    ];
    for (args, fragment) in cases {
        refused("idle_cpu", args, &[], &dir, fragment);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
