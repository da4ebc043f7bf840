//! Entities of the `game.engine` host: typed ids, tags, positions and `rides` links, kept in spawn
//! order, plus the `character.control` link and a log of what changed since kits last looked.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::sync::{Mutex, OnceLock};

use indexmap::IndexMap;
use rustc_hash::{FxBuildHasher, FxHashMap};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grid::Position;

/// The tag that makes an entity a candidate for the player.
pub const PLAYER_TAG: &str = "player";

/// The id of an entity, as written in scene and input files.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct EntityId(#[schemars(with = "String")] Arc<str>);

impl<'de> Deserialize<'de> for EntityId {
    /// From the text when it has no escapes: one allocation, the id's own.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(EntityId(Arc::from(&*text)))
    }
}

impl EntityId {
    /// The id `name`.
    pub fn new(name: &str) -> Self {
        EntityId(Arc::from(name))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for EntityId {
    fn from(s: &str) -> Self {
        EntityId::new(s)
    }
}

impl fmt::Display for EntityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Entity {
    /// Unique id.
    pub id: EntityId,
    /// Tags, e.g. `player`, `vehicle`, `streamable`, `dormant`.
    #[serde(default)]
    pub tags: Tags,
    /// Where it is.
    pub position: Position,
    /// The vehicle it rides, if any. A link to an entity that no longer exists counts as absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rides: Option<EntityId>,
    /// What a game keeps about the entity (docs/reference/engine.md#entity-data): any JSON object
    /// of at most [`crate::limits::MAX_DATA_BYTES`] serialized; absent when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub data: Option<EntityData>,
}

/// An entity's `data`: a JSON object, boxed so an entity without data pays one pointer.
pub type EntityData = Box<serde_json::Map<String, serde_json::Value>>;

/// Checks `data` against [`crate::limits::MAX_DATA_BYTES`] (its compact serialization).
pub fn check_data(data: &serde_json::Map<String, serde_json::Value>) -> Result<(), String> {
    let len = serde_json::to_vec(data)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    let max = crate::limits::MAX_DATA_BYTES;
    if len > max {
        return Err(format!(
            "expected data of at most {max} bytes serialized, got {len} bytes"
        ));
    }
    Ok(())
}

/// An entity's tags: a sorted set of names, each interned once per process (a scene of
/// 100 000 crates tagged `streamable` holds one `streamable`), stored inline for up to two tags.
/// Serialized as a sorted array of strings, like a set.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Tags(smallvec::SmallVec<[Arc<str>; 2]>);

/// The one copy of each tag name.
fn intern(tag: &str) -> Arc<str> {
    static NAMES: OnceLock<Mutex<HashSet<Arc<str>>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(name) = names.get(tag) {
        return name.clone();
    }
    let name: Arc<str> = Arc::from(tag);
    names.insert(name.clone());
    name
}

impl Tags {
    /// No tags.
    pub fn new() -> Self {
        Tags::default()
    }

    /// Whether `tag` is one of them.
    pub fn contains(&self, tag: &str) -> bool {
        self.find(tag).is_ok()
    }

    fn find(&self, tag: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|t| (**t).cmp(tag))
    }

    /// Adds `tag`; whether it was new.
    pub fn insert(&mut self, tag: &str) -> bool {
        match self.find(tag) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, intern(tag));
                true
            }
        }
    }

    /// Removes `tag`; whether it was there.
    pub fn remove(&mut self, tag: &str) -> bool {
        match self.find(tag) {
            Ok(at) => {
                self.0.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    /// The tags in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.0.iter().map(|t| &**t)
    }

    /// How many tags.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<S: AsRef<str>> FromIterator<S> for Tags {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        let mut tags = Tags::new();
        for t in iter {
            tags.insert(t.as_ref());
        }
        tags
    }
}

impl<S: AsRef<str>, const N: usize> From<[S; N]> for Tags {
    fn from(list: [S; N]) -> Self {
        list.into_iter().collect()
    }
}

impl fmt::Debug for Tags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl Serialize for Tags {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Tags {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Tags;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of tags (strings)")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Tags, A::Error> {
                let mut tags = Tags::new();
                // Borrowed when the text has no escapes: no allocation per tag.
                while let Some(t) = seq.next_element::<std::borrow::Cow<'de, str>>()? {
                    tags.insert(&t);
                }
                Ok(tags)
            }
        }
        d.deserialize_seq(V)
    }
}

