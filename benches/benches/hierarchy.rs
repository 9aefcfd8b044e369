//! Criterion bench group `hierarchy`: entity structure, beside bevy_ecs 0.20's `ChildOf` /
//! `Children` and entity cloning (feature `compare`), in one run.
//!
//! - `spawn_children_100k`: 1,000 parents with 100 children each (Freyr `spawn_children` per
//!   parent; bevy_ecs a `spawn_batch` of `(Pos, ChildOf(parent))` per parent);
//! - `reparent_10k`: 10,000 children moved from one parent to another (`set_parent`; bevy_ecs
//!   inserting `ChildOf`), the tree built untimed before each batch;
//! - `despawn_tree_100k`: despawning the root of a 100,100-entity tree (root, 100 parents,
//!   1,000 children each), the tree built untimed before each batch;
//! - `propagate_80k`: `Registry::propagate` over 100 trees of 800 entities (each root has 8
//!   children with 99 descendants in a chain), at 1 worker and at the machine's worker count;
//!   bevy_ecs's row (one thread) is the same pass written with its queries as
//!   `bevy_transform`'s propagation walks a tree (roots without `ChildOf`, then down through
//!   `Children`, every entity written each pass), since `bevy_transform` is not a dependency;
//! - `instantiate_10x10k`: a 10-entity prefab (a root and 9 children) instantiated 10,000
//!   times (`instantiate`; bevy_ecs `clone_and_spawn_with_opt_out` with linked cloning, which
//!   clones the children, 10,000 times).
//!
//! Not part of `bench_report`'s tables. Run:
//! `cargo bench -p freyr-benches --bench hierarchy --features compare`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use freyr::Registry;

#[derive(Clone, Copy)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
struct Pos([f32; 3]);

#[derive(Clone, Copy)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
struct Local(f32);
#[derive(Clone, Copy)]
#[cfg_attr(feature = "compare", derive(bevy_ecs::component::Component))]
struct Global(f32);

fn freyr_registry(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_hierarchy();
    r.register_cloneable::<Pos>();
    r
}

fn freyr_tree(r: &mut Registry, parents: usize, children: usize) -> freyr::Entity {
    let root = r.spawn((Pos([0.0; 3]),));
    for _ in 0..parents {
        let p = r.spawn_child(root, (Pos([1.0; 3]),)).unwrap();
        r.spawn_children(p, (0..children).map(|_| (Pos([2.0; 3]),)))
            .unwrap();
    }
    root
}

fn hierarchy(c: &mut Criterion) {
    let mut group = c.benchmark_group("hierarchy");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(10);

    group.bench_function("spawn_children_100k/freyr", |b| {
        b.iter_batched(
            || freyr_registry(1),
            |mut r| {
                for _ in 0..1000 {
                    let p = r.spawn((Pos([0.0; 3]),));
                    r.spawn_children(p, (0..100).map(|_| (Pos([1.0; 3]),)))
                        .unwrap();
                }
                r
            },
            BatchSize::LargeInput,
        );
    });

    group.bench_function("reparent_10k/freyr", |b| {
        b.iter_batched(
            || {
                let mut r = freyr_registry(1);
                let from = r.spawn((Pos([0.0; 3]),));
                let to = r.spawn((Pos([0.0; 3]),));
                let kids = r
                    .spawn_children(from, (0..10_000).map(|_| (Pos([1.0; 3]),)))
                    .unwrap();
                (r, to, kids)
            },
            |(mut r, to, kids)| {
                for &k in &kids {
                    r.set_parent(k, to).unwrap();
                }
                r
            },
            BatchSize::LargeInput,
        );
    });

    group.bench_function("despawn_tree_100k/freyr", |b| {
        b.iter_batched(
            || {
                let mut r = freyr_registry(1);
                let root = freyr_tree(&mut r, 100, 1000);
                (r, root)
            },
            |(mut r, root)| {
                r.despawn(root).unwrap();
                r
            },
            BatchSize::LargeInput,
        );
    });

    let workers = freyr_benches::machine_threads();
    for n in [1, workers] {
        let mut r = Registry::with_workers(n);
        for _ in 0..100 {
            let root = r.spawn((Local(1.0), Global(0.0)));
            for _ in 0..8 {
                let mut at = r.spawn_child(root, (Local(0.5), Global(0.0))).unwrap();
                for _ in 0..99 {
                    at = r.spawn_child(at, (Local(0.25), Global(0.0))).unwrap();
                }
            }
        }
        group.bench_function(format!("propagate_80k/freyr/{n}"), |b| {
            b.iter(|| {
                black_box(r.propagate::<Local, Global>(|l| Global(l.0), |p, l| Global(p.0 + l.0)))
            });
        });
    }

    group.bench_function("instantiate_10x10k/freyr", |b| {
        b.iter_batched(
            || {
                let mut r = freyr_registry(1);
                let prefab = freyr_tree(&mut r, 9, 0);
                black_box(r.get::<Pos>(prefab).unwrap().0);
                (r, prefab)
            },
            |(mut r, prefab)| {
                black_box(r.instantiate(prefab, 10_000).unwrap());
                r
            },
            BatchSize::LargeInput,
        );
    });

    #[cfg(feature = "compare")]
    bevy::rows(&mut group);
    group.finish();
}

