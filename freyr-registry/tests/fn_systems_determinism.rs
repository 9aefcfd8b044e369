//! Random sets of function systems — random component and resource access, random
//! `before`/`after`, commands, events, exclusive systems between them — give the same world at
//! 1, 2, 3, 8 and 16 workers, with and without shuffled starts, as at 1 worker in the graph's
//! own order.

use freyr::Component;
use freyr_registry::systems::{EventReader, EventWriter, Query, Res, ResMut, SystemConfig, Tick};
use freyr_registry::{Commands, Entity, Phase, Registry, StableHash, StableHasher, mix};
use proptest::prelude::*;

trait Val: Component + Copy {
    fn new(v: u64) -> Self;
    fn get(self) -> u64;
}

macro_rules! vals {
    ($($name:ident),*) => {$(
        #[derive(Clone, Copy, Debug)]
        struct $name(u64);
        impl Val for $name {
            fn new(v: u64) -> Self {
                $name(v)
            }
            fn get(self) -> u64 {
                self.0
            }
        }
        impl StableHash for $name {
            fn stable_hash(&self, h: &mut StableHasher) {
                self.0.stable_hash(h);
            }
        }
    )*};
}
vals!(C0, C1, C2, C3);

trait ResVal: Send + Sync + 'static {
    fn new(v: u64) -> Self;
    fn get(&self) -> u64;
    fn set(&mut self, v: u64);
}
macro_rules! res_vals {
    ($($name:ident),*) => {$(
        struct $name(u64);
        impl ResVal for $name {
            fn new(v: u64) -> Self {
                $name(v)
            }
            fn get(&self) -> u64 {
                self.0
            }
            fn set(&mut self, v: u64) {
                self.0 = v;
            }
        }
    )*};
}
res_vals!(R0, R1, R2);

#[derive(Clone, Debug)]
struct Ev(u64);

/// A system's shape: which component it writes and reads, which resource it touches and how,
/// whether it records commands and sends events.
#[derive(Clone, Debug)]
struct Spec {
    kind: u8,
    write: usize,
    read: usize,
    res: usize,
    res_write: bool,
    commands: bool,
    events: bool,
    salt: u64,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0u8..4,
        0usize..4,
        1usize..4,
        0usize..3,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(
            |(kind, write, off, res, res_write, commands, events, salt)| Spec {
                kind,
                write,
                read: (write + off) % 4,
                res,
                res_write,
                commands,
                events,
                salt,
            },
        )
}

/// Writes `W` from `R`, folds into resource `X` (read or written), records commands and events.
#[allow(clippy::type_complexity)]
fn writer<W: Val, R: Val, X: ResVal>(
    s: Spec,
) -> impl FnMut(Query<(&mut W, &R)>, ResMut<X>, Commands, EventWriter<Ev>) + Send + 'static {
    move |mut q: Query<(&mut W, &R)>,
          mut x: ResMut<X>,
          mut cmds: Commands,
          mut ev: EventWriter<Ev>| {
        let mut acc = x.get();
        q.each(|e: Entity, (w, r)| {
            *w = W::new(mix(w.get() ^ s.salt ^ r.get().rotate_left(7)));
            acc = mix(acc ^ w.get());
            if s.commands && w.get() % 11 == 0 {
                cmds.spawn((W::new(acc), R::new(acc >> 3)));
            }
            if s.commands && w.get() % 13 == 0 {
                cmds.despawn(e);
            }
            if s.events && w.get() % 5 == 0 {
                ev.send(Ev(acc));
            }
        });
        x.set(acc);
    }
}

/// Writes `W` from `R` and the value of resource `X`, read only.
fn res_reader<W: Val, R: Val, X: ResVal>(
    s: Spec,
) -> impl FnMut(Query<(&mut W, &R)>, Res<X>, Commands) + Send + 'static {
    move |mut q: Query<(&mut W, &R)>, x: Res<X>, mut cmds: Commands| {
        let base = x.get();
        q.each(|e: Entity, (w, r)| {
            *w = W::new(mix(w.get().wrapping_add(base) ^ r.get() ^ s.salt));
            if s.commands && w.get() % 17 == 0 {
                cmds.insert(e, (R::new(w.get()),));
            }
        });
    }
}

/// Folds the component `R` and the events it reads into resource `X`.
fn folder<R: Val, X: ResVal>(
    s: Spec,
) -> impl FnMut(Query<&R>, EventReader<Ev>, ResMut<X>, Tick) + Send + 'static {
    move |mut q: Query<&R>, mut events: EventReader<Ev>, mut x: ResMut<X>, t: Tick| {
        let mut acc = x.get() ^ s.salt ^ t.tick;
        q.each(|_, r| acc = mix(acc.wrapping_add(r.get())));
        for e in events.read() {
            acc = mix(acc ^ e.0);
        }
        x.set(acc);
    }
}

macro_rules! comp {
    ($i:expr, $T:ident, $body:expr) => {
        match $i {
            0 => {
                type $T = C0;
                $body
            }
            1 => {
                type $T = C1;
                $body
            }
            2 => {
                type $T = C2;
                $body
            }
            _ => {
                type $T = C3;
                $body
            }
        }
    };
}
macro_rules! res {
    ($i:expr, $T:ident, $body:expr) => {
        match $i {
            0 => {
                type $T = R0;
                $body
            }
            1 => {
                type $T = R1;
                $body
            }
            _ => {
                type $T = R2;
                $body
            }
        }
    };
}

