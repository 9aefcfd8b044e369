//! How one persistent component type's values are encoded and decoded ([`ColumnOps`]), through
//! one of two codecs: serde with postcard, value by value, or the raw little-endian bytes of a
//! [`Pod`] column at once.

use core::alloc::Layout;
use core::any::{Any, TypeId};

use bytemuck::Pod;
use freyr_core::snapshot::{ArchetypeView, ColumnValues, component_info};
use freyr_core::{ArchetypeId, Component, ComponentId, ComponentInfo, Entity, World};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{ColumnEncoding, EntityMap, RemapFn};

/// Decoded, not yet inserted values of one column (a `Vec<T>`), for an import.
pub(crate) type Decoded = Box<dyn Any>;

/// A type-erased [`RemapFn`].
pub(crate) type RemapAny = std::sync::Arc<dyn Any + Send + Sync>;

/// Encodes and decodes the values of `T`.
pub(crate) trait Codec<T> {
    /// How the file records it.
    const ENCODING: ColumnEncoding;
    /// Appends `values` in order.
    fn encode(values: &[T], out: &mut Vec<u8>);
    /// Appends the values of component `id` (a `T`) at the rows `rows`, in order.
    fn encode_rows(world: &World, rows: &[Row], id: ComponentId, out: &mut Vec<u8>);
    /// Exactly `len` values, or `None` if `bytes` are not that.
    fn decode(bytes: &[u8], len: usize) -> Option<Vec<T>>;
}

/// Serde and postcard: any `Serialize + DeserializeOwned` type, field by field.
pub(crate) struct SerdeCodec;

/// Where a live entity's values are: archetype, chunk, row.
pub(crate) type Row = (ArchetypeId, usize, usize);

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

    fn encode(values: &[T], out: &mut Vec<u8>) {
        let bytes = postcard::to_allocvec(values).expect("postcard writes into a Vec");
        out.extend_from_slice(&bytes);
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
pub(crate) struct RawCodec;

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

    fn encode(values: &[T], out: &mut Vec<u8>) {
        out.extend_from_slice(raw_bytes(values));
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
}

/// How one persistent component type is named, encoded and decoded, and how its decoded values
/// enter a world. Knows nothing of the registry.
#[derive(Clone)]
pub(crate) struct ColumnOps {
    pub(crate) name: &'static str,
    pub(crate) version: u32,
    pub(crate) encoding: ColumnEncoding,
    pub(crate) type_id: TypeId,
    pub(crate) layout: Layout,
    pub(crate) info: fn(usize) -> ComponentInfo,
    /// Appends the encoding of a snapshot column.
    pub(crate) encode_column: fn(&ArchetypeView<'_>, usize, &mut Vec<u8>),
    /// Decodes `len` values for a snapshot column.
    pub(crate) decode_column: fn(&[u8], usize) -> Option<ColumnValues>,
    /// The type's component id in a world, if it has one.
    pub(crate) component_id: fn(&World) -> Option<ComponentId>,
    /// Appends the encoding of the values at these rows (each has the component, whose id is
    /// given).
    pub(crate) encode_rows: fn(&World, &[Row], ComponentId, &mut Vec<u8>),
    /// Decodes `len` values for an import.
    pub(crate) decode_values: fn(&[u8], usize) -> Option<Decoded>,
    /// Spawns one entity per decoded value (they get no remap: only for a type without one).
    pub(crate) spawn_values: fn(&mut World, Decoded) -> Vec<Entity>,
    /// Remaps (through the hook, if any) and inserts decoded values, one per entity.
    pub(crate) insert_values: fn(&mut World, Decoded, &[Entity], &EntityMap, Option<&RemapAny>),
    pub(crate) remap: Option<RemapAny>,
}

fn encode_column<T: Component, C: Codec<T>>(
    view: &ArchetypeView<'_>,
    column: usize,
    out: &mut Vec<u8>,
) {
    let values = view
        .column::<T>(column)
        .expect("a persistent column holds its registered type");
    C::encode(values, out);
}

fn decode_column<T: Component, C: Codec<T>>(bytes: &[u8], len: usize) -> Option<ColumnValues> {
    C::decode(bytes, len).map(ColumnValues::new)
}

fn decode_values<T: Component, C: Codec<T>>(bytes: &[u8], len: usize) -> Option<Decoded> {
    C::decode(bytes, len).map(|v| Box::new(v) as Decoded)
}

/// The `Vec<T>` inside `values`.
pub(crate) fn decoded<T: Component>(values: Decoded) -> Vec<T> {
    *values
        .downcast::<Vec<T>>()
        .expect("decoded by the same type's ops")
}

/// The typed hook inside `remap`.
pub(crate) fn remap_fn<T: Component>(remap: Option<&RemapAny>) -> Option<RemapFn<T>> {
    remap.map(|r| {
        *r.downcast_ref::<RemapFn<T>>()
            .expect("a remap hook is stored with its type")
    })
}

fn spawn_values<T: Component>(world: &mut World, values: Decoded) -> Vec<Entity> {
    world.spawn_batch(decoded::<T>(values).into_iter().map(|v| (v,)))
}

/// The decoded values of `T`, each passed through `T`'s remap hook (if one is registered) with
/// `map`: what an import inserts, in export order.
pub(crate) fn remapped<'m, T: Component>(
    values: Decoded,
    map: &'m EntityMap,
    remap: Option<&RemapAny>,
) -> impl Iterator<Item = T> + 'm {
    let remap = remap_fn::<T>(remap);
    decoded::<T>(values).into_iter().map(move |mut value| {
        if let Some(remap) = remap {
            remap(&mut value, map);
        }
        value
    })
}

fn insert_values<T: Component>(
    world: &mut World,
    values: Decoded,
    entities: &[Entity],
    map: &EntityMap,
    remap: Option<&RemapAny>,
) {
    for (value, &entity) in remapped::<T>(values, map, remap).zip(entities) {
        world
            .insert(entity, (value,))
            .expect("an imported entity was just spawned");
    }
}

impl ColumnOps {
    /// The ops of `T` through codec `C`.
    pub(crate) fn of<T: Component, C: Codec<T>>(
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
            encode_column: encode_column::<T, C>,
            decode_column: decode_column::<T, C>,
            component_id: World::component_id::<T>,
            encode_rows: C::encode_rows,
            decode_values: decode_values::<T, C>,
            spawn_values: spawn_values::<T>,
            insert_values: insert_values::<T>,
            remap,
        }
    }
}
