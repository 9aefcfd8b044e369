//! Every public error type of the facade implements `std::error::Error`, and its `Display`
//! texts follow the project's convention (see the guide's Golden rules, "Errors"): one line,
//! a lowercase first word (or a code identifier spelled as in the code), no trailing period,
//! no `freyr:` prefix (panics raised by Freyr add it).

use std::error::Error;

use freyr::hash::UnhashedComponents;
use freyr::sched::{GroupPanic, TaskGroup};
use freyr::time::budget::ZeroBudget;
use freyr::time::deadline::{DeadlineError, DeadlineScheduler};
use freyr::time::path::{Grid, GridError};
use freyr::time::pump::PumpError;
use freyr::time::{FixedStepError, GovernorParams, JobPanic};
use freyr::{ComponentError, Entity, NoSuchEntity, QueryError, Registry, ThreadPool};

/// Compiles only for error types.
fn is_error<E: Error + 'static>() {}

/// Whether `word` is a code identifier (a field, path or method name) rather than prose.
fn is_code(word: &str) -> bool {
    word.contains('_') || word.contains("::") || word.starts_with('`')
}

fn check(what: &str, error: &dyn Error) {
    let text = error.to_string();
    assert!(!text.is_empty(), "{what}: empty text");
    assert!(!text.contains('\n'), "{what}: more than one line: {text:?}");
    assert_eq!(
        text.trim(),
        text,
        "{what}: surrounding whitespace: {text:?}"
    );
    assert!(!text.ends_with('.'), "{what}: trailing period: {text:?}");
    assert!(!text.starts_with("freyr"), "{what}: crate prefix: {text:?}");
    let first_word = text.split(' ').next().unwrap_or_default();
    let first = text.chars().next().unwrap_or_default();
    assert!(
        first.is_lowercase() || first.is_ascii_digit() || is_code(first_word),
        "{what}: starts with {first:?}: {text:?}"
    );
}

#[test]
fn every_public_error_type_is_an_error() {
    is_error::<NoSuchEntity>();
    is_error::<ComponentError>();
    is_error::<QueryError>();
    is_error::<UnhashedComponents>();
    is_error::<GroupPanic>();
    is_error::<JobPanic>();
    is_error::<PumpError>();
    is_error::<freyr::time::GovernorError>();
    is_error::<ZeroBudget>();
    is_error::<DeadlineError>();
    is_error::<FixedStepError>();
    is_error::<GridError>();
    is_error::<freyr::snapshot::SnapshotError>();
    is_error::<freyr::snapshot::MissingSnapshotTypes>();
    is_error::<freyr::persist::SaveError>();
    is_error::<freyr::persist::LoadError>();
}

fn group_panic(pool: &ThreadPool) -> GroupPanic {
    fn fail(_: &(), _: usize) {
        panic!("no route");
    }
    let group = TaskGroup::new();
    // SAFETY: `fail` is a plain function of a `'static` job value; `group` outlives the wait.
    unsafe { pool.submit_indexed(&group, &(), 2, fail) };
    group.try_wait(pool).unwrap_err()
}

fn job_panic(pool: &ThreadPool) -> JobPanic {
    let mut jobs = DeadlineScheduler::new(1).unwrap();
    jobs.request(pool, 0, (), |()| -> u32 { panic!("no path") })
        .unwrap();
    let mut panic = None;
    jobs.collect(pool, 1, |done| panic = done.result.err())
        .unwrap();
    panic.expect("the job panicked")
}

