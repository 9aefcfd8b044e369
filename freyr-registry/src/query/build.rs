//! Building queries: [`Registry::query`] and its filtered and fallible forms.

use crate::registry::Registry;
use freyr_query::error::QueryError;
use freyr_query::fetch::QueryData;
use freyr_query::filter::QueryFilter;

use super::Query;

impl Registry {
    /// A query fetching `Q` from every entity that has its required components.
    ///
    /// The query's state (resolved ids, matched archetypes) is cached per `(Q, F)` type in the
    /// registry, so building a query on every call costs one map lookup plus the archetypes
    /// created since the last call.
    ///
    /// # Panics
    ///
    /// If `Q` accesses a type mutably twice, or mutably and immutably, naming the type; see
    /// [`try_query`](Registry::try_query).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    ///
    /// struct Pos(f32);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// let e = registry.spawn((Pos(1.0),));
    /// registry.query::<(freyr::Entity, &mut Pos)>().each(|_, (id, p)| {
    ///     assert_eq!(id, e);
    ///     p.0 = 5.0;
    /// });
    /// assert_eq!(registry.get::<Pos>(e).unwrap().0, 5.0);
    /// ```
    pub fn query<Q: QueryData>(&mut self) -> Query<'_, Q> {
        self.query_filtered::<Q, ()>()
    }

    /// A query fetching `Q` from every entity whose archetype passes the filter `F`
    /// ([`With`](crate::With), [`Without`](crate::Without), tuples of them).
    ///
    /// # Panics
    ///
    /// As [`query`](Registry::query).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{Registry, With, Without};
    ///
    /// struct Pos(f32);
    /// struct Ai;
    /// struct Dead;
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.spawn((Pos(1.0), Ai));
    /// registry.spawn((Pos(2.0), Ai, Dead));
    /// registry.spawn((Pos(3.0),));
    /// let n = registry.query_filtered::<&Pos, (With<Ai>, Without<Dead>)>().count();
    /// assert_eq!(n, 1);
    /// ```
    pub fn query_filtered<Q: QueryData, F: QueryFilter>(&mut self) -> Query<'_, Q, F> {
        match self.try_query_filtered::<Q, F>() {
            Ok(q) => q,
            Err(e) => panic!("freyr: {e}"),
        }
    }

    /// Like [`query`](Registry::query), reporting conflicting access as an error.
    ///
    /// # Errors
    ///
    /// [`QueryError::ConflictingAccess`] naming the type accessed in conflicting ways.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::{QueryError, Registry};
    ///
    /// struct Pos(f32);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// match registry.try_query::<(&mut Pos, &mut Pos)>() {
    ///     Err(QueryError::ConflictingAccess { type_name, .. }) => assert!(type_name.ends_with("Pos")),
    ///     _ => unreachable!(),
    /// }
    /// assert!(registry.try_query::<(&Pos, &Pos)>().is_ok());
    /// ```
    pub fn try_query<Q: QueryData>(&mut self) -> Result<Query<'_, Q>, QueryError> {
        self.try_query_filtered::<Q, ()>()
    }

    /// Like [`query_filtered`](Registry::query_filtered), reporting conflicting access as an
    /// error.
    ///
    /// # Errors
    ///
    /// As [`try_query`](Registry::try_query).
    pub fn try_query_filtered<Q: QueryData, F: QueryFilter>(
        &mut self,
    ) -> Result<Query<'_, Q, F>, QueryError> {
        self.prepare_query::<Q, F>("Registry::query")?;
        Ok(Query::new(self))
    }
}
