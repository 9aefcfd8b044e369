//! Soak: random mixes of queries (`each`, `each_with`, `each_async`, `each_async_with`,
//! reductions, views), commands (spawn / despawn / insert / remove), direct world operations,
//! deferred destruction and planned callback panics, for thousands of ticks on 8 workers. After
//! every sync point the world is checked against its structural invariants and against a shadow
//! model of every entity's components.
//!
//! Ignored by default. `.ci/run` runs it reduced:
//! `FREYR_SOAK_TICKS=300 cargo test --workspace --test soak -- --ignored` (what CI runs, on the
//! test build; add `--release` for the default 10,000 ticks).
//! Knobs: `FREYR_SOAK_TICKS` (default 10,000), `FREYR_SOAK_SEED` (default fixed). On failure the
//! seed, tick and recent operations are printed; rerun with that seed to reproduce.
//!
//! The shadow model keys entities by an immutable `Serial` component, so it can predict the
//! effect of commands without predicting entity ids; every callback decision is a pure function
//! of (serial, operation nonce, the entity's own components), evaluated identically by the real
//! callback and by the model. Where a panic cuts a task short, the model learns the task layout
//! from a read-only `each_chunk` over `Serial` (which never conflicts with in-flight work), cut
//! into the launch's `rows_per_task` pieces (whole chunks, 64 or 100 rows, chosen at random).

use std::collections::{HashMap, HashSet};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use freyr_core::{CHUNK_CAPACITY, World};
use freyr_registry::{Entity, Phase, QueryFilter, Registry, View, With, Without};

// ---- components -------------------------------------------------------------------------------

