//! Conflicting access inside one query is rejected before anything runs, naming the type.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use freyr_registry::{QueryError, Registry, View};

struct Health;
struct Armor;

fn registry() -> Registry {
    let mut registry = Registry::with_workers(2);
    registry.spawn((Health, Armor));
    registry
}

#[test]
#[should_panic(expected = "conflicting access to `conflicting_access::Health`")]
fn write_and_read_of_one_type_panics_naming_it() {
    let mut registry = registry();
    registry
        .query::<(&mut Health, &Health)>()
        .each(|_, _| unreachable!("must not run"));
}

#[test]
#[should_panic(expected = "conflicting access to `conflicting_access::Health`")]
fn two_writes_of_one_type_panic_naming_it() {
    let mut registry = registry();
    registry
        .query::<(&Armor, &mut Health, &mut Health)>()
        .each(|_, _| unreachable!("must not run"));
}

#[test]
#[should_panic(expected = "conflicting access to `conflicting_access::Armor`")]
fn optional_write_conflicts_like_a_write() {
    let mut registry = registry();
    registry
        .query::<(&Armor, Option<&mut Armor>)>()
        .each(|_, _| unreachable!("must not run"));
}

#[test]
fn try_query_reports_the_conflict_and_runs_nothing() {
    let mut registry = registry();
    let runs = Arc::new(AtomicUsize::new(0));
    let err = registry
        .try_query::<(&Health, &mut Health)>()
        .err()
        .unwrap();
    match &err {
        QueryError::ConflictingAccess { type_name, .. } => {
            assert_eq!(*type_name, core::any::type_name::<Health>());
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("Health"));
    assert!(
        registry
            .query_state::<(&Health, &mut Health), ()>()
            .is_none()
    );
    // Reads of one type twice are fine, and the registry keeps working.
    let r = Arc::clone(&runs);
    registry
        .query::<(&Health, &Health)>()
        .each_async(move |_, _| {
            r.fetch_add(1, Ordering::Relaxed);
        });
    registry.execute_tasks();
    assert_eq!(runs.load(Ordering::Relaxed), 1);
}

#[test]
fn viewing_a_type_the_query_writes_is_rejected() {
    let mut registry = registry();
    let err = registry
        .query::<(&mut Health, &Armor)>()
        .try_views::<(View<Health>,)>()
        .err()
        .unwrap();
    assert!(err.to_string().contains("Health"), "{err}");
    // Viewing a type the query only reads is fine.
    assert!(
        registry
            .query::<(&mut Health, &Armor)>()
            .try_views::<(View<Armor>,)>()
            .is_ok()
    );
}

#[test]
#[should_panic(expected = "Health")]
fn views_panics_on_conflict() {
    let mut registry = registry();
    let _ = registry.query::<&mut Health>().views::<(View<Health>,)>();
}

#[test]
#[should_panic(expected = "Missing` is not in the registry")]
fn missing_resource_view_panics_before_running() {
    struct Missing;
    let mut registry = registry();
    registry
        .query::<&Health>()
        .views::<(freyr_registry::Res<Missing>,)>()
        .each_async_with(|_, _, _| unreachable!("must not run"));
}
