//! In-memory snapshots of a [`World`], for rollback: [`SnapshotTypes`] (which component types
//! are copied, and how), [`WorldSnapshot`] (the copy) and [`ParallelFor`] (who runs the copying).
//!
//! A snapshot copies everything observable: the component table (ids in first-use order), the
//! archetypes in creation order (empty ones too) with their slab structure, every chunk's rows in
//! order, the entity allocator (slots and free stack) and the chunk ids. Caches (the archetype
//! index, bundle and edge caches) are not copied: a restored world rebuilds them, and it gets a
//! fresh [`WorldId`](crate::WorldId), so no cache built from another world reads it.
//!
//! The copying is split into work units of one column of a run of up to eight consecutive
//! chunks of one slab (whose rows of a column lie back to back, so a unit is one copy), run by
//! a [`ParallelFor`]: pure copying, so the result is the same for any number of threads.

mod allocator;
mod columns;
mod restore;
mod types;

use core::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::CHUNK_CAPACITY;
use crate::archetype::Archetype;
use crate::column::for_each_finishing_on_panic;
use crate::component::{ComponentId, ComponentInfo};
use crate::entity::Entity;
use crate::world::World;

use self::allocator::AllocatorImage;
use self::columns::{RawBuf, ValueOps};

pub use self::types::{MissingSnapshotTypes, SnapshotTypes};

/// Runs `f(i)` for every `i` in `0..count`, possibly on several threads: how a snapshot's
/// copying is spread over a pool. An implementation must call `f` for every index (a snapshot
/// whose work was skipped is refused: its taking panics) and propagate a panic of `f` once the
/// other calls are done or abandoned. Calling an index twice is harmless (the second call does
/// nothing).
///
/// # Examples
/// ```
/// use freyr::snapshot::{ParallelFor, Sequential};
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// let sum = AtomicUsize::new(0);
/// Sequential.parallel_for(4, &|i| {
///     sum.fetch_add(i, Ordering::Relaxed);
/// });
/// assert_eq!(sum.into_inner(), 6);
/// ```
pub trait ParallelFor {
    /// Calls `f(i)` for every `i` in `0..count`.
    fn parallel_for(&self, count: usize, f: &(dyn Fn(usize) + Sync));
}

/// The [`ParallelFor`] that runs every index in order on the calling thread.
#[derive(Copy, Clone, Debug, Default)]
pub struct Sequential;

impl ParallelFor for Sequential {
    fn parallel_for(&self, count: usize, f: &(dyn Fn(usize) + Sync)) {
        (0..count).for_each(f);
    }
}

/// The entity column's work units carry this column number.
const ENTITY_COLUMN: u32 = u32::MAX;
/// Unit states: not started, running, its values are in place.
const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const DONE: u8 = 2;

/// The most chunks one work unit copies: a unit of 16-byte values is then one copy of up to
/// 64 KiB, large enough that the copy runs at the speed of one long copy (512-row units, one
/// chunk each, ran a restore at 1.45x to 1.6x the time of one copy of the same bytes), and
/// small enough that two workers share an archetype of a few dozen chunks evenly. Under Miri,
/// two: its tests' worlds of a few 64-row chunks then still split a slab into several runs.
const RUN_CHUNKS: usize = if cfg!(miri) { 2 } else { 8 };

/// One work unit: one column (or the entity column) of the run of `chunks` non-empty chunks
/// from `chunk`, all in one slab, so the run's rows of a column are contiguous (the slab is
/// column-major) as they are in the snapshot's buffer. Every chunk of an archetype but its
/// last is full, so the run's rows are those of its chunks back to back.
#[derive(Copy, Clone, Debug)]
struct Unit {
    archetype: u32,
    column: u32,
    chunk: u32,
    chunks: u32,
}

/// One column of an archetype, copied.
struct ColumnImage {
    /// `None` in an empty archetype (no values, no registration needed).
    ops: Option<ValueOps>,
    /// `chunk_count * CHUNK_CAPACITY` values, chunk `c` from value `c * CHUNK_CAPACITY`.
    buf: RawBuf,
}

/// One archetype, copied: its component set, slabs, chunk ids, rows.
struct ArchetypeImage {
    components: Vec<ComponentId>,
    len: usize,
    /// Chunks per slab, in order.
    slabs: Vec<u32>,
    /// Global id of every allocated chunk (empty spare chunks too), in order.
    chunk_ids: Vec<u32>,
    entities: RawBuf,
    columns: Vec<ColumnImage>,
    /// Change ticks of every allocated chunk, chunk-major by column (restored as they were:
    /// a restore stamps nothing).
    changed: Vec<u64>,
    added: Vec<u64>,
}

