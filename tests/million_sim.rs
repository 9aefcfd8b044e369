//! The main-job simulation (`examples/million`) at a small size: the whole-world hash after the
//! same number of ticks is identical for 1, 2, 3 and 8 workers, and the run really spawned,
//! despawned and overlapped work.

#[path = "../examples/million/sim.rs"]
mod sim;

fn small(workers: usize) -> sim::Config {
    sim::Config {
        entities: 12_000,
        ai_every: 10,
        churn: 40,
        workers,
        ticks: 40,
    }
}

#[test]
fn million_sim_world_hash_is_identical_for_1_2_3_and_8_workers() {
    let reference = sim::run(&small(1));
    let p = &reference.profile;
    // Commands really changed the world: spawns from the AI pass, despawns from Integrate.
    assert!(p.commands_applied > 1000, "{}", p.commands_applied);
    assert_eq!(p.stale_commands, 0);
    let drift = reference.entities.abs_diff(12_000);
    assert!(drift < 600, "population drifted to {}", reference.entities);
    assert_eq!(reference.ai_entities, 1200);
    for workers in [2, 3, 8, 16, 64] {
        let other = sim::run(&small(workers));
        assert_eq!(other.workers, workers);
        assert_eq!(other.entities, reference.entities, "workers = {workers}");
        assert_eq!(other.hash, reference.hash, "workers = {workers}");
        // "AI Think" touches only `Ai`: it overlaps "Integrate" without waiting for it.
        assert_eq!(other.profile.implicit_syncs, 0, "workers = {workers}");
        let integrate = other.profile.label("Integrate").unwrap();
        assert_eq!(integrate.calls, 40);
        assert!(integrate.tasks >= 40 * 24, "{}", integrate.tasks);
        assert_eq!(other.profile.label("AI Think").unwrap().calls, 40);
    }
}

#[test]
fn million_sim_hash_depends_on_the_tick_count() {
    let a = sim::run(&small(2));
    let b = sim::run(&sim::Config {
        ticks: 41,
        ..small(2)
    });
    assert_ne!(a.hash, b.hash);
    assert_eq!(a.tick_times.len(), 40);
    assert!(a.tick_quantile(0.99) >= a.tick_quantile(0.5));
    assert!(a.setup > std::time::Duration::ZERO);
}
