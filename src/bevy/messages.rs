//! The messages the plugin writes, one per chunk event of the kit, and the system that ticks
//! the kit once per `FixedUpdate` step and writes them, in the kit's emission order.

use ::bevy::prelude::*;

use crate::grid::ChunkPos;
use crate::host::Event;
use crate::kits::streaming::{ChunkEvent, CHUNK_LOADED, CHUNK_UNLOADED};
use crate::kits::terrain::TERRAIN_BUILT;

use super::resource::WorldStreaming;

/// Fired when a chunk became loaded (`world.chunk.loaded`): its district entities are live
/// (their Bevy entities are spawned in the same step, after this message is written).
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkLoaded {
    /// The chunk.
    pub chunk: ChunkPos,
    /// The kit tick it belongs to.
    pub tick: u64,
}

/// Fired when a loaded chunk was released (`world.chunk.unloaded`): too far from every focus,
/// evicted, or the scene was left. Its terrain is freed and its district entities stored.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkUnloaded {
    /// The chunk.
    pub chunk: ChunkPos,
    /// The kit tick it belongs to.
    pub tick: u64,
}

/// Fired when a chunk's terrain was committed (`world.terrain.built`): its cells are readable
/// through [`WorldStreaming::chunk`] from now on (build its mesh and collider).
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct TerrainBuilt {
    /// The chunk.
    pub chunk: ChunkPos,
    /// FNV-1a 64 of the chunk's bytes (SPEC §12), as the event's `hash` says it.
    pub hash: u64,
    /// The kit tick it belongs to.
    pub tick: u64,
}

/// One kit tick; the step's events (the anchors' input and the tick) become the messages and
/// [`WorldStreaming::events`].
pub(crate) fn tick_kit(
    mut ws: NonSendMut<WorldStreaming>,
    mut loaded: MessageWriter<ChunkLoaded>,
    mut unloaded: MessageWriter<ChunkUnloaded>,
    mut built: MessageWriter<TerrainBuilt>,
) {
    let ws = &mut *ws;
    ws.game.tick();
    ws.steps += 1;
    let events = ws.game.engine_mut().take_events();
    for e in &events {
        match &*e.event {
            CHUNK_LOADED | CHUNK_UNLOADED => {
                if let Some((chunk, is_loaded)) = e.chunk() {
                    let tick = e.tick;
                    if is_loaded {
                        loaded.write(ChunkLoaded { chunk, tick });
                    } else {
                        unloaded.write(ChunkUnloaded { chunk, tick });
                    }
                }
            }
            TERRAIN_BUILT => {
                if let Some(m) = built_of(e) {
                    built.write(m);
                }
            }
            _ => {}
        }
    }
    ws.events = events;
}

/// A `world.terrain.built {x, z, hash}` event as a message (the hash is 16 hex digits).
fn built_of(e: &Event) -> Option<TerrainBuilt> {
    let coord = |k: &str| e.data.get(k).and_then(serde_json::Value::as_i64);
    let hash = e.data.get("hash")?.as_str()?;
    Some(TerrainBuilt {
        chunk: ChunkPos::new(coord("x")?, coord("z")?),
        hash: u64::from_str_radix(hash, 16).ok()?,
        tick: e.tick,
    })
}
