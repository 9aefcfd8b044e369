//! Bundles: the tuples of components that `spawn`, `insert` and `remove` take.

use core::any::TypeId;

use crate::component::{Component, ComponentId, Components};

/// The most components one bundle may hold.
pub(crate) const MAX_BUNDLE: usize = 16;

/// A set of components moved in or out of an entity together: a tuple `()`, `(A,)`, `(A, B)`,
/// ... up to 16 elements, each a distinct [`Component`] type.
///
/// The trait is sealed: the tuples are its only implementations.
///
/// # Panics
/// Every world operation given a bundle that names one component type twice (e.g. `(u8, u8)`)
/// panics before changing anything.
///
/// # Examples
/// ```
/// use freyr::World;
/// let mut world = World::new();
/// let e = world.spawn((1u8, 2u16, "three"));
/// let (a, c) = world.remove::<(u8, &'static str)>(e).unwrap();
/// assert_eq!((a, c), (1, "three"));
/// assert_eq!(*world.get::<u16>(e).unwrap(), 2);
/// ```
pub trait Bundle: sealed::BundleImpl + Send + Sync + 'static {}

/// The component types of a bundle type, in tuple order, without the bundle: what a caller
/// outside the world (a hook runner) needs to know about an insert or a spawn.
///
/// # Examples
/// ```
/// use core::any::TypeId;
/// use freyr::storage::BundleTypes;
/// let types = BundleTypes::of::<(u8, u16)>();
/// assert_eq!(types.len(), 2);
/// assert_eq!(types.iter().collect::<Vec<_>>(), [TypeId::of::<u8>(), TypeId::of::<u16>()]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct BundleTypes {
    len: usize,
    type_at: fn(usize) -> (TypeId, &'static str),
}

impl BundleTypes {
    /// The types of bundle `B`.
    pub fn of<B: Bundle>() -> BundleTypes {
        BundleTypes {
            len: B::LEN,
            type_at: B::type_at,
        }
    }

    /// Number of component types.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the bundle is `()`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `TypeId` of each element, in tuple order.
    pub fn iter(&self) -> impl Iterator<Item = TypeId> + '_ {
        (0..self.len).map(|i| (self.type_at)(i).0)
    }
}

pub(crate) mod sealed {
    use super::*;

    /// The hidden machinery behind [`Bundle`](super::Bundle), implemented for tuples only.
    #[allow(
        unnameable_types,
        reason = "sealed on purpose: other crates use `Bundle`, only this crate implements it"
    )]
    pub trait BundleImpl: Sized {
        /// Number of components.
        const LEN: usize;

        /// The `TypeId` and type name of element `i` (tuple order).
        ///
        /// # Panics
        /// If `i >= LEN`.
        fn type_at(i: usize) -> (TypeId, &'static str);

        /// Registers each element type and appends its id, in tuple order.
        fn register(components: &mut Components, out: &mut Vec<ComponentId>);

        /// Moves each element into the slot `slot(i)` (called once per element, in tuple
        /// order). A closure rather than a slice of pointers: the row-move paths compute each
        /// slot from the edge as it is written, with no pointer array to fill first.
        ///
        /// # Safety
        /// `slot(i)` is valid for writing element `i`'s type and aligned for it; the slots hold
        /// no live values (they are overwritten, not dropped).
        unsafe fn write_with(self, slot: impl FnMut(usize) -> *mut u8);

        /// Moves each element into row `row` of its column: element `i` goes to
        /// `columns[i] as *mut T_i` offset by `row` values. The offset is computed from the
        /// element's static size, so a batch loop advances one row index instead of one pointer
        /// per column.
        ///
        /// # Safety
        /// `columns` holds `LEN` pointers, `columns[i]` aligned for element `i`'s type, and the
        /// slot `row` values after it valid for writing that type and vacant (it is
        /// overwritten, not dropped).
        unsafe fn write_row(self, columns: &[*mut u8], row: usize);

        /// Moves each element out of the slot `slot(i)` (called once per element, in tuple
        /// order).
        ///
        /// # Safety
        /// `slot(i)` points to a live, aligned value of element `i`'s type; the caller gives
        /// those values up (it must not use or drop them again).
        unsafe fn read_with(slot: impl FnMut(usize) -> *mut u8) -> Self;

        /// Writes a pointer to each element of `*this` into `out[i]` (tuple order).
        ///
        /// # Safety
        /// `this` points to a live tuple and `out` has at least `LEN` entries.
        unsafe fn field_ptrs(this: *mut Self, out: &mut [*mut u8]);
    }
}

/// Panics if a bundle type names one component type twice. Runs before anything changes, and
/// allocates nothing: with the types known at compile time the comparisons fold away, so a
/// command buffer can check every recorded bundle for free.
#[inline]
pub(crate) fn check_distinct<B: Bundle>() {
    for i in 1..B::LEN {
        let (ty, name) = B::type_at(i);
        if (0..i).any(|j| B::type_at(j).0 == ty) {
            repeated_type::<B>(name);
        }
    }
}

#[cold]
#[inline(never)]
fn repeated_type<B: Bundle>(name: &str) -> ! {
    panic!(
        "freyr: bundle `{}` contains component type `{}` more than once",
        core::any::type_name::<B>(),
        name
    );
}

