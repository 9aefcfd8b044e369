//! Freyr storage: entities, components, archetypes of 512-entity chunks, and command buffers.
