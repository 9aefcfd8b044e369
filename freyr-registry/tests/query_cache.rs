//! Query states are cached per type and refreshed incrementally when archetypes appear.

use freyr_registry::{Entity, Registry, With};

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

/// `each` keeps the pointers of its runs between calls while the world's layout is unchanged;
/// every structural change in between (spawn, batch spawn, despawn, insert, remove, deferred
/// commands, a replaced world) must be seen by the next call, and a value written through
/// `get_mut` too. Checked against a model after every step.
#[test]
fn each_sees_every_change_between_calls() {
    #[derive(Clone, Copy)]
    struct V(u64);
    struct Tag;

    let mut registry = Registry::with_workers(2);
    let mut model: Vec<(Entity, u64)> = Vec::new();
    let sum_and_count = |registry: &mut Registry| {
        let (mut sum, mut count) = (0u64, 0usize);
        registry.query::<&V>().each(|_, v| {
            sum += v.0;
            count += 1;
        });
        (sum, count)
    };
    let check = |registry: &mut Registry, model: &[(Entity, u64)], step: &str| {
        let want = (model.iter().map(|m| m.1).sum::<u64>(), model.len());
        assert_eq!(sum_and_count(registry), want, "after {step}");
        // Twice: the second call runs on the cached runs.
        assert_eq!(sum_and_count(registry), want, "after {step}, again");
    };

    let mut next = 1u64;
    for round in 0..40u64 {
        match round % 8 {
            0 => {
                let e = registry.spawn((V(next),));
                model.push((e, next));
                next += 1;
            }
            1 => {
                let values: Vec<u64> = (next..next + 700).collect();
                next += 700;
                let spawned = registry.spawn_batch(values.iter().map(|&v| (V(v), Tag)));
                model.extend(spawned.into_iter().zip(values));
            }
            2 => {
                let (e, _) = model.swap_remove((round as usize * 7) % model.len());
                registry.despawn(e).unwrap();
            }
            3 => {
                let e = model[(round as usize * 13) % model.len()].0;
                registry.insert(e, (Tag,)).unwrap();
            }
            4 => {
                let e = model[(round as usize * 5) % model.len()].0;
                let _ = registry.remove::<(Tag,)>(e);
            }
            5 => {
                let i = (round as usize * 11) % model.len();
                registry.get_mut::<V>(model[i].0).unwrap().0 = 1_000_000 + round;
                model[i].1 = 1_000_000 + round;
            }
            6 => {
                let victims: Vec<Entity> = model.iter().step_by(9).map(|m| m.0).collect();
                registry.query::<&V>().each_with(|e, _, ctx| {
                    if victims.contains(&e) {
                        ctx.commands().despawn(e);
                    }
                });
                registry.execute_tasks();
                model.retain(|m| !victims.contains(&m.0));
            }
            _ => {
                if round == 23 {
                    *registry.world_mut() = freyr_core::World::new();
                    model.clear();
                }
                let e = registry.spawn((V(next), Tag));
                model.push((e, next));
                next += 1;
            }
        }
        check(&mut registry, &model, &format!("round {round}"));
    }
}

/// A tick whose sync point has nothing to apply keeps the layout, so a query run every tick
/// reads its runs once; every way the layout can change between or inside ticks (a spawn
/// through commands, a queued destruction, a direct spawn, a despawn) makes the next run read
/// it again and see exactly the live rows, in function systems and exclusive ones alike.
#[test]
fn a_layout_is_read_again_exactly_when_it_changed() {
    use freyr_registry::systems::{Query, ResMut, Tick};
    use freyr_registry::{Commands, Phase};

    struct Seen(Vec<u32>);
    for workers in [1, 2, 8] {
        let mut registry = Registry::with_workers(workers);
        registry.insert_resource(Seen(Vec::new()));
        let first = registry.spawn((A(1),));
        registry
            .add_fn_system(
                Phase::Update,
                "sum",
                |mut q: Query<&mut A>, mut seen: ResMut<Seen>| {
                    let mut sum = 0;
                    q.each(|_, a| sum += a.0);
                    seen.0.push(sum);
                },
            )
            .unwrap();
        let reads = |r: &Registry| r.query_state::<&A, ()>().unwrap().layouts_read();
        registry.add_system(Phase::PostUpdate, |r: &mut Registry, _: f32| {
            r.query::<&A>().each(|_, _| {});
        });
        for _ in 0..5 {
            registry.update(0.0);
        }
        assert_eq!(reads(&registry), 1, "five ticks with nothing applied");

        // A system that spawns through commands every other tick: the layout ends at those
        // sync points only, and the next run sees the new row.
        registry
            .add_fn_system(Phase::Update, "grow", |mut c: Commands, t: Tick| {
                if t.tick.is_multiple_of(2) {
                    c.spawn((A(10),));
                }
            })
            .unwrap();
        let before = reads(&registry);
        for _ in 0..4 {
            registry.update(0.0);
        }
        assert_eq!(reads(&registry), before + 2, "two ticks applied a spawn");

        // A queued destruction, then a direct spawn and despawn between ticks.
        registry.destroy_entity(first);
        registry.update(0.0);
        let e = registry.spawn((A(1000),));
        registry.update(0.0);
        registry.despawn(e).unwrap();
        registry.update(0.0);

        let live: u32 = {
            let mut sum = 0;
            registry.query::<&A>().each(|_, a| sum += a.0);
            sum
        };
        let seen = &registry.resource::<Seen>().unwrap().0;
        assert_eq!(*seen.last().unwrap(), live, "{workers} workers: {seen:?}");
        assert_eq!(seen[..5], [1; 5]);
        assert!(
            seen.windows(2).any(|w| w[1] == w[0] + 1000),
            "the directly spawned row was seen: {seen:?}"
        );
    }
}