/// Identity of an entity for the model; never written after spawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Serial(u64);
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Val(u64);
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Inc(u64);
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tag;
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Age(u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Link(Entity);
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen(u64);

const WORKERS: usize = 8;
const START: usize = 6_000;
const LOW: usize = 4_000;
const HIGH: usize = 9_000;
const PANIC_MSG: &str = "soak: planned panic";

// ---- randomness -------------------------------------------------------------------------------

/// Two keys folded into one word, then [`freyr::mix`].
fn mix(a: u64, b: u64) -> u64 {
    freyr::mix(a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// The driver's RNG (SplitMix64): seeded, never time-based.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0, 0)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

/// Whether the callback for `serial` in the operation `nonce` panics (`one_in` 0 = never).
fn planned_panic(serial: u64, nonce: u64, one_in: u64) -> bool {
    one_in != 0 && mix(serial, nonce ^ 0xDEAD).is_multiple_of(one_in)
}

// ---- the model --------------------------------------------------------------------------------

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Row {
    val: Option<u64>,
    inc: Option<u64>,
    tag: bool,
    age: Option<u32>,
    link: Option<(Entity, u64)>,
}

/// A command as the model records it: same target handles as the real one.
#[derive(Debug)]
enum Cmd {
    Spawn(u64, Row),
    Despawn(Entity),
    TagOn(Entity),
    TagOff(Entity),
    SetInc(Entity, u64),
    RemoveInc(Entity),
    SetLink(Entity, Entity),
    RemoveLink(Entity),
    SetAge(Entity),
}

#[derive(Default)]
struct Model {
    rows: HashMap<u64, Row>,
    entity_of: HashMap<u64, Entity>,
    serial_of: HashMap<Entity, u64>,
    /// Commands of launches since the last sync point, in launch order.
    pending: Vec<Cmd>,
    destroy: Vec<Entity>,
    /// Some async callback panicked since the last sync point (the sync point re-raises).
    async_panic: bool,
    /// Handles that were live once and are dead now.
    graveyard: Vec<Entity>,
}

impl Model {
    fn live(&self, e: Entity) -> Option<u64> {
        self.serial_of.get(&e).copied()
    }

    fn kill(&mut self, e: Entity) -> bool {
        match self.serial_of.remove(&e) {
            Some(s) => {
                self.entity_of.remove(&s);
                self.rows.remove(&s);
                self.graveyard.push(e);
                true
            }
            None => false,
        }
    }

    fn row_mut(&mut self, e: Entity) -> Option<&mut Row> {
        let s = self.live(e)?;
        self.rows.get_mut(&s)
    }

    /// The sync point: commands in launch order (stale ones skipped), then destructions.
    /// Spawned entities get their handles from the world afterwards ([`Model::relink`]).
    fn apply(&mut self) {
        for cmd in core::mem::take(&mut self.pending) {
            match cmd {
                Cmd::Spawn(serial, row) => {
                    assert!(
                        self.rows.insert(serial, row).is_none(),
                        "model: serial collision {serial:#x} (change the seed)"
                    );
                }
                Cmd::Despawn(e) => {
                    self.kill(e);
                }
                Cmd::TagOn(e) => {
                    if let Some(r) = self.row_mut(e) {
                        r.tag = true;
                    }
                }
                Cmd::TagOff(e) => {
                    if let Some(r) = self.row_mut(e) {
                        r.tag = false;
                    }
                }
                Cmd::SetInc(e, v) => {
                    if let Some(r) = self.row_mut(e) {
                        r.inc = Some(v);
                    }
                }
                Cmd::RemoveInc(e) => {
                    if let Some(r) = self.row_mut(e) {
                        r.inc = None;
                    }
                }
                Cmd::SetLink(e, target) => {
                    if let Some(r) = self.row_mut(e) {
                        r.link = Some((target, 0));
                    }
                }
                Cmd::RemoveLink(e) => {
                    if let Some(r) = self.row_mut(e) {
                        r.link = None;
                    }
                }
                Cmd::SetAge(e) => {
                    if let Some(r) = self.row_mut(e) {
                        r.age = Some(0);
                    }
                }
            }
        }
        for e in core::mem::take(&mut self.destroy) {
            self.kill(e);
        }
        self.async_panic = false;
    }

    /// Learns the handles of entities spawned by commands, from the world.
    fn relink(&mut self, registry: &mut Registry) {
        let mut pairs = Vec::with_capacity(self.rows.len());
        registry
            .query::<(Entity, &Serial)>()
            .each(|_, (e, s)| pairs.push((e, s.0)));
        for (e, s) in pairs {
            if let Some(&old) = self.entity_of.get(&s) {
                assert_eq!(old, e, "entity of serial {s:#x} changed handle");
            } else {
                assert!(
                    self.rows.contains_key(&s),
                    "world has unknown serial {s:#x}"
                );
                assert!(
                    self.serial_of.insert(e, s).is_none(),
                    "handle {e:?} given to two serials"
                );
                self.entity_of.insert(s, e);
            }
        }
    }

    fn sample_handle(&self, rng: &mut Rng) -> Option<Entity> {
        if !self.graveyard.is_empty() && rng.chance(5) {
            let i = rng.below(self.graveyard.len() as u64) as usize;
            return Some(self.graveyard[i]);
        }
        if self.entity_of.is_empty() {
            return None;
        }
        // Hash-map iteration order differs between runs; the minimum of a keyed hash does not.
        let probe = rng.next_u64();
        self.entity_of
            .iter()
            .map(|(&s, &e)| (mix(s, probe), e))
            .min()
            .map(|(_, e)| e)
    }
}

// ---- operations shared by the real callbacks and the model ------------------------------------

/// The decision of the life-cycle callback for one entity.
#[derive(Clone, Copy, Debug)]
enum Act {
    Nothing,
    DespawnSelf,
    Spawn { serial: u64, val: u64, tag: bool },
    TagSelf,
    RemoveInc,
    SetInc(u64),
    LinkTo(Entity),
    Unlink,
    KillTarget(Entity),
    StartAge,
}

#[derive(Clone, Copy)]
struct LifeParams {
    nonce: u64,
    /// 1 in `despawn` rolls despawns, 1 in `spawn` spawns.
    despawn: u64,
    spawn: u64,
    panic: u64,
}

fn life_act(
    p: &LifeParams,
    serial: u64,
    val: Option<u64>,
    link: Option<Entity>,
    targets: &[Entity],
) -> Act {
    let r = mix(serial, p.nonce);
    if r.is_multiple_of(p.despawn) {
        return Act::DespawnSelf;
    }
    if (r >> 8).is_multiple_of(p.spawn) {
        return Act::Spawn {
            serial: mix(serial ^ 0x5EED, p.nonce),
            val: val.unwrap_or(r >> 3),
            tag: r & (1 << 20) != 0,
        };
    }
    match (r >> 24) % 40 {
        0 => Act::TagSelf,
        1 => Act::RemoveInc,
        2 => Act::SetInc(r >> 40),
        3 if !targets.is_empty() => Act::LinkTo(targets[(r >> 32) as usize % targets.len()]),
        4 => Act::Unlink,
        5 => link.map_or(Act::Nothing, Act::KillTarget),
        6 => Act::StartAge,
        _ => Act::Nothing,
    }
}

/// The real command recording for `act` (the model's twin is [`model_cmds`]).
fn record(act: Act, e: Entity, cmds: &mut freyr_registry::Commands<'_>) {
    match act {
        Act::Nothing => {}
        Act::DespawnSelf => cmds.despawn(e),
        Act::Spawn { serial, val, tag } => {
            let child = cmds.spawn((Serial(serial), Val(val), Inc(serial >> 50)));
            if tag {
                // Through the pending handle of this buffer.
                cmds.insert(child, (Tag,));
            }
        }
        Act::TagSelf => cmds.insert(e, (Tag,)),
        Act::RemoveInc => cmds.remove::<(Inc,)>(e),
        Act::SetInc(v) => cmds.insert(e, (Inc(v),)),
        Act::LinkTo(t) => cmds.insert(e, (Link(t), Seen(0))),
        Act::Unlink => cmds.remove::<(Link, Seen)>(e),
        Act::KillTarget(t) => cmds.despawn(t),
        Act::StartAge => cmds.insert(e, (Age(0),)),
    }
}

fn model_cmds(act: Act, e: Entity, out: &mut Vec<Cmd>) {
    match act {
        Act::Nothing => {}
        Act::DespawnSelf => out.push(Cmd::Despawn(e)),
        Act::Spawn { serial, val, tag } => out.push(Cmd::Spawn(
            serial,
            Row {
                val: Some(val),
                inc: Some(serial >> 50),
                tag,
                ..Row::default()
            },
        )),
        Act::TagSelf => out.push(Cmd::TagOn(e)),
        Act::RemoveInc => out.push(Cmd::RemoveInc(e)),
        Act::SetInc(v) => out.push(Cmd::SetInc(e, v)),
        Act::LinkTo(t) => out.push(Cmd::SetLink(e, t)),
        Act::Unlink => out.push(Cmd::RemoveLink(e)),
        Act::KillTarget(t) => out.push(Cmd::Despawn(t)),
        Act::StartAge => out.push(Cmd::SetAge(e)),
    }
}

/// The serials of the entities matching `F`, in the pieces an `each_async` launch with
/// `rows_per_task(rows)` runs as tasks, in the order the query visits them: every chunk of
/// `len` rows cut into `len.div_ceil(rows)` parts of near-equal length (part `k` holds rows
/// `k * len / parts .. (k + 1) * len / parts`). Reads only `Serial`, which nothing writes, so it
/// never waits for in-flight work.
fn layout<F: QueryFilter>(registry: &mut Registry, rows: usize) -> Vec<Vec<u64>> {
    let mut pieces = Vec::new();
    registry
        .query_filtered::<&Serial, F>()
        .each_chunk(|_, serials| {
            let len = serials.len();
            let parts = len.div_ceil(rows);
            pieces.extend((0..parts).map(|k| {
                serials[k * len / parts..(k + 1) * len / parts]
                    .iter()
                    .map(|s| s.0)
                    .collect()
            }))
        });
    pieces
}

fn is_planned(payload: &(dyn std::any::Any + Send)) -> bool {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.starts_with(PANIC_MSG))
        .or_else(|| {
            payload
                .downcast_ref::<String>()
                .map(|s| s.starts_with(PANIC_MSG))
        })
        .unwrap_or(false)
}

// ---- invariants -------------------------------------------------------------------------------

/// Structural invariants of the world, through its public API.
fn check_structure(world: &World) {
    world.check_invariants();
    let serial_id = world.component_id::<Serial>();
    let mut total = 0;
    let mut seen = HashSet::with_capacity(world.len());
    for archetype in world.archetypes() {
        total += archetype.len();
        assert_eq!(
            archetype.chunk_count(),
            archetype.len().div_ceil(CHUNK_CAPACITY),
            "archetype {:?}: chunk count",
            archetype.id()
        );
        let chunks = archetype.chunk_count();
        let mut rows = 0;
        for (c, chunk) in archetype.chunks().enumerate() {
            assert!(!chunk.is_empty(), "empty chunk listed");
            if c + 1 < chunks {
                assert_eq!(chunk.len(), CHUNK_CAPACITY, "non-last chunk not full");
            }
            rows += chunk.len();
            if let Some(id) = serial_id.filter(|&id| archetype.has(id)) {
                assert_eq!(
                    chunk.column::<Serial>(id).map(<[_]>::len),
                    Some(chunk.len())
                );
            }
            for (row, &e) in chunk.entities().iter().enumerate() {
                assert!(world.contains(e), "{e:?} stored but not live");
                assert!(seen.insert(e), "{e:?} stored twice");
                assert_eq!(
                    world.entity_location(e),
                    Some((archetype.id(), c, row)),
                    "{e:?} location does not round-trip"
                );
            }
        }
        assert_eq!(rows, archetype.len());
    }
    assert_eq!(
        total,
        world.len(),
        "entity count != sum of archetype lengths"
    );
}

/// The world against the model: same serials, same components, same link handles.
fn check_model(registry: &mut Registry, model: &Model) {
    check_structure(registry.world());
    assert_eq!(registry.len(), model.rows.len(), "population");
    let mut found = 0usize;
    #[allow(clippy::type_complexity)]
    let mut mismatch: Option<(u64, Row, Option<Row>)> = None;
    registry
        .query::<(
            Entity,
            &Serial,
            Option<&Val>,
            Option<&Inc>,
            Option<&Tag>,
            Option<&Age>,
            (Option<&Link>, Option<&Seen>),
        )>()
        .each(|_, (e, s, val, inc, tag, age, (link, seen))| {
            found += 1;
            let row = Row {
                val: val.map(|v| v.0),
                inc: inc.map(|v| v.0),
                tag: tag.is_some(),
                age: age.map(|a| a.0),
                link: link.map(|l| (l.0, seen.map_or(u64::MAX - 1, |s| s.0))),
            };
            let want = model.rows.get(&s.0);
            let handle_ok = model.entity_of.get(&s.0) == Some(&e);
            if (want != Some(&row) || !handle_ok) && mismatch.is_none() {
                mismatch = Some((s.0, row, want.cloned()));
            }
        });
    if let Some((s, got, want)) = mismatch {
        panic!("serial {s:#x}: world has {got:?}, model has {want:?}");
    }
    assert_eq!(found, model.rows.len());
    for &dead in model.graveyard.iter().rev().take(64) {
        assert!(!registry.contains(dead), "dead handle {dead:?} is live");
        assert!(registry.get::<Serial>(dead).is_err());
    }
}

// ---- the driver -------------------------------------------------------------------------------

struct FailureReport {
    seed: u64,
    tick: usize,
    log: Vec<String>,
}

impl Drop for FailureReport {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "soak FAILED: FREYR_SOAK_SEED={:#x}, tick {}; last operations:\n  {}",
                self.seed,
                self.tick,
                self.log.join("\n  ")
            );
        }
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => {
            let v = v.trim();
            let parsed = match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => v.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
        }
        Err(_) => default,
    }
}