fn add(registry: &mut Registry, config: SystemConfig, s: &Spec) {
    let s = s.clone();
    let result = match s.kind {
        0 | 1 if s.res_write => comp!(
            s.write,
            W,
            comp!(
                s.read,
                R,
                res!(s.res, X, {
                    registry.add_fn_system_with(Phase::Update, config, writer::<W, R, X>(s))
                })
            )
        ),
        0 | 1 => comp!(
            s.write,
            W,
            comp!(
                s.read,
                R,
                res!(s.res, X, {
                    registry.add_fn_system_with(Phase::Update, config, res_reader::<W, R, X>(s))
                })
            )
        ),
        2 => comp!(
            s.read,
            R,
            res!(s.res, X, {
                registry.add_fn_system_with(Phase::Update, config, folder::<R, X>(s))
            })
        ),
        _ => {
            // An exclusive system: a barrier that reads and writes through the registry.
            let salt = s.salt;
            registry.add_system(Phase::Update, move |r: &mut Registry, _: f32| {
                let v = r.resource::<R0>().unwrap().0;
                r.resource_mut::<R1>().unwrap().0 ^= mix(v ^ salt);
                r.spawn((C0(v), C2(salt)));
            });
            Ok(())
        }
    };
    result.unwrap();
}

/// The world after `ticks` updates of the systems `specs`, ordered by `order` (pairs `(a, b)`:
/// `a` before `b`), at `workers` workers, with shuffled starts from `shuffle`.
fn simulate(
    specs: &[Spec],
    order: &[(usize, usize)],
    workers: usize,
    shuffle: Option<u64>,
) -> (u64, [u64; 3], usize) {
    let mut registry = Registry::with_workers(workers);
    registry.shuffle_system_starts(shuffle);
    registry.insert_resource(R0::new(1));
    registry.insert_resource(R1::new(2));
    registry.insert_resource(R2::new(3));
    registry.add_event::<Ev>();
    for i in 0..300u64 {
        let e = registry.spawn((C0(mix(i)),));
        if i % 2 == 0 {
            registry.insert(e, (C1(i),)).unwrap();
        }
        if i % 3 != 0 {
            registry.insert(e, (C2(i * 7),)).unwrap();
        }
        if i % 5 < 3 {
            registry.insert(e, (C3(i ^ 0x55),)).unwrap();
        }
    }
    for (i, s) in specs.iter().enumerate() {
        let mut config = SystemConfig::new(format!("s{i}"));
        for &(a, b) in order {
            if a == i {
                config = config.before(format!("s{b}"));
            }
        }
        add(&mut registry, config, s);
    }
    for _ in 0..3 {
        registry.update(0.016);
    }
    let hash = registry.world_hash::<(C0, C1, C2, C3)>();
    let res = [
        registry.resource::<R0>().unwrap().0,
        registry.resource::<R1>().unwrap().0,
        registry.resource::<R2>().unwrap().0,
    ];
    (hash, res, registry.len())
}

/// `before` pairs that follow a random permutation (so they never form a cycle) and never
/// cross an exclusive system.
fn orders(specs: &[Spec], perm: &[usize], picks: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let segment = |i: usize| specs[..i].iter().filter(|s| s.kind == 3).count();
    let rank = |i: usize| perm.iter().position(|&p| p == i).unwrap();
    picks
        .iter()
        .map(|&(a, b)| (a % specs.len(), b % specs.len()))
        .filter(|&(a, b)| a != b && specs[a].kind != 3 && specs[b].kind != 3)
        .filter(|&(a, b)| segment(a) == segment(b))
        .map(|(a, b)| if rank(a) < rank(b) { (a, b) } else { (b, a) })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_worker_count_and_shuffle_gives_the_world_of_one_worker(
        specs in prop::collection::vec(spec(), 1..14),
        perm_seed in any::<u64>(),
        picks in prop::collection::vec((0usize..64, 0usize..64), 0..10),
        shuffle in any::<u64>(),
    ) {
        let mut perm: Vec<usize> = (0..specs.len()).collect();
        let mut state = perm_seed;
        for i in (1..perm.len()).rev() {
            state = mix(state);
            perm.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let order = orders(&specs, &perm, &picks);
        let reference = simulate(&specs, &order, 1, None);
        for workers in [1, 2, 3, 8, 16] {
            prop_assert_eq!(simulate(&specs, &order, workers, None), reference, "{} workers", workers);
            prop_assert_eq!(
                simulate(&specs, &order, workers, Some(shuffle)),
                reference,
                "{} workers, shuffled", workers
            );
        }
    }
}

/// The property's oracle is not vacuous: two conflicting systems swapped by `before` give a
/// different world than in registration order.
#[test]
fn the_declared_order_matters_to_the_world() {
    let s = |salt| Spec {
        kind: 0,
        write: 0,
        read: 1,
        res: 0,
        res_write: true,
        commands: true,
        events: true,
        salt,
    };
    let specs = [s(1), s(2)];
    let plain = simulate(&specs, &[], 2, None);
    let swapped = simulate(&specs, &[(1, 0)], 2, None);
    assert_ne!(plain, swapped);
    assert_eq!(swapped, simulate(&specs, &[(1, 0)], 1, None));
}
