//! Replacing the world under a registry (`*world_mut() = …`, `mem::swap`, `mem::take`) never
//! lets a cache built for the old world read one type as another: every cached query state is
//! tied to its world's `WorldId` and rebuilt for a new one. Sized for Miri
//! (`cargo +nightly miri test -p freyr-query --test world_replacement`).

use core::mem;

use freyr_core::World;
use freyr_registry::{Registry, View};

/// A component that knows when it is read as something else: `check` is always `!value`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Checked {
    value: u64,
    check: u64,
}

impl Checked {
    fn new(value: u64) -> Self {
        Checked {
            value,
            check: !value,
        }
    }

    fn assert_intact(&self) -> u64 {
        assert_eq!(
            self.check, !self.value,
            "read another type as Checked: {self:?}"
        );
        self.value
    }
}

/// Same size as `Checked`: registered first in the new world, it takes `Checked`'s old id. Its
/// fields are never read by name; they are what a confused `&Checked` would see.
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)]
struct Other(u64, u64);

/// A heap-owning component: read as another type it would be a wild pointer.
#[derive(Clone, Debug, PartialEq)]
struct Name(String);

/// Worker counts; Miri runs the pool's threads one at a time, so it gets 1 and 2 only.
const WORKERS: &[usize] = if cfg!(miri) { &[1, 2] } else { &[1, 2, 8] };

/// A registry with one `Checked` entity, whose query state for `&Checked` (and friends) is
/// cached.
fn warmed(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.spawn((Checked::new(1), Name("old".into())));
    r.query::<&Checked>().each(|_, c| {
        c.assert_intact();
    });
    r.query::<(&Checked, &Name)>().each(|_, _| {});
    r.query::<&Name>().each(|_, _| {});
    r
}

/// A world where `Other` and a `u32` took the component ids `Checked` and `Name` had.
fn fresh() -> World {
    let mut fresh = World::new();
    fresh.spawn((Other(0xDEAD_BEEF, 0xDEAD_BEEF), 7u32));
    fresh.spawn((Checked::new(2), Name("new".into())));
    fresh
}

/// What the registry sees now, through every cached query: the `Checked` values, the names,
/// and the (value, name) pairs.
fn observe(r: &mut Registry) -> (Vec<u64>, Vec<String>, Vec<(u64, String)>) {
    let mut values = Vec::new();
    r.query::<&Checked>()
        .each(|_, c| values.push(c.assert_intact()));
    let mut names = Vec::new();
    r.query::<&Name>().each(|_, n| names.push(n.0.clone()));
    let mut pairs = Vec::new();
    r.query::<(&Checked, &Name)>()
        .each(|_, (c, n)| pairs.push((c.assert_intact(), n.0.clone())));
    (values, names, pairs)
}

fn assert_sees_fresh(r: &mut Registry) {
    let new = "new".to_string();
    assert_eq!(observe(r), (vec![2], vec![new.clone()], vec![(2, new)]));
    assert_eq!(r.query::<&Checked>().count(), 1);
    let sum = r
        .query::<&Checked>()
        .each_async_reduce(|| 0, |acc, _, c| acc + c.assert_intact(), |a, b| a + b)
        .join(r);
    assert_eq!(sum, 2);
}

#[test]
fn assigning_a_new_world_rebuilds_every_cached_query() {
    for &workers in WORKERS {
        let mut r = warmed(workers);
        *r.world_mut() = fresh();
        assert!(r.query_state::<&Checked, ()>().is_none());
        assert_sees_fresh(&mut r);
    }
}

#[test]
fn swapping_the_world_out_rebuilds_every_cached_query() {
    for &workers in WORKERS {
        let mut r = warmed(workers);
        let mut other = fresh();
        mem::swap(r.world_mut(), &mut other);
        assert_sees_fresh(&mut r);
        // The old world, now outside, still holds the old entity.
        assert_eq!(other.len(), 1);
        // Swapping it back in rebuilds again.
        mem::swap(r.world_mut(), &mut other);
        let old = "old".to_string();
        assert_eq!(
            observe(&mut r),
            (vec![1], vec![old.clone()], vec![(1, old)])
        );
    }
}

#[test]
fn taking_the_world_rebuilds_every_cached_query() {
    for &workers in WORKERS {
        let mut r = warmed(workers);
        let old = mem::take(r.world_mut());
        assert_eq!(old.len(), 1);
        assert_eq!(observe(&mut r), (vec![], vec![], vec![]));
        assert_eq!(r.query::<&Checked>().count(), 0);
        // Refilled so that `Name` and `Checked` land on ids the old states had for other types.
        r.spawn((Name("new".into()), 3u8));
        r.spawn((Other(5, 5),));
        r.spawn((Checked::new(2), Name("new".into())));
        let new = "new".to_string();
        let names = vec![new.clone(), new.clone()];
        assert_eq!(observe(&mut r), (vec![2], names, vec![(2, new)]));
    }
}

#[test]
fn replacing_the_world_with_launches_in_flight_waits_and_rebuilds() {
    for &workers in WORKERS {
        let mut r = warmed(workers);
        r.spawn_batch((10..40).map(|i| (Checked::new(i), Name(format!("n{i}")))));
        // Writers, a reduction and a launch with commands, all in flight.
        r.query::<&mut Checked>().each_async(|_, c| {
            c.assert_intact();
            *c = Checked::new(c.value + 100);
        });
        let old_sum = r.query::<&Checked>().each_async_reduce(
            || 0,
            |acc, _, c| acc + c.assert_intact(),
            |a, b| a + b,
        );
        r.query::<&Name>().each_async_with(|e, n, ctx| {
            assert!(n.0.starts_with('n') || n.0 == "old");
            ctx.commands().insert(e, (Other(1, 1),));
        });
        *r.world_mut() = fresh();
        // The launches ran to the end on the old world (31 values, 1 and 10..40, each + 100).
        let expected_old: u64 = (1 + (10..40).sum::<u64>()) + 31 * 100;
        assert_eq!(old_sum.join(&mut r), expected_old);
        // Their commands name old entities; applied to the new world they are stale or land
        // on whatever entity has that id now, as any command with a reused handle would.
        r.execute_tasks();
        assert_sees_fresh(&mut r);
    }
}

#[test]
fn views_after_a_replacement_read_the_new_world() {
    for &workers in WORKERS {
        let mut r = warmed(workers);
        let target = r.spawn((Checked::new(9),));
        r.query::<&Name>()
            .views::<(View<Checked>,)>()
            .each_async_with(move |_, _, ctx| {
                let (checked,) = ctx.views();
                assert_eq!(checked.get(target).unwrap().assert_intact(), 9);
            });
        let mut other = fresh();
        mem::swap(r.world_mut(), &mut other);
        r.execute_tasks();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let out = seen.clone();
        r.query::<&Name>()
            .views::<(View<Checked>,)>()
            .each_async_with(move |e, n, ctx| {
                let (checked,) = ctx.views();
                let c = checked.get(e).unwrap();
                out.lock().unwrap().push((n.0.clone(), c.assert_intact()));
            });
        r.execute_tasks();
        assert_eq!(*seen.lock().unwrap(), vec![("new".to_string(), 2)]);
    }
}
