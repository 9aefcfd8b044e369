//! Deadline jobs through the registry: applied by the tick-start hook at exactly T + K, before
//! any system; late jobs, their stall and the tasks the collecting thread ran while it waited
//! show up in the profile; the errors (K = 0, a ticket from another registry, a request after
//! settle) are clear.

use std::sync::mpsc;
use std::time::Duration;

use freyr_registry::{Phase, Registry};
use freyr_time::{DeadlineError, Delivered, JobStatus};

struct Log(Vec<String>);

fn log(r: &mut Registry, line: String) {
    r.resource_mut::<Log>().unwrap().0.push(line);
}

#[test]
fn results_land_at_the_start_of_tick_t_plus_k_before_any_system() {
    let mut r = Registry::with_workers(3);
    r.insert_resource(Log(Vec::new()));
    r.add_deadline_jobs(2, |r: &mut Registry, done: Delivered<u64>| {
        let line = format!(
            "tick {} applies job {} = {}",
            r.tick(),
            done.ticket.id(),
            done.result.unwrap()
        );
        log(r, line);
    })
    .unwrap();
    r.add_system(Phase::PreUpdate, |r: &mut Registry, _: f32| {
        let tick = r.tick();
        log(r, format!("tick {tick} systems"));
        if tick < 2 {
            r.request_job(tick, |t: u64| t * 100).unwrap();
        }
    });
    for _ in 0..5 {
        r.update(0.01);
    }
    assert_eq!(
        r.resource::<Log>().unwrap().0,
        [
            "tick 0 systems",
            "tick 1 systems",
            "tick 2 applies job 0 = 0",
            "tick 2 systems",
            "tick 3 applies job 1 = 100",
            "tick 3 systems",
            "tick 4 systems",
        ]
    );
    let time = r.profile().time;
    assert_eq!(
        (time.ticks, time.deadlines.requested, time.deadlines.applied),
        (5, 2, 2)
    );
}

#[test]
fn a_late_job_is_in_the_profile_with_its_stall_and_the_help_given() {
    let mut r = Registry::with_workers(2);
    r.add_deadline_jobs(1, |_: &mut Registry, done: Delivered<u32>| {
        done.result.unwrap();
    })
    .unwrap();
    // Job 0 occupies the only worker until released; jobs 1 and 2 queue behind it, so the
    // collecting thread runs them itself while it waits for job 0.
    let (release, wait) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    r.request_job((), move |()| {
        started_tx.send(()).unwrap();
        wait.recv().unwrap();
        0u32
    })
    .unwrap();
    started.recv().unwrap();
    // Jobs 1 and 2 can only run on the collecting thread, inside its wait for job 0. Job 0 is
    // released 30 ms after both ran, never on a timer started before the tick: on a loaded
    // machine such a timer can fire before the collector waits, and then nothing is late.
    let (helped_tx, helped) = mpsc::channel::<()>();
    for i in 1..=2u32 {
        let helped_tx = helped_tx.clone();
        r.request_job(i, move |x| {
            helped_tx.send(()).unwrap();
            x
        })
        .unwrap();
    }
    drop(helped_tx);
    let releaser = std::thread::spawn(move || {
        helped.recv().unwrap();
        helped.recv().unwrap();
        std::thread::sleep(Duration::from_millis(30));
        release.send(()).unwrap();
    });
    let tasks_before = r.profile().workers.last().unwrap().tasks_run;
    r.update(0.01); // tick 0: nothing due
    r.update(0.01); // tick 1: all three due; job 0 is late
    releaser.join().unwrap();
    let report = r.profile();
    let d = report.time.deadlines;
    assert_eq!(d.applied, 3);
    assert_eq!(d.late_jobs, 1);
    assert!(d.stall >= Duration::from_millis(30), "stall {:?}", d.stall);
    assert_eq!(
        d.helped_tasks, 2,
        "jobs 1 and 2 ran on the collecting thread"
    );
    // The same help shows in the pool's counters for the calling thread.
    assert!(report.workers.last().unwrap().tasks_run - tasks_before >= 2);
    assert!(report.to_string().contains("late 1"), "{report}");
}

#[test]
fn k_zero_is_rejected_when_registering() {
    let mut r = Registry::with_workers(1);
    let err = r
        .add_deadline_jobs(0, |_: &mut Registry, _: Delivered<u8>| {})
        .unwrap_err();
    assert_eq!(err, DeadlineError::ZeroLatency);
    assert!(err.to_string().contains("at least 1 tick"), "{err}");
}

