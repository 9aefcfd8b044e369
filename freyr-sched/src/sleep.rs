//! Parking idle threads without losing wake-ups. The protocol and the proof
//! sketch are in `PROTOCOL.md` ("Park and wake"); the step numbers below
//! refer to it.

use crate::metrics::{CachePadded, Counters};
use freyr_sync::{self as sync, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering, fence};

/// Which condition variable a thread sleeps on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Sleeper {
    /// A background worker: woken by new work and by shutdown.
    Worker,
    /// A thread waiting for a task group: woken by new work (when no worker
    /// can take it) and by any group's completion.
    GroupWaiter,
}

/// The most background workers that should be awake at once in a pool of
/// `threads` (the caller included) on `cores` cores: all of them, unless the
/// pool has more threads than cores; then as many as there are cores besides
/// the caller's, at least one (PROTOCOL.md "Awake cap").
pub(crate) fn awake_cap(threads: usize, cores: usize) -> usize {
    let background = threads.saturating_sub(1);
    if threads > cores.max(1) {
        cores.saturating_sub(1).clamp(1, background.max(1))
    } else {
        background
    }
}

/// The state under the sleep lock.
struct State {
    /// Background workers that have not exited: the awake ones are those not
    /// blocked on `workers_cv`, plus those granted a token.
    workers: usize,
    /// Workers blocked on `workers_cv`.
    waiting_workers: usize,
    /// Wake-ups granted to waiting workers and not yet taken.
    worker_tokens: usize,
    /// Group waiters blocked on `waiters_cv`.
    waiting_waiters: usize,
    /// Wake-ups granted to waiting group waiters and not yet taken.
    waiter_tokens: usize,
    /// Bumped by every broadcast (a group completed, or shutdown): every
    /// sleeper of the broadcast's kind wakes without taking a token.
    generation: u64,
}

/// A thread's spin phase, counted in [`Sleep::has_searchers`] until dropped.
pub(crate) struct Searching<'a>(&'a AtomicUsize);

impl Drop for Searching<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The pool-wide sleep state shared by workers and waiting threads.
pub(crate) struct Sleep {
    /// Threads that announced they are about to sleep or are sleeping
    /// (workers and group waiters alike). Pushers read it (after a SeqCst
    /// fence) to decide whether a wake-up may be needed at all.
    sleepers: AtomicUsize,
    /// Waiting threads without a token: a relaxed mirror of the lock state,
    /// read by the splitting heuristic only.
    wakeable: AtomicUsize,
    /// Threads in their spin phase now, searching for work (workers and
    /// group waiters): read by the splitting heuristic only. Every spin phase
    /// changes it twice, so it has a cache line of its own: the words a
    /// submitter reads (`sleepers`) stay where they are while threads start
    /// and stop spinning.
    searching: CachePadded<AtomicUsize>,
    state: Mutex<State>,
    workers_cv: Condvar,
    waiters_cv: Condvar,
    /// At most this many workers are woken to be awake at once (see
    /// [`awake_cap`]); a submission wakes sleepers only up to it.
    max_awake: usize,
}

impl Sleep {
    /// The sleep state of a pool with `workers` background workers, of which
    /// new work wakes sleepers until `max_awake` are awake.
    pub(crate) fn new(workers: usize, max_awake: usize) -> Self {
        Sleep {
            sleepers: AtomicUsize::new(0),
            wakeable: AtomicUsize::new(0),
            searching: CachePadded(AtomicUsize::new(0)),
            state: Mutex::new(State {
                workers,
                waiting_workers: 0,
                worker_tokens: 0,
                waiting_waiters: 0,
                waiter_tokens: 0,
                generation: 0,
            }),
            workers_cv: Condvar::new(),
            waiters_cv: Condvar::new(),
            max_awake,
        }
    }

    /// Whether new work would wake some sleeper now (one without a pending
    /// wake-up, and, for a worker, with room under the awake cap): then
    /// splitting work is worthwhile. A relaxed hint, never used for
    /// correctness.
    #[inline]
    pub(crate) fn has_sleepers(&self) -> bool {
        self.wakeable.load(Ordering::Relaxed) != 0
    }

