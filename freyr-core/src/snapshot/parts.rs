//! A [`WorldSnapshot`] taken apart and put together again, for saving to a file and loading it:
//! [`WorldSnapshot::archetype_view`] reads one archetype's rows as slices, and
//! [`WorldSnapshot::from_parts`] builds a snapshot from decoded [`SnapshotParts`] after checking
//! every invariant a restore relies on, so that no input, however made, can break memory safety.

use core::any::TypeId;
use core::fmt;

use crate::CHUNK_CAPACITY;
use crate::component::{Component, ComponentId, ComponentInfo, fresh_component_id};
use crate::entity::{Entity, FREE, MAX_CHUNKS, ROW_BITS};

use super::allocator::AllocatorImage;
use super::columns::RawBuf;
use super::{ArchetypeImage, ColumnImage, SnapshotTypes, WorldSnapshot};

/// The entity allocator and chunk-id table of a snapshot, as plain data.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocatorParts {
    /// One slot per entity index ever handed out.
    pub slots: Vec<u32>,
    /// The free-index stack, bottom first.
    pub free: Vec<u32>,
    /// Live entity count.
    pub len: usize,
    /// Number of chunk ids ever handed out.
    pub chunk_ids: usize,
    /// Free chunk ids, in stack order.
    pub free_chunks: Vec<u32>,
}

/// One archetype of a snapshot, borrowed: its component ids, slabs, chunk ids and rows.
pub struct ArchetypeView<'a> {
    image: &'a ArchetypeImage,
    infos: &'a [ComponentInfo],
}

impl<'a> ArchetypeView<'a> {
    /// The component ids, ascending.
    pub fn components(&self) -> &'a [ComponentId] {
        &self.image.components
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.image.len
    }

    /// Whether it has no rows.
    pub fn is_empty(&self) -> bool {
        self.image.len == 0
    }

    /// Chunks per slab, in order.
    pub fn slabs(&self) -> &'a [u32] {
        &self.image.slabs
    }

    /// Global id of every allocated chunk, in order.
    pub fn chunk_ids(&self) -> &'a [u32] {
        &self.image.chunk_ids
    }

    /// The entity of every row, in row order.
    pub fn entities(&self) -> &'a [Entity] {
        if self.image.len == 0 {
            return &[];
        }
        // SAFETY: a complete snapshot's entity buffer holds `len` initialised entities from its
        // start (chunk `c` at `c * CHUNK_CAPACITY`, every chunk but the last full), aligned.
        unsafe {
            core::slice::from_raw_parts(self.image.entities.ptr().cast::<Entity>(), self.image.len)
        }
    }

    /// The values of column `column` (the `column`-th of [`components`](Self::components)) in
    /// row order, or `None` if that column is not of type `T`.
    pub fn column<T: Component>(&self, column: usize) -> Option<&'a [T]> {
        let id = *self.image.components.get(column)?;
        if self.infos[id.index()].type_id() != TypeId::of::<T>() {
            return None;
        }
        if self.image.len == 0 {
            return Some(&[]);
        }
        let buf = &self.image.columns[column].buf;
        // SAFETY: the column holds `T`s (checked above by type id); a complete snapshot's
        // non-empty column buffer holds `len` initialised values from its start, aligned.
        Some(unsafe { core::slice::from_raw_parts(buf.ptr().cast::<T>(), self.image.len) })
    }
}

/// Owned values of one column, of a type known only at run time, to be moved into a snapshot.
pub struct ColumnValues {
    type_id: TypeId,
    len: usize,
    size: usize,
    ptr: *const u8,
    /// Gives up the values (they were moved out) or drops them (they were not).
    finish: Box<dyn FnOnce(bool) + Send>,
}

// SAFETY: the values are `Component`s (`Send + Sync`) owned by the `Vec` inside `finish`; `ptr`
// only points into that `Vec`.
unsafe impl Send for ColumnValues {}

