//! The streaming kit's vocabulary: the events it emits, the hooks it asks, and reading a chunk
//! event back as typed data. The host knows none of these names; every kit owns its own.

use serde_json::Value;

use crate::grid::ChunkPos;
use crate::host::Event;

/// Emitted when a chunk became live: `{x, z}`.
pub const CHUNK_LOADED: &str = "world.chunk.loaded";
/// Emitted when a chunk was released: `{x, z}`.
pub const CHUNK_UNLOADED: &str = "world.chunk.unloaded";
/// Asked before a chunk loads: `{x, z}`.
pub const HOOK_CHUNK_LOAD: &str = "world.chunk.load";
/// Asked before a loaded chunk is released: `{x, z}`.
pub const HOOK_CHUNK_UNLOAD: &str = "world.chunk.unload";

/// Reads the streaming kit's chunk events: `event.chunk()` (with this trait in scope, as the
/// prelude has it).
pub trait ChunkEvent {
    /// The chunk of a `world.chunk.loaded` (`Some((chunk, true))`) or `world.chunk.unloaded`
    /// (`Some((chunk, false))`) event; `None` for any other event.
    fn chunk(&self) -> Option<(ChunkPos, bool)>;
}

impl ChunkEvent for Event {
    fn chunk(&self) -> Option<(ChunkPos, bool)> {
        let loaded = match &*self.event {
            CHUNK_LOADED => true,
            CHUNK_UNLOADED => false,
            _ => return None,
        };
        let coord = |k: &str| self.data.get(k).and_then(Value::as_i64);
        Some((ChunkPos::new(coord("x")?, coord("z")?), loaded))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::EventData;

    fn event(name: &'static str, data: EventData) -> Event {
        Event {
            tick: 1,
            event: name.into(),
            data,
        }
    }

    #[test]
    fn chunk_events_read_back_as_chunks_and_others_as_none() {
        let xz = || EventData::Xz {
            x: Value::from(3),
            z: Value::from(-2),
        };
        assert_eq!(
            event(CHUNK_LOADED, xz()).chunk(),
            Some((ChunkPos::new(3, -2), true))
        );
        assert_eq!(
            event(CHUNK_UNLOADED, xz()).chunk(),
            Some((ChunkPos::new(3, -2), false))
        );
        assert_eq!(event("player.moved", xz()).chunk(), None);
    }
}
