//! Work that conflicts with in-flight async work waits for it (an implicit sync point, counted);
//! disjoint work does not wait.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use freyr_registry::{Entity, Registry, Res, With};

#[derive(Clone, Copy)]
struct A(u32);
#[derive(Clone, Copy)]
struct B(u32);
struct Config(u32);

/// A latch the test opens; callbacks block on it (bounded, so a wrong wait fails instead of
/// hanging forever).
#[derive(Clone, Default)]
struct Gate(Arc<AtomicBool>, Arc<AtomicUsize>);

impl Gate {
    fn block(&self) {
        self.1.fetch_add(1, Ordering::SeqCst);
        let start = Instant::now();
        while !self.0.load(Ordering::Acquire) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "gate never opened: the main thread waited for disjoint work"
            );
            std::thread::yield_now();
        }
    }
    fn open(&self) {
        self.0.store(true, Ordering::Release);
    }
    fn entered(&self) -> usize {
        self.1.load(Ordering::SeqCst)
    }
    /// Waits until a task is blocked on the gate, then opens it from another thread 20 ms
    /// later, while the main thread goes on to block in a conflicting operation.
    fn open_once_entered(&self) -> std::thread::JoinHandle<()> {
        while self.entered() == 0 {
            std::thread::yield_now();
        }
        let gate = self.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            gate.open();
        })
    }
}

fn registry() -> (Registry, Vec<freyr_registry::Entity>) {
    let mut registry = Registry::with_workers(8);
    let es = registry.spawn_batch((0..1000u32).map(|i| (A(i), B(i))));
    (registry, es)
}

#[test]
fn disjoint_work_does_not_wait_for_in_flight_tasks() {
    let (mut registry, es) = registry();
    let gate = Gate::default();
    let g = gate.clone();
    // Writes A; every task blocks until the gate opens.
    registry.query::<&mut A>().each_async(move |_, a| {
        g.block();
        a.0 += 1;
    });
    // Disjoint: only B. If any of these waited for the A tasks it would hang until the gate's
    // timeout failed the tasks.
    registry.query::<&mut B>().each(|_, b| b.0 += 1);
    *registry.get_mut::<B>(es[1]).unwrap() = B(100);
    registry.query::<&B>().each_async(|_, _| {});
    assert_eq!(registry.get::<B>(es[0]).unwrap().0, 1);
    assert_eq!(registry.query::<&A>().count(), 1000); // counting never waits
    assert!(registry.contains(es[2]));
    assert_eq!(registry.implicit_syncs(), 0);
    assert_eq!(registry.in_flight(), 2);
    gate.open();
    registry.execute_tasks();
    assert_eq!(registry.implicit_syncs(), 0);
    let mut sum = 0u64;
    registry.query::<&A>().each(|_, a| sum += u64::from(a.0));
    assert_eq!(sum, (1..=1000u64).sum::<u64>());
}

#[test]
fn conflicting_queries_wait_and_see_the_finished_writes() {
    let (mut registry, _) = registry();
    let gate = Gate::default();
    let g = gate.clone();
    registry.query::<&mut A>().each_async(move |_, a| {
        g.block();
        a.0 += 1;
    });
    // Wait until the tasks are really running, then open the gate from another thread while
    // the main thread is blocked in the conflicting read.
    let opener = gate.open_once_entered();
    let mut sum = 0u64;
    registry.query::<&A>().each(|_, a| sum += u64::from(a.0));
    assert_eq!(sum, (1..=1000u64).sum::<u64>());
    assert_eq!(registry.implicit_syncs(), 1);
    // The launch is waited for once: later conflicts with it are not new sync points.
    registry.query::<&mut A>().each(|_, _| {});
    assert_eq!(registry.implicit_syncs(), 1);
    opener.join().unwrap();
    registry.execute_tasks();
    assert_eq!(registry.profile().implicit_syncs, 1);
}

