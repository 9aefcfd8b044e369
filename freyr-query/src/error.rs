//! Errors reported by queries and the registry.

use core::fmt;

use crate::access::kind::AccessKind;

/// Why a query could not be created or run.
///
/// # Examples
///
/// ```
/// use freyr::Registry;
///
/// #[derive(Debug)]
/// struct Health(u32);
///
/// let mut registry = Registry::with_workers(1);
/// let err = registry.try_query::<(&mut Health, &Health)>().err().unwrap();
/// assert!(err.to_string().contains("Health"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryError {
    /// The same type is accessed twice and at least one access writes it: `(&mut A, &A)`,
    /// `(&mut A, &mut A)`, or a view of `A` on a query that writes `A`.
    ConflictingAccess {
        /// `core::any::type_name` of the type.
        type_name: &'static str,
        /// How the type is accessed first.
        first: AccessKind,
        /// How the type is accessed again.
        second: AccessKind,
    },
    /// The query writes [`ChildOf`](freyr_core::ChildOf) or
    /// [`Children`](freyr_core::Children), which the registry's hierarchy methods keep: a query
    /// may read them, and `set_parent`, `spawn_child` and `remove_parent` change them.
    KeptComponent {
        /// `core::any::type_name` of the type.
        type_name: &'static str,
    },
    /// A resource a view needs is not in the registry.
    MissingResource {
        /// `core::any::type_name` of the resource type.
        type_name: &'static str,
    },
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::ConflictingAccess {
                type_name,
                first,
                second,
            } => write!(
                f,
                "conflicting access to `{type_name}` in one query: {} and {}; a query may \
                 read a type many times, but a type it writes it must not name again",
                kind_name(*first),
                kind_name(*second)
            ),
            QueryError::KeptComponent { type_name } => write!(
                f,
                "a query cannot write `{type_name}`: the registry keeps both sides of the parent \
                 relation; read it with `&` and change it with `set_parent`, `spawn_child` or \
                 `remove_parent`"
            ),
            QueryError::MissingResource { type_name } => {
                write!(
                    f,
                    "resource `{type_name}` is not in the registry; add it with \
                     `Registry::insert_resource` before running the query"
                )
            }
        }
    }
}

fn kind_name(kind: AccessKind) -> &'static str {
    match kind {
        AccessKind::Read => "read",
        AccessKind::Write => "write",
    }
}

impl std::error::Error for QueryError {}
