//! [`AccessKind`]: read or write. Its own file, below both the access sets and
//! [`QueryError`](crate::QueryError), which names the two kinds that conflict.

/// How a query element or view touches one type.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AccessKind {
    /// Shared access: `&T`, `Option<&T>`, a component view, a resource.
    Read,
    /// Exclusive access: `&mut T`, `Option<&mut T>`.
    Write,
}
