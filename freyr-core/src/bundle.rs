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

pub(crate) mod sealed {
    use super::*;

    /// The hidden machinery behind [`Bundle`](super::Bundle), implemented for tuples only.
    pub trait BundleImpl: Sized {
        /// Number of components.
        const LEN: usize;

        /// Appends the `TypeId` and type name of each element, in tuple order.
        fn type_ids(out: &mut Vec<(TypeId, &'static str)>);

        /// Registers each element type and appends its id, in tuple order.
        fn register(components: &mut Components, out: &mut Vec<ComponentId>);

        /// Moves each element into the slot `dst[i]` (tuple order).
        ///
        /// # Safety
        /// `dst` holds `LEN` pointers, `dst[i]` valid for writing element `i`'s type and aligned
        /// for it; the slots hold no live values (they are overwritten, not dropped).
        unsafe fn write(self, dst: &[*mut u8]);

        /// Moves each element out of the slot `src[i]` (tuple order).
        ///
        /// # Safety
        /// `src` holds `LEN` pointers, `src[i]` pointing to a live, aligned value of element
        /// `i`'s type; the caller gives those values up (it must not use or drop them again).
        unsafe fn read(src: &[*mut u8]) -> Self;

        /// Writes a pointer to each element of `*this` into `out[i]` (tuple order).
        ///
        /// # Safety
        /// `this` points to a live tuple and `out` has at least `LEN` entries.
        unsafe fn field_ptrs(this: *mut Self, out: &mut [*mut u8]);
    }
}

/// Panics if a bundle type names one component type twice. Runs before anything changes.
pub(crate) fn check_distinct<B: Bundle>() {
    let mut types = Vec::with_capacity(B::LEN);
    B::type_ids(&mut types);
    for (i, (ty, name)) in types.iter().enumerate() {
        if types[..i].iter().any(|(other, _)| other == ty) {
            panic!(
                "freyr: bundle `{}` contains component type `{}` more than once",
                core::any::type_name::<B>(),
                name
            );
        }
    }
}

macro_rules! impl_bundle {
    ($len:expr; $($name:ident $idx:tt),*) => {
        impl<$($name: Component),*> Bundle for ($($name,)*) {}

        impl<$($name: Component),*> sealed::BundleImpl for ($($name,)*) {
            const LEN: usize = $len;

            #[allow(unused_variables)]
            fn type_ids(out: &mut Vec<(TypeId, &'static str)>) {
                $(out.push((TypeId::of::<$name>(), core::any::type_name::<$name>()));)*
            }

            #[allow(unused_variables)]
            fn register(components: &mut Components, out: &mut Vec<ComponentId>) {
                $(out.push(components.register::<$name>());)*
            }

            #[inline(always)]
            #[allow(unused_variables, unused_comparisons)]
            unsafe fn write(self, dst: &[*mut u8]) {
                debug_assert!(dst.len() >= $len);
                $(
                    // SAFETY: the caller guarantees `dst[$idx]` is a valid, aligned, vacant slot
                    // for `$name` (the bundle's element type at this position).
                    unsafe { dst.get_unchecked($idx).cast::<$name>().write(self.$idx) };
                )*
            }

            #[inline(always)]
            #[allow(unused_variables, unused_comparisons, clippy::unused_unit)]
            unsafe fn read(src: &[*mut u8]) -> Self {
                debug_assert!(src.len() >= $len);
                ($(
                    // SAFETY: the caller guarantees `src[$idx]` points to a live, aligned
                    // `$name` that it gives up, so reading it out moves ownership here.
                    unsafe { src.get_unchecked($idx).cast::<$name>().read() },
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
        unsafe { (String::from("x"), 7u8).write(&ptrs) };
        // SAFETY: both slots now hold live values that we take back.
        let (s, n) = unsafe { <(String, u8)>::read(&ptrs) };
        assert_eq!((s.as_str(), n), ("x", 7));
    }

    #[test]
    #[should_panic(expected = "contains component type `u8` more than once")]
    fn repeated_type_is_rejected() {
        check_distinct::<(u8, u16, u8)>();
    }
}