impl ColumnValues {
    /// Takes `values`, in row order.
    pub fn new<T: Component>(mut values: Vec<T>) -> ColumnValues {
        let (ptr, len) = (values.as_mut_ptr(), values.len());
        ColumnValues {
            type_id: TypeId::of::<T>(),
            len,
            size: size_of::<T>(),
            ptr: ptr.cast::<u8>(),
            // Moving the `Vec` into the closure leaves its buffer (and `ptr`) where it is.
            finish: Box::new(move |moved| {
                if moved {
                    // SAFETY: the values were moved out bitwise; length 0 frees the buffer
                    // without dropping them.
                    unsafe { values.set_len(0) };
                }
                drop(values);
            }),
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for ColumnValues {
    fn drop(&mut self) {
        let finish = core::mem::replace(&mut self.finish, Box::new(|_| {}));
        finish(false);
    }
}

/// One archetype, decoded.
pub struct ArchetypeParts {
    /// The component ids, strictly ascending.
    pub components: Vec<ComponentId>,
    /// Chunks per slab, in order (each at least 1).
    pub slabs: Vec<u32>,
    /// Global id of every allocated chunk, in order.
    pub chunk_ids: Vec<u32>,
    /// The entity of every row.
    pub entities: Vec<Entity>,
    /// One per component, in the order of `components`, each as long as `entities`.
    pub columns: Vec<ColumnValues>,
}

/// A whole snapshot, decoded.
pub struct SnapshotParts {
    /// The component table in id order; build each entry with [`component_info`].
    pub components: Vec<ComponentInfo>,
    /// The allocator.
    pub allocator: AllocatorParts,
    /// The archetypes in creation order.
    pub archetypes: Vec<ArchetypeParts>,
}

/// The [`ComponentInfo`] of `T` as component number `index` of a [`SnapshotParts`].
pub fn component_info<T: Component>(index: usize) -> ComponentInfo {
    ComponentInfo::of::<T>(fresh_component_id(index))
}

/// Decoded parts that do not form a world: which invariant fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidParts(pub &'static str);

impl fmt::Display for InvalidParts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the world's parts are inconsistent: {}", self.0)
    }
}

impl std::error::Error for InvalidParts {}

fn ensure(ok: bool, what: &'static str) -> Result<(), InvalidParts> {
    if ok { Ok(()) } else { Err(InvalidParts(what)) }
}

impl WorldSnapshot {
    /// The component table (ids in order).
    pub fn component_infos(&self) -> &[ComponentInfo] {
        &self.components
    }

    /// The allocator, copied.
    pub fn allocator_parts(&self) -> AllocatorParts {
        self.allocator.parts()
    }

    /// Number of archetypes (empty ones too).
    pub fn archetype_count(&self) -> usize {
        self.archetypes.len()
    }

    /// Archetype `index` (creation order).
    ///
    /// # Panics
    /// If the snapshot is incomplete or `index` is out of range.
    pub fn archetype_view(&self, index: usize) -> ArchetypeView<'_> {
        assert!(self.complete, "freyr: reading an incomplete snapshot");
        ArchetypeView {
            image: &self.archetypes[index],
            infos: &self.components,
        }
    }

    /// A complete snapshot made of `parts`, whose values are moved in; `types` gives each
    /// column's copy operations (every type of a non-empty archetype must be registered).
    ///
    /// # Errors
    /// [`InvalidParts`] naming the first invariant that fails (component table, archetype
    /// sets, column types and lengths, slabs, chunk ids, or allocator slots against rows).
    pub fn from_parts(
        parts: SnapshotParts,
        types: &SnapshotTypes,
    ) -> Result<WorldSnapshot, InvalidParts> {
        check_parts(&parts, types)?;
        let SnapshotParts {
            components,
            allocator,
            archetypes,
        } = parts;
        let mut snapshot = WorldSnapshot::new();
        snapshot.components = components;
        snapshot.allocator = AllocatorImage::from_parts(allocator);
        for parts in archetypes {
            snapshot.archetypes.push(build_archetype(parts, types));
        }
        snapshot.rebuild_units();
        Ok(snapshot)
    }
}

/// Moves one checked archetype's values into a snapshot image.
fn build_archetype(parts: ArchetypeParts, types: &SnapshotTypes) -> ArchetypeImage {
    let len = parts.entities.len();
    let capacity = len.div_ceil(CHUNK_CAPACITY) * CHUNK_CAPACITY;
    let mut image = ArchetypeImage::new();
    image.components = parts.components;
    image.len = len;
    image.slabs = parts.slabs;
    image.chunk_ids = parts.chunk_ids;
    image
        .entities
        .ensure(capacity * size_of::<Entity>(), align_of::<Entity>());
    // SAFETY: the buffer holds `capacity >= len` entities; the source is `len` entities.
    unsafe {
        core::ptr::copy_nonoverlapping(
            parts.entities.as_ptr(),
            image.entities.ptr().cast::<Entity>(),
            len,
        )
    };
    for values in parts.columns {
        let mut column = ColumnImage {
            ops: None,
            buf: RawBuf::new(),
        };
        if len > 0 {
            let ops = types.ops[&values.type_id];
            column
                .buf
                .ensure(capacity * ops.layout.size(), ops.layout.align());
            // SAFETY: `values` holds `len` values of the column's type (checked), of
            // `values.size == layout.size()` bytes each; the buffer is sized and aligned for
            // `capacity >= len` of them. The bytes are moved: `finish(true)` below frees the
            // source without dropping them, so the snapshot owns them alone.
            unsafe {
                core::ptr::copy_nonoverlapping(values.ptr, column.buf.ptr(), len * values.size)
            };
            column.ops = Some(ops);
            let mut values = core::mem::ManuallyDrop::new(values);
            let finish = core::mem::replace(&mut values.finish, Box::new(|_| {}));
            finish(true);
        }
        image.columns.push(column);
    }
    image
}