/// Installs a panic hook that keeps planned panics quiet and reports all others.
fn quiet_planned_panics() {
    let default = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        if !is_planned(info.payload()) {
            default(info);
        }
    }));
}

#[derive(Default)]
struct Tally {
    syncs: usize,
    updates: usize,
    async_panics: usize,
    sync_panics: usize,
    launches: usize,
    direct: usize,
    reductions: usize,
}

struct Soak {
    registry: Registry,
    model: Model,
    rng: Rng,
    tally: Tally,
    nonce: u64,
}

impl Soak {
    fn new(seed: u64) -> Self {
        let mut registry = Registry::with_workers(WORKERS);
        assert_eq!(registry.workers(), WORKERS);
        let mut model = Model::default();
        let mut rng = Rng(seed);
        let serials: Vec<u64> = (0..START as u64).map(|i| mix(i, seed)).collect();
        let rows: Vec<Row> = serials
            .iter()
            .map(|&s| Row {
                val: Some(s >> 8),
                inc: (!s.is_multiple_of(3)).then_some(s >> 40),
                ..Row::default()
            })
            .collect();
        // Two archetypes to start: (Serial, Val, Inc) and (Serial, Val).
        let with_inc: Vec<(u64, &Row)> = serials
            .iter()
            .zip(&rows)
            .filter(|(_, r)| r.inc.is_some())
            .map(|(&s, r)| (s, r))
            .collect();
        let handles = registry.spawn_batch(
            with_inc
                .iter()
                .map(|(s, r)| (Serial(*s), Val(r.val.unwrap()), Inc(r.inc.unwrap()))),
        );
        for ((s, r), e) in with_inc.iter().zip(handles) {
            model.rows.insert(*s, (*r).clone());
            model.entity_of.insert(*s, e);
            model.serial_of.insert(e, *s);
        }
        for (&s, r) in serials.iter().zip(&rows).filter(|(_, r)| r.inc.is_none()) {
            let e = registry.spawn((Serial(s), Val(r.val.unwrap())));
            model.rows.insert(s, r.clone());
            model.entity_of.insert(s, e);
            model.serial_of.insert(e, s);
        }
        // The phase path: Age advances in PostUpdate; structure is checked after each phase's
        // sync point from inside the next phase.
        registry.add_system(Phase::Update, |r: &mut Registry, _dt: f32| {
            check_structure(r.world());
        });
        registry.add_system(Phase::PostUpdate, |r: &mut Registry, _dt: f32| {
            check_structure(r.world());
            r.query::<&mut Age>()
                .with_label("Age")
                .each_async(|_, a| a.0 = a.0.wrapping_add(1));
        });
        let _ = rng.next_u64();
        Soak {
            registry,
            model,
            rng,
            tally: Tally::default(),
            nonce: 0,
        }
    }

