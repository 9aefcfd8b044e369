//! The rollback run against the run with every input on time: every confirmed tick's hash
//! and the final hash agree, for 1, 2, 3 and 8 workers; a restore puts `each`'s order back.

use freyr::snapshot::SnapshotRing;

use crate::game;
use crate::session::{Config, run};

fn config(workers: usize, delay: u64) -> Config {
    Config {
        ticks: 60,
        players: 3,
        delay,
        workers,
        entities: 700,
    }
}

#[test]
fn a_rolled_back_run_matches_the_run_with_every_input_on_time() {
    let on_time = run(config(1, 0));
    assert_eq!(on_time.rollbacks, 0);
    assert_eq!(on_time.confirmed.len(), 60);
    for workers in [1, 2, 3, 8] {
        for delay in [2, 5] {
            let late = run(config(workers, delay));
            assert!(
                late.rollbacks > 5,
                "predictions miss: {} rollbacks",
                late.rollbacks
            );
            assert!(late.resimulated >= late.rollbacks);
            assert_eq!(late.confirmed.len(), 60);
            for (t, (a, b)) in late.confirmed.iter().zip(&on_time.confirmed).enumerate() {
                assert_eq!(a, b, "tick {t}, {workers} workers, delay {delay}");
            }
            assert_eq!(
                late.final_hash, on_time.final_hash,
                "{workers} workers, delay {delay}"
            );
        }
    }
}

#[test]
fn the_rolled_back_ticks_spawn_despawn_and_create_types() {
    // The game does what the equality above is about: bullets come and go, shields make new
    // archetypes, and the scoring jobs land.
    let mut r = game::new_world(2, 3, 10);
    let mut bullets = 0;
    let mut shields = 0;
    for t in 0..40 {
        let inputs = (0..3).map(|p| game::real_input(p, t)).collect();
        r.insert_resource(game::TickInputs(inputs));
        r.update(1.0 / 60.0);
        let mut n = 0;
        r.query::<&game::Bullet>().each(|_, _| n += 1);
        bullets = bullets.max(n);
        let mut s = 0;
        r.query::<&game::Shield>().each(|_, _| s += 1);
        shields += s;
    }
    let mut scores = Vec::new();
    r.query::<&game::Score>().each(|_, s| scores = s.0.clone());
    assert!(
        bullets > 0 && shields > 0,
        "bullets {bullets}, shield-ticks {shields}"
    );
    assert_eq!(
        scores.len(),
        10,
        "jobs requested at 0, 4, .., 36 landed 3 ticks later"
    );
}

#[test]
fn after_a_restore_each_visits_the_entities_in_the_uninterrupted_order() {
    for workers in [1, 3] {
        let mut straight = game::new_world(workers, 2, 300);
        let mut orders = Vec::new();
        let mut ring = SnapshotRing::new(16);
        let mut r = game::new_world(workers, 2, 300);
        for t in 0..12 {
            let inputs: Vec<u8> = (0..2).map(|p| game::real_input(p, t)).collect();
            orders.push(game::each_order(&mut straight));
            straight.insert_resource(game::TickInputs(inputs.clone()));
            straight.update(1.0 / 60.0);
            ring.push(&r).unwrap();
            r.insert_resource(game::TickInputs(inputs));
            r.update(1.0 / 60.0);
        }
        for t in [9, 4] {
            ring.restore(&mut r, t).unwrap();
            assert_eq!(game::each_order(&mut r), orders[t as usize], "tick {t}");
        }
    }
}
