//! A phase's function systems and the graph they run in.
//!
//! ```text
//!  phase:  f0 f1 [E0] f2 f3 f4 [E1] f5          fN: function systems, [Ek]: exclusive systems
//!  segment 0 = {f0, f1}, segment 1 = {f2, f3, f4}, segment 2 = {f5}
//!  per segment, edges:  declared (before / after, by system or set name)
//!                       + for each conflicting pair i < j (registration order; per j, the
//!                         nearest i first) not already ordered by a path: i -> j
//! ```
//!
//! Exclusive systems (`&mut Registry`) conflict with everything, so they cut the phase into
//! segments; a declared order across one is satisfied when it points forward and an error when
//! it points back. Within a segment, every conflicting pair ends up ordered (by the declared
//! order when a path of it exists, else by registration order), so the result never depends on
//! which of two systems ran first.

use core::fmt;

use freyr_query::events::buffer::TaskOutput;

use super::function::ErasedFnSystem;
use super::param::{AccessEntry, SystemAccess};

/// How a function system is named and ordered: [`Registry::add_fn_system_with`]'s argument.
///
/// Names are the keys of the order: `before` and `after` name a system or a set of the same
/// phase (every system in the set). A name that matches nothing is reported by
/// [`Registry::check_schedule`] and makes [`update`](crate::Registry::update) panic.
///
/// [`Registry::add_fn_system_with`]: crate::Registry::add_fn_system_with
/// [`Registry::check_schedule`]: crate::Registry::check_schedule
///
/// # Examples
///
/// ```
/// use freyr::{Phase, Registry};
/// use freyr::system::{ResMut, SystemConfig};
///
/// struct Log(Vec<&'static str>);
///
/// let mut registry = Registry::with_workers(2);
/// registry.insert_resource(Log(Vec::new()));
/// registry
///     .add_fn_system(Phase::Update, "b", |mut l: ResMut<Log>| l.0.push("b"))
///     .unwrap();
/// registry
///     .add_fn_system_with(
///         Phase::Update,
///         SystemConfig::new("a").before("b").in_set("early"),
///         |mut l: ResMut<Log>| l.0.push("a"),
///     )
///     .unwrap();
/// registry.update(0.0);
/// assert_eq!(registry.resource::<Log>().unwrap().0, ["a", "b"]);
/// ```
#[derive(Clone, Debug)]
pub struct SystemConfig {
    pub(crate) name: String,
    pub(crate) before: Vec<String>,
    pub(crate) after: Vec<String>,
    pub(crate) sets: Vec<String>,
}

impl SystemConfig {
    /// A system named `name`, ordered by registration and access alone.
    pub fn new(name: impl Into<String>) -> Self {
        SystemConfig {
            name: name.into(),
            before: Vec::new(),
            after: Vec::new(),
            sets: Vec::new(),
        }
    }

    /// Runs before the system (or every system of the set) named `name`.
    pub fn before(mut self, name: impl Into<String>) -> Self {
        self.before.push(name.into());
        self
    }

    /// Runs after the system (or every system of the set) named `name`.
    pub fn after(mut self, name: impl Into<String>) -> Self {
        self.after.push(name.into());
        self
    }

    /// Puts the system in the set `set`, which other systems may name in `before`/`after`.
    pub fn in_set(mut self, set: impl Into<String>) -> Self {
        self.sets.push(set.into());
        self
    }
}