    fn next_nonce(&mut self) -> u64 {
        self.nonce += 1;
        mix(self.nonce, self.rng.next_u64())
    }

    /// Rows per task for an `each_async` launch: mostly whole chunks, sometimes split.
    fn split(&mut self) -> usize {
        match self.rng.below(4) {
            0 => 64,
            1 => 100,
            _ => CHUNK_CAPACITY,
        }
    }

    fn panic_rate(&mut self) -> u64 {
        if self.rng.chance(8) {
            [0, 97, 900, 4000][self.rng.below(4) as usize]
        } else {
            0
        }
    }

    /// `each_async`: `val += inc` (may panic part-way through chunks). One time in three as two
    /// launches split by `Tag`: they write `Val` in disjoint archetypes, so the second does not
    /// wait for the first, and both run at once.
    fn op_add_inc(&mut self) -> String {
        let (nonce, panic, split) = (self.next_nonce(), self.panic_rate(), self.split());
        let by_tag = self.rng.chance(3);
        let chunks = if panic != 0 {
            Some(layout::<(With<Val>, With<Inc>)>(&mut self.registry, split))
        } else {
            None
        };
        let add = move |_: Entity, (s, v, i): (&Serial, &mut Val, &Inc)| {
            if planned_panic(s.0, nonce, panic) {
                panic!("{PANIC_MSG} (AddInc)");
            }
            v.0 = v.0.wrapping_add(i.0);
        };
        if by_tag {
            self.registry
                .query_filtered::<(&Serial, &mut Val, &Inc), With<Tag>>()
                .with_label("AddInc")
                .rows_per_task(split)
                .each_async(add);
            self.registry
                .query_filtered::<(&Serial, &mut Val, &Inc), Without<Tag>>()
                .with_label("AddInc")
                .rows_per_task(split)
                .each_async(add);
            self.tally.launches += 1;
        } else {
            self.registry
                .query::<(&Serial, &mut Val, &Inc)>()
                .with_label("AddInc")
                .rows_per_task(split)
                .each_async(add);
        }
        self.tally.launches += 1;
        let model = &mut self.model;
        let apply = |rows: &mut HashMap<u64, Row>, s: u64| {
            let r = rows.get_mut(&s).unwrap();
            r.val = Some(r.val.unwrap().wrapping_add(r.inc.unwrap()));
        };
        match chunks {
            None => {
                for r in model.rows.values_mut() {
                    if let (Some(v), Some(i)) = (r.val, r.inc) {
                        r.val = Some(v.wrapping_add(i));
                    }
                }
            }
            Some(chunks) => {
                let mut any = false;
                for chunk in chunks {
                    for s in chunk {
                        if planned_panic(s, nonce, panic) {
                            any = true;
                            break;
                        }
                        apply(&mut model.rows, s);
                    }
                }
                if any {
                    model.async_panic = true;
                    self.tally.async_panics += 1;
                }
            }
        }
        format!("add_inc panic={panic} split={split} by_tag={by_tag}")
    }

