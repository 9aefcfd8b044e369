//! Serde for [`Entity`] (feature `serde`): a handle is its 64 bits
//! ([`Entity::to_bits`]); deserialising bits that are no handle is an error.

use serde::de::{Deserialize, Deserializer, Error};
use serde::ser::{Serialize, Serializer};

use crate::entity::Entity;

impl Serialize for Entity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.to_bits())
    }
}

impl<'de> Deserialize<'de> for Entity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Entity, D::Error> {
        let bits = u64::deserialize(deserializer)?;
        Entity::from_bits(bits)
            .ok_or_else(|| D::Error::custom("not an entity handle (generation 0)"))
    }
}