/// Why a function system could not be added, or a phase's order not resolved.
///
/// # Examples
///
/// ```
/// use freyr::{Phase, Registry};
/// use freyr::system::{Query, ScheduleError};
///
/// struct Pos(f32);
///
/// let mut registry = Registry::with_workers(1);
/// let err = registry
///     .add_fn_system(Phase::Update, "twice", |_: Query<&mut Pos>, _: Query<&Pos>| {})
///     .unwrap_err();
/// assert!(matches!(err, ScheduleError::ConflictingAccess { .. }));
/// assert!(err.to_string().contains("Pos"));
/// assert_eq!(registry.system_count(Phase::Update), 0); // nothing was added
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleError {
    /// The system's parameters access one type twice and at least one writes it (two
    /// `Query<&mut T>`, `Res<T>` and `ResMut<T>`, two `Commands`).
    ConflictingAccess {
        /// The system.
        system: String,
        /// The type's name.
        type_name: &'static str,
    },
    /// The system writes [`ChildOf`](crate::hierarchy::ChildOf) or
    /// [`Children`](crate::hierarchy::Children) (a `Query<&mut ChildOf>`): the registry keeps
    /// both sides of the relation, so a system reads them and changes them through
    /// [`HierarchyCommands`](crate::hierarchy::HierarchyCommands).
    KeptComponent {
        /// The system.
        system: String,
        /// The type's name.
        type_name: &'static str,
    },
    /// The name is already taken by a system of the phase.
    DuplicateName {
        /// The name.
        name: String,
    },
    /// The declared order (`before`, `after`, sets) has a cycle; the systems on it, in order.
    Cycle {
        /// The systems on the cycle, each running before the next, the last before the first.
        systems: Vec<String>,
    },
    /// `first` is declared to run before `second`, but an exclusive system registered between
    /// them runs after `second` and before `first`.
    AcrossExclusive {
        /// The system declared to run first.
        first: String,
        /// The system declared to run second.
        second: String,
    },
    /// A `before`/`after` (or a set order) names neither a system nor a set of the phase.
    UnknownName {
        /// The system that names it, or `order_sets(first, second)` for a set order.
        system: String,
        /// The name.
        name: String,
    },
    /// Function systems are added, and set orders declared, between updates, not while one
    /// runs; a phase's graph is checked or printed
    /// ([`Registry::check_schedule`](crate::Registry::check_schedule),
    /// [`Registry::schedule_graph`](crate::Registry::schedule_graph)) outside that phase's run.
    DuringUpdate,
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::ConflictingAccess { system, type_name } => write!(
                f,
                "system `{system}` accesses `{type_name}` twice and writes it at least once; \
                 merge the parameters into one"
            ),
            ScheduleError::KeptComponent { system, type_name } => write!(
                f,
                "system `{system}` writes `{type_name}`, which the registry keeps: read it with \
                 `&` and change the relation with `HierarchyCommands` (`set_parent`, \
                 `spawn_child`, `remove_parent`)"
            ),
            ScheduleError::DuplicateName { name } => {
                write!(f, "a system named `{name}` is already in this phase")
            }
            ScheduleError::Cycle { systems } => write!(
                f,
                "the declared order has a cycle: {} -> {}",
                systems.join(" -> "),
                systems.first().map_or("", String::as_str)
            ),
            ScheduleError::AcrossExclusive { first, second } => write!(
                f,
                "`{first}` is declared to run before `{second}`, but `{second}` was added \
                 before an exclusive system that `{first}` was added after"
            ),
            ScheduleError::UnknownName { system, name } => write!(
                f,
                "system `{system}` is ordered against `{name}`, which is neither a system nor a \
                 set of this phase"
            ),
            ScheduleError::DuringUpdate => write!(
                f,
                "function systems are added, and a phase's graph resolved, between updates, \
                 not from a running system"
            ),
        }
    }
}

impl std::error::Error for ScheduleError {}

/// `name` as a `&'static str`, for the profiler's labels and the trace: each distinct system
/// name is leaked once per process (a bounded set: the names a program gives its systems).
pub(crate) fn intern(name: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    match names.get(name) {
        Some(interned) => interned,
        None => {
            let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
            names.insert(leaked);
            leaked
        }
    }
}

/// When and where a system ran (recorded while the tick profiler is on).
#[derive(Copy, Clone)]
pub(crate) struct RunTiming {
    pub(crate) start: std::time::Instant,
    pub(crate) end: std::time::Instant,
    pub(crate) worker: Option<usize>,
}

/// One function system of a phase.
pub(crate) struct FnNode {
    /// The name, interned: the profiler's label and the trace's span name.
    pub(crate) label: &'static str,
    /// The last run's timing, when the tick profiler is on.
    pub(crate) timing: Option<RunTiming>,
    pub(crate) config: SystemConfig,
    pub(crate) access: SystemAccess,
    pub(crate) system: Box<dyn ErasedFnSystem>,
    /// How many exclusive systems of the phase were registered before it.
    pub(crate) segment: usize,
    pub(crate) output: TaskOutput,
    /// The tick of the last run that ended without a panic (written by the thread that ran it).
    pub(crate) last_run: Option<u64>,
}

