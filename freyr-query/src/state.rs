//! [`QueryState`]: a query's resolved ids, its matched archetypes and the cursor that lets it pick
//! up new archetypes without rescanning old ones.

use std::sync::Arc;

use freyr_core::{ArchetypeId, ChangedEntry, ChunkRef, Disabled, Entity, World, WorldId};

use crate::access::{Access, TypeAccess};
use crate::changed::{ArchetypeTicks, TickTerm};
use crate::error::QueryError;
use crate::fetch::{ColumnPtr, QueryData};
use crate::filter::QueryFilter;

/// One layout of one world (point 7 of the registry's soundness argument, `registry/world.rs`):
/// equal stamps mean that no `&mut World` was handed out in between, so pointers into the
/// chunks read under the first are still valid under the second. Made only by
/// `SyncedWorld::read_with_layout`, the one caller of [`LayoutStamp::new`]; it lives here, below
/// the registry, because [`QueryState`] keeps the stamp its cached pointers were read under.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LayoutStamp {
    world: WorldId,
    epoch: u64,
}

impl LayoutStamp {
    /// The stamp of `world` after `epoch` exclusive borrows. Only `SyncedWorld`, which counts
    /// those borrows, may call this: a stamp made anywhere else could make stale pointers look
    /// valid.
    pub fn new(world: WorldId, epoch: u64) -> LayoutStamp {
        LayoutStamp { world, epoch }
    }
}

/// One archetype a query matched, with the column indices its fetch needs.
#[derive(Copy, Clone, Debug)]
pub struct MatchedArchetype<C> {
    pub id: ArchetypeId,
    pub columns: C,
}

/// One run of consecutive chunks of a matched archetype ([`Archetype::runs`]): the fetch's
/// column base pointers, the entity array and the row count, as read under one layout.
///
/// [`Archetype::runs`]: freyr_core::Archetype::runs
#[derive(Copy, Clone)]
pub(crate) struct RunPtrs<P> {
    pub ptrs: P,
    pub entities: ColumnPtr<Entity>,
    pub len: usize,
}

/// The runs of every matched archetype, in (archetype creation, run) order, read under the
/// layout `stamp` names: what `each` walks, so that a query over many small archetypes does not
/// look up each archetype's chunks, slabs and columns again on every call.
///
/// ```text
///  stamp = (world id, epoch)   epoch: how many times the registry handed out &mut World
///  runs  = [ (ptrs, entities, len) of a0's run 0 | a0's run 1 | a3's run 0 | ... ]
///           valid exactly while the registry's current stamp equals `stamp`
/// ```
struct RunCache<P> {
    /// The layout `runs` was read under; `None` when it must be read again.
    stamp: Option<LayoutStamp>,
    runs: Vec<RunPtrs<P>>,
    /// The changed ticks of the written columns of every chunk of `runs`, located under the
    /// same layout: what a run stamps before its rows, one store each and no lookups.
    written: Vec<ChangedEntry>,
    /// The rows of all `runs`.
    rows: usize,
    /// How many times `runs` was read from the world (see [`QueryState::layouts_read`]).
    reads: usize,
}

/// What [`QueryState::runs`] hands `each`: the runs, the changed ticks of their written columns
/// to stamp, and the row count, all read under one layout. Opaque outside this crate: only
/// `each`'s row walk reads it.
pub struct Runs<'a, P> {
    pub(crate) runs: &'a [RunPtrs<P>],
    pub(crate) written: &'a [ChangedEntry],
    pub(crate) rows: usize,
}

