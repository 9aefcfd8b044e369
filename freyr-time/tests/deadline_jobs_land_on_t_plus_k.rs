//! Deadline jobs with the machine's speed taken out of the outcome: jobs
//! delayed at random (sleeps inside the job, different for every worker
//! count) still land on exactly T + K, in request order, and a small
//! simulation fed by them hashes the same on 1, 2, 3 and 8 workers.

use std::time::Duration;

use freyr_sched::ThreadPool;
use freyr_time::DeadlineScheduler;

/// SplitMix64's generator step: the golden-ratio increment, then [`freyr::mix`].
fn mix(z: u64) -> u64 {
    freyr::mix(z.wrapping_add(0x9E37_79B9_7F4A_7C15))
}

/// What one job computes from its snapshot: deterministic work.
fn job_work(snapshot: Vec<u64>) -> u64 {
    snapshot.iter().fold(0, |acc, &x| mix(acc ^ x))
}

/// Runs `ticks` ticks of a toy simulation on `workers` workers with latency
/// `k`; returns the state after every tick. Jobs sleep a pseudo-random
/// time seeded by the worker count too, so each run's timing differs.
fn run(workers: usize, k: u64, ticks: u64) -> Vec<u64> {
    let pool = ThreadPool::new(workers);
    let mut jobs = DeadlineScheduler::new(k).unwrap();
    let mut state: Vec<u64> = (0..16).collect();
    let mut per_tick = Vec::new();
    for now in 0..ticks {
        // The fixed point of the tick: collect before the "systems".
        jobs.collect(&pool, now, |done| {
            assert_eq!(done.ticket.due(), now, "applied at exactly T + K");
            assert_eq!(done.ticket.requested_at() + k, now);
            let value = done.result.expect("no job panics here");
            let slot = (done.ticket.id() % state.len() as u64) as usize;
            state[slot] = mix(state[slot] ^ value);
        })
        .unwrap();
        // Systems: one to three requests per tick, each on a snapshot.
        for r in 0..=(now % 3) {
            let snapshot = state.clone();
            let delay = mix(now * 31 + r + 1000 * workers as u64) % 2_000;
            jobs.request(&pool, now, snapshot, move |s| {
                std::thread::sleep(Duration::from_micros(delay));
                job_work(s)
            })
            .unwrap();
        }
        // Integrate: the state moves on regardless of the jobs.
        for (i, x) in state.iter_mut().enumerate() {
            *x = mix(*x + i as u64 + now);
        }
        per_tick.push(state.iter().fold(now, |acc, &x| mix(acc ^ x)));
    }
    per_tick
}

#[test]
fn random_delays_do_not_change_the_outcome_on_any_worker_count() {
    for k in [1, 2, 4] {
        let reference = run(1, k, 60);
        for workers in [2, 3, 8] {
            assert_eq!(run(workers, k, 60), reference, "K = {k}, {workers} workers");
        }
    }
}

#[test]
fn a_different_latency_is_a_different_simulation() {
    // The outcome depends on K (a simulation input), which is why K is
    // fixed per scheduler and never adapted to the machine.
    assert_ne!(run(2, 1, 30), run(2, 2, 30));
}

#[test]
fn late_jobs_are_waited_for_not_skipped() {
    let pool = ThreadPool::new(2);
    let mut jobs = DeadlineScheduler::new(1).unwrap();
    for i in 0..4u64 {
        jobs.request(&pool, 0, i, |i| {
            std::thread::sleep(Duration::from_millis(15));
            i * 10
        })
        .unwrap();
    }
    let mut seen = Vec::new();
    let report = jobs
        .collect(&pool, 1, |d| seen.push(d.result.unwrap()))
        .unwrap();
    assert_eq!(seen, [0, 10, 20, 30]);
    assert_eq!(report.applied, 4);
    assert_eq!(jobs.pending(), 0);
}
