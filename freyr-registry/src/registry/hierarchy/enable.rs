//! Disabling and enabling entities: the [`Disabled`] marker, which queries skip unless they
//! name it.

use freyr_core::{Disabled, Entity, NoSuchEntity};

use super::super::Registry;

impl Registry {
    /// Registers [`Disabled`] for snapshots (a plain copy), the world hash and digest, and
    /// (with the `persist` feature) saves and exports as `freyr.disabled` version 1.
    /// [`disable`](Registry::disable) calls it (unless refused); a program calls it only before
    /// loading a save or importing an export into a registry that never disabled an entity.
    /// Calling it again changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// registry.register_disabled();
    /// registry.register_disabled();
    /// assert_eq!(registry.hashable_count(), 1);
    /// ```
    pub fn register_disabled(&mut self) {
        self.guard("Registry::register_disabled");
        if self.snapshot_types.components.is_registered::<Disabled>() {
            return;
        }
        #[cfg(feature = "persist")]
        self.register_persistent::<Disabled>("freyr.disabled", 1);
        if !self.snapshot_types.components.is_registered::<Disabled>() {
            self.snapshot_types.components.register_copy::<Disabled>();
        }
        self.hashables.register::<Disabled>();
        self.world_mut().register::<Disabled>();
    }

    /// Disables `entity` now (waiting for in-flight work first): it keeps its id and its
    /// components, and [`get`](Registry::get) and the other by-id calls still reach it, but
    /// queries skip it unless they name [`Disabled`]. Its children are not disabled with it.
    /// Disabling a disabled entity changes nothing.
    ///
    /// Disabling adds the `Disabled` component and enabling removes it: one row move each,
    /// as any insert or remove, so it triggers `Disabled`'s hooks, and, as for any row move,
    /// the chunk the row lands in (and the one whose hole another row fills) is stamped added
    /// and changed at the current tick: a `filter_changed` or `filter_added` query run after
    /// `enable` visits the re-enabled entity, as it would a newly spawned one.
    ///
    /// # Errors
    ///
    /// [`NoSuchEntity`] if `entity` is not alive (the world unchanged).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let e = registry.spawn((5u8,));
    /// registry.disable(e).unwrap();
    /// assert!(registry.is_disabled(e));
    /// assert_eq!(registry.query::<&u8>().count(), 0);
    /// registry.enable(e).unwrap();
    /// assert_eq!(registry.query::<&u8>().count(), 1);
    /// ```
    pub fn disable(&mut self, entity: Entity) -> Result<(), NoSuchEntity> {
        self.guard("Registry::disable");
        if !self.contains(entity) {
            return Err(NoSuchEntity(entity));
        }
        self.register_disabled();
        if self.is_disabled(entity) {
            return Ok(());
        }
        self.insert(entity, (Disabled,))
    }

    /// Enables `entity` now: queries see it again. Enabling an enabled entity changes nothing.
    ///
    /// # Errors
    ///
    /// [`NoSuchEntity`] if `entity` is not alive (the world unchanged).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let e = registry.spawn((5u8,));
    /// registry.enable(e).unwrap(); // already enabled
    /// assert!(!registry.is_disabled(e));
    /// ```
    pub fn enable(&mut self, entity: Entity) -> Result<(), NoSuchEntity> {
        self.guard("Registry::enable");
        if !self.contains(entity) {
            return Err(NoSuchEntity(entity));
        }
        if !self.is_disabled(entity) {
            return Ok(());
        }
        self.remove::<(Disabled,)>(entity)
            .map(|_| ())
            .map_err(|e| NoSuchEntity(e.entity()))
    }

    /// Whether `entity` is alive and disabled.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut registry = freyr::Registry::with_workers(1);
    /// let e = registry.spawn(());
    /// assert!(!registry.is_disabled(e));
    /// ```
    pub fn is_disabled(&self, entity: Entity) -> bool {
        self.get::<Disabled>(entity).is_ok()
    }
}
