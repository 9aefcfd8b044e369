//! A property test of the parent relation against a plain model: random edits (spawns, child
//! spawns, reparents that may be refused, parent removals), now or recorded as commands and
//! interleaved with recorded despawns, despawns on all three paths (now, queued, recorded by a
//! parallel callback), clones of subtrees, rollbacks to a snapshot and save/load round trips. After every sync point the registry's parents and children (with
//! their order) equal the model's and the relation's invariants hold; a refused edit leaves the
//! world hash unchanged; and the final world hash is the same for 1, 2, 3, 8 and 16 workers.

use std::collections::{BTreeMap, BTreeSet};

use freyr::Registry;
use freyr::hierarchy::HierarchyCommands;
use freyr_core::Entity;
use proptest::prelude::*;

/// A unique id per entity, stable through clones, rollbacks and loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Tag(u64);

impl freyr::StableHash for Tag {
    fn stable_hash(&self, h: &mut freyr::hash::StableHasher) {
        self.0.stable_hash(h);
    }
}

#[derive(Clone, Debug)]
enum Op {
    Spawn,
    SpawnChild(usize),
    SetParent(usize, usize),
    RemoveParent(usize),
    Despawn(usize),
    Destroy(usize),
    CommandDespawn(usize),
    RecordSetParent(usize, usize),
    RecordRemoveParent(usize),
    RecordDespawn(usize),
    RecordSpawnChild(usize),
    CloneTree(usize),
    Sync,
    Snapshot,
    Rollback,
    SaveLoad,
}

/// The entity the recording callback runs on (saved like the rest of the world).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct Anchor;

/// An edit or despawn recorded as a command, applied at the next `Sync`.
#[derive(Clone, Debug)]
enum Rec {
    SetParent(Entity, Entity),
    RemoveParent(Entity),
    Despawn(Entity),
    SpawnChild(Entity, Tag),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Spawn),
        4 => any::<usize>().prop_map(Op::SpawnChild),
        4 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::SetParent(a, b)),
        1 => any::<usize>().prop_map(Op::RemoveParent),
        1 => any::<usize>().prop_map(Op::Despawn),
        1 => any::<usize>().prop_map(Op::Destroy),
        1 => any::<usize>().prop_map(Op::CommandDespawn),
        3 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::RecordSetParent(a, b)),
        1 => any::<usize>().prop_map(Op::RecordRemoveParent),
        1 => any::<usize>().prop_map(Op::RecordDespawn),
        2 => any::<usize>().prop_map(Op::RecordSpawnChild),
        1 => any::<usize>().prop_map(Op::CloneTree),
        2 => Just(Op::Sync),
        1 => Just(Op::Snapshot),
        1 => Just(Op::Rollback),
        1 => Just(Op::SaveLoad),
    ]
}

/// The model: for each live entity, its parent and its children in order.
#[derive(Clone, Default)]
struct Model {
    parent: BTreeMap<Entity, Option<Entity>>,
    children: BTreeMap<Entity, Vec<Entity>>,
}

impl Model {
    fn alive(&self) -> Vec<Entity> {
        self.parent.keys().copied().collect()
    }
    fn add(&mut self, e: Entity, parent: Option<Entity>) {
        self.parent.insert(e, parent);
        self.children.insert(e, Vec::new());
        if let Some(p) = parent {
            self.children.get_mut(&p).unwrap().push(e);
        }
    }
    fn unlink(&mut self, e: Entity) {
        if let Some(Some(p)) = self.parent.get(&e).copied() {
            self.children.get_mut(&p).unwrap().retain(|&c| c != e);
        }
        self.parent.insert(e, None);
    }
    fn is_ancestor_or_self(&self, a: Entity, mut e: Entity) -> bool {
        loop {
            if a == e {
                return true;
            }
            match self.parent[&e] {
                Some(p) => e = p,
                None => return false,
            }
        }
    }
    /// A despawn recorded as a command: the entity leaves its parent now; its children stay
    /// until the end of the sync point's commands (see `finish`).
    fn mark_dead(&mut self, e: Entity, dead: &mut Vec<Entity>) {
        if self.live(e, dead) {
            self.unlink(e);
            dead.push(e);
        }
    }
    fn live(&self, e: Entity, dead: &[Entity]) -> bool {
        self.parent.contains_key(&e) && !dead.contains(&e)
    }
    /// The end of a sync point's commands: each dead entity's children then go with their
    /// subtrees.
    fn finish(&mut self, dead: Vec<Entity>) {
        for &d in &dead {
            for c in self.children[&d].clone() {
                if self.parent.get(&c) == Some(&Some(d)) {
                    self.despawn(c);
                }
            }
        }
        for d in dead {
            self.parent.remove(&d);
            self.children.remove(&d);
        }
    }
    fn despawn(&mut self, e: Entity) {
        if !self.parent.contains_key(&e) {
            return;
        }
        self.unlink(e);
        let mut stack = vec![e];
        while let Some(x) = stack.pop() {
            self.parent.remove(&x);
            stack.extend(self.children.remove(&x).unwrap());
        }
    }
    fn subtree(&self, e: Entity) -> Vec<Entity> {
        let mut out = vec![e];
        let mut i = 0;
        while i < out.len() {
            out.extend(self.children[&out[i]].iter().copied());
            i += 1;
        }
        out
    }
}

