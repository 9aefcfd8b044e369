//! `WorkerMetrics::busy`: after real work the pool's summed busy time covers at least the time
//! the tasks ran, and an idle pool accumulates none.

use std::time::{Duration, Instant};

use freyr_sched::{IndexedJob, TaskGroup, ThreadPool};

/// Each index spins for `per_index` of wall time.
struct Spin {
    per_index: Duration,
}

impl IndexedJob for Spin {
    fn run(&self, _index: usize) {
        let start = Instant::now();
        while start.elapsed() < self.per_index {
            std::hint::spin_loop();
        }
    }
}

const TASKS: usize = 40;
const PER_INDEX: Duration = Duration::from_micros(200);

#[test]
fn busy_time_covers_the_work_and_stops_when_idle() {
    for workers in [1, 2, 3] {
        let pool = ThreadPool::new(workers);
        let job = Spin {
            per_index: PER_INDEX,
        };
        let group = TaskGroup::new();
        // SAFETY: `job` and `group` outlive the wait.
        unsafe { pool.submit_job(&group, &job, TASKS) };
        group.wait(&pool);
        let floor = PER_INDEX * TASKS as u32;
        // A worker closes its busy episode when it next finds nothing, just after its last
        // task: poll briefly.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut busy = pool.metrics().total().busy;
        while busy < floor && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
            busy = pool.metrics().total().busy;
        }
        assert!(
            busy >= floor,
            "{workers} workers: busy {busy:?} < the {floor:?} the tasks ran"
        );
        // Idle: nothing more accrues.
        std::thread::sleep(Duration::from_millis(50));
        let settled = pool.metrics();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            pool.metrics().total().busy,
            settled.total().busy,
            "{workers} workers: an idle pool must not accrue busy time"
        );
        assert_eq!(settled.workers.len(), workers);
    }
}