/// The cached, incrementally refreshed state of a query `Q` with filter `F`.
///
/// ```text
///  world.archetypes():  [ a0 | a1 | a2 | a3 | a4 ]   archetypes are only ever appended
///                                          ^
///                                        cursor = 4: a0..a3 examined, a4 is new
///  matched:             [ a1, a3 ]        (in archetype creation order)
/// ```
///
/// [`update`](QueryState::update) examines only the archetypes at and after `cursor`, because an
/// archetype's component set never changes once created. A state belongs to the world it was
/// built from (its [`WorldId`]): updated against any other world — one that replaced it, or was
/// swapped or taken into its place — it starts over, so its ids and archetypes never describe
/// the wrong world. The registry keeps one `QueryState` per
/// `(Q, F)` pair, so a query built on every call costs a map lookup plus the new archetypes.
///
/// Archetypes holding [`Disabled`] are not matched unless `Q` or `F` names `Disabled`
/// (`With<Disabled>`, `Without<Disabled>`, `Option<&Disabled>`): disabled entities are
/// skipped by default.
///
/// # Examples
///
/// ```
/// use freyr::Registry;
///
/// struct A;
/// struct B;
///
/// let mut registry = Registry::with_workers(1);
/// registry.spawn((A,));
/// assert_eq!(registry.query::<&A>().count(), 1);
/// let examined = registry.query_state::<&A, ()>().unwrap().archetypes_examined();
///
/// registry.spawn((A, B)); // a new archetype
/// assert_eq!(registry.query::<&A>().count(), 2);
/// let state = registry.query_state::<&A, ()>().unwrap();
/// assert_eq!(state.matched_archetypes().count(), 2);
/// assert_eq!(state.archetypes_examined(), examined + 1);
/// ```
pub struct QueryState<Q: QueryData, F: QueryFilter = ()> {
    /// The world `data`, `matched` and `access` describe.
    world: WorldId,
    data: Q::State,
    filter: F::State,
    matched: Vec<MatchedArchetype<Q::Columns>>,
    /// Per matched archetype (same order): the column indices `Q` writes, which a run stamps
    /// changed on every chunk it visits.
    written: Vec<Box<[usize]>>,
    /// Number of archetypes (a prefix of `world.archetypes()`) already examined.
    cursor: usize,
    /// Total archetype examinations ever made; equals `cursor` unless ids were resolved late.
    examined: usize,
    access: Arc<Access>,
    /// The matched archetypes' runs under one layout (see [`RunCache`]); cleared whenever
    /// `matched` changes.
    runs: RunCache<Q::Ptrs>,
    /// Whether archetypes holding [`Disabled`] are skipped: `Q` and `F` do not name it.
    skip_disabled: bool,
}

impl<Q: QueryData, F: QueryFilter> QueryState<Q, F> {
    /// Checks `Q` for conflicting access and resolves it against `world`, matching every
    /// archetype that exists now.
    ///
    /// # Errors
    ///
    /// [`QueryError::ConflictingAccess`] if `Q` writes a type twice or writes and reads it,
    /// naming that type.
    pub fn new(world: &World) -> Result<Self, QueryError> {
        Self::type_access().check()?;
        let data = Q::init_state(world);
        let filter = F::init_state(world);
        let access = Arc::new(Self::component_access(&data, &[]));
        let mut state = QueryState {
            world: world.id(),
            data,
            filter,
            matched: Vec::new(),
            written: Vec::new(),
            cursor: 0,
            examined: 0,
            access,
            runs: RunCache {
                stamp: None,
                runs: Vec::new(),
                written: Vec::new(),
                rows: 0,
                reads: 0,
            },
            skip_disabled: !Self::type_access().mentions::<Disabled>()
                && !F::mentions(core::any::TypeId::of::<Disabled>()),
        };
        state.update(world);
        Ok(state)
    }

    /// The types `Q` accesses.
    pub fn type_access() -> TypeAccess {
        let mut out = TypeAccess::new();
        Q::type_access(&mut out);
        out
    }

    /// `Q`'s component access, confined to the `matched` archetypes: a query touches no row
    /// outside them.
    fn component_access(data: &Q::State, matched: &[MatchedArchetype<Q::Columns>]) -> Access {
        let mut access = Access::new();
        Q::component_access(data, &mut access);
        access.confine_to_none();
        for m in matched {
            access.confine_to(m.id);
        }
        access
    }

