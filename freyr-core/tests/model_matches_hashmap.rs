//! Model-based property test: random sequences of structural operations (spawn, batch spawn,
//! despawn, insert, remove, get, get_mut, clear, command-buffer apply), including stale handles,
//! pending handles and zero-sized tags, are checked after every step against a plain `HashMap`
//! model. Drop tallies prove every component value is dropped exactly once, and the chunk
//! invariant (all chunks but the last full, slots locating their rows) is checked every step.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use freyr_core::{Bundle, CommandBuffer, ComponentError, Entity, NoSuchEntity, World};
use proptest::prelude::*;

thread_local! {
    /// Drop count per tracked value id.
    static DROPS: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    /// Drops of the zero-sized tag.
    static TAG_DROPS: Cell<u64> = const { Cell::new(0) };
}

fn new_id() -> u64 {
    DROPS.with(|d| {
        let mut d = d.borrow_mut();
        d.push(0);
        (d.len() - 1) as u64
    })
}

/// A tracked component: its id's drop count is bumped on drop.
#[derive(Debug)]
struct A(u64);
impl Drop for A {
    fn drop(&mut self) {
        DROPS.with(|d| d.borrow_mut()[self.0 as usize] += 1);
    }
}

/// A tracked component with a heap allocation (Miri sees leaks and double frees).
#[derive(Debug)]
struct B(u64, String);
impl Drop for B {
    fn drop(&mut self) {
        assert_eq!(self.1, format!("b{}", self.0), "corrupted value");
        DROPS.with(|d| d.borrow_mut()[self.0 as usize] += 1);
    }
}

/// A plain `Copy` component.
#[derive(Copy, Clone, Debug, PartialEq)]
struct C(u64);