#[test]
fn every_error_text_follows_the_convention() {
    let pool = ThreadPool::new(2);
    let mut registry = Registry::with_workers(1);
    let kept = registry.spawn((1u8,));
    let gone = registry.spawn((2u8,));
    registry.despawn(gone).unwrap();
    let ghost = Entity::from_bits((3u64 << 32) | 9).unwrap();

    let mut errors: Vec<(&str, Box<dyn Error>)> = vec![
        (
            "NoSuchEntity",
            Box::new(registry.despawn(gone).unwrap_err()),
        ),
        (
            "NoSuchEntity (never spawned)",
            Box::new(NoSuchEntity(ghost)),
        ),
        (
            "ComponentError::NoSuchEntity",
            Box::new(registry.get::<u8>(gone).unwrap_err()),
        ),
        (
            "ComponentError::MissingComponent",
            Box::new(registry.get::<u16>(kept).unwrap_err()),
        ),
        (
            "QueryError::ConflictingAccess",
            Box::new(registry.try_query::<(&mut u8, &u8)>().err().unwrap()),
        ),
        (
            "QueryError::MissingResource",
            Box::new(QueryError::MissingResource { type_name: "u32" }),
        ),
        (
            "UnhashedComponents",
            Box::new(registry.world_hash_all().unwrap_err()),
        ),
        ("GroupPanic", Box::new(group_panic(&pool))),
        ("JobPanic", Box::new(job_panic(&pool))),
        ("PumpError::ZeroCapacity", Box::new(PumpError::ZeroCapacity)),
        ("PumpError::Settled", Box::new(PumpError::Settled)),
        ("PumpError::ForeignPool", Box::new(PumpError::ForeignPool)),
        ("ZeroBudget", Box::new(ZeroBudget)),
        ("FixedStepError::ZeroDt", Box::new(FixedStepError::ZeroDt)),
        (
            "FixedStepError::DtTooLong",
            Box::new(FixedStepError::DtTooLong {
                dt: std::time::Duration::from_secs(7200),
            }),
        ),
        (
            "GridError::RaggedRow",
            Box::new(Grid::from_rows(&["...", ".."]).unwrap_err()),
        ),
        (
            "GridError::TooLarge",
            Box::new(GridError::TooLarge {
                width: 1 << 20,
                height: 1 << 20,
            }),
        ),
        (
            "FixedStepError::ZeroMaxCatchup",
            Box::new(FixedStepError::ZeroMaxCatchup),
        ),
        (
            "DeadlineError::ZeroLatency",
            Box::new(DeadlineError::ZeroLatency),
        ),
        (
            "DeadlineError::ForeignPool",
            Box::new(DeadlineError::ForeignPool),
        ),
        (
            "DeadlineError::ForeignTicket",
            Box::new(DeadlineError::ForeignTicket {
                ticket_scheduler: 1,
                scheduler: 2,
            }),
        ),
        ("DeadlineError::Settled", Box::new(DeadlineError::Settled)),
        (
            "DeadlineError::TickInPast",
            Box::new(DeadlineError::TickInPast {
                now: 3,
                collected: 4,
            }),
        ),
        (
            "DeadlineError::TickOverflow",
            Box::new(DeadlineError::TickOverflow),
        ),
        (
            "DeadlineError::MissedDueTick",
            Box::new(DeadlineError::MissedDueTick {
                job: 1,
                due: 2,
                now: 3,
            }),
        ),
        (
            "DeadlineError::TickCollected",
            Box::new(DeadlineError::TickCollected { tick: 4 }),
        ),
        (
            "DeadlineError::LatencyMismatch",
            Box::new(DeadlineError::LatencyMismatch {
                captured: 2,
                latency: 5,
            }),
        ),
    ];
    let bad = GovernorParams {
        min_load_factor: 1.5,
        ..Default::default()
    };
    let governor = bad.validate().unwrap_err();
    // The governor's error names the field and the value it was given.
    assert_eq!(
        governor.to_string(),
        "governor parameter `min_load_factor` is 1.5; it must lie in (0, 1]"
    );
    errors.push(("GovernorError", Box::new(governor)));
    errors.extend(snapshot_errors());
    errors.extend(persist_errors());
    for (what, error) in &errors {
        check(what, error.as_ref());
    }
    // The entity errors name the entity.
    assert!(errors[0].1.to_string().contains(&gone.to_string()));
    assert!(errors[1].1.to_string().contains("9v3"));
    assert!(errors[3].1.to_string().contains(&kept.to_string()));
}