    /// Resolves late-registered component ids and matches the archetypes created since the last
    /// update. Never re-examines an archetype already examined — unless `world` is not the world
    /// this state was built from ([`World::id`] differs): then it resolves and matches from
    /// scratch against `world`.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::World;
    /// use freyr::query::QueryState;
    ///
    /// struct A(u32);
    /// struct B(u64);
    ///
    /// let mut old = World::new();
    /// old.spawn((A(1),));
    /// let mut state = QueryState::<&A>::new(&old).unwrap();
    /// let mut new = World::new();
    /// new.spawn((B(2),)); // takes the component id `A` had in `old`
    /// new.spawn((A(3),));
    /// state.update(&new);
    /// let matched: Vec<_> = state.matched_archetypes().collect();
    /// assert_eq!(matched.len(), 1);
    /// assert!(new.archetype(matched[0]).has(new.component_id::<A>().unwrap()));
    /// ```
    #[inline]
    pub fn update(&mut self, world: &World) {
        if self.world != world.id() {
            self.restart(world);
            return;
        }
        let data_changed = Q::resolve(&mut self.data, world);
        F::resolve(&mut self.filter, world);
        if !data_changed && self.cursor == world.archetypes().len() && !self.matched.is_empty() {
            // No archetype since the last refresh and no newly registered type: the matches,
            // the access and the cached runs all stand (the common case, every tick). This
            // much is inlined into the caller; the rest is out of line, so the code a system
            // runs every tick stays small.
            return;
        }
        self.refresh(world, data_changed);
    }

    /// [`update`](QueryState::update) for a state made for another world: starts over.
    #[inline(never)]
    fn restart(&mut self, world: &World) {
        self.world = world.id();
        self.data = Q::init_state(world);
        self.filter = F::init_state(world);
        self.matched.clear();
        self.written.clear();
        self.cursor = 0;
        self.access = Arc::new(Self::component_access(&self.data, &[]));
        let data_changed = Q::resolve(&mut self.data, world);
        F::resolve(&mut self.filter, world);
        self.refresh(world, data_changed);
    }

    /// [`update`](QueryState::update) past its common case: matches the archetypes created
    /// since the last refresh (all of them when nothing matched yet or a type was newly
    /// resolved, `data_changed`).
    #[inline(never)]
    fn refresh(&mut self, world: &World, data_changed: bool) {
        let archetypes = world.archetypes();
        let matched_before = self.matched.len();
        let mut writes: Option<Access> = None;
        // An archetype examined before `Disabled` was registered cannot hold it.
        let disabled = world
            .component_id::<Disabled>()
            .filter(|_| self.skip_disabled);
        for archetype in &archetypes[self.cursor..] {
            self.examined += 1;
            if Q::matches(&self.data, archetype)
                && F::matches(&self.filter, archetype)
                && !disabled.is_some_and(|id| archetype.has(id))
            {
                self.matched.push(MatchedArchetype {
                    id: archetype.id(),
                    columns: Q::columns(&self.data, archetype),
                });
                let writes = writes.get_or_insert_with(|| {
                    let mut access = Access::new();
                    Q::component_access(&self.data, &mut access);
                    access
                });
                let written = archetype.components().iter().enumerate();
                self.written.push(
                    written
                        .filter(|(_, id)| writes.writes().contains(**id))
                        .map(|(column, _)| column)
                        .collect(),
                );
            }
        }
        self.cursor = archetypes.len();
        if data_changed || self.matched.len() != matched_before {
            // A fresh `Arc`: launches in flight keep the access (and the archetypes) they were
            // launched with.
            self.access = Arc::new(Self::component_access(&self.data, &self.matched));
        }
        if self.matched.len() != matched_before || matched_before == 0 {
            // New matches (or a state started over): the cached runs do not cover them.
            self.runs.stamp = None;
        }
    }

