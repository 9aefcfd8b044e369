//! The std half of the shim's `UnsafeCell`: `core::cell::UnsafeCell` behind
//! loom's closure API (`with`, `with_mut`), so code written against the shim
//! compiles against either half. Every method is `#[inline(always)]` and
//! hands out the raw pointer unchanged: zero cost.

/// `core::cell::UnsafeCell` with loom's access API. Under `--cfg freyr_loom`
/// the shim exports `loom::cell::UnsafeCell` instead, which checks every
/// access made through these closures for data races.
///
/// # Examples
///
/// ```
/// let cell = freyr_sync::UnsafeCell::new(1_u8);
/// // SAFETY: no other access to the cell exists during either call.
/// cell.with_mut(|p| unsafe { *p = 2 });
/// // SAFETY: the write above has returned; this read is the only access.
/// assert_eq!(cell.with(|p| unsafe { *p }), 2);
/// ```
#[derive(Debug, Default)]
#[repr(transparent)]
pub struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

impl<T> UnsafeCell<T> {
    /// A cell holding `value`.
    #[inline(always)]
    pub const fn new(value: T) -> Self {
        UnsafeCell(core::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a shared pointer to the value. Reading through it is
    /// the caller's business, as for `core::cell::UnsafeCell::get`.
    #[inline(always)]
    pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with a mutable pointer to the value. Writing through it is
    /// the caller's business, as for `core::cell::UnsafeCell::get`.
    #[inline(always)]
    pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }

    /// The value.
    #[inline(always)]
    pub fn into_inner(self) -> T {
        self.0.into_inner()
    }
}