/// Every `SnapshotError` variant, and `MissingSnapshotTypes` alone.
fn snapshot_errors() -> Vec<(&'static str, Box<dyn Error>)> {
    use freyr::snapshot::{JobsRefusal, MissingSnapshotTypes, SnapshotError};
    let mut registry = Registry::with_workers(1);
    registry.spawn((1u8,));
    registry.insert_resource(2u16);
    let excluded_only = MissingSnapshotTypes {
        unregistered: Vec::new(),
        excluded_live: vec!["Hit"],
    };
    vec![
        (
            "SnapshotError::MissingTypes",
            Box::new(registry.snapshot().unwrap_err()),
        ),
        (
            "SnapshotError::MissingTypes (resources only)",
            Box::new(SnapshotError::MissingTypes {
                components: MissingSnapshotTypes::default(),
                resources: vec!["u16"],
            }),
        ),
        (
            "MissingSnapshotTypes (excluded only)",
            Box::new(excluded_only),
        ),
        (
            "SnapshotError::NotQuiet",
            Box::new(SnapshotError::NotQuiet {
                launches_in_flight: 1,
                pending_command_buffers: 0,
                queued_destructions: 2,
            }),
        ),
        (
            "SnapshotError::InsideUpdate",
            Box::new(SnapshotError::InsideUpdate),
        ),
        (
            "SnapshotError::Incomplete",
            Box::new(SnapshotError::Incomplete),
        ),
        (
            "SnapshotError::TickNotInRing",
            Box::new(SnapshotError::TickNotInRing { tick: 3 }),
        ),
        (
            "SnapshotError::BeforeConfirmed",
            Box::new(SnapshotError::BeforeConfirmed {
                tick: 3,
                confirmed: 9,
            }),
        ),
        (
            "SnapshotError::JobsNotRestorable (not registered)",
            Box::new(SnapshotError::JobsNotRestorable {
                result_type: "u64",
                jobs: 2,
                reason: JobsRefusal::NotRegistered,
            }),
        ),
        (
            "SnapshotError::JobsNotRestorable (refused)",
            Box::new(SnapshotError::JobsNotRestorable {
                result_type: "u64",
                jobs: 2,
                reason: JobsRefusal::Refused(DeadlineError::Settled),
            }),
        ),
    ]
}

/// Every `SaveError` and `LoadError` variant; those a registry can produce are made by one.
fn persist_errors() -> Vec<(&'static str, Box<dyn Error>)> {
    use freyr::persist::{ColumnEncoding, LoadError, SaveError};
    use freyr::snapshot::SnapshotError;
    let mut registry = Registry::with_workers(1);
    registry.register_snapshot_copy::<u16>();
    registry.spawn((1u16,));
    let not_persistent = registry.save_to_vec().unwrap_err();
    assert!(
        not_persistent.to_string().contains("`u16`"),
        "{not_persistent}"
    );
    let missing = std::env::temp_dir().join("freyr-error-texts-no-such-dir/none.save");
    let io = registry.load_file(&missing).unwrap_err();
    let empty = Registry::with_workers(1).save_to_vec().unwrap();
    let truncated = registry.load_into(&empty[..empty.len() - 1]).unwrap_err();
    let mut flipped = empty.clone();
    flipped[21] ^= 1;
    let checksum = registry.load_into(&flipped).unwrap_err();
    assert!(matches!(io, LoadError::Io(_)), "{io:?}");
    assert!(
        matches!(truncated, LoadError::Truncated { .. }),
        "{truncated:?}"
    );
    assert!(
        matches!(checksum, LoadError::ChecksumMismatch { .. }),
        "{checksum:?}"
    );
    let name = || String::from("game.hp");
    vec![
        (
            "SaveError::Snapshot",
            Box::new(SaveError::Snapshot(SnapshotError::InsideUpdate)),
        ),
        ("SaveError::NotPersistent", Box::new(not_persistent)),
        (
            "SaveError::JobsInFlight",
            Box::new(SaveError::JobsInFlight {
                jobs: vec![("u64", 2), ("u8", 1)],
            }),
        ),
        (
            "SaveError::Io",
            Box::new(SaveError::Io(std::io::Error::other("disk full"))),
        ),
        ("LoadError::Io", Box::new(io)),
        (
            "LoadError::NotAFreyrFile",
            Box::new(registry.load_into(b"not a save").unwrap_err()),
        ),
        ("LoadError::Truncated", Box::new(truncated)),
        ("LoadError::ChecksumMismatch", Box::new(checksum)),
        (
            "LoadError::UnsupportedFormat",
            Box::new(LoadError::UnsupportedFormat {
                found: 9,
                supported: 2,
            }),
        ),
        (
            "LoadError::UnknownType",
            Box::new(LoadError::UnknownType { name: name() }),
        ),
        (
            "LoadError::VersionMismatch",
            Box::new(LoadError::VersionMismatch {
                name: name(),
                saved: 2,
                registered: 1,
            }),
        ),
        (
            "LoadError::LayoutMismatch",
            Box::new(LoadError::LayoutMismatch {
                name: name(),
                saved: (8, 8),
                registered: (16, 8),
            }),
        ),
        (
            "LoadError::EncodingMismatch",
            Box::new(LoadError::EncodingMismatch {
                name: name(),
                saved: ColumnEncoding::Raw,
                registered: ColumnEncoding::Serde,
            }),
        ),
        (
            "LoadError::Corrupt",
            Box::new(LoadError::Corrupt {
                what: "a column does not decode",
            }),
        ),
        (
            "LoadError::Snapshot",
            Box::new(LoadError::Snapshot(SnapshotError::InsideUpdate)),
        ),
    ]
}