#[test]
fn get_waits_only_for_writers_of_its_type() {
    let (mut registry, es) = registry();
    registry.query::<&A>().each_async(|_, _| {});
    assert_eq!(registry.get::<A>(es[3]).unwrap().0, 3); // reader vs reader: no wait
    assert_eq!(registry.implicit_syncs(), 0);
    registry.query::<&mut B>().each_async(|_, b| b.0 *= 2);
    assert_eq!(registry.get::<A>(es[3]).unwrap().0, 3); // B writer is disjoint
    assert_eq!(registry.implicit_syncs(), 0);
    assert_eq!(registry.get::<B>(es[3]).unwrap().0, 6); // waits for the B writer
    assert_eq!(registry.implicit_syncs(), 1);
    registry.execute_tasks();
}

#[test]
fn get_mut_waits_for_readers_and_writers() {
    let (mut registry, es) = registry();
    let seen = Arc::new(AtomicUsize::new(0));
    let s = Arc::clone(&seen);
    registry.query::<&A>().each_async(move |_, a| {
        std::thread::sleep(Duration::from_micros(1));
        s.fetch_add(a.0 as usize, Ordering::Relaxed);
    });
    registry.get_mut::<A>(es[0]).unwrap().0 = 5000;
    // The readers finished before the write.
    assert_eq!(seen.load(Ordering::Relaxed), (0..1000).sum::<usize>());
    assert_eq!(registry.implicit_syncs(), 1);
    registry.execute_tasks();
}

#[test]
fn structural_changes_wait_for_everything() {
    let (mut registry, es) = registry();
    let done = Arc::new(AtomicUsize::new(0));
    let d = Arc::clone(&done);
    registry.query::<&B>().each_async(move |_, _| {
        d.fetch_add(1, Ordering::Relaxed);
    });
    registry.spawn((A(0),));
    assert_eq!(done.load(Ordering::Relaxed), 1000);
    assert_eq!(registry.implicit_syncs(), 1);
    let d = Arc::clone(&done);
    registry.query::<&B>().each_async(move |_, _| {
        d.fetch_add(1, Ordering::Relaxed);
    });
    registry.despawn(es[0]).unwrap();
    assert_eq!(done.load(Ordering::Relaxed), 2000);
    assert_eq!(registry.implicit_syncs(), 2);
    registry.execute_tasks();
}

#[test]
fn resource_writes_wait_for_launches_reading_the_resource() {
    let (mut registry, _) = registry();
    registry.insert_resource(Config(3));
    registry.insert_resource(7u64);
    let total = Arc::new(AtomicUsize::new(0));
    let t = Arc::clone(&total);
    registry
        .query::<&A>()
        .views::<(Res<Config>,)>()
        .each_async_with(move |_, _, ctx| {
            let (config,) = ctx.views();
            t.fetch_add(config.0 as usize, Ordering::Relaxed);
        });
    // Reading the resource, or writing another one, does not wait.
    assert_eq!(registry.resource::<Config>().unwrap().0, 3);
    *registry.resource_mut::<u64>().unwrap() += 1;
    assert_eq!(registry.implicit_syncs(), 0);
    // Mutating the viewed resource waits.
    registry.resource_mut::<Config>().unwrap().0 = 4;
    assert_eq!(total.load(Ordering::Relaxed), 3000);
    assert_eq!(registry.implicit_syncs(), 1);
    registry.execute_tasks();
}

#[test]
fn world_access_waits_for_writers_only() {
    let (mut registry, _) = registry();
    registry.query::<&A>().each_async(|_, _| {});
    let _ = registry.world().len();
    assert_eq!(registry.implicit_syncs(), 0);
    registry.query::<&mut B>().each_async(|_, b| b.0 += 1);
    assert_eq!(registry.implicit_syncs(), 0);
    let _ = registry.world().len();
    assert_eq!(registry.implicit_syncs(), 1);
    registry.query::<&A>().each_async(|_, _| {});
    let _ = registry.world_mut();
    assert_eq!(registry.implicit_syncs(), 2);
    registry.execute_tasks();
}

/// A tag that splits the `A` entities into two archetypes.
struct Tagged;

