//! A job that panics: its result is a typed error delivered at T + K, in
//! request order, and the pool stays usable.

use freyr_sched::ThreadPool;
use freyr_time::DeadlineScheduler;

#[test]
fn a_panic_takes_its_place_in_the_order_on_every_worker_count() {
    for workers in [1, 2, 3, 8] {
        let pool = ThreadPool::new(workers);
        let mut jobs = DeadlineScheduler::new(2).unwrap();
        for i in 0..6u32 {
            jobs.request(&pool, 0, i, |i| {
                assert!(i != 3, "job {i} fails");
                i
            })
            .unwrap();
        }
        jobs.collect(&pool, 1, |_| panic!("due at 2")).unwrap();
        let mut got = Vec::new();
        let report = jobs
            .collect(&pool, 2, |d| {
                got.push(d.result.map_err(|p| p.message().to_owned()));
            })
            .unwrap();
        assert_eq!(
            got,
            [
                Ok(0),
                Ok(1),
                Ok(2),
                Err(String::from("job 3 fails")),
                Ok(4),
                Ok(5)
            ],
            "{workers} workers"
        );
        assert_eq!(report.panicked, 1);
        // The pool and the scheduler go on working.
        jobs.request(&pool, 2, 9u32, |i| i + 1).unwrap();
        jobs.collect(&pool, 3, |_| {}).unwrap();
        let mut last = None;
        jobs.collect(&pool, 4, |d| last = Some(d.result)).unwrap();
        assert_eq!(last, Some(Ok(10)));
        pool.parallel_for(100, 7, |_| {});
    }
}
