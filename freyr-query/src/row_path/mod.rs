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
//!     ├─ PATH == ADAPTIVE ──> the copy this loop measured faster (choice.rs)
//!     └─ otherwise ────────> copy compiled for the build's own target
//!   both copies: #[inline(never)], the same body, the user's callback inlined into each
//! ```
//!
//! `PATH` is written once, by the first row loop of the process: `ADAPTIVE` if the CPU has AVX2
//! and FMA (`is_x86_feature_detected!`) and `FREYR_ROW_PATH` is neither `baseline` nor `avx2`,
//! `AVX2_FMA` for `avx2` on such a CPU, else `BASELINE`. [`RowPath::force`] may change it later,
//! for tests that run each copy.
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

crate::two_row_copies! { used_by: mod choice; }

use core::sync::atomic::{AtomicU8, Ordering};

/// The one place that states which builds have two copies of every row loop: x86-64 targets
/// without both AVX2 and FMA (a dependent's default target). `-C target-cpu=native` on a CPU
/// with both, and every other architecture, build one copy and never dispatch.
///
/// - `two_row_copies! { only: items }`: the items exist only in builds with two copies;
/// - `two_row_copies! { only: { statements } }`: the block runs only in those builds;
/// - `two_row_copies! { used_by: items }`: the items serve the dispatch, so builds with one
///   copy allow them to be unused; `used_by_method:` the same for one method in an `impl`.
#[macro_export]
#[doc(hidden)]
macro_rules! two_row_copies {
    (only: $block:block) => { $crate::two_row_copies! { @unless cfg(any()); $block } };
    (only: $($item:item)*) => {$( $crate::two_row_copies! { @unless cfg(any()); $item } )*};
    (used_by: $($item:item)*) => {$(
        $crate::two_row_copies! { @unless allow(dead_code, unused_imports); $item }
    )*};
    (used_by_method: $($method:tt)*) => {
        $crate::two_row_copies! { @unless allow(dead_code); $($method)* }
    };
    // The predicate, once: builds without two copies apply `$attr` to what follows
    // (`cfg(any())` removes it).
    (@unless $attr:meta; $($it:tt)*) => {
        #[cfg_attr(
            not(all(
                target_arch = "x86_64",
                not(all(target_feature = "avx2", target_feature = "fma"))
            )),
            $attr
        )]
        $($it)*
    };
}

/// Not chosen yet: the first row loop detects.
const UNSET: u8 = 0;
/// The copy compiled for the build's target.
const BASELINE: u8 = 1;
/// The AVX2 + FMA copy everywhere (only ever stored after the CPU was checked for both
/// features).
const AVX2_FMA: u8 = 2;
/// Each loop's measured faster copy (only ever stored after the CPU was checked, like
/// `AVX2_FMA`).
const ADAPTIVE: u8 = 3;

/// The chosen mode: `UNSET`, `BASELINE`, `AVX2_FMA` or `ADAPTIVE`.
static PATH: AtomicU8 = AtomicU8::new(UNSET);

/// The environment variable read once, at the first row loop of the process: `baseline` (any
/// case) keeps the [`RowPath::Baseline`] copy, `avx2` runs the [`RowPath::Avx2Fma`] copy in
/// every loop (where the CPU has it); anything else, or no variable, runs
/// [`RowPath::Adaptive`] where the CPU has AVX2 and FMA. For comparing the copies on a
/// production machine without a rebuild.
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
/// The AVX2 copy is usually the faster one, but not for every callback (one that calls an
/// out-of-line function compiled for the baseline target can lose to stalls at the boundary),
/// so by default each loop measures both copies over its first calls and keeps the faster:
/// [`Adaptive`](RowPath::Adaptive).
///
/// The mode is set once, at the first row loop: `Adaptive` on a CPU with AVX2 and FMA in a
/// build that has both copies, else `Baseline`, unless the environment variable
/// `FREYR_ROW_PATH` says `baseline` or `avx2` ([`ROW_PATH_ENV`]; any other value is ignored,
/// with one line on stderr saying so). [`force`](RowPath::force) changes it at run time.
///
/// # Examples
///
/// ```
/// use freyr::query::RowPath;
///
/// let path = RowPath::current();
/// if RowPath::detected() == RowPath::Baseline {
///     assert_eq!(path, RowPath::Baseline);
/// }
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RowPath {
    /// The row loops as compiled for the build's target: SSE2 on a default x86-64 build; what
    /// `-C target-cpu` enables otherwise.
    Baseline,
    /// The copy compiled with AVX2 and FMA, chosen at run time on a CPU that has both. Exists
    /// only in x86-64 builds whose target lacks them (in the others the baseline copy is already
    /// at least this). As the mode of [`current`](RowPath::current): every loop runs it.
    Avx2Fma,
    /// Each row loop (one callback's loop, as compiled) alternates the two copies over its first
    /// 16 calls that do work, keeps each copy's best time per row (or task, or byte), and from
    /// then on runs the faster one, the AVX2 copy unless the baseline one is clearly faster.
    /// The default where [`detected`](RowPath::detected) is [`Avx2Fma`](RowPath::Avx2Fma).
    /// Which copy a loop keeps depends on timing; what it computes does not.
    Adaptive,
}

