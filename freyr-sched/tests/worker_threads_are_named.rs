//! A pool of `N` workers starts exactly `N - 1` background threads named `freyr-worker-{i}`
//! (distinct indices), read from the kernel's view of the process (`/proc/self/task/*/comm`);
//! a pool of one starts none; tasks run only on those threads or on the calling thread.
//!
//! This binary holds a single test because it reads process-wide state (the thread list).

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use freyr_sched::ThreadPool;

const OVERSUBSCRIBED: usize = 8;

/// The names of this process's threads, as the kernel reports them.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task is readable (Linux)")
        .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path().join("comm")).ok())
        .map(|comm| comm.trim_end().to_owned())
        .collect()
}

fn worker_names() -> BTreeSet<String> {
    thread_names()
        .into_iter()
        .filter(|n| n.starts_with("freyr-worker-"))
        .collect()
}

/// A new thread names itself once it starts running (std sets the name from inside the
/// thread), so wait, with a generous deadline, until `want` workers carry their names.
fn settled_worker_names(want: usize) -> BTreeSet<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let names = worker_names();
        if names.len() >= want || Instant::now() > deadline {
            return names;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn worker_index(name: &str) -> usize {
    name.strip_prefix("freyr-worker-")
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("thread name {name:?} is not freyr-worker-{{i}}"))
}

#[test]
fn pool_threads_are_named_and_counted() {
    let before = thread_names().len();
    assert!(worker_names().is_empty());

    // A pool of one is the calling thread alone.
    let inline = ThreadPool::new(1);
    assert_eq!(thread_names().len(), before);
    drop(inline);

    let pool = ThreadPool::new(OVERSUBSCRIBED);
    assert_eq!(thread_names().len(), before + OVERSUBSCRIBED - 1);
    let names = settled_worker_names(OVERSUBSCRIBED - 1);
    assert_eq!(names.len(), OVERSUBSCRIBED - 1, "distinct names: {names:?}");
    let indices: BTreeSet<usize> = names.iter().map(|n| worker_index(n)).collect();
    assert_eq!(indices.len(), OVERSUBSCRIBED - 1);
    assert!(
        indices.iter().all(|&i| i < OVERSUBSCRIBED),
        "indices {indices:?}"
    );

    // Tasks run on the calling thread or on a named worker, never anywhere else.
    let caller = std::thread::current().id();
    let seen = Mutex::new(BTreeSet::new());
    pool.parallel_for(20_000, 1, |_| {
        let me = std::thread::current();
        if me.id() != caller {
            let name = me.name().expect("worker threads are named").to_owned();
            seen.lock().unwrap().insert(name);
        }
    });
    for name in seen.into_inner().unwrap() {
        assert!(
            names.contains(&name),
            "task ran on unexpected thread {name:?}"
        );
    }
}
