//! Handoff of entity subsets between registries: [`Registry::export`] and
//! [`Registry::import`].

use freyr_core::{AppliedCommand, ComponentId, Entity, World};
use hashbrown::HashMap;

use freyr_persist::persist::format::{Reader, Writer, open};
use freyr_persist::persist::ops::Row;
use freyr_persist::persist::{Decoded, EntityMap, LoadError, SaveError};

use freyr_persist::persist::body::{read_entities, write_entities, write_type};

use super::PersistOps;
use super::relation::{ImportRelation, check_relation};
use crate::registry::Registry;

/// The magic of an entity export.
const EXPORT_MAGIC: &[u8; 8] = b"FREYREXP";

/// A run of consecutive entities of an export with the same set of persistent types (indices
/// into the registry's table, ascending), in export order, and where their values are.
struct Group {
    set: Vec<u32>,
    members: Vec<Entity>,
    rows: Vec<Row>,
}

/// One group of an import, decoded: the old ids and one column of values per type.
type DecodedGroup = (Vec<Entity>, Vec<(PersistOps, Decoded)>);

impl Registry {
    /// The entities `entities` with every persistent component they have, as bytes for
    /// [`import`](Registry::import) into another registry (another server). Components with
    /// no persistent name are left out, and the file names only the persistent types the
    /// exported entities have (the importer must know those, and no others). Reads only.
    ///
    /// The file keeps the order of `entities`: it holds them as runs of consecutive entities
    /// with the same persistent types, each run's values column by column. A list sorted by
    /// archetype (a query's order) makes the fewest runs, so the smallest file and the fastest
    /// import; one that alternates between archetypes costs a run header per change.
    ///
    /// # Errors
    ///
    /// [`SaveError::Snapshot`] inside `update` or while work waits for a sync point.
    ///
    /// # Panics
    ///
    /// If an entity is not alive or listed twice.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_persistent::<u32>("hp", 1);
    /// let e = registry.spawn((7u32,));
    /// let bytes = registry.export(&[e]).unwrap();
    /// let mut other = freyr::Registry::with_workers(1);
    /// other.register_persistent::<u32>("hp", 1);
    /// let map = other.import(&bytes).unwrap();
    /// assert_eq!(other.get::<u32>(map.get(e).unwrap()), Ok(&7));
    /// ```
    pub fn export(&self, entities: &[Entity]) -> Result<Vec<u8>, SaveError> {
        self.guard("Registry::export");
        self.check_quiet().map_err(SaveError::Snapshot)?;
        let world = self.world();
        let ops = &self.persist_types.ops;
        let ids: Vec<Option<ComponentId>> = ops.iter().map(|o| (o.component_id)(world)).collect();
        let groups = group(world, &ids, entities);
        // The file's table lists only the types some exported entity has, in registration
        // order (so each run's set stays ascending): an importer need not know a type the
        // exporter registered but the exported entities do not use.
        let mut used = vec![false; ops.len()];
        for g in &groups {
            for &i in &g.set {
                used[i as usize] = true;
            }
        }
        let table: Vec<usize> = (0..ops.len()).filter(|&i| used[i]).collect();
        let mut position = vec![0u32; ops.len()];
        for (k, &i) in table.iter().enumerate() {
            // Fewer types than 2^32 (each has a component id).
            position[i] = u32::try_from(k).expect("fits in u32");
        }
        let size: usize = table.iter().map(|&i| ops[i].layout.size() + 8).sum();
        let mut w = Writer::new(EXPORT_MAGIC, entities.len() * size + 64 * table.len());
        w.u32(table.len() as u32);
        for &i in &table {
            write_type(&mut w, &ops[i]);
        }
        w.u64(groups.len() as u64);
        for g in &groups {
            let in_file: Vec<u32> = g.set.iter().map(|&i| position[i as usize]).collect();
            w.u32s(&in_file);
            write_entities(&mut w, &g.members);
            for &i in &g.set {
                let (encode, id) = (ops[i as usize].encode_rows, ids[i as usize]);
                let id = id.expect("a type in an entity's set is in the world");
                w.blob(|out| encode(world, &g.rows, id, out));
            }
        }
        Ok(w.finish())
    }

