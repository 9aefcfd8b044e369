//! `each_async_1m`: `pos += vel * dt` over 1M (Position, Velocity) entities on all workers; the
//! floor is `stream_1m/par_*` at the same worker count.

use crate::each_1m::Freyr;
use crate::{BIG, Group};

#[cfg(feature = "compare")]
mod peers {
    use std::hint::black_box;

    use freyr_benches::{Position, Velocity};
    use rayon::prelude::*;

    use crate::each_1m::{bevy_peer::Bevy, hecs_peer::Hecs, integrate, legion_peer::Legion};
    use crate::{CHUNK, DT};

    /// hecs has no parallel iterator: batches of one chunk's size bridged to rayon (call inside
    /// `install`).
    #[inline(never)]
    pub(super) fn hecs_run(hecs: &mut Hecs) {
        let dt = black_box(DT);
        hecs.world
            .query_mut::<(&mut Position, &Velocity)>()
            .into_iter_batched(CHUNK as u32)
            .par_bridge()
            .for_each(|batch| {
                for (p, v) in batch {
                    integrate(p, v, dt);
                }
            });
    }

    /// bevy_ecs `par_iter_mut` on its `ComputeTaskPool`.
    #[inline(never)]
    pub(super) fn bevy_run(bevy: &mut Bevy) {
        let dt = black_box(DT);
        bevy.query
            .par_iter_mut(&mut bevy.world)
            .for_each(|(mut p, v)| integrate(&mut p, v, dt));
    }

    /// bevy_ecs `contiguous_par_iter_mut`: column slices per batch, on its `ComputeTaskPool`.
    #[inline(never)]
    pub(super) fn bevy_contiguous_run(bevy: &mut Bevy) {
        let dt = black_box(DT);
        bevy.query
            .contiguous_par_iter_mut(&mut bevy.world)
            .expect("(Position, Velocity) are table components: the query is dense")
            .for_each(|(mut pos, vel)| {
                for (p, v) in pos.iter_mut().zip(vel) {
                    integrate(p, v, dt);
                }
            });
    }

    /// legion `par_for_each_mut` (rayon underneath; call inside `install`).
    #[inline(never)]
    pub(super) fn legion_run(legion: &mut Legion) {
        let dt = black_box(DT);
        legion
            .query
            .par_for_each_mut(&mut legion.world, |(p, v)| integrate(p, v, dt));
    }
}

pub(crate) fn register(group: &mut Group<'_>, n: usize) {
    let mut freyr = Freyr::new(BIG, n);
    group.bench_function(format!("each_async_1m/freyr/w{n}"), |b| {
        b.iter(|| freyr.run_each_async())
    });
    drop(freyr);
    #[cfg(feature = "compare")]
    {
        let mut hecs = crate::each_1m::hecs_peer::Hecs::new(BIG);
        let rayon = crate::rayon_pool(n);
        group.bench_function(format!("each_async_1m/hecs_rayon/w{n}"), |b| {
            rayon.install(|| b.iter(|| peers::hecs_run(&mut hecs)))
        });
        drop((hecs, rayon));
        let mut bevy = crate::each_1m::bevy_peer::Bevy::new(BIG);
        group.bench_function(format!("each_async_1m/bevy_ecs/w{n}"), |b| {
            b.iter(|| peers::bevy_run(&mut bevy))
        });
        group.bench_function(format!("each_async_1m/bevy_ecs_contiguous/w{n}"), |b| {
            b.iter(|| peers::bevy_contiguous_run(&mut bevy))
        });
        drop(bevy);
        let mut legion = crate::each_1m::legion_peer::Legion::new(BIG);
        let rayon = crate::rayon_pool(n);
        group.bench_function(format!("each_async_1m/legion/w{n}"), |b| {
            rayon.install(|| b.iter(|| peers::legion_run(&mut legion)))
        });
    }
}
