//! [`StreamingAnchor`]: a Bevy entity whose `Transform` translation is a kit entity's position,
//! written into the kit at the start of every `FixedUpdate` step, before the kit ticks.

use ::bevy::prelude::*;

use crate::grid::Position;
use crate::host::{Entity as KitEntity, EntityId};
use crate::kits::district::{DistrictService, DISTRICT};

use super::resource::WorldStreaming;

/// Makes this entity's `Transform` translation the position of kit entity `id` (metres; `y` is
/// carried, and streamed on only with the streaming key `vertical`: its section row). When the scene holds no entity `id`, the plugin spawns one
/// tagged [`super::StreamingPluginConfig::anchor_tags`] (by default `player`: a focus with
/// `focus: "players"`), and despawns it when the component is removed. Written only when the
/// translation differs from the one last written, as one input stamped with the next tick
/// (like a `move` input).
#[derive(Component, Debug, Clone, PartialEq, Eq)]
pub struct StreamingAnchor {
    /// The kit entity this anchor moves.
    pub id: EntityId,
}

impl StreamingAnchor {
    /// The anchor of kit entity `id`.
    pub fn new(id: &str) -> Self {
        StreamingAnchor {
            id: EntityId::new(id),
        }
    }
}

/// Fired when the kit refused an anchor's translation (not finite, beyond the kit's range) or
/// the entity it needed (an id a district entity holds): the kit entity stays as it was.
#[derive(Message, Debug, Clone, PartialEq, Eq)]
pub struct AnchorRefused {
    /// The Bevy entity carrying the anchor.
    pub anchor: Entity,
    /// The kit entity it names.
    pub id: EntityId,
    /// Why, as the kit says it.
    pub message: String,
}

/// The anchors to look at in a step: those whose `Transform` or `StreamingAnchor` changed.
type Moved = Or<(Changed<Transform>, Changed<StreamingAnchor>)>;

/// Writes every anchor whose `Transform` or `StreamingAnchor` changed into the kit, as one
/// input; despawns the kit entities made for anchors removed since the last step.
pub(crate) fn sync_anchors(
    mut ws: NonSendMut<WorldStreaming>,
    anchors: Query<(Entity, &StreamingAnchor, &Transform), Moved>,
    mut removed: RemovedComponents<StreamingAnchor>,
    mut refused: MessageWriter<AnchorRefused>,
) {
    let ws = &mut *ws;
    let gone: Vec<EntityId> = removed
        .read()
        .filter_map(|e| ws.anchors.remove(&e))
        .filter_map(|b| b.spawned.then_some(b.id))
        .collect();
    if anchors.is_empty() && gone.is_empty() {
        return;
    }
    let WorldStreaming {
        game,
        anchors: bound,
        config,
        ..
    } = ws;
    let mut refuse = |anchor, id: &EntityId, message| {
        refused.write(AnchorRefused {
            anchor,
            id: id.clone(),
            message,
        });
    };
    let engine = game.engine_mut();
    let stamp = engine.tick_count() + 1;
    engine.input(stamp, |e| {
        for id in &gone {
            let _ = e.world_mut().despawn(id);
        }
        for (anchor, link, transform) in &anchors {
            let t = transform.translation;
            let to = Position {
                x: f64::from(t.x),
                y: f64::from(t.y),
                z: f64::from(t.z),
            };
            // The common case, an anchor already bound that moved: one lookup in the kit.
            if let Some(b) = bound.get_mut(&anchor).filter(|b| b.id == link.id) {
                if b.at == to {
                    continue;
                }
                match e.world_mut().move_to(&link.id, to) {
                    Ok(()) => b.at = to,
                    Err(err) => refuse(anchor, &link.id, err.to_string()),
                }
                continue;
            }
            // A new anchor, or one naming another entity (it lets go of the one it made).
            if let Some(old) = bound.remove(&anchor) {
                if old.spawned {
                    let _ = e.world_mut().despawn(&old.id);
                }
            }
            let result = match e.world().get(&link.id) {
                Some(_) => e
                    .world_mut()
                    .move_to(&link.id, to)
                    .map(|()| false)
                    .map_err(|e| e.to_string()),
                None => spawn_anchor(e, &link.id, to, &config.anchor_tags),
            };
            match result {
                Ok(spawned) => {
                    let id = link.id.clone();
                    bound.insert(
                        anchor,
                        Bound {
                            id,
                            spawned,
                            at: to,
                        },
                    );
                }
                Err(message) => refuse(anchor, &link.id, message),
            }
        }
    });
}

/// An anchor as the plugin bound it: its kit entity, whether the plugin spawned that entity,
/// and the position last written.
#[derive(Debug, Clone)]
pub(crate) struct Bound {
    pub id: EntityId,
    pub spawned: bool,
    pub at: Position,
}

/// Spawns the kit entity of a new anchor; a district id (live or stored) is refused as a
/// `spawn` input would refuse it.
fn spawn_anchor(
    e: &mut crate::host::Engine,
    id: &EntityId,
    at: Position,
    tags: &[String],
) -> Result<bool, String> {
    if e.service::<dyn DistrictService>(DISTRICT)
        .is_some_and(|d| d.reserved(id))
    {
        return Err(crate::host::EntityError::Reserved(id.clone()).to_string());
    }
    let entity = KitEntity {
        id: id.clone(),
        tags: tags.iter().collect(),
        position: at,
        rides: None,
        data: None,
    };
    e.world_mut().spawn(entity).map_err(|e| e.to_string())?;
    Ok(true)
}
