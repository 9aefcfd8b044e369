//! Synchronous iteration on the calling thread, and the row walk all per-row loops share.

pub mod each;
#[doc(hidden)]
pub mod rows;