/// The text format of [`Registry::schedule_graph`](crate::Registry::schedule_graph).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GraphFormat {
    /// Graphviz DOT (`dot -Tsvg`).
    Dot,
    /// A Mermaid flowchart (renders in Markdown on most forges).
    Mermaid,
}

/// Why an edge exists (for `schedule_graph`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EdgeReason {
    /// A `before`/`after` naming a system or a set.
    Declared(String),
    /// Conflicting access on a type, kept in registration order.
    Conflict(&'static str),
}

/// The resolved graph of one segment: its nodes (indices into the phase's list, in
/// registration order) and their edges.
pub(crate) struct Segment {
    pub(crate) nodes: Vec<usize>,
    /// Per local node: the local nodes that wait for it, with the reason.
    pub(crate) succ: Vec<Vec<(u32, EdgeReason)>>,
    /// Per local node: how many nodes it waits for.
    pub(crate) preds: Vec<u32>,
    /// A topological order (lowest registration index first among ready nodes).
    pub(crate) topo: Vec<u32>,
    /// The local nodes with no predecessor, in index order.
    pub(crate) roots: Vec<u32>,
    /// The members (indices into the phase's list) whose parameters prepare
    /// ([`SystemParam::PREPARES`](super::SystemParam::PREPARES)), in registration order.
    pub(crate) prepares: Vec<usize>,
}

/// A phase's function systems and, once resolved, their segments.
#[derive(Default)]
pub(crate) struct PhaseSchedule {
    pub(crate) nodes: Vec<FnNode>,
    /// Orders between sets (or systems) by name: every member of `.0` before every member of
    /// `.1` ([`Registry::order_sets`](crate::Registry::order_sets)).
    pub(crate) set_orders: Vec<(String, String)>,
    pub(crate) segments: Option<Vec<Segment>>,
    /// Per segment: what its runs keep from tick to tick (counters, the executor's timings).
    pub(crate) runs: Vec<super::runs::SegmentRuns>,
    /// The number of exclusive systems `segments` was resolved for.
    pub(crate) exclusive: usize,
    /// The seed of the shuffled-start test mode, if on
    /// ([`Registry::shuffle_system_starts`](crate::Registry::shuffle_system_starts)).
    pub(crate) shuffle: Option<u64>,
}

/// SplitMix64: the shuffled-start mode's generator (a test aid; any fixed sequence will do).
pub(crate) fn split_mix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Segment {
    /// A topological order that picks among the ready nodes at random (seeded).
    pub(crate) fn shuffled_topo(&self, mut rng: u64) -> Vec<u32> {
        let mut left = self.preds.clone();
        let mut ready: Vec<u32> = (0..left.len() as u32)
            .filter(|&i| left[i as usize] == 0)
            .collect();
        let mut topo = Vec::with_capacity(left.len());
        while !ready.is_empty() {
            let pick = (split_mix(&mut rng) % ready.len() as u64) as usize;
            let v = ready.swap_remove(pick);
            topo.push(v);
            for (w, _) in &self.succ[v as usize] {
                left[*w as usize] -= 1;
                if left[*w as usize] == 0 {
                    ready.push(*w);
                }
            }
        }
        topo
    }
}

/// A square bit matrix: `reach[a]` holds the nodes reachable from `a`.
struct Reach {
    n: usize,
    words: usize,
    bits: Vec<u64>,
}

impl Reach {
    fn new(n: usize) -> Self {
        let words = n.div_ceil(64).max(1);
        Reach {
            n,
            words,
            bits: vec![0; n * words],
        }
    }
    fn get(&self, a: usize, b: usize) -> bool {
        self.bits[a * self.words + b / 64] >> (b % 64) & 1 == 1
    }
    /// Adds edge `a -> b` and closes: every node reaching `a` (and `a`) now reaches `b` and
    /// everything `b` reaches.
    fn add_edge(&mut self, a: usize, b: usize) {
        let w = self.words;
        let mut row_b = self.bits[b * w..(b + 1) * w].to_vec();
        row_b[b / 64] |= 1 << (b % 64);
        for x in 0..self.n {
            if x == a || self.get(x, a) {
                for (dst, src) in self.bits[x * w..(x + 1) * w].iter_mut().zip(&row_b) {
                    *dst |= *src;
                }
            }
        }
    }
}

