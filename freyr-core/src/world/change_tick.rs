//! The world's change tick: what grants of write access stamp on the chunks they touch.

use super::World;

impl World {
    /// The change tick world operations stamp now (see [`set_change_tick`](World::set_change_tick)).
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// assert_eq!(world.change_tick(), 0);
    /// world.set_change_tick(7);
    /// assert_eq!(world.change_tick(), 7);
    /// ```
    #[inline]
    pub fn change_tick(&self) -> u64 {
        self.chunks.tick
    }

    /// Sets the change tick: the simulation tick that every later grant of write access stamps
    /// on the chunks it touches ([`get_mut`](World::get_mut), spawns, inserts, removals,
    /// despawns — the landing chunk of a moved row and the chunk whose hole the last row fills —
    /// and the queries of a registry), until it is set again. A
    /// [`Registry`](../freyr/struct.Registry.html) sets it to its tick before every system and
    /// launch; a loop that drives a bare world sets it itself. Never set it from a wall clock or a
    /// per-call counter: stamps are meant to be the same for every worker count.
    ///
    /// Ticks are `u64` and compared with `>`: they never wrap in practice.
    ///
    /// # Examples
    /// ```
    /// let mut world = freyr::World::new();
    /// world.set_change_tick(3);
    /// let e = world.spawn((1u32,));
    /// world.set_change_tick(4);
    /// *world.get_mut::<u32>(e).unwrap() += 1;
    /// let (arch, chunk, _) = world.entity_location(e).unwrap();
    /// let arch = world.archetype(arch);
    /// assert_eq!(arch.added_tick(chunk, 0), 3);
    /// assert_eq!(arch.changed_tick(chunk, 0), 4);
    /// ```
    #[inline]
    pub fn set_change_tick(&mut self, tick: u64) {
        self.chunks.tick = tick;
    }
}