    /// Whether some thread is in its spin phase, searching for work: then a
    /// thread with a long enough range left splits it (see `run_indices`),
    /// and the spinning thread takes the upper half within a search round.
    /// A relaxed hint, never used for correctness.
    #[inline]
    pub(crate) fn has_searchers(&self) -> bool {
        self.searching.0.load(Ordering::Relaxed) != 0
    }

    /// Counts this thread as searching (see [`has_searchers`](Self::has_searchers))
    /// until the returned guard drops.
    #[inline]
    pub(crate) fn searching(&self) -> Searching<'_> {
        self.searching.0.fetch_add(1, Ordering::Relaxed);
        Searching(&self.searching.0)
    }

    /// Sleeping workers that a wake may grant a token now: those without one,
    /// no more than the awake cap has room for. Workers not blocked (running,
    /// searching, spinning, or on their way to park, where they re-check the
    /// queues under the lock) and those holding a token count as awake.
    fn wakeable_workers(&self, state: &State) -> usize {
        let idle = state.waiting_workers.saturating_sub(state.worker_tokens);
        // MUTANT `cap_counts_sleepers_awake` takes `awake` as every worker:
        // with all of them asleep, a push wakes nobody (model 11).
        let awake = state.workers - idle;
        idle.min(self.max_awake.saturating_sub(awake))
    }

    fn publish_wakeable(&self, state: &State) {
        let waiters = state.waiting_waiters.saturating_sub(state.waiter_tokens);
        self.wakeable
            .store(self.wakeable_workers(state) + waiters, Ordering::Relaxed);
    }

    /// Submit step 3: called after `tasks` new tasks were pushed. Grants up
    /// to `tasks` wake-ups to sleepers that have none yet, workers first (no
    /// more of them than bring the awake workers up to the cap).
    /// Costs one fence and one load when nobody sleeps.
    #[inline]
    pub(crate) fn new_work(&self, tasks: usize) {
        // Pairs with the fence in `sleep` (park step 2): either this load sees
        // the sleeper's announcement, or the sleeper's re-check sees the push.
        // MUTANT `no_fence_in_submit` removes it: the load may read a stale
        // zero while the sleeper's re-check misses the push (model 2).
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::Relaxed) != 0 {
            self.wake(tasks);
        }
    }

    #[cold]
    fn wake(&self, tasks: usize) {
        let mut state = sync::lock(&self.state);
        let idle_workers = state.waiting_workers.saturating_sub(state.worker_tokens);
        let to_workers = tasks.min(self.wakeable_workers(&state));
        let idle_waiters = state.waiting_waiters.saturating_sub(state.waiter_tokens);
        let to_waiters = (tasks - to_workers).min(idle_waiters);
        state.worker_tokens += to_workers;
        state.waiter_tokens += to_waiters;
        self.publish_wakeable(&state);
        notify(&self.workers_cv, to_workers, idle_workers);
        notify(&self.waiters_cv, to_waiters, idle_waiters);
        // Every announced sleeper either re-checks after this critical
        // section (and sees the work), already holds a token and will search
        // when it wakes, or is a worker left asleep because the cap counts
        // enough awake workers: each of those is not blocked now, so it
        // searches again, or re-checks under this lock before it blocks.
    }

    /// A worker leaves its loop for good (shutdown): it no longer counts as
    /// awake, so the cap never waits on it.
    #[cold]
    pub(crate) fn worker_exited(&self) {
        let mut state = sync::lock(&self.state);
        state.workers -= 1;
        self.publish_wakeable(&state);
    }

    /// Group completion step 2: wakes every sleeping group waiter (each
    /// re-checks its own group). Workers sleep on.
    #[cold]
    pub(crate) fn wake_group_waiters(&self) {
        let mut state = sync::lock(&self.state);
        state.generation = state.generation.wrapping_add(1);
        self.waiters_cv.notify_all();
    }

    /// Shutdown step 1: wakes every sleeper.
    #[cold]
    pub(crate) fn wake_all(&self) {
        let mut state = sync::lock(&self.state);
        state.generation = state.generation.wrapping_add(1);
        self.workers_cv.notify_all();
        self.waiters_cv.notify_all();
    }

    /// Park steps 1-5: announce, fence, lock, re-check, wait for a token or
    /// a broadcast. `still_idle` re-checks every condition the caller waits
    /// for (queued work, its group's completion, shutdown) and returns `true`
    /// when there is still nothing to do; it runs under the sleep lock.
    #[cold]
    pub(crate) fn sleep(
        &self,
        kind: Sleeper,
        counters: &Counters,
        still_idle: impl FnOnce() -> bool,
    ) {
        // 1. Announce: from here on a pusher that misses our re-check sees us.
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        // 2. Order the announcement before the re-check's loads. MUTANT
        //    `no_fence_in_park` removes it: the re-check may miss a push
        //    whose pusher read a stale zero (model 2).
        fence(Ordering::SeqCst);
        // 3. Lock: a waker's critical section is entirely before or after.
        let mut state = sync::lock(&self.state);
        // 4. Re-check. MUTANT `no_recheck_before_sleep` skips it: a push that
        //    landed between our last search and the announcement (so its
        //    pusher saw no sleeper) is then never noticed.
        let idle = still_idle();
        if idle {
            counters.add_park();
            state = self.wait(kind, state);
            counters.add_wakeup();
        }
        drop(state);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        if !idle {
            // The caller searches again at once: under loom that loop must
            // yield, or a re-check that keeps reading a stale "not empty"
            // could spin without end (a no-op in normal builds).
            sync::retry_hint();
        }
    }

    /// 5. Sleep until granted a token or a broadcast of our kind.
    fn wait<'a>(
        &'a self,
        kind: Sleeper,
        mut state: MutexGuard<'a, State>,
    ) -> MutexGuard<'a, State> {
        let seen = state.generation;
        match kind {
            Sleeper::Worker => state.waiting_workers += 1,
            Sleeper::GroupWaiter => state.waiting_waiters += 1,
        }
        self.publish_wakeable(&state);
        let condvar = match kind {
            Sleeper::Worker => &self.workers_cv,
            Sleeper::GroupWaiter => &self.waiters_cv,
        };
        loop {
            state = sync::wait(condvar, state);
            let tokens = match kind {
                Sleeper::Worker => &mut state.worker_tokens,
                Sleeper::GroupWaiter => &mut state.waiter_tokens,
            };
            if *tokens > 0 {
                *tokens -= 1;
                break;
            }
            if state.generation != seen {
                break;
            }
        }
        match kind {
            Sleeper::Worker => state.waiting_workers -= 1,
            Sleeper::GroupWaiter => state.waiting_waiters -= 1,
        }
        // A thread that left on a broadcast may leave a token behind with
        // nobody to take it; never grant more tokens than there are waiters.
        state.worker_tokens = state.worker_tokens.min(state.waiting_workers);
        state.waiter_tokens = state.waiter_tokens.min(state.waiting_waiters);
        self.publish_wakeable(&state);
        state
    }
}