/// A declared edge: `(first, second, reason)`.
type DeclaredEdge = (usize, usize, String);

/// A name of a declared order that matches nothing: who names it (a system, or a set order's
/// description) and the name.
type UnknownName = (String, String);

/// The declared edges `(first, second, reason)` among `nodes` (by name: a system's own name or a
/// set it is in), from the systems' `before`/`after` and the phase's set orders, plus the names
/// that match nothing.
fn declared_edges(
    nodes: &[FnNode],
    set_orders: &[(String, String)],
) -> (Vec<DeclaredEdge>, Vec<UnknownName>) {
    let members = |name: &str| -> Vec<usize> {
        nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.config.name == name || n.config.sets.iter().any(|s| s == name))
            .map(|(i, _)| i)
            .collect()
    };
    let mut edges = Vec::new();
    let mut unknown = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        for (names, forward) in [(&node.config.before, true), (&node.config.after, false)] {
            for name in names {
                let targets = members(name);
                if targets.is_empty() {
                    unknown.push((node.config.name.clone(), name.clone()));
                }
                for t in targets {
                    if t == i {
                        continue;
                    }
                    let reason = if forward {
                        format!("before {name}")
                    } else {
                        format!("after {name}")
                    };
                    if forward {
                        edges.push((i, t, reason));
                    } else {
                        edges.push((t, i, reason));
                    }
                }
            }
        }
    }
    for (first, second) in set_orders {
        let (before, after) = (members(first), members(second));
        for (name, found) in [(first, &before), (second, &after)] {
            if found.is_empty() {
                unknown.push((format!("order_sets({first}, {second})"), name.clone()));
            }
        }
        for &a in &before {
            for &b in &after {
                if a != b {
                    edges.push((a, b, format!("set {first} before {second}")));
                }
            }
        }
    }
    (edges, unknown)
}

/// Checks the declared order of `nodes` (the phase's systems with a new one last): no edge
/// points back across an exclusive system, no cycle. Unknown names are allowed here (they may
/// name a system added later).
pub(crate) fn check_declared(
    nodes: &[FnNode],
    set_orders: &[(String, String)],
) -> Result<(), ScheduleError> {
    // A system declared to run before or after itself (by its own name, not through a set it
    // is in: that orders it against the set's other members) is a cycle of one.
    for node in nodes {
        let name = &node.config.name;
        if node.config.before.contains(name) || node.config.after.contains(name) {
            return Err(ScheduleError::Cycle {
                systems: vec![name.clone()],
            });
        }
    }
    let (edges, _) = declared_edges(nodes, set_orders);
    for (a, b, _) in &edges {
        if nodes[*a].segment > nodes[*b].segment {
            return Err(ScheduleError::AcrossExclusive {
                first: nodes[*a].config.name.clone(),
                second: nodes[*b].config.name.clone(),
            });
        }
    }
    let n = nodes.len();
    let mut succ = vec![Vec::new(); n];
    for (a, b, _) in &edges {
        succ[*a].push(*b);
    }
    // Iterative DFS with colours; a grey target closes a cycle.
    let mut colour = vec![0u8; n];
    let mut parent = vec![usize::MAX; n];
    for start in 0..n {
        if colour[start] != 0 {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        colour[start] = 1;
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if *next < succ[v].len() {
                let w = succ[v][*next];
                *next += 1;
                match colour[w] {
                    0 => {
                        colour[w] = 1;
                        parent[w] = v;
                        stack.push((w, 0));
                    }
                    1 => {
                        let mut cycle = vec![v];
                        let mut x = v;
                        while x != w {
                            x = parent[x];
                            cycle.push(x);
                        }
                        cycle.reverse();
                        return Err(ScheduleError::Cycle {
                            systems: cycle
                                .iter()
                                .map(|&i| nodes[i].config.name.clone())
                                .collect(),
                        });
                    }
                    _ => {}
                }
            } else {
                colour[v] = 2;
                stack.pop();
            }
        }
    }
    Ok(())
}

