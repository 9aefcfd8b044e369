//! What a snapshot keeps of the function systems, and a restore puts back: the state the
//! world's history decides. A system's previous run (the tick its change filters and
//! `Tick::last_run` compare with) and its event readers' cursors follow the world back, so a
//! resimulated tick sees what the first run of that tick saw. `Local` values are the system's
//! own and are not rewound (state that must roll back belongs in a resource or a component).
//! A load is not a restore: after it, every system runs as on its first run, as in a fresh
//! program that loads the same save.
//!
//! The words, per phase: the number of systems, then per system the hash of its name, its
//! previous run (0 for none, else the tick + 1), the number of parameter words and the words.
//! A restore matches systems by phase and name, so a system added after the snapshot keeps
//! what it has, and a snapshot of another registry restores the systems both have.

use core::hash::Hasher;

use freyr_persist::{StableHash, StableHasher};

use super::Registry;
use crate::systems::graph::FnNode;

fn name_hash(node: &FnNode) -> u64 {
    let mut h = StableHasher::new();
    node.config.name.as_str().stable_hash(&mut h);
    h.finish()
}

impl Registry {
    /// Writes every function system's rewound state into `out` (cleared first).
    pub(in crate::registry) fn save_fn_systems(&self, out: &mut Vec<u64>) {
        out.clear();
        for schedule in &self.fn_systems {
            out.push(schedule.nodes.len() as u64);
            for node in &schedule.nodes {
                out.push(name_hash(node));
                out.push(node.last_run.map_or(0, |t| t + 1));
                let len_at = out.len();
                out.push(0);
                node.system.save_state(out);
                out[len_at] = (out.len() - len_at - 1) as u64;
            }
        }
    }

    /// Puts back what [`save_fn_systems`](Registry::save_fn_systems) wrote into `words`, for
    /// the systems of the same phase and name whose parameters wrote as many words.
    pub(in crate::registry) fn load_fn_systems(&mut self, words: &[u64]) {
        const SHAPE: &str = "freyr: a snapshot's system words are the registry's own";
        let mut words = words;
        let mut take = |n: usize| -> &[u64] {
            let (head, rest) = words.split_at(n.min(words.len()));
            words = rest;
            assert_eq!(head.len(), n, "{SHAPE}");
            head
        };
        for schedule in &mut self.fn_systems {
            let count = take(1)[0] as usize;
            for i in 0..count {
                let (hash, last_run, len) = {
                    let head = take(3);
                    (head[0], head[1], head[2] as usize)
                };
                let state = take(len);
                // The same index first (the usual case: the same registry), then by name.
                let node = match schedule.nodes.get(i) {
                    Some(n) if name_hash(n) == hash => Some(i),
                    _ => schedule.nodes.iter().position(|n| name_hash(n) == hash),
                };
                let Some(node) = node.map(|k| &mut schedule.nodes[k]) else {
                    continue;
                };
                if node.system.load_state(state) {
                    node.last_run = last_run.checked_sub(1);
                }
            }
        }
    }

    /// After a load: every function system's next run is as its first (its change filters pass
    /// every row, `Tick::last_run` is `None`), since the loaded world's history is not the one
    /// its previous run saw; the same as in a fresh process that loads the save.
    #[cfg(feature = "persist")]
    pub(in crate::registry) fn forget_fn_system_runs(&mut self) {
        for schedule in &mut self.fn_systems {
            for node in &mut schedule.nodes {
                node.last_run = None;
            }
        }
    }
}
