//! Where std's own rule applies, Freyr does not pretend otherwise: a panic raised while another
//! panic unwinds (a component value's `Drop` panicking while a callback's panic discards the
//! commands it recorded) aborts the process. Run in a child process, since it kills it. Not
//! run under Miri, which cannot spawn processes.

use std::process::Command;

use freyr_registry::Registry;

/// Set in the child process, which runs the aborting program instead of the check.
const CHILD: &str = "FREYR_PANIC_WHILE_PANICKING_CHILD";

struct Id;

/// A component value whose `Drop` panics.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("Bomb::drop");
    }
}

/// The program: the callback records a `Bomb` insert, then panics; unwinding discards the
/// recorded commands, which drops the `Bomb`, whose `Drop` panics during the unwind.
fn program(workers: usize) {
    let mut registry = Registry::with_workers(workers);
    registry.spawn((Id,));
    registry.query::<&Id>().each_async_with(|e, _, ctx| {
        ctx.commands().insert(e, (Bomb,));
        panic!("the callback panics after recording");
    });
    registry.execute_tasks();
}

/// Runs `test` of this binary in a child process with `CHILD=workers`; returns its stderr.
fn run_child(test: &str, workers: usize) -> (std::process::ExitStatus, String) {
    let out = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, workers.to_string())
        .output()
        .expect("spawn the test binary");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
#[cfg_attr(miri, ignore = "spawns a child process")]
fn a_drop_panic_while_a_callback_unwinds_aborts_the_process() {
    const NAME: &str = "a_drop_panic_while_a_callback_unwinds_aborts_the_process";
    if let Some(workers) = std::env::var_os(CHILD) {
        program(workers.to_str().and_then(|w| w.parse().ok()).unwrap_or(1));
        unreachable!("the program aborts");
    }
    for workers in [1, 2, 8] {
        let (status, stderr) = run_child(NAME, workers);
        assert!(!status.success(), "workers = {workers}: {stderr}");
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(6), "SIGABRT expected: {stderr}");
        }
        assert!(stderr.contains("Bomb::drop"), "{stderr}");
        assert!(
            stderr.contains("panic in a destructor during cleanup"),
            "std's abort message expected: {stderr}"
        );
    }
}