/// The first write of a type the registry keeps, else the first access conflict within one
/// system.
pub(crate) fn check_access(name: &str, access: &SystemAccess) -> Result<(), ScheduleError> {
    if let Some(kept) = access.writes_kept() {
        return Err(ScheduleError::KeptComponent {
            system: name.to_owned(),
            type_name: entry_name(kept),
        });
    }
    match access.self_conflict() {
        Some((a, _)) => Err(ScheduleError::ConflictingAccess {
            system: name.to_owned(),
            type_name: entry_name(&a),
        }),
        None => Ok(()),
    }
}

fn entry_name(e: &AccessEntry) -> &'static str {
    e.name
}

/// Resolves the segments of `nodes`, whose declared order was checked. `exclusive` is the
/// number of exclusive systems of the phase (segments `0..=exclusive`).
pub(crate) fn resolve(
    nodes: &[FnNode],
    set_orders: &[(String, String)],
    exclusive: usize,
) -> Result<Vec<Segment>, ScheduleError> {
    let (edges, unknown) = declared_edges(nodes, set_orders);
    if let Some((system, name)) = unknown.into_iter().next() {
        return Err(ScheduleError::UnknownName { system, name });
    }
    let segments = exclusive.max(nodes.iter().map(|n| n.segment).max().unwrap_or(0)) + 1;
    let mut out = Vec::with_capacity(segments);
    for seg in 0..segments {
        let members: Vec<usize> = (0..nodes.len())
            .filter(|&i| nodes[i].segment == seg)
            .collect();
        let local = |g: usize| members.binary_search(&g).ok();
        let n = members.len();
        let mut reach = Reach::new(n);
        let mut succ: Vec<Vec<(u32, EdgeReason)>> = vec![Vec::new(); n];
        let mut preds = vec![0u32; n];
        for (a, b, reason) in &edges {
            if let (Some(a), Some(b)) = (local(*a), local(*b)) {
                if succ[a].iter().any(|(t, _)| *t as usize == b) {
                    continue;
                }
                succ[a].push((b as u32, EdgeReason::Declared(reason.clone())));
                preds[b] += 1;
                reach.add_edge(a, b);
            }
        }
        // Nearest earlier system first: once `j` waits for a conflicting `i`, every system
        // that `i` already waits for reaches `j` through it and needs no edge of its own; the
        // order is the same either way. (Farthest first, `n` systems writing one type got an
        // edge per pair: n^2 / 2 edges to resolve and to count down every tick.)
        for j in 0..n {
            for i in (0..j).rev() {
                if reach.get(i, j) || reach.get(j, i) {
                    continue;
                }
                let (ni, nj) = (&nodes[members[i]], &nodes[members[j]]);
                if let Some((type_name, _)) = ni.access.conflict_with(&nj.access) {
                    succ[i].push((j as u32, EdgeReason::Conflict(type_name)));
                    preds[j] += 1;
                    reach.add_edge(i, j);
                }
            }
        }
        // Kahn's order, lowest index first: the order one worker runs them in.
        let mut left = preds.clone();
        let mut ready: std::collections::BTreeSet<u32> =
            (0..n as u32).filter(|&i| left[i as usize] == 0).collect();
        let mut topo = Vec::with_capacity(n);
        while let Some(v) = ready.pop_first() {
            topo.push(v);
            for (w, _) in &succ[v as usize] {
                left[*w as usize] -= 1;
                if left[*w as usize] == 0 {
                    ready.insert(*w);
                }
            }
        }
        debug_assert_eq!(topo.len(), n, "the declared order was checked acyclic");
        let roots = (0..n as u32).filter(|&v| preds[v as usize] == 0).collect();
        let prepares = members
            .iter()
            .copied()
            .filter(|&i| nodes[i].system.prepares())
            .collect();
        out.push(Segment {
            nodes: members,
            succ,
            preds,
            topo,
            roots,
            prepares,
        });
    }
    Ok(out)
}
