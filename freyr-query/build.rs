//! Mutation-testing hook for the loom models, inert in normal builds; the
//! same hook as freyr-sched's build script.
//!
//! Under `--cfg freyr_loom`, `FREYR_MUTANT=name` compiles this crate with
//! `--cfg freyr_mutant="name"`, planting the mutants of the launch hand-off
//! (`src/launch/handoff.rs`). Unlike putting the cfg in `RUSTFLAGS`, this
//! rebuilds only freyr-sched, freyr-query and loom-tests when the mutant
//! changes, not loom and its whole dependency tree (see `.ci/loom.sh`).

fn main() {
    println!("cargo::rerun-if-env-changed=FREYR_MUTANT");
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_CFG_FREYR_LOOM").is_none() {
        return;
    }
    if let Ok(mutant) = std::env::var("FREYR_MUTANT") {
        let mutant = mutant.trim();
        if !mutant.is_empty() {
            assert!(
                mutant
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "FREYR_MUTANT must be an identifier, got {mutant:?}"
            );
            println!("cargo::rustc-cfg=freyr_mutant=\"{mutant}\"");
        }
    }
}