impl JsonSchema for Tags {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Tags".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "array", "items": { "type": "string" }, "uniqueItems": true })
    }
}

impl Entity {
    /// Whether the entity carries `tag`.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.contains(tag)
    }
}

/// Why an entity operation was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EntityError {
    /// The entity named does not exist.
    #[error("no such entity `{}`", crate::escape::escape(.0.as_str()))]
    NoSuchEntity(EntityId),
    /// The vehicle named does not exist.
    #[error("no such vehicle `{}`", crate::escape::escape(.0.as_str()))]
    NoSuchVehicle(EntityId),
    /// Spawning an id that is already taken.
    #[error("an entity `{}` already exists", crate::escape::escape(.0.as_str()))]
    Duplicate(EntityId),
    /// A `rides` link that would close a loop.
    #[error("`{}` riding `{}` would close a loop of rides", crate::escape::escape(.0.as_str()), crate::escape::escape(.1.as_str()))]
    RideLoop(EntityId, EntityId),
    /// A position that is not finite or absurdly large.
    #[error("position of `{}`: {}", crate::escape::escape(.0.as_str()), .1)]
    BadPosition(EntityId, String),
    /// `data` over the limit.
    #[error("data of `{}`: {}", crate::escape::escape(.0.as_str()), .1)]
    BadData(EntityId, String),
    /// An id that may not be spawned (a district entity, live elsewhere, stored, or gone for
    /// good).
    #[error("the id `{}` belongs to a district entity, or a stored one, and may not be spawned", crate::escape::escape(.0.as_str()))]
    Reserved(EntityId),
}

/// All entities, in spawn order. Looked up with FxHash: unseeded (so nothing varies between runs)
/// and several times faster than SipHash for the short ids the focus is resolved through every
/// tick; iteration order is the spawn order, never the hash order.
#[derive(Debug, Default, Clone)]
pub struct World {
    entities: IndexMap<EntityId, Entity, FxBuildHasher>,
    /// Spawn sequence number of each entity tagged `player`: "the first by spawn order" is the
    /// first key, found without scanning.
    players: BTreeMap<u64, EntityId>,
    seq: FxHashMap<EntityId, u64>,
    next_seq: u64,
    control: Option<EntityId>,
    changed: Vec<EntityId>,
}

impl World {
    /// An empty world.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of entities.
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether there are no entities.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// The entity `id`.
    pub fn get(&self, id: &EntityId) -> Option<&Entity> {
        self.entities.get(id)
    }

    /// All entities in spawn order.
    pub fn iter(&self) -> impl Iterator<Item = &Entity> {
        self.entities.values()
    }

    /// The `character.control` link (it may name an entity that no longer exists).
    pub fn control(&self) -> Option<&EntityId> {
        self.control.as_ref()
    }

    /// The player: the controlled character if it exists, else the first entity by spawn order
    /// tagged `player`.
    pub fn player(&self) -> Option<&Entity> {
        self.control
            .as_ref()
            .and_then(|id| self.entities.get(id))
            .or_else(|| {
                let (_, id) = self.players.first_key_value()?;
                self.entities.get(id)
            })
    }

    /// The anchors of `focus: "players"` (docs/reference/streaming.md#anchors): every entity tagged
    /// `player` in spawn order, then the controlled character if it exists and is not tagged
    /// `player`.
    pub fn anchors(&self) -> impl Iterator<Item = &Entity> {
        let control = self
            .control
            .as_ref()
            .and_then(|id| self.entities.get(id))
            .filter(|e| !e.has_tag(PLAYER_TAG));
        self.players
            .values()
            .filter_map(|id| self.entities.get(id))
            .chain(control)
    }

    /// The spawn sequence number of an existing entity (a despawned and respawned id gets a new
    /// one).
    pub fn spawn_seq(&self, id: &EntityId) -> Option<u64> {
        self.seq.get(id).copied()
    }

    /// The vehicle `entity` rides, when the link names an existing entity.
    pub fn vehicle_of(&self, entity: &Entity) -> Option<&Entity> {
        entity.rides.as_ref().and_then(|v| self.entities.get(v))
    }

    /// Adds an entity at the end of the spawn order.
    pub fn spawn(&mut self, entity: Entity) -> Result<(), EntityError> {
        self.spawn_as(entity, false)
    }

