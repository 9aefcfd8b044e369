//! Synchronous iteration on the calling thread.

pub(crate) mod each;
