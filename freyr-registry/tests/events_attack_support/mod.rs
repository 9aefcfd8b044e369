#![allow(dead_code)]
//! Shared pieces of the events attack tests.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// An event: where it came from, the tick it was sent at, and a number.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Ev {
    pub(crate) src: u32,
    pub(crate) tick: u64,
    pub(crate) n: u32,
}

pub(crate) fn ev(src: u32, tick: u64, n: u32) -> Ev {
    Ev { src, tick, n }
}

/// An event whose `Drop` panics when `armed`; counts every drop.
pub(crate) struct Bomb {
    pub(crate) armed: bool,
    pub(crate) id: u32,
    pub(crate) drops: &'static AtomicUsize,
}

impl Clone for Bomb {
    fn clone(&self) -> Self {
        Bomb {
            armed: false,
            id: self.id,
            drops: self.drops,
        }
    }
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.armed && !std::thread::panicking() {
            panic!("bomb {} went off", self.id);
        }
    }
}

/// An event whose `Clone` panics while `fuse` is set.
#[derive(Debug)]
pub(crate) struct Brittle(pub(crate) u32, pub(crate) &'static AtomicBool);

impl Clone for Brittle {
    fn clone(&self) -> Self {
        if self.1.load(Ordering::SeqCst) {
            panic!("clone of brittle {} fails", self.0);
        }
        Brittle(self.0, self.1)
    }
}

/// Runs `f`, expecting a panic; returns its message.
pub(crate) fn panics(f: impl FnOnce()) -> String {
    let payload =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("expected a panic");
    if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else {
        String::from("<non-string panic>")
    }
}
