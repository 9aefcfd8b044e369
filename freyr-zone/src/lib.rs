//! Zones: several Freyr worlds, in one process or in many, each owning a region of the map and
//! handing entities to each other through a message bus, with Freyr's promise intact across
//! them: the same inputs give the same worlds whatever the number of processes, workers or
//! crashes.
//!
//! A server that outgrows one machine splits its map into zones. Each zone is an ordinary
//! [`Registry`](freyr::Registry) on its own fixed-step loop, wrapped in a [`Zone`]. When an
//! entity's owner (a function of one of its components, [`ZoneRules::owner`]) becomes another
//! zone at the end of tick T, the zone exports it ([`Registry::export`](freyr::Registry::export),
//! references remapped), despawns it and publishes it; after its handoffs it publishes "tick T
//! done" to every other zone. The destination imports it at the start of its tick T + K
//! (K ≥ 1, the lookahead), in (source zone, tick, sequence) order, after every other zone's
//! "tick T done" marker has arrived: no world depends on when or in which order messages
//! arrive. Imports are idempotent (keyed by source, tick and sequence), so a zone that crashed
//! can resume from its last checkpoint (its save and the stream position it applied through,
//! in one crash-safe file), replay its inbound stream, run to the present and publish again.
//!
//! The bus is a small synchronous trait, [`Bus`], with two implementations run by the same
//! tests: [`InProcessBus`] (zones on threads of one process; no setup) and [`NatsBus`] (NATS
//! JetStream: per-subject order, file-backed durability, dedup by `Nats-Msg-Id`; the tokio
//! runtime stays inside it). The `freyr` facade does not depend on this crate.
//!
//! The check is the merged digest ([`ZoneDigest`]): entities hashed by a stable key of the
//! user's, independent of entity ids and of which process holds them.
//!
//! Goals: determinism across placement, workers and crashes; nothing lost or imported twice;
//! a bad message is a counted [`Rejection`] and the zone runs on; a silent neighbour is a
//! [`ZoneError::NeighbourSilent`] naming it, never a silent hang. Limits: entities interact
//! only within their zone (no ghosts of the neighbours' entities yet), and an entity in flight
//! misses K − 1 ticks (none with K = 1, at the price of lockstep).
//!
//! # Example
//!
//! Two zones on threads of one process, against the same aircraft run in one registry. With
//! K = 1 an aircraft that crosses at the end of tick T flies tick T + 1 in its new zone, so the
//! merged digest equals the single world's, whatever the worker counts:
//!
//! ```
//! use freyr_zone::aircraft::{self, Strips};
//! use freyr_zone::{InProcessBus, Zone, ZoneConfig, ZoneDigest};
//!
//! let (side, count, ticks) = (2_000.0, 300, 60);
//! let strips = Strips { zones: 2, side };
//! let bus = InProcessBus::new(2);
//! let digests: Vec<ZoneDigest> = std::thread::scope(|s| {
//!     let runs: Vec<_> = (0..2)
//!         .map(|z| {
//!             let bus = bus.clone();
//!             s.spawn(move || {
//!                 let mut registry = aircraft::registry(1 + z as usize, side);
//!                 aircraft::spawn_zone(&mut registry, &strips, z, count);
//!                 let mut config = ZoneConfig::new(z, 2);
//!                 config.lookahead = 1;
//!                 let mut zone = Zone::new(registry, bus, strips, config).unwrap();
//!                 zone.run_until(ticks).unwrap();
//!                 zone.settle().unwrap(); // imports what is still in flight
//!                 zone.digest()
//!             })
//!         })
//!         .collect();
//!     runs.into_iter().map(|r| r.join().unwrap()).collect()
//! });
//! let mut merged = digests[0].clone();
//! merged.merge(&digests[1]);
//!
//! let mut one = aircraft::registry(2, side);
//! one.spawn_batch((0..count).map(|k| aircraft::aircraft(k, side)));
//! let dt = ZoneConfig::new(0, 1).tick.as_secs_f32(); // the zones' fixed step
//! for _ in 0..ticks {
//!     one.update(dt);
//! }
//! assert_eq!(merged.value(), aircraft::digest(&mut one).value());
//! assert_eq!(merged.entities(), count);
//! assert!(digests.iter().all(|d| d.entities() > 0));
//! ```

pub mod aircraft;
mod bus;
mod digest;
mod error;
mod in_process;
mod message;
mod nats;
mod stats;
mod zone;

pub use bus::{Bus, BusError, Inbound, Position};
pub use digest::ZoneDigest;
pub use error::{Rejection, ZoneError};
pub use in_process::InProcessBus;
pub use message::{Message, MessageError, ZoneId};
pub use nats::{DUPLICATE_WINDOW, NatsBus};
pub use stats::{LATENCY_SAMPLES, ZoneStats};
pub use zone::{Checkpointing, FaultPoint, Pace, Zone, ZoneConfig, ZoneRules};