/// Every invariant [`WorldSnapshot::restore`] and the restored world rely on.
fn check_parts(parts: &SnapshotParts, types: &SnapshotTypes) -> Result<(), InvalidParts> {
    let n = parts.components.len();
    for (i, info) in parts.components.iter().enumerate() {
        ensure(info.id().index() == i, "a component id is out of order")?;
        let repeated = parts.components[..i]
            .iter()
            .any(|other| other.type_id() == info.type_id());
        ensure(!repeated, "a component type appears twice")?;
    }
    let a = &parts.allocator;
    ensure(a.chunk_ids <= MAX_CHUNKS, "too many chunk ids")?;
    let mut chunk_used = vec![false; a.chunk_ids];
    let mut claim = |id: u32| -> Result<(), InvalidParts> {
        let used = chunk_used
            .get_mut(id as usize)
            .ok_or(InvalidParts("a chunk id is out of range"))?;
        ensure(!*used, "a chunk id is used twice")?;
        *used = true;
        Ok(())
    };
    for &id in &a.free_chunks {
        claim(id)?;
    }
    let mut sets: Vec<&[ComponentId]> = Vec::with_capacity(parts.archetypes.len());
    let mut live = 0usize;
    for archetype in &parts.archetypes {
        let ids = archetype.components.as_slice();
        ensure(
            ids.windows(2).all(|w| w[0] < w[1]),
            "an archetype's ids are not ascending",
        )?;
        ensure(
            ids.iter().all(|id| id.index() < n),
            "an archetype names an unknown component",
        )?;
        ensure(
            !sets.contains(&ids),
            "two archetypes have the same components",
        )?;
        sets.push(ids);
        ensure(archetype.slabs.iter().all(|&k| k > 0), "an empty slab")?;
        let chunks: u64 = archetype.slabs.iter().map(|&k| u64::from(k)).sum();
        ensure(
            chunks == archetype.chunk_ids.len() as u64,
            "slabs and chunk ids disagree",
        )?;
        let len = archetype.entities.len();
        ensure(
            len <= archetype.chunk_ids.len() * CHUNK_CAPACITY,
            "more rows than chunks hold",
        )?;
        ensure(archetype.columns.len() == ids.len(), "a column is missing")?;
        for (column, id) in archetype.columns.iter().zip(ids) {
            let type_id = parts.components[id.index()].type_id();
            ensure(
                column.type_id == type_id,
                "a column's type differs from its component",
            )?;
            ensure(
                column.len == len,
                "a column's length differs from the rows'",
            )?;
            ensure(
                len == 0 || types.ops.contains_key(&type_id),
                "a column's type is not registered",
            )?;
        }
        for &id in &archetype.chunk_ids {
            claim(id)?;
        }
        for (row, entity) in archetype.entities.iter().enumerate() {
            let chunk = archetype.chunk_ids[row / CHUNK_CAPACITY];
            let packed = (chunk << ROW_BITS) | (row % CHUNK_CAPACITY) as u32;
            let slot = a.slots.get(entity.index() as usize);
            ensure(
                slot == Some(&packed),
                "an entity's slot does not locate its row",
            )?;
        }
        live += len;
    }
    ensure(
        chunk_used.iter().all(|&u| u),
        "a chunk id is neither used nor free",
    )?;
    let located = a.slots.iter().filter(|&&s| s & FREE == 0).count();
    ensure(
        live == a.len && located == a.len,
        "the live count disagrees with the rows",
    )?;
    let mut on_stack = vec![false; a.slots.len()];
    for &index in &a.free {
        let slot = *a
            .slots
            .get(index as usize)
            .ok_or(InvalidParts("a free index is out of range"))?;
        ensure(
            slot & FREE != 0 && slot & !FREE != 0,
            "a free index's slot is not free",
        )?;
        ensure(
            !core::mem::replace(&mut on_stack[index as usize], true),
            "a free index repeats",
        )?;
    }
    Ok(())
}
