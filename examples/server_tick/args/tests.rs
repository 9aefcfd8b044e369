//! The command line's unit tests: every flag parsed, every bad value refused.

use super::*;

fn parse_str(s: &str) -> Result<Args, ArgsError> {
    parse(s.split_whitespace().map(str::to_owned))
}

/// The flags of the runs the bad values were found with.
const BASE: &str = "--entities 1000 --peers 4 --pace free --ticks 5";

/// `BASE` with `extra` after it, less the flags of `BASE` that `extra` gives again (a flag
/// may be given once).
fn with_base(extra: &str) -> String {
    let base: Vec<&str> = BASE.split_whitespace().collect();
    let kept: Vec<&str> = base
        .chunks(2)
        .filter(|pair| !extra.split_whitespace().any(|w| w == pair[0]))
        .flatten()
        .copied()
        .collect();
    format!("{} {extra}", kept.join(" "))
}

/// `BASE` plus `extra`: the error message.
fn rejected(extra: &str) -> String {
    match parse_str(&with_base(extra)) {
        Err(ArgsError::Invalid(msg)) => msg,
        other => panic!("{extra}: accepted ({other:?})"),
    }
}

#[test]
fn defaults_match_the_usage_text() {
    let args = parse_str("").unwrap();
    assert_eq!(args, Args::default());
    assert_eq!(
        (args.ticks, args.settings.entities, args.settings.peers),
        (600, 20_000, 256)
    );
    assert_eq!(args.levers, LeverSource::Governor { enabled: true });
    assert_eq!(args.traced_ticks(), 0..0);
    assert_eq!(args.profile_window, 3600);
    assert_eq!(args.pace_name(), "realtime");
    assert!(parse_str(BASE).is_ok());
}

#[test]
fn every_flag_is_read() {
    let args = parse_str(
        "--ticks 100 --workers=3 --entities 2_000 --peers 16 --budget-ms 2.5 --governor off \
         --pace free --json a.json --trace t.json --timeline-svg t.svg --cell-size 1000 \
         --interest-radius 3000 --kill-every 10 --churn-every 20 --profile-window 50",
    )
    .unwrap();
    assert_eq!((args.ticks, args.workers), (100, 3));
    assert_eq!((args.settings.entities, args.settings.peers), (2000, 16));
    assert_eq!(args.budget, Duration::from_micros(2500));
    assert_eq!(args.levers, LeverSource::Governor { enabled: false });
    assert_eq!(args.pace, Pace::Free);
    assert_eq!(args.pace_name(), "free");
    assert_eq!(args.traced_ticks(), 50..52);
    assert_eq!(
        (args.settings.kill_every, args.settings.churn_every),
        (10, 20)
    );
    assert_eq!(args.profile_config().window, 50);
    let raised = parse_str("--ticks 100 --raise-budget-at 50").unwrap();
    assert_eq!(raised.raise_budget_at, Some(50));
    let forced = parse_str("--force-load-factor 0.5 --trace-ticks 3..9 --trace t.json").unwrap();
    assert_eq!(forced.levers, LeverSource::Forced(vec![(0, 0.5)]));
    assert_eq!(forced.traced_ticks(), 3..9);
    assert_eq!(forced.profile_config().trace_ticks, 3..9);
    let floor = parse_str("--force-load-factor 0.25").unwrap();
    assert_eq!(floor.levers, LeverSource::Forced(vec![(0, 0.25)]));
    let one = parse_str("--ticks 1 --trace t.json").unwrap();
    assert_eq!(one.traced_ticks(), 0..1, "a one-tick run traces its tick");
}

#[test]
fn bad_input_names_the_flag() {
    for (bad, word) in [
        ("--ticks x", "--ticks"),
        ("--governor maybe", "--governor"),
        ("--force-load-factor 0", "--force-load-factor"),
        ("--budget-ms -1", "--budget-ms"),
        ("--trace-ticks 5..5", "--trace-ticks"),
        ("--frobnicate 1", "--frobnicate"),
        ("--ticks", "--ticks"),
        ("--json --trace t.json", "--json needs a value"),
        ("--budget-ms nan", "--budget-ms"),
        ("--budget-ms inf", "--budget-ms"),
        ("--interest-radius 0", "--interest-radius"),
        ("--interest-radius 1e7", "--interest-radius"),
        ("--cell-size -5", "--cell-size"),
        ("--workers 257", "--workers"),
        ("--profile-window 0", "--profile-window"),
        ("--profile-window 216001", "--profile-window"),
        ("--entities 0", "--entities"),
        ("--ticks 0", "--ticks"),
        ("--json", "--json"),
        ("--json=", "--json"),
    ] {
        let err = parse_str(bad).unwrap_err().to_string();
        assert!(err.contains(word), "{bad}: {err}");
    }
    assert_eq!(parse_str("--help").unwrap_err(), ArgsError::Help);
}

// One test per value observed to crash or mislead the run of `BASE`; each was accepted by
// the parser before these checks.