    /// Spawns the entities of an [`export`](Registry::export) with new ids, in export order,
    /// and returns the old→new [`EntityMap`]. `Entity` fields inside components are rewritten
    /// by the remap hooks given to
    /// [`register_persistent_with_remap`](Registry::register_persistent_with_remap). Every
    /// byte is checked and decoded, and every remap hook has run, before anything is spawned:
    /// a file that is not a well-formed export (whatever its checksum) is an error, and a
    /// hook that panics leaves the registry unchanged (the decoded values are dropped, each
    /// once). A registry with hooks ([`on_add`](Registry::on_add) and the like) imports
    /// through [`spawn`](Registry::spawn) and [`insert`](Registry::insert), so they see every
    /// value arrive; one without spawns each run of entities with the same types in one
    /// batch. Both give the same ids, values, iteration order and world hash.
    ///
    /// # Order
    ///
    /// Whatever the archetypes, the `n` exported entities get the ids the next `n` spawns
    /// would get ([`World::next_spawn_ids`]: freed ids first, then fresh ones, so ascending
    /// indices in a registry that has freed none), the first to the first exported entity and
    /// so on, and [`EntityMap::pairs`] lists them in export order. Each one with persistent
    /// components is appended to the rows of its archetype in export order, after the rows
    /// already there. Those with none stay in the empty archetype, where every imported entity
    /// first arrives, in export order, and which the others then leave in export order, each
    /// move putting the archetype's last row in the place it leaves (as
    /// [`spawn`](Registry::spawn) then [`insert`](Registry::insert) would).
    ///
    /// # Panics
    ///
    /// If the entity index space cannot hold the imported entities (see
    /// [`World::next_spawn_ids`]), before anything changes.
    ///
    /// # Errors
    ///
    /// A [`LoadError`] naming what is wrong; the registry is then unchanged. Besides damaged
    /// bytes and unknown or mismatched types: [`LoadError::Corrupt`] for a run that names a
    /// type twice, out of order or out of the file's table, has no entities, or whose columns
    /// do not hold one value per entity, and for an entity listed twice; and for a parent
    /// relation that disagrees among the exported entities (a `ChildOf` naming an exported
    /// parent whose `Children` does not list the child exactly once, an exported child listed
    /// by an exported parent it does not name, or parents that make a cycle). References that
    /// leave the set are not errors: a child whose parent was not exported becomes a root, and
    /// a child that was not exported leaves its parent's list.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::persist::LoadError;
    /// let mut registry = freyr::Registry::with_workers(1);
    /// assert!(matches!(registry.import(b"nonsense"), Err(LoadError::NotAFreyrFile)));
    /// assert!(registry.is_empty());
    ///
    /// // Entities of three archetypes, exported in an order of their own, arrive in it.
    /// let mut a = freyr::Registry::with_workers(1);
    /// a.register_persistent::<u32>("hp", 1);
    /// a.register_persistent::<String>("name", 1);
    /// let x = a.spawn((1u32,));
    /// let y = a.spawn((2u32, String::from("y")));
    /// let z = a.spawn((3u32,));
    /// let bytes = a.export(&[x, y, z]).unwrap();
    /// let mut b = freyr::Registry::with_workers(1);
    /// b.register_persistent::<u32>("hp", 1);
    /// b.register_persistent::<String>("name", 1);
    /// let next = b.world().next_spawn_ids(3);
    /// let map = b.import(&bytes).unwrap();
    /// assert_eq!(map.pairs(), [(x, next[0]), (y, next[1]), (z, next[2])]);
    /// ```
    pub fn import(&mut self, bytes: &[u8]) -> Result<EntityMap, LoadError> {
        self.guard("Registry::import");
        self.check_quiet().map_err(LoadError::Snapshot)?;
        let body = open(bytes, EXPORT_MAGIC)?;
        let mut r = Reader { rest: body };
        let ops = self.read_types(&mut r)?;
        let groups = r.count(1, "the group count")?;
        let mut decoded = Vec::new();
        for _ in 0..groups {
            decoded.push(read_group(&mut r, &ops)?);
        }
        r.end()?;
        // The ids the spawns below will give, in order: the map exists before anything
        // changes, so the remap hooks (user code) run first.
        let total = decoded.iter().map(|(olds, _)| olds.len()).sum();
        let news = self.world().next_spawn_ids(total);
        let olds = decoded.iter().flat_map(|(olds, _)| olds.iter().copied());
        let map = EntityMap::unique(olds.zip(news.iter().copied()).collect()).ok_or(
            LoadError::Corrupt {
                what: "an entity is listed twice",
            },
        )?;
        check_imported_relation(&decoded)?;
        for (_, columns) in &mut decoded {
            for (o, values) in columns {
                if let Some(remap) = &o.remap {
                    (o.remap_values)(values, &map, remap);
                }
            }
        }
        let mut changes = Vec::new();
        let spawned = match self.hooks.is_empty() {
            true => spawn_into_world(self.world_mut(), decoded),
            false => insert_hooked(self.world_mut(), decoded, &mut changes),
        };
        assert_eq!(
            spawned, news,
            "freyr: an import spawned other ids than it mapped"
        );
        self.finish_imported_hierarchy(&news, &mut changes);
        // One operation, as a `spawn_batch` is: the hooks see every change once everything
        // arrived and the relation is whole, so no hook's commands (a despawn, a reparent) run
        // in the middle of the import. A panicking hook stops none of the others; the first
        // panic is re-raised after all ran, the import itself complete.
        self.after_direct_all(&changes);
        Ok(map)
    }
}