impl RowPath {
    /// The mode row loops run in now (choosing it first if no row loop ran yet).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::query::RowPath;
    ///
    /// // Without an override: adaptive where there are two copies to choose from.
    /// if std::env::var_os(freyr::query::ROW_PATH_ENV).is_none() {
    ///     let want = match RowPath::detected() {
    ///         RowPath::Baseline => RowPath::Baseline,
    ///         _ => RowPath::Adaptive,
    ///     };
    ///     assert_eq!(RowPath::current(), want);
    /// }
    /// ```
    pub fn current() -> RowPath {
        match mode() {
            AVX2_FMA => RowPath::Avx2Fma,
            ADAPTIVE => RowPath::Adaptive,
            _ => RowPath::Baseline,
        }
    }

    /// Under [`Adaptive`](RowPath::Adaptive): how many row loops have decided, as `(running
    /// the AVX2 copy, running the baseline copy)`. Loops still measuring, and loops of a build
    /// with one copy, are not counted. A diagnostic: which loops chose what depends on timing.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::Registry;
    /// use freyr::query::RowPath;
    ///
    /// struct X(f32);
    ///
    /// let mut registry = Registry::with_workers(1);
    /// registry.spawn_batch((0..100_000).map(|i| (X(i as f32),)));
    /// for _ in 0..40 {
    ///     registry.query::<&mut X>().each(|_, x| x.0 = x.0 * 0.5 + 1.0);
    /// }
    /// let (avx2, baseline) = RowPath::decisions();
    /// if RowPath::current() == RowPath::Adaptive {
    ///     assert!(avx2 + baseline >= 1, "the loop above ran 40 times: it has decided");
    /// } else {
    ///     assert_eq!((avx2, baseline), (0, 0));
    /// }
    /// ```
    pub fn decisions() -> (usize, usize) {
        choice::decided()
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
        crate::two_row_copies! { only: {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return RowPath::Avx2Fma;
            }
        }}
        RowPath::Baseline
    }

    /// Makes every later row loop of this process run `path`'s copy (or, for
    /// [`Adaptive`](RowPath::Adaptive), measure afresh and choose); loops already running
    /// finish on theirs. Both copies give the same bits, so this changes speed only: it exists
    /// to check exactly that (run a workload on each path and compare world hashes).
    ///
    /// # Panics
    ///
    /// If `path` is [`Avx2Fma`](RowPath::Avx2Fma) or [`Adaptive`](RowPath::Adaptive) and
    /// [`detected`](RowPath::detected) is not `Avx2Fma` (the CPU lacks the features, or the
    /// build has no such copy): check `detected()` first.
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
            RowPath::Avx2Fma | RowPath::Adaptive => {
                assert!(
                    RowPath::detected() == RowPath::Avx2Fma,
                    "freyr: RowPath::force({path:?}) on a CPU or build without the AVX2 copy \
                     (check RowPath::detected() first)"
                );
                if path == RowPath::Adaptive {
                    choice::reset();
                    ADAPTIVE
                } else {
                    AVX2_FMA
                }
            }
        };
        PATH.store(value, Ordering::Relaxed);
    }
}

/// The mode row loops run in: `BASELINE`, `AVX2_FMA` or `ADAPTIVE`, the last two only after
/// the CPU was found to have AVX2 and FMA. One relaxed load once chosen; the atomic carries no
/// other data.
#[inline(always)]
pub fn mode() -> u8 {
    match PATH.load(Ordering::Relaxed) {
        UNSET => choose(),
        path => path,
    }
}

crate::two_row_copies! { used_by:
    /// Whether the dispatcher runs the AVX2 copy in every loop. (Only builds with two copies
    /// ask: x86-64 targets without AVX2 and FMA; `-C target-cpu=native` builds have one.)
    #[inline(always)]
    pub fn is_avx2(mode: u8) -> bool {
        mode == AVX2_FMA
    }

    /// Whether the dispatcher asks the loop's measurements ([`pick`]); only builds with two
    /// copies ask, as for [`is_avx2`].
    #[inline(always)]
    pub fn is_adaptive(mode: u8) -> bool {
        mode == ADAPTIVE
    }

    pub use choice::{Pick, pick};
}

