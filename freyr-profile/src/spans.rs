//! `tracing` spans of a tick (feature `tracing`), named as the profilers name the same work, so
//! a `tracing` subscriber (`tracing-subscriber`, `tracing-tracy`, `tracing-chrome`) shows a
//! Freyr tick beside the rest of a program.
//!
//! Every span has the target `freyr`. A span name is fixed where the span is declared, so the
//! label of a query, which the profilers use as a name, is the span's `label` field:
//!
//! | span | level | fields | around |
//! |---|---|---|---|
//! | `tick` | info | `tick` | one `Registry::update` |
//! | `deadlines` | info | | applying the deadline jobs due at the tick's start |
//! | `PreUpdate`, `Update`, `PostUpdate` | info | | a [`Phase`]: its systems, then its sync point |
//! | `system` | info | `name` (`System::name`) | one system's run |
//! | `each` | info | `label` | an `each`, `each_chunk` or `each_with` call, waits included |
//! | `launch` | info | `label`, `launch`, `tasks` | an `each_async*` launch; entered while it is submitted, closed when a sync point retires it |
//! | `tasks` | debug | `label`, `launch`, `first`, `end` | a batch of a launch's tasks, on the thread that ran it; its parent is the launch |
//! | `sync` | info | | a sync point: waiting for launches, applying commands, destroying |
//! | `implicit_sync` | info | | a wait for conflicting in-flight launches before other work |
//!
//! `label` is `"unlabelled"` for a query without `with_label`, as in the tick trace. Creating a
//! span costs one check of its call site's cached interest when no subscriber wants it, and the
//! spans read nothing the tick computes with, so the world is the same with or without them.

use crate::phase::Phase;

pub use tracing::Span;

/// The label of a query without `with_label`, as the tick trace names it.
pub const UNLABELLED: &str = "unlabelled";

/// The span of one tick (`Registry::update`).
#[inline]
pub fn tick(tick: u64) -> Span {
    tracing::info_span!(target: "freyr", "tick", tick)
}

/// The span of applying the deadline jobs due at a tick's start.
#[inline]
pub fn deadlines() -> Span {
    tracing::info_span!(target: "freyr", "deadlines")
}

/// The span of `phase`: its systems and the sync point that ends it, named [`Phase::name`].
#[inline]
pub fn phase(phase: Phase) -> Span {
    // One call site per name: a span's name is fixed where it is declared.
    match phase {
        Phase::PreUpdate => tracing::info_span!(target: "freyr", "PreUpdate"),
        Phase::Update => tracing::info_span!(target: "freyr", "Update"),
        Phase::PostUpdate => tracing::info_span!(target: "freyr", "PostUpdate"),
    }
}

/// The span of one system's run; `name` is the system's `System::name`.
#[inline]
pub fn system(name: &str) -> Span {
    tracing::info_span!(target: "freyr", "system", name)
}

/// The span of a synchronous query call (`each`, `each_chunk`, `each_with`).
#[inline]
pub fn each(label: Option<&'static str>) -> Span {
    tracing::info_span!(target: "freyr", "each", label = label.unwrap_or(UNLABELLED))
}

/// The span of an `each_async*` launch number `launch` of `tasks` tasks.
#[inline]
pub fn launch(label: Option<&'static str>, launch: u64, tasks: usize) -> Span {
    tracing::info_span!(
        target: "freyr",
        "launch",
        label = label.unwrap_or(UNLABELLED),
        launch,
        tasks
    )
}

/// The span of the batch of tasks `first..end` of the launch whose span is `parent`, on the
/// thread that runs it.
#[inline]
pub fn tasks(
    parent: &Span,
    label: Option<&'static str>,
    launch: u64,
    first: usize,
    end: usize,
) -> Span {
    tracing::debug_span!(
        target: "freyr",
        parent: parent,
        "tasks",
        label = label.unwrap_or(UNLABELLED),
        launch,
        first,
        end
    )
}

/// The span of a sync point.
#[inline]
pub fn sync() -> Span {
    tracing::info_span!(target: "freyr", "sync")
}

/// The span of a wait for conflicting in-flight launches (an implicit sync point).
#[inline]
pub fn implicit_sync() -> Span {
    tracing::info_span!(target: "freyr", "implicit_sync")
}