/// 1,000 untagged and 600 tagged `(A, B)` entities, and an `each_async` writing `A` of the
/// tagged ones only, every task blocked until the returned gate opens.
fn tagged_writer_in_flight() -> (Registry, Vec<Entity>, Vec<Entity>, Gate) {
    let mut registry = Registry::with_workers(8);
    let plain = registry.spawn_batch((0..1000u32).map(|i| (A(i), B(i))));
    let tagged = registry.spawn_batch((0..600u32).map(|i| (A(i), B(i), Tagged)));
    let gate = Gate::default();
    let g = gate.clone();
    registry
        .query_filtered::<&mut A, With<Tagged>>()
        .each_async(move |_, a| {
            g.block();
            a.0 += 1;
        });
    (registry, plain, tagged, gate)
}

#[test]
fn queries_on_disjoint_archetypes_do_not_wait_even_for_the_same_type() {
    use freyr_registry::Without;
    let (mut registry, _, _, gate) = tagged_writer_in_flight();
    // The same type, in the other archetype: neither waits (a wait would hang until the gate's
    // timeout failed the blocked tasks).
    registry
        .query_filtered::<&mut A, Without<Tagged>>()
        .each(|_, a| a.0 += 10);
    registry
        .query_filtered::<(&A, &mut B), Without<Tagged>>()
        .each_async(|_, (a, b)| b.0 = a.0);
    assert_eq!(registry.implicit_syncs(), 0);
    assert_eq!(registry.in_flight(), 2);
    // `&A` over both archetypes overlaps the blocked writer: it waits, once the gate opens.
    let opener = gate.open_once_entered();
    let mut sum = 0u64;
    registry.query::<&A>().each(|_, a| sum += u64::from(a.0));
    assert_eq!(
        sum,
        (10..1010u64).sum::<u64>() + (1..=600u64).sum::<u64>(),
        "the tagged writes were finished before the read"
    );
    assert_eq!(registry.implicit_syncs(), 1);
    opener.join().unwrap();
    registry.execute_tasks();
    let mut copied = true;
    registry
        .query_filtered::<(&A, &B), Without<Tagged>>()
        .each(|_, (a, b)| copied &= a.0 == b.0);
    assert!(copied);
}

#[test]
fn a_component_view_reaches_every_archetype_so_it_waits() {
    use freyr_registry::{View, Without};
    let mut registry = Registry::with_workers(4);
    registry.spawn_batch((0..1000u32).map(|i| (A(i), B(i))));
    registry.spawn_batch((0..600u32).map(|i| (A(i), Tagged)));
    registry
        .query_filtered::<&mut A, With<Tagged>>()
        .each_async(|_, a| a.0 += 1);
    // Matches only untagged entities, but its `View<A>` view may look up any entity's `A`,
    // tagged ones included: it must wait for the writer.
    registry
        .query_filtered::<&B, Without<Tagged>>()
        .views::<View<A>>()
        .each_with(|_, _, _| {});
    assert_eq!(registry.implicit_syncs(), 1);
    registry.execute_tasks();
}

#[test]
fn get_and_get_mut_wait_only_for_work_on_their_entitys_archetype() {
    let (mut registry, plain, tagged, gate) = tagged_writer_in_flight();
    // An untagged entity's `A` is outside the writer's archetypes: no wait (a wait would hang
    // until the gate's timeout failed the blocked tasks).
    assert_eq!(registry.get::<A>(plain[7]).unwrap().0, 7);
    registry.get_mut::<A>(plain[8]).unwrap().0 = 80;
    assert_eq!(registry.implicit_syncs(), 0);
    // A tagged entity's `A` is the writer's: both wait.
    let opener = gate.open_once_entered();
    assert_eq!(registry.get::<A>(tagged[5]).unwrap().0, 6);
    assert_eq!(registry.implicit_syncs(), 1);
    registry.get_mut::<A>(tagged[6]).unwrap().0 = 60;
    assert_eq!(registry.get::<A>(plain[8]).unwrap().0, 80);
    opener.join().unwrap();
    registry.execute_tasks();
    assert_eq!(registry.get::<A>(tagged[6]).unwrap().0, 60);
}
