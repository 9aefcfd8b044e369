//! How one persistent component type's values are encoded and decoded ([`ColumnOps`]), through
//! one of two codecs: serde with postcard, value by value, or the raw little-endian bytes of a
//! [`Pod`] column at once (copied straight into a loaded world's chunks).

use core::alloc::Layout;
use core::any::{Any, TypeId};

use bytemuck::Pod;
use freyr_core::parts::{ColumnValues, component_info};
use freyr_core::{Archetype, ArchetypeId, ChunkRef, Component, ComponentId, ComponentInfo, World};
use serde::de::DeserializeOwned;
use serde::ser::{Serialize, SerializeSeq, Serializer};

use super::{ColumnEncoding, EntityMap, RemapFn};

/// Decoded, not yet inserted values of one column (a `Vec<T>`), for an import.
pub type Decoded = Box<dyn Any>;

/// A type-erased [`RemapFn`].
pub type RemapAny = std::sync::Arc<dyn Any + Send + Sync>;

/// Encodes and decodes the values of `T`.
pub trait Codec<T: Component> {
    /// How the file records it.
    const ENCODING: ColumnEncoding;
    /// How a save writes an archetype's column of `T`.
    fn encoder() -> ColumnEncoder;
    /// Appends the values of component `id` (a `T`) at the rows `rows`, in order.
    fn encode_rows(world: &World, rows: &[Row], id: ComponentId, out: &mut Vec<u8>);
    /// Exactly `len` values, or `None` if `bytes` are not that.
    fn decode(bytes: &[u8], len: usize) -> Option<Vec<T>>;
    /// As [`decode`](Codec::decode), as a column to build a world of (borrowing `bytes`
    /// where the encoding allows).
    fn decode_column(bytes: &[u8], len: usize) -> Option<ColumnValues<'_>> {
        Self::decode(bytes, len).map(ColumnValues::new)
    }
}

/// How a save writes one archetype's column of a type (component `id`, given).
#[derive(Clone, Copy)]
pub enum ColumnEncoder {
    /// Exactly `layout.size()` bytes a value: one chunk's values at a time, after the column's
    /// length, so each piece can be fed to the checksum while in cache.
    Chunks(fn(&ChunkRef<'_>, ComponentId, &mut Vec<u8>)),
    /// The whole column at once (its length is known once it is written).
    Whole(fn(&Archetype, ComponentId, &mut Vec<u8>)),
}

/// The column of component `id` (a `T`) of every row of an archetype, chunk after chunk, as
/// one serde sequence (the same bytes as a `Vec<T>` of them).
struct ArchetypeColumn<'a, T> {
    archetype: &'a Archetype,
    id: ComponentId,
    _type: core::marker::PhantomData<fn() -> T>,
}

impl<T: Component + Serialize> Serialize for ArchetypeColumn<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.archetype.len()))?;
        for values in chunk_columns::<T>(self.archetype, self.id) {
            for value in values {
                seq.serialize_element(value)?;
            }
        }
        seq.end()
    }
}

/// The values of component `id` (a `T`) of every chunk of `archetype`, in row order.
fn chunk_columns<T: Component>(
    archetype: &Archetype,
    id: ComponentId,
) -> impl Iterator<Item = &[T]> {
    archetype.chunks().map(move |chunk| {
        chunk
            .column::<T>(id)
            .expect("a persistent column holds its registered type")
    })
}

/// Serde and postcard: any `Serialize + DeserializeOwned` type, field by field.
pub struct SerdeCodec;

/// Where a live entity's values are: archetype, chunk, row.
pub type Row = (ArchetypeId, usize, usize);

