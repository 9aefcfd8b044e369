//! Capacity limits that a test can reach through the public API panic before allocating, with
//! a message that says what was exceeded and what to do. (The limits that need 2^32 of
//! something are tested on their checks inside the crate.)

use freyr_core::{CommandBuffer, World};

/// 2^22 chunks of 512 rows.
const ROWS: usize = 1 << 31;

#[test]
#[should_panic(
    expected = "freyr: chunk limit reached: a world holds at most 4194304 chunks of \
                           512 rows (2147483648 rows over all archetypes), 0 exist and 4194305 \
                           more were asked for; despawn entities, reserve less, or split the \
                           entities across several worlds"
)]
fn reserving_more_rows_than_the_chunks_hold() {
    let mut world = World::new();
    world.reserve::<(u8,)>(ROWS + 1);
}

#[test]
#[should_panic(expected = "freyr: chunk limit reached")]
fn an_exact_size_batch_larger_than_the_chunks_hold() {
    let mut world = World::new();
    world.spawn((1u8,));
    world.spawn_batch((0..usize::MAX).map(|_| (2u8,)));
}

#[test]
#[should_panic(
    expected = "freyr: entity index space exhausted: 1 of the 4294967296 entity \
                           indices are in use (live or retired) and 18446744073709551615 more \
                           were asked for; despawn entities"
)]
#[cfg(target_pointer_width = "64")]
fn a_batch_whose_lower_bound_exceeds_the_index_space() {
    // A lower bound without an upper one: slots are reserved, chunks are not.
    struct Endless;
    impl Iterator for Endless {
        type Item = (u8,);
        fn next(&mut self) -> Option<(u8,)> {
            unreachable!("the reservation fails first")
        }
        fn size_hint(&self) -> (usize, Option<usize>) {
            (usize::MAX, None)
        }
    }
    let mut world = World::new();
    world.spawn((1u8,));
    world.spawn_batch(Endless);
}

#[test]
fn a_reservation_within_the_limits_still_works() {
    let mut world = World::new();
    let mut commands = CommandBuffer::new();
    world.reserve::<(u8,)>(1000);
    commands.spawn((1u8,));
    assert_eq!(commands.apply(&mut world).spawned.len(), 1);
    assert_eq!(world.len(), 1);
}
