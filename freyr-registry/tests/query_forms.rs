//! Every query form and filter fetches what it names, from the archetypes it should.

use freyr_registry::{Entity, Registry, With, Without};

#[derive(Debug, Clone, Copy, PartialEq)]
struct A(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct B(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct C(u32);
struct Tag;

fn setup() -> (Registry, Vec<Entity>) {
    let mut registry = Registry::with_workers(1);
    let es = vec![
        registry.spawn((A(1),)),
        registry.spawn((A(2), B(20))),
        registry.spawn((A(3), B(30), Tag)),
        registry.spawn((B(40),)),
        registry.spawn((A(5), C(500))),
    ];
    (registry, es)
}

fn collect_a<F: freyr_registry::QueryFilter>(registry: &mut Registry) -> Vec<u32> {
    let mut out = Vec::new();
    registry
        .query_filtered::<&A, F>()
        .each(|_, a| out.push(a.0));
    out.sort_unstable();
    out
}

#[test]
fn shared_reference_fetches_every_entity_with_the_component() {
    let (mut registry, _) = setup();
    assert_eq!(collect_a::<()>(&mut registry), [1, 2, 3, 5]);
}

#[test]
fn mutable_reference_writes_in_place() {
    let (mut registry, es) = setup();
    registry.query::<&mut A>().each(|_, a| a.0 *= 10);
    assert_eq!(registry.get::<A>(es[2]).unwrap().0, 30);
    assert_eq!(registry.get::<B>(es[3]).unwrap().0, 40);
}

#[test]
fn entity_item_matches_the_callback_entity() {
    let (mut registry, es) = setup();
    let mut seen = Vec::new();
    registry.query::<(Entity, &B)>().each(|e, (id, b)| {
        assert_eq!(e, id);
        seen.push((id, b.0));
    });
    seen.sort_by_key(|s| s.1);
    assert_eq!(seen, [(es[1], 20), (es[2], 30), (es[3], 40)]);
}

#[test]
fn optional_components_are_none_where_absent() {
    let (mut registry, _) = setup();
    let mut seen = Vec::new();
    registry
        .query::<(&A, Option<&B>)>()
        .each(|_, (a, b)| seen.push((a.0, b.map(|b| b.0))));
    seen.sort_unstable();
    assert_eq!(seen, [(1, None), (2, Some(20)), (3, Some(30)), (5, None)]);
}

#[test]
fn optional_mutable_components_write_where_present() {
    let (mut registry, es) = setup();
    registry.query::<(&A, Option<&mut B>)>().each(|_, (a, b)| {
        if let Some(b) = b {
            b.0 += a.0;
        }
    });
    assert_eq!(registry.get::<B>(es[1]).unwrap().0, 22);
    assert_eq!(registry.get::<B>(es[2]).unwrap().0, 33);
    assert_eq!(registry.get::<B>(es[3]).unwrap().0, 40); // no A: not matched
}

#[test]
fn with_and_without_filters_select_archetypes() {
    let (mut registry, _) = setup();
    assert_eq!(collect_a::<With<B>>(&mut registry), [2, 3]);
    assert_eq!(collect_a::<Without<B>>(&mut registry), [1, 5]);
    assert_eq!(collect_a::<(With<B>, Without<Tag>)>(&mut registry), [2]);
    assert_eq!(collect_a::<(With<B>, With<Tag>)>(&mut registry), [3]);
    assert_eq!(collect_a::<(Without<B>, Without<C>)>(&mut registry), [1]);
}

#[test]
fn filters_on_unregistered_types_match_nothing_or_everything() {
    struct Never;
    let (mut registry, _) = setup();
    assert_eq!(collect_a::<With<Never>>(&mut registry), Vec::<u32>::new());
    assert_eq!(collect_a::<Without<Never>>(&mut registry), [1, 2, 3, 5]);
    assert_eq!(registry.query::<&Never>().count(), 0);
    // Registering the type later is picked up by the cached query.
    let e = registry.spawn((A(9), Never));
    assert_eq!(collect_a::<With<Never>>(&mut registry), [9]);
    assert_eq!(registry.query::<(Entity, &Never)>().count(), 1);
    assert!(registry.contains(e));
}

#[test]
fn unit_query_matches_every_entity() {
    let (mut registry, _) = setup();
    assert_eq!(registry.query::<()>().count(), 5);
    let mut n = 0;
    registry.query::<()>().each(|_, ()| n += 1);
    assert_eq!(n, 5);
}

#[test]
fn twelve_element_tuples_fetch_every_element() {
    #[derive(Clone, Copy)]
    struct P<const N: usize>(u32);
    let mut registry = Registry::with_workers(1);
    let e = registry.spawn((
        P::<0>(0),
        P::<1>(1),
        P::<2>(2),
        P::<3>(3),
        P::<4>(4),
        P::<5>(5),
        P::<6>(6),
        P::<7>(7),
        P::<8>(8),
        P::<9>(9),
        P::<10>(10),
    ));
    let mut sum = 0;
    registry
        .query::<(
            Entity,
            &P<0>,
            &P<1>,
            &P<2>,
            &P<3>,
            &P<4>,
            &P<5>,
            &P<6>,
            &P<7>,
            &P<8>,
            &P<9>,
            &mut P<10>,
        )>()
        .each(|_, (id, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10)| {
            assert_eq!(id, e);
            p10.0 = p0.0 + p1.0 + p2.0 + p3.0 + p4.0 + p5.0 + p6.0 + p7.0 + p8.0 + p9.0;
            sum = p10.0;
        });
    assert_eq!(sum, 45);
    assert_eq!(registry.get::<P<10>>(e).unwrap().0, 45);
}

#[test]
fn each_chunk_hands_out_columns_as_slices() {
    let mut registry = Registry::with_workers(1);
    registry.spawn_batch((0..1500u32).map(|i| (A(i), B(1))));
    registry.spawn_batch((0..10u32).map(|i| (A(i),)));
    let mut lens = Vec::new();
    registry
        .query::<(&mut A, Option<&B>)>()
        .each_chunk(|entities, (a, b)| {
            assert_eq!(entities.len(), a.len());
            if let Some(b) = b {
                assert_eq!(b.len(), a.len());
                for (a, b) in a.iter_mut().zip(b) {
                    a.0 += b.0;
                }
            }
            lens.push(a.len());
        });
    assert_eq!(lens, [512, 512, 476, 10]);
    let mut total = 0u64;
    registry.query::<&A>().each(|_, a| total += u64::from(a.0));
    assert_eq!(
        total,
        (0..1500u64).sum::<u64>() + 1500 + (0..10u64).sum::<u64>()
    );
}

#[test]
fn zero_sized_components_are_fetched() {
    let mut registry = Registry::with_workers(2);
    registry.spawn_batch((0..600u32).map(|i| (A(i), Tag)));
    let mut n = 0;
    registry.query::<(&Tag, &A)>().each(|_, (_tag, _a)| n += 1);
    assert_eq!(n, 600);
    registry.query::<&mut Tag>().each_async(|_, _tag| {});
    registry.execute_tasks();
}

#[test]
fn each_async_runs_every_form_on_workers() {
    let mut registry = Registry::with_workers(8);
    registry.spawn_batch((0..3000u32).map(|i| (A(i), B(0))));
    registry.spawn_batch((0..700u32).map(|i| (A(i),)));
    registry
        .query::<(Entity, &A, Option<&mut B>)>()
        .each_async(|_, (_, a, b)| {
            if let Some(b) = b {
                b.0 = a.0 * 2;
            }
        });
    registry.execute_tasks();
    let mut ok = 0;
    registry.query::<(&A, &B)>().each(|_, (a, b)| {
        assert_eq!(b.0, a.0 * 2);
        ok += 1;
    });
    assert_eq!(ok, 3000);
}
