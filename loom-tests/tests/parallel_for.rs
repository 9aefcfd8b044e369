//! Loom model of `parallel_for`'s chunk cursor (PROTOCOL.md "parallel_for").
#![cfg(freyr_loom)]

use freyr_loom_tests::{Tally, check};
use freyr_sched::ThreadPool;

/// Model 10. Three indices, grain 2: two chunks, one of them partial, claimed
/// by the caller and one helper. Mutant `cursor_load_store` makes it fail.
#[test]
fn parallel_for_claims_every_index_exactly_once_when_count_straddles_grain() {
    check(|| {
        let tally = Tally::new(3);
        let pool = ThreadPool::new(2);
        pool.parallel_for(3, 2, |index| tally.hit(index));
        tally.assert_each_ran_once();
    });
}