    /// [`World::spawn`], keeping a `rides` link to an entity that does not exist (it counts as
    /// absent, as in a save): what a kit brings back from storage
    /// (docs/reference/district.md#storing).
    pub fn spawn_restored(&mut self, entity: Entity) -> Result<(), EntityError> {
        self.spawn_as(entity, true)
    }

    fn spawn_as(&mut self, entity: Entity, dangling: bool) -> Result<(), EntityError> {
        if self.entities.contains_key(&entity.id) {
            return Err(EntityError::Duplicate(entity.id));
        }
        entity
            .position
            .check()
            .map_err(|e| EntityError::BadPosition(entity.id.clone(), e.to_string()))?;
        if let Some(d) = &entity.data {
            check_data(d).map_err(|m| EntityError::BadData(entity.id.clone(), m))?;
        }
        if let Some(v) = &entity.rides {
            if !self.entities.contains_key(v) && !dangling {
                return Err(EntityError::NoSuchVehicle(v.clone()));
            }
            self.check_no_loop(&entity.id, v)?;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        if entity.has_tag(PLAYER_TAG) {
            self.players.insert(seq, entity.id.clone());
        }
        self.seq.insert(entity.id.clone(), seq);
        self.changed.push(entity.id.clone());
        self.entities.insert(entity.id.clone(), entity);
        Ok(())
    }

    /// Removes an entity; links naming it remain but count as absent.
    pub fn despawn(&mut self, id: &EntityId) -> Result<Entity, EntityError> {
        let entity = self
            .entities
            .shift_remove(id)
            .ok_or_else(|| EntityError::NoSuchEntity(id.clone()))?;
        if let Some(seq) = self.seq.remove(id) {
            self.players.remove(&seq);
        }
        self.changed.push(id.clone());
        Ok(entity)
    }

    /// [`World::despawn`] of each of `ids` in order, in one pass over the world instead of one
    /// shift of the spawn order per entity (a kit storing a chunk of 100 entities in a world of
    /// 30 000 would otherwise move the world 100 times). The same result, entity for entity.
    pub fn despawn_many(&mut self, ids: &[EntityId]) -> Vec<Result<Entity, EntityError>> {
        if ids.len() < 2 {
            return ids.iter().map(|id| self.despawn(id)).collect();
        }
        let mut wanted: FxHashMap<&EntityId, usize> = FxHashMap::default();
        for (i, id) in ids.iter().enumerate() {
            wanted.entry(id).or_insert(i);
        }
        let mut out: Vec<Option<Entity>> = (0..ids.len()).map(|_| None).collect();
        self.entities.retain(|k, v| match wanted.get(k) {
            Some(&i) => {
                let placeholder = Entity {
                    id: k.clone(),
                    tags: Tags::new(),
                    position: Position::new(0.0, 0.0),
                    rides: None,
                    data: None,
                };
                out[i] = Some(std::mem::replace(v, placeholder));
                false
            }
            None => true,
        });
        ids.iter()
            .zip(out)
            .map(|(id, e)| {
                let entity = e.ok_or_else(|| EntityError::NoSuchEntity(id.clone()))?;
                if let Some(seq) = self.seq.remove(id) {
                    self.players.remove(&seq);
                }
                self.changed.push(id.clone());
                Ok(entity)
            })
            .collect()
    }

    /// Moves an entity (riding never moves the rider: only this entity changes).
    pub fn move_to(&mut self, id: &EntityId, to: Position) -> Result<(), EntityError> {
        to.check()
            .map_err(|e| EntityError::BadPosition(id.clone(), e.to_string()))?;
        let e = self.entity_mut(id)?;
        e.position = to;
        self.changed.push(id.clone());
        Ok(())
    }

    /// Adds a tag; kits hear of the change.
    pub fn tag(&mut self, id: &EntityId, tag: &str) -> Result<(), EntityError> {
        self.set_tag(id, tag, true)?;
        self.changed.push(id.clone());
        Ok(())
    }

    /// Removes a tag; kits hear of the change.
    pub fn untag(&mut self, id: &EntityId, tag: &str) -> Result<(), EntityError> {
        self.set_tag(id, tag, false)?;
        self.changed.push(id.clone());
        Ok(())
    }

    /// Sets or clears a tag that a kit derives itself (such as `dormant`): the change is not
    /// reported back to kits. Does nothing when the entity does not exist.
    pub fn set_derived_tag(&mut self, id: &EntityId, tag: &str, on: bool) {
        let _ = self.set_tag(id, tag, on);
    }

    fn set_tag(&mut self, id: &EntityId, tag: &str, on: bool) -> Result<(), EntityError> {
        let e = self
            .entities
            .get_mut(id)
            .ok_or_else(|| EntityError::NoSuchEntity(id.clone()))?;
        let had = e.tags.contains(tag);
        if on && !had {
            e.tags.insert(tag);
        } else if !on && had {
            e.tags.remove(tag);
        }
        if tag == PLAYER_TAG && on != had {
            let seq = self.seq[id];
            if on {
                self.players.insert(seq, id.clone());
            } else {
                self.players.remove(&seq);
            }
        }
        Ok(())
    }

    /// Makes `id` ride `vehicle`, refusing links that would close a loop.
    pub fn ride(&mut self, id: &EntityId, vehicle: &EntityId) -> Result<(), EntityError> {
        self.entity_mut(id)?;
        if !self.entities.contains_key(vehicle) {
            return Err(EntityError::NoSuchVehicle(vehicle.clone()));
        }
        self.check_no_loop(id, vehicle)?;
        self.entity_mut(id)?.rides = Some(vehicle.clone());
        self.changed.push(id.clone());
        Ok(())
    }

    /// Replaces `id`'s `data` (`None` clears it); kits hear of the change.
    pub fn set_data(
        &mut self,
        id: &EntityId,
        data: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<(), EntityError> {
        if let Some(d) = &data {
            check_data(d).map_err(|m| EntityError::BadData(id.clone(), m))?;
        }
        self.entity_mut(id)?.data = data.map(Box::new);
        self.changed.push(id.clone());
        Ok(())
    }

    /// Clears `id`'s `rides` link.
    pub fn dismount(&mut self, id: &EntityId) -> Result<(), EntityError> {
        self.entity_mut(id)?.rides = None;
        self.changed.push(id.clone());
        Ok(())
    }

    /// Sets the `character.control` entity (`None` clears it).
    pub fn set_control(&mut self, id: Option<EntityId>) -> Result<(), EntityError> {
        if let Some(id) = &id {
            self.entity_mut(id)?;
        }
        self.control = id;
        Ok(())
    }

    /// The ids changed (spawned, despawned, moved, tagged, untagged, linked) since the last call.
    pub fn take_changed(&mut self) -> Vec<EntityId> {
        std::mem::take(&mut self.changed)
    }

    /// Reports `id` as changed to kits at the next settle.
    pub fn mark_changed(&mut self, id: EntityId) {
        self.changed.push(id);
    }

    /// Whether anything changed since the last [`World::take_changed`].
    pub fn has_changes(&self) -> bool {
        !self.changed.is_empty()
    }

    /// Builds a world from saved entities (spawn order) and control link. `rides` links may name
    /// entities that no longer exist (they count as absent) but may not form a loop. Nothing is
    /// reported as changed.
    pub fn restore(
        entities: Vec<Entity>,
        control: Option<EntityId>,
    ) -> Result<World, (usize, EntityError)> {
        let mut world = World::new();
        world.entities.reserve_exact(entities.len());
        world.seq.reserve(entities.len());
        world.changed.reserve_exact(entities.len());
        let mut links = Vec::new();
        for (i, mut e) in entities.into_iter().enumerate() {
            if let Some(v) = e.rides.take() {
                links.push((i, e.id.clone(), v));
            }
            world.spawn(e).map_err(|err| (i, err))?;
        }
        for (i, id, vehicle) in links {
            world.check_no_loop(&id, &vehicle).map_err(|err| (i, err))?;
            world.entities.get_mut(&id).expect("spawned above").rides = Some(vehicle);
        }
        world.control = control;
        world.changed.clear();
        Ok(world)
    }

    fn entity_mut(&mut self, id: &EntityId) -> Result<&mut Entity, EntityError> {
        self.entities
            .get_mut(id)
            .ok_or_else(|| EntityError::NoSuchEntity(id.clone()))
    }

    /// Walks `vehicle`'s chain of existing rides links; reaching `rider` would close a loop.
    fn check_no_loop(&self, rider: &EntityId, vehicle: &EntityId) -> Result<(), EntityError> {
        let mut at = Some(vehicle);
        let mut steps = 0usize;
        while let Some(v) = at {
            if v == rider {
                return Err(EntityError::RideLoop(rider.clone(), vehicle.clone()));
            }
            steps += 1;
            if steps > self.entities.len() {
                break; // cannot happen while the invariant holds; never loop forever
            }
            at = self.entities.get(v).and_then(|e| e.rides.as_ref());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ent(id: &str, tags: &[&str]) -> Entity {
        Entity {
            id: id.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            position: Position::new(0.0, 0.0),
            rides: None,
            data: None,
        }
    }

    #[test]
    fn the_player_is_the_controlled_character_else_the_first_tagged_player() {
        let mut w = World::new();
        w.spawn(ent("a", &[])).unwrap();
        w.spawn(ent("b", &["player"])).unwrap();
        w.spawn(ent("c", &["player"])).unwrap();
        assert_eq!(w.player().unwrap().id.as_str(), "b");
        w.set_control(Some("a".into())).unwrap();
        assert_eq!(w.player().unwrap().id.as_str(), "a");
        w.despawn(&"a".into()).unwrap();
        assert_eq!(
            w.player().unwrap().id.as_str(),
            "b",
            "a dangling control link is absent"
        );
        w.untag(&"b".into(), "player").unwrap();
        assert_eq!(w.player().unwrap().id.as_str(), "c");
    }

    #[test]
    fn despawning_many_at_once_is_despawning_each_in_turn() {
        let build = || {
            let mut w = World::new();
            for i in 0..12 {
                let tags: &[&str] = if i % 3 == 0 { &["player"] } else { &[] };
                w.spawn(ent(&format!("e{i}"), tags)).unwrap();
            }
            w.take_changed();
            w
        };
        let ids: Vec<EntityId> = ["e3", "e0", "e7", "nobody", "e3", "e11", "e6"]
            .iter()
            .map(|&s| s.into())
            .collect();
        let (mut one, mut many) = (build(), build());
        let each: Vec<_> = ids.iter().map(|id| one.despawn(id)).collect();
        assert_eq!(many.despawn_many(&ids), each);
        let order = |w: &World| w.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
        assert_eq!(order(&many), order(&one));
        assert_eq!(many.take_changed(), one.take_changed());
        assert_eq!(
            many.player().map(|e| e.id.clone()),
            one.player().map(|e| e.id.clone())
        );
        assert_eq!(many.anchors().count(), one.anchors().count());
        many.spawn(ent("e3", &[])).unwrap();
        one.spawn(ent("e3", &[])).unwrap();
        assert_eq!(many.spawn_seq(&"e3".into()), one.spawn_seq(&"e3".into()));
    }

    #[test]
    fn rides_links_never_form_a_loop() {
        let mut w = World::new();
        for id in ["a", "b", "c"] {
            w.spawn(ent(id, &[])).unwrap();
        }
        assert!(matches!(
            w.ride(&"a".into(), &"a".into()),
            Err(EntityError::RideLoop(..))
        ));
        w.ride(&"a".into(), &"b".into()).unwrap();
        w.ride(&"b".into(), &"c".into()).unwrap();
        assert!(matches!(
            w.ride(&"c".into(), &"a".into()),
            Err(EntityError::RideLoop(..))
        ));
    }

    #[test]
    fn respawning_a_dangling_vehicle_cannot_close_a_loop() {
        let mut w = World::new();
        w.spawn(ent("a", &[])).unwrap();
        w.spawn(ent("b", &[])).unwrap();
        w.ride(&"a".into(), &"b".into()).unwrap();
        w.despawn(&"b".into()).unwrap();
        let mut b = ent("b", &[]);
        b.rides = Some("a".into());
        assert!(matches!(w.spawn(b), Err(EntityError::RideLoop(..))));
    }

    #[test]
    fn derived_tags_are_not_reported_as_changes() {
        let mut w = World::new();
        w.spawn(ent("a", &[])).unwrap();
        w.take_changed();
        w.set_derived_tag(&"a".into(), "dormant", true);
        assert!(!w.has_changes());
        assert!(w.get(&"a".into()).unwrap().has_tag("dormant"));
    }
}
