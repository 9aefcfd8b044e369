//! Resident memory of 10 million (Position, Velocity) entities must stay under 400 MB.
//!
//! Ignored by default (it allocates ~370 MB); run it with
//! `cargo test -p freyr-core --release --test memory_footprint -- --ignored --nocapture`.

use freyr_core::World;

#[derive(Copy, Clone)]
struct Position(#[allow(dead_code)] [f32; 3]);
#[derive(Copy, Clone)]
struct Velocity(#[allow(dead_code)] [f32; 3]);

/// A `/proc/self/status` field in kB.
fn status_kb(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .expect("field present");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
#[ignore = "allocates ~370 MB; run explicitly in release"]
fn ten_million_position_velocity_entities_fit_in_400_mb() {
    const N: usize = 10_000_000;
    let before = status_kb("VmRSS:");
    let mut world = World::new();
    let ids = world.spawn_batch((0..N).map(|i| (Position([i as f32; 3]), Velocity([1.0; 3]))));
    assert_eq!(ids.len(), N);
    let last = ids[N - 1];
    drop(ids);
    let rss = status_kb("VmRSS:");
    let peak = status_kb("VmHWM:");
    println!(
        "10M (Position, Velocity): VmRSS {} MB (world {} MB over a {} MB baseline), VmHWM {} MB \
         (includes the 80 MB Vec<Entity> returned by spawn_batch)",
        rss / 1024,
        (rss - before) / 1024,
        before / 1024,
        peak / 1024
    );
    assert!(world.contains(last));
    assert!(rss <= 400 * 1024, "resident {rss} kB exceeds 400 MB");
    // Despawning everything gives the chunks back.
    world.clear();
    let after_clear = status_kb("VmRSS:");
    println!("after clear: VmRSS {} MB", after_clear / 1024);
}