#[test]
fn a_ticket_from_another_registry_is_refused() {
    let mut a = Registry::with_workers(2);
    let mut b = Registry::with_workers(2);
    for r in [&mut a, &mut b] {
        r.add_deadline_jobs(1, |_: &mut Registry, _: Delivered<u8>| {})
            .unwrap();
    }
    let ticket = a.request_job((), |()| 1u8).unwrap();
    let err = b.job_status::<u8>(&ticket).unwrap_err();
    assert!(matches!(err, DeadlineError::ForeignTicket { .. }));
    assert!(
        err.to_string()
            .contains("ask the scheduler (registry) that issued it"),
        "{err}"
    );
    a.update(0.0);
    a.update(0.0);
    assert_eq!(a.job_status::<u8>(&ticket), Ok(JobStatus::Applied));
}

#[test]
fn a_request_after_settle_is_refused() {
    let mut r = Registry::with_workers(2);
    r.add_deadline_jobs(3, |_: &mut Registry, _: Delivered<u8>| {
        panic!("settled jobs are never applied")
    })
    .unwrap();
    r.request_job((), |()| 1u8).unwrap();
    assert_eq!(r.settle_jobs(), 1);
    let err = r.request_job((), |()| 2u8).unwrap_err();
    assert_eq!(err, DeadlineError::Settled);
    assert!(err.to_string().contains("after settle()"), "{err}");
    for _ in 0..5 {
        r.update(0.0);
    }
}

#[test]
#[should_panic(expected = "call Registry::add_deadline_jobs")]
fn requesting_an_unregistered_result_type_says_what_to_do() {
    let mut r = Registry::with_workers(1);
    let _ = r.request_job((), |()| 1u16);
}

#[test]
fn a_panicking_job_is_delivered_as_an_error_in_order_and_the_registry_goes_on() {
    for workers in [1, 2, 8] {
        let mut r = Registry::with_workers(workers);
        r.insert_resource(Log(Vec::new()));
        r.add_deadline_jobs(1, |r: &mut Registry, done: Delivered<u32>| {
            let line = match done.result {
                Ok(v) => format!("ok {v}"),
                Err(p) => format!("err {}", p.message()),
            };
            log(r, line);
        })
        .unwrap();
        for i in 0..4u32 {
            r.request_job(i, |i| {
                assert_ne!(i, 2, "job 2 fails");
                i
            })
            .unwrap();
        }
        r.update(0.0);
        r.update(0.0);
        let lines = &r.resource::<Log>().unwrap().0;
        assert_eq!(lines.len(), 4, "{workers} workers");
        assert_eq!(lines[..2], ["ok 0", "ok 1"]);
        assert!(
            lines[2].starts_with("err") && lines[2].contains("job 2 fails"),
            "{}",
            lines[2]
        );
        assert_eq!(lines[3], "ok 3");
        assert_eq!(r.profile().time.deadlines.panicked, 1);
        r.query::<&u8>().each_async(|_, _| {});
        r.execute_tasks();
    }
}

#[test]
fn a_panicking_apply_callback_loses_no_other_delivery_of_its_tick() {
    let mut r = Registry::with_workers(2);
    r.insert_resource(Log(Vec::new()));
    r.add_deadline_jobs(1, |r: &mut Registry, done: Delivered<u32>| {
        let v = done.result.unwrap();
        assert_ne!(v, 1, "apply fails on 1");
        let tick = r.tick();
        log(r, format!("tick {tick} u32 {v}"));
    })
    .unwrap();
    r.add_deadline_jobs(1, |r: &mut Registry, done: Delivered<u64>| {
        let tick = r.tick();
        log(r, format!("tick {tick} u64 {}", done.result.unwrap()));
    })
    .unwrap();
    for v in 0..3u32 {
        r.request_job(v, |v| v).unwrap();
    }
    r.request_job(9u64, |v| v).unwrap();
    r.update(0.0);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.update(0.0)));
    let payload = caught.unwrap_err();
    assert!(
        payload
            .downcast_ref::<String>()
            .unwrap()
            .contains("apply fails on 1")
    );
    assert_eq!(
        r.resource::<Log>().unwrap().0,
        ["tick 1 u32 0", "tick 1 u32 2", "tick 1 u64 9"]
    );
    // Nothing is applied twice or late.
    r.update(0.0);
    assert_eq!(r.resource::<Log>().unwrap().0.len(), 3);
    assert_eq!(r.tick(), 3);
}