macro_rules! impl_bundle {
    ($len:expr; $($name:ident $idx:tt),*) => {
        impl<$($name: Component),*> Bundle for ($($name,)*) {}

        impl<$($name: Component),*> sealed::BundleImpl for ($($name,)*) {
            const LEN: usize = $len;

            fn type_at(i: usize) -> (TypeId, &'static str) {
                let types: [(TypeId, &'static str); $len] =
                    [$((TypeId::of::<$name>(), core::any::type_name::<$name>())),*];
                types[i]
            }

            #[allow(unused_variables)]
            fn register(components: &mut Components, out: &mut Vec<ComponentId>) {
                $(out.push(components.register::<$name>());)*
            }

            #[inline(always)]
            #[allow(unused_variables, unused_mut)]
            unsafe fn write_with(self, mut slot: impl FnMut(usize) -> *mut u8) {
                $(
                    // SAFETY: the caller guarantees `slot($idx)` is a valid, aligned, vacant
                    // slot for `$name` (the bundle's element type at this position).
                    unsafe { slot($idx).cast::<$name>().write(self.$idx) };
                )*
            }

            #[inline(always)]
            #[allow(unused_variables, unused_comparisons)]
            unsafe fn write_row(self, columns: &[*mut u8], row: usize) {
                debug_assert!(columns.len() >= $len);
                $(
                    // SAFETY: the caller guarantees `columns[$idx]` is aligned for `$name` and
                    // that the slot `row` values further on is valid and vacant.
                    unsafe { columns.get_unchecked($idx).cast::<$name>().add(row).write(self.$idx) };
                )*
            }

            #[inline(always)]
            #[allow(unused_variables, unused_mut, clippy::unused_unit)]
            unsafe fn read_with(mut slot: impl FnMut(usize) -> *mut u8) -> Self {
                ($(
                    // SAFETY: the caller guarantees `slot($idx)` points to a live, aligned
                    // `$name` that it gives up, so reading it out moves ownership here.
                    unsafe { slot($idx).cast::<$name>().read() },
                )*)
            }

            #[inline(always)]
            #[allow(unused_variables)]
            unsafe fn field_ptrs(this: *mut Self, out: &mut [*mut u8]) {
                $(
                    // SAFETY: the caller guarantees `this` points to a live tuple; taking a field
                    // address creates no reference.
                    out[$idx] = unsafe { core::ptr::addr_of_mut!((*this).$idx) }.cast::<u8>();
                )*
            }
        }
    };
}

impl_bundle!(0;);
impl_bundle!(1; A 0);
impl_bundle!(2; A 0, B 1);
impl_bundle!(3; A 0, B 1, C 2);
impl_bundle!(4; A 0, B 1, C 2, D 3);
impl_bundle!(5; A 0, B 1, C 2, D 3, E 4);
impl_bundle!(6; A 0, B 1, C 2, D 3, E 4, F 5);
impl_bundle!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
impl_bundle!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
impl_bundle!(9; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
impl_bundle!(10; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
impl_bundle!(11; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
impl_bundle!(12; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
impl_bundle!(13; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
impl_bundle!(14; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
impl_bundle!(15; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
impl_bundle!(16; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);

const _: () = assert!(
    <(
        u8,
        u8,
        u8,
        u8,
        u8,
        u8,
        u8,
        u8,
        u8,
        u8,
        u8,
        u8,
        u8,
        u8,
        u8,
        u8
    ) as sealed::BundleImpl>::LEN
        == MAX_BUNDLE
);

#[cfg(test)]
mod tests {
    use super::sealed::BundleImpl;
    use super::*;

    #[test]
    fn write_then_read_round_trips() {
        let mut a = core::mem::MaybeUninit::<String>::uninit();
        let mut b = core::mem::MaybeUninit::<u8>::uninit();
        let ptrs = [a.as_mut_ptr().cast::<u8>(), b.as_mut_ptr().cast::<u8>()];
        // SAFETY: the two slots are valid, aligned and vacant for (String, u8).
        unsafe { (String::from("x"), 7u8).write_with(|i| ptrs[i]) };
        // SAFETY: both slots now hold live values that we take back.
        let (s, n) = unsafe { <(String, u8)>::read_with(|i| ptrs[i]) };
        assert_eq!((s.as_str(), n), ("x", 7));
    }

    #[test]
    fn write_row_places_each_element_at_its_row() {
        let mut words = [0u32; 4];
        let mut bytes = [0u8; 4];
        let columns = [words.as_mut_ptr().cast::<u8>(), bytes.as_mut_ptr()];
        // SAFETY: row 2 is in bounds of both arrays, which are aligned for u32 and u8; the slots
        // hold plain integers (nothing to drop).
        unsafe { (7u32, 9u8).write_row(&columns, 2) };
        assert_eq!((words, bytes), ([0, 0, 7, 0], [0, 0, 9, 0]));
    }

    #[test]
    #[should_panic(expected = "contains component type `u8` more than once")]
    fn repeated_type_is_rejected() {
        check_distinct::<(u8, u16, u8)>();
    }
}