    /// Synchronous `each`: `inc = mix(inc)` (a panic stops it at once).
    fn op_mix_inc(&mut self) -> String {
        let (nonce, panic) = (self.next_nonce(), self.panic_rate());
        let order: Vec<u64> = layout::<With<Inc>>(&mut self.registry, CHUNK_CAPACITY)
            .into_iter()
            .flatten()
            .collect();
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            self.registry
                .query::<(&Serial, &mut Inc)>()
                .each(|_, (s, i)| {
                    if planned_panic(s.0, nonce, panic) {
                        panic!("{PANIC_MSG} (MixInc)");
                    }
                    i.0 = mix(i.0, nonce) >> 20;
                });
        }));
        let mut expect_panic = false;
        for s in order {
            if planned_panic(s, nonce, panic) {
                expect_panic = true;
                break;
            }
            let r = self.model.rows.get_mut(&s).unwrap();
            r.inc = Some(mix(r.inc.unwrap(), nonce) >> 20);
        }
        match result {
            Ok(()) => assert!(!expect_panic, "MixInc should have panicked"),
            Err(p) => {
                assert!(expect_panic && is_planned(&*p), "unexpected MixInc panic");
                self.tally.sync_panics += 1;
            }
        }
        format!("mix_inc panic={panic}")
    }

    /// `each_async_with`: the life cycle (commands; may panic, discarding a chunk's commands).
    fn op_life(&mut self) -> String {
        let pop = self.model.rows.len();
        let (despawn, spawn) = if pop < LOW {
            (400, 8)
        } else if pop > HIGH {
            (8, 400)
        } else {
            (60, 60)
        };
        let params = LifeParams {
            nonce: self.next_nonce(),
            despawn,
            spawn,
            panic: self.panic_rate(),
        };
        let mut targets: Vec<Entity> = Vec::new();
        for _ in 0..16 {
            if let Some(e) = self.model.sample_handle(&mut self.rng) {
                targets.push(e);
            }
        }
        let targets = Arc::new(targets);
        let split = self.split();
        let chunks = layout::<()>(&mut self.registry, split);
        let shared = Arc::clone(&targets);
        self.registry
            .query::<(&Serial, Option<&Val>, Option<&Link>)>()
            .with_label("Life")
            .rows_per_task(split)
            .each_async_with(move |e, (s, val, link), ctx| {
                if planned_panic(s.0, params.nonce, params.panic) {
                    panic!("{PANIC_MSG} (Life)");
                }
                let act = life_act(&params, s.0, val.map(|v| v.0), link.map(|l| l.0), &shared);
                record(act, e, ctx.commands());
            });
        self.tally.launches += 1;
        let mut any = false;
        for chunk in chunks {
            let mut cmds = Vec::new();
            let mut panicked = false;
            for s in chunk {
                if planned_panic(s, params.nonce, params.panic) {
                    panicked = true;
                    break;
                }
                let row = &self.model.rows[&s];
                let e = self.model.entity_of[&s];
                let act = life_act(&params, s, row.val, row.link.map(|(t, _)| t), &targets);
                model_cmds(act, e, &mut cmds);
            }
            if panicked {
                any = true;
            } else {
                self.model.pending.extend(cmds);
            }
        }
        if any {
            self.model.async_panic = true;
            self.tally.async_panics += 1;
        }
        format!(
            "life despawn=1/{despawn} spawn=1/{spawn} panic={}",
            params.panic
        )
    }

    /// `each_async_with` + `View<Val>` view: every linked entity looks at its target's `Val`.
    fn op_look(&mut self) -> String {
        self.registry
            .query::<(&Link, &mut Seen)>()
            .views::<(View<Val>,)>()
            .with_label("Look")
            .each_async_with(|_, (link, seen), ctx| {
                let (vals,) = ctx.views();
                seen.0 = vals.get(link.0).map_or(u64::MAX, |v| v.0);
            });
        self.tally.launches += 1;
        let updates: Vec<(u64, u64)> = self
            .model
            .rows
            .iter()
            .filter_map(|(&s, r)| {
                let (target, _) = r.link?;
                let seen = self
                    .model
                    .live(target)
                    .and_then(|t| self.model.rows[&t].val)
                    .unwrap_or(u64::MAX);
                Some((s, seen))
            })
            .collect();
        for (s, seen) in updates {
            self.model
                .rows
                .get_mut(&s)
                .unwrap()
                .link
                .as_mut()
                .unwrap()
                .1 = seen;
        }
        "look".into()
    }

    /// Synchronous `each_with` with commands: untag entities whose `val` is a multiple of 5.
    fn op_untag(&mut self) -> String {
        self.registry
            .query_filtered::<(&Serial, &Val), With<Tag>>()
            .each_with(|e, (_, v), ctx| {
                if v.0.is_multiple_of(5) {
                    ctx.commands().remove::<(Tag,)>(e);
                }
            });
        let mut cmds = Vec::new();
        for (&s, r) in &self.model.rows {
            if r.tag && r.val.is_some_and(|v| v.is_multiple_of(5)) {
                cmds.push(Cmd::TagOff(self.model.entity_of[&s]));
            }
        }
        self.model.pending.extend(cmds);
        "untag".into()
    }

    /// A deterministic reduction, joined at once or left for the sync point to retire.
    fn op_reduce(&mut self) -> (String, Option<(freyr_registry::Reduction<u64>, u64)>) {
        let reduction = self
            .registry
            .query::<(&Serial, &Val)>()
            .with_label("Reduce")
            .each_async_reduce(
                || 0u64,
                |acc, _, (s, v)| acc.wrapping_add(v.0 ^ s.0.rotate_left(7)),
                u64::wrapping_add,
            );
        self.tally.reductions += 1;
        let expected = self
            .model
            .rows
            .iter()
            .filter_map(|(&s, r)| r.val.map(|v| v ^ s.rotate_left(7)))
            .fold(0u64, u64::wrapping_add);
        if self.rng.chance(2) {
            assert_eq!(reduction.join(&mut self.registry), expected, "reduction");
            ("reduce (joined)".into(), None)
        } else {
            ("reduce (deferred)".into(), Some((reduction, expected)))
        }
    }

    /// Direct operations: now, waiting for conflicting work; possibly on stale handles.
    fn op_direct(&mut self) -> String {
        self.tally.direct += 1;
        let pick = self.model.sample_handle(&mut self.rng);
        let live = pick.and_then(|e| self.model.live(e));
        match (self.rng.below(7), pick) {
            (0, _) => {
                let s = mix(self.rng.next_u64(), 0xD1);
                let e = self.registry.spawn((Serial(s), Val(s >> 1), Tag));
                let row = Row {
                    val: Some(s >> 1),
                    tag: true,
                    ..Row::default()
                };
                assert!(self.model.rows.insert(s, row).is_none());
                self.model.entity_of.insert(s, e);
                self.model.serial_of.insert(e, s);
                "direct spawn".into()
            }
            (1, Some(e)) => {
                assert_eq!(self.registry.despawn(e).is_ok(), self.model.kill(e));
                format!("direct despawn live={}", live.is_some())
            }
            (2, Some(e)) => {
                assert_eq!(self.registry.insert(e, (Age(7),)).is_ok(), live.is_some());
                if let Some(r) = self.model.row_mut(e) {
                    r.age = Some(7);
                }
                "direct insert".into()
            }
            (3, Some(e)) => {
                let removed = self.registry.remove::<(Val,)>(e).ok().map(|(v,)| v.0);
                let want = self.model.row_mut(e).and_then(|r| r.val.take());
                assert_eq!(removed, want, "direct remove");
                "direct remove".into()
            }
            (4, Some(e)) => {
                let got = self.registry.get::<Val>(e).ok().map(|v| v.0);
                let want = live.and_then(|s| self.model.rows[&s].val);
                assert_eq!(got, want, "get::<Val>");
                if let Ok(v) = self.registry.get_mut::<Val>(e) {
                    v.0 ^= 0xFF;
                    self.model.row_mut(e).unwrap().val = Some(want.unwrap() ^ 0xFF);
                }
                "direct get/get_mut".into()
            }
            (5, Some(e)) => {
                self.registry.destroy_entity(e);
                self.model.destroy.push(e);
                "destroy_entity".into()
            }
            (_, _) => {
                let tagged = self.registry.query_filtered::<&Serial, With<Tag>>().count();
                let want = self.model.rows.values().filter(|r| r.tag).count();
                assert_eq!(tagged, want, "count With<Tag>");
                "count".into()
            }
        }
    }

    /// One sync point: `execute_tasks`, or a whole `update` (three phase sync points).
    fn sync(&mut self, deferred: Vec<(freyr_registry::Reduction<u64>, u64)>) -> String {
        let expect_panic = self.model.async_panic;
        let use_update = self.rng.chance(4);
        let result = if use_update {
            panic::catch_unwind(AssertUnwindSafe(|| self.registry.update(0.01)))
        } else {
            panic::catch_unwind(AssertUnwindSafe(|| self.registry.execute_tasks()))
        };
        self.model.apply();
        match result {
            Ok(()) => assert!(
                !expect_panic,
                "the sync point should have re-raised a panic"
            ),
            Err(p) => {
                assert!(expect_panic, "unexpected panic at the sync point");
                assert!(is_planned(&*p), "a non-planned panic escaped");
            }
        }
        // An update whose first sync point re-raised a panic runs no further phases.
        if use_update && !expect_panic {
            self.tally.updates += 1;
            for r in self.model.rows.values_mut() {
                if let Some(a) = r.age.as_mut() {
                    *a = a.wrapping_add(1);
                }
            }
        }
        self.model.relink(&mut self.registry);
        for (reduction, expected) in deferred {
            assert!(reduction.is_ready(), "the sync point retires every launch");
            assert_eq!(
                reduction.join(&mut self.registry),
                expected,
                "deferred reduction"
            );
        }
        self.tally.syncs += 1;
        assert_eq!(self.registry.in_flight(), 0);
        check_model(&mut self.registry, &self.model);
        format!(
            "sync ({})",
            if use_update {
                "update"
            } else {
                "execute_tasks"
            }
        )
    }

    fn tick(&mut self, log: &mut Vec<String>) {
        let intervals = 1 + self.rng.below(2);
        for _ in 0..intervals {
            let mut deferred = Vec::new();
            let ops = 1 + self.rng.below(5);
            for _ in 0..ops {
                let entry = match self.rng.below(10) {
                    0 | 1 => self.op_add_inc(),
                    2 => self.op_mix_inc(),
                    3..=5 => self.op_life(),
                    6 => self.op_look(),
                    7 => self.op_untag(),
                    8 => {
                        let (entry, pending) = self.op_reduce();
                        deferred.extend(pending);
                        entry
                    }
                    _ => self.op_direct(),
                };
                log.push(entry);
            }
            let entry = self.sync(deferred);
            log.push(entry);
            let excess = log.len().saturating_sub(24);
            log.drain(..excess);
        }
    }
}