/// A zero-sized tag with a `Drop`.
#[derive(Debug)]
struct Tag;
impl Drop for Tag {
    fn drop(&mut self) {
        TAG_DROPS.with(|t| t.set(t.get() + 1));
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Kind {
    A,
    B,
    C,
    Tag,
}

/// Model of one entity: kind -> tracked id (A, B), value (C), or 0 (Tag).
type Row = HashMap<Kind, u64>;

struct Counter {
    next_c: u64,
    tags_made: u64,
}

/// Bundle shapes the test uses, with how to build them and what they contain.
trait Shape: Bundle + Sized {
    const KINDS: &'static [Kind];
    fn make(counter: &mut Counter) -> (Self, Row);
}

fn a(c: &mut Counter, row: &mut Row) -> A {
    let _ = c;
    let id = new_id();
    row.insert(Kind::A, id);
    A(id)
}
fn b(c: &mut Counter, row: &mut Row) -> B {
    let _ = c;
    let id = new_id();
    row.insert(Kind::B, id);
    B(id, format!("b{id}"))
}
fn cc(c: &mut Counter, row: &mut Row) -> C {
    c.next_c += 1;
    row.insert(Kind::C, c.next_c);
    C(c.next_c)
}
fn tag(c: &mut Counter, row: &mut Row) -> Tag {
    c.tags_made += 1;
    row.insert(Kind::Tag, 0);
    Tag
}

macro_rules! shape {
    ($ty:ty, [$($kind:ident),*], |$c:ident, $r:ident| $make:expr) => {
        impl Shape for $ty {
            const KINDS: &'static [Kind] = &[$(Kind::$kind),*];
            fn make($c: &mut Counter) -> (Self, Row) {
                let mut $r = Row::new();
                let value = $make;
                (value, $r)
            }
        }
    };
}

shape!((), [], |c, r| {
    let _ = (c, &mut r);
});
shape!((A,), [A], |c, r| (a(c, &mut r),));
shape!((B,), [B], |c, r| (b(c, &mut r),));
shape!((Tag,), [Tag], |c, r| (tag(c, &mut r),));
shape!((A, B), [A, B], |c, r| (a(c, &mut r), b(c, &mut r)));
shape!((C, Tag), [C, Tag], |c, r| (cc(c, &mut r), tag(c, &mut r)));
shape!((A, B, Tag, C), [A, B, Tag, C], |c, r| (
    a(c, &mut r),
    b(c, &mut r),
    tag(c, &mut r),
    cc(c, &mut r)
));
shape!((B, C, A), [B, C, A], |c, r| (
    b(c, &mut r),
    cc(c, &mut r),
    a(c, &mut r)
));

const SHAPES: usize = 8;

/// Calls `$f::<Shape>($args)` for shape number `$s`.
macro_rules! dispatch {
    ($s:expr, $f:ident ( $($arg:expr),* )) => {
        match $s % SHAPES {
            0 => $f::<()>($($arg),*),
            1 => $f::<(A,)>($($arg),*),
            2 => $f::<(B,)>($($arg),*),
            3 => $f::<(Tag,)>($($arg),*),
            4 => $f::<(A, B)>($($arg),*),
            5 => $f::<(C, Tag)>($($arg),*),
            6 => $f::<(A, B, Tag, C)>($($arg),*),
            _ => $f::<(B, C, A)>($($arg),*),
        }
    };
}

#[derive(Clone, Debug)]
enum Target {
    /// Index into every handle ever seen (live or stale).
    Pick(usize),
    /// Pending `k` of the current buffer (falls back to a pick if none exists yet).
    Pending(usize),
}

#[derive(Clone, Debug)]
enum Cmd {
    Spawn(usize),
    Despawn(Target),
    Insert(Target, usize),
    Remove(Target, usize),
}

#[derive(Clone, Debug)]
enum Op {
    Spawn(usize),
    SpawnBatch(usize, usize, bool),
    Despawn(usize),
    Insert(usize, usize),
    Remove(usize, usize),
    GetMut(usize),
    Clear,
    Commands(Vec<Cmd>),
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        3 => any::<usize>().prop_map(Target::Pick),
        1 => (0usize..4).prop_map(Target::Pending),
    ]
}

fn cmd() -> impl Strategy<Value = Cmd> {
    prop_oneof![
        (0..SHAPES).prop_map(Cmd::Spawn),
        target().prop_map(Cmd::Despawn),
        (target(), 0..SHAPES).prop_map(|(t, s)| Cmd::Insert(t, s)),
        (target(), 0..SHAPES).prop_map(|(t, s)| Cmd::Remove(t, s)),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    // Mostly small batches; a few cross a chunk boundary (512 rows).
    let batch = if cfg!(miri) {
        (0usize..40).boxed()
    } else {
        prop_oneof![8 => 0usize..40, 1 => 500usize..600].boxed()
    };
    prop_oneof![
        6 => (0..SHAPES).prop_map(Op::Spawn),
        2 => (batch, 0..SHAPES, any::<bool>()).prop_map(|(n, s, exact)| Op::SpawnBatch(n, s, exact)),
        5 => any::<usize>().prop_map(Op::Despawn),
        4 => (any::<usize>(), 0..SHAPES).prop_map(|(e, s)| Op::Insert(e, s)),
        4 => (any::<usize>(), 0..SHAPES).prop_map(|(e, s)| Op::Remove(e, s)),
        2 => any::<usize>().prop_map(Op::GetMut),
        1 => Just(Op::Clear),
        2 => prop::collection::vec(cmd(), 0..8).prop_map(Op::Commands),
    ]
}

struct Harness {
    world: World,
    model: HashMap<Entity, Row>,
    /// Every handle ever returned (live and stale), in order.
    seen: Vec<Entity>,
    counter: Counter,
}

impl Harness {
    fn pick(&self, i: usize) -> Option<Entity> {
        (!self.seen.is_empty()).then(|| self.seen[i % self.seen.len()])
    }

    fn check(&self) {
        self.world.check_invariants();
        assert_eq!(self.world.len(), self.model.len());
        for (&e, row) in &self.model {
            assert!(self.world.contains(e));
            let get_a = self.world.get::<A>(e).map(|v| v.0);
            assert_eq!(get_a.ok(), row.get(&Kind::A).copied(), "A of {e:?}");
            let get_b = self.world.get::<B>(e).map(|v| v.0);
            assert_eq!(get_b.ok(), row.get(&Kind::B).copied(), "B of {e:?}");
            let get_c = self.world.get::<C>(e).map(|v| v.0);
            assert_eq!(get_c.ok(), row.get(&Kind::C).copied(), "C of {e:?}");
            assert_eq!(
                self.world.get::<Tag>(e).is_ok(),
                row.contains_key(&Kind::Tag)
            );
            if !row.contains_key(&Kind::A) {
                assert!(
                    matches!(self.world.get::<A>(e), Err(ComponentError::MissingComponent { entity, component: n }) if entity == e && n.ends_with("::A"))
                );
            }
        }
        for &e in &self.seen {
            if !self.model.contains_key(&e) {
                assert!(!self.world.contains(e));
                assert_eq!(
                    self.world.get::<C>(e).err(),
                    Some(ComponentError::NoSuchEntity(e))
                );
                assert_eq!(self.world.entity_location(e), None);
            }
        }
        // Exactly-once drops: live tracked ids not dropped yet, every other id dropped once.
        let live: std::collections::HashSet<u64> = self
            .model
            .values()
            .flat_map(|row| [row.get(&Kind::A), row.get(&Kind::B)])
            .flatten()
            .copied()
            .collect();
        DROPS.with(|d| {
            for (id, &count) in d.borrow().iter().enumerate() {
                let expected = u32::from(!live.contains(&(id as u64)));
                assert_eq!(count, expected, "value {id} dropped {count} times");
            }
        });
        let live_tags = self
            .model
            .values()
            .filter(|r| r.contains_key(&Kind::Tag))
            .count() as u64;
        assert_eq!(
            TAG_DROPS.with(Cell::get),
            self.counter.tags_made - live_tags
        );
    }
}

fn spawn<S: Shape>(h: &mut Harness) {
    let (bundle, row) = S::make(&mut h.counter);
    let e = h.world.spawn(bundle);
    assert!(h.model.insert(e, row).is_none());
    h.seen.push(e);
}

fn spawn_batch<S: Shape>(h: &mut Harness, n: usize, exact: bool) {
    let made: Vec<(S, Row)> = (0..n).map(|_| S::make(&mut h.counter)).collect();
    let (bundles, rows): (Vec<S>, Vec<Row>) = made.into_iter().unzip();
    let ids = if exact {
        h.world.spawn_batch(bundles)
    } else {
        h.world.spawn_batch(bundles.into_iter().filter(|_| true))
    };
    assert_eq!(ids.len(), n);
    for (e, row) in ids.into_iter().zip(rows) {
        assert!(h.model.insert(e, row).is_none());
        h.seen.push(e);
    }
}

fn insert_model<S: Shape>(model: &mut HashMap<Entity, Row>, e: Entity, row: Row) -> bool {
    match model.get_mut(&e) {
        Some(current) => {
            current.extend(row);
            true
        }
        None => false,
    }
}

fn insert<S: Shape>(h: &mut Harness, e: Entity) {
    let (bundle, row) = S::make(&mut h.counter);
    let result = h.world.insert(e, bundle);
    let live = insert_model::<S>(&mut h.model, e, row);
    assert_eq!(result, if live { Ok(()) } else { Err(NoSuchEntity(e)) });
}

/// What removing `S` from `e` does in the model.
fn remove_model<S: Shape>(
    model: &mut HashMap<Entity, Row>,
    e: Entity,
) -> Result<Row, ComponentError> {
    let row = model.get_mut(&e).ok_or(ComponentError::NoSuchEntity(e))?;
    if S::KINDS.iter().any(|k| !row.contains_key(k)) {
        return Err(ComponentError::MissingComponent {
            entity: e,
            component: "?",
        });
    }
    Ok(S::KINDS
        .iter()
        .map(|k| (*k, row.remove(k).unwrap()))
        .collect())
}

fn remove<S: Shape>(h: &mut Harness, e: Entity) {
    let got = h.world.remove::<S>(e);
    let expected = remove_model::<S>(&mut h.model, e);
    match (got, expected) {
        (Ok(bundle), Ok(_)) => drop(bundle),
        (Err(ComponentError::NoSuchEntity(a)), Err(ComponentError::NoSuchEntity(b))) => {
            assert_eq!((a, b), (e, e));
        }
        (
            Err(ComponentError::MissingComponent { entity: a, .. }),
            Err(ComponentError::MissingComponent { entity: b, .. }),
        ) => assert_eq!((a, b), (e, e)),
        (got, expected) => panic!("remove: got {:?}, model {expected:?}", got.map(|_| ())),
    }
}

fn record_spawn<S: Shape>(
    h: &mut Harness,
    buffer: &mut CommandBuffer,
    rows: &mut Vec<Row>,
) -> Entity {
    let (bundle, row) = S::make(&mut h.counter);
    rows.push(row);
    buffer.spawn(bundle)
}

fn record_insert<S: Shape>(
    h: &mut Harness,
    buffer: &mut CommandBuffer,
    e: Entity,
    rows: &mut Vec<Row>,
) {
    let (bundle, row) = S::make(&mut h.counter);
    rows.push(row);
    buffer.insert(e, bundle);
}

fn record_remove<S: Shape>(buffer: &mut CommandBuffer, e: Entity) {
    buffer.remove::<S>(e);
}

fn model_remove<S: Shape>(
    model: &mut HashMap<Entity, Row>,
    e: Entity,
) -> Result<Row, ComponentError> {
    remove_model::<S>(model, e)
}

fn commands(h: &mut Harness, cmds: &[Cmd]) {
    let mut buffer = CommandBuffer::new();
    let mut pending_handles = Vec::new();
    let mut rows = Vec::new(); // values made for spawn/insert, in record order
    // Resolved later: (command, target pending index or real entity)
    enum T {
        Real(Option<Entity>),
        Pending(usize),
    }
    let mut plan = Vec::new();
    for cmd in cmds {
        let resolve = |t: &Target, h: &Harness| match t {
            Target::Pending(k) if !pending_handles.is_empty() => {
                let k = k % pending_handles.len();
                (pending_handles[k], T::Pending(k))
            }
            Target::Pending(k) | Target::Pick(k) => {
                let e = h.pick(*k);
                // A never-spawned handle when nothing exists yet.
                let e = e.unwrap_or_else(|| Entity::from_bits((1u64 << 32) | 77).unwrap());
                (e, T::Real(Some(e)))
            }
        };
        match cmd {
            Cmd::Spawn(s) => {
                let p = dispatch!(*s, record_spawn(h, &mut buffer, &mut rows));
                pending_handles.push(p);
                plan.push((cmd.clone(), T::Real(None)));
            }
            Cmd::Despawn(t) => {
                let (e, t) = resolve(t, h);
                buffer.despawn(e);
                plan.push((cmd.clone(), t));
            }
            Cmd::Insert(t, s) => {
                let (e, t) = resolve(t, h);
                dispatch!(*s, record_insert(h, &mut buffer, e, &mut rows));
                plan.push((cmd.clone(), t));
            }
            Cmd::Remove(t, s) => {
                let (e, t) = resolve(t, h);
                dispatch!(*s, record_remove(&mut buffer, e));
                plan.push((cmd.clone(), t));
            }
        }
    }
    assert_eq!(buffer.len(), cmds.len());
    let report = buffer.apply(&mut h.world);
    assert!(buffer.is_empty());
    assert_eq!(report.spawned.len(), pending_handles.len());
    // Replay the plan on the model.
    let (mut applied, mut stale, mut missing) = (0, 0, 0);
    let mut rows = rows.into_iter();
    let mut spawned = report.spawned.iter();
    for (cmd, t) in plan {
        let e = match t {
            T::Real(e) => e,
            T::Pending(k) => Some(report.spawned[k]),
        };
        match cmd {
            Cmd::Spawn(_) => {
                let e = *spawned.next().unwrap();
                assert!(h.model.insert(e, rows.next().unwrap()).is_none());
                h.seen.push(e);
                applied += 1;
            }
            Cmd::Despawn(_) => {
                if h.model.remove(&e.unwrap()).is_some() {
                    applied += 1;
                } else {
                    stale += 1;
                }
            }
            Cmd::Insert(_, s) => {
                let row = rows.next().unwrap();
                if dispatch!(s, insert_model(&mut h.model, e.unwrap(), row)) {
                    applied += 1;
                } else {
                    stale += 1;
                }
            }
            Cmd::Remove(_, s) => match dispatch!(s, model_remove(&mut h.model, e.unwrap())) {
                Ok(_) => applied += 1,
                Err(ComponentError::NoSuchEntity(_)) => stale += 1,
                Err(ComponentError::MissingComponent { .. }) => missing += 1,
            },
        }
    }
    assert_eq!(
        (report.applied, report.skipped_stale, report.skipped_missing),
        (applied, stale, missing)
    );
}

fn run(ops: Vec<Op>) {
    DROPS.with(|d| d.borrow_mut().clear());
    TAG_DROPS.with(|t| t.set(0));
    let mut h = Harness {
        world: World::new(),
        model: HashMap::new(),
        seen: Vec::new(),
        counter: Counter {
            next_c: 0,
            tags_made: 0,
        },
    };
    for op in ops {
        match op {
            Op::Spawn(s) => dispatch!(s, spawn(&mut h)),
            Op::SpawnBatch(n, s, exact) => dispatch!(s, spawn_batch(&mut h, n, exact)),
            Op::Despawn(i) => {
                if let Some(e) = h.pick(i) {
                    let expected = if h.model.remove(&e).is_some() {
                        Ok(())
                    } else {
                        Err(NoSuchEntity(e))
                    };
                    assert_eq!(h.world.despawn(e), expected);
                }
            }
            Op::Insert(i, s) => {
                if let Some(e) = h.pick(i) {
                    dispatch!(s, insert(&mut h, e));
                }
            }
            Op::Remove(i, s) => {
                if let Some(e) = h.pick(i) {
                    dispatch!(s, remove(&mut h, e));
                }
            }
            Op::GetMut(i) => {
                if let Some(e) = h.pick(i) {
                    match (
                        h.world.get_mut::<C>(e),
                        h.model.get_mut(&e).and_then(|r| r.get_mut(&Kind::C)),
                    ) {
                        (Ok(c), Some(m)) => {
                            c.0 += 1000;
                            *m += 1000;
                        }
                        (Err(_), None) => {}
                        (got, model) => panic!("get_mut: {got:?} vs {model:?}"),
                    }
                }
            }
            Op::Clear => {
                h.world.clear();
                h.model.clear();
            }
            Op::Commands(cmds) => commands(&mut h, &cmds),
        }
        h.check();
    }
    let tags_made = h.counter.tags_made;
    drop(h.world);
    // World drop drops everything that was still alive, exactly once.
    DROPS.with(|d| assert!(d.borrow().iter().all(|&c| c == 1)));
    assert_eq!(TAG_DROPS.with(Cell::get), tags_made);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 6 } else { 2000 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn world_matches_hashmap_model(ops in prop::collection::vec(op(), 1..if cfg!(miri) { 12 } else { 48 })) {
        run(ops);
    }
}
