//! The pump's state, read and changed between drains: readiness, counts, coalescing,
//! invalidation, statistics.

use core::fmt;

use super::{AsyncPump, PumpStats};

impl<R, C, E> AsyncPump<R, C, E> {
    /// Whether another launch would start (in flight < capacity, not settled).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::pump::AsyncPump;
    /// let pool = ThreadPool::new(1);
    /// let mut pump: AsyncPump<u8> = AsyncPump::new();
    /// pump.launch(&pool, (), (), |()| Ok(0)).unwrap();
    /// assert!(!pump.is_ready());
    /// pump.drain_all(|_, _| {}, |_, _| {});
    /// assert!(pump.is_ready());
    /// ```
    #[must_use]
    pub fn is_ready(&self) -> bool {
        !self.settled && self.inflight.len() < self.capacity
    }

    /// Launches in flight: launched and not yet drained (settled or not).
    ///
    /// # Examples
    ///
    /// ```
    /// let pump: freyr::time::pump::AsyncPump<u8> = freyr::time::pump::AsyncPump::new();
    /// assert_eq!(pump.in_flight(), 0);
    /// ```
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// How many launches [`drain`](Self::drain) would retire now: the
    /// settled ones at the head, up to the first still in flight. A
    /// fixed-step [`Gate`](crate::Gate) can hold the next tick until the
    /// launch it depends on is drainable (the deterministic mode).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::time::pump::{AsyncPump, Launch};
    /// let mut pump: AsyncPump<u8> = AsyncPump::with_capacity(2).unwrap();
    /// let Ok(Launch::External(a)) = pump.launch_external(()) else { unreachable!() };
    /// let Ok(Launch::External(b)) = pump.launch_external(()) else { unreachable!() };
    /// b.complete(2).unwrap();
    /// assert_eq!(pump.drainable(), 0); // `a` holds `b` back
    /// a.complete(1).unwrap();
    /// assert_eq!(pump.drainable(), 2);
    /// ```
    #[must_use]
    pub fn drainable(&self) -> usize {
        self.inflight
            .iter()
            .take_while(|e| e.source.is_settled())
            .count()
    }

    /// The most launches in flight at once.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(freyr::time::pump::AsyncPump::<u8>::new().capacity(), 1);
    /// ```
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether a request was coalesced since the last call, clearing the
    /// flag: the owner then relaunches once, with fresh inputs, when
    /// [`is_ready`](Self::is_ready).
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::pump::AsyncPump;
    /// let pool = ThreadPool::new(1);
    /// let mut pump: AsyncPump<u8> = AsyncPump::new();
    /// pump.launch(&pool, (), (), |()| Ok(0)).unwrap();
    /// pump.launch(&pool, (), (), |()| Ok(1)).unwrap(); // coalesced
    /// pump.launch(&pool, (), (), |()| Ok(2)).unwrap(); // coalesced into the same request
    /// assert!(pump.take_coalesced());
    /// assert!(!pump.take_coalesced());
    /// assert_eq!(pump.stats().coalesced, 2);
    /// ```
    pub fn take_coalesced(&mut self) -> bool {
        core::mem::take(&mut self.coalesced)
    }

    /// Invalidates every launch made so far: their results will be
    /// discarded as [`Discard::Stale`](super::Discard::Stale) (use it when the state they were
    /// computed from was replaced, e.g. a world reset). They still count
    /// against the capacity until drained.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::pump::{AsyncPump, Discard};
    /// let pool = ThreadPool::new(1);
    /// let mut pump: AsyncPump<u8> = AsyncPump::new();
    /// pump.launch(&pool, (), (), |()| Ok(9)).unwrap();
    /// pump.invalidate();
    /// let mut why = None;
    /// pump.drain_all(|_, _| unreachable!(), |_, d| why = Some(d));
    /// assert_eq!(why, Some(Discard::Stale(9)));
    /// assert_eq!(pump.epoch(), 1);
    /// ```
    pub fn invalidate(&mut self) {
        self.epoch += 1;
    }

    /// The current epoch (the number of [`invalidate`](Self::invalidate) calls).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(freyr::time::pump::AsyncPump::<u8>::new().epoch(), 0);
    /// ```
    #[must_use]
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Whether [`settle`](Self::settle) ran.
    ///
    /// # Examples
    ///
    /// ```
    /// let pump = freyr::time::pump::AsyncPump::<u8>::new();
    /// assert!(!pump.is_settled());
    /// ```
    #[must_use]
    pub fn is_settled(&self) -> bool {
        self.settled
    }

    /// Counters of the pump's life.
    ///
    /// # Examples
    ///
    /// ```
    /// use freyr::ThreadPool;
    /// use freyr::time::pump::AsyncPump;
    /// let pool = ThreadPool::new(1);
    /// let mut pump: AsyncPump<u8> = AsyncPump::new();
    /// pump.launch(&pool, (), (), |()| Err(String::from("no"))).unwrap();
    /// pump.drain_all(|_, _| {}, |_, _| {});
    /// let stats = pump.stats();
    /// assert_eq!((stats.launched, stats.discarded, stats.rejected), (1, 1, 1));
    /// ```
    #[must_use]
    pub fn stats(&self) -> PumpStats {
        self.stats
    }
}

impl<R: Send + 'static, C, E: Send + 'static> Default for AsyncPump<R, C, E> {
    fn default() -> Self {
        AsyncPump::new()
    }
}

impl<R, C, E> fmt::Debug for AsyncPump<R, C, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncPump")
            .field("capacity", &self.capacity)
            .field("in_flight", &self.inflight.len())
            .field("epoch", &self.epoch)
            .field("settled", &self.settled)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}