    /// The runs of the matched archetypes in `world`, in (archetype creation, run) order, and
    /// the changed ticks of the columns `Q` writes in their chunks, read again only when `stamp` differs
    /// from the layout they were read under. Call after [`update`](QueryState::update) against
    /// the same `world`.
    ///
    /// The pointers are only computed here, never dereferenced. They point at the rows and the
    /// change ticks of `world` for as long as `stamp` is the registry's current layout stamp
    /// (the argument is point 7 of `world.rs`): the ticks, like the rows, move or
    /// change in number only under `&mut World`.
    pub fn runs(&mut self, world: &World, stamp: LayoutStamp) -> Runs<'_, Q::Ptrs> {
        if self.runs.stamp != Some(stamp) {
            // Unset first: if reading panics, a half-filled list is never taken for complete.
            self.runs.stamp = None;
            self.runs.runs.clear();
            self.runs.written.clear();
            self.runs.rows = 0;
            for (matched, written) in self.matched.iter().zip(&self.written) {
                let archetype = world.archetype(matched.id);
                for &column in written.iter() {
                    self.runs.written.extend(archetype.changed_entries(column));
                }
                for run in archetype.runs() {
                    self.runs.rows += run.len();
                    self.runs.runs.push(RunPtrs {
                        ptrs: Q::ptrs(matched.columns, run),
                        entities: <Entity as QueryData>::ptrs((), run),
                        len: run.len(),
                    });
                }
            }
            self.runs.stamp = Some(stamp);
            self.runs.reads += 1;
        }
        Runs {
            runs: &self.runs.runs,
            written: &self.runs.written,
            rows: self.runs.rows,
        }
    }

    /// How many times this state has read the world's chunk layout into its list of runs:
    /// once per layout it was used under. The layout ends only when the world is borrowed
    /// exclusively (a spawn, a despawn, an insert, a removal, a sync point that applies
    /// commands or destructions, [`World`] access through `&mut`); a tick whose sync point has
    /// nothing to apply keeps it, so a query run every tick reads it once, not once per tick.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Phase, Registry};
    ///
    /// struct Hp(u32);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.spawn((Hp(10),));
    /// registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
    ///     r.query::<&mut Hp>().each(|_, hp| hp.0 += 1);
    /// });
    /// for _ in 0..5 {
    ///     registry.update(0.0);
    /// }
    /// let reads = |r: &Registry| r.query_state::<&mut Hp, ()>().unwrap().layouts_read();
    /// assert_eq!(reads(&registry), 1, "five ticks with nothing applied: one layout");
    /// registry.spawn((Hp(0),));
    /// registry.update(0.0);
    /// assert_eq!(reads(&registry), 2, "a spawn ends the layout");
    /// ```
    pub fn layouts_read(&self) -> usize {
        self.runs.reads
    }

    /// The matched archetypes, in creation order.
    pub fn matched_archetypes(&self) -> impl ExactSizeIterator<Item = ArchetypeId> + '_ {
        self.matched.iter().map(|m| m.id)
    }

    /// How many archetypes have been examined in total over this state's life. Without new
    /// archetypes it does not grow, which is how tests prove that refreshes are incremental.
    pub fn archetypes_examined(&self) -> usize {
        self.examined
    }

    /// The resolved component access of `Q`, confined to the matched archetypes.
    pub fn access(&self) -> &Access {
        &self.access
    }

    pub fn shared_access(&self) -> Arc<Access> {
        Arc::clone(&self.access)
    }

    pub fn matched(&self) -> &[MatchedArchetype<Q::Columns>] {
        &self.matched
    }

    /// The column indices `Q` writes in the `i`-th matched archetype.
    pub fn written(&self, i: usize) -> &[usize] {
        &self.written[i]
    }

    /// Calls `visit` with every chunk of the matched archetypes of `world` (the world this state
    /// was refreshed against) that passes the change filter `terms`, with its matched archetype
    /// and its index in the archetype, in (archetype, chunk) order, after stamping `tick` on
    /// the chunk's written columns: the chunk walk of a change-filtered `each`, `each_chunk`,
    /// `each_with` and launch.
    #[inline]
    pub(crate) fn for_each_selected_chunk<'s, 'w>(
        &'s self,
        world: &'w World,
        (terms, tick): (&[TickTerm], u64),
        mut visit: impl FnMut(&'s MatchedArchetype<Q::Columns>, usize, ChunkRef<'w>),
    ) {
        for (i, matched) in self.matched.iter().enumerate() {
            let archetype = world.archetype(matched.id);
            let Some(select) = ArchetypeTicks::new(archetype, terms, self.written(i), tick) else {
                continue;
            };
            for (index, chunk) in archetype.chunks().enumerate() {
                if select.select(index) {
                    visit(matched, index, chunk);
                }
            }
        }
    }
}
