//! Work split into one contiguous share per thread, claimed by its owner from the front and by
//! the other threads from the back: what keeps an item of repeated parallel work (a function
//! system, a tree of the propagation pass) on the same thread from run to run, so its data stays
//! in that thread's cache.

use core::ops::Range;
use core::panic::AssertUnwindSafe;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::panic;

use freyr_sched::ThreadPool;

/// One thread's share of a list of work items: the indices `front..back`. The thread it belongs
/// to claims from the front; the others, once their own share is done, claim from the back. An
/// item thus runs on the same thread run after run, and only the last few of a share move when
/// the threads' speeds differ by a little: the item's data stays in that thread's cache instead
/// of moving between cores on every run. (Helpers claiming from the front would interleave with
/// the owner, and which items moved would change from run to run.) Each share has its own cache
/// line: a thread claiming from its own share does not slow the others.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Share {
    /// `front` in the low 32 bits, `back` in the high 32 bits: one word, so that a claim from
    /// either end sees the other end's claims.
    range: AtomicU64,
}

impl Share {
    fn pack(front: u32, back: u32) -> u64 {
        u64::from(back) << 32 | u64::from(front)
    }

    fn unpack(word: u64) -> (u32, u32) {
        (word as u32, (word >> 32) as u32)
    }

    /// Splits `n` items into `parts` (at least one) contiguous shares of near-equal length, in
    /// order: thread `r` gets the `r`-th. `shares` is resized to `parts`, its old shares reused.
    pub(crate) fn split(shares: &mut Vec<Share>, n: u32, parts: u32) {
        let parts = parts.max(1);
        shares.resize_with(parts as usize, Share::default);
        let at = |r: u32| (u64::from(r) * u64::from(n) / u64::from(parts)) as u32;
        for (r, share) in (0..parts).zip(shares.iter_mut()) {
            share.set(at(r), at(r + 1));
        }
    }

    /// Resets the share to the indices `front..back`.
    pub(crate) fn set(&mut self, front: u32, back: u32) {
        *self.range.get_mut() = Self::pack(front, back);
    }

    /// Claims up to `n` (at least one) indices from the front, or `None` once the share is
    /// empty. Every index is claimed once, from one end or the other.
    pub(crate) fn claim_front(&self, n: u32) -> Option<Range<usize>> {
        self.claim(|front, back| (front, front.saturating_add(n.max(1)).min(back)))
    }

    /// Claims up to `n` (at least one) indices from the back; see
    /// [`claim_front`](Share::claim_front).
    pub(crate) fn claim_back(&self, n: u32) -> Option<Range<usize>> {
        self.claim(|front, back| (back.saturating_sub(n.max(1)).max(front), back))
    }

    /// Runs `f` on every index `shares` still hold, the way a thread claims them: its own
    /// share `home` from the front first, then the others' from their backs, in share order
    /// after `home` (a thread without a share, `home` `None`, starts at the first), `batch`
    /// indices per claim (at least one). Returns once every share is empty.
    pub(crate) fn drain(
        shares: &[Share],
        home: Option<usize>,
        batch: u32,
        mut f: impl FnMut(usize),
    ) {
        if let Some(home) = home {
            while let Some(claimed) = shares[home].claim_front(batch) {
                claimed.for_each(&mut f);
            }
        }
        let first = home.unwrap_or(0);
        for other in (0..shares.len()).map(|d| (first + d) % shares.len()) {
            if home == Some(other) {
                continue;
            }
            while let Some(claimed) = shares[other].claim_back(batch) {
                claimed.rev().for_each(&mut f);
            }
        }
    }

    /// Claims `take(front, back)`, a non-empty range at one end of `front..back`.
    fn claim(&self, take: impl Fn(u32, u32) -> (u32, u32)) -> Option<Range<usize>> {
        // Relaxed: the claim only has to be unique; what a claimed index names (the root list,
        // the nodes) was published to every runner when it was started.
        let mut word = self.range.load(Ordering::Relaxed);
        loop {
            let (front, back) = Self::unpack(word);
            if front >= back {
                return None;
            }
            let (lo, hi) = take(front, back);
            let next = if lo == front {
                Self::pack(hi, back)
            } else {
                Self::pack(front, lo)
            };
            match self
                .range
                .compare_exchange_weak(word, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(lo as usize..hi as usize),
                Err(seen) => word = seen,
            }
        }
    }
}