impl ArchetypeImage {
    fn new() -> ArchetypeImage {
        ArchetypeImage {
            components: Vec::new(),
            len: 0,
            slabs: Vec::new(),
            chunk_ids: Vec::new(),
            entities: RawBuf::new(),
            columns: Vec::new(),
            changed: Vec::new(),
            added: Vec::new(),
        }
    }

    /// Whether restoring this archetype runs a `Clone` (a column of values not registered as
    /// a plain copy).
    fn clones(&self) -> bool {
        self.columns
            .iter()
            .any(|column| column.ops.is_some_and(|ops| ops.clone.is_some()))
    }

    /// Rows of the `chunks` chunks from chunk `first` (every chunk but the last is full).
    fn run_len(&self, first: usize, chunks: usize) -> usize {
        self.len
            .saturating_sub(first * CHUNK_CAPACITY)
            .min(chunks * CHUNK_CAPACITY)
    }
}

/// A copy of a [`World`], taken by [`World::snapshot`] or [`World::snapshot_into`] and turned
/// back into a world by [`World::restore_from`] or [`WorldSnapshot::restore`] (as often as
/// wanted: restoring does not consume it).
///
/// A snapshot owns clones of the component values; dropping it (or reusing it with
/// `snapshot_into`) drops each exactly once. Reusing one for a world whose layout did not
/// change allocates nothing.
///
/// # Examples
/// ```
/// use freyr::World;
/// use freyr::snapshot::SnapshotTypes;
/// let mut types = SnapshotTypes::new();
/// types.register_copy::<u32>();
/// let mut world = World::new();
/// let a = world.spawn((1u32,));
/// let snapshot = world.snapshot(&types).unwrap();
/// world.despawn(a).unwrap();
/// let b = world.spawn((2u32,)); // reuses a's index
/// let mut restored = World::restore_from(&snapshot);
/// assert_ne!(restored.id(), world.id());
/// assert_eq!(restored.get::<u32>(a), Ok(&1));
/// assert!(!restored.contains(b));
/// // The allocator is back too: the next id is the one the original world gave after `a`.
/// assert_eq!((restored.spawn((3u32,)).index(), b.index()), (1, 0));
/// ```
pub struct WorldSnapshot {
    components: Vec<ComponentInfo>,
    allocator: AllocatorImage,
    archetypes: Vec<ArchetypeImage>,
    /// Units of archetypes with a cloned column first ([`ArchetypeImage::clones`]), then the
    /// plain copies.
    units: Vec<Unit>,
    /// How many of `units` are those of archetypes with a cloned column.
    cloned_units: usize,
    states: Vec<AtomicU8>,
    complete: bool,
}

impl Default for WorldSnapshot {
    fn default() -> Self {
        WorldSnapshot::new()
    }
}

impl fmt::Debug for WorldSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorldSnapshot")
            .field("entities", &self.allocator.len())
            .field("archetypes", &self.archetypes.len())
            .field("complete", &self.complete)
            .finish()
    }
}

impl WorldSnapshot {
    /// An empty snapshot, to be filled by [`World::snapshot_into`] (restoring it panics).
    pub fn new() -> WorldSnapshot {
        WorldSnapshot {
            components: Vec::new(),
            allocator: AllocatorImage::default(),
            archetypes: Vec::new(),
            units: Vec::new(),
            cloned_units: 0,
            states: Vec::new(),
            complete: false,
        }
    }

    /// Whether the snapshot holds a whole world: false when new, or when its last taking
    /// panicked (a `Clone` panicked).
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Number of live entities copied.
    pub fn len(&self) -> usize {
        self.allocator.len()
    }

    /// Whether no live entity was copied.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every value this snapshot holds, each exactly once, even if a `Drop` panics.
    fn release_values(&mut self) {
        self.complete = false;
        let (units, states, archetypes) = (&self.units, &self.states, &self.archetypes);
        for_each_finishing_on_panic(units.len(), |i| {
            let unit = units[i];
            // Marked free before the drop, so a panicking `Drop` never leads to a second one.
            if states[i].swap(FREE, Ordering::Acquire) != DONE || unit.column == ENTITY_COLUMN {
                return;
            }
            let image = &archetypes[unit.archetype as usize];
            let column = &image.columns[unit.column as usize];
            let Some(ValueOps {
                drop: Some(drop),
                layout,
                ..
            }) = column.ops
            else {
                return;
            };
            let chunk = unit.chunk as usize;
            let at = column
                .buf
                .ptr()
                .wrapping_add(chunk * CHUNK_CAPACITY * layout.size());
            // SAFETY: the unit is DONE, so its run's values were cloned into the buffer from
            // that offset and are owned by the snapshot; its state is now FREE, so they are
            // dropped exactly once.
            unsafe { drop(at, image.run_len(chunk, unit.chunks as usize)) };
        });
    }

