//! Stall telemetry that is true: a job made deliberately late shows up as a
//! late job with a stall time, and the collecting thread's help is visible
//! as pool tasks it ran while it waited.

use std::sync::mpsc;
use std::time::Duration;

use freyr_sched::ThreadPool;
use freyr_time::DeadlineScheduler;

#[test]
fn a_deliberately_late_job_is_counted_with_its_stall() {
    let pool = ThreadPool::new(2);
    let mut jobs = DeadlineScheduler::new(1).unwrap();
    let (release, wait) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    jobs.request(&pool, 0, (), move |()| {
        started_tx.send(()).unwrap();
        wait.recv().unwrap();
    })
    .unwrap();
    started.recv().unwrap(); // the only background worker is held by job 0
    // Queued behind it, job 1 can only run on the collecting thread, inside its wait for job 0:
    // job 0 is late by at least 40 ms however loaded the machine is (a job that merely sleeps
    // could finish before a descheduled collector gets to it, and not be late at all).
    jobs.request(&pool, 0, (), move |()| {
        std::thread::sleep(Duration::from_millis(40));
        release.send(()).unwrap();
    })
    .unwrap();
    let mut stalls = Vec::new();
    let report = jobs.collect(&pool, 1, |d| stalls.push(d.stall)).unwrap();
    assert_eq!(report.late_jobs, 1);
    assert!(stalls[0] >= Duration::from_millis(40), "{stalls:?}");
    assert_eq!(
        stalls[1],
        Duration::ZERO,
        "job 1 was done when its turn came"
    );
    assert_eq!(report.stall, stalls[0]);
    assert_eq!(report.max_stall, report.stall);
    assert_eq!(report.helped_tasks, 1);
    let stats = jobs.stats();
    assert_eq!((stats.late_jobs, stats.applied), (1, 2));
    assert_eq!(stats.stall, report.stall);
}

#[test]
fn a_job_done_in_time_costs_no_stall() {
    let pool = ThreadPool::new(2);
    let mut jobs = DeadlineScheduler::new(3).unwrap();
    let ticket = jobs.request(&pool, 0, 1u8, |x| x + 1).unwrap();
    while jobs.status(&ticket).unwrap() != freyr_time::JobStatus::Finished {
        std::thread::yield_now();
    }
    for now in 1..=3 {
        let report = jobs
            .collect(&pool, now, |d| assert_eq!(d.stall, Duration::ZERO))
            .unwrap();
        assert_eq!(report.late_jobs, 0);
    }
    assert_eq!(jobs.stats().applied, 1);
    assert_eq!(jobs.stats().stall, Duration::ZERO);
}

#[test]
fn the_collecting_thread_helps_run_queued_jobs_while_it_waits() {
    // One background worker, held by a job that waits for a signal; two more
    // jobs queue behind it. Collecting must run those two on this thread.
    let pool = ThreadPool::new(2);
    let mut jobs = DeadlineScheduler::new(1).unwrap();
    let (release, wait) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    jobs.request(&pool, 0, (), move |()| {
        started_tx.send(()).unwrap();
        wait.recv().unwrap();
        0u32
    })
    .unwrap();
    started.recv().unwrap(); // the worker is busy with job 0
    // Jobs 1 and 2 can only run on this thread, inside its wait for job 0; job 0 is released
    // once both ran, never on a timer (a timer can fire before a descheduled collector starts
    // waiting, and then nothing is late).
    let (helped_tx, helped) = mpsc::channel::<()>();
    for i in 1..=2u32 {
        let helped_tx = helped_tx.clone();
        jobs.request(&pool, 0, i, move |i| {
            helped_tx.send(()).unwrap();
            i
        })
        .unwrap();
    }
    drop(helped_tx);
    let releaser = std::thread::spawn(move || {
        helped.recv().unwrap();
        helped.recv().unwrap();
        release.send(()).unwrap();
    });
    let mut order = Vec::new();
    let report = jobs
        .collect(&pool, 1, |d| order.push(d.result.unwrap()))
        .unwrap();
    releaser.join().unwrap();
    assert_eq!(order, [0, 1, 2]);
    assert_eq!(report.late_jobs, 1);
    assert_eq!(
        report.helped_tasks, 2,
        "jobs 1 and 2 ran on the collecting thread"
    );
}
