//! Freyr: an archetype-chunk ECS with a work-stealing scheduler and a deterministic tick.
