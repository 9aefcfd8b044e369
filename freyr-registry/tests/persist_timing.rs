//! One measurement of saving and loading 1M (Position, Velocity) entities, printed (ignored:
//! run with `cargo test --release -p freyr-query --test persist_timing -- --ignored
//! --nocapture`; the benches in `benches/benches/snapshot.rs` are the careful numbers).

use std::time::Instant;

use freyr::Registry;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Serialize, Deserialize)]
struct Position([f32; 3]);
#[derive(Clone, Copy, Serialize, Deserialize)]
struct Velocity([f32; 3]);

fn registry() -> Registry {
    let mut r = Registry::with_workers(1);
    r.register_persistent::<Position>("timing.position", 1);
    r.register_persistent::<Velocity>("timing.velocity", 1);
    r
}

#[test]
#[ignore = "a timing printout, run by hand in release"]
fn save_and_load_of_a_million_entities() {
    let mut r = registry();
    r.spawn_batch((0..1_000_000u32).map(|i| (Position([i as f32; 3]), Velocity([1.0; 3]))));
    for round in 0..3 {
        let start = Instant::now();
        let bytes = r.save_to_vec().unwrap();
        let saved = start.elapsed();
        let mut loaded = registry();
        let start = Instant::now();
        loaded.load_into(&bytes).unwrap();
        let load = start.elapsed();
        assert_eq!(loaded.len(), 1_000_000);
        println!(
            "round {round}: save {saved:?}, load {load:?}, {} bytes",
            bytes.len()
        );
    }
}
