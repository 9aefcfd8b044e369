//! Freyr queries: `each` / `each_async` over archetype chunks, the `Registry`, phases and sync points.