/// Spawns every imported entity empty, then fills each group one type after the other (the
/// steps `spawn_into_world` mirrors), recording each insert in `changes` for the hooks.
fn insert_hooked(
    world: &mut World,
    decoded: Vec<DecodedGroup>,
    changes: &mut Vec<AppliedCommand>,
) -> Vec<Entity> {
    let groups: Vec<Vec<Entity>> = decoded
        .iter()
        .map(|(olds, _)| olds.iter().map(|_| world.spawn(())).collect())
        .collect();
    for ((_, columns), group) in decoded.into_iter().zip(&groups) {
        for (o, values) in columns {
            (o.insert_hooked)(world, values, group, changes);
        }
    }
    groups.concat()
}

/// Spawns the imported entities in `world` directly (a registry with no hooks), with the ids,
/// archetypes, iteration order and values of the hooked path. Each group is spawned in one
/// batch, its values moved in, after creating the archetypes the hooked path makes (each
/// inserted type's own, and the one with one more type at a time) in the order it makes them. A group of entities with no
/// persistent type stays in the empty archetype, where the hooked path's moves reorder rows,
/// so an import with such a group takes the hooked path's steps, without hooks.
fn spawn_into_world(world: &mut World, decoded: Vec<DecodedGroup>) -> Vec<Entity> {
    if decoded.iter().any(|(_, columns)| columns.is_empty()) {
        // The hooked path's steps; what they record is for hooks, and there are none.
        return insert_hooked(world, decoded, &mut Vec::new());
    }
    let mut spawned = Vec::new();
    for (olds, columns) in decoded {
        let mut ids = Vec::with_capacity(columns.len());
        for (o, _) in &columns {
            // An insert of a one-type bundle first makes that bundle's own archetype, then
            // the one it moves the row to.
            let id = (o.register)(world);
            world.archetype_with(&[id]);
            ids.push(id);
            world.archetype_with(&ids);
        }
        let columns = ids
            .into_iter()
            .zip(columns)
            .map(|(id, (o, values))| (id, (o.into_column)(values)))
            .collect();
        spawned.extend(world.spawn_columns(olds.len(), columns));
    }
    spawned
}

