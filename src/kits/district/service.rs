//! The `world.district` service: what mods, the game and other kits may ask of the kit.

use serde_json::{Map, Value};

use crate::host::EntityId;

/// What the `world.district` kit offers.
pub trait DistrictService {
    /// Live streamed entities (district entities and entities tagged `streamed`).
    fn live(&self) -> usize;
    /// Stored entities (in district files or kept differences, not live).
    fn stored(&self) -> usize;
    /// The `data` of entity `id` as of the last change the kit heard of (a set queued by
    /// [`DistrictService::set`] included); `None` for no entity, `Some(None)` for no data.
    fn data(&self, id: &EntityId) -> Option<Option<Map<String, Value>>>;
    /// Queues a replacement of `id`'s data (a mod's `district.set`): applied at the next step
    /// the kit runs (at the latest the end of the tick), in call order. An error when `id` is
    /// not an entity now or `data` is over 4 KiB.
    fn set(&self, id: &EntityId, data: Option<Map<String, Value>>) -> Result<(), String>;
    /// The district file and line that hold `id`, if one does.
    fn district_line(&self, id: &EntityId) -> Option<(String, u32)>;
    /// Whether `id` may not be spawned while no live entity has it: a district id (stored, or
    /// despawned for good), or the id of a stored entity of no district line (a spawned or
    /// streamed scene entity stored with its chunk).
    fn reserved(&self, id: &EntityId) -> bool;
}