#[test]
#[ignore = "soak: ~25 s in release at the default size; .ci/run runs 300 ticks on the test build"]
fn soak_random_queries_commands_and_panics_keep_the_world_valid() {
    let ticks = env_u64("FREYR_SOAK_TICKS", 10_000) as usize;
    let seed = env_u64("FREYR_SOAK_SEED", 0x5EED_F4E7_0000_0004);
    quiet_planned_panics();
    let mut report = FailureReport {
        seed,
        tick: 0,
        log: Vec::new(),
    };
    let start = std::time::Instant::now();
    let mut soak = Soak::new(seed);
    check_model(&mut soak.registry, &soak.model);
    for tick in 0..ticks {
        report.tick = tick;
        soak.tick(&mut report.log);
    }
    let t = &soak.tally;
    let profile = soak.registry.profile();
    eprintln!(
        "soak: seed {seed:#x}, {ticks} ticks in {:.2?}: {} sync points ({} updates), {} launches, \
         {} reductions, {} direct ops, {} async / {} sync planned panics; final population {}, \
         {} commands applied, {} stale, {} implicit syncs",
        start.elapsed(),
        t.syncs,
        t.updates,
        t.launches,
        t.reductions,
        t.direct,
        t.async_panics,
        t.sync_panics,
        soak.model.rows.len(),
        profile.commands_applied,
        profile.stale_commands,
        profile.implicit_syncs,
    );
    // The run exercised what it claims to (meaningful at any size from a few hundred ticks).
    if ticks >= 200 {
        assert!(
            t.async_panics > 0 && t.sync_panics > 0,
            "no panics exercised"
        );
        assert!(t.updates > 0 && t.reductions > 0 && t.direct > 0);
        assert!(profile.commands_applied > 1000);
        assert!(profile.stale_commands > 0, "no stale command exercised");
    }
}
