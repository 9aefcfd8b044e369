//! The examples' command lines under hostile input: every bad flag, value, file or combination
//! is refused before anything runs (exit status 2, nothing on stdout, the flag named on stderr
//! with what it takes), and `--help` / `-h` print the flags and exit 0.
//!
//! The examples are run as the binaries cargo builds (`cargo build --example ...`, once per test
//! process, into this test's own target directory). No test here runs a simulation: a command
//! line that is accepted would start one, so where a value must be shown to be accepted it is
//! paired with a later flag that is refused, and the message must name only that later flag.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const EXAMPLES: [&str; 4] = ["million", "rollback", "server_tick", "zones"];

/// The directory holding the example binaries, built (or found up to date) on first use.
fn examples_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // This test runs as target/<profile>/deps/cli_attack-<hash>.
        let exe = std::env::current_exe().expect("the test binary's path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test binary sits in target/<profile>/deps");
        let target_dir = profile_dir.parent().expect("target/<profile>");
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev",
            Some(name) => name,
        };
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("CARGO_TARGET_DIR", target_dir)
            .args(["build", "--quiet", "--profile", profile]);
        for example in EXAMPLES {
            cargo.args(["--example", example]);
        }
        let out = cargo.output().expect("cargo starts");
        assert!(
            out.status.success(),
            "building the examples failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        profile_dir.join("examples")
    })
}