#[cfg(feature = "compare")]
mod bevy {
    use bevy_ecs::entity::Entity;
    use bevy_ecs::hierarchy::{ChildOf, Children};
    use bevy_ecs::query::{QueryState, Without};
    use bevy_ecs::world::World;
    use criterion::measurement::WallTime;
    use criterion::{BatchSize, BenchmarkGroup};

    use super::{Global, Local, Pos};

    fn tree(w: &mut World, parents: usize, children: usize) -> bevy_ecs::entity::Entity {
        let root = w.spawn(Pos([0.0; 3])).id();
        for _ in 0..parents {
            let p = w.spawn((Pos([1.0; 3]), ChildOf(root))).id();
            w.spawn_batch((0..children).map(move |_| (Pos([2.0; 3]), ChildOf(p))))
                .for_each(drop);
        }
        root
    }

    /// The propagation tree of `propagate_80k`: 100 roots, each with 8 chains of 100.
    fn propagation_world() -> World {
        let mut w = World::new();
        for _ in 0..100 {
            let root = w.spawn((Local(1.0), Global(0.0))).id();
            for _ in 0..8 {
                let mut at = w.spawn((Local(0.5), Global(0.0), ChildOf(root))).id();
                for _ in 0..99 {
                    at = w.spawn((Local(0.25), Global(0.0), ChildOf(at))).id();
                }
            }
        }
        w
    }

    type Roots =
        QueryState<(&'static Local, &'static mut Global, &'static Children), Without<ChildOf>>;
    type Nodes = QueryState<(
        &'static Local,
        &'static mut Global,
        Option<&'static Children>,
    )>;

    /// Every root's `Global` from its `Local`, then every descendant's from its parent's
    /// `Global` and its own `Local`: the pass `Registry::propagate` makes in the Freyr row.
    #[inline(never)]
    fn propagate(
        w: &mut World,
        roots: &mut Roots,
        nodes: &mut Nodes,
        stack: &mut Vec<(Entity, f32)>,
    ) {
        for (local, mut global, children) in roots.iter_mut(w) {
            global.0 = local.0;
            stack.extend(children.iter().map(|&c| (c, local.0)));
        }
        while let Some((e, parent)) = stack.pop() {
            let (local, mut global, children) = nodes.get_mut(w, e).expect("a child is alive");
            let value = parent + local.0;
            global.0 = value;
            if let Some(children) = children {
                stack.extend(children.iter().map(|&c| (c, value)));
            }
        }
    }

    pub(crate) fn rows(group: &mut BenchmarkGroup<'_, WallTime>) {
        let mut w = propagation_world();
        let (mut roots, mut nodes): (Roots, Nodes) = (w.query_filtered(), w.query());
        let mut stack = Vec::new();
        group.bench_function("propagate_80k/bevy_ecs/1", |b| {
            b.iter(|| propagate(&mut w, &mut roots, &mut nodes, &mut stack));
        });
        let mut sum = 0.0;
        for (g,) in w.query::<(&Global,)>().iter(&w) {
            sum += f64::from(g.0);
        }
        // 100 roots of 1.0; under each, 8 chains of 1.5, 1.75, ... (100 links of 0.25 after 0.5).
        let chain: f64 = (0..100).map(|k| 1.5 + 0.25 * f64::from(k)).sum();
        assert_eq!(
            sum,
            100.0 * (1.0 + 8.0 * chain),
            "bevy's pass computes what Freyr's does"
        );

        group.bench_function("spawn_children_100k/bevy_ecs", |b| {
            b.iter_batched(
                World::new,
                |mut w| {
                    for _ in 0..1000 {
                        let p = w.spawn(Pos([0.0; 3])).id();
                        w.spawn_batch((0..100).map(move |_| (Pos([1.0; 3]), ChildOf(p))))
                            .for_each(drop);
                    }
                    w
                },
                BatchSize::LargeInput,
            );
        });
        group.bench_function("reparent_10k/bevy_ecs", |b| {
            b.iter_batched(
                || {
                    let mut w = World::new();
                    let from = w.spawn(Pos([0.0; 3])).id();
                    let to = w.spawn(Pos([0.0; 3])).id();
                    let kids: Vec<_> = w
                        .spawn_batch((0..10_000).map(move |_| (Pos([1.0; 3]), ChildOf(from))))
                        .collect();
                    (w, to, kids)
                },
                |(mut w, to, kids)| {
                    for &k in &kids {
                        w.entity_mut(k).insert(ChildOf(to));
                    }
                    w
                },
                BatchSize::LargeInput,
            );
        });
        group.bench_function("despawn_tree_100k/bevy_ecs", |b| {
            b.iter_batched(
                || {
                    let mut w = World::new();
                    let root = tree(&mut w, 100, 1000);
                    (w, root)
                },
                |(mut w, root)| {
                    w.despawn(root);
                    w
                },
                BatchSize::LargeInput,
            );
        });
        group.bench_function("instantiate_10x10k/bevy_ecs", |b| {
            b.iter_batched(
                || {
                    let mut w = World::new();
                    let prefab = tree(&mut w, 9, 0);
                    (w, prefab)
                },
                |(mut w, prefab)| {
                    for _ in 0..10_000 {
                        w.entity_mut(prefab).clone_and_spawn_with_opt_out(|b| {
                            b.linked_cloning(true);
                        });
                    }
                    w
                },
                BatchSize::LargeInput,
            );
        });
    }
}

criterion_group!(benches, hierarchy);
criterion_main!(benches);