/// Checks the parent relation among the imported entities (old ids, before any remap hook),
/// references that leave the set aside: see `relation`.
fn check_imported_relation(decoded: &[DecodedGroup]) -> Result<(), LoadError> {
    use crate::hierarchy::{ChildOf, Children};
    use core::any::TypeId;
    let mut nodes = HashMap::new();
    for (olds, columns) in decoded {
        let column = |type_id: TypeId| {
            columns
                .iter()
                .find(|(o, _)| o.type_id == type_id)
                .map(|(_, values)| values)
        };
        let parents = column(TypeId::of::<ChildOf>()).map(decoded_ref::<ChildOf>);
        let lists = column(TypeId::of::<Children>()).map(decoded_ref::<Children>);
        if parents.is_none() && lists.is_none() {
            continue;
        }
        for (i, &e) in olds.iter().enumerate() {
            let parent = parents.map(|p| p[i].parent());
            let list = lists.map_or(&[][..], |l| l[i].as_slice());
            let mark = nodes.len();
            nodes.insert(e, (mark, parent, list));
        }
    }
    if nodes.is_empty() {
        return Ok(());
    }
    let exported = decoded
        .iter()
        .flat_map(|(olds, _)| olds.iter().copied())
        .collect();
    check_relation(&ImportRelation { nodes, exported })
}

/// The values of `T` a column decoded to.
fn decoded_ref<T: 'static>(values: &Decoded) -> &[T] {
    values
        .downcast_ref::<Vec<T>>()
        .expect("decoded by the same type's ops")
}

/// Cuts `entities` into runs of consecutive entities with the same set of persistent types,
/// in export order.
///
/// # Panics
///
/// If an entity is not alive or listed twice.
fn group(world: &World, ids: &[Option<ComponentId>], entities: &[Entity]) -> Vec<Group> {
    // The set of each archetype met, as an index into `sets`.
    let mut by_archetype: Vec<Option<usize>> = vec![None; world.archetypes().len()];
    let mut sets: Vec<Vec<u32>> = Vec::new();
    let mut seen: Vec<u64> = Vec::new();
    let mut groups: Vec<(usize, Group)> = Vec::new();
    for &e in entities {
        let Some(row @ (archetype, _, _)) = world.entity_location(e) else {
            panic!("freyr: export of {e:?}, which is not alive; export live entities");
        };
        let (word, bit) = (e.index() as usize / 64, 1u64 << (e.index() % 64));
        if seen.len() <= word {
            seen.resize(word + 1, 0);
        }
        assert!(
            seen[word] & bit == 0,
            "freyr: {e:?} is listed twice in an export; list each once"
        );
        seen[word] |= bit;
        let set = *by_archetype[archetype.index()].get_or_insert_with(|| {
            let here = world.archetype(archetype);
            let set: Vec<u32> = (0..ids.len() as u32)
                .filter(|&i| ids[i as usize].is_some_and(|id| here.has(id)))
                .collect();
            sets.iter().position(|s| *s == set).unwrap_or_else(|| {
                sets.push(set);
                sets.len() - 1
            })
        });
        if groups.last().is_none_or(|&(last, _)| last != set) {
            let group = Group {
                set: sets[set].clone(),
                members: Vec::new(),
                rows: Vec::new(),
            };
            groups.push((set, group));
        }
        let (_, run) = groups.last_mut().expect("a run was just pushed");
        run.members.push(e);
        run.rows.push(row);
    }
    groups.into_iter().map(|(_, run)| run).collect()
}

/// One run of an export: its types, old ids and decoded columns. The types are strictly
/// ascending indices into the file's table (as an export writes them), so none repeats and the
/// spawns below meet no set they would refuse; a run has at least one entity (an export writes
/// no empty run, and an empty one would create archetypes on one import path only).
fn read_group(r: &mut Reader<'_>, ops: &[PersistOps]) -> Result<DecodedGroup, LoadError> {
    let set = r.u32s("a group's types")?;
    if set.windows(2).any(|pair| pair[0] >= pair[1]) {
        return Err(LoadError::Corrupt {
            what: "a group's types repeat or are out of order",
        });
    }
    let olds = read_entities(r)?;
    if olds.is_empty() {
        return Err(LoadError::Corrupt {
            what: "a group has no entities",
        });
    }
    let mut columns = Vec::with_capacity(set.len());
    for &i in &set {
        let o = ops.get(i as usize).ok_or(LoadError::Corrupt {
            what: "a group names an unknown type",
        })?;
        let blob = r.bytes("a column")?;
        let values = (o.decode_values)(blob, olds.len()).ok_or(LoadError::Corrupt {
            what: "a column does not decode",
        })?;
        columns.push((o.clone(), values));
    }
    Ok((olds, columns))
}
