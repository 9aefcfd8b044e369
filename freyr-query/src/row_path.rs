//! [`RowPath`]: which compiled copy of the row loops runs, chosen once per process.
//!
//! Freyr is a dependency, built with its user's flags: for x86-64 that is usually the baseline
//! target (SSE2), on which a row loop over `[f32; 3]`-sized components vectorises only with
//! shuffles, about half the speed of the AVX2 code. So every row loop Freyr runs for the user
//! (`each`, `each_chunk`, `each_with`, the `each_async*` task bodies and reductions) exists twice
//! in such a build:
//!
//! ```text
//!   dispatcher (inlined into the caller)      one relaxed load of PATH per call
//!     ├─ PATH == AVX2_FMA ──> copy compiled with #[target_feature(enable = "avx2,fma")]
//!     └─ otherwise ────────> copy compiled for the build's own target
//!   both copies: #[inline(never)], the same body, the user's callback inlined into each
//! ```
//!
//! `PATH` is written once, by the first row loop of the process: `AVX2_FMA` if the CPU has AVX2
//! and FMA (`is_x86_feature_detected!`) and `FREYR_ROW_PATH` is not `baseline`, else
//! `BASELINE`. [`RowPath::force`] may change it later, for tests that run both copies.
//!
//! A build whose target already has AVX2 and FMA (`-C target-cpu=x86-64-v3` or `native` on such
//! a CPU), or a target other than x86-64, compiles one copy and no dispatcher.
//!
//! # Why both copies give the same bits
//!
//! Rust evaluates every float operation as written, with IEEE rounding: it never fuses `a * b +
//! c` into an FMA, and never reorders a sum to vectorise it, whatever target features are
//! enabled. Enabling AVX2 and FMA lets the compiler process several rows per instruction, each
//! row computed exactly as in the baseline copy. Neither copy calls `mul_add` on its own; a
//! callback that does gets a correctly rounded fused result on both (the hardware instruction
//! or the library routine). The row order, the task split and the reduction order do not depend
//! on the copy.

use core::sync::atomic::{AtomicU8, Ordering};

/// Not chosen yet: the first row loop detects.
const UNSET: u8 = 0;
/// The copy compiled for the build's target.
const BASELINE: u8 = 1;
/// The AVX2 + FMA copy (only ever stored after the CPU was checked for both features).
const AVX2_FMA: u8 = 2;

/// The chosen copy: `UNSET`, `BASELINE` or `AVX2_FMA`.
static PATH: AtomicU8 = AtomicU8::new(UNSET);

/// The environment variable read once, at the first row loop of the process: `baseline` (any
/// case) keeps the [`RowPath::Baseline`] copy; anything else, or no variable, runs the
/// detected one. For comparing the two copies on a production machine without a rebuild.
///
/// # Examples
///
/// ```
/// assert_eq!(freyr::query::ROW_PATH_ENV, "FREYR_ROW_PATH");
/// // FREYR_ROW_PATH=baseline ./server  runs every row loop on the baseline copy.
/// ```
pub const ROW_PATH_ENV: &str = "FREYR_ROW_PATH";

/// Which compiled copy of Freyr's row loops runs in this process.
///
/// A build for a target without AVX2 and FMA (the default x86-64 target of every crate that
/// depends on Freyr) carries a second copy of each row loop compiled with AVX2 and FMA, and runs
/// it on CPUs that have them (every x86-64 server and desktop CPU since about 2015). Both copies
/// produce bit-identical worlds and reductions: Rust never fuses or reorders float operations,
/// so wider instructions change the speed, never the result.
///
/// The choice is made once, at the first row loop: the detected path, unless the environment
/// variable `FREYR_ROW_PATH` is `baseline`. [`force`](RowPath::force) changes it at run time.
///
/// # Examples
///
/// ```
/// use freyr::query::RowPath;
///
/// let path = RowPath::current();
/// assert!(path == RowPath::Baseline || path == RowPath::detected());
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RowPath {
    /// The row loops as compiled for the build's target: SSE2 on a default x86-64 build; what
    /// `-C target-cpu` enables otherwise.
    Baseline,
    /// The copy compiled with AVX2 and FMA, chosen at run time on a CPU that has both. Exists
    /// only in x86-64 builds whose target lacks them (in the others the baseline copy is already
    /// at least this).
    Avx2Fma,
}

impl RowPath {
    /// The copy that row loops run now (choosing it first if no row loop ran yet).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::query::RowPath;
    ///
    /// // Without an override, the best copy this CPU supports.
    /// if std::env::var_os(freyr::query::ROW_PATH_ENV).is_none() {
    ///     assert_eq!(RowPath::current(), RowPath::detected());
    /// }
    /// ```
    pub fn current() -> RowPath {
        if avx2_fma() {
            RowPath::Avx2Fma
        } else {
            RowPath::Baseline
        }
    }

