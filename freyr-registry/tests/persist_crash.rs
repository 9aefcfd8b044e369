//! The crash-kill test: a child process saves to one path in a loop and is killed at
//! deterministic pseudo-random moments; every run leaves a save that loads (the old one or a
//! new one), never a torn file. Not under Miri (it spawns processes).
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
    std::fs::remove_dir_all(&dir).unwrap();
}