/// Calls `f` with the value of component `id` (a `T`) at each of `rows`, in order; rows of one
/// chunk in a row (the usual export) look the chunk's column up once.
fn each_value<'w, T: Component>(
    world: &'w World,
    rows: &[Row],
    id: ComponentId,
    mut f: impl FnMut(&'w T),
) {
    let mut cached: Option<((ArchetypeId, usize), &'w [T])> = None;
    for &(archetype, chunk, row) in rows {
        let column = match cached {
            Some((at, column)) if at == (archetype, chunk) => column,
            _ => {
                let column = world
                    .archetype(archetype)
                    .chunk(chunk)
                    .column::<T>(id)
                    .expect("an exported entity has the component");
                cached = Some(((archetype, chunk), column));
                column
            }
        };
        f(&column[row]);
    }
}

impl<T: Component + Serialize + DeserializeOwned> Codec<T> for SerdeCodec {
    const ENCODING: ColumnEncoding = ColumnEncoding::Serde;

    fn encoder() -> ColumnEncoder {
        ColumnEncoder::Whole(|archetype, id, out| {
            let column = ArchetypeColumn::<T> {
                archetype,
                id,
                _type: core::marker::PhantomData,
            };
            *out = postcard::to_extend(&column, core::mem::take(out))
                .expect("postcard writes into a Vec");
        })
    }

    fn encode_rows(world: &World, rows: &[Row], id: ComponentId, out: &mut Vec<u8>) {
        let mut values: Vec<&T> = Vec::with_capacity(rows.len());
        each_value::<T>(world, rows, id, |v| values.push(v));
        let bytes = postcard::to_allocvec(&values).expect("postcard writes into a Vec");
        out.extend_from_slice(&bytes);
    }

    fn decode(bytes: &[u8], len: usize) -> Option<Vec<T>> {
        if bytes.is_empty() && len == 0 {
            return Some(Vec::new());
        }
        let (values, rest): (Vec<T>, &[u8]) = postcard::take_from_bytes(bytes).ok()?;
        (rest.is_empty() && values.len() == len).then_some(values)
    }
}

/// The values' bytes as they lie in memory: `Pod` types have no padding and every bit pattern
/// is a value, so the bytes are the whole value and any bytes decode. Taken only on
/// little-endian targets, where those bytes are the format's little-endian encoding.
#[cfg(target_endian = "little")]
pub struct RawCodec;

/// The bytes of `values` (none for a zero-sized type).
#[cfg(target_endian = "little")]
fn raw_bytes<T: Pod>(values: &[T]) -> &[u8] {
    match size_of::<T>() {
        0 => &[],
        _ => bytemuck::cast_slice(values),
    }
}

#[cfg(target_endian = "little")]
impl<T: Component + Pod> Codec<T> for RawCodec {
    const ENCODING: ColumnEncoding = ColumnEncoding::Raw;

    fn encoder() -> ColumnEncoder {
        ColumnEncoder::Chunks(|chunk, id, out| {
            let values = chunk
                .column::<T>(id)
                .expect("a persistent column holds its registered type");
            out.extend_from_slice(raw_bytes(values));
        })
    }

    fn encode_rows(world: &World, rows: &[Row], id: ComponentId, out: &mut Vec<u8>) {
        out.reserve(rows.len() * size_of::<T>());
        each_value::<T>(world, rows, id, |v| {
            out.extend_from_slice(raw_bytes(core::slice::from_ref(v)))
        });
    }

    fn decode(bytes: &[u8], len: usize) -> Option<Vec<T>> {
        if bytes.len() != len.checked_mul(size_of::<T>())? {
            return None;
        }
        // A zeroed allocation (fresh pages need no clearing), then one copy of the bytes.
        let mut values = bytemuck::zeroed_vec::<T>(len);
        if size_of::<T>() > 0 {
            bytemuck::cast_slice_mut::<T, u8>(&mut values).copy_from_slice(bytes);
        }
        Some(values)
    }

    fn decode_column(bytes: &[u8], len: usize) -> Option<ColumnValues<'_>> {
        // SAFETY: `T` is `Pod`: every `size_of::<T>()` bytes are a valid `T`.
        unsafe { ColumnValues::from_bytes::<T>(bytes, len) }
    }
}

/// How one persistent component type is named, encoded and decoded, and how its decoded values
/// enter a world. Knows nothing of the registry.
#[derive(Clone)]
pub struct ColumnOps {
    /// The stable, user-given name.
    pub name: &'static str,
    /// The user-given version.
    pub version: u32,
    /// How the values are written.
    pub encoding: ColumnEncoding,
    /// The component type.
    pub type_id: TypeId,
    /// The component's layout, checked on load.
    pub layout: Layout,
    /// The component's info for a world that has not seen the type.
    pub info: fn(usize) -> ComponentInfo,
    /// How a save writes an archetype's column of the type.
    pub encoder: ColumnEncoder,
    /// Decodes `len` values as a column to build a world of.
    pub decode_column: for<'a> fn(&'a [u8], usize) -> Option<ColumnValues<'a>>,
    /// The type's component id in a world, if it has one.
    pub component_id: fn(&World) -> Option<ComponentId>,
    /// The type's component id in a world, registering it if new.
    pub register: fn(&mut World) -> ComponentId,
    /// Appends the encoding of the values at these rows (each has the component, whose id is
    /// given).
    pub encode_rows: fn(&World, &[Row], ComponentId, &mut Vec<u8>),
    /// Decodes `len` values for an import.
    pub decode_values: fn(&[u8], usize) -> Option<Decoded>,
    /// Passes every decoded value through the type's remap hook (given) with the map.
    pub remap_values: fn(&mut Decoded, &EntityMap, &RemapAny),
    /// Decoded values as a column to spawn.
    pub into_column: fn(Decoded) -> ColumnValues<'static>,
    /// Rewrites the entity handles inside a value on import, if the type holds any.
    pub remap: Option<RemapAny>,
}

fn decode_values<T: Component, C: Codec<T>>(bytes: &[u8], len: usize) -> Option<Decoded> {
    C::decode(bytes, len).map(|v| Box::new(v) as Decoded)
}

/// The `Vec<T>` inside `values`.
pub fn decoded<T: Component>(values: Decoded) -> Vec<T> {
    *values
        .downcast::<Vec<T>>()
        .expect("decoded by the same type's ops")
}

fn remap_values<T: Component>(values: &mut Decoded, map: &EntityMap, remap: &RemapAny) {
    let remap = *remap
        .downcast_ref::<RemapFn<T>>()
        .expect("a remap hook is stored with its type");
    let values = values
        .downcast_mut::<Vec<T>>()
        .expect("decoded by the same type's ops");
    for value in values {
        remap(value, map);
    }
}

fn into_column<T: Component>(values: Decoded) -> ColumnValues<'static> {
    ColumnValues::new(decoded::<T>(values))
}

impl ColumnOps {
    /// The ops of `T` through codec `C`.
    pub fn of<T: Component, C: Codec<T>>(
        name: &'static str,
        version: u32,
        remap: Option<RemapAny>,
    ) -> ColumnOps {
        ColumnOps {
            name,
            version,
            encoding: C::ENCODING,
            type_id: TypeId::of::<T>(),
            layout: Layout::new::<T>(),
            info: component_info::<T>,
            encoder: C::encoder(),
            decode_column: C::decode_column,
            component_id: World::component_id::<T>,
            register: World::register::<T>,
            encode_rows: C::encode_rows,
            decode_values: decode_values::<T, C>,
            remap_values: remap_values::<T>,
            into_column: into_column::<T>,
            remap,
        }
    }
}