#[test]
fn ticks_beyond_the_limit_are_rejected() {
    let err = rejected("--ticks 18446744073709551615");
    assert!(
        err.contains("--ticks") && err.contains("1..=4000000000"),
        "{err}"
    );
    assert!(rejected("--ticks 4000000001").contains("--ticks"));
    assert_eq!(parse_str("--ticks 4000000000").unwrap().ticks, MAX_TICKS);
}

#[test]
fn a_long_run_keeps_the_profiler_window_not_one_record_per_tick() {
    // 10^9 ticks is a valid run (about 193 days at 60 Hz); the profiler's window stays
    // --profile-window, not the run's length.
    let args = parse_str(&with_base("--ticks 1000000000")).unwrap();
    assert_eq!(args.ticks, 1_000_000_000);
    assert_eq!(
        args.profile_config().window,
        TickProfileConfig::DEFAULT_WINDOW
    );
}

#[test]
fn a_budget_too_small_or_too_large_is_rejected() {
    let small = rejected("--budget-ms 1e-7");
    assert!(
        small.contains("--budget-ms") && small.contains("[0.001, 60000]"),
        "{small}"
    );
    let large = rejected("--budget-ms 1e30");
    assert!(
        large.contains("--budget-ms 1e30") || large.contains("(got 1e30)"),
        "{large}"
    );
    // Every accepted budget makes a working governor.
    for ms in ["0.001", "16.667", "60000"] {
        let args = parse_str(&with_base(&format!("--budget-ms {ms}"))).unwrap();
        assert!(
            freyr::time::TickGovernor::new(args.governor_params()).is_ok(),
            "{ms}"
        );
    }
}

#[test]
fn peers_beyond_the_limit_are_rejected_not_wrapped() {
    let err = rejected("--peers 4294967296");
    assert!(
        err.contains("--peers") && err.contains("0..=65536"),
        "{err}"
    );
    assert!(rejected("--peers 65537").contains("--peers"));
    assert_eq!(parse_str("--peers 65536").unwrap().settings.peers, 65_536);
}

#[test]
fn entities_beyond_the_limit_are_rejected() {
    let err = rejected("--entities 5000000000");
    assert!(
        err.contains("--entities") && err.contains("1..=10000000"),
        "{err}"
    );
}

#[test]
fn a_cell_too_small_for_the_map_is_rejected_with_the_smallest_it_takes() {
    let err = rejected("--cell-size 0.001");
    // 1000 aircraft: a 8944 m map, at most 4096 cells a side.
    assert!(
        err.contains("--cell-size 0.001") && err.contains("2.184"),
        "{err}"
    );
    let args = parse_str(&with_base("--cell-size 2.184")).unwrap();
    assert_eq!(args.settings.cell_size, 2.184);
    // The bound follows the map: the default cell on the largest map is fine.
    assert!(parse_str("--entities 10000000").is_ok());
}

#[test]
fn a_stray_word_is_an_unexpected_argument() {
    let err = rejected("word");
    assert_eq!(
        err,
        "unexpected argument 'word'; every setting is a --flag, see --help"
    );
    assert!(rejected("--ticks 5 6").contains("unexpected argument '6'"));
    assert!(rejected("-x").contains("unexpected argument '-x'"));
}

#[test]
fn a_forced_load_factor_below_the_floor_is_rejected_naming_the_floor() {
    let err = rejected("--force-load-factor 0.1");
    assert!(err.contains("0.1") && err.contains("floor 0.25"), "{err}");
    assert!(rejected("--force-load-factor 1.5").contains("--force-load-factor"));
    assert!(rejected("--force-load-factor 0.5 --governor off").contains("pass one"));
}

#[test]
fn a_trace_range_outside_the_run_is_rejected() {
    let err = rejected("--trace t.json --trace-ticks 10..12");
    assert!(
        err.contains("--trace-ticks 10..12") && err.contains("5 ticks"),
        "{err}"
    );
    assert!(rejected("--trace t.json --trace-ticks 4..6").contains("outside the run"));
    assert!(parse_str(&with_base("--trace t.json --trace-ticks 3..5")).is_ok());
    assert!(rejected("--trace-ticks 1..2").contains("--trace or --timeline-svg"));
    let long = parse_str("--ticks 5000 --trace t.json --trace-ticks 0..601").unwrap_err();
    assert!(long.to_string().contains("more than 600"), "{long}");
}

#[test]
fn a_budget_raise_outside_the_run_or_without_a_governor_is_rejected() {
    assert!(rejected("--raise-budget-at 5").contains("outside the run of 5 ticks"));
    assert!(rejected("--raise-budget-at 2 --governor off").contains("governor on"));
    assert!(rejected("--raise-budget-at 2 --force-load-factor 0.5").contains("governor on"));
}

#[test]
fn two_outputs_naming_one_file_are_rejected() {
    let err = rejected("--json out.json --trace out.json");
    assert!(
        err.contains("--json and --trace both name out.json"),
        "{err}"
    );
}
