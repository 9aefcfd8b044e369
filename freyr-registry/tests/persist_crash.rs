//! The crash-kill test: a child process saves to one path in a loop and is killed at
//! deterministic pseudo-random moments; every run leaves a save that loads (the old one or a
//! new one), never a torn file, and the next save removes the temporaries the killed children
//! left, but never one of a running process. Not under Miri (it spawns processes).
#![cfg(not(miri))]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use freyr::{Phase, Registry};
use serde::{Deserialize, Serialize};

/// Set in the child: the save path.
const CHILD_ENV: &str = "FREYR_PERSIST_CRASH_CHILD";
const RUNS: u64 = 50;
const ENTITIES: u64 = 20_000;

#[derive(Clone, Copy, Serialize, Deserialize)]
struct Step(u64);
#[derive(Clone, Serialize, Deserialize)]
struct Label(String);

fn registry() -> Registry {
    let mut r = Registry::with_workers(1);
    r.register_persistent::<Step>("crash.step", 1);
    r.register_persistent::<Label>("crash.label", 1);
    r
}

/// Every entity of a save holds the same step: a save mixing two states would be torn.
fn check(path: &Path) -> u64 {
    let mut r = registry();
    r.load_file(path).expect("a crash leaves a loadable save");
    let mut steps = Vec::new();
    r.query::<&Step>().each(|_, s| steps.push(s.0));
    assert_eq!(steps.len() as u64, ENTITIES);
    assert!(steps.iter().all(|&s| s == steps[0]), "one state per save");
    r.tick()
}

/// The child's body: save forever, one step further each time.
#[test]
fn crash_child() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return; // an ordinary test run: nothing to do
    };
    let mut r = registry();
    r.spawn_batch((0..ENTITIES).map(|i| (Step(0), Label(format!("e{i}")))));
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        r.query::<&mut Step>().each(|_, s| s.0 += 1);
    });
    loop {
        r.update(0.1);
        r.save(&path).expect("saving succeeds until the kill");
    }
}

fn child(path: &PathBuf) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_ENV, path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_save_killed_at_any_moment_leaves_the_old_or_the_new_file() {
    let dir = std::env::temp_dir().join(format!("freyr-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("world.save");
    let mut first = registry();
    first.spawn_batch((0..ENTITIES).map(|i| (Step(0), Label(format!("e{i}")))));
    first.save(&path).unwrap();
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut advanced = 0;
    for run in 0..RUNS {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // The child needs a few ms to start; kill it 5–200 ms in, a different moment each run.
        let delay = Duration::from_micros(5_000 + seed % 195_000);
        let before = check(&path);
        let mut process = child(&path);
        std::thread::sleep(delay);
        process.kill().unwrap();
        process.wait().unwrap();
        let after = check(&path);
        advanced += u64::from(after != before);
        assert!(after == before || after > 0, "run {run}");
    }
    assert!(advanced > 0, "the child saved at least once in {RUNS} runs");
    // The killed children's temporaries (most kills land mid-write) are gone after the next
    // save: every child has ended.
    first.save(&path).unwrap();
    if cfg!(any(target_os = "linux", target_os = "android")) {
        assert_eq!(temporaries(&dir), Vec::<String>::new());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The names in `dir` that look like a save's temporary (`.<name>.<pid>.tmp`), sorted.
fn temporaries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with('.') && name.ends_with(".tmp"))
        .collect();
    names.sort();
    names
}

/// A save removes the temporaries of its path left by processes that ended, and keeps those
/// of a running process, of other paths, and files that only look like temporaries.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn a_save_removes_stale_temporaries_of_ended_savers_only() {
    let dir = std::env::temp_dir().join(format!("freyr-stale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("world.save");
    // An ended process (spawned and reaped: its pid has no /proc entry until reused) and a pid
    // past every pid limit (Linux's is at most 2^22).
    let mut ended = Command::new("true").spawn().unwrap();
    ended.wait().unwrap();
    let ended = ended.id();
    assert!(!Path::new(&format!("/proc/{ended}")).exists(), "reaped");
    let impossible = 4_000_000_000u32;
    // A running process: another saver, mid-write.
    let mut running = Command::new("sleep").arg("60").spawn().unwrap();
    let live = running.id();
    let stale = [
        format!(".world.save.{ended}.tmp"),
        format!(".world.save.{impossible}.tmp"),
    ];
    let kept = [
        format!(".world.save.{live}.tmp"),
        format!(".other.save.{ended}.tmp"),
        format!(".world.save.{ended}.tmp.bak"),
        ".world.save.x1.tmp".to_string(),
        format!(".world.save.{ended}.{ended}.tmp"),
    ];
    for name in stale.iter().chain(&kept) {
        std::fs::write(dir.join(name), vec![7u8; 4096]).unwrap();
    }
    let mut r = registry();
    r.spawn((Step(3), Label("s".into())));
    r.save(&path).unwrap();
    running.kill().unwrap();
    running.wait().unwrap();
    let mut expected: Vec<String> = kept
        .iter()
        .filter(|n| n.ends_with(".tmp"))
        .cloned()
        .collect();
    expected.sort();
    assert_eq!(
        temporaries(&dir),
        expected,
        "the stale ones went, the others stayed"
    );
    assert!(dir.join(&kept[2]).exists(), "not a temporary's name");
    assert_eq!(std::fs::read(dir.join(&kept[0])).unwrap(), vec![7u8; 4096]);
    // The save itself is whole, and its own temporary is gone.
    let mut loaded = registry();
    loaded.load_file(&path).unwrap();
    assert_eq!(loaded.len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}