/// The first row loop's choice: adaptive on a CPU with both copies, unless `FREYR_ROW_PATH`
/// says `baseline` or `avx2`. A racing [`RowPath::force`] wins over it.
#[cold]
#[inline(never)]
fn choose() -> u8 {
    let var = std::env::var_os(ROW_PATH_ENV);
    let says = |word: &str| {
        var.as_ref()
            .and_then(|v| v.to_str())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case(word))
    };
    if let Some(v) = &var
        && !says("baseline")
        && !says("avx2")
    {
        // Not silent: a misspelt override would otherwise run adaptive without a word.
        eprintln!(
            "freyr: {ROW_PATH_ENV}={v:?} is ignored: it takes baseline or avx2 (unset: each \
             row loop picks its copy)"
        );
    }
    let path = if says("baseline") || RowPath::detected() != RowPath::Avx2Fma {
        BASELINE
    } else if says("avx2") {
        AVX2_FMA
    } else {
        ADAPTIVE
    };
    let _ = PATH.compare_exchange(UNSET, path, Ordering::Relaxed, Ordering::Relaxed);
    PATH.load(Ordering::Relaxed)
}

/// Defines an out-of-line row loop in two copies and the dispatcher that picks one:
///
/// ```text
/// row_loop! {
///     /// docs
///     pub(crate) unsafe fn name / name_baseline / name_avx2 <Generics>(args) -> Ret
///     where { bounds } units(expr) { body }
/// }
/// ```
///
/// `name` is `#[inline(always)]`; in x86-64 builds whose target lacks AVX2 or FMA it calls
/// `name_avx2` in the `AVX2_FMA` [`mode`], the copy [`pick`] names in the `ADAPTIVE` one (keyed
/// by `name_baseline`'s address, with `units`, evaluated before the call, as the call's amount
/// of work), else `name_baseline`; both copies are `#[inline(never)]`
/// with `body`, so the user's callback inlines into each and, as a function of its own with
/// `noalias` reference arguments, the loop vectorises. `name` inherits the copies' `# Safety`
/// contract, which the caller's docs must give.
#[macro_export]
#[doc(hidden)]
macro_rules! row_loop {
    (
        $(#[$meta:meta])*
        $vis:vis unsafe fn $name:ident / $baseline:ident / $avx2:ident
        <$($gen:ident),* $(,)?>($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?
        where { $($bounds:tt)* }
        units($units:expr)
        $body:block
    ) => {
        $(#[$meta])*
        #[inline(always)]
        $vis unsafe fn $name<$($gen),*>($($arg: $ty),*) $(-> $ret)?
        where
            $($bounds)*
        {
            $crate::two_row_copies! { only: {
                let mode = $crate::row_path::mode();
                if $crate::row_path::is_avx2(mode) {
                    // SAFETY: the `AVX2_FMA` mode is set only after the CPU was found to have
                    // AVX2 and FMA (`RowPath::detected`), the features the copy was compiled
                    // with; the rest of the contract is the caller's, the same for both copies.
                    return unsafe { $avx2::<$($gen),*>($($arg),*) };
                }
                if $crate::row_path::is_adaptive(mode) {
                    let key = $baseline::<$($gen),*> as unsafe fn($($ty),*) $(-> $ret)? as usize;
                    let pick = $crate::row_path::pick(key, $units);
                    let out = if pick.avx2 {
                        // SAFETY: as above: the `ADAPTIVE` mode, like `AVX2_FMA`, is set only
                        // on a CPU with AVX2 and FMA.
                        unsafe { $avx2::<$($gen),*>($($arg),*) }
                    } else {
                        // SAFETY: the caller's contract, which is this copy's.
                        unsafe { $baseline::<$($gen),*>($($arg),*) }
                    };
                    pick.finish();
                    return out;
                }
            }}
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

        $crate::two_row_copies! { only:
            /// The copy of the row loop compiled with AVX2 and FMA.
            ///
            /// # Safety
            ///
            /// The CPU has AVX2 and FMA, and as for the dispatcher of the same name without the
            /// suffix.
            #[target_feature(enable = "avx2,fma")]
            #[inline(never)]
            unsafe fn $avx2<$($gen),*>($($arg: $ty),*) $(-> $ret)?
            where
                $($bounds)*
            $body
        }
    };
}

pub use row_loop;