fn run_with(example: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let path = examples_dir().join(format!("{example}{}", std::env::consts::EXE_SUFFIX));
    let mut cmd = Command::new(&path);
    cmd.args(args).env_remove("FREYR_ROW_PATH");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs `example` with `args`, which must be refused: exit status 2, nothing on stdout (the
/// banner comes before any work), and a message on stderr, which is returned.
fn refused(example: &str, args: &[&str]) -> String {
    let out = run_with(example, args, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{example} {args:?}: not refused\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        stdout.is_empty(),
        "{example} {args:?}: printed before refusing: {stdout}"
    );
    assert!(
        !stderr.contains("panicked"),
        "{example} {args:?} panicked: {stderr}"
    );
    stderr
}

/// Every `(args, fragment)`: refused, the message holding `fragment`.
fn refuses_all(example: &str, cases: &[(&[&str], &str)]) {
    for (args, fragment) in cases {
        let err = refused(example, args);
        let first = err.lines().next().unwrap_or_default();
        assert!(
            first.contains(fragment),
            "{example} {args:?}: {first:?} lacks {fragment:?}"
        );
    }
}

/// `--help` and `-h` exit 0 with every flag of `flags` on stdout and nothing on stderr.
fn helps(example: &str, flags: &[&str]) {
    for help in [&["--help"][..], &["-h"], &["--ticks", "5", "--help"]] {
        let out = run_with(example, help, &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{example} {help:?}");
        assert!(out.stderr.is_empty(), "{example} {help:?}");
        for flag in flags {
            assert!(
                stdout.contains(flag),
                "{example} {help:?} lacks {flag}: {stdout}"
            );
        }
    }
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("freyr-cli-attack-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const MAX_U64: &str = "18446744073709551615";

#[test]
fn million_help_lists_every_flag() {
    helps(
        "million",
        &["--ticks", "--workers", "--entities", "--churn", "--help"],
    );
}

#[test]
fn million_refuses_every_bad_value_before_running() {
    refuses_all(
        "million",
        &[
            (&["--ticks"], "--ticks needs a value"),
            (&["--ticks="], "--ticks needs a value"),
            (&["--ticks", "x"], "--ticks needs a whole number"),
            (&["--ticks", "-1"], "--ticks needs a whole number"),
            (&["--ticks", "1e30"], "--ticks needs a whole number"),
            (&["--ticks", "0"], "--ticks must be between 1 and"),
            (&["--ticks", MAX_U64], "--ticks must be between 1 and"),
            (&["--workers", "nan"], "--workers needs a whole number"),
            (&["--workers", "-4"], "--workers needs a whole number"),
            (&["--entities", "0"], "--entities must be between 10 and"),
            (
                &["--entities", MAX_U64],
                "--entities must be between 10 and",
            ),
            (&["--entities", "100000001"], "--entities must be between"),
            (&["--churn", "inf"], "--churn needs a whole number"),
            (&["--churn", MAX_U64], "--churn"),
            (&["--entities", "1000", "--churn", "1001"], "--churn 1001"),
            (&["--ticks", "1", "--ticks", "2"], "--ticks given twice"),
            (&["--ticks=1", "--ticks", "2"], "--ticks given twice"),
            (&["--frobnicate"], "unknown flag --frobnicate"),
            (&["-t", "5"], "unknown flag -t"),
            (&["50"], "unexpected argument \"50\""),
            // Accepted values (documented: 0 workers = one per CPU, more than 256 clamped, churn
            // 0 = none) pass, and the flag after them is the one named.
            (&["--workers", "0", "--ticks", "0"], "--ticks must be"),
            (&["--workers", MAX_U64, "--ticks", "0"], "--ticks must be"),
            (&["--churn", "0", "--ticks", "0"], "--ticks must be"),
        ],
    );
}

#[test]
fn rollback_help_lists_every_flag() {
    helps(
        "rollback",
        &["--ticks", "--players", "--delay", "--workers", "--entities"],
    );
}

#[test]
fn rollback_refuses_every_bad_value_before_running() {
    refuses_all(
        "rollback",
        &[
            (&["--ticks"], "--ticks needs a value"),
            (&["--ticks", "x"], "--ticks takes a whole number"),
            (&["--ticks", "-1"], "--ticks takes a whole number"),
            (&["--ticks", "1e30"], "--ticks takes a whole number"),
            (&["--ticks", "0"], "--ticks must be in 1..=100000"),
            (&["--ticks", MAX_U64], "--ticks must be in 1..=100000"),
            (
                &["--ticks", "18446744073709551616"],
                "--ticks takes a whole",
            ),
            (&["--players", "1"], "--players must be in 2..=8"),
            (&["--players", "9"], "--players must be in 2..=8"),
            (&["--delay", "16"], "--delay must be in 0..=15"),
            (&["--delay", "nan"], "--delay takes a whole number"),
            (&["--workers", "0"], "--workers must be in 1..=256"),
            (&["--workers", "257"], "--workers must be in 1..=256"),
            (&["--workers", MAX_U64], "--workers must be in 1..=256"),
            (&["--entities", "1000001"], "--entities must be in"),
            (&["--ticks", "5", "--ticks", "6"], "--ticks given twice"),
            (&["--ticks=5"], "unknown flag --ticks=5"),
            (&["--speed", "3"], "unknown flag --speed"),
            (&["--speed"], "unknown flag --speed"),
            (&["5"], "unexpected argument \"5\""),
            (&["--ticks", "5", "6"], "unexpected argument \"6\""),
            // More workers than this machine has is accepted (the pool is oversubscribed).
            (&["--workers", "256", "--ticks", "0"], "--ticks must be"),
            (&["--delay", "0", "--ticks", "0"], "--ticks must be"),
        ],
    );
}

#[test]
fn server_tick_help_lists_every_flag() {
    helps(
        "server_tick",
        &[
            "--ticks",
            "--workers",
            "--entities",
            "--peers",
            "--cell-size",
            "--interest-radius",
            "--budget-ms",
            "--raise-budget-at",
            "--governor",
            "--force-load-factor",
            "--pace",
            "--kill-every",
            "--churn-every",
            "--profile-window",
            "--json",
            "--trace",
            "--trace-ticks",
            "--timeline-svg",
        ],
    );
}

#[test]
fn server_tick_refuses_every_bad_value_before_running() {
    refuses_all(
        "server_tick",
        &[
            (&["--ticks"], "--ticks needs a value"),
            (&["--ticks", "--workers", "2"], "--ticks needs a value"),
            (
                &["--ticks", MAX_U64],
                "--ticks takes a whole number in 1..=",
            ),
            (&["--ticks", "-1"], "--ticks takes a whole number"),
            (
                &["--workers", "257"],
                "--workers takes a whole number in 0..=256",
            ),
            (&["--entities", "0"], "--entities"),
            (&["--peers", MAX_U64], "--peers"),
            (&["--budget-ms", "nan"], "--budget-ms takes a number in"),
            (&["--budget-ms", "inf"], "--budget-ms takes a number in"),
            (&["--budget-ms", "1e30"], "--budget-ms takes a number in"),
            (&["--budget-ms", "-1"], "--budget-ms"),
            (&["--cell-size", "NaN"], "--cell-size"),
            (&["--interest-radius", "-inf"], "--interest-radius"),
            (&["--force-load-factor", "nan"], "--force-load-factor"),
            (&["--governor", "maybe"], "--governor takes on or off"),
            (&["--pace", "fast"], "--pace takes realtime or free"),
            (&["--trace-ticks", "5"], "--trace-ticks takes A..B"),
            (&["--kill-every", "18446744073709551616"], "--kill-every"),
            (&["--ticks", "5", "--ticks", "6"], "--ticks given twice"),
            (&["--json=a.json", "--json", "b.json"], "--json given twice"),
            (&["--frobnicate", "1"], "unknown flag --frobnicate"),
            (&["word"], "unexpected argument 'word'"),
            (&["--json", ""], "--json needs a file name"),
            (
                &["--force-load-factor", "0.5", "--governor", "off"],
                "pass one of them",
            ),
            (
                &["--raise-budget-at", "1", "--governor", "off"],
                "governor on",
            ),
            (&["--trace-ticks", "1..2"], "--trace or --timeline-svg"),
            (
                &["--json", "o.json", "--trace", "o.json"],
                "both name o.json",
            ),
            // Accepted (documented: any N, 0 = never; 0 workers = one per CPU).
            (&["--kill-every", MAX_U64, "--ticks", "0"], "--ticks takes"),
            (&["--workers", "0", "--ticks", "0"], "--ticks takes"),
        ],
    );
}

#[test]
fn server_tick_refuses_an_output_it_cannot_write_before_the_first_tick() {
    let dir = scratch("server_tick");
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let under_file = file.join("out.json");
    let missing = dir.join("no-such-dir").join("out.json");
    for path in [&under_file, &missing, &dir] {
        let err = refused(
            "server_tick",
            &["--ticks", "1", "--json", path.to_str().unwrap()],
        );
        assert!(err.contains("cannot write"), "{err}");
    }
    // One file under two names (`out.json`, `sub/../out.json`): the second output would
    // overwrite the first.
    let json = dir.join("out.json");
    std::fs::create_dir(dir.join("sub")).unwrap();
    let other_name = dir.join("sub").join("..").join("out.json");
    let err = refused(
        "server_tick",
        &[
            "--ticks",
            "1",
            "--json",
            json.to_str().unwrap(),
            "--trace",
            other_name.to_str().unwrap(),
        ],
    );
    assert!(err.contains("are the same file"), "{err}");
    assert!(
        !json.exists(),
        "the file created for --json is removed again"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn zones_help_lists_every_flag() {
    helps(
        "zones",
        &[
            "--bus",
            "--zones",
            "--zone",
            "--of",
            "--aircraft",
            "--side",
            "--ticks",
            "--workers",
            "--lookahead",
            "--pace",
            "--stream",
            "--fresh",
            "--parts-dir",
        ],
    );
}

#[test]
fn zones_refuses_every_bad_value_before_running() {
    let nats = ["--bus", "nats://127.0.0.1:4222", "--zone", "0", "--of", "2"];
    let zones_on_nats: Vec<&str> = nats.iter().copied().chain(["--zones", "2"]).collect();
    let bad_port = ["--bus", "nats://127.0.0.1:http", "--zone", "0", "--of", "1"];
    refuses_all(
        "zones",
        &[
            (&["--zones"], "--zones needs a value"),
            (&["--zones", "0"], "--zones 0: expected 1..=64"),
            (&["--zones", "65"], "--zones 65: expected 1..=64"),
            (&["--zones", MAX_U64], "--zones"),
            (&["--zones", "-1"], "--zones -1"),
            (&["--workers", "0"], "--workers 0: expected 1..=256"),
            (&["--workers", "257"], "--workers 257"),
            (&["--aircraft", "0"], "--aircraft 0"),
            (&["--aircraft", "10000001"], "--aircraft"),
            (&["--side", "nan"], "--side nan"),
            (&["--side", "inf"], "--side inf"),
            (&["--side", "1e30"], "--side 1e30"),
            (&["--side", "-5"], "--side -5"),
            (&["--ticks", "0"], "--ticks 0"),
            (&["--lookahead", "0"], "--lookahead 0"),
            (&["--lookahead", "601"], "--lookahead 601"),
            (&["--pace", "fast"], "--pace fast"),
            (&["--stream", "a.b"], "--stream a.b"),
            (&["--bus", "kafka://x"], "--bus kafka://x"),
            (&["--ticks", "5", "--ticks", "6"], "--ticks given twice"),
            (&["--fresh", "--fresh"], "--fresh given twice"),
            (&["--frobnicate", "1"], "unknown flag --frobnicate"),
            (&["--frobnicate"], "unknown flag --frobnicate"),
            (&["5"], "unexpected argument \"5\""),
            (&["--zone", "0", "--of", "2"], "needs --bus nats://"),
            (&["--fresh"], "needs --bus nats://"),
            (&["--parts-dir", "/tmp/x"], "needs --bus nats://"),
            (&["--parts-dir", ""], "--parts-dir needs a directory"),
            (&zones_on_nats, "--zones is for the in-process bus"),
            (
                &["--bus", "nats://127.0.0.1:4222", "--zone", "2", "--of", "2"],
                "--zone 2 is not one of 0..2",
            ),
            (&nats[..2], "needs --zone Z and --of N"),
            (
                &["--bus", "nats://10.0.0.1:4222", "--zone", "0", "--of", "2"],
                "only loopback",
            ),
            (&bad_port, "the port after the host must be a number"),
            // Accepted: more workers than this machine has.
            (&["--workers", "256", "--ticks", "0"], "--ticks 0"),
        ],
    );
}

#[test]
fn zones_refuses_a_parts_dir_it_cannot_write_before_connecting() {
    let dir = scratch("zones");
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let parts = file.join("parts");
    // Port 1 on loopback: nothing listens, so a run that got as far as connecting would fail
    // there (exit 1) instead of naming --parts-dir (exit 2).
    for bus in ["nats://127.0.0.1:1", "nats://[::1]:1", "nats://[::1]"] {
        let err = refused(
            "zones",
            &[
                "--bus",
                bus,
                "--zone",
                "0",
                "--of",
                "1",
                "--parts-dir",
                parts.to_str().unwrap(),
            ],
        );
        assert!(
            err.contains("--parts-dir") && err.contains("pass a writable directory"),
            "{bus}: {err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