fn new_registry(workers: usize) -> Registry {
    let mut r = Registry::with_workers(workers);
    r.register_persistent::<Tag>("test.tag", 1);
    r.register_persistent::<Anchor>("test.anchor", 1);
    r.register_hashable::<Tag>();
    r.register_cloneable::<Tag>();
    r.register_hierarchy();
    r
}

fn check(r: &Registry, model: &Model) {
    r.check_hierarchy();
    assert_eq!(r.len(), model.parent.len());
    for (&e, &p) in &model.parent {
        assert!(r.contains(e));
        assert_eq!(r.parent(e), p, "the parent of {e:?}");
        assert_eq!(
            r.children(e),
            model.children[&e].as_slice(),
            "the children of {e:?}"
        );
    }
}

fn pick(list: &[Entity], i: usize) -> Option<Entity> {
    (!list.is_empty()).then(|| list[i % list.len()])
}

/// Runs `ops`; returns the final world hash.
fn run(workers: usize, ops: &[Op]) -> u64 {
    let mut r = new_registry(workers);
    let mut model = Model::default();
    let mut next_tag = 0u64;
    let mut queued: Vec<Entity> = Vec::new();
    let mut recorded: BTreeSet<u64> = BTreeSet::new();
    let mut sequence: Vec<Rec> = Vec::new();
    let mut saved: Option<(freyr::snapshot::Snapshot, Model)> = None;
    let mut tag = || {
        next_tag += 1;
        Tag(next_tag)
    };
    for op in ops {
        let alive = model.alive();
        match *op {
            Op::Spawn => {
                let e = r.spawn((tag(),));
                model.add(e, None);
            }
            Op::SpawnChild(i) => {
                if let Some(p) = pick(&alive, i) {
                    let e = r.spawn_child(p, (tag(),)).unwrap();
                    model.add(e, Some(p));
                }
            }
            Op::SetParent(i, j) => {
                let (Some(c), Some(p)) = (pick(&alive, i), pick(&alive, j)) else {
                    continue;
                };
                if model.is_ancestor_or_self(c, p) {
                    let before = r.world_hash_all().unwrap();
                    assert!(r.set_parent(c, p).is_err());
                    assert_eq!(
                        r.world_hash_all().unwrap(),
                        before,
                        "a refused edit changed the world"
                    );
                } else {
                    r.set_parent(c, p).unwrap();
                    if model.parent[&c] != Some(p) {
                        model.unlink(c);
                        model.parent.insert(c, Some(p));
                        model.children.get_mut(&p).unwrap().push(c);
                    }
                }
            }
            Op::RemoveParent(i) => {
                if let Some(c) = pick(&alive, i) {
                    assert_eq!(r.remove_parent(c).unwrap(), model.parent[&c]);
                    model.unlink(c);
                }
            }
            Op::Despawn(i) => {
                if let Some(e) = pick(&alive, i) {
                    r.despawn(e).unwrap();
                    model.despawn(e);
                }
            }
            Op::Destroy(i) => {
                if let Some(e) = pick(&alive, i) {
                    r.destroy_entity(e);
                    queued.push(e);
                }
            }
            Op::CommandDespawn(i) => {
                if let Some(e) = pick(&alive, i) {
                    recorded.insert(r.get::<Tag>(e).unwrap().0);
                }
            }
            Op::RecordSetParent(i, j) => {
                if let (Some(c), Some(p)) = (pick(&alive, i), pick(&alive, j)) {
                    sequence.push(Rec::SetParent(c, p));
                }
            }
            Op::RecordRemoveParent(i) => {
                if let Some(c) = pick(&alive, i) {
                    sequence.push(Rec::RemoveParent(c));
                }
            }
            Op::RecordDespawn(i) => {
                if let Some(e) = pick(&alive, i) {
                    sequence.push(Rec::Despawn(e));
                }
            }
            Op::RecordSpawnChild(i) => {
                if let Some(p) = pick(&alive, i) {
                    sequence.push(Rec::SpawnChild(p, tag()));
                }
            }
            Op::CloneTree(i) => {
                if let Some(e) = pick(&alive, i) {
                    let copy = r.clone_tree(e).unwrap();
                    // The copy's tree has the source's shape; give the copies fresh tags so
                    // every tag stays unique, and mirror them in the model.
                    let sources = model.subtree(e);
                    let copies = {
                        let mut out = vec![copy];
                        out.extend(r.descendants(copy));
                        out
                    };
                    assert_eq!(sources.len(), copies.len());
                    for (k, &c) in copies.iter().enumerate() {
                        *r.get_mut::<Tag>(c).unwrap() = tag();
                        let parent = if k == 0 {
                            None
                        } else {
                            let sp = model.parent[&sources[k]].unwrap();
                            let at = sources.iter().position(|&s| s == sp).unwrap();
                            Some(copies[at])
                        };
                        model.add(c, parent);
                    }
                }
            }
            Op::Sync => {}
            Op::Snapshot => {
                if queued.is_empty() && recorded.is_empty() && sequence.is_empty() {
                    saved = Some((r.snapshot().unwrap(), model.clone()));
                }
            }
            Op::Rollback => {
                if let Some((snapshot, m)) = &saved
                    && queued.is_empty()
                    && recorded.is_empty()
                    && sequence.is_empty()
                {
                    r.restore(snapshot).unwrap();
                    model = m.clone();
                }
            }
            Op::SaveLoad => {
                if queued.is_empty() && recorded.is_empty() && sequence.is_empty() {
                    let bytes = r.save_to_vec().unwrap();
                    let hash = r.world_hash_all().unwrap();
                    r = new_registry(workers);
                    r.load_into(&bytes).unwrap();
                    assert_eq!(r.world_hash_all().unwrap(), hash);
                    saved = None; // a snapshot belongs to the registry it was taken from
                }
            }
        }
        if matches!(op, Op::Sync) {
            let targets = std::mem::take(&mut recorded);
            let shared = targets.clone();
            r.query::<&Tag>().each_async_with(move |e, t, ctx| {
                if shared.contains(&t.0) {
                    ctx.commands().despawn(e);
                }
            });
            // The recorded edits and despawns, in order, from one callback: one buffer, applied
            // after the despawns above.
            let seq = std::sync::Mutex::new(Some(std::mem::take(&mut sequence)));
            let recorded_seq = seq.lock().unwrap().clone().unwrap();
            // An entity of its own for the callback to run on (the world may have none).
            let anchor = r.spawn((Anchor,));
            r.query::<&Anchor>().each_with(|_, _, ctx| {
                if let Some(list) = seq.lock().unwrap().take() {
                    let cmds = ctx.commands();
                    for rec in list {
                        match rec {
                            Rec::SetParent(c, p) => cmds.set_parent(c, p),
                            Rec::RemoveParent(c) => cmds.remove_parent(c),
                            Rec::Despawn(e) => cmds.despawn(e),
                            Rec::SpawnChild(p, t) => {
                                cmds.spawn_child(p, (t,));
                            }
                        }
                    }
                }
            });
            // The model: the commands' targets die first, then the sequence runs; the dead
            // entities' children go at the end of the commands, then the queued ones.
            let by_tag: Vec<Entity> = model
                .alive()
                .into_iter()
                .filter(|&e| targets.contains(&r.get::<Tag>(e).unwrap().0))
                .collect();
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.execute_tasks()));
            r.despawn(anchor).unwrap();
            let mut dead = Vec::new();
            for e in by_tag {
                model.mark_dead(e, &mut dead);
            }
            let mut refused = false;
            for rec in recorded_seq {
                match rec {
                    Rec::Despawn(e) => model.mark_dead(e, &mut dead),
                    Rec::SetParent(c, p) => {
                        if !model.live(c, &dead) || !model.live(p, &dead) {
                            continue;
                        }
                        if model.is_ancestor_or_self(c, p) {
                            refused = true;
                        } else if model.parent[&c] != Some(p) {
                            model.unlink(c);
                            model.parent.insert(c, Some(p));
                            model.children.get_mut(&p).unwrap().push(c);
                        }
                    }
                    Rec::RemoveParent(c) => {
                        if model.live(c, &dead) {
                            model.unlink(c);
                        }
                    }
                    Rec::SpawnChild(p, t) => {
                        let mut found = None;
                        r.query::<&Tag>().each(|e, x| {
                            if *x == t {
                                found = Some(e);
                            }
                        });
                        // Gone already if its parent died later in the same sync point: then
                        // a stand-in that no live entity has stands for it, which the model
                        // must remove at `finish` (`check` fails if it keeps it).
                        let e = found.unwrap_or_else(|| {
                            Entity::from_bits((u64::from(u32::MAX - 1) << 32) | t.0).unwrap()
                        });
                        let parent = model.live(p, &dead).then_some(p);
                        model.add(e, parent);
                    }
                }
            }
            assert_eq!(
                ran.is_err(),
                refused,
                "a refused recorded edit panics, only then"
            );
            model.finish(dead);
            for e in queued.drain(..) {
                model.despawn(e);
            }
        }
        if matches!(op, Op::Sync)
            || (queued.is_empty() && recorded.is_empty() && sequence.is_empty())
        {
            check(&r, &model);
        }
    }
    r.world_hash_all().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 48 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_relation_matches_the_model_for_every_worker_count(
        ops in prop::collection::vec(op(), 1..if cfg!(miri) { 16 } else { 80 })
    ) {
        let hashes: Vec<u64> = [1, 2, 3, 8, 16].iter().map(|&w| run(w, &ops)).collect();
        prop_assert!(hashes.iter().all(|&h| h == hashes[0]), "{:?}", hashes);
    }
}
