//! Functions and closures as systems: [`IntoFnSystem`], implemented for every `FnMut` whose
//! parameters are [`SystemParam`]s (up to 8), and the type-erased system the schedule keeps.

use core::marker::PhantomData;

use super::param::{ParamItem, Prepare, SystemAccess, SystemContext, SystemParam};

/// A function or closure whose parameters are [`SystemParam`]s: what
/// [`Registry::add_fn_system`](crate::Registry::add_fn_system) accepts. `Marker` only tells the
/// implementations for different arities apart; it is inferred.
///
/// # Examples
///
/// ```
/// use freyr::{Phase, Registry};
/// use freyr::system::{Query, ResMut};
///
/// struct Hp(u32);
/// struct Total(u32);
///
/// fn sum(mut q: Query<&Hp>, mut total: ResMut<Total>) {
///     total.0 = 0;
///     q.each(|_, hp| total.0 += hp.0);
/// }
///
/// let mut registry = Registry::with_workers(2);
/// registry.insert_resource(Total(0));
/// registry.spawn_batch((0..10).map(|_| (Hp(2),)));
/// registry.add_fn_system(Phase::Update, "sum", sum).unwrap();
/// registry.update(0.0);
/// assert_eq!(registry.resource::<Total>().unwrap().0, 20);
/// ```
pub trait IntoFnSystem<Marker>: Send + 'static {
    /// The parameters, as one tuple.
    #[doc(hidden)]
    type Param: SystemParam;
    /// Calls the function with one run's parameter values.
    #[doc(hidden)]
    fn call(&mut self, params: ParamItem<'_, Self::Param>);
}

macro_rules! impl_fn {
    ($($P:ident),*) => {
        #[allow(non_snake_case, clippy::too_many_arguments)]
        impl<Func, $($P: SystemParam),*> IntoFnSystem<fn($($P,)*)> for Func
        where
            Func: Send + 'static,
            for<'a> &'a mut Func: FnMut($($P),*) + FnMut($(ParamItem<'_, $P>),*),
        {
            type Param = ($($P,)*);

            fn call(&mut self, params: ParamItem<'_, ($($P,)*)>) {
                // Calling through a helper makes the compiler pick the `FnMut(items)` bound.
                fn call_inner<$($P),*>(mut f: impl FnMut($($P),*), $($P: $P),*) {
                    f($($P),*)
                }
                let ($($P,)*) = params;
                call_inner(self, $($P),*)
            }
        }
    };
}

impl_fn!();
impl_fn!(P0);
impl_fn!(P0, P1);
impl_fn!(P0, P1, P2);
impl_fn!(P0, P1, P2, P3);
impl_fn!(P0, P1, P2, P3, P4);
impl_fn!(P0, P1, P2, P3, P4, P5);
impl_fn!(P0, P1, P2, P3, P4, P5, P6);
impl_fn!(P0, P1, P2, P3, P4, P5, P6, P7);

/// A function system with its parameters' state, type-erased for the schedule.
pub(crate) trait ErasedFnSystem: Send {
    /// Whether [`prepare`](Self::prepare) does anything ([`SystemParam::PREPARES`]).
    fn prepares(&self) -> bool;
    fn prepare(&mut self, ctx: &mut Prepare<'_>);
    /// # Safety
    ///
    /// As [`SystemParam::fetch`]: `prepare` ran for this segment, and no system whose access
    /// conflicts with this one's runs meanwhile.
    unsafe fn run(&mut self, ctx: &SystemContext<'_>);
    /// Appends the words of the parameters' state that a snapshot keeps.
    fn save_state(&self, out: &mut Vec<u64>);
    /// Reads back what `save_state` wrote; `false` (and nothing changed) if `words` is not
    /// what this system writes (a snapshot of another registry whose system of this name has
    /// other parameters).
    fn load_state(&mut self, words: &[u64]) -> bool;
}

pub(crate) struct FnSystem<F: IntoFnSystem<M>, M> {
    f: F,
    state: <F::Param as SystemParam>::State,
    _marker: PhantomData<fn() -> M>,
}

impl<F: IntoFnSystem<M>, M> FnSystem<F, M> {
    pub(crate) fn new(f: F, access: &mut SystemAccess) -> Self {
        FnSystem {
            state: F::Param::init(access),
            f,
            _marker: PhantomData,
        }
    }
}

impl<F: IntoFnSystem<M>, M: 'static> ErasedFnSystem for FnSystem<F, M> {
    fn prepares(&self) -> bool {
        F::Param::PREPARES
    }

    fn prepare(&mut self, ctx: &mut Prepare<'_>) {
        F::Param::prepare(&mut self.state, ctx);
    }

    unsafe fn run(&mut self, ctx: &SystemContext<'_>) {
        // SAFETY: the caller's contract.
        let params = unsafe { F::Param::fetch(&mut self.state, ctx) };
        self.f.call(params);
    }

    fn save_state(&self, out: &mut Vec<u64>) {
        F::Param::save_state(&self.state, out);
    }

    fn load_state(&mut self, words: &[u64]) -> bool {
        let mut mine = Vec::new();
        self.save_state(&mut mine);
        if mine.len() != words.len() {
            return false;
        }
        let rest = F::Param::load_state(&mut self.state, words);
        debug_assert!(rest.is_empty(), "the parameters read what they wrote");
        true
    }
}