    /// The best copy this CPU and build support, ignoring `FREYR_ROW_PATH` and
    /// [`force`](RowPath::force): [`Avx2Fma`](RowPath::Avx2Fma) if the build has that copy and
    /// the CPU has AVX2 and FMA, else [`Baseline`](RowPath::Baseline).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::query::RowPath;
    ///
    /// if cfg!(not(target_arch = "x86_64")) {
    ///     assert_eq!(RowPath::detected(), RowPath::Baseline);
    /// }
    /// ```
    pub fn detected() -> RowPath {
        #[cfg(all(
            target_arch = "x86_64",
            not(all(target_feature = "avx2", target_feature = "fma"))
        ))]
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return RowPath::Avx2Fma;
        }
        RowPath::Baseline
    }

    /// Makes every later row loop of this process run `path`'s copy; loops already running
    /// finish on theirs. Both copies give the same bits, so this changes speed only: it exists
    /// to check exactly that (run a workload on each path and compare world hashes).
    ///
    /// # Panics
    ///
    /// If `path` is [`Avx2Fma`](RowPath::Avx2Fma) and [`detected`](RowPath::detected) is not
    /// (the CPU lacks the features, or the build has no such copy): check `detected()` first.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    /// use freyr::query::RowPath;
    ///
    /// struct X(f32);
    ///
    /// let run = || {
    ///     let mut registry = Registry::with_workers(2);
    ///     registry.spawn_batch((0..3000).map(|i| (X(i as f32 * 0.1),)));
    ///     registry.query::<&mut X>().each(|_, x| x.0 = x.0 * 1.5 + 0.25);
    ///     registry
    ///         .query::<&X>()
    ///         .each_async_reduce(|| 0.0f32, |acc, _, x| acc + x.0, |a, b| a + b)
    ///         .join(&mut registry)
    /// };
    /// RowPath::force(RowPath::Baseline);
    /// let baseline = run();
    /// RowPath::force(RowPath::detected());
    /// assert_eq!(run().to_bits(), baseline.to_bits());
    /// ```
    pub fn force(path: RowPath) {
        let value = match path {
            RowPath::Baseline => BASELINE,
            RowPath::Avx2Fma => {
                assert!(
                    RowPath::detected() == RowPath::Avx2Fma,
                    "freyr: RowPath::force(Avx2Fma) on a CPU or build without that copy \
                     (check RowPath::detected() first)"
                );
                AVX2_FMA
            }
        };
        PATH.store(value, Ordering::Relaxed);
    }
}

/// Whether row loops run their AVX2 + FMA copy: true only after the CPU was found to have both.
/// One relaxed load once chosen; the atomic carries no other data.
#[inline(always)]
pub(crate) fn avx2_fma() -> bool {
    match PATH.load(Ordering::Relaxed) {
        UNSET => choose(),
        path => path == AVX2_FMA,
    }
}

/// The first row loop's choice: the detected copy unless `FREYR_ROW_PATH=baseline`. A racing
/// [`RowPath::force`] wins over it.
#[cold]
#[inline(never)]
fn choose() -> bool {
    let keep_baseline = std::env::var_os(ROW_PATH_ENV).is_some_and(|v| {
        v.to_str()
            .is_some_and(|v| v.eq_ignore_ascii_case("baseline"))
    });
    let path = if !keep_baseline && RowPath::detected() == RowPath::Avx2Fma {
        AVX2_FMA
    } else {
        BASELINE
    };
    let _ = PATH.compare_exchange(UNSET, path, Ordering::Relaxed, Ordering::Relaxed);
    PATH.load(Ordering::Relaxed) == AVX2_FMA
}

/// Defines an out-of-line row loop in two copies and the dispatcher that picks one:
///
/// ```text
/// row_loop! {
///     /// docs
///     pub(crate) unsafe fn name / name_baseline / name_avx2 <Generics>(args) -> Ret
///     where { bounds } { body }
/// }
/// ```
///
/// `name` is `#[inline(always)]` and calls `name_avx2` when [`avx2_fma`] holds (x86-64 builds
/// whose target lacks AVX2 or FMA), else `name_baseline`; both copies are `#[inline(never)]`
/// with `body`, so the user's callback inlines into each and, as a function of its own with
/// `noalias` reference arguments, the loop vectorises. `name` inherits the copies' `# Safety`
/// contract, which the caller's docs must give.
macro_rules! row_loop {
    (
        $(#[$meta:meta])*
        $vis:vis unsafe fn $name:ident / $baseline:ident / $avx2:ident
        <$($gen:ident),* $(,)?>($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?
        where { $($bounds:tt)* }
        $body:block
    ) => {
        $(#[$meta])*
        #[inline(always)]
        $vis unsafe fn $name<$($gen),*>($($arg: $ty),*) $(-> $ret)?
        where
            $($bounds)*
        {
            #[cfg(all(
                target_arch = "x86_64",
                not(all(target_feature = "avx2", target_feature = "fma"))
            ))]
            if $crate::row_path::avx2_fma() {
                // SAFETY: `avx2_fma()` holds only after the CPU was found to have AVX2 and FMA
                // (`RowPath::detected`), the features the copy was compiled with; the rest of
                // the contract is the caller's, the same for both copies.
                return unsafe { $avx2::<$($gen),*>($($arg),*) };
            }
            // SAFETY: the caller's contract, which is this copy's.
            unsafe { $baseline::<$($gen),*>($($arg),*) }
        }

        /// The copy of the row loop compiled for the build's target.
        ///
        /// # Safety
        ///
        /// As for the dispatcher of the same name without the suffix.
        #[inline(never)]
        unsafe fn $baseline<$($gen),*>($($arg: $ty),*) $(-> $ret)?
        where
            $($bounds)*
        $body

        /// The copy of the row loop compiled with AVX2 and FMA.
        ///
        /// # Safety
        ///
        /// The CPU has AVX2 and FMA, and as for the dispatcher of the same name without the
        /// suffix.
        #[cfg(all(
            target_arch = "x86_64",
            not(all(target_feature = "avx2", target_feature = "fma"))
        ))]
        #[target_feature(enable = "avx2,fma")]
        #[inline(never)]
        unsafe fn $avx2<$($gen),*>($($arg: $ty),*) $(-> $ret)?
        where
            $($bounds)*
        $body
    };
}

pub(crate) use row_loop;
