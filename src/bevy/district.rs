//! [`DistrictEntity`]: the live streamed entities of `world.district`
//! (docs/reference/district.md#streamed-entities) as Bevy entities, spawned when the kit
//! materialises them and despawned when it stores them.

use ::bevy::prelude::*;
use serde_json::{Map, Value};

use crate::grid::Position;
use crate::host::{Entity as KitEntity, EntityId, Tags};
use crate::kits::district::{DistrictEvent, STREAMED};

use super::resource::WorldStreaming;

/// A live streamed kit entity (a district entity, or one tagged `streamed`), as the kit holds
/// it at the end of the last step that changed it. Its `Transform` is the kit's position. The
/// Bevy entity is despawned when the kit stores the entity (its chunk released) or despawns it.
#[derive(Component, Debug, Clone, PartialEq)]
pub struct DistrictEntity {
    /// The kit entity.
    pub id: EntityId,
    /// Its tags.
    pub tags: Tags,
    /// Its position, in metres (the `Transform` holds it as `f32`).
    pub position: Position,
    /// Its `data` (docs/reference/engine.md#entity-data), if any.
    pub data: Option<Map<String, Value>>,
}

impl DistrictEntity {
    fn of(e: &KitEntity) -> Self {
        DistrictEntity {
            id: e.id.clone(),
            tags: e.tags.clone(),
            position: e.position,
            data: e.data.as_deref().cloned(),
        }
    }

    fn transform(&self) -> Transform {
        let p = self.position;
        Transform::from_xyz(p.x as f32, p.y as f32, p.z as f32)
    }
}

/// Brings the Bevy entities in step with the kit's live streamed entities, on the steps that
/// materialised or stored some (and after a change through [`WorldStreaming::game_mut`]): a
/// step that moves none costs one look at its events.
pub(crate) fn mirror_districts(
    mut ws: NonSendMut<WorldStreaming>,
    mut commands: Commands,
    mut mirrored: Query<(&mut DistrictEntity, &mut Transform)>,
) {
    if !ws.config.mirror_districts {
        return;
    }
    let moved = ws.events.iter().any(DistrictEvent::moves_entities);
    if !moved && !ws.districts_dirty {
        return;
    }
    let ws = &mut *ws;
    ws.districts_dirty = false;
    let world = ws.game.engine().world();
    let district = ws.district.as_deref();
    let streamed = |e: &KitEntity| {
        e.has_tag(STREAMED) || district.is_some_and(|d| d.district_line(&e.id).is_some())
    };
    // Stored or despawned since: despawned in Bevy, in id order.
    let gone: Vec<EntityId> = ws
        .mirrored
        .keys()
        .filter(|id| !world.get(id).is_some_and(streamed))
        .cloned()
        .collect();
    let mut spawned = Vec::new();
    for e in world.iter().filter(|e| streamed(e)) {
        let now = DistrictEntity::of(e);
        match ws.mirrored.get(&e.id) {
            Some(&b) => {
                if let Ok((mut held, mut transform)) = mirrored.get_mut(b) {
                    if *held != now {
                        *transform = now.transform();
                        *held = now;
                    }
                }
            }
            // Materialised (or spawned) since: spawned in Bevy, in the kit's spawn order.
            None => {
                let transform = now.transform();
                spawned.push((e.id.clone(), commands.spawn((now, transform)).id()));
            }
        }
    }
    for id in gone {
        if let Some(b) = ws.mirrored.remove(&id) {
            commands.entity(b).despawn();
        }
    }
    ws.mirrored.extend(spawned);
}
