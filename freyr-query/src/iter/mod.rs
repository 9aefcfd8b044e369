//! Synchronous iteration on the calling thread, and the row walk all per-row loops share.

pub(crate) mod each;
pub(crate) mod rows;