/// Runs `f(i)` once for every `i` in `0..count` on `pool`'s threads, each thread starting on its
/// own contiguous share of the range (the calling thread on the first, worker `k` on share
/// `k + 1`) and then helping with the others' from their backs, and returns the sum of what the
/// calls returned. Called again with the same `count`, every thread starts on the same share, so
/// the data of item `i` stays in one thread's cache from call to call; a thread that starts late
/// (a parked worker) only leaves the back of its share to the others. `shares` holds the shares
/// between calls (no allocation once warm). Each thread adds up its own calls' results and adds
/// them to the total once.
///
/// A panic in `f(i)` does not stop the others: every index runs, and the first panic a thread
/// caught is re-raised once every index ran (as [`ThreadPool::parallel_for`] does).
///
/// # Panics
///
/// If `count` is 2^32 or more (a share's ends are `u32`s; a world holds fewer entities).
pub(crate) fn sum_in_shares(
    pool: &ThreadPool,
    shares: &mut Vec<Share>,
    count: usize,
    f: impl Fn(usize) -> usize + Sync,
) -> usize {
    let n = u32::try_from(count).expect("freyr: fewer than 2^32 items are split into shares");
    let threads = pool.workers().min(count).max(1);
    // Fewer threads than the pool's fit in a `u32` (the pool caps its worker count).
    Share::split(shares, n, u32::try_from(threads).unwrap_or(u32::MAX));
    let shares = &shares[..];
    let total = AtomicUsize::new(0);
    // One task per share; whichever thread takes a task starts on its own share (a thread that
    // takes a second task finds its share empty and helps with the rest).
    pool.parallel_for(threads, 1, |_| {
        let home = freyr_sched::current_worker_index().map_or(0, |w| w + 1) % threads;
        let mut sum = 0usize;
        let mut first_panic = None;
        let mut run = |i: usize| match panic::catch_unwind(AssertUnwindSafe(|| f(i))) {
            Ok(n) => sum = sum.wrapping_add(n),
            Err(payload) => freyr_sched::keep_first(&mut first_panic, payload),
        };
        Share::drain(shares, Some(home), 1, &mut run);
        total.fetch_add(sum, Ordering::Relaxed);
        if let Some(payload) = first_panic {
            panic::resume_unwind(payload);
        }
    });
    // Relaxed: `parallel_for` returned, so every task's add happened before (its join).
    total.into_inner()
}

/// [`sum_in_shares`] for calls that return nothing.
pub(crate) fn for_each_in_shares(
    pool: &ThreadPool,
    shares: &mut Vec<Share>,
    count: usize,
    f: impl Fn(usize) + Sync,
) {
    sum_in_shares(pool, shares, count, |i| {
        f(i);
        0
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_hands_out_each_index_once_from_either_end() {
        let mut share = Share::default();
        share.set(3, 13);
        assert_eq!(share.claim_front(4), Some(3..7));
        assert_eq!(share.claim_back(4), Some(9..13));
        // Fewer left than asked: the rest, from whichever end asks.
        assert_eq!(share.claim_back(4), Some(7..9));
        assert_eq!(share.claim_front(4), None);
        assert_eq!(share.claim_back(1), None);
        // A claim of zero still takes one index, so a runner always makes progress.
        share.set(0, 2);
        assert_eq!(share.claim_front(0), Some(0..1));
        assert_eq!(share.claim_back(0), Some(1..2));
        assert_eq!(share.claim_front(0), None);
    }

    /// Two threads claim from the front and two from the back of one share, in batches of
    /// different sizes: every index is claimed exactly once.
    #[test]
    fn claims_from_both_ends_at_once_never_overlap() {
        for round in 0..200u32 {
            let mut share = Share::default();
            let n = 100 + round % 37;
            share.set(0, n);
            let claimed: Vec<Vec<usize>> = std::thread::scope(|s| {
                let share = &share;
                let handles: Vec<_> = (0..4u32)
                    .map(|t| {
                        s.spawn(move || {
                            let mut mine = Vec::new();
                            let batch = 1 + (t + round) % 5;
                            loop {
                                let range = if t % 2 == 0 {
                                    share.claim_front(batch)
                                } else {
                                    share.claim_back(batch)
                                };
                                let Some(range) = range else { break };
                                mine.extend(range);
                            }
                            mine
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let mut all: Vec<usize> = claimed.concat();
            all.sort_unstable();
            assert_eq!(all, (0..n as usize).collect::<Vec<_>>(), "round {round}");
        }
    }

    #[test]
    fn split_gives_each_thread_its_range_in_order() {
        let mut shares = Vec::new();
        Share::split(&mut shares, 10, 3);
        let fronts: Vec<_> = shares.iter().map(|s| s.claim_front(64)).collect();
        assert_eq!(fronts, [Some(0..3), Some(3..6), Some(6..10)]);
        // Reset for the next run, over fewer threads: the same split, shorter.
        Share::split(&mut shares, 10, 2);
        assert_eq!(shares.len(), 2);
        assert_eq!(shares[1].claim_front(64), Some(5..10));
        // Fewer items than threads (the caller passes `min`) and none at all.
        Share::split(&mut shares, 0, 1);
        assert_eq!(shares[0].claim_front(1), None);
    }

    /// Every index runs exactly once at any worker count, also when some of them panic, and the
    /// first panic is re-raised after all ran.
    #[test]
    fn for_each_in_shares_runs_every_index_once_and_re_raises_after_the_rest() {
        for workers in [1, 2, 3, 8, 16] {
            let pool = ThreadPool::new(workers);
            let mut shares = Vec::new();
            for count in [0, 1, 2, 5, 100, 1000] {
                let hits: Vec<AtomicUsize> = (0..count).map(|_| AtomicUsize::new(0)).collect();
                let sum = sum_in_shares(&pool, &mut shares, count, |i| {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                    i
                });
                assert_eq!(sum, count * count.saturating_sub(1) / 2);
                assert!(
                    hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                    "{workers} workers, {count} items"
                );
            }
            let hits: Vec<AtomicUsize> = (0..100).map(|_| AtomicUsize::new(0)).collect();
            let caught = panic::catch_unwind(AssertUnwindSafe(|| {
                for_each_in_shares(&pool, &mut shares, 100, |i| {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                    assert!(i % 10 != 3, "item {i} fails");
                });
            }));
            let payload = caught.expect_err("a panic is re-raised");
            let message = freyr_sched::panic_message(&*payload);
            assert!(
                message.starts_with("item ") && message.ends_with("3 fails"),
                "{message}"
            );
            assert!(
                hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                "{workers} workers"
            );
        }
    }
}