/// Wakes `n` of the `idle` threads waiting on `condvar` (all when `n` covers
/// them: one syscall instead of many).
fn notify(condvar: &Condvar, n: usize, idle: usize) {
    if n > 0 && n >= idle {
        condvar.notify_all();
    } else {
        for _ in 0..n {
            condvar.notify_one();
        }
    }
}

impl Sleep {
    /// `(blocked workers, tokens granted to them)`, read under the lock.
    #[cfg(all(test, not(freyr_loom)))]
    fn worker_state(&self) -> (usize, usize) {
        let state = sync::lock(&self.state);
        (state.waiting_workers, state.worker_tokens)
    }
}

#[cfg(all(test, not(freyr_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn a_re_check_that_finds_work_does_not_park() {
        let sleep = Sleep::new(1, 1);
        let counters = Counters::default();
        sleep.sleep(Sleeper::Worker, &counters, || false);
        assert_eq!(counters.snapshot().parks, 0);
        assert!(!sleep.has_sleepers());
    }

    #[test]
    fn new_work_wakes_a_sleeper() {
        let sleep = Arc::new(Sleep::new(1, 1));
        let work = Arc::new(AtomicBool::new(false));
        let sleeper = {
            let (sleep, work) = (Arc::clone(&sleep), Arc::clone(&work));
            std::thread::spawn(move || {
                let counters = Counters::default();
                while !work.load(Ordering::SeqCst) {
                    sleep.sleep(Sleeper::Worker, &counters, || !work.load(Ordering::SeqCst));
                }
                counters.snapshot()
            })
        };
        // Publish, then wake: exactly the submit steps 2-3.
        work.store(true, Ordering::SeqCst);
        sleep.new_work(1);
        let metrics = sleeper.join().unwrap();
        assert_eq!(metrics.parks, metrics.wakeups);
        assert!(!sleep.has_sleepers());
    }

    /// Parks `n` worker threads on `sleep` until `work` is set, and returns
    /// them once all `n` are blocked.
    fn park_workers(
        sleep: &Arc<Sleep>,
        work: &Arc<AtomicBool>,
        n: usize,
    ) -> Vec<std::thread::JoinHandle<()>> {
        let threads = (0..n)
            .map(|_| {
                let (sleep, work) = (Arc::clone(sleep), Arc::clone(work));
                std::thread::spawn(move || {
                    let counters = Counters::default();
                    sleep.sleep(Sleeper::Worker, &counters, || !work.load(Ordering::SeqCst));
                    // Woken: stay awake (not blocked) until the test ends, as a worker
                    // searching would, so the state the test reads does not depend on
                    // whether this thread got back to sleep first.
                    while !work.load(Ordering::SeqCst) {
                        std::thread::yield_now();
                    }
                })
            })
            .collect();
        while sleep.worker_state().0 < n {
            std::thread::yield_now();
        }
        threads
    }

    #[test]
    fn awake_cap_is_the_cores_besides_the_callers_when_oversubscribed() {
        assert_eq!(awake_cap(2, 2), 1);
        assert_eq!(awake_cap(8, 2), 1);
        assert_eq!(awake_cap(16, 2), 1);
        assert_eq!(awake_cap(16, 4), 3);
        assert_eq!(awake_cap(3, 2), 1);
        assert_eq!(awake_cap(4, 1), 1);
        assert_eq!(awake_cap(4, 0), 1);
        // Not oversubscribed: no cap below the pool's workers.
        assert_eq!(awake_cap(8, 8), 7);
        assert_eq!(awake_cap(4, 16), 3);
        assert_eq!(awake_cap(1, 2), 0);
    }

    #[test]
    fn a_submission_wakes_sleepers_only_up_to_the_awake_cap() {
        // Three workers, at most one awake: all three asleep, so a batch of
        // three ranges wakes one of them, not three, and no split is asked for.
        let sleep = Arc::new(Sleep::new(3, 1));
        let work = Arc::new(AtomicBool::new(false));
        let threads = park_workers(&sleep, &work, 3);
        assert!(sleep.has_sleepers());
        sleep.new_work(3);
        // One token granted: still held (3 waiting, 1 token) or taken by the woken worker,
        // which stays awake (2 waiting, none).
        let (waiting, tokens) = sleep.worker_state();
        assert_eq!(waiting - tokens, 2, "{waiting} waiting, {tokens} tokens");
        assert!(tokens <= 1, "{waiting} waiting, {tokens} tokens");
        assert!(!sleep.has_sleepers(), "one awake is the cap");
        work.store(true, Ordering::SeqCst);
        sleep.wake_all();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(sleep.worker_state(), (0, 0));
    }

    #[test]
    fn with_a_worker_awake_at_the_cap_a_submission_wakes_none() {
        // Two of three workers asleep: the third (not blocked) is awake and
        // will search, so the cap of one wakes nobody.
        let sleep = Arc::new(Sleep::new(3, 1));
        let work = Arc::new(AtomicBool::new(false));
        let threads = park_workers(&sleep, &work, 2);
        assert!(!sleep.has_sleepers());
        sleep.new_work(2);
        assert_eq!(sleep.worker_state(), (2, 0));
        // Once that worker exits, it no longer counts: a sleeper is woken.
        sleep.worker_exited();
        assert!(sleep.has_sleepers());
        work.store(true, Ordering::SeqCst);
        sleep.new_work(1);
        // The woken one leaves; the other one needs the broadcast.
        sleep.wake_all();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(sleep.worker_state(), (0, 0));
    }
}