    /// Shapes the (valueless) snapshot like `world`: component table, allocator, archetypes,
    /// buffers and the unit list. Allocates only where `world` outgrew it.
    fn reshape(&mut self, world: &World, types: &SnapshotTypes) {
        let (entities, components, archetypes, chunks) = world.snapshot_parts();
        self.components.clear();
        self.components.extend_from_slice(components.infos());
        self.allocator.capture(entities, chunks);
        self.archetypes.truncate(archetypes.len());
        while self.archetypes.len() < archetypes.len() {
            self.archetypes.push(ArchetypeImage::new());
        }
        self.units.clear();
        for (image, archetype) in self.archetypes.iter_mut().zip(archetypes) {
            shape_archetype(image, archetype, types);
        }
        // The units of archetypes whose restore runs a `Clone` first: a restore runs them
        // before it touches the world it replaces (see `restore_over`).
        for cloned in [true, false] {
            for (a, (image, archetype)) in self.archetypes.iter().zip(archetypes).enumerate() {
                if image.clones() != cloned {
                    continue;
                }
                let live = archetype.chunk_count();
                // Runs of at most `RUN_CHUNKS` non-empty chunks, none across a slab's end.
                let mut slab_start = 0;
                for &slab in &image.slabs {
                    let slab_end = (slab_start + slab as usize).min(live);
                    let mut first = slab_start;
                    while first < slab_end {
                        let chunks = (slab_end - first).min(RUN_CHUNKS);
                        let unit = |column| Unit {
                            archetype: a as u32,
                            column,
                            chunk: first as u32,
                            chunks: chunks as u32,
                        };
                        self.units.push(unit(ENTITY_COLUMN));
                        for column in 0..image.columns.len() as u32 {
                            self.units.push(unit(column));
                        }
                        first += chunks;
                    }
                    slab_start += slab as usize;
                }
            }
            if cloned {
                self.cloned_units = self.units.len();
            }
        }
        self.states.clear();
        self.states
            .resize_with(self.units.len(), || AtomicU8::new(FREE));
    }

    /// Runs unit `i` of taking a snapshot of `archetypes` (claims it first: a second call does
    /// nothing).
    fn capture_unit(&self, archetypes: &[Archetype], i: usize) {
        if self.states[i]
            .compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        let unit = self.units[i];
        let (chunk, image) = (
            unit.chunk as usize,
            &self.archetypes[unit.archetype as usize],
        );
        let rows = &archetypes[unit.archetype as usize].rows;
        let window = rows.window(chunk);
        let count = image.run_len(chunk, unit.chunks as usize);
        let (src, dst, ops) = if unit.column == ENTITY_COLUMN {
            let dst = image.entities.ptr().cast::<Entity>();
            (
                window.entities().cast::<u8>(),
                dst.wrapping_add(chunk * CHUNK_CAPACITY).cast(),
                ValueOps::copy::<Entity>(),
            )
        } else {
            let column = &image.columns[unit.column as usize];
            let ops = column
                .ops
                .expect("a non-empty archetype's columns have their ops");
            let size = ops.layout.size();
            let src = rows.slot(window, unit.column as usize, 0);
            (
                src,
                column.buf.ptr().wrapping_add(chunk * CHUNK_CAPACITY * size),
                ops,
            )
        };
        // SAFETY: `src` is row 0 of the run's first chunk in the world's archetype; the run's
        // chunks lie in one slab, whose column-major layout puts their rows of this column back
        // to back, and all but the archetype's last chunk are full, so `count` initialised
        // values of the column's type follow (dense-chunk invariant); the world is borrowed
        // shared for the whole snapshot. `dst` is the run's slot range in a buffer sized and
        // aligned for `chunk_count * CHUNK_CAPACITY` values by `reshape` (chunk `c` from value
        // `c * CHUNK_CAPACITY`), holding no live value (the unit is claimed once, after
        // `release_values`), and no other unit writes it. `ops` matches the column's type: `reshape` looked it up by the
        // column's `TypeId`.
        unsafe { ops.copy_values(src, dst, count) };
        self.states[i].store(DONE, Ordering::Release);
    }
}

