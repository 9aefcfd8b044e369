//! Looking at a phase's function systems: checking its declared order
//! ([`Registry::check_schedule`]), printing its graph ([`Registry::schedule_graph`]) and reading
//! a system's declared access ([`Registry::system_access`]).

use freyr_profile::phase::Phase;

use crate::systems::graph;
use crate::systems::{GraphFormat, ScheduleError, SystemAccess};

use super::super::Registry;

impl Registry {
    /// Checks that every `before`/`after` of `phase`'s function systems names a system or a
    /// set of the phase, and resolves the phase's graph (which [`update`](Registry::update)
    /// would otherwise do on its first run, panicking on the same error).
    ///
    /// # Errors
    ///
    /// [`ScheduleError::UnknownName`] for the first name that matches nothing;
    /// [`ScheduleError::DuringUpdate`] for the phase that is running (from one of its
    /// exclusive systems), whose graph is in use.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Phase, Registry};
    /// use freyr::system::{ScheduleError, SystemConfig};
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry
    ///     .add_fn_system_with(Phase::Update, SystemConfig::new("a").before("typo"), || {})
    ///     .unwrap();
    /// assert!(matches!(
    ///     registry.check_schedule(Phase::Update),
    ///     Err(ScheduleError::UnknownName { .. })
    /// ));
    /// ```
    pub fn check_schedule(&mut self, phase: Phase) -> Result<(), ScheduleError> {
        if self.in_update && self.phase == Some(phase) {
            return Err(ScheduleError::DuringUpdate);
        }
        let exclusive = self.system_count(phase) - self.fn_systems[phase.index()].nodes.len();
        let schedule = &mut self.fn_systems[phase.index()];
        if schedule.segments.is_none() || schedule.exclusive != exclusive {
            schedule.segments = Some(graph::resolve(
                &schedule.nodes,
                &schedule.set_orders,
                exclusive,
            )?);
            schedule.exclusive = exclusive;
            schedule.runs.clear();
        }
        Ok(())
    }

    /// `phase`'s graph, as text in `format`: every function system by name, every exclusive
    /// system (a barrier) by its [`System::name`](crate::System::name), and every edge with its
    /// reason — `conflict on T` (the two systems' access conflicts on type `T`, so they keep
    /// registration order),
    /// `before x` / `after x` (declared), or `barrier` (an exclusive system between segments).
    /// Systems with no path between them run at the same time.
    ///
    /// # Errors
    ///
    /// As [`check_schedule`](Registry::check_schedule).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Phase, Registry};
    /// use freyr::system::{GraphFormat, Query, SystemConfig};
    ///
    /// struct Pos(f32);
    /// struct Hp(u32);
    ///
    /// let mut registry = Registry::with_workers(2);
    /// registry.add_fn_system(Phase::Update, "move", |_: Query<&mut Pos>| {}).unwrap();
    /// registry.add_fn_system(Phase::Update, "heal", |_: Query<&mut Hp>| {}).unwrap();
    /// registry.add_fn_system(Phase::Update, "look", |_: Query<&Pos>| {}).unwrap();
    /// registry
    ///     .add_fn_system_with(Phase::Update, SystemConfig::new("first").before("heal"), || {})
    ///     .unwrap();
    /// let dot = registry.schedule_graph(Phase::Update, GraphFormat::Dot).unwrap();
    /// assert!(dot.starts_with("digraph"));
    /// assert!(dot.contains(r#""move" -> "look" [label="conflict on"#));
    /// assert!(dot.contains(r#""first" -> "heal" [label="before heal"]"#));
    /// let mermaid = registry.schedule_graph(Phase::Update, GraphFormat::Mermaid).unwrap();
    /// assert!(mermaid.starts_with("flowchart TD"));
    /// assert!(!mermaid.contains("heal\"] -->|conflict")); // `heal` and `move` are disjoint
    /// ```
    pub fn schedule_graph(
        &mut self,
        phase: Phase,
        format: GraphFormat,
    ) -> Result<String, ScheduleError> {
        self.check_schedule(phase)?;
        let exclusive: Vec<String> = self.systems[phase.index()]
            .iter()
            .enumerate()
            .map(|(k, s)| format!("exclusive {k}: {}", s.name()))
            .collect();
        let schedule = &self.fn_systems[phase.index()];
        let segments = schedule
            .segments
            .as_ref()
            .expect("resolved by check_schedule");
        let name = |i: usize| schedule.nodes[i].config.name.clone();
        let mut nodes: Vec<String> = Vec::new();
        let mut edges: Vec<(String, String, String)> = Vec::new();
        for (k, segment) in segments.iter().enumerate() {
            nodes.extend(segment.nodes.iter().map(|&i| name(i)));
            for (v, succ) in segment.succ.iter().enumerate() {
                for (w, reason) in succ {
                    let reason = match reason {
                        graph::EdgeReason::Declared(r) => r.clone(),
                        graph::EdgeReason::Conflict(t) => format!("conflict on {t}"),
                    };
                    edges.push((
                        name(segment.nodes[v]),
                        name(segment.nodes[*w as usize]),
                        reason,
                    ));
                }
            }
            if k > 0 {
                let barrier = &exclusive[k - 1];
                for (v, &preds) in segment.preds.iter().enumerate() {
                    if preds == 0 {
                        edges.push((barrier.clone(), name(segment.nodes[v]), "barrier".into()));
                    }
                }
            }
            if let Some(barrier) = exclusive.get(k) {
                nodes.push(barrier.clone());
                if k > 0 && segments[k].nodes.is_empty() {
                    edges.push((exclusive[k - 1].clone(), barrier.clone(), "barrier".into()));
                }
                for (v, succ) in segment.succ.iter().enumerate() {
                    if succ.is_empty() {
                        edges.push((name(segment.nodes[v]), barrier.clone(), "barrier".into()));
                    }
                }
            }
        }
        // Backslashes first: a name ending in one would otherwise escape the closing quote.
        let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        let mut out = String::new();
        match format {
            GraphFormat::Dot => {
                out.push_str(&format!("digraph \"{}\" {{\n", phase.name()));
                for n in &nodes {
                    out.push_str(&format!("  \"{}\";\n", quote(n)));
                }
                for (a, b, r) in &edges {
                    out.push_str(&format!(
                        "  \"{}\" -> \"{}\" [label=\"{}\"];\n",
                        quote(a),
                        quote(b),
                        quote(r)
                    ));
                }
                out.push_str("}\n");
            }
            GraphFormat::Mermaid => {
                out.push_str("flowchart TD\n");
                let id = |n: &str| nodes.iter().position(|m| m == n).unwrap_or(usize::MAX);
                for (i, n) in nodes.iter().enumerate() {
                    out.push_str(&format!("  n{i}[\"{}\"]\n", n.replace('"', "#quot;")));
                }
                for (a, b, r) in &edges {
                    out.push_str(&format!(
                        "  n{} -->|{}| n{}\n",
                        id(a),
                        r.replace('|', "#124;").replace('"', "#quot;"),
                        id(b)
                    ));
                }
            }
        }
        Ok(out)
    }

    /// The declared access of `phase`'s function system `name`.
    pub fn system_access(&self, phase: Phase, name: &str) -> Option<&SystemAccess> {
        self.fn_systems[phase.index()]
            .nodes
            .iter()
            .find(|n| n.config.name == name)
            .map(|n| &n.access)
    }
}
