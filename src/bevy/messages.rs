//! The messages the plugin writes, one per chunk event of the kit, and the system that ticks
//! the kit once per `FixedUpdate` step and writes them, in the kit's emission order.

use ::bevy::prelude::*;

use crate::kits::streaming::{ChunkEvent, StreamingEvent};
use crate::kits::terrain::TerrainEvent;

use super::coords::chunk_ivec3;
use super::resource::WorldStreaming;

/// Fired when a chunk became loaded (`world.chunk.loaded`): its district entities are live
/// (their Bevy entities are spawned in the same step, after this message is written).
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkLoaded {
    /// The chunk `(x, y, z)`: `y` its section row with `vertical` on, else 0.
    pub chunk: IVec3,
    /// The kit tick it belongs to.
    pub tick: u64,
}

/// Fired when a loaded chunk was released (`world.chunk.unloaded`): too far from every focus,
/// evicted, or the scene was left. Its terrain is freed and its district entities stored.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkUnloaded {
    /// The chunk `(x, y, z)`: `y` its section row with `vertical` on, else 0.
    pub chunk: IVec3,
    /// The kit tick it belongs to.
    pub tick: u64,
}

/// Fired when a chunk's terrain was committed (`world.terrain.built`): its cells are readable
/// through [`WorldStreaming::chunk`] from now on (build its mesh and collider).
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct TerrainBuilt {
    /// The chunk `(x, 0, z)`: terrain is built per column, so `y` is 0.
    pub chunk: IVec3,
    /// FNV-1a 64 of the chunk's bytes (docs/reference/terrain.md#chunk-content), as the event
    /// carries it.
    pub hash: u64,
    /// The kit tick it belongs to.
    pub tick: u64,
}

/// Fired when a chunk became complete (`world.chunk.complete`, with `neighbours` > 0,
/// docs/reference/engines.md#the-bevy-plugin): it and every chunk within `neighbours` rings of it
/// are loaded and built, so [`WorldStreaming::snapshot`] gives it with its neighbours' skin (mesh
/// it now). Written after the step's other chunk messages, in row order.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkComplete {
    /// The chunk `(x, y, z)`: `y` its section row with `vertical` on, else 0.
    pub chunk: IVec3,
    /// The kit tick it belongs to.
    pub tick: u64,
}

/// Fired when a chunk complete at the end of the last tick is loaded but not complete any more
/// (`world.chunk.incomplete`): a neighbour was released. A chunk released while complete gets
/// only [`ChunkUnloaded`].
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkIncomplete {
    /// The chunk `(x, y, z)`: `y` its section row with `vertical` on, else 0.
    pub chunk: IVec3,
    /// The kit tick it belongs to.
    pub tick: u64,
}

/// Fired when a column's first section became loaded (`world.column.loaded`, only with the
/// streaming key `vertical` on, docs/reference/engines.md#vertical-sections-in-c): build what a
/// column needs (its terrain, its navigation) here. Written after the step's section messages.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnLoaded {
    /// The column `(x, 0, z)`.
    pub column: IVec3,
    /// The kit tick it belongs to.
    pub tick: u64,
}

/// Fired when a column's last loaded section was released (`world.column.unloaded`, only with
/// `vertical` on): free what the column needed.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnUnloaded {
    /// The column `(x, 0, z)`.
    pub column: IVec3,
    /// The kit tick it belongs to.
    pub tick: u64,
}

/// One kit tick; the step's events (the anchors' input and the tick) become the messages and
/// [`WorldStreaming::events`].
// A system's parameters are what it reads and writes: one writer per message.
#[allow(clippy::too_many_arguments)]
pub(crate) fn tick_kit(
    mut ws: NonSendMut<WorldStreaming>,
    mut loaded: MessageWriter<ChunkLoaded>,
    mut unloaded: MessageWriter<ChunkUnloaded>,
    mut built: MessageWriter<TerrainBuilt>,
    mut complete: MessageWriter<ChunkComplete>,
    mut incomplete: MessageWriter<ChunkIncomplete>,
    mut column_loaded: MessageWriter<ColumnLoaded>,
    mut column_unloaded: MessageWriter<ColumnUnloaded>,
) {
    let ws = &mut *ws;
    ws.game.tick();
    ws.steps += 1;
    let events = ws.game.engine_mut().take_events();
    for e in &events {
        let tick = e.tick;
        if let Some((chunk, is_loaded)) = e.chunk() {
            let chunk = chunk_ivec3(chunk);
            if is_loaded {
                loaded.write(ChunkLoaded { chunk, tick });
            } else {
                unloaded.write(ChunkUnloaded { chunk, tick });
            }
        } else if let Some((column, is_loaded)) = e.column() {
            let column = chunk_ivec3(column);
            if is_loaded {
                column_loaded.write(ColumnLoaded { column, tick });
            } else {
                column_unloaded.write(ColumnUnloaded { column, tick });
            }
        } else if let Some((chunk, hash)) = TerrainEvent::built(e) {
            built.write(TerrainBuilt {
                chunk: chunk_ivec3(chunk),
                hash,
                tick,
            });
        } else {
            match StreamingEvent::from_event(e) {
                Some(StreamingEvent::ChunkComplete(chunk)) => {
                    let chunk = chunk_ivec3(chunk);
                    complete.write(ChunkComplete { chunk, tick });
                }
                Some(StreamingEvent::ChunkIncomplete(chunk)) => {
                    let chunk = chunk_ivec3(chunk);
                    incomplete.write(ChunkIncomplete { chunk, tick });
                }
                _ => {}
            }
        }
    }
    ws.events = events;
}