/// Shapes `image` like `archetype` (no values copied).
fn shape_archetype(image: &mut ArchetypeImage, archetype: &Archetype, types: &SnapshotTypes) {
    let rows = &archetype.rows;
    image.components.clear();
    image.components.extend_from_slice(archetype.components());
    image.len = rows.len;
    image.slabs.clear();
    image
        .slabs
        .extend(rows.chunks.slab_sizes().map(|k| k as u32));
    image.chunk_ids.clear();
    image
        .chunk_ids
        .extend(rows.chunks.list.iter().map(|c| c.id));
    rows.ticks
        .export_into(rows.chunks.list.len(), &mut image.changed, &mut image.added);
    let capacity = archetype.chunk_count() * CHUNK_CAPACITY;
    image
        .entities
        .ensure(capacity * size_of::<Entity>(), align_of::<Entity>());
    image.columns.truncate(rows.columns.len());
    while image.columns.len() < rows.columns.len() {
        image.columns.push(ColumnImage {
            ops: None,
            buf: RawBuf::new(),
        });
    }
    for (column, image) in rows.columns.iter().zip(image.columns.iter_mut()) {
        image.ops = None;
        if rows.len == 0 {
            continue;
        }
        let ops = *types
            .ops
            .get(&column.type_id)
            .expect("checked: every live column type is registered");
        image
            .buf
            .ensure(capacity * ops.layout.size(), ops.layout.align());
        image.ops = Some(ops);
    }
}

impl Drop for WorldSnapshot {
    fn drop(&mut self) {
        self.release_values();
    }
}

impl World {
    /// Copies this world into a new [`WorldSnapshot`] on the calling thread (see
    /// [`snapshot_into`](World::snapshot_into)).
    ///
    /// # Errors
    /// [`MissingSnapshotTypes`] naming every component type of a live entity that `types`
    /// does not copy.
    ///
    /// # Examples
    /// ```
    /// use freyr::World;
    /// use freyr::snapshot::SnapshotTypes;
    /// let mut types = SnapshotTypes::new();
    /// types.register_copy::<u8>();
    /// let mut world = World::new();
    /// world.spawn((1u8,));
    /// assert_eq!(world.snapshot(&types).unwrap().len(), 1);
    /// ```
    pub fn snapshot(&self, types: &SnapshotTypes) -> Result<WorldSnapshot, MissingSnapshotTypes> {
        let mut snapshot = WorldSnapshot::new();
        self.snapshot_into(&mut snapshot, types, &Sequential)?;
        Ok(snapshot)
    }

    /// Copies this world into `snapshot`, reusing its buffers (it drops the values it held
    /// first), with the copying spread over `parallel`. Reads the world only.
    ///
    /// # Errors
    /// [`MissingSnapshotTypes`] naming every component type of a live entity that `types`
    /// does not copy; `snapshot` is left as it was.
    ///
    /// # Panics
    /// Re-raises a panic of a component's `Clone`: the world is untouched, and every value
    /// cloned before the panic is dropped exactly once (now, or when `snapshot` is dropped or
    /// reused); `snapshot` is then incomplete ([`WorldSnapshot::is_complete`]) and restoring it
    /// panics. Panics too if `parallel` skipped work.
    ///
    /// # Examples
    /// ```
    /// use freyr::World;
    /// use freyr::snapshot::{SnapshotTypes, Sequential, WorldSnapshot};
    /// let mut types = SnapshotTypes::new();
    /// types.register_copy::<u64>();
    /// let mut world = World::new();
    /// let mut snapshot = WorldSnapshot::new();
    /// for tick in 0..3u64 {
    ///     world.spawn((tick,));
    ///     world.snapshot_into(&mut snapshot, &types, &Sequential).unwrap();
    /// }
    /// assert_eq!(World::restore_from(&snapshot).len(), 3);
    /// ```
    pub fn snapshot_into(
        &self,
        snapshot: &mut WorldSnapshot,
        types: &SnapshotTypes,
        parallel: &dyn ParallelFor,
    ) -> Result<(), MissingSnapshotTypes> {
        types.check(self)?;
        snapshot.release_values();
        snapshot.reshape(self, types);
        let archetypes = self.archetypes();
        let shared = &*snapshot;
        parallel.parallel_for(shared.units.len(), &|i| shared.capture_unit(archetypes, i));
        let skipped = shared
            .states
            .iter()
            .any(|s| s.load(Ordering::Acquire) != DONE);
        assert!(
            !skipped,
            "freyr: a ParallelFor skipped work units of a snapshot; it must call every index"
        );
        snapshot.complete = true;
        Ok(())
    }

    /// The world `snapshot` was taken of, on the calling thread (see
    /// [`WorldSnapshot::restore`]).
    ///
    /// # Panics
    /// If `snapshot` is incomplete; re-raises a panic of a component's `Clone`.
    ///
    /// # Examples
    /// ```
    /// use freyr::World;
    /// use freyr::snapshot::SnapshotTypes;
    /// let mut types = SnapshotTypes::new();
    /// types.register_copy::<u8>();
    /// let mut world = World::new();
    /// let e = world.spawn((1u8,));
    /// let snapshot = world.snapshot(&types).unwrap();
    /// world.clear();
    /// assert_eq!(World::restore_from(&snapshot).get::<u8>(e), Ok(&1));
    /// ```
    pub fn restore_from(snapshot: &WorldSnapshot) -> World {
        snapshot.restore(&Sequential)
    }
}
