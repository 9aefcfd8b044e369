//! The tuple arities the query traits are implemented for, listed once: each trait writes its
//! tuple impl as one macro over `(TypeName index)` pairs, and these macros call it for every
//! arity.

/// Calls `$m!(...)` for the empty list and for every prefix of the `(TypeName index)` pairs
/// given, shortest first: `$m!()`, `$m!(A 0)`, `$m!(A 0, B 1)`, ...
#[macro_export]
#[doc(hidden)]
macro_rules! tuple_prefixes {
    ($m:ident; $($name:ident $idx:tt),*) => {
        $crate::tuples::tuple_prefixes!(@step $m; []; $($name $idx),*);
    };
    (@step $m:ident; [$($done:ident $di:tt),*]; ) => {
        $m!($($done $di),*);
    };
    (@step $m:ident; [$($done:ident $di:tt),*]; $name:ident $idx:tt $(, $rest:ident $ri:tt)*) => {
        $m!($($done $di),*);
        $crate::tuples::tuple_prefixes!(@step $m; [$($done $di,)* $name $idx]; $($rest $ri),*);
    };
}
pub use tuple_prefixes;

/// Calls `$m!` for tuples of 0 to 12 elements: the arities of
/// [`QueryData`](crate::QueryData), [`QueryFilter`](crate::QueryFilter) and
/// [`HashComponents`](crate::HashComponents).
#[macro_export]
#[doc(hidden)]
macro_rules! tuples_up_to_12 {
    ($m:ident) => {
        $crate::tuples::tuple_prefixes!(
            $m; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11
        );
    };
}
pub use tuples_up_to_12;

/// Calls `$m!` for tuples of 0 to 8 elements: the arities of [`ViewSet`](crate::ViewSet).
macro_rules! tuples_up_to_8 {
    ($m:ident) => {
        $crate::tuples::tuple_prefixes!($m; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
    };
}
pub(crate) use tuples_up_to_8;
