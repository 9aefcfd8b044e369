//! Loom models of freyr-sched's protocol live in `tests/`; build them with `RUSTFLAGS="--cfg freyr_loom"`.
