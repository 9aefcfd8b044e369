//! The registry's cache of query states, one per `(Q, F)`, built for one world.

use core::any::{Any, TypeId};

use freyr_core::{World, WorldId};
use hashbrown::HashMap;

use crate::error::QueryError;
use crate::fetch::QueryData;
use crate::filter::QueryFilter;
use crate::state::QueryState;

/// Cached query states, keyed by `TypeId::of::<QueryState<Q, F>>()`, all built for the world
/// with id `world`.
#[derive(Default)]
pub struct QueryCache {
    world: Option<WorldId>,
    states: HashMap<TypeId, Box<dyn Any + Send>>,
}

impl QueryCache {
    /// The state for `(Q, F)`, created on first use and refreshed against `world`. If `world` is
    /// not the world the cache was built for (it was replaced, swapped or taken), every cached
    /// state is dropped first; each state checks the world's id too.
    ///
    /// # Errors
    ///
    /// On conflicting access in `Q`.
    pub(crate) fn state_mut<Q: QueryData, F: QueryFilter>(
        &mut self,
        world: &World,
    ) -> Result<&mut QueryState<Q, F>, QueryError> {
        if self.world != Some(world.id()) {
            self.states.clear();
            self.world = Some(world.id());
        }
        let entry = match self.states.entry(TypeId::of::<QueryState<Q, F>>()) {
            hashbrown::hash_map::Entry::Occupied(e) => e.into_mut(),
            hashbrown::hash_map::Entry::Vacant(v) => {
                v.insert(Box::new(QueryState::<Q, F>::new(world)?))
            }
        };
        let state = entry
            .downcast_mut::<QueryState<Q, F>>()
            .expect("query cache entry stored under its own TypeId");
        state.update(world);
        Ok(state)
    }

    pub fn get<Q: QueryData, F: QueryFilter>(&self, world: WorldId) -> Option<&QueryState<Q, F>> {
        if self.world != Some(world) {
            return None;
        }
        self.states
            .get(&TypeId::of::<QueryState<Q, F>>())
            .and_then(|s| s.downcast_ref())
    }
}
