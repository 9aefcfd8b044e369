//! Query states are cached per type and refreshed incrementally when archetypes appear.

use freyr_query::{Registry, With};

struct A(u32);
struct B;
struct C;

#[test]
fn cached_query_picks_up_new_archetypes_without_rescanning() {
    let mut registry = Registry::with_workers(1);
    registry.spawn((A(1),));
    registry.spawn((B,));
    assert_eq!(registry.query::<&A>().count(), 1);
    let state = registry.query_state::<&A, ()>().unwrap();
    let examined = state.archetypes_examined();
    assert_eq!(state.matched_archetypes().count(), 1);

    // Running again without new archetypes examines nothing new.
    for _ in 0..10 {
        registry.query::<&A>().each(|_, _| {});
    }
    assert_eq!(
        registry
            .query_state::<&A, ()>()
            .unwrap()
            .archetypes_examined(),
        examined
    );

    // Two new archetypes, one matching.
    registry.spawn((A(2), B));
    registry.spawn((B, C));
    let mut seen = Vec::new();
    registry.query::<&A>().each(|_, a| seen.push(a.0));
    assert_eq!(seen, [1, 2]);
    let state = registry.query_state::<&A, ()>().unwrap();
    assert_eq!(state.archetypes_examined(), examined + 2);
    assert_eq!(state.matched_archetypes().count(), 2);
}

#[test]
fn filtered_and_unfiltered_queries_have_separate_states() {
    let mut registry = Registry::with_workers(1);
    registry.spawn((A(1),));
    registry.spawn((A(2), B));
    assert_eq!(registry.query::<&A>().count(), 2);
    assert_eq!(registry.query_filtered::<&A, With<B>>().count(), 1);
    assert_eq!(
        registry
            .query_state::<&A, With<B>>()
            .unwrap()
            .matched_archetypes()
            .count(),
        1
    );
    assert_eq!(
        registry
            .query_state::<&A, ()>()
            .unwrap()
            .matched_archetypes()
            .count(),
        2
    );
}

#[test]
fn components_registered_after_the_query_are_resolved_later() {
    struct Late(u8);
    let mut registry = Registry::with_workers(2);
    registry.spawn((A(0),));
    assert_eq!(registry.query::<(&A, &Late)>().count(), 0);
    assert_eq!(registry.query::<(&A, Option<&Late>)>().count(), 1);
    registry.spawn((A(1), Late(7)));
    assert_eq!(registry.query::<(&A, &Late)>().count(), 1);
    let mut lates = Vec::new();
    registry
        .query::<(&A, Option<&Late>)>()
        .each(|_, (_, late)| lates.push(late.map(|l| l.0)));
    assert_eq!(lates, [None, Some(7)]);
    // The access set now includes `Late`: a writer of `Late` in flight is waited for.
    registry.query::<&mut Late>().each_async(|_, l| l.0 += 1);
    let mut seen = 0;
    registry.query::<&Late>().each(|_, l| seen = l.0);
    assert_eq!(seen, 8);
    assert_eq!(registry.implicit_syncs(), 1);
    registry.execute_tasks();
}
