//! The profiler's per-thread busy time after real work (moved from `freyr-profile`'s unit
//! tests: it needs a registry).

use std::time::Instant;

use freyr_registry::Registry;

struct Value(u64);

/// Some real per-row work, so the tasks take measurable time.
fn churn(v: &mut Value) {
    for _ in 0..64 {
        v.0 = std::hint::black_box(v.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    }
}

#[test]
fn the_report_shows_per_thread_busy_time_after_real_work() {
    for workers in [1, 2, 3] {
        let mut registry = Registry::with_workers(workers);
        registry.spawn_batch((0..20_000u64).map(|i| (Value(i),)));
        registry.query::<&mut Value>().each_async(|_, v| churn(v));
        registry.execute_tasks();
        // A worker closes its busy episode when it next finds nothing, a moment after the
        // last task finished; poll briefly for it.
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        let report = loop {
            let report = registry.profile();
            if report.busy().iter().any(|b| !b.is_zero()) || Instant::now() > deadline {
                break report;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        assert_eq!(report.busy().len(), workers, "{workers} workers");
        assert!(
            report.busy().iter().any(|b| !b.is_zero()),
            "{workers} workers: no busy time after real work: {report}"
        );
        assert!(report.to_string().contains("busy per thread"));
    }
}
