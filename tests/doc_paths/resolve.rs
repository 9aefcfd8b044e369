//! One line per `freyr::` path that README.md or docs/src/*.md names (checked by
//! `every_freyr_path_the_docs_name_is_in_the_resolved_list`): a path that stops resolving
//! breaks the build of `tests/doc_paths.rs`. Items are imported, functions and methods taken
//! as values in a function that never runs. Comment lines are not read as paths.

#![allow(unused_imports)]

use freyr::AsyncSystem as _;
use freyr::Commands as _;
use freyr::ComponentError as _;
use freyr::Entity as _;
use freyr::EventCursor as _;
use freyr::Phase as _;
use freyr::Registry as _;
use freyr::Res as _;
use freyr::StableHash as _;
use freyr::System as _;
use freyr::View as _;
use freyr::With as _;
use freyr::Without as _;
use freyr::World as _;
use freyr::hash::DivergenceKind as _;
use freyr::hierarchy::ChildOf as _;
use freyr::hierarchy::Children as _;
use freyr::hierarchy::CloneError as _;
use freyr::hierarchy::CloneMap as _;
use freyr::hierarchy::Disabled as _;
use freyr::hierarchy::HierarchyCommands as _;
use freyr::hierarchy::HierarchyError as _;
use freyr::hierarchy::is_kept as _;
use freyr::hooks::MAX_HOOK_ROUNDS as _;
use freyr::persist::ColumnEncoding as _;
use freyr::persist::EntityMap as _;
use freyr::persist::LoadError as _;
use freyr::persist::SaveError as _;
use freyr::persist::bytemuck as _;
use freyr::persist::bytemuck::Pod as _;
use freyr::persist::bytemuck::Zeroable as _;
use freyr::prelude as _;
use freyr::profile as _;
use freyr::profile::TickProfileConfig as _;
use freyr::query::RowPath as _;
use freyr::sched as _;
use freyr::snapshot::SnapshotError as _;
use freyr::snapshot::SnapshotRing as _;
use freyr::system as _;
use freyr::system::EventWriter as _;
use freyr::system::Query as _;
use freyr::system::Res as _;
use freyr::system::ResMut as _;
use freyr::system::SystemConfig as _;
use freyr::system::Tick as _;
use freyr::time as _;
use freyr::time::Clock as _;
use freyr::time::DEFAULT_MAX_CATCHUP_TICKS as _;
use freyr::time::GovernorParams as _;
use freyr::time::ManualClock as _;
use freyr::time::MonotonicClock as _;
use freyr::time::TickGovernor as _;
use freyr::time::budget::BudgetQueue as _;
use freyr::time::clamp_catchup_ticks as _;
use freyr::time::deadline::Delivered as _;
use freyr::time::path::Grid as _;
use freyr::time::path::GridPathSearch as _;
use freyr::time::pump::AsyncPump as _;
use freyr::time::pump::Launched as _;
use freyr::time::pump::Process as _;

/// Functions and methods the documents name.
#[allow(dead_code)]
fn functions() {
    let _ = freyr::Registry::with_workers;
    let _ = freyr::query::RowPath::current;
}
