//! What the frame-loop attack files share: a registry on a manual clock that logs its ticks,
//! and panic catching.

#![allow(dead_code)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use freyr::time::ManualClock;
use freyr::{Phase, Registry};

pub(crate) const DT: Duration = Duration::from_millis(10);

/// The tick numbers the Update phase saw, in order.
pub(crate) struct Seen(pub(crate) Vec<u64>);

/// A registry on a manual clock whose Update phase logs every tick number it runs.
pub(crate) fn logged(workers: usize, dt: Duration) -> (Registry, ManualClock) {
    let clock = ManualClock::new();
    let mut r = Registry::with_workers(workers);
    r.set_fixed_step(dt, clock.clone()).unwrap();
    r.insert_resource(Seen(Vec::new()));
    r.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        let tick = r.tick();
        r.resource_mut::<Seen>().unwrap().0.push(tick);
    });
    (r, clock)
}

pub(crate) fn seen(r: &Registry) -> Vec<u64> {
    r.resource::<Seen>().unwrap().0.clone()
}

pub(crate) fn message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        String::from("<non-string panic>")
    }
}

pub(crate) fn panics(f: impl FnOnce()) -> String {
    let caught = catch_unwind(AssertUnwindSafe(f)).expect_err("the call panicked");
    message(&*caught)
}
