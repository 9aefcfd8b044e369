//! [`PlainBytes`]: the proof that a type's memory is its stable-hash byte stream.

use core::fmt;
use core::marker::PhantomData;

/// Whether the memory of a `T` is exactly the byte stream its [`StableHash`](crate::StableHash)
/// feeds, so that a digest may hash a whole column of `T`s as raw memory. It is the type of
/// [`StableHash::PLAIN_BYTES`](crate::StableHash::PLAIN_BYTES).
///
/// A "yes" is made only by [`new_unchecked`](PlainBytes::new_unchecked), which is `unsafe`:
/// claiming it for a type with padding would hash uninitialised bytes. `#[derive(StableHash)]`
/// makes it for a struct after checking, at compile time, that every field is `PLAIN_BYTES`,
/// that the fields lie in declaration order, and that there is no padding anywhere
/// (`size_of::<Self>()` is the sum of the fields' sizes). The impls for the integers, floats,
/// `bool`, `char`, `()`, arrays and tuples of such types say yes; everything else (the
/// default) says no and is hashed value by value, with the same guarantees, only slower.
///
/// The token carries `T`, so one type's yes cannot be copied onto another type.
///
/// # Examples
///
/// ```
/// use freyr::StableHash;
///
/// #[derive(StableHash)]
/// struct Packed {
///     x: f32,
///     y: f32,
/// }
/// #[derive(StableHash)]
/// struct Padded {
///     big: u64,
///     small: u8, // seven bytes of padding follow
/// }
/// #[derive(StableHash)]
/// struct Named(String);
///
/// assert!(<Packed as StableHash>::PLAIN_BYTES.get() == cfg!(target_endian = "little"));
/// assert!(!<Padded as StableHash>::PLAIN_BYTES.get());
/// assert!(!<Named as StableHash>::PLAIN_BYTES.get());
/// ```
pub struct PlainBytes<T: ?Sized> {
    plain: bool,
    _type: PhantomData<fn() -> *const T>,
}

impl<T: ?Sized> PlainBytes<T> {
    /// No: `T` is hashed value by value. The default of
    /// [`StableHash::PLAIN_BYTES`](crate::StableHash::PLAIN_BYTES).
    pub const NO: PlainBytes<T> = PlainBytes {
        plain: false,
        _type: PhantomData,
    };

    /// `plain` as the answer for `T`.
    ///
    /// # Safety
    ///
    /// If `plain` is true: `T` is `Sized`; every byte of every value of `T` is initialised (no
    /// padding, no uninhabited parts) and holds no pointer, no `UnsafeCell` and no other data
    /// whose bytes are not the value; and on a little-endian target the `size_of::<T>()` bytes of a value, in
    /// memory order, are exactly the bytes `T`'s `StableHash::stable_hash` feeds its hasher.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::StableHash;
    /// use freyr::hash::PlainBytes;
    /// use freyr::hash::StableHasher;
    ///
    /// #[repr(transparent)]
    /// struct Meters(u32);
    /// impl StableHash for Meters {
    ///     // SAFETY: `Meters` is exactly one `u32`, whose memory on a little-endian target is
    ///     // the four little-endian bytes hashed below.
    ///     const PLAIN_BYTES: PlainBytes<Self> = unsafe { PlainBytes::new_unchecked(true) };
    ///     fn stable_hash(&self, h: &mut StableHasher) {
    ///         self.0.stable_hash(h);
    ///     }
    /// }
    /// assert_eq!(Meters::PLAIN_BYTES.get(), cfg!(target_endian = "little"));
    /// ```
    pub const unsafe fn new_unchecked(plain: bool) -> PlainBytes<T> {
        PlainBytes {
            plain,
            _type: PhantomData,
        }
    }

    /// Whether a digest may read `T`'s raw memory on this target: the answer given, and only on
    /// a little-endian target (on a big-endian one every type is hashed value by value).
    pub const fn get(self) -> bool {
        self.plain && cfg!(target_endian = "little")
    }

    /// The answer given, whatever the target's byte order (for composing a type's answer from
    /// its fields' answers).
    pub const fn claimed(self) -> bool {
        self.plain
    }
}

impl<T: ?Sized> Clone for PlainBytes<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for PlainBytes<T> {}

impl<T: ?Sized> fmt::Debug for PlainBytes<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PlainBytes<{}>({})",
            core::any::type_name::<T>(),
            self.plain
        )
    }
}
