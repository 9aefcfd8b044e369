//! The desync locator's registry calls: [`Registry::digest`], [`Registry::row_digests`] and
//! [`Registry::locate_divergence`].

use freyr_core::World;

use freyr_persist::digest::{self, ChunkAddress, Divergence, RowDigests, WorldDigest};
use freyr_persist::hashable::UnhashedComponents;
use freyr_query::access::Access;
use freyr_query::launch::inflight::OpAccess;

use super::Registry;

impl Registry {
    /// The world after in-flight writes of hashed types, once every type of a live entity is
    /// known to be hashed or excluded.
    fn digest_world(&self, what: &str) -> Result<&World, UnhashedComponents> {
        self.guard(what);
        let layout = self.sync.read(&OpAccess::Layout, &self.profiler);
        let type_names = self.hashables.unaccounted(layout);
        if !type_names.is_empty() {
            return Err(UnhashedComponents { type_names });
        }
        let mut access = Access::new();
        self.hashables.access(layout, &mut access);
        Ok(self
            .sync
            .read(&OpAccess::Components(&access), &self.profiler))
    }

    /// The [`WorldDigest`] of the world: per archetype, per chunk, the entity ids and each
    /// hashed component's column, and the whole-world value. Equal for worlds with the same
    /// archetypes, rows and values, whatever the worker count; see the
    /// [module documentation](freyr_persist::digest) for exactly what is hashed and how to read a
    /// [`diff`](crate::diff). Cheap enough for every tick: it hashes whole columns, 8 bytes at a
    /// time, reading a plain type's memory directly.
    ///
    /// Waits for in-flight work that writes a hashed type. Commands that work recorded are not
    /// applied first: they change the world at the next sync point
    /// ([`execute_tasks`](Registry::execute_tasks) or the end of an update), so a digest taken
    /// before it shows the world without them, as every read between sync points does.
    ///
    /// # Errors
    ///
    /// [`UnhashedComponents`], as for [`world_hash_all`](Registry::world_hash_all), when a live
    /// entity has a type that is neither registered nor excluded.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Registry, StableHash};
    ///
    /// #[derive(StableHash)]
    /// struct Hp(u32);
    ///
    /// let run = |workers: usize| {
    ///     let mut registry = Registry::with_workers(workers);
    ///     registry.register_hashable::<Hp>();
    ///     registry.spawn_batch((0..3000).map(|i| (Hp(i),)));
    ///     registry.query::<&mut Hp>().each_async(|_, hp| hp.0 = hp.0.wrapping_mul(7));
    ///     registry.digest().unwrap()
    /// };
    /// assert_eq!(run(1), run(3));
    /// assert_eq!(run(1).value(), run(3).value());
    /// ```
    pub fn digest(&self) -> Result<WorldDigest, UnhashedComponents> {
        let world = self.digest_world("Registry::digest")?;
        Ok(digest::world_digest(world, &self.hashables))
    }

    /// The [`RowDigests`] of the chunk at `at`: what another machine needs to find the row of a
    /// divergence [`diff`](crate::diff) located in that chunk
    /// ([`Divergence::with_rows`]). A chunk or archetype that does not exist has no rows.
    ///
    /// Waits for in-flight work that writes a hashed type.
    ///
    /// # Errors
    ///
    /// [`UnhashedComponents`], as for [`digest`](Registry::digest).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Registry, StableHash};
    /// use freyr::hash::ChunkAddress;
    ///
    /// #[derive(StableHash)]
    /// struct Hp(u32);
    ///
    /// let build = |last: u32| {
    ///     let mut registry = Registry::with_workers(1);
    ///     registry.register_hashable::<Hp>();
    ///     registry.spawn_batch((0..999).map(|i| (Hp(i),)));
    ///     registry.spawn((Hp(last),));
    ///     registry
    /// };
    /// let (here, there) = (build(0), build(1));
    /// // `there` is another machine: only digests cross.
    /// let found = freyr::hash::diff(&here.digest().unwrap(), &there.digest().unwrap()).unwrap();
    /// let at = ChunkAddress { archetype: found.archetype, chunk: found.chunk.unwrap() };
    /// let found = found.with_rows(&here.row_digests(at).unwrap(), &there.row_digests(at).unwrap());
    /// assert_eq!((found.chunk, found.row), (Some(1), Some(999 - 512)));
    /// ```
    pub fn row_digests(&self, at: ChunkAddress) -> Result<RowDigests, UnhashedComponents> {
        let world = self.digest_world("Registry::row_digests")?;
        Ok(digest::row_digests(world, &self.hashables, at))
    }

    /// The first divergence between this registry's world and `other`'s, down to the row and
    /// the entity: [`diff`](crate::diff) of the two digests, then
    /// [`Divergence::with_rows`] with the divergent chunk's row digests. `None` when the
    /// digests are equal. Both registries should register the same hashable types in the same
    /// order.
    ///
    /// Waits for in-flight work of either registry that writes a hashed type.
    ///
    /// # Errors
    ///
    /// [`UnhashedComponents`] from either registry.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Registry, StableHash};
    /// use freyr::hash::DivergenceKind;
    ///
    /// #[derive(StableHash)]
    /// struct Hp(u32);
    ///
    /// let mut a = Registry::with_workers(1);
    /// let mut b = Registry::with_workers(2);
    /// for r in [&mut a, &mut b] {
    ///     r.register_hashable::<Hp>();
    ///     r.spawn_batch((0..100).map(|i| (Hp(i),)));
    /// }
    /// assert_eq!(a.locate_divergence(&b), Ok(None));
    /// let ids = b.spawn_batch([(Hp(5),)]);
    /// let found = a.locate_divergence(&b).unwrap().unwrap();
    /// assert!(matches!(found.kind, DivergenceKind::Entities { a_len: 100, b_len: 101 }));
    /// assert_eq!((found.row, found.entity), (Some(100), Some(ids[0])));
    /// ```
    pub fn locate_divergence(
        &self,
        other: &Registry,
    ) -> Result<Option<Divergence>, UnhashedComponents> {
        let Some(found) = digest::diff(&self.digest()?, &other.digest()?) else {
            return Ok(None);
        };
        let Some(chunk) = found.chunk else {
            return Ok(Some(found));
        };
        let at = ChunkAddress {
            archetype: found.archetype,
            chunk,
        };
        Ok(Some(found.with_rows(
            &self.row_digests(at)?,
            &other.row_digests(at)?,
        )))
    }
}
